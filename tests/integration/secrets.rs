//! Secrets never leave AWS: env files that hold them are refused, and values envctl did not
//! write itself (template output, task definitions read back) are masked in everything it
//! writes, which is private to its owner.
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::{BASE_ENV, Test, diagnostics};

fn env_with(from: &str, to: &str) -> String {
    assert_eq!(BASE_ENV.matches(from).count(), 1, "{from}");
    BASE_ENV.replacen(from, to, 1)
}

fn codes(text: &str) -> (i32, Vec<(String, u64, u64)>) {
    let out = Test::new()
        .file("env.yaml", text)
        .args(["validate", "env.yaml", "--format", "json"])
        .run();
    (out.code, diagnostics(&out))
}

const SERVICE_TAIL: &str = "    jvm: {xmx: 700, metaspace: 88, max_metaspace: 128}\n";

#[test]
fn secrets_in_names_urls_jvm_options_and_images_are_lint_errors() {
    let cases: &[(&str, &str, &str, u64)] = &[
        (
            "DB_PASSWD",
            "    environment: {DB_PASSWD: hunter2}\n",
            "secret-in-environment",
            31,
        ),
        (
            "API_KEY",
            "    environment: {API_KEY: k-123}\n",
            "secret-in-environment",
            31,
        ),
        (
            "DATABASE_URL",
            "    environment: {DATABASE_URL: \"postgres://user:pass@host/db\"}\n",
            "secret-in-value",
            31,
        ),
        (
            "JAVA_OPTIONS in environment",
            "    environment: {JAVA_OPTIONS: \"-Djavax.net.ssl.keyStorePassword=changeit\"}\n",
            "secret-in-value",
            31,
        ),
    ];
    for (what, line, code, at_line) in cases {
        let (exit, diags) = codes(&format!("{BASE_ENV}{line}"));
        assert_eq!(exit, 1, "{what}: {diags:?}");
        assert!(
            diags.iter().any(|d| d.0 == *code && d.1 == *at_line),
            "{what}: expected {code} at line {at_line}, got {diags:?}"
        );
    }
    let jvm = env_with(
        SERVICE_TAIL,
        "    jvm: {xmx: 700, metaspace: 88, max_metaspace: 128, options: \"-Dsecret.token=abc -Dfile.encoding=UTF-8\"}\n",
    );
    let (exit, diags) = codes(&jvm);
    assert_eq!(exit, 1, "{diags:?}");
    assert!(
        diags.iter().any(|d| d.0 == "secret-in-value" && d.1 == 30),
        "{diags:?}"
    );
    let image = env_with(
        "    image: folioorg/mod-users:19.2.0\n",
        "    image: \"deploy:ghp_tok3n@registry.example.com/mod-users:19.2.0\"\n",
    );
    let (exit, diags) = codes(&image);
    assert_eq!(exit, 1, "{diags:?}");
    assert!(
        diags.iter().any(|d| d.0 == "secret-in-value" && d.1 == 26),
        "{diags:?}"
    );
}

#[test]
fn names_that_only_resemble_secrets_are_accepted() {
    let text = format!(
        "{BASE_ENV}    environment: {{KAFKA_KEY_SERIALIZER: org.apache.kafka.common.serialization.StringSerializer, GIT_AUTHOR: ptf, PASSWORD_MIN_LENGTH: 12, DB_URL: \"postgres://app@db/x\"}}\n"
    );
    let (exit, diags) = codes(&text);
    assert_eq!((exit, diags), (0, vec![]));
}

/// A template whose output holds secrets the env's lints cannot see.
fn leaky_template() -> String {
    let base = std::fs::read_to_string(crate::repo().join("task-defs/folio-module.yaml"))
        .expect("template");
    base.replacen(
        "      LOG_LEVEL:",
        "      API_KEY: \"k-123-leak\"\n      DATABASE_URL: \"postgres://app:pw-456-leak@db/x\"\n      LOG_LEVEL:",
        1,
    )
}

