//! envctl's performance table (docs/performance.md): validate, plan, apply, switch, JTL and
//! sandbox figures, printed as Markdown and written as JSON to
//! `$CARGO_TARGET_DIR/bench/perf.json` (`target/bench/perf.json` without it).
//!
//! `cargo bench --bench perf`. Times are medians of several runs and are only printed, never
//! asserted; the deterministic figures (calls, simulated seconds) are asserted by
//! tests/integration/perf.rs, which shares `support/perf_measure.rs` with this file.
//! `PERF_BENCH_QUICK=1 cargo test --bench perf` is a fast debug-build smoke run (fewer runs,
//! 100,000 JTL rows, 200 instead of 1,000 services); its numbers are not the table's.
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "support/jtl_sample.rs"]
mod jtl_sample;
#[path = "support/load_measure.rs"]
mod load_measure;
#[path = "support/perf_env.rs"]
mod perf_env;
#[path = "support/perf_measure.rs"]
mod perf_measure;
#[path = "support/sandbox_load.rs"]
mod sandbox_load;

use perf_measure::{PerfWorld, TERRAFORM_PARALLELISM, Timeline, compile, repo};

/// Per-request latency added by the sandbox for the plan wall times: a typical AWS API
/// round trip from a laptop or CI runner.
const LATENCY_MS: u64 = 50;

struct Settings {
    quick: bool,
    /// Runs per time figure (the median is reported).
    runs: usize,
    big: usize,
    jtl_rows: u64,
    jtl_runs: usize,
    sandbox_runs: usize,
    sandbox_run_for: Duration,
}

impl Settings {
    fn from_env() -> Settings {
        if std::env::var("PERF_BENCH_QUICK").is_ok_and(|v| v == "1") {
            Settings {
                quick: true,
                runs: 1,
                big: 200,
                jtl_rows: 100_000,
                jtl_runs: 1,
                sandbox_runs: 1,
                sandbox_run_for: Duration::from_millis(500),
            }
        } else {
            Settings {
                quick: false,
                runs: 7,
                big: 1_000,
                jtl_rows: 5_000_000,
                jtl_runs: 3,
                sandbox_runs: 3,
                sandbox_run_for: Duration::from_secs(3),
            }
        }
    }
}

/// One row of the table: a JSON key, its value (`None` is JSON `null`: not measurable yet),
/// and how it was obtained.
struct Figure {
    key: String,
    value: Option<f64>,
    unit: &'static str,
    how: String,
}

#[derive(Default)]
struct Table {
    figures: Vec<Figure>,
}

impl Table {
    fn add(&mut self, key: impl Into<String>, value: Option<f64>, unit: &'static str, how: &str) {
        let figure = Figure {
            key: key.into(),
            value,
            unit,
            how: how.to_string(),
        };
        eprintln!(
            "  {} = {} {}",
            figure.key,
            figure.value.map_or("null".into(), format_value),
            figure.unit
        );
        self.figures.push(figure);
    }

    fn markdown(&self) -> String {
        let mut out = String::from("| figure | value | unit | how |\n|---|---:|---|---|\n");
        for f in &self.figures {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                f.key,
                f.value.map_or("null".into(), format_value),
                f.unit,
                f.how
            ));
        }
        out
    }

    fn json(&self) -> serde_json::Value {
        let mut doc = serde_json::Map::new();
        let mut notes = serde_json::Map::new();
        for f in &self.figures {
            // Counts and whole simulated seconds as JSON integers, the rest as floats.
            let value = match f.value {
                Some(v) if v.fract() == 0.0 && v.abs() < 9e15 => (v as i64).into(),
                Some(v) => serde_json::Number::from_f64(v)
                    .map_or(serde_json::Value::Null, serde_json::Value::Number),
                None => serde_json::Value::Null,
            };
            doc.insert(f.key.clone(), value);
            notes.insert(f.key.clone(), format!("{} ({})", f.how, f.unit).into());
        }
        doc.insert("notes".into(), notes.into());
        doc.into()
    }
}

