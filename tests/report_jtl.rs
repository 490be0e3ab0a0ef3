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
//! - `transactions.csv`: a Transaction Controller ("Checkout flow", without "Generate
//!   parent sample") over "Add to cart" and "Pay", three iterations, the parent written
//!   after its children with JMeter's `responseMessage` "Number of samples in transaction :
//!   2, number of failing samples : N"; response times above 2,048 ms (the issue's 157,782
//!   vs 157,823 ms); and "Search", ten samples 10..100 ms in shuffled order.
//!
//! The golden `cico.expected.*` and `transactions.aggregate.expected.md` files equal, field
//! for field, what JMeter 5.6.2's own Aggregate Report classes compute for the same files
//! (`tests/fixtures/jmeter/AggregateReport.java`), e.g. Check-in: 5 samples, 1 error, avg
//! 910.8 ms, p50 767 ms, p90 787 ms (rank Math.round(5 × 0.9f) = 4, not 5), window
//! 08:26:47.150..08:26:51.967 -> 5 / 4.817 s = 1.038/s.
//!
//! `tests/fixtures/jmeter/` holds a JTL written by real JMeter 5.6.2 with JMeter's own
//! dashboard (`statistics.json`) and Aggregate Report (`aggregate.csv`) figures for it.
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;

use envctl::report::jtl::{Convention, JtlReport, summarize_jtl_files};

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
    // Every sample twice: counts double, times stay; TOTAL p95 is now round(26 * 0.95f) =
    // round(24.7) = the 25th of 26 values, which is the first of the two 1500 ms failures.
    let total = outcome.stdout.lines().last().unwrap_or_default();
    assert_eq!(
        total,
        "| TOTAL | 26 | 2 | 7.69 | 829.0 | 95 | 1500 | 787 | 1210 | 1500 | 1500 | 4.326 | 7.79 | 1.78 |"
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
    // A usage error: 64 (EX_USAGE), never 2, which `plan --detailed-exitcode` uses.
    assert_eq!(outcome.code, Some(64));
    assert!(outcome.stderr.contains("<FILE>..."), "{}", outcome.stderr);
}

// The two conventions on `transactions.csv`, derived by hand from the documented rules.
//
// Aggregate Report (k-th smallest, k = round(n x p), Java half-up; TOTAL counts all 19):
// - Add to cart 2050, 2100, 2300: p50 k=round(1.5)=2 -> 2100; p90..p99 k=3 -> 2300.
// - Pay 3000, 157782, 157823: p50 -> 157782 (not HdrHistogram's 157823 bucket top);
//   p90..p99 -> 157823.
// - Search 10..100: p50 k=5 -> 50, p90 k=9 -> 90, p95 k=round(10 x 0.95f)=round(9.4999999)=9
//   -> 90 (p is a 32-bit float in JMeter: exact arithmetic would say 10 -> 100), p99 -> 100.
// - TOTAL 10..100, 2050, 2100, 2300, 3000, 5050, 157782, 157823, 159882, 160123 (n=19):
//   p50 k=round(9.5)=10 -> 100; p90 k=round(17.1)=17 -> 157823; p95 k=round(18.05)=18 ->
//   159882; p99 k=19 -> 160123. Errors 2/19 = 10.53%; mean 650660/19 = 34245.3.
// Dashboard (position p x (n+1), interpolated; parents out of TOTAL, n=16):
// - Search: p50 pos 5.5 -> 50 + 0.5 x 10 = 55; p90 pos 9.9 -> 90 + 0.9 x 10 = 99;
//   p95 pos 10.45 >= 10 -> 100.
// - Add to cart: p50 pos 2.0 -> 2100; p90 pos 3.6 >= 3 -> 2300 (as in the aggregate).
// - TOTAL 10..100, 2050, 2100, 2300, 3000, 157782, 157823: p50 pos 8.5 -> 80 + 0.5 x 10
//   = 85; p90 pos 15.3 -> 157782 + 0.3 x 41 = 157794.3; p95 pos 16.15 >= 16 -> 157823.
//   Errors 1/16 = 6.25%; mean 325605/16 = 20350.3.
#[test]
fn aggregate_convention_golden() {
    assert_eq!(
        report_jtl(&["transactions.csv"]),
        success(golden("transactions.aggregate.expected.md"))
    );
    assert_eq!(
        report_jtl(&["transactions.csv", "--convention", "aggregate"]),
        success(golden("transactions.aggregate.expected.md"))
    );
    let golden = golden("transactions.aggregate.expected.md");
    assert!(golden.contains(
        "| Pay | 3 | 1 | 33.33 | 106201.7 | 3000 | 157823 | 157782 | 157823 | 157823 | 157823 |"
    ));
    assert!(golden.contains("| Search | 10 | 0 | 0.00 | 55.0 | 10 | 100 | 50 | 90 | 90 | 100 |"));
    assert!(golden.contains(
        "| TOTAL | 19 | 2 | 10.53 | 34245.3 | 10 | 160123 | 100 | 157823 | 159882 | 160123 |"
    ));
}

