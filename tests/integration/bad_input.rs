//! Hostile and broken input: a clear error with a position and exit 1, never a panic or a hang.
use crate::{Test, diagnostics};

fn validate_file(name: &str, data: &[u8]) -> crate::Output {
    Test::new()
        .bytes(name, data)
        .args(["validate", name, "--format", "json"])
        .run()
}

fn assert_clean_failure(out: &crate::Output, code: &str) {
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let diags = diagnostics(out);
    assert!(
        diags.iter().any(|d| d.0 == code),
        "expected {code}, got {diags:?}"
    );
}

#[test]
fn alias_bomb() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..20 {
        let p = format!("*a{}", i - 1);
        text.push_str(&format!(
            "a{i}: &a{i} [{p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}]\n"
        ));
    }
    assert_clean_failure(&validate_file("bomb.yaml", text.as_bytes()), "yaml-syntax");
}

#[test]
fn deep_nesting() {
    let text = format!("env: {}x{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_clean_failure(&validate_file("deep.yaml", text.as_bytes()), "yaml-syntax");
}

#[test]
fn many_megabytes() {
    let mut text = String::from("env: x\nservices:\n");
    while text.len() < 12 * 1024 * 1024 {
        text.push_str("  # padding padding padding padding padding padding padding padding\n");
    }
    assert_clean_failure(
        &validate_file("huge.yaml", text.as_bytes()),
        "file-too-large",
    );
}

#[test]
fn binary_junk_and_non_utf8() {
    assert_clean_failure(
        &validate_file("junk.yaml", &[0xff, 0xfe, 0x00, 0x41, 0x80, 0x0a]),
        "not-utf8",
    );
}

#[test]
fn not_a_mapping() {
    assert_clean_failure(&validate_file("list.yaml", b"- a\n- b\n"), "wrong-type");
}

#[test]
fn missing_file() {
    let out = Test::new()
        .args(["validate", "nope.yaml", "--format", "json"])
        .run();
    assert_clean_failure(&out, "file-not-found");
}

#[test]
fn private_use_markers_are_refused() {
    assert_clean_failure(
        &validate_file(
            "m.yaml",
            "env: \u{E000}rds.writer.address\u{E001}\n".as_bytes(),
        ),
        "yaml-syntax",
    );
}

#[test]
fn empty_file_reports_missing_fields() {
    let out = validate_file("empty.yaml", b"");
    assert_clean_failure(&out, "missing-field");
}

/// A hang detector for inputs that used to block forever; generous, since CI machines are
/// shared and builds are debug.
const HANG: std::time::Duration = std::time::Duration::from_secs(30);

fn env_with(from: &str, to: &str) -> String {
    assert_eq!(crate::BASE_ENV.matches(from).count(), 1, "{from}");
    crate::BASE_ENV.replacen(from, to, 1)
}

#[test]
fn a_fifo_as_env_is_refused_without_blocking() {
    let out = Test::new()
        .fifo("env.yaml")
        .args(["validate", "env.yaml", "--format", "json"])
        .run_within(HANG);
    assert_clean_failure(&out, "not-a-file");
}

#[test]
fn a_fifo_as_extends_or_template_is_refused_without_blocking() {
    let out = Test::new()
        .fifo("parent.yaml")
        .file(
            "env.yaml",
            &format!("extends: parent.yaml\n{}", crate::BASE_ENV),
        )
        .args(["validate", "env.yaml", "--format", "json"])
        .run_within(HANG);
    assert_clean_failure(&out, "not-a-file");
    let out = Test::new()
        .fifo("task-defs/pipe.yaml")
        .file(
            "env.yaml",
            &env_with(
                "template: task-defs/folio-module.yaml",
                "template: task-defs/pipe.yaml",
            ),
        )
        .args(["validate", "env.yaml", "--format", "json"])
        .run_within(HANG);
    assert_clean_failure(&out, "not-a-file");
}

#[test]
fn a_fifo_given_to_apply_is_refused_without_blocking() {
    // `apply` first looks whether its argument is a saved plan.
    let out = Test::new()
        .fifo("env.yaml")
        .args(["apply", "env.yaml", "--sandbox", "--yes"])
        .run_within(HANG);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}

#[test]
fn dev_zero_as_env_is_refused_without_reading_it() {
    // Its size on disk is 0; reading it never ends.
    let out = Test::new()
        .args(["validate", "/dev/zero", "--format", "json"])
        .run_within(HANG);
    assert_clean_failure(&out, "not-a-file");
}

#[test]
fn extends_outside_the_project_names_the_path_never_the_content() {
    for target in ["/etc/passwd", "../../../../../../../../etc/passwd"] {
        let out = Test::new()
            .file(
                "env.yaml",
                &format!("extends: {target}\n{}", crate::BASE_ENV),
            )
            .args(["validate", "env.yaml"])
            .run();
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(
            out.stderr.contains("path-outside-project"),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("/etc/passwd"), "{}", out.stderr);
        assert!(out.stderr.contains("--root"), "{}", out.stderr);
        // Every passwd file has root's entry; none of it may be printed.
        assert!(!out.stderr.contains("root:"), "{}", out.stderr);
    }
}

#[test]
fn a_secret_file_next_to_the_project_is_not_read_through_extends_template_or_env() {
    let secret = "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY";
    let env = env_with(
        "template: task-defs/folio-module.yaml",
        "template: ../outside/creds",
    );
    let out = Test::new()
        .file("outside/creds", secret)
        .file("project/env.yaml", &env)
        .file(
            "project/child.yaml",
            &format!("extends: ../outside/creds\n{}", crate::BASE_ENV),
        )
        .file(
            "project/pb.yaml",
            "name: x\nenv: ../outside/creds\nmatrix: {a: {b: {}}}\nsteps: [{wait: 1s}]\n",
        )
        .args([
            "validate",
            "project/env.yaml",
            "project/child.yaml",
            "project/pb.yaml",
        ])
        .args(["--root", "project"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("error[path-outside-project]").count(),
        3,
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("wJalrXUtnFEMI"), "{}", out.stderr);
}

#[test]
fn a_root_given_with_root_admits_files_under_it() {
    // Templates resolve against the env named on the command line (envs/).
    let base = env_with(
        "template: task-defs/folio-module.yaml",
        "template: ../task-defs/folio-module.yaml",
    );
    let test = Test::new()
        .file("shared/base.yaml", &base)
        .file("configs/env.yaml", "extends: ../shared/base.yaml\n");
    let dir = test.path().to_path_buf();
    let env = dir.join("configs/env.yaml").display().to_string();
    // Run elsewhere (the repository), so the default project is the env's directory
    // (`configs/` is not a directory of envctl's layout, whose parent would be the project).
    let out = Test::new().in_repo().args(["validate", &env]).run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("path-outside-project"),
        "{}",
        out.stderr
    );
    let out = Test::new()
        .in_repo()
        .args(["validate", &env, "--root", &dir.display().to_string()])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    drop(test);
}

/// The billion-laughs document of the issue: nine levels of nine aliases, about 700 bytes.
fn alias_bomb_712() -> String {
    let mut text = String::from(
        "lol: &lol_a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for pair in names.windows(2) {
        let item = format!("*lol_{}", pair[0]);
        text.push_str(&format!(
            "lol{}: &lol_{} [{}]\n",
            pair[1],
            pair[1],
            [item.as_str(); 9].join(", ")
        ));
    }
    text
}

#[test]
fn the_712_byte_alias_bomb_is_refused_by_a_budget_scaled_to_its_size() {
    let text = alias_bomb_712();
    assert!((600..=800).contains(&text.len()), "{}", text.len());
    let started = std::time::Instant::now();
    let out = validate_file("bomb.yaml", text.as_bytes());
    let took = started.elapsed();
    assert_clean_failure(&out, "yaml-syntax");
    // The deterministic proxy for "within 1 s": the parser stops at the size-scaled budget,
    // thousands of nodes, not at the 500,000 that took 7-12 s in a debug build.
    let budget = envctl::spec::node::node_budget(text.len());
    assert!(
        out.stdout.contains(&format!("> {budget}")),
        "{}",
        out.stdout
    );
    assert!(budget < 25_000, "{budget}");
    // And a wide-margin wall-clock check against a regression to seconds.
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
}

#[test]
fn validate_reports_an_unreadable_file_once() {
    let out = Test::new()
        .file("dir.yaml/inner", "x")
        .args(["validate", "dir.yaml", "missing.yaml"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stderr.matches("dir.yaml:").count(), 1, "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("missing.yaml:").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("2 error(s)"), "{}", out.stdout);
}

#[test]
fn a_step_file_that_is_a_fifo_or_outside_the_project_is_not_collected() {
    let test = Test::new()
        .file("env.yaml", crate::BASE_ENV)
        .fifo("pipe.jtl");
    let dir = std::fs::canonicalize(test.path()).expect("temp dir");
    let playbook = format!(
        "\
name: steps
env: env.yaml
matrix:
  users:
    u1: {{vars: {{users: 1}}}}
steps:
  - name: pipe
    run: \"true\"
    demo: \"true\"
    jtl: {}
  - name: outside
    run: \"true\"
    demo: \"true\"
    jtl: /etc/hostname
teardown: always
",
        dir.join("pipe.jtl").display()
    );
    let (out, kept) = test
        .file("pb.yaml", &playbook)
        .args(["matrix", "run", "pb.yaml", "--sandbox", "--json"])
        .run_within_keeping_files(HANG);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let run: serde_json::Value = serde_json::from_str(&out.stdout).expect("run JSON");
    let id = run["run_id"].as_str().expect("run id");
    let points = kept.path().join("results").join(id).join("points");
    let mut jtls = Vec::new();
    for point in std::fs::read_dir(&points).expect("points").flatten() {
        for file in std::fs::read_dir(point.path()).expect("point").flatten() {
            if file.path().extension().is_some_and(|e| e == "jtl") {
                jtls.push(file.path());
            }
        }
    }
    assert_eq!(jtls, Vec::<std::path::PathBuf>::new());
}
