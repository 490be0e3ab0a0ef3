//! Matrix runs end to end on the simulated sandbox (and one through the binary, for SIGTERM).
use std::path::Path;

use envctl::converge::plan_destroy;
use envctl::matrix::{self, MatrixOptions};
use envctl::results::{RunDir, Status};
use envctl::spec::Loader;
use envctl::spec::playbook::LoadedPlaybook;

use crate::apply::World;
use crate::{BASE_ENV, Test};

/// A 2x2 matrix: log level (an env switch) x users (workload only), declared with the
/// cheap axis first so envctl's order differs from the declared one.
const PLAYBOOK: &str = "\
name: demo
env: env.yaml
matrix:
  users:
    u1: {vars: {users: 1}}
    u5: {vars: {users: 5}}
  level:
    info: {set: {services.mod-users.log_level: info}}
    warn: {set: {services.mod-users.log_level: warn}}
steps:
  - name: load
    run: jmeter -Jusers=${users}
    demo: printf 'timeStamp,elapsed,label,success\\n1700000000000,12,Check-in,true\\n1700000000100,${users}0,Check-out,true\\n' > \"${RESULTS_DIR}/r.jtl\"
    jtl: r.jtl
    timeout: 1m
  - wait: 30s
collect: {padding: 1m, period: 60s}
teardown: always
report: {baseline: {level: info}}
";

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

async fn owned_left(world: &World, loaded: &LoadedPlaybook) -> usize {
    let mut loader = Loader::new();
    let c = envctl::compile::compile_env(&mut loader, &loaded.env.path, &[]).expect("env compiles");
    plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("observe")
        .plan
        .changes()
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2x2_matrix_runs_in_envctl_order_and_writes_every_result() {
    let test = Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", PLAYBOOK);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).expect("matrix plan");
    let ids: Vec<&str> = plan
        .ordering
        .order
        .iter()
        .map(|&i| plan.points[i].id.as_str())
        .collect();
    assert_eq!(
        ids,
        vec![
            "users=u1,level=info",
            "users=u5,level=info",
            "users=u1,level=warn",
            "users=u5,level=warn"
        ],
        "the env switches once"
    );
    assert!(
        plan.ordering.envctl_s < plan.ordering.declared_s,
        "{} vs {}",
        plan.ordering.envctl_s,
        plan.ordering.declared_s
    );
    assert!(plan.ordering.declared_s < plan.ordering.rebuild_s);

    let world = World::new().await;
    let results = tempfile::tempdir().unwrap();
    let record = matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "r1"),
    )
    .await
    .expect("run");
    assert_eq!(record.status, Status::Passed, "{record:#?}");
    assert!(record.synthetic_metrics);
    assert_eq!(record.order, ids);
    // Only the needed switch calls: one registration and one update for mod-users.
    let stats = world.sandbox().stats();
    assert_eq!(
        stats.get("ecs", "RegisterTaskDefinition").count,
        2,
        "1 at creation + 1 for the switch"
    );
    assert_eq!(stats.get("ecs", "UpdateService").count, 1);
    assert!(record.teardown.performed && record.teardown.status == Some(Status::Passed));
    assert_eq!(
        owned_left(&world, &loaded).await,
        0,
        "teardown leaves nothing owned"
    );

    let run = RunDir::read(&results.path().join("r1")).expect("results read back");
    assert_eq!(run.points.len(), 4);
    for (point, effective, metrics) in &run.points {
        assert_eq!(point.status, Status::Passed);
        assert_eq!(point.steps.len(), 2);
        assert_eq!(point.steps[0].jtl_file.as_deref(), Some("r.jtl"));
        // Issue 26 item 11: one clock. Each step's duration is on the run's (simulated)
        // clock, like its start and end, so the steps add up to the workload window (the
        // run step's was its real seconds, a 120th of its simulated ones).
        for step in &point.steps {
            assert!(
                (step.duration_s - (step.finished_at - step.started_at)).abs() < 1e-6,
                "{}: duration {} s, {} s from start to end",
                step.name,
                step.duration_s,
                step.finished_at - step.started_at
            );
        }
        let window = point.steps[1].finished_at - point.steps[0].started_at;
        let sum: f64 = point.steps.iter().map(|s| s.duration_s).sum();
        assert!(
            (sum - window).abs() < 1.0,
            "steps {sum} s, window {window} s"
        );
        let level = point.axes["level"].to_uppercase();
        assert_eq!(
            effective.services["mod-users"].environment["LOG_LEVEL"], level,
            "read back from AWS"
        );
        let metrics = metrics.as_ref().expect("metrics collected");
        assert!(metrics.synthetic);
        assert!(
            metrics.series.iter().any(|s| s.source == "ecs"
                && s.metric == "MemoryUtilization"
                && !s.values.is_empty())
        );
        assert!(
            metrics
                .series
                .iter()
                .any(|s| s.source == "rds" && s.role.as_deref() == Some("reader"))
        );
        assert!(
            metrics
                .series
                .iter()
                .any(|s| s.source == "kafka" && s.resource.ends_with("broker 2"))
        );
    }
    let first = &run
        .points
        .iter()
        .find(|p| p.0.id == "users=u1,level=info")
        .unwrap()
        .0;
    assert_eq!(first.transition.mutating_calls, world_first_create_calls());
}