#[test]
fn dashboard_convention_golden() {
    assert_eq!(
        report_jtl(&["transactions.csv", "--convention", "dashboard"]),
        success(golden("transactions.dashboard.expected.md"))
    );
    let golden = golden("transactions.dashboard.expected.md");
    assert!(golden.contains("| Search | 10 | 0 | 0.00 | 55.0 | 10 | 100 | 55 | 99 | 100 | 100 |"));
    assert!(golden.contains(
        "| TOTAL | 16 | 1 | 6.25 | 20350.3 | 10 | 157823 | 85 | 157794.30 | 157823 | 157823 |"
    ));
    assert!(golden.contains("HTML dashboard (--convention dashboard)"));
}

/// A deterministic stream of response times spanning 0 ms to ~10 minutes, many repeated
/// and many distinct (xorshift, so the test needs no random-number crate).
fn response_times(count: usize, seed: u64) -> Vec<u64> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            match state % 4 {
                0 => state % 300,
                1 => 2000 + state % 200,
                2 => 100_000 + state % 60_000,
                _ => state % 600_000,
            }
        })
        .collect()
}

/// The rules computed the plain way, by sorting every value, independently of the
/// value -> count map and ring buffer the library uses.
fn aggregate_by_sorting(values: &[u64], fraction: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    // JMeter passes p as a float (0.95f) and rounds half up (Math.round).
    let p = f64::from(fraction as f32);
    let k = (sorted.len() as f64 * p + 0.5).floor() as usize;
    sorted[k.max(1) - 1] as f64
}

fn dashboard_by_sorting(values: &[u64], fraction: f64, window: usize) -> f64 {
    let window = &values[values.len().saturating_sub(window)..];
    let mut sorted = window.to_vec();
    sorted.sort_unstable();
    let n = sorted.len() as f64;
    let position = fraction * (n + 1.0);
    if position < 1.0 {
        return sorted[0] as f64;
    }
    if position >= n {
        return sorted[sorted.len() - 1] as f64;
    }
    let below = position.floor() as usize;
    let d = position - below as f64;
    sorted[below - 1] as f64 + d * (sorted[below] as f64 - sorted[below - 1] as f64)
}

fn summarize_values(values: &[(&str, u64)], convention: Convention) -> JtlReport {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "timeStamp,elapsed,label,success").unwrap();
    for (index, (label, elapsed)) in values.iter().enumerate() {
        writeln!(
            file,
            "{},{elapsed},{label},true",
            1_700_000_000_000u64 + index as u64
        )
        .unwrap();
    }
    file.flush().unwrap();
    summarize_jtl_files(&[file.path()], convention).unwrap().0
}

#[test]
fn percentiles_match_a_plain_sort_at_every_magnitude() {
    // 30,000 samples of one label, more than the dashboard's 20,000-sample window; the
    // first 10,000 (which the window drops) are faster, as in a warm-up.
    let mut a = response_times(30_000, 0x9E37_79B9_7F4A_7C15);
    for value in &mut a[..10_000] {
        *value %= 50;
    }
    let b = response_times(7_001, 42);
    let rows: Vec<(&str, u64)> = a
        .iter()
        .map(|&v| ("A", v))
        .chain(b.iter().map(|&v| ("B", v)))
        .collect();
    let all: Vec<u64> = rows.iter().map(|(_, v)| *v).collect();
    for convention in [Convention::Aggregate, Convention::Dashboard] {
        let report = summarize_values(&rows, convention);
        let expected = |values: &[u64], fraction| match convention {
            Convention::Aggregate => aggregate_by_sorting(values, fraction),
            Convention::Dashboard => dashboard_by_sorting(values, fraction, 20_000),
        };
        let total = report.total.as_ref().unwrap();
        for (stats, values) in [
            (&report.labels[0], &a),
            (&report.labels[1], &b),
            (total, &all),
        ] {
            let got = [stats.p50_ms, stats.p90_ms, stats.p95_ms, stats.p99_ms];
            let want = [0.5, 0.9, 0.95, 0.99].map(|fraction| expected(values, fraction));
            assert_eq!(got, want, "{convention:?} {}", stats.label);
            assert!(stats.percentiles_exact);
        }
        // The window matters: over all 30,000 samples the dashboard rule would differ.
        if convention == Convention::Dashboard {
            assert_ne!(
                report.labels[0].p50_ms,
                dashboard_by_sorting(&a, 0.5, a.len())
            );
        }
    }
}

