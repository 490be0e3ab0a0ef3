//! `envctl report RUN_DIR` and `envctl report compare` on the fixture runs of
//! tests/fixtures/report/ (written by `fixtures/report/generator.rs`, see there).
//!
//! Golden files are insta snapshots in tests/fixtures/report/snapshots/; after an intended
//! change, review them with `INSTA_UPDATE=always cargo test -p envctl-perf --test report_run`
//! and `git diff`. Statistics are checked against numbers computed independently by
//! `tests/fixtures/report/expected_figures.py` from the fixture files themselves.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use envctl::report::RunSummary;
use envctl::report::jtl::Convention;
use envctl::report::run::run_summary::{FigureRow, Group};
use envctl::report::run::stats::{Noise, Significance};
use envctl::results::RunDir;

#[path = "fixtures/report/generator.rs"]
mod generator;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

/// Every file under `dir`, by relative path, with its content.
fn files_under(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The committed fixtures are exactly what the generator writes; with
/// `ENVCTL_WRITE_REPORT_FIXTURES=1` the test rewrites them instead.
#[test]
fn fixtures_match_their_generator() {
    for name in generator::FIXTURES {
        if std::env::var_os("ENVCTL_WRITE_REPORT_FIXTURES").is_some() {
            let _ = std::fs::remove_dir_all(fixture(name));
            generator::write_fixture(name, &fixture(name));
        }
        let fresh = tempfile::tempdir().unwrap();
        generator::write_fixture(name, fresh.path());
        let expected = files_under(fresh.path());
        let committed = files_under(&fixture(name));
        assert_eq!(
            committed.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{name}: regenerate with ENVCTL_WRITE_REPORT_FIXTURES=1"
        );
        for (path, content) in &expected {
            assert!(
                committed.get(path) == Some(content),
                "{name}/{path} differs from the generator's; regenerate with \
                 ENVCTL_WRITE_REPORT_FIXTURES=1"
            );
        }
    }
}

/// What one run of the binary printed.
#[derive(Debug)]
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `envctl report ARGS...` in tests/fixtures/report, so that paths in the output are
/// the relative names given and snapshots do not depend on the checkout's location.
fn report(args: &[&str]) -> Outcome {
    let output = Command::new(env!("CARGO_BIN_EXE_envctl"))
        .arg("report")
        .args(args)
        .current_dir(fixture(""))
        .output()
        .expect("the envctl binary runs");
    Outcome {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn success(args: &[&str]) -> String {
    let outcome = report(args);
    assert_eq!(outcome.code, Some(0), "{args:?}: {}", outcome.stderr);
    assert_eq!(outcome.stderr, "", "{args:?}");
    outcome.stdout
}

macro_rules! golden {
    ($name:expr, $text:expr) => {
        insta::with_settings!({snapshot_path => "fixtures/report/snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

#[test]
fn golden_markdown_json_and_csv_of_the_kafka_matrix() {
    golden!("kafka-matrix.md", success(&["kafka-matrix"]));
    golden!(
        "kafka-matrix.json",
        success(&["kafka-matrix", "--format", "json"])
    );
    golden!(
        "kafka-matrix.csv",
        success(&["kafka-matrix", "--format", "csv"])
    );
}

/// Every row has the header's length, for every fixture: a spreadsheet would otherwise
/// shift columns silently.
#[test]
fn csv_rows_all_have_the_header_length() {
    for name in generator::FIXTURES {
        let text = success(&[name, "--format", "csv"]);
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(text.as_bytes());
        let header = reader.headers().unwrap().clone();
        assert_eq!(header.get(header.len() - 4), Some("synthetic"), "{name}");
        assert_eq!(header.get(header.len() - 3), Some("source"), "{name}");
        assert_eq!(header.get(header.len() - 2), Some("status"), "{name}");
        assert_eq!(header.get(header.len() - 1), Some("shortfall"), "{name}");
        let mut rows = 0;
        for record in reader.records() {
            let record = record.unwrap();
            assert_eq!(record.len(), header.len(), "{name}: {record:?}");
            rows += 1;
        }
        assert!(rows > 10, "{name}: {rows} rows");
    }
}

#[test]
fn golden_markdown_of_n_1_and_of_a_ramp() {
    golden!("log-level.md", success(&["log-level"]));
    golden!("export-ramp.md", success(&["export-ramp"]));
}

fn summary(name: &str) -> RunSummary {
    RunSummary::of_run(
        &RunDir::read(&fixture(name)).unwrap(),
        &[],
        Convention::Aggregate,
    )
    .unwrap()
}

fn group<'a>(summary: &'a RunSummary, title: &str) -> &'a Group {
    summary
        .groups
        .iter()
        .find(|g| g.title == title)
        .unwrap_or_else(|| panic!("no group {title}"))
}

fn row<'a>(group: &'a Group, subject: &str, metric: &str, statistic: &str) -> &'a FigureRow {
    group
        .figures
        .iter()
        .find(|r| {
            r.key.subject == subject && r.key.metric == metric && r.key.statistic == statistic
        })
        .unwrap_or_else(|| panic!("no figure {subject} {metric} {statistic}"))
}

fn assert_close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} is not within {tolerance} of {expected}"
    );
}

