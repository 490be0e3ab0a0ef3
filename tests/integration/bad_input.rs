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