/// The committed JMeter 5.6.2 reference, or a fresh one: `.ci/run` runs JMeter again
/// (`tests/fixtures/jmeter/regenerate.sh DIR`) and points `ENVCTL_JMETER_REFERENCE` at it.
fn jmeter_fixture(name: &str) -> PathBuf {
    match std::env::var_os("ENVCTL_JMETER_REFERENCE") {
        Some(dir) => PathBuf::from(dir).join(name),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/jmeter")
            .join(name),
    }
}

fn assert_close(label: &str, field: &str, got: f64, want: f64, relative: f64) {
    assert!(
        (got - want).abs() <= relative * want.abs().max(1.0),
        "{label} {field}: envctl {got}, JMeter {want}"
    );
}

/// `tests/fixtures/jmeter/results.jtl` was written by Apache JMeter 5.6.2 itself (see
/// `regenerate.sh` there) and `aggregate.csv` holds what JMeter's Aggregate Report classes
/// compute for it. The run exposes each rule: "Log in" has n = 5 (p90 rank
/// Math.round(5 × 0.9f) = 4), "Ramp" n = 170 (p95 rank 161, not 162), "Ramp after the
/// first" n = 165 (p90 rank 148, not 149), "Optional search" holds empty Transaction
/// Controller parents (kept here), and every row has received and sent bytes.
#[test]
fn aggregate_convention_equals_jmeter_5_6_2_aggregate_report() {
    let (report, warnings) =
        summarize_jtl_files(&[jmeter_fixture("results.jtl")], Convention::Aggregate).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut reader = csv::Reader::from_path(jmeter_fixture("aggregate.csv")).unwrap();
    let mut compared = 0;
    for record in reader.records() {
        let record = record.unwrap();
        let number = |index: usize| record[index].parse::<f64>().unwrap();
        let label = &record[0];
        let stats = report
            .labels
            .iter()
            .chain(report.total.as_ref())
            .find(|row| row.label == label)
            .unwrap_or_else(|| panic!("no row {label}"));
        assert_eq!(stats.samples as f64, number(1), "{label} samples");
        assert_close(label, "mean", stats.mean_ms, number(2), 1e-12);
        let percentiles = [stats.p50_ms, stats.p90_ms, stats.p95_ms, stats.p99_ms];
        assert_eq!(
            percentiles,
            [number(3), number(4), number(5), number(6)],
            "{label} p50, p90, p95, p99"
        );
        assert_eq!(
            (stats.min_ms as f64, stats.max_ms as f64),
            (number(7), number(8)),
            "{label} min, max"
        );
        assert_close(
            label,
            "error %",
            stats.error_percent,
            number(9) * 100.0,
            1e-12,
        );
        let rates = [
            stats.throughput_per_second,
            stats.received_kb_per_second,
            stats.sent_kb_per_second,
        ];
        for (field, got, want) in [
            ("throughput", rates[0], number(10)),
            ("received KB/s", rates[1], number(11)),
            ("sent KB/s", rates[2], number(12)),
        ] {
            assert_close(label, field, got.unwrap(), want, 1e-12);
        }
        compared += 1;
    }
    assert_eq!(compared, report.labels.len() + 1, "every row and TOTAL");
}

/// The same JTL against JMeter 5.6.2's HTML dashboard (`jmeter -g results.jtl -o DIR`,
/// its `statistics.json`): "Optional search" counts only its non-empty Transaction
/// Controller parents, TOTAL leaves every parent out, percentiles interpolate.
#[test]
fn dashboard_convention_equals_jmeter_5_6_2_dashboard() {
    let (report, warnings) =
        summarize_jtl_files(&[jmeter_fixture("results.jtl")], Convention::Dashboard).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let text = std::fs::read_to_string(jmeter_fixture("statistics.json")).unwrap();
    let dashboard: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text).unwrap();
    assert_eq!(
        dashboard.len(),
        report.labels.len() + 1,
        "every row and TOTAL"
    );
    for (name, want) in &dashboard {
        let label = if name == "Total" { "TOTAL" } else { name };
        let stats = report
            .labels
            .iter()
            .chain(report.total.as_ref())
            .find(|row| row.label == label)
            .unwrap_or_else(|| panic!("no row {label}"));
        let number = |field: &str| want[field].as_f64().unwrap();
        assert_eq!(
            stats.samples as f64,
            number("sampleCount"),
            "{label} samples"
        );
        assert_eq!(stats.errors as f64, number("errorCount"), "{label} errors");
        // JMeter writes errorPct as a 32-bit float.
        assert_close(
            label,
            "error %",
            stats.error_percent,
            number("errorPct"),
            1e-6,
        );
        for (field, got) in [
            ("meanResTime", stats.mean_ms),
            ("medianResTime", stats.p50_ms),
            ("pct1ResTime", stats.p90_ms),
            ("pct2ResTime", stats.p95_ms),
            ("pct3ResTime", stats.p99_ms),
            ("minResTime", stats.min_ms as f64),
            ("maxResTime", stats.max_ms as f64),
        ] {
            assert_close(label, field, got, number(field), 1e-12);
        }
        for (field, got) in [
            ("throughput", stats.throughput_per_second),
            ("receivedKBytesPerSec", stats.received_kb_per_second),
            ("sentKBytesPerSec", stats.sent_kb_per_second),
        ] {
            assert_close(label, field, got.unwrap(), number(field), 1e-12);
        }
    }
}

