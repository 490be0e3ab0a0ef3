//! Fuzzes the spec loader: any bytes as an env file (and as a playbook) must give
//! diagnostics or a spec, never a panic, a hang or unbounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut sources = envctl::spec::source::Sources::new();
    let id = sources.add("fuzz.yaml".into(), None, text.to_string());
    if let Ok(tree) = envctl::spec::node::parse(&sources, id) {
        // Decode as both kinds of file; every error must be a diagnostic.
        let mut d = envctl::spec::decode::Decoder::new();
        let env = <envctl::spec::EnvSpec as envctl::spec::decode::Decode>::decode(&tree, &mut d);
        if let Some(env) = env {
            let _ = envctl::spec::lint::lint_env(&env);
        }
        let mut d = envctl::spec::decode::Decoder::new();
        let _ = <envctl::spec::Playbook as envctl::spec::decode::Decode>::decode(&tree, &mut d);
        // Render the diagnostics too: spans must always fit their source.
        let _ = d.diagnostics.render(&sources);
    }
});