fn standard_deviation(noise: Noise) -> f64 {
    match noise {
        Noise::Estimate {
            standard_deviation, ..
        } => standard_deviation,
        Noise::NoEstimate => panic!("expected an estimate of noise"),
    }
}

/// Expected values: printed by tests/fixtures/report/expected_figures.py (see there).
#[test]
fn statistics_match_an_independent_computation() {
    let summary = summary("kafka-matrix");
    let create = group(&summary, "job=create-25k");
    assert_eq!(create.columns, ["zookeeper-m5", "kraft-m7g"]);
    // mod-inventory-b CPU average over the workload window only: the idle padding
    // (2 %) around it would pull the average down if it were counted.
    let cpu = row(create, "mod-inventory-b", "CPU", "Average");
    let (base, kraft) = (&cpu.cells[0], &cpu.cells[1]);
    assert_eq!(base.values.len(), 2);
    assert_close(base.values[0], 105.6832, 1e-9);
    assert_close(base.values[1], 109.9968, 1e-9);
    let base_summary = base.summary.unwrap();
    assert_close(base_summary.mean, 107.84, 1e-9);
    assert_close(
        standard_deviation(base_summary.noise),
        3.050175811326267,
        1e-9,
    );
    let delta = kraft.delta.as_ref().unwrap();
    assert_close(delta.absolute, 139.1 - 107.84, 1e-9);
    assert_close(
        delta.percent.unwrap(),
        (139.1 - 107.84) / 107.84 * 100.0,
        1e-9,
    );
    let Significance::Tested(test) = delta.significance else {
        panic!("expected a test: {:?}", delta.significance);
    };
    assert_close(test.t, 8.880355633939953, 1e-9);
    assert_close(test.degrees_of_freedom, 1.88307332804458, 1e-9);
    assert_close(test.p_value, 0.014950701890009577, 1e-7);
    assert!(test.significant);

    // Check-in average response time (s) of the update job: significant at p = 0.032.
    let update = group(&summary, "job=update-25k");
    let check_in = row(update, "Check-in", "Response time", "Average");
    assert_close(check_in.cells[0].summary.unwrap().mean, 0.7715, 1e-12);
    assert_close(check_in.cells[1].summary.unwrap().mean, 0.7135, 1e-12);
    let Significance::Tested(test) = check_in.cells[1].delta.as_ref().unwrap().significance else {
        panic!("expected a test");
    };
    assert_close(test.t, -5.468292441175968, 1e-9);
    assert_close(test.degrees_of_freedom, 2.0, 1e-9);
    assert_close(test.p_value, 0.031853088388391515, 1e-7);
    assert!(test.significant);

    // Check-in percentiles per repeat (JMeter's round(n x p)-th smallest); with two repeats
    // a side a rank test cannot reach p < 0.05 (2 / C(4, 2) = 0.33), and the report says so.
    for (statistic, zookeeper, kraft) in [
        ("p90", [0.839, 0.854], [0.781, 0.796]),
        ("p95", [0.849, 0.864], [0.791, 0.806]),
        ("p99", [0.859, 0.874], [0.801, 0.816]),
    ] {
        let percentile = row(update, "Check-in", "Response time", statistic);
        assert_eq!(percentile.cells[0].values, zookeeper, "{statistic}");
        assert_eq!(percentile.cells[1].values, kraft, "{statistic}");
        let delta = percentile.cells[1].delta.as_ref().unwrap();
        assert_close(delta.absolute, -0.058, 1e-9);
        let Significance::TooFewRepeatsForRankTest {
            smallest_p_value, ..
        } = delta.significance
        else {
            panic!("expected too few repeats: {:?}", delta.significance);
        };
        assert_close(smallest_p_value, 1.0 / 3.0, 1e-12);
    }

    // Broker 2: a 2% difference inside the noise.
    let broker = row(
        create,
        "ptf-mobius-testing2 broker 2",
        "CPU user",
        "Average",
    );
    let Significance::Tested(test) = broker.cells[1].delta.as_ref().unwrap().significance else {
        panic!("expected a test");
    };
    assert_close(test.t, -0.714212839142507, 1e-9);
    assert_close(test.degrees_of_freedom, 1.9991842561520579, 1e-9);
    assert_close(test.p_value, 0.5492281321133587, 1e-7);
    assert!(!test.significant);
}

