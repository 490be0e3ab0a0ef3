//! End-to-end: the built `envctl` binary on hand-made JTL fixtures.
//!
//! Fixture shapes (tests/fixtures/jtl/), since JMeter cannot run here:
//! - `cico.csv`: JMeter 5.x's default CSV header and column order (every
//!   `jmeter.save.saveservice.*` at its default), quoted label with a comma, and an
//!   assertion failure message spanning several lines, as JMeter's Response Assertion writes.
//! - `cico_headerless.csv`: the same rows with `print_field_names=false`.
//! - `cico.xml`: the same samples in JMeter's XML format ("Results file format" in the
//!   JMeter docs), where Check-out samples contain a redirect sub-sample and the failed
//!   Check-in an `<assertionResult>`.
//! - `cico_truncated.csv`: `cico.csv` plus a last row cut after two fields.
//! - `cico_bad_elapsed.csv`: `cico.csv` with `n/a` as one elapsed time (line 7).
//!
//! The golden `cico.expected.*` files were checked against numbers computed independently
//! in Python from the fixture rows (JMeter Aggregate Report percentile rule:
//! round(n * p)-th smallest value), e.g. Check-in: 5 samples, 1 error, avg 910.8 ms,
//! p50 767 ms, window 08:26:47.150..08:26:51.967 -> 5 / 4.817 s = 1.038/s.
use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jtl")
}

fn golden(name: &str) -> String {
    let path = fixtures().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// What one run of the binary printed.
#[derive(Debug, PartialEq)]
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `envctl report jtl ARGS...` in the fixtures directory, so that file names in the
/// output are the relative names given.
fn report_jtl(args: &[&str]) -> Outcome {
    let output = Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args(["report", "jtl"])
        .args(args)
        .current_dir(fixtures())
        .output()
        .expect("the envctl binary runs");
    Outcome {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn success(stdout: String) -> Outcome {
    Outcome {
        code: Some(0),
        stdout,
        stderr: String::new(),
    }
}

#[test]
fn markdown_table_of_a_default_csv() {
    assert_eq!(
        report_jtl(&["cico.csv"]),
        success(golden("cico.expected.md"))
    );
}

#[test]
fn xml_and_headerless_csv_give_the_same_table() {
    for file in ["cico.xml", "cico_headerless.csv"] {
        let expected =
            golden("cico.expected.md").replace("Results: cico.csv", &format!("Results: {file}"));
        assert_eq!(report_jtl(&[file]), success(expected), "{file}");
    }
}

#[test]
fn csv_and_json_formats() {
    assert_eq!(
        report_jtl(&["cico.csv", "--format", "csv"]),
        success(golden("cico.expected.csv"))
    );
    assert_eq!(
        report_jtl(&["cico.csv", "--format", "json"]),
        success(golden("cico.expected.json"))
    );
}

#[test]
fn several_files_are_merged_into_one_table() {
    let outcome = report_jtl(&["cico.csv", "cico.xml"]);
    assert_eq!(outcome.code, Some(0));
    assert!(
        outcome.stdout.starts_with("Results: cico.csv, cico.xml\n"),
        "{}",
        outcome.stdout
    );
    // Every sample twice: counts double, times stay; TOTAL p95 is now round(26 * 0.95) =
    // the 25th of 26 values, which is the first of the two 1500 ms failures.
    let total = outcome.stdout.lines().last().unwrap_or_default();
    assert_eq!(
        total,
        "| TOTAL | 26 | 2 | 7.69 | 829.0 | 95 | 1500 | 787 | 1210 | 1500 | 1500 | 4.326 |"
    );
}

#[test]
fn a_truncated_last_row_is_a_warning() {
    let expected =
        golden("cico.expected.md").replace("Results: cico.csv", "Results: cico_truncated.csv");
    let outcome = report_jtl(&["cico_truncated.csv"]);
    assert_eq!(
        outcome,
        Outcome {
            code: Some(0),
            stdout: expected,
            stderr: "warning: cico_truncated.csv:20: last row ignored because it is incomplete: \
                     expected 17 fields like the first row, found 2\n"
                .to_owned(),
        }
    );
}

#[test]
fn a_bad_row_is_an_error_with_its_line() {
    assert_eq!(
        report_jtl(&["cico_bad_elapsed.csv"]),
        Outcome {
            code: Some(1),
            stdout: String::new(),
            stderr: "error: cico_bad_elapsed.csv:7: `elapsed` is not a whole number of \
                     milliseconds: \"n/a\"\n"
                .to_owned(),
        }
    );
}

#[test]
fn empty_and_missing_files_are_errors() {
    assert_eq!(
        report_jtl(&["empty.jtl"]),
        Outcome {
            code: Some(1),
            stdout: String::new(),
            stderr: "warning: empty.jtl: no samples\n\
                     error: no samples in empty.jtl: is this the results file of a test that ran?\n"
                .to_owned(),
        }
    );
    let missing = report_jtl(&["missing.jtl"]);
    assert_eq!(missing.code, Some(1));
    assert!(
        missing
            .stderr
            .starts_with("error: missing.jtl: cannot read: "),
        "{}",
        missing.stderr
    );
}

#[test]
fn files_are_required() {
    let outcome = report_jtl(&[]);
    assert_eq!(outcome.code, Some(2));
    assert!(outcome.stderr.contains("<FILE>..."), "{}", outcome.stderr);
}