/// Mutating calls of creating BASE_ENV from nothing: CreateCluster, CreateCapacityProvider
/// (no PutClusterCapacityProviders: a Managed Instances provider belongs to its cluster);
/// CreateDBParameterGroup, ModifyDBParameterGroup, CreateDBSubnetGroup, CreateDBInstance,
/// CreateDBInstanceReadReplica; CreateConfiguration, CreateClusterV2; RegisterTaskDefinition,
/// CreateService; CreateSecret (the writer's password), CreateLogGroup and
/// PutRetentionPolicy for `/ecs/<env>` and the load engines' `/envctl/<env>/load`,
/// RebootDBInstance (the writer, created within five minutes of its group's
/// ModifyDBParameterGroup, boots pending-reboot). (The subnet group's create is counted as
/// its own call, as AWS gets it.)
fn world_first_create_calls() -> u64 {
    17
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_step_fails_the_point_and_teardown_still_leaves_nothing() {
    let failing = PLAYBOOK.replace(
        "run: jmeter -Jusers=${users}\n    demo: printf",
        "run: jmeter -Jusers=${users}\n    demo: exit 3; printf",
    );
    let test = Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", &failing);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).unwrap();
    let world = World::new().await;
    let results = tempfile::tempdir().unwrap();
    let record = matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "r2"),
    )
    .await
    .unwrap();
    assert_eq!(record.status, Status::Failed);
    assert!(
        record.points.iter().all(|p| p.status == Status::Failed),
        "without fail_fast every point is tried"
    );
    let run = RunDir::read(&results.path().join("r2")).unwrap();
    assert!(
        run.points[0]
            .0
            .failure
            .as_deref()
            .unwrap()
            .contains("exited with 3")
    );
    assert!(record.teardown.performed);
    assert_eq!(owned_left(&world, &loaded).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_run_resumes_skipping_finished_points() {
    let slow = PLAYBOOK
        .replace(
            "  - wait: 30s\n",
            "  - name: slow\n    run: sleep 2\n    timeout: 1m\n",
        )
        .replace("teardown: always", "teardown: on-success");
    let test = Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", &slow);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).unwrap();
    let world = World::new().await;
    let results = tempfile::tempdir().unwrap();
    let first = options(&world, results.path(), "r3");
    let cancel = first.cancel.clone();
    // SIGINT during the second point: as soon as the first point's record is written (each
    // point's step sleeps two real seconds), whatever the machine's load. A fixed 3 s delay
    // failed on a loaded machine, where the first point could take longer than that.
    let points = results.path().join("r3").join("points");
    let flag = tokio::spawn(async move {
        let first_done = || {
            std::fs::read_dir(&points).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.path().join("point.json").is_file())
            })
        };
        // Bounded: a run that never finishes a point is cancelled after two minutes, and
        // the assertions below then fail on "no point passed".
        for _ in 0..2400 {
            if first_done() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        cancel.cancel();
    });
    let record = matrix::run(&loaded, &plan, &world.session, &first)
        .await
        .unwrap();
    flag.await.unwrap();
    assert_eq!(record.status, Status::Interrupted, "{:#?}", record.points);
    let passed_before: Vec<String> = record
        .points
        .iter()
        .filter(|p| p.status == Status::Passed)
        .map(|p| p.id.clone())
        .collect();
    assert!(
        !passed_before.is_empty() && passed_before.len() < 4,
        "{passed_before:?}"
    );
    assert!(
        !record.teardown.performed,
        "on-success keeps an interrupted environment for the resume"
    );

    let mut again = options(&world, results.path(), "r3");
    again.resume = true;
    world.sandbox().reset_stats();
    let record = matrix::run(&loaded, &plan, &world.session, &again)
        .await
        .unwrap();
    assert_eq!(record.status, Status::Passed, "{:#?}", record.points);
    assert!(record.teardown.performed);
    // Finished points were not run again: their step ran once, before the interruption.
    let run = RunDir::read(&results.path().join("r3")).unwrap();
    assert_eq!(run.points.len(), 4);
}