fn format_value(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let settings = Settings::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let scratch = tempfile::tempdir().expect("a temp dir");
    let big_env = perf_measure::write_env(
        scratch.path(),
        &format!("perf-{}", settings.big),
        &perf_env::perf_env(settings.big),
    )
    .expect("write the generated env");
    let started = Instant::now();
    let mut table = Table::default();

    // The JTL parse first: its peak memory is read as this process's VmHWM, which should
    // not include sandbox worlds the later stages leave allocated.
    eprintln!("JTL");
    jtl(&mut table, &settings);
    eprintln!("validate");
    validate(&mut table, &settings, &big_env);
    eprintln!("plan of perf-144 (sandbox latency {LATENCY_MS} ms)");
    runtime.block_on(plan_144(&mut table, &settings));
    eprintln!("apply of perf-144 under the ECS buckets");
    runtime.block_on(apply_144(&mut table));
    eprintln!("plan of perf-{} in a child process", settings.big);
    runtime.block_on(plan_big(&mut table, &settings, &big_env));
    eprintln!("matrix");
    runtime.block_on(matrix(&mut table));
    eprintln!("sandbox throughput");
    runtime.block_on(sandbox(&mut table, &settings));
    eprintln!("load engines");
    runtime.block_on(load_engines(&mut table));

    println!("\n{}", table.markdown());
    let out = output_path(settings.quick);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).expect("create the bench directory");
    }
    let text = serde_json::to_string_pretty(&table.json()).expect("JSON");
    std::fs::write(&out, text + "\n").expect("write perf.json");
    println!(
        "written to {} in {:.0} s",
        out.display(),
        started.elapsed().as_secs_f64()
    );
}

/// `$CARGO_TARGET_DIR/bench/perf.json`, or `target/bench/perf.json` in the workspace; a quick
/// run writes `perf-quick.json` beside it so that it never replaces the real table.
fn output_path(quick: bool) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    let name = if quick {
        "perf-quick.json"
    } else {
        "perf.json"
    };
    target.join("bench").join(name)
}

fn validate(table: &mut Table, settings: &Settings, big_env: &std::path::Path) {
    let small = repo().join("envs/perf-144.yaml");
    for (key, path, runs) in [
        ("validate_ms_144", small.as_path(), settings.runs * 2 + 1),
        (
            &*format!("validate_ms_{}", settings.big),
            big_env,
            settings.runs,
        ),
    ] {
        // One unmeasured run: templates and the allocator warm up as in a real command.
        compile(path, &[]);
        let times = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let compiled = compile(path, &[]);
                let elapsed = ms(t.elapsed());
                std::hint::black_box(compiled);
                elapsed
            })
            .collect();
        table.add(
            key,
            Some(median(times)),
            "ms",
            &format!(
                "wall time of compile_env (load, lint, lower) in this process, median of {runs}"
            ),
        );
    }
}