#[test]
fn one_repeat_has_no_estimate_of_noise_and_a_growing_memory_is_flagged() {
    let summary = summary("log-level");
    assert_eq!(summary.max_repeats, 1);
    let results = group(&summary, "all points");
    let cpu = row(results, "mod-data-export-b", "CPU", "Average");
    assert_eq!(cpu.cells[0].summary.unwrap().noise, Noise::NoEstimate);
    assert_eq!(
        cpu.cells[1].delta.as_ref().unwrap().significance,
        Significance::NoEstimateOfNoise
    );
    let leaks: Vec<_> = summary
        .memory_trends
        .iter()
        .filter(|t| t.suspected_leak)
        .collect();
    assert_eq!(leaks.len(), 1, "{:?}", summary.memory_trends);
    assert_eq!(
        (leaks[0].service.as_str(), leaks[0].point.as_str()),
        ("mod-data-export-b", "log_level=info")
    );
    assert_close(leaks[0].trend.slope_per_hour, 13.636363650730305, 1e-6);
    assert_eq!(leaks[0].trend.samples, 67);
    let markdown = success(&["log-level"]);
    assert!(markdown.contains("n=1, no estimate of noise"), "{markdown}");
    assert!(markdown.contains("**Memory leak suspected**"), "{markdown}");
    let quiet = success(&["kafka-matrix"]);
    assert!(quiet.contains("No memory leak is suspected"), "{quiet}");
}

#[test]
fn a_ramp_reports_its_limit_and_the_failure_after_it() {
    let summary = summary("export-ramp");
    assert_eq!(summary.ramp_limits.len(), 1);
    let limit = &summary.ramp_limits[0];
    assert_eq!(limit.last_passing.as_deref(), Some("2.75m"));
    assert_eq!(limit.first_failing.as_deref(), Some("3m"));
    assert_eq!(
        limit.failure.as_deref(),
        Some("step export: exit code 137 (mod-data-export-b OOM)")
    );
    let results = group(&summary, "all points");
    assert_eq!(results.columns, ["1m", "2m", "2.5m", "2.75m", "3m"]);
    let memory = row(results, "mod-data-export-b", "Memory", "Average");
    // Report 004's average memory per size: the flat series' window average.
    let means: Vec<f64> = memory
        .cells
        .iter()
        .map(|c| c.summary.unwrap().mean)
        .collect();
    for (mean, expected) in means.iter().zip([101.66, 102.77, 124.4, 136.11, 141.0]) {
        assert_close(*mean, expected, 0.02);
    }
}