/// A one-second JTL of 250 samples (4 ms apart, 4 ms each) starting at `start_ms`.
fn one_second_file(path: &std::path::Path, start_ms: u64) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let mut text = String::from("timeStamp,elapsed,label,success,bytes,sentBytes\n");
    for index in 0..250 {
        text.push_str(&format!(
            "{},4,Check-in,true,1024,0\n",
            start_ms + 4 * index
        ));
    }
    std::fs::write(path, text).unwrap();
}

fn run_envctl(args: &[&str]) -> Outcome {
    let output = Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args(args)
        .output()
        .expect("the envctl binary runs");
    Outcome {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The README's `report jtl results/*/points/*/cico.jtl`: files of different runs, each
/// one second at 250/s, a minute apart. Merged, JMeter's throughput (500 samples over
/// 61 s) is 8.197/s; the report says the files do not overlap and gives the rate while
/// they ran (250/s), and `--by file` / `--by run` give each its own table.
#[test]
fn files_that_do_not_overlap_in_time_say_so_and_group_by_file_or_run() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("run-a/points/p1/cico.jtl");
    let b = dir.path().join("run-b/points/p1/cico.jtl");
    one_second_file(&a, 1_700_000_000_000);
    one_second_file(&b, 1_700_000_060_000);
    for run in ["run-a", "run-b"] {
        std::fs::write(dir.path().join(run).join("run.json"), "{}").unwrap();
    }
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());

    let merged = run_envctl(&["report", "jtl", a, b]);
    assert_eq!(merged.code, Some(0), "{}", merged.stderr);
    assert!(
        merged.stdout.contains(
            "The 2 files do not overlap in time: they ran in 2 separate stretches, \
             00:00:02 of the 00:01:01 from the first start to the last end."
        ),
        "{}",
        merged.stdout
    );
    assert!(
        merged
            .stdout
            .contains("(TOTAL 8.197/s); over the time the files ran, TOTAL is 250.000/s."),
        "{}",
        merged.stdout
    );
    let total = merged.stdout.lines().last().unwrap_or_default();
    assert!(total.starts_with("| TOTAL | 500 |"), "{total}");

    let json = run_envctl(&["report", "jtl", a, b, "--format", "json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["disjoint_files"]["spans"], 2);
    assert_eq!(
        document["disjoint_files"]["covered_throughput_per_second"],
        250.0
    );

    for by in ["file", "run"] {
        let grouped = run_envctl(&["report", "jtl", a, b, "--by", by]);
        assert_eq!(grouped.code, Some(0), "{}", grouped.stderr);
        let headings: Vec<&str> = grouped
            .stdout
            .lines()
            .filter(|line| line.starts_with("## "))
            .collect();
        assert_eq!(headings.len(), 2, "{by}: {}", grouped.stdout);
        assert!(headings[0].contains("run-a"), "{headings:?}");
        assert!(
            !grouped.stdout.contains("do not overlap"),
            "{}",
            grouped.stdout
        );
        let totals: Vec<&str> = grouped
            .stdout
            .lines()
            .filter(|line| line.starts_with("| TOTAL |"))
            .collect();
        // 250 samples over 0..1000 ms each: 250/s, 250 KB/s received.
        for total in &totals {
            assert!(total.ends_with("| 250.000 | 250.00 | 0.00 |"), "{total}");
        }
    }
    let csv = run_envctl(&["report", "jtl", a, b, "--by", "run", "--format", "csv"]);
    let mut lines = csv.stdout.lines();
    assert!(
        lines
            .next()
            .unwrap_or_default()
            .starts_with("group,label,samples,")
    );
    assert_eq!(
        csv.stdout.lines().filter(|l| l.contains(",TOTAL,")).count(),
        2
    );
    let grouped_json = run_envctl(&["report", "jtl", a, b, "--by", "file", "--format", "json"]);
    let document: serde_json::Value = serde_json::from_str(&grouped_json.stdout).unwrap();
    assert_eq!(document["groups"].as_array().map(Vec::len), Some(2));
    assert_eq!(document["groups"][1]["total"]["samples"], 250);
}
