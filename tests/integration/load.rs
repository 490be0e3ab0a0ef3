//! `load:` steps end to end on the simulated sandbox: engines started by RunTask, the start
//! barrier, results merged from raw samples, and the engines that misbehave (never start,
//! hang, exit 1) failing their point by name with nothing left running; plus the checks
//! made before anything is spent (`matrix plan`/`run` refusing a missing plan).
use std::path::Path;
use std::sync::Arc;

use envctl::matrix::{self, MatrixOptions};
use envctl::results::{RunDir, Status};
use envctl::spec::Loader;
use envctl::spec::playbook::LoadedPlaybook;
use envctl_sandbox::{EngineFault, EngineFaultKind, FaultConfig, SandboxConfig};

#[path = "../../benches/support/load_measure.rs"]
mod load_measure;

use crate::apply::World;
use crate::{BASE_ENV, Test};

const SMOKE_PLAN: &str = include_str!("../../engines/jmeter/smoke.jmx");

/// BASE_ENV with the task role the engines run as (without one a load step is refused:
/// `load-needs-task-role`).
pub fn load_env() -> String {
    BASE_ENV.replace(
        "\nrds:\n",
        "\n  task_role: arn:aws:iam::123456789012:role/envctlTaskRole\nrds:\n",
    )
}