/// In a comparison, each run's ramp limit is looked up among its own points: when the
/// next run skipped 3m, the first run's 3m failure is not the next run's.
#[test]
fn compare_keeps_each_runs_ramp_to_its_own_points() {
    let next = tempfile::tempdir().unwrap();
    copy_run("export-ramp", next.path());
    let run_json = next.path().join("run.json");
    let text = std::fs::read_to_string(&run_json)
        .unwrap()
        .replace("20231114T221320Z-data-export-ramp", "next-release")
        .replace("\"status\": \"failed\"", "\"status\": \"skipped\"");
    std::fs::write(&run_json, text).unwrap();
    std::fs::remove_dir_all(next.path().join("points/records-3m")).unwrap();
    let summary = RunSummary::compare(
        &RunDir::read(&fixture("export-ramp")).unwrap(),
        &RunDir::read(next.path()).unwrap(),
        &[],
        Convention::Aggregate,
    )
    .unwrap();
    let limits: Vec<(&str, Option<&str>, Option<&str>)> = summary
        .ramp_limits
        .iter()
        .map(|l| {
            (
                l.run_id.as_str(),
                l.last_passing.as_deref(),
                l.first_failing.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        limits,
        [
            (
                "20231114T221320Z-data-export-ramp",
                Some("2.75m"),
                Some("3m")
            ),
            ("next-release", Some("2.75m"), None)
        ]
    );
    assert_eq!(summary.points_not_measured.len(), 1);
    // Points carry the short name of their run (B), which the overview resolves.
    assert_eq!(summary.points_not_measured[0].id, "B/records=3m");
    assert_eq!(
        summary
            .runs
            .iter()
            .map(|run| (run.label.as_deref(), run.run_id.as_str()))
            .collect::<Vec<_>>(),
        [
            (Some("A"), "20231114T221320Z-data-export-ramp"),
            (Some("B"), "next-release")
        ]
    );
}

#[test]
fn the_baseline_can_be_chosen_and_a_wrong_one_is_a_clear_error() {
    let flipped = success(&["kafka-matrix", "--baseline", "kafka=kraft-m7g"]);
    assert!(
        flipped.contains("| Service | kraft-m7g avg | zookeeper-m5 avg | Δ zookeeper-m5 avg |"),
        "{flipped}"
    );
    assert!(flipped.contains("Baseline: `kafka=kraft-m7g`"), "{flipped}");
    for (baseline, message) in [
        (
            "broker=m5",
            "error: baseline names axis `broker`, which the run does not have (its axes: \
             kafka, job)\n",
        ),
        (
            "kafka=kraft",
            "error: baseline `kafka=kraft`: axis `kafka` has no variant `kraft` (its variants: \
             zookeeper-m5, kraft-m7g)\n",
        ),
        ("kafka", "error: baseline `kafka` is not `axis=variant`\n"),
    ] {
        let outcome = report(&["kafka-matrix", "--baseline", baseline]);
        assert_eq!(
            (
                outcome.code,
                outcome.stdout.as_str(),
                outcome.stderr.as_str()
            ),
            (Some(1), "", message)
        );
    }
}

/// Copies a fixture run so a test can change it.
fn copy_run(name: &str, to: &Path) {
    for (path, content) in files_under(&fixture(name)) {
        let target = to.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, content).unwrap();
    }
}

#[test]
fn compare_puts_the_same_points_of_two_runs_side_by_side() {
    let next = tempfile::tempdir().unwrap();
    copy_run("kafka-matrix", next.path());
    // The next release: another run id, and mod-inventory-b uses 10% more CPU everywhere.
    let run_json = next.path().join("run.json");
    let text = std::fs::read_to_string(&run_json).unwrap().replace(
        "20231114T221320Z-kafka-kraft-vs-zookeeper",
        "20231201T080000Z-kafka-kraft-vs-zookeeper",
    );
    std::fs::write(&run_json, text).unwrap();
    for (path, _) in files_under(next.path()) {
        if !path.ends_with("metrics.json") {
            continue;
        }
        let file = next.path().join(&path);
        let mut metrics: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for series in metrics["series"].as_array_mut().unwrap() {
            if series["resource"] == "mod-inventory-b" && series["metric"] == "CPUUtilization" {
                for value in series["values"].as_array_mut().unwrap() {
                    *value = serde_json::json!(value.as_f64().unwrap() * 1.1);
                }
            }
        }
        std::fs::write(&file, serde_json::to_string(&metrics).unwrap()).unwrap();
    }
    let summary = RunSummary::compare(
        &RunDir::read(&fixture("kafka-matrix")).unwrap(),
        &RunDir::read(next.path()).unwrap(),
        &[],
        Convention::Aggregate,
    )
    .unwrap();
    assert_eq!(summary.axes[0].name, "run");
    assert_eq!(
        summary.title,
        "MSK kafka.m5.2xlarge on ZooKeeper vs kafka.m7g.2xlarge on KRaft: \
         20231114T221320Z-kafka-kraft-vs-zookeeper vs 20231201T080000Z-kafka-kraft-vs-zookeeper"
    );
    assert_eq!(summary.groups.len(), 4, "one group per point of the matrix");
    let group = group(&summary, "kafka=zookeeper-m5, job=create-25k");
    // Short column headers; the overview says which run A and B are.
    assert_eq!(group.columns, ["A", "B"]);
    let cpu = row(group, "mod-inventory-b", "CPU", "Average");
    assert_close(
        cpu.cells[1].delta.as_ref().unwrap().percent.unwrap(),
        10.0,
        1e-9,
    );
    let unchanged = row(group, "okapi-b", "CPU", "Average");
    assert_close(
        unchanged.cells[1].delta.as_ref().unwrap().absolute,
        0.0,
        1e-12,
    );

    let markdown = report(&["compare", "kafka-matrix", next.path().to_str().unwrap()]);
    assert_eq!(markdown.code, Some(0), "{}", markdown.stderr);
    assert!(
        markdown
            .stdout
            .contains("## kafka=kraft-m7g, job=update-25k")
    );
    assert!(
        markdown
            .stdout
            .contains("- A: run `20231114T221320Z-kafka-kraft-vs-zookeeper`: playbook"),
        "{}",
        markdown.stdout
    );
    let header = markdown
        .stdout
        .lines()
        .find(|line| line.starts_with("| Service |"))
        .unwrap_or_default();
    assert!(
        !header.contains("20231114T221320Z"),
        "no run id in a column header: {header}"
    );
    // Run ids, not paths, name the runs, so the report of a temporary copy is golden too.
    golden!("compare.md", markdown.stdout);
}

#[test]
fn html_is_one_well_formed_file_with_charts_and_no_external_references() {
    let html = success(&["kafka-matrix", "--format", "html"]);
    let mut reader = quick_xml::Reader::from_str(&html);
    reader.config_mut().check_end_names = true;
    let (mut depth, mut svgs, mut elements) = (0i64, 0, Vec::new());
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(element)) => {
                depth += 1;
                let name = String::from_utf8_lossy(element.name().as_ref()).into_owned();
                if name == "svg" {
                    svgs += 1;
                }
                elements.push(name);
            }
            Ok(quick_xml::events::Event::Empty(element)) => {
                elements.push(String::from_utf8_lossy(element.name().as_ref()).into_owned());
            }
            Ok(quick_xml::events::Event::End(_)) => depth -= 1,
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(error) => panic!("malformed at {}: {error}", reader.buffer_position()),
        }
    }
    assert_eq!(depth, 0, "every element is closed");
    // Per group: one bar chart for the short transactions and one for the import, the
    // percentiles over time of each of the three transactions, CPU and memory of four
    // services, CPU and connections of two DB instances, two brokers.
    assert_eq!(svgs, 2 * (2 + 3 + 8 + 4 + 2), "charts");
    for forbidden in ["script", "link", "img", "iframe", "object"] {
        assert!(
            !elements.iter().any(|e| e == forbidden),
            "<{forbidden}> in the report"
        );
    }
    // The only links are the contents' links to sections of the same file.
    assert!(
        html.contains("<a href=\"#section-3\">job=create-25k</a>"),
        "contents"
    );
    assert!(html.contains("<h2 id=\"section-3\">job=create-25k</h2>"));
    let without_svg_namespace = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_svg_namespace.contains("http://"));
    assert!(!without_svg_namespace.contains("https://"));
    assert!(!html.contains("url("), "no external resources from CSS");
    for text in [
        "Average response time (job=create-25k)",
        "Check-in response time",
        "Response time (ms)",
        "p95 and median (lighter) of the samples started in each interval",
        "Time since workload start (min)",
        "mod-inventory-b CPU",
        "CPU (%)",
    ] {
        assert!(html.contains(text), "missing {text:?}");
    }
}

