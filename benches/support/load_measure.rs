//! The load engines' start figures (docs/performance.md, issue 24): one `load:` step of 200
//! engines on the simulated sandbox with ECS throttling on, measured on its simulated clock.
//! Shared by `cargo bench --bench perf` (the table) and tests/integration/load.rs (which
//! asserts the deterministic figures).
use std::collections::BTreeMap;
use std::path::PathBuf;

use envctl::aws::engines::EngineCapacity;
use envctl::load::step::{LoadEnv, LoadPaths};
use envctl::results::EnginesRecord;
use envctl::session::Session;
use envctl::spec::decode::{At, Duration, Scalar};
use envctl::spec::playbook::{LoadSpec, LoadStep};
use envctl_sandbox::SandboxConfig;

/// What starting the engines took.
pub struct LoadStart {
    pub engines: EnginesRecord,
    /// The least time from the first RunTask to every engine RUNNING: Fargate's launch
    /// bucket for the engines past its burst, the sandbox's task start, and one of envctl's
    /// 5-second looks at the engines.
    pub bound_s: f64,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs one load step of `n` engines (the project's smoke plan, 60 s) against a cluster.
pub async fn engines(n: u32) -> LoadStart {
    let session = Session::simulated(SandboxConfig {
        ecs_throttling: true,
        ..SandboxConfig::default()
    })
    .await
    .expect("the sandbox starts");
    envctl::aws::ecs::create_cluster(&session.clients.ecs, "perf-load", &Default::default())
        .await
        .expect("cluster");
    let step = LoadStep {
        name: Some("load".into()),
        load: LoadSpec {
            tool: At::builtin("jmeter".into()),
            plan: At::builtin("engines/jmeter/smoke.jmx".into()),
            files: Vec::new(),
            engines: At::builtin(n),
            properties: BTreeMap::from(
                [
                    ("users", "2"),
                    ("host", "127.0.0.1"),
                    ("port", "8080"),
                    ("duration", "60"),
                ]
                .map(|(k, v)| (k.to_string(), At::builtin(Scalar(v.to_string())))),
            ),
            timeout: At::builtin(Duration(std::time::Duration::from_secs(1800))),
            barrier: At::builtin(Duration(std::time::Duration::from_secs(600))),
            capacity: None,
        },
    };
    let env = LoadEnv {
        session: &session,
        env: "perf".into(),
        region: "us-east-1".into(),
        cluster: "perf-load".into(),
        subnets: vec!["subnet-1".into(), "subnet-2".into()],
        security_groups: vec!["sg-1".into()],
        tags: vec![("envctl:env".into(), "perf".into())],
        execution_role: None,
        task_role: None,
        lock: None,
        run_id: "perf-load".into(),
        sandbox: true,
        capacity: EngineCapacity::Fargate,
        detail: std::sync::Arc::new(|_: &str| {}),
    };
    let point_dir = tempfile::tempdir().expect("a temp dir");
    let root = repo();
    let paths = LoadPaths {
        point_dir: point_dir.path(),
        workdir: &root,
        project: &root,
    };
    let vars = BTreeMap::from([
        ("POINT".to_string(), "perf".to_string()),
        ("REPEAT".to_string(), "1".to_string()),
    ]);
    let record = envctl::load::step::run(
        &step,
        "load",
        &vars,
        &env,
        &paths,
        &envctl::exec::Cancel::new(),
        &|_: &str| {},
    )
    .await;
    let engines = record.engines.expect("engines recorded");
    let (burst, rate) = envctl_aws_model::engine::FARGATE_TASK_LAUNCHES;
    let launching = envctl::exec::lower_bound_secs(u64::from(n), burst as u32, rate);
    let task_start = envctl_sandbox::DurationProfile::default()
        .ecs_task_start
        .as_secs_f64();
    LoadStart {
        engines,
        bound_s: launching + task_start + 5.0,
    }
}