#[test]
fn sigterm_tears_the_environment_down_and_exits_130() {
    let slow = PLAYBOOK.replace(
        "  - wait: 30s\n",
        "  - name: slow\n    run: sleep 30\n    timeout: 5m\n",
    );
    let test = Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", &slow);
    let dir = test.path();
    // Files, not pipes: an unread pipe would block the child once its buffer fills.
    let stdout = std::fs::File::create(dir.join("stdout.txt")).unwrap();
    let stderr = std::fs::File::create(dir.join("stderr.txt")).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args([
            "matrix",
            "run",
            "pb.yaml",
            "--sandbox",
            "--time-scale",
            "20000",
        ])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("envctl starts");
    // Wait until the first point's slow step is running.
    let started = std::time::Instant::now();
    while !walk(dir).iter().any(|p| p.ends_with("slow.stdout")) {
        assert!(
            started.elapsed().as_secs() < 60,
            "the run never reached its workload"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let pid = child.id().to_string();
    let mut child = child;
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    let signalled = std::time::Instant::now();
    // CI sends SIGKILL ~10 s after SIGTERM: the teardown must have started, and be saying
    // so, well before that (its deletions may take longer: what was started is on record).
    let read_stderr = || std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    let teardown_progress = |text: &str| {
        text.split_once("teardown (always)")
            .is_some_and(|(_, after)| after.contains("resources planned"))
    };
    while !teardown_progress(&read_stderr()) && child.try_wait().ok().flatten().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let to_teardown = signalled.elapsed();
    eprintln!(
        "teardown progress {:.2} s after SIGTERM",
        to_teardown.as_secs_f64()
    );
    let out = child.wait_with_output().expect("envctl exits");
    let stderr = read_stderr();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(teardown_progress(&stderr), "{stderr}");
    assert!(
        to_teardown < std::time::Duration::from_secs(5),
        "the teardown's progress appeared {to_teardown:?} after SIGTERM:\n{stderr}"
    );
    let destroy = std::process::Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args(["destroy", "env.yaml", "--sandbox", "--yes"])
        .current_dir(dir)
        .output()
        .expect("destroy");
    assert!(
        String::from_utf8_lossy(&destroy.stdout).contains("Nothing to destroy"),
        "nothing owned is left: {}",
        String::from_utf8_lossy(&destroy.stdout)
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_stops_at_its_first_failure_and_records_the_last_passing_value() {
    let ramp = "\
name: ramp
env: env.yaml
matrix:
  level:
    info: {set: {services.mod-users.log_level: info}}
  records:
    r1: {vars: {records: 1}}
    r2: {vars: {records: 2}}
    r3: {vars: {records: 3}}
    r4: {vars: {records: 4}}
ramp: records
steps:
  - name: export
    run: export --records ${records}
    demo: test ${records} -le 2
    timeout: 1m
collect: {padding: 1m}
teardown: always
";
    let test = Test::new().file("env.yaml", BASE_ENV).file("pb.yaml", ramp);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).unwrap();
    let world = World::new().await;
    let results = tempfile::tempdir().unwrap();
    let record = matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "ramp"),
    )
    .await
    .unwrap();
    let statuses = crate::point_statuses(&record);
    assert_eq!(
        statuses,
        vec![
            ("level=info,records=r1".to_string(), Status::Passed),
            ("level=info,records=r2".to_string(), Status::Passed),
            ("level=info,records=r3".to_string(), Status::Failed),
            ("level=info,records=r4".to_string(), Status::Skipped),
        ]
    );
    assert_eq!(
        record.ramp.as_ref().unwrap().limits["level=info"].as_deref(),
        Some("r2")
    );
    assert_eq!(
        record.status,
        Status::Passed,
        "reaching the limit is the finding, not a failure"
    );
}

/// SIGTERM while a point's apply waits for its deployment: the teardown starts, and says so,
/// at once. Before waits woke on the signal, the apply first slept out its 40 s (virtual)
/// look at the deployment: 10 s of silence at this time scale, which CI cuts with SIGKILL.
#[test]
fn sigterm_during_an_apply_starts_the_teardown_at_once() {
    // ECS only, so that the teardown (a service draining for 2 virtual minutes) is short.
    let start = BASE_ENV.find("rds:\n").expect("rds section");
    let end = BASE_ENV.find("services:\n").expect("services section");
    let env =
        format!("{}{}", &BASE_ENV[..start], &BASE_ENV[end..]).replace("    kafka: main\n", "");
    let playbook = "\
name: one
env: env.yaml
matrix:
  level:
    info: {set: {services.mod-users.log_level: info}}
steps:
  - wait: 30s
collect: {padding: 1m, period: 60s}
teardown: always
";
    let test = Test::new().file("env.yaml", &env).file("pb.yaml", playbook);
    let dir = test.path();
    let stderr = std::fs::File::create(dir.join("stderr.txt")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args(["matrix", "run", "pb.yaml", "--sandbox", "--time-scale", "4"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("envctl starts");
    let started = std::time::Instant::now();
    let read_stderr = || std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    // The service's work has started; 1.5 s later (6 virtual seconds) it is created and in
    // its first 40 s wait. (Matrix points keep no journal to watch.)
    while !read_stderr().contains("ecs/service/mod-users: ") {
        if started.elapsed().as_secs() > 60 {
            let _ = child.kill();
            panic!(
                "the point's apply never started its service:\n{}",
                read_stderr()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    let signalled = std::time::Instant::now();
    while !read_stderr().contains("teardown (always)") && child.try_wait().ok().flatten().is_none()
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let to_teardown = signalled.elapsed();
    eprintln!(
        "teardown announced {:.2} s after SIGTERM during an apply",
        to_teardown.as_secs_f64()
    );
    let status = child.wait().expect("envctl exits");
    let stderr = read_stderr();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        to_teardown < std::time::Duration::from_secs(5),
        "the teardown started {to_teardown:?} after SIGTERM:\n{stderr}"
    );
    // The teardown ran to its end: its progress, then nothing of the env is left.
    let (_, after) = stderr.split_once("teardown (always)").unwrap_or_default();
    assert!(after.contains("resources planned"), "{stderr}");
    let destroy = std::process::Command::new(env!("CARGO_BIN_EXE_envctl"))
        .args(["destroy", "env.yaml", "--sandbox", "--yes"])
        .current_dir(dir)
        .output()
        .expect("destroy");
    assert!(
        String::from_utf8_lossy(&destroy.stdout).contains("Nothing to destroy"),
        "{}",
        String::from_utf8_lossy(&destroy.stdout)
    );
}

/// Issue 26 item 12: `matrix plan --sandbox` plans from what the sandbox runs (it used to be
/// refused, so a matrix was always planned from an empty account), and a restore run's
/// summary says the first point changes what exists and that the run ends with a restore,
/// not "N create" and "teardown: always".
#[test]
fn matrix_plan_starts_from_what_exists_and_a_restore_run_says_so() {
    // ECS only, so that the apply and the run are short.
    let start = BASE_ENV.find("rds:\n").expect("rds section");
    let end = BASE_ENV.find("services:\n").expect("services section");
    let env =
        format!("{}{}", &BASE_ENV[..start], &BASE_ENV[end..]).replace("    kafka: main\n", "");
    let playbook = "\
name: one
env: env.yaml
matrix:
  level:
    debug: {set: {services.mod-users.log_level: debug}}
steps:
  - wait: 5s
collect: {padding: 0s, period: 60s}
";
    let test = Test::new().file("env.yaml", &env).file("pb.yaml", playbook);
    let dir = test.path();
    let envctl = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_envctl"))
            .args(args)
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("envctl runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let first_point = |text: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with("1. "))
            .unwrap_or_default()
            .to_string()
    };
    // Offline: from an empty account, and it says so.
    let (code, offline, stderr) = envctl(&["matrix", "plan", "pb.yaml"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        offline.contains("starts from an empty account"),
        "{offline}"
    );
    assert!(first_point(&offline).contains("create"), "{offline}");

    let (code, _, stderr) = envctl(&["apply", "env.yaml", "--sandbox", "--yes"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, live, stderr) = envctl(&["matrix", "plan", "pb.yaml", "--sandbox"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        live.contains("starts from the environment as it exists"),
        "{live}"
    );
    let line = first_point(&live);
    assert!(
        !line.contains("create") && line.contains("rolling"),
        "only the log level changes: {live}"
    );

    let (code, _, stderr) = envctl(&["matrix", "run", "pb.yaml", "--sandbox", "--restore"]);
    assert_eq!(code, Some(0), "{stderr}");
    let summary = stderr.split("\nrun ").next().unwrap_or_default();
    assert!(
        summary.contains("then restore: the environment is put back")
            && !summary.contains("teardown: always")
            && !first_point(summary).contains("create"),
        "{summary}"
    );
}

/// MSK upgrades a cluster past its version's end of support at any time, without notice
/// (MSK Developer Guide, "Amazon MSK version support"): an upgrade that MSK starts during a
/// point's workload (here the sandbox's control API, called by the step itself) is said on
/// the console and recorded in `point.json` with its type, state and times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_msk_operation_inside_the_workload_window_is_noted_in_the_console_and_the_results() {
    const UPGRADED: &str = r#"name: msk-upgrade
env: env.yaml
matrix:
  users:
    u1: {vars: {users: 1}}
steps:
  - name: load
    run: jmeter -Jusers=${users}
    demo: 'curl -sf -X POST "${AWS_ENDPOINT_URL}/_sandbox/kafka/auto-upgrade" -d "{\"name\":\"test-msk\",\"version\":\"3.7.x\",\"duration_s\":600}"'
    timeout: 1m
  - wait: 30s
collect: {padding: 1m, period: 60s}
teardown: never
"#;
    let test = Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", UPGRADED);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).expect("matrix plan");
    let world = World::new().await;
    let results = tempfile::tempdir().unwrap();
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut opts = options(&world, results.path(), "r1");
    let sink = said.clone();
    opts.say =
        std::sync::Arc::new(move |line: &str| sink.lock().expect("console").push(line.to_string()));
    let record = matrix::run(&loaded, &plan, &world.session, &opts)
        .await
        .expect("run");
    assert_eq!(record.status, Status::Passed, "{record:#?}");
    let run = RunDir::read(&results.path().join("r1")).expect("results read back");
    let (point, _, _) = &run.points[0];
    assert_eq!(point.msk_operations.len(), 1, "{:#?}", point.msk_operations);
    let op = &point.msk_operations[0];
    assert_eq!(
        (op.cluster.as_str(), op.operation_type.as_str()),
        ("test-msk", "UPDATE_CLUSTER_KAFKA_VERSION")
    );
    assert_eq!(
        op.state, "UPDATE_IN_PROGRESS",
        "600 s outlast the 30 s window"
    );
    assert!(op.ended_at.is_none());
    let window = (point.steps[0].started_at, point.steps[1].finished_at);
    // Times come back from MSK's `startTime` at millisecond precision.
    assert!(
        op.started_at
            .is_some_and(|s| s >= window.0 - 0.001 && s <= window.1),
        "{op:?} in {window:?}"
    );
    let said = said.lock().expect("console").join("\n");
    assert!(
        said.contains(
            "note: MSK operation UPDATE_CLUSTER_KAFKA_VERSION on test-msk (UPDATE_IN_PROGRESS"
        ) && said.contains("overlapped the workload window"),
        "{said}"
    );
}