#[test]
fn the_output_file_extension_picks_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.csv");
    let outcome = report(&["log-level", "--out", out.to_str().unwrap()]);
    assert_eq!((outcome.code, outcome.stdout.as_str()), (Some(0), ""));
    // Issue 35: `--out` says what it wrote.
    assert!(
        outcome
            .stderr
            .contains(&format!("wrote {} (csv report, ", out.display())),
        "{}",
        outcome.stderr
    );
    let csv = std::fs::read_to_string(&out).unwrap();
    assert!(
        csv.starts_with(
            "point,repeat,log_level,section,subject,metric,statistic,value,unit,synthetic,source,status,shortfall\n"
        ),
        "{csv}"
    );
}

#[test]
fn a_missing_run_and_a_bare_report_are_errors() {
    let missing = report(&["no-such-run"]);
    assert_eq!(missing.code, Some(1));
    assert!(
        missing
            .stderr
            .starts_with("error: cannot read the results in no-such-run"),
        "{}",
        missing.stderr
    );
    let bare = report(&[]);
    assert_eq!(
        bare.code,
        Some(64),
        "clap shows the usage, exit 64 (EX_USAGE)"
    );
    assert!(bare.stderr.contains("RUN_DIR"), "{}", bare.stderr);
}

#[test]
fn a_point_without_results_is_listed_and_its_variant_has_no_estimate_of_noise() {
    let run = tempfile::tempdir().unwrap();
    copy_run("kafka-matrix", run.path());
    std::fs::remove_dir_all(run.path().join("points/kafka-kraft-m7g_job-create-25k_r2")).unwrap();
    let summary = RunSummary::of_run(
        &RunDir::read(run.path()).unwrap(),
        &[],
        Convention::Aggregate,
    )
    .unwrap();
    assert_eq!(
        summary
            .points_not_measured
            .iter()
            .map(|p| p.id.as_str())
            .collect::<Vec<_>>(),
        ["kafka=kraft-m7g,job=create-25k#2"]
    );
    let create = group(&summary, "job=create-25k");
    let cpu = row(create, "okapi-b", "CPU", "Average");
    assert_eq!(cpu.cells[1].values.len(), 1);
    assert_eq!(
        cpu.cells[1].delta.as_ref().unwrap().significance,
        Significance::NoEstimateOfNoise
    );
    let markdown = report(&[run.path().to_str().unwrap()]);
    assert!(
        markdown
            .stdout
            .contains("| kafka=kraft-m7g,job=create-25k#2 | passed | — | — | no results |"),
        "{}",
        markdown.stdout
    );
    assert!(
        markdown
            .stdout
            .contains("| okapi-b | 27.65 ± 0.78 (CV 2.8%) | 40.91 | +13.26 (+47.9%), n=1 on one side, no estimate of noise |"),
        "{}",
        markdown.stdout
    );
}