fn leaky_env() -> String {
    env_with(
        "template: task-defs/folio-module.yaml",
        "template: task-defs/leaky.yaml",
    )
}

const LEAKS: [&str; 2] = ["k-123-leak", "pw-456-leak"];

#[test]
fn render_masks_secrets_from_template_output() {
    let out = Test::new()
        .file("task-defs/leaky.yaml", &leaky_template())
        .file("env.yaml", &leaky_env())
        .args([
            "render",
            "env.yaml",
            "--service",
            "mod-users",
            "--format",
            "json",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    for leak in LEAKS {
        assert!(!out.stdout.contains(leak), "{leak} in {}", out.stdout);
    }
    assert!(
        out.stdout.contains(&envctl::redact::mask("k-123-leak")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!(
            "postgres://app:{}@db/x",
            envctl::redact::mask("pw-456-leak")
        )),
        "{}",
        out.stdout
    );
}

/// Every file under `dir`, with its mode.
fn files(dir: &Path, out: &mut Vec<(std::path::PathBuf, u32)>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        let mode = entry.metadata().expect("metadata").permissions().mode() & 0o777;
        out.push((path.clone(), mode));
        if path.is_dir() {
            files(&path, out);
        }
    }
}

#[test]
fn a_matrix_run_writes_no_secret_and_only_private_state_and_results() {
    let playbook = "\
name: leak
env: env.yaml
matrix:
  users:
    u1: {vars: {users: 1}}
steps:
  - name: load
    run: \"true\"
    demo: \"true\"
teardown: always
";
    let test = Test::new()
        .file("task-defs/leaky.yaml", &leaky_template())
        .file("env.yaml", &leaky_env())
        .file("pb.yaml", playbook);
    let (out, kept) = test
        .args([
            "matrix",
            "run",
            "pb.yaml",
            "--sandbox",
            "--results",
            "results",
        ])
        .run_keeping_files();
    let dir = kept.path();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let mut written = Vec::new();
    files(&dir.join(".envctl"), &mut written);
    files(&dir.join("results"), &mut written);
    let caches: Vec<_> = written
        .iter()
        .filter(|(p, _)| p.to_string_lossy().contains("/cache/") && !p.is_dir())
        .collect();
    assert!(
        !caches.is_empty(),
        "an observe cache was written: {written:?}"
    );
    let effective: Vec<_> = written
        .iter()
        .filter(|(p, _)| p.ends_with("effective.json"))
        .collect();
    assert_eq!(effective.len(), 1, "{written:?}");
    let text = std::fs::read_to_string(&effective[0].0).expect("effective.json");
    assert!(text.contains(&envctl::redact::mask("k-123-leak")), "{text}");
    for (path, mode) in &written {
        // The sandbox's own world stands in for AWS: it holds what AWS would.
        if path.components().any(|c| c.as_os_str() == "sandbox") {
            continue;
        }
        let expected = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(*mode, expected, "{} is {mode:o}", path.display());
        if path.is_file() {
            let content = String::from_utf8_lossy(&std::fs::read(path).expect("read")).into_owned();
            for leak in LEAKS {
                assert!(!content.contains(leak), "{leak} in {}", path.display());
            }
        }
    }
}

#[test]
fn the_error_about_a_secret_does_not_quote_it() {
    let out = Test::new()
        .file(
            "env.yaml",
            &format!("{BASE_ENV}    environment: {{DB_PASSWD: hunter2, DB_URL: \"postgres://u:pw-77@db/x\"}}\n"),
        )
        .args(["validate", "env.yaml"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("secret-in-environment"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("secret-in-value"), "{}", out.stderr);
    assert!(out.stderr.contains("env.yaml:31:"), "{}", out.stderr);
    for secret in ["hunter2", "pw-77"] {
        assert!(!out.stderr.contains(secret), "{secret} in {}", out.stderr);
    }
}