fn playbook(engines: u32, timeout: &str, barrier: &str, teardown: &str) -> String {
    format!(
        "\
name: engines
env: env.yaml
matrix:
  users:
    u2: {{vars: {{users: 2}}}}
steps:
  - name: smoke
    load:
      tool: jmeter
      plan: smoke.jmx
      engines: {engines}
      properties: {{users: \"${{users}}\", host: 127.0.0.1, port: \"8080\", duration: \"120\"}}
      timeout: {timeout}
      barrier: {barrier}
collect: {{padding: 1m, period: 60s}}
teardown: {teardown}
"
    )
}

fn load(dir: &Path) -> LoadedPlaybook {
    let mut loader = Loader::new();
    match loader.load_playbook(&dir.join("pb.yaml")) {
        Some(p) => p,
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    }
}

fn options(world: &World, results: &Path, run_id: &str) -> MatrixOptions {
    world.matrix_options(results, run_id)
}

/// Runs the playbook on a sandbox with these engine faults; returns the point's record and
/// the engine tasks the cluster still wants running afterwards.
async fn run_with(
    text: &str,
    faults: Vec<EngineFault>,
) -> (envctl::results::PointRecord, World, Vec<String>) {
    run_with_faults(
        text,
        FaultConfig {
            failing_engines: faults,
            ..FaultConfig::default()
        },
    )
    .await
}

/// As [`run_with`], with any faults.
async fn run_with_faults(
    text: &str,
    faults: FaultConfig,
) -> (envctl::results::PointRecord, World, Vec<String>) {
    let test = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", text)
        .file("smoke.jmx", SMOKE_PLAN);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).expect("matrix plan");
    let world = World::with(SandboxConfig {
        faults,
        ..SandboxConfig::default()
    })
    .await;
    let results = tempfile::tempdir().expect("temp dir");
    matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "r1"),
    )
    .await
    .expect("run");
    let run = RunDir::read(&results.path().join("r1")).expect("results");
    let point = run.points[0].0.clone();
    // Engine tasks the cluster still wants running (the services' tasks are not task
    // records in the sandbox; a deleted cluster has none).
    let still_running = world
        .session
        .clients
        .ecs
        .list_tasks()
        .cluster("test-pvt")
        .send()
        .await
        .map(|o| o.task_arns().to_vec())
        .unwrap_or_default();
    (point, world, still_running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_start_together_behind_the_barrier_and_their_samples_merge() {
    let (point, world, _) = run_with(&playbook(12, "30m", "5m", "always"), vec![]).await;
    assert_eq!(point.status, Status::Passed, "{point:#?}");
    let step = &point.steps[0];
    assert_eq!(step.kind, "load");
    let engines = step.engines.as_ref().expect("engines recorded");
    assert_eq!((engines.requested, engines.started), (12, 12));
    // 12 engines: RunTask starts at most 10 per call.
    assert_eq!(engines.run_task_calls, 2);
    assert_eq!(world.sandbox().stats().get("ecs", "RunTask").count, 2);
    assert_eq!(engines.stop_task_calls, 0, "they all ended by themselves");
    assert!(
        engines.synthetic,
        "the sandbox's engines run the demo workload"
    );
    // Every engine waited for the barrier and started at its start_at: no skew.
    assert_eq!(engines.start_skew_s, Some(0.0));
    let start = engines.start_s.expect("the barrier opened");
    assert!(
        (40.0..=60.0).contains(&start),
        "RunTask to barrier: {start} s"
    );
    // 120 s at two samples a second, per engine, all in the merged JTL.
    assert_eq!(engines.samples, 12 * 240);
    assert!(
        engines
            .engines
            .iter()
            .all(|e| e.exit_code == Some(0) && e.jtl_file.is_some() && e.log_file.is_some())
    );
    assert_eq!(step.jtl_file.as_deref(), Some("smoke.jtl"));
    // Generator health: the demo's CPU model (6% of the vCPUs per user thread), 2 users.
    assert!(
        engines
            .engines
            .iter()
            .all(|e| e.max_cpu_percent == Some(12.0))
    );
    assert!(!engines.saturated);
    // The plan is uploaded once (content-addressed), the engine task definition
    // registered once.
    assert_eq!(
        world.sandbox().stats().get("s3", "PutObject").count,
        2,
        "plan + barrier"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_engine_fails_its_point_at_the_deadline_with_nothing_left_running() {
    let (point, _, running) = run_with(
        &playbook(3, "5m", "3m", "never"),
        vec![EngineFault {
            engine: 2,
            kind: EngineFaultKind::Hangs,
        }],
    )
    .await;
    assert_eq!(point.status, Status::Failed);
    let step = &point.steps[0];
    assert!(step.timed_out, "{step:#?}");
    let failure = point.failure.as_deref().expect("a failure");
    assert!(
        failure.contains("timed out with engine-02 still running"),
        "{failure}"
    );
    let engines = step.engines.as_ref().expect("engines");
    assert_eq!(
        engines.stop_task_calls, 1,
        "only the hung engine was still up"
    );
    assert!(engines.left_running.is_empty());
    assert!(engines.engines.iter().all(|e| e.last_status == "STOPPED"));
    assert!(running.is_empty(), "still running: {running:?}");
    // The others finished: their samples are kept.
    assert!(engines.samples >= 2 * 240, "{}", engines.samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_never_starts_fails_the_point_at_the_barrier_deadline() {
    let (point, _, running) = run_with(
        &playbook(4, "30m", "2m", "never"),
        vec![EngineFault {
            engine: 3,
            kind: EngineFaultKind::NeverStarts,
        }],
    )
    .await;
    assert_eq!(point.status, Status::Failed);
    let failure = point.failure.as_deref().expect("a failure");
    assert!(
        failure.contains("1 of 4 engines not RUNNING: engine-03 (PROVISIONING)"),
        "{failure}"
    );
    let engines = point.steps[0].engines.as_ref().expect("engines");
    assert_eq!(engines.start_s, None, "the barrier never opened");
    assert_eq!(engines.samples, 0);
    assert_eq!(engines.stop_task_calls, 4);
    assert!(running.is_empty(), "still running: {running:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_exits_1_fails_the_point_with_its_reason_and_log() {
    let (point, _, running) = run_with(
        &playbook(2, "30m", "3m", "never"),
        vec![EngineFault {
            engine: 1,
            kind: EngineFaultKind::ExitsOne,
        }],
    )
    .await;
    assert_eq!(point.status, Status::Failed);
    let failure = point.failure.as_deref().expect("a failure");
    assert!(
        failure.contains(
            "engine-01 failed: exit code 1, stoppedReason \"Essential container in task exited\""
        ),
        "{failure}"
    );
    assert!(
        failure.contains("Error in NonGUIDriver"),
        "the log's tail: {failure}"
    );
    assert_eq!(point.steps[0].exit_code, Some(1));
    assert!(running.is_empty(), "still running: {running:?}");
}

#[test]
fn a_missing_plan_fails_matrix_plan_and_run_before_anything_is_spent() {
    let test = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", &playbook(2, "30m", "3m", "always"));
    let plan = test.args(["matrix", "plan", "pb.yaml"]).run();
    assert_eq!(plan.code, 1, "{}", plan.stderr);
    assert!(
        plan.stderr
            .contains("step `smoke` names smoke.jmx, which does not exist"),
        "{}",
        plan.stderr
    );
    assert!(
        plan.stderr.contains("pb.yaml:10:13"),
        "positioned: {}",
        plan.stderr
    );
    // And on AWS the engines need the env's S3 location for the plan and their results.
    assert!(
        plan.stderr.contains("error[load-needs-s3]"),
        "{}",
        plan.stderr
    );
    // An engine template that does not render is refused before anything is spent too.
    let broken = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", &playbook(2, "30m", "3m", "always"))
        .file("smoke.jmx", SMOKE_PLAN)
        .file(
            "task-defs/engine-jmeter.yaml",
            "family: {{ engine.famly }}\n",
        )
        .args(["matrix", "plan", "pb.yaml", "--sandbox"])
        .run();
    assert_eq!(broken.code, 1, "{}", broken.stderr);
    assert!(
        broken.stderr.contains("error[engine-template]") && broken.stderr.contains("pb.yaml:9:13"),
        "{}",
        broken.stderr
    );
    let test = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", &playbook(2, "30m", "3m", "always"));
    let dir = test.path().to_path_buf();
    let run = test
        .args(["matrix", "run", "pb.yaml", "--results", "res"])
        .run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("smoke.jmx, which does not exist"),
        "{}",
        run.stderr
    );
    assert!(
        !dir.join("res").exists(),
        "nothing written before the check"
    );
}

/// A load step whose engines would get no task role is refused by `validate`, `matrix plan`
/// and `matrix run` before anything is spent, at the step's tool with a note at the env's
/// `ecs:` (a Fargate task without a task role has no AWS credentials: the engine could
/// neither fetch its plan nor put its results).
#[test]
fn a_load_step_without_a_task_role_is_refused_before_anything_is_spent() {
    let validate = Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", &playbook(2, "30m", "3m", "always"))
        .file("smoke.jmx", SMOKE_PLAN)
        .args(["validate", "pb.yaml", "--format", "json"])
        .run();
    assert_eq!(validate.code, 1, "{}", validate.stdout);
    assert_eq!(
        crate::diagnostics(&validate),
        vec![("load-needs-task-role".to_string(), 9, 13)],
        "{}",
        validate.stdout
    );
    let test = Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", &playbook(2, "30m", "3m", "always"))
        .file("smoke.jmx", SMOKE_PLAN);
    let dir = test.path().to_path_buf();
    let run = test
        .args(["matrix", "run", "pb.yaml", "--sandbox", "--results", "res"])
        .run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[load-needs-task-role]")
            && run.stderr.contains("without AWS credentials")
            && run.stderr.contains("env.yaml:8:12"),
        "{}",
        run.stderr
    );
    assert!(
        !dir.join("res").exists(),
        "nothing written before the check"
    );
    assert!(
        !dir.join(".envctl/sandbox").exists(),
        "no sandbox world made"
    );
}

/// The shipped engine template's image is a placeholder: `matrix plan` against AWS refuses
/// it at its line in the template, the sandbox (which runs any image) does not, and an image
/// that names a registry host passes; a bare name (Docker Hub) is refused like the
/// placeholder.
#[test]
fn the_engine_image_placeholder_is_named_until_it_names_a_registry() {
    let template = std::fs::read_to_string(crate::repo().join("task-defs/engine-jmeter.yaml"))
        .expect("the engine template");
    let line = template
        .lines()
        .position(|l| l.contains("image: \"<registry>/"))
        .expect("the placeholder") as u64
        + 1;
    let plan = |template: &str, sandbox: bool| {
        let mut args = vec!["matrix", "plan", "pb.yaml", "--lock", "s3://bucket/prefix/"];
        if sandbox {
            args.push("--sandbox");
        }
        Test::new()
            .file("env.yaml", &load_env())
            .file("pb.yaml", &playbook(2, "30m", "3m", "always"))
            .file("smoke.jmx", SMOKE_PLAN)
            .file("task-defs/engine-jmeter.yaml", template)
            .args(args)
            .run()
    };
    let aws = plan(&template, false);
    assert_eq!(aws.code, 1, "{}", aws.stderr);
    assert!(
        aws.stderr.contains("error[engine-image]")
            && aws.stderr.contains("is the template's placeholder")
            && aws
                .stderr
                .contains(&format!("engine-jmeter.yaml:{line}:13")),
        "{}",
        aws.stderr
    );
    let sandbox = plan(&template, true);
    assert_eq!(sandbox.code, 0, "{}", sandbox.stderr);
    assert!(
        !sandbox.stderr.contains("engine-image"),
        "{}",
        sandbox.stderr
    );
    let docker_hub = template.replace("<registry>/envctl-engine", "envctl-engine");
    let aws = plan(&docker_hub, false);
    assert!(
        aws.stderr.contains("error[engine-image]") && aws.stderr.contains("names no registry"),
        "{}",
        aws.stderr
    );
    let ecr = template.replace("<registry>", "123456789012.dkr.ecr.us-east-1.amazonaws.com");
    let aws = plan(&ecr, false);
    assert!(!aws.stderr.contains("engine-image"), "{}", aws.stderr);
}

#[test]
fn validate_checks_the_plan_parses_and_gets_every_property_it_reads() {
    // No `host`: the plan reads ${__P(host)} without a default.
    let text = playbook(2, "30m", "3m", "always").replace(" host: 127.0.0.1,", "");
    let out = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", &text)
        .file("smoke.jmx", SMOKE_PLAN)
        .args(["validate", "pb.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        crate::diagnostics(&out),
        vec![("missing-property".to_string(), 10, 13)],
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("`host`"), "{}", out.stdout);
    // A plan that is not well-formed is reported where it breaks, in the plan.
    let broken = SMOKE_PLAN.replace("</TestPlan>", "</TestPlam>");
    let out = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", &playbook(2, "30m", "3m", "always"))
        .file("smoke.jmx", &broken)
        .args(["validate", "pb.yaml", "--format", "json"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
    let line = broken
        .lines()
        .position(|l| l.contains("</TestPlam>"))
        .expect("the broken line") as u64
        + 1;
    let found = crate::diagnostics(&out);
    assert_eq!(found.len(), 1, "{}", out.stdout);
    assert_eq!(
        (found[0].0.as_str(), found[0].1),
        ("invalid-test-plan", line)
    );
}

#[test]
fn a_run_step_needs_its_program_on_aws_and_its_demo_on_the_sandbox() {
    let text = "\
name: p
env: env.yaml
matrix:
  users:
    u1: {vars: {users: 1}}
steps:
  - run: no-such-load-tool-xyz -Jusers=${users} -t plans/missing.jmx
    demo: printf x > \"${RESULTS_DIR}/r.jtl\"
teardown: always
";
    let plan = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", text)
        .args(["matrix", "plan", "pb.yaml"])
        .run();
    assert_eq!(plan.code, 1, "{}", plan.stderr);
    assert!(
        plan.stderr
            .contains("runs `no-such-load-tool-xyz`, which is not on PATH"),
        "{}",
        plan.stderr
    );
    assert!(
        plan.stderr
            .contains("plans/missing.jmx, which does not exist"),
        "{}",
        plan.stderr
    );
    // On the sandbox the demo runs instead, and printf is there.
    let sandbox = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", text)
        .args(["matrix", "plan", "pb.yaml", "--sandbox"])
        .run();
    assert_eq!(sandbox.code, 0, "{}", sandbox.stderr);
}

/// A playbook whose step fails at once (its program does not exist: exit 127), with a
/// long padding.
const FAILS_AT_ONCE: &str = "\
name: p
env: env.yaml
matrix:
  users:
    u1: {vars: {users: 1}}
steps:
  - name: load
    run: jmeter -Jusers=${users}
    demo: echo 'preparing users' >&2; echo 'no-such-program - not found' >&2; exit 127
collect: {padding: 20m, period: 60s}
teardown: always
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_fails_at_once_says_why_and_skips_the_padding() {
    let test = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", FAILS_AT_ONCE);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).expect("plan");
    let world = World::new().await;
    let results = tempfile::tempdir().expect("temp dir");
    let said = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut opts = options(&world, results.path(), "r1");
    let sink = said.clone();
    opts.say = Arc::new(move |t: &str| sink.lock().expect("lock").push(t.to_string()));
    matrix::run(&loaded, &plan, &world.session, &opts)
        .await
        .expect("run");
    let said = said.lock().expect("lock").join("\n");
    assert!(
        said.contains("load: FAILED in") && said.contains("(exit 127); stderr ends with:\n    preparing users\n    no-such-program - not found"),
        "{said}"
    );
    let run = RunDir::read(&results.path().join("r1")).expect("results");
    let point = &run.points[0].0;
    let workload_end = point.steps[0].finished_at;
    let point_end = point.finished_at.expect("finished");
    assert!(
        point_end - workload_end < 600.0,
        "the point waited {} s after its failed step (padding 20m)",
        point_end - workload_end
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_engine_is_flagged_in_the_record_and_the_report() {
    // 15 users: the demo's model puts the engine at 90% of its vCPU.
    let text = playbook(2, "30m", "3m", "always")
        .replace("u2: {vars: {users: 2}}", "u15: {vars: {users: 15}}");
    let (point, _, _) = run_with(&text, vec![]).await;
    assert_eq!(point.status, Status::Passed, "{point:#?}");
    let engines = point.steps[0].engines.as_ref().expect("engines");
    assert!(engines.saturated);
    assert_eq!(engines.engines[0].max_cpu_percent, Some(90.0));
    let measurement = envctl::report::run::point_measurement::PointMeasurement::measure(
        std::path::Path::new("/nonexistent"),
        &point,
        &Default::default(),
        None,
        envctl::report::jtl::Convention::default(),
        true,
    );
    assert_eq!(
        measurement.load_engines,
        ["smoke: 2 engines, start skew 0.000 s"]
    );
    assert!(
        measurement
            .warnings
            .iter()
            .any(|w| w.contains("engine-01 ran at 90% of its vCPU for a minute")),
        "{:?}",
        measurement.warnings
    );
}

/// The figures of `benches/perf.rs` for 200 engines, deterministic on the simulated clock:
/// `load_runtask_calls_200`, `load_start_sim_s_200` within its bound, and
/// `load_start_skew_s_200` within the issue's 1 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_engines_start_in_20_calls_within_the_bound_and_without_skew() {
    let start = load_measure::engines(200).await;
    let e = &start.engines;
    assert_eq!(e.started, 200);
    assert_eq!(e.run_task_calls, 20);
    let start_s = e.start_s.expect("the barrier opened");
    eprintln!(
        "load_start_sim_s_200 = {start_s:.1} (bound {:.1}); skew {:?}",
        start.bound_s, e.start_skew_s
    );
    assert!(start_s <= start.bound_s, "{start_s} > {}", start.bound_s);
    // At least Fargate's launch bucket and the task start.
    assert!(start_s >= start.bound_s - 5.0, "{start_s}");
    let skew = e.start_skew_s.expect("200 engines with samples");
    assert!(skew <= 1.0, "start skew {skew} s");
    assert_eq!(e.samples, 200 * 120);
}

/// SIGINT/SIGTERM while engines run (the run's cancel flag, as the signal handler sets it):
/// StopTask for every engine, and none is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_stops_every_engine_of_the_step() {
    let test = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", &playbook(5, "30m", "3m", "never"))
        .file("smoke.jmx", SMOKE_PLAN);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).expect("plan");
    let world = World::new().await;
    let results = tempfile::tempdir().expect("temp dir");
    let mut opts = options(&world, results.path(), "r1");
    let cancel = opts.cancel.clone();
    // Interrupted once the engines run: at the first heartbeat (a detail).
    opts.detail = Arc::new(move |t: &str| {
        if t.contains("engines running") {
            cancel.cancel();
        }
    });
    let record = matrix::run(&loaded, &plan, &world.session, &opts)
        .await
        .expect("run");
    assert_eq!(record.status, Status::Interrupted);
    let run = RunDir::read(&results.path().join("r1")).expect("results");
    let point = &run.points[0].0;
    assert_eq!(point.status, Status::Interrupted, "{point:#?}");
    let engines = point.steps[0].engines.as_ref().expect("engines");
    assert_eq!(engines.stop_task_calls, 5);
    assert!(engines.left_running.is_empty());
    assert!(engines.engines.iter().all(|e| e.last_status == "STOPPED"
        && e.stopped_reason.as_deref() == Some("envctl: the run was interrupted")));
    let running = world
        .session
        .clients
        .ecs
        .list_tasks()
        .cluster("test-pvt")
        .send()
        .await
        .expect("ListTasks")
        .task_arns()
        .to_vec();
    assert!(running.is_empty(), "still running: {running:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_run_on_fargate_unless_the_step_names_a_capacity_provider() {
    let launch_types = |point: &envctl::results::PointRecord| {
        point.steps[0]
            .engines
            .as_ref()
            .map(|e| {
                e.engines
                    .iter()
                    .map(|x| x.task_arn.clone())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let (point, world, _) = run_with(&playbook(1, "30m", "3m", "never"), vec![]).await;
    let arns = launch_types(&point);
    let tasks = world
        .session
        .clients
        .ecs
        .describe_tasks()
        .cluster("test-pvt")
        .set_tasks(Some(arns))
        .send()
        .await
        .expect("DescribeTasks");
    assert_eq!(
        tasks.tasks()[0].launch_type().map(|l| l.as_str()),
        Some("FARGATE")
    );
    let text = playbook(1, "30m", "3m", "never").replace(
        "      barrier: 3m\n",
        "      barrier: 3m\n      capacity: load-pool\n",
    );
    let (point, world, _) = run_with(&text, vec![]).await;
    assert_eq!(point.status, Status::Passed, "{point:#?}");
    let tasks = world
        .session
        .clients
        .ecs
        .describe_tasks()
        .cluster("test-pvt")
        .set_tasks(Some(launch_types(&point)))
        .send()
        .await
        .expect("DescribeTasks");
    assert_ne!(
        tasks.tasks()[0].launch_type().map(|l| l.as_str()),
        Some("FARGATE"),
        "a capacity provider strategy, not launchType FARGATE"
    );
}

/// Issue 35: a point whose engine died is marked wherever its figures appear, with why, and
/// enters no comparison without saying so. Two variants on three engines each; at the
/// second, the third engine exits 1 a second after the barrier (its load is a third short).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_point_is_marked_in_every_report_format() {
    use envctl::report::RunReportFormat;
    use envctl::report::jtl::Convention;
    let text = playbook(3, "30m", "3m", "always")
        .replace(
            "    u2: {vars: {users: 2}}",
            "    u2: {vars: {users: 2}}\n    u3: {vars: {users: 3}}",
        )
        .replace("steps:", "report: {baseline: {users: u2}}\nsteps:");
    let test = Test::new()
        .file("env.yaml", &load_env())
        .file("pb.yaml", &text)
        .file("smoke.jmx", SMOKE_PLAN);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).expect("matrix plan");
    let world = World::new().await;
    let results = tempfile::tempdir().expect("temp dir");
    let mut opts = options(&world, results.path(), "r1");
    // The second point's third engine fails: the first point's engines all finish. The
    // faults change through the sandbox's control API when the runner says the point starts
    // (before it sends anything for it).
    let endpoint = world.sandbox().endpoint_url();
    opts.say = Arc::new(move |t: &str| {
        if t.starts_with("[2/2]") && t.contains(": starting") {
            let body = r#"{"failing_engines": [{"engine": 3, "kind": "exits_one"}]}"#;
            assert_eq!(post_blocking(&endpoint, "/_sandbox/faults", body), 200);
        }
    });
    let record = matrix::run(&loaded, &plan, &world.session, &opts)
        .await
        .expect("run");
    let statuses = crate::point_statuses(&record);
    assert_eq!(
        statuses,
        vec![
            ("users=u2".to_string(), Status::Passed),
            ("users=u3".to_string(), Status::Failed)
        ]
    );
    let run = RunDir::read(&results.path().join("r1")).expect("results");
    let summary =
        envctl::report::RunSummary::of_run(&run, &[], Convention::default()).expect("a summary");
    let why = "failed: engines lost in step smoke (engine-03: exit code 1; 1 of 3 engines)";
    // Markdown and HTML: every header of the failed variant's figures and deltas is marked,
    // every table says why, and every delta says it compares a partial workload.
    for format in [RunReportFormat::Md, RunReportFormat::Html] {
        let text = format.render(&summary);
        assert!(
            text.contains(&format!("users=u3 {why}")),
            "{format:?}:\n{text}"
        );
        assert!(text.contains("Δ u3 (failed) avg"), "{format:?}:\n{text}");
        assert!(
            !text.contains("Δ u3 avg"),
            "an unmarked delta: {format:?}:\n{text}"
        );
        assert!(text.contains("(-2.4%), partial workload") || text.contains("partial workload"));
        assert!(
            text.contains("u3 (failed) memory trend"),
            "{format:?}:\n{text}"
        );
    }
    // The charts' legends name the failed point's lines so.
    let html = RunReportFormat::Html.render(&summary);
    assert!(
        html.split("<svg")
            .skip(1)
            .any(|svg| svg.contains("u3 (failed)")),
        "no chart marks the failed point"
    );
    // JSON: the point, each of its figures and each delta against it.
    let json: serde_json::Value =
        serde_json::from_str(&RunReportFormat::Json.render(&summary)).expect("JSON");
    let points: Vec<&serde_json::Value> = json["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .flat_map(|v| v["points"].as_array().expect("points"))
        .collect();
    assert_eq!(points[0]["shortfall"], serde_json::Value::Null);
    assert_eq!(points[1]["shortfall"], why);
    let figures = json["groups"][0]["figures"].as_array().expect("figures");
    assert!(!figures.is_empty());
    for figure in figures {
        let cells = figure["cells"].as_array().expect("cells");
        assert!(cells[0].get("shortfall").is_none(), "{figure}");
        assert_eq!(
            cells[1]["shortfall"],
            format!("users=u3: {why}"),
            "{figure}"
        );
        if !cells[1]["delta"].is_null() {
            assert_eq!(cells[1]["delta"]["partial"], true, "{figure}");
        }
    }
    // CSV: the status and why on every row of the point.
    let csv = RunReportFormat::Csv.render(&summary);
    let mut lines = csv.lines();
    let header = lines.next().expect("a header");
    assert!(header.ends_with(",status,shortfall"), "{header}");
    for line in lines {
        if line.starts_with("users=u3,") {
            assert!(
                line.ends_with(&format!(",failed,\"{why}\""))
                    || line.ends_with(&format!(",failed,{why}")),
                "{line}"
            );
        } else {
            assert!(line.ends_with(",passed,"), "{line}");
        }
    }
}

/// POST to the sandbox's control API from a synchronous callback; the HTTP status.
fn post_blocking(endpoint: &str, path: &str, body: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("write");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read");
    raw.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The answer of the first RunTask is lost after ECS started its ten engines (the sandbox's
/// `lost_responses`; the simulated session sends without the SDK's own retries, so envctl's
/// retry sends it again). The retry carries the same client token, derived from the run,
/// point, repeat, step and batch, and ECS answers it with the tasks the first call started
/// (ECS_Idempotency): ten engines in all, every one tracked, none loading the system
/// unseen. Before, each of envctl's retries got a new token from the SDK and started ten
/// more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtask_whose_answer_was_lost_is_retried_without_starting_more_engines() {
    let faults: FaultConfig = serde_json::from_value(serde_json::json!({
        "lost_responses": [{"service": "ecs", "operation": "RunTask", "times": 1}]
    }))
    .expect("faults");
    let (point, world, _) = run_with_faults(&playbook(10, "30m", "5m", "never"), faults).await;
    assert_eq!(point.status, Status::Passed, "{point:#?}");
    let stats = world.sandbox().stats();
    assert_eq!(
        stats.get("ecs", "RunTask").faulted,
        1,
        "the first answer was lost"
    );
    assert_eq!(stats.get("ecs", "RunTask").count, 2, "sent once more");
    let engines = point.steps[0].engines.as_ref().expect("engines");
    assert_eq!((engines.requested, engines.started), (10, 10));
    let ecs = &world.session.clients.ecs;
    let mut tasks = 0;
    for status in [
        aws_sdk_ecs::types::DesiredStatus::Running,
        aws_sdk_ecs::types::DesiredStatus::Stopped,
    ] {
        tasks += ecs
            .list_tasks()
            .cluster("test-pvt")
            .desired_status(status)
            .send()
            .await
            .expect("list tasks")
            .task_arns()
            .len();
    }
    assert_eq!(tasks, 10, "no engine started that envctl does not track");
    assert_eq!(engines.samples, 10 * 240);
}