#[test]
fn an_unreadable_jtl_leaves_its_transactions_out_with_a_warning() {
    let run = tempfile::tempdir().unwrap();
    copy_run("log-level", run.path());
    std::fs::remove_file(run.path().join("points/log_level-info/export.jtl")).unwrap();
    let outcome = report(&[run.path().to_str().unwrap()]);
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
    assert!(
        outcome
            .stderr
            .starts_with("warning: point log_level=info: transactions left out: "),
        "{}",
        outcome.stderr
    );
    // The other point's transaction is still there, without a counterpart to compare.
    assert!(
        outcome
            .stdout
            .contains("| Data export 100k | — | 3420.000 |"),
        "{}",
        outcome.stdout
    );
    assert!(outcome.stdout.contains("## Warnings"), "{}", outcome.stdout);
}

#[test]
fn a_point_whose_metrics_are_missing_is_named_and_the_others_are_reported() {
    let run = tempfile::tempdir().unwrap();
    copy_run("kafka-matrix", run.path());
    let lost = "points/kafka-kraft-m7g_job-create-25k_r2/metrics.json";
    std::fs::remove_file(run.path().join(lost)).unwrap();
    let summary = RunSummary::of_run(
        &RunDir::read(run.path()).unwrap(),
        &[],
        Convention::Aggregate,
    )
    .unwrap();
    let point = summary
        .variants
        .iter()
        .flat_map(|variant| &variant.points)
        .find(|point| point.id == "kafka=kraft-m7g,job=create-25k#2")
        .unwrap();
    assert!(point.metrics_missing.is_some());
    let warning = summary
        .warnings
        .iter()
        .find(|w| w.starts_with("point kafka=kraft-m7g,job=create-25k#2: metrics left out"))
        .unwrap_or_else(|| panic!("{:?}", summary.warnings));
    assert!(warning.contains("metrics.json"), "{warning}");
    // The point keeps its other figures; its variant's CPU has only the first repeat.
    let create = group(&summary, "job=create-25k");
    let cpu = row(create, "mod-inventory-b", "CPU", "Average");
    assert_eq!(cpu.cells[1].points, ["kafka=kraft-m7g,job=create-25k#1"]);
    let duration = row(create, "data-import", "Duration", "Value");
    assert_eq!(duration.cells[1].values.len(), 2);
    // The command still writes the report and says which point is missing.
    let outcome = report(&[run.path().to_str().unwrap()]);
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
    assert!(
        outcome
            .stdout
            .contains("| kafka=kraft-m7g,job=create-25k#2 | passed |"),
        "{}",
        outcome.stdout
    );
    assert!(outcome.stdout.contains("metrics missing (see Warnings)"));
    assert!(
        outcome.stderr.contains("metrics left out"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn a_configuration_that_changed_between_repeats_is_flagged() {
    let run = tempfile::tempdir().unwrap();
    copy_run("kafka-matrix", run.path());
    let file = run
        .path()
        .join("points/kafka-kraft-m7g_job-create-25k_r2/effective.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("mod-inventory-b:13", "mod-inventory-b:14"),
    )
    .unwrap();
    let summary = RunSummary::of_run(
        &RunDir::read(run.path()).unwrap(),
        &[],
        Convention::Aggregate,
    )
    .unwrap();
    assert_eq!(summary.configuration_drift.len(), 1);
    let drift = &summary.configuration_drift[0];
    assert_eq!(
        summary.variants[drift.variant].name,
        "kafka=kraft-m7g, job=create-25k"
    );
    assert_eq!(
        (drift.first_point.as_str(), drift.point.as_str()),
        (
            "kafka=kraft-m7g,job=create-25k#1",
            "kafka=kraft-m7g,job=create-25k#2"
        )
    );
    let paths: Vec<(&str, &[Option<String>])> = drift
        .differences
        .iter()
        .map(|row| (row.path.as_str(), row.values.as_slice()))
        .collect();
    assert_eq!(
        paths,
        [(
            "services.mod-inventory-b.task_definition",
            &[
                Some("mod-inventory-b:13".to_owned()),
                Some("mod-inventory-b:14".to_owned())
            ][..]
        )]
    );
    assert!(
        summary.warnings.iter().any(|w| w
            == "kafka=kraft-m7g, job=create-25k: the effective configuration changed between \
                repeats (kafka=kraft-m7g,job=create-25k#1 vs kafka=kraft-m7g,job=create-25k#2: \
                services.mod-inventory-b.task_definition: mod-inventory-b:13 -> \
                mod-inventory-b:14), so its repeats measured different environments and are \
                not comparable"),
        "{:?}",
        summary.warnings
    );
    // The unchanged fixture has no drift.
    assert!(summary_of_fixture_has_no_drift());
}

fn summary_of_fixture_has_no_drift() -> bool {
    summary("kafka-matrix").configuration_drift.is_empty()
}

#[test]
fn the_convention_is_named_in_the_method_and_the_percentile_tables() {
    for (convention, sentence, heading) in [
        (
            "aggregate",
            "Transaction figures follow JMeter's Aggregate Report (--convention aggregate)",
            "### Transaction percentiles (JMeter Aggregate Report rule)",
        ),
        (
            "dashboard",
            "Transaction figures follow JMeter's HTML dashboard (--convention dashboard)",
            "### Transaction percentiles (JMeter dashboard rule)",
        ),
    ] {
        let outcome = report(&["kafka-matrix", "--convention", convention]);
        assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
        let method = outcome.stdout.split("## Method").nth(1).unwrap_or_default();
        assert!(method.contains(sentence), "{convention}: {method}");
        assert!(outcome.stdout.contains(heading), "{convention}");
    }
}

/// The `## Summary` section of a Markdown report.
fn summary_section(markdown: &str) -> String {
    markdown
        .split("## Summary")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_default()
        .to_owned()
}

/// `export-ramp` ran on the sandbox: its durations are on the simulated clock, its
/// transactions are the demo workload's, its metrics synthetic. Every format says so
/// per figure, and the Summary lists none of them, saying why; `log-level` ran against
/// AWS, and its figures are measurements and findings.
#[test]
fn every_figure_knows_its_source_and_synthetic_ones_are_never_findings() {
    let markdown = success(&["export-ramp"]);
    let summary = summary_section(&markdown);
    assert!(
        summary.contains(
            "**No synthetic finding:** 22 of 22 figures are synthetic (demo workload, \
             sandbox synthetic) and are left out of this summary; no figure is measured, so \
             the summary has no finding about performance."
        ),
        "{summary}"
    );
    for finding in ["largest changes", "maximum of any point", "No memory leak"] {
        assert!(!summary.contains(finding), "{finding}: {summary}");
    }
    assert!(markdown.contains("> **Synthetic figures.** In this report step durations run"));
    assert!(markdown.contains("### Transactions, synthetic (demo workload)"));
    assert!(markdown.contains("### Step durations, synthetic (sandbox synthetic)"));

    let json: serde_json::Value =
        serde_json::from_str(&success(&["export-ramp", "--format", "json"])).unwrap();
    assert_eq!(
        json["sources"],
        serde_json::json!(["demo_workload", "sandbox_synthetic"])
    );
    let rows: Vec<&serde_json::Value> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|group| group["figures"].as_array().unwrap())
        .collect();
    assert!(!rows.is_empty());
    for row in &rows {
        let expected = match row["key"]["section"].as_str().unwrap() {
            "transaction" => "demo_workload",
            _ => "sandbox_synthetic",
        };
        assert_eq!(row["source"], expected, "{row}");
        assert_eq!(row["synthetic"], true, "{row}");
    }

    let csv = success(&["export-ramp", "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let mut counted = 0;
    for record in reader.records() {
        let record = record.unwrap();
        let (synthetic, source) = (&record[record.len() - 4], &record[record.len() - 3]);
        assert_eq!(synthetic, "true", "{record:?}");
        assert!(
            ["demo_workload", "sandbox_synthetic"].contains(&source),
            "{record:?}"
        );
        counted += 1;
    }
    assert!(counted > 0);

    let html = success(&["export-ramp", "--format", "html"]);
    assert!(html.contains("<strong>Synthetic figures.</strong>"));

    // Against AWS: no banner, measured sources, and the findings are there.
    let measured = success(&["log-level"]);
    assert!(!measured.contains("Synthetic figures"));
    assert!(!measured.contains("No synthetic finding"));
    assert!(summary_section(&measured).contains("largest changes"));
    let json: serde_json::Value =
        serde_json::from_str(&success(&["log-level", "--format", "json"])).unwrap();
    assert_eq!(
        json["sources"],
        serde_json::json!(["load_test", "aws_cloudwatch"])
    );
}

/// The charts are reachable from the contents at the top, come before each group's
/// (long) configuration table, mark where the workload ends, and the report says when
/// only the busiest services are charted: here 10 services, 8 charted.
#[test]
fn charts_are_linked_from_the_top_and_say_what_they_leave_out() {
    let run = tempfile::tempdir().unwrap();
    copy_run("kafka-matrix", run.path());
    for (path, _) in files_under(run.path()) {
        if !path.ends_with("metrics.json") {
            continue;
        }
        let file = run.path().join(&path);
        let mut metrics: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let series = metrics["series"].as_array_mut().unwrap();
        let copies: Vec<serde_json::Value> = series
            .iter()
            .filter(|s| s["resource"] == "okapi-b")
            .flat_map(|s| {
                (1..=6).map(move |n| {
                    let mut copy = s.clone();
                    copy["resource"] = serde_json::json!(format!("mod-extra-{n}"));
                    copy
                })
            })
            .collect();
        series.extend(copies);
        std::fs::write(&file, serde_json::to_string(&metrics).unwrap()).unwrap();
    }
    let html = success(&[run.path().to_str().unwrap(), "--format", "html"]);
    let contents = html
        .find("<nav class=\"contents\">Charts:")
        .expect("charts in the contents");
    assert!(
        contents < html.find("<h2 id=\"section-1\">").unwrap(),
        "contents first"
    );
    assert!(html.contains("<a href=\"#charts-0\">job=create-25k</a>"));
    let charts = html
        .find("<h3 id=\"charts-0\">")
        .expect("the charts' anchor");
    let configuration = html.find("<h3>Configuration differences</h3>").unwrap();
    assert!(
        charts < configuration,
        "charts before the configuration table"
    );
    assert!(html.contains(
        "<p>CPU and memory are charted for the 8 services with the highest average CPU, \
         of 10; the tables above have every service.</p>"
    ));
    assert!(html.contains("workload end"));
    assert!(
        html.contains("Average (ms)"),
        "response times in milliseconds"
    );
}