async fn plan_144(table: &mut Table, settings: &Settings) {
    let desired = compile(&repo().join("envs/perf-144.yaml"), &[]).desired;
    // Without the ECS buckets: see per_resource_refresh's note in docs/performance.md.
    let world = perf_measure::converged(&desired, false).await;
    let (stats, planned) = perf_measure::plan_calls(&world, &desired).await;
    assert!(!planned.plan.has_changes(), "perf-144 is converged");
    let ops: Vec<String> = stats
        .operations
        .iter()
        .map(|(op, s)| format!("{op} {}", s.count))
        .collect();
    eprintln!("    {}", ops.join(", "));
    table.add(
        "plan_calls_144",
        Some(stats.total() as f64),
        "calls",
        "sandbox requests during one converge::plan of converged perf-144, warm cache",
    );
    world.sandbox().reset_stats();
    let cluster = desired.cluster.name.clone();
    perf_measure::per_resource_refresh(
        &world.session,
        &cluster,
        &planned.live,
        TERRAFORM_PARALLELISM,
    )
    .await
    .expect("reference refresh");
    let reference = world.sandbox().stats();
    table.add(
        "plan_calls_per_resource_144",
        Some(reference.total() as f64),
        "calls",
        "sandbox requests of the reference per-resource refresh (one describe per service, \
         task definition, MSK cluster, DB instance) issued through the SDK",
    );

    world.set_latency(LATENCY_MS);
    // Warm both paths (connections, caches) once, then alternate.
    world.plan(&desired).await;
    perf_measure::per_resource_refresh(
        &world.session,
        &cluster,
        &planned.live,
        TERRAFORM_PARALLELISM,
    )
    .await
    .expect("reference refresh");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..settings.runs {
        let t = Instant::now();
        world.plan(&desired).await;
        ours.push(ms(t.elapsed()));
        let t = Instant::now();
        perf_measure::per_resource_refresh(
            &world.session,
            &cluster,
            &planned.live,
            TERRAFORM_PARALLELISM,
        )
        .await
        .expect("reference refresh");
        theirs.push(ms(t.elapsed()));
    }
    table.add(
        "plan_wall_ms_144",
        Some(median(ours)),
        "ms",
        &format!(
            "wall time of converge::plan (observe + diff), {LATENCY_MS} ms sandbox latency per call, median of {}",
            settings.runs
        ),
    );
    table.add(
        "plan_wall_ms_per_resource_144",
        Some(median(theirs)),
        "ms",
        &format!(
            "wall time of the reference refresh, {TERRAFORM_PARALLELISM} at a time (Terraform's -parallelism), {LATENCY_MS} ms latency, no ECS throttling, median of {}",
            settings.runs
        ),
    );
    let _ = world.session.close().await;
}

async fn apply_144(table: &mut Table) {
    let desired = compile(&repo().join("envs/perf-144.yaml"), &[]).desired;
    let (report, log, started) = perf_measure::apply_ecs_phase(&desired).await;
    let bound = perf_measure::apply_bound_secs(
        desired.services.len() as u64,
        perf_measure::task_start_secs(),
    );
    eprintln!("    {}", Timeline::of(&log, started).render());
    eprintln!("    {}", perf_measure::launches(&report));
    table.add(
        "apply_sim_s_144",
        Some(report.elapsed_secs),
        "simulated s",
        "fresh apply of the 144 services (cluster, MSK and RDS already present), sandbox with ECS throttling",
    );
    table.add(
        "apply_bound_s_144",
        Some(bound),
        "simulated s",
        "(144 - 20 burst) registrations at 1/s + the last service's 40 s task start",
    );
    let describes = log
        .iter()
        .filter(|r| r.service == "ecs" && r.operation == "DescribeServices")
        .count();
    table.add(
        "apply_describe_calls_144",
        Some(describes as f64),
        "calls",
        "DescribeServices requests of that apply (the plan's reads and the deployment probes, up to ten services per call)",
    );

    let (destroy, stats, estimate) = perf_measure::destroy_run(&desired).await;
    eprintln!("    {:?}", perf_measure::mutating_ops(&stats));
    table.add(
        "destroy_sim_s_144",
        Some(destroy.elapsed_secs),
        "simulated s",
        "destroy of converged perf-144 (144 services, MSK, RDS writer and reader), sandbox with ECS throttling",
    );
    table.add(
        "destroy_bound_s_144",
        Some(perf_measure::destroy_bound_secs(
            desired.services.len() as u64,
        )),
        "simulated s",
        "(144 - 50 burst) DeleteService at 5/s + a 2 min drain, then max(MSK 10 min, RDS reader + writer 2 x 5 min)",
    );
    table.add(
        "destroy_estimate_s_144",
        Some(estimate),
        "simulated s",
        "the destroy plan's estimate (critical path, DeleteService pacing included)",
    );

    // A one-service switch on the converged env.
    let world = perf_measure::converged(&desired, true).await;
    let after = compile(
        &repo().join("envs/perf-144.yaml"),
        &["services.mod-perf-0000.log_level=warn"],
    )
    .desired;
    let stats = perf_measure::switch_calls(&world, &after).await;
    eprintln!("    {:?}", perf_measure::mutating_ops(&stats));
    table.add(
        "switch_calls_one_service",
        Some(stats.mutating_calls() as f64),
        "calls",
        "mutating requests to converge perf-144 with --set services.mod-perf-0000.log_level=warn",
    );
    let _ = world.session.close().await;
}

/// CPU time and peak memory of `envctl plan` for the big env, run as a child process (the
/// release binary) against this process's sandbox: the child's own rusage is envctl alone,
/// the sandbox's work is done here.
async fn plan_big(table: &mut Table, settings: &Settings, env: &std::path::Path) {
    let desired = compile(env, &[]).desired;
    let world: PerfWorld = perf_measure::converged(&desired, false).await;
    // The pure part alone, in this process: diff against the live state just observed.
    let live = world.plan(&desired).await.live;
    let diff_cpu: Vec<f64> = (0..settings.runs)
        .map(|_| {
            let before = thread_cpu_secs();
            let plan = envctl::plan::diff(
                &desired,
                &live,
                &envctl::plan::Estimates::default(),
                &envctl::plan::DiffOptions::default(),
            );
            let cpu = (thread_cpu_secs() - before) * 1e3;
            assert!(!plan.has_changes());
            cpu
        })
        .collect();
    let endpoint = world.sandbox().endpoint_url();
    let state_dir = world.state_dir();
    let env = env.to_path_buf();
    let runs = settings.runs.div_ceil(2).max(1);
    let measured = tokio::task::spawn_blocking(move || {
        let mut cpu = Vec::new();
        let mut peak_kib = 0;
        // One unmeasured run warms the page cache for the binary and the env.
        for run in 0..=runs {
            let before = children_usage();
            let out = Command::new(env!("CARGO_BIN_EXE_envctl"))
                .arg("plan")
                .arg(&env)
                .args(["--detailed-exitcode", "--endpoint-url", &endpoint])
                .arg("--state-dir")
                .arg(&state_dir)
                .env_remove("AWS_PROFILE")
                .env("AWS_ACCESS_KEY_ID", "sandbox")
                .env("AWS_SECRET_ACCESS_KEY", "sandbox")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("AWS_CONFIG_FILE", "/nonexistent")
                .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
                .env("NO_COLOR", "1")
                .output()
                .expect("envctl plan runs");
            assert_eq!(
                out.status.code(),
                Some(0),
                "envctl plan of a converged env: no changes expected\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let after = children_usage();
            if run > 0 {
                cpu.push((after.0 - before.0) * 1e3);
            }
            peak_kib = after.1;
        }
        (cpu, peak_kib)
    })
    .await
    .expect("the child runs");
    let (cpu, peak_kib) = measured;
    table.add(
        format!("plan_cpu_ms_{}", settings.big),
        Some(median(cpu)),
        "ms CPU",
        &format!(
            "user+system CPU of the `envctl plan` child process (start, compile, observe, diff, render) against a converged sandbox served by the harness, median of {runs}"
        ),
    );
    table.add(
        format!("envctl_peak_rss_mib_{}", settings.big),
        Some(peak_kib as f64 / 1024.0),
        "MiB",
        "peak RSS (ru_maxrss = VmHWM) of that child process",
    );
    table.add(
        format!("plan_diff_cpu_ms_{}", settings.big),
        Some(median(diff_cpu)),
        "ms CPU",
        &format!(
            "of which the diff: thread CPU of plan::diff against the observed live state, in this process, median of {}",
            settings.runs
        ),
    );
    let _ = world.session.close().await;
}

/// (user + system seconds, largest ru_maxrss in KiB) of the waited-for children so far.
fn children_usage() -> (f64, i64) {
    // SAFETY: getrusage writes into the zeroed struct we pass and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) != 0 {
            return (f64::NAN, 0);
        }
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime) + secs(usage.ru_stime), usage.ru_maxrss)
}

/// CPU seconds of the calling thread so far.
fn thread_cpu_secs() -> f64 {
    // SAFETY: as in `children_usage`.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut usage) != 0 {
            return f64::NAN;
        }
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The three orders of the perf-144 matrix (support::perf_measure::PERF_MATRIX), simulated
/// under the ECS buckets, and the planner's estimates of the same.
async fn matrix(table: &mut Table) {
    let scratch = tempfile::tempdir().expect("a temp dir");
    let (_, plan) = perf_measure::perf_matrix(scratch.path());
    let envctl_order = plan.ordering.order.clone();
    let declared: Vec<usize> = (0..plan.points.len()).collect();
    let show = |steps: &[f64]| {
        steps
            .iter()
            .map(|s| format!("{s:.0}"))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    let steps = perf_measure::matrix_switching_secs(&plan, &envctl_order).await;
    eprintln!("    envctl order, per point: {} s", show(&steps));
    let sim_envctl = steps.iter().sum();
    let steps = perf_measure::matrix_switching_secs(&plan, &declared).await;
    eprintln!("    declared order, per point: {} s", show(&steps));
    let sim_declared = steps.iter().sum();
    let steps = perf_measure::matrix_rebuild_secs(&plan).await;
    let (creates, destroys): (Vec<f64>, Vec<f64>) = steps.into_iter().unzip();
    eprintln!(
        "    rebuild, create per point: {} s; destroy per point: {} s",
        show(&creates),
        show(&destroys)
    );
    let sim_rebuild = creates.iter().sum::<f64>() + destroys.iter().sum::<f64>();
    let what = format!(
        "perf-144 matrix ({} points, {} configurations): simulated seconds changing the environment",
        plan.points.len(),
        plan.configs.len()
    );
    table.add(
        "matrix_cost_envctl_s",
        Some(sim_envctl),
        "simulated s",
        &format!("{what}, in envctl's order"),
    );
    table.add(
        "matrix_cost_declared_s",
        Some(sim_declared),
        "simulated s",
        &format!("{what}, in the declared order"),
    );
    table.add(
        "matrix_cost_rebuild_s",
        Some(sim_rebuild),
        "simulated s",
        &format!("{what}, created and destroyed for every point"),
    );
    let o = &plan.ordering;
    for (key, value) in [
        ("matrix_estimate_envctl_s", o.envctl_s),
        ("matrix_estimate_declared_s", o.declared_s),
        ("matrix_estimate_rebuild_s", o.rebuild_s),
    ] {
        table.add(
            key,
            Some(value),
            "estimated s",
            "the same, as `envctl matrix plan` estimates it (planner estimates)",
        );
    }
}

/// 200 load engines of one `load:` step (docs/matrix.md, "Load engines"): RunTask calls,
/// simulated seconds from the first RunTask to the barrier against its bound, and the start
/// skew of the engines' first samples.
async fn load_engines(table: &mut Table) {
    let start = load_measure::engines(200).await;
    let e = &start.engines;
    table.add(
        "load_runtask_calls_200",
        Some(f64::from(e.run_task_calls)),
        "calls",
        "RunTask calls to start 200 engines (10 per call at most)",
    );
    table.add(
        "load_start_sim_s_200",
        e.start_s,
        "simulated s",
        &format!(
            "first RunTask to every engine RUNNING and the barrier open, under Fargate's launch bucket (bound {:.0} s: (200 - 100) / 20 s of launching, 40 s task start, one 5 s look)",
            start.bound_s
        ),
    );
    table.add(
        "load_start_skew_s_200",
        e.start_skew_s,
        "simulated s",
        "latest minus earliest first sample of the 200 engines, after the barrier",
    );
}

fn jtl(table: &mut Table, settings: &Settings) {
    use envctl::report::SampleAggregator;
    use envctl::report::jtl::read_jtl;
    let path = std::env::temp_dir().join(format!("envctl-perf-{}.jtl", std::process::id()));
    let file = jtl_sample::TempFile(path);
    let bytes = jtl_sample::generate(&file.0, settings.jtl_rows, false).expect("generate a JTL");
    let (mut rates, mut peaks) = (Vec::new(), Vec::new());
    for _ in 0..settings.jtl_runs {
        let reset = jtl_sample::reset_peak_memory();
        let t = Instant::now();
        let mut aggregator = SampleAggregator::new();
        let input = std::fs::File::open(&file.0).expect("open the JTL");
        let warnings = read_jtl(input, "bench.jtl", &mut aggregator).expect("parse the JTL");
        let report = aggregator.finish();
        let secs = t.elapsed().as_secs_f64();
        let parsed = report.total.as_ref().map_or(0, |total| total.samples);
        assert!(parsed == settings.jtl_rows && warnings.is_empty());
        rates.push(settings.jtl_rows as f64 / secs);
        if reset && let Some(kib) = jtl_sample::peak_memory_kib() {
            peaks.push(kib as f64 / 1024.0);
        }
    }
    let rows = settings.jtl_rows;
    table.add(
        "jtl_rows_per_s",
        Some(median(rates)),
        "rows/s",
        &format!(
            "read_jtl + SampleAggregator::finish (exact percentiles) of a generated {rows}-row CSV ({:.0} MiB), median of {}",
            bytes as f64 / (1024.0 * 1024.0),
            settings.jtl_runs
        ),
    );
    table.add(
        if rows == 5_000_000 {
            "jtl_peak_mib_5m".to_string()
        } else {
            format!("jtl_peak_mib_{rows}")
        },
        (!peaks.is_empty()).then(|| median(peaks)),
        "MiB",
        "VmHWM of this process, reset (clear_refs 5) before each parse, median",
    );
}

async fn sandbox(table: &mut Table, settings: &Settings) {
    use aws_sdk_ecs::config::Credentials;
    let sandbox = envctl_sandbox::Sandbox::start(envctl_sandbox::SandboxConfig {
        // The emulator's throughput, not the ECS token buckets' 20 reads per second.
        ecs_throttling: false,
        ..envctl_sandbox::SandboxConfig::default()
    })
    .await
    .expect("the sandbox starts");
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(sandbox.endpoint_url())
        .region("us-east-1")
        .credentials_provider(Credentials::new("test", "test", None, None, "sandbox"))
        .load()
        .await;
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    sandbox_load::create_services(&ecs)
        .await
        .expect("create the services");
    let (mut sdk_rates, mut raw_rates) = (Vec::new(), Vec::new());
    for _ in 0..settings.sandbox_runs {
        let (rate, errors) = sandbox_load::sdk_rate(&ecs, 64, settings.sandbox_run_for).await;
        assert_eq!(errors, 0, "DescribeServices errors");
        sdk_rates.push(rate);
        raw_rates.push(
            sandbox_load::raw_http_rate(&sandbox.endpoint_url(), 8, settings.sandbox_run_for).await,
        );
    }
    let runs = settings.sandbox_runs;
    let secs = settings.sandbox_run_for.as_secs_f64();
    table.add(
        "sandbox_req_per_s",
        Some(median(sdk_rates)),
        "req/s",
        &format!(
            "DescribeServices (10 of 1,000 services per call) through aws-sdk-ecs, 64 concurrent callers in this process, {secs:.1} s, median of {runs}"
        ),
    );
    table.add(
        "sandbox_req_per_s_raw_http",
        Some(median(raw_rates)),
        "req/s",
        &format!(
            "the same request over 8 raw keep-alive HTTP/1.1 connections (the server without the SDK client), {secs:.1} s, median of {runs}"
        ),
    );
    let _ = sandbox.shutdown().await;
}
