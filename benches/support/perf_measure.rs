//! The measurements behind envctl's performance table: `benches/perf.rs` prints them and
//! `tests/integration/perf.rs` asserts the deterministic ones (call counts, simulated
//! seconds), so both look at exactly the same quantities.
//!
//! Everything runs against the in-process sandbox. Worlds are simulated (`Session::simulated`:
//! the sandbox's clock moves only when envctl waits), so a 25-minute MSK create or 144
//! rate-limited registrations cost milliseconds of real time and their simulated duration is
//! the same on every machine.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use envctl::apply::ApplyReport;
use envctl::compile::{Compiled, compile_env};
use envctl::converge::{self, ApplyOptions, Planned};
use envctl::model::DesiredState;
use envctl::model::live::LiveState;
use envctl::plan::DiffOptions;
use envctl::session::Session;
use envctl::spec::Loader;
use envctl_sandbox::{
    FaultConfig, LatencyFault, Outcome, RequestRecord, RequestStats, Sandbox, SandboxConfig,
};

/// The repository root (envs/, task-defs/).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Simulated worlds start at a fixed instant (2027-01-15T08:00:00Z) so that runs repeat.
pub fn start_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// Loads, lints and lowers an env; panics with the rendered diagnostics if it does not.
pub fn compile(path: &Path, sets: &[&str]) -> Compiled {
    let mut loader = Loader::new();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match compile_env(&mut loader, path, &sets) {
        Some(c) => c,
        None => panic!(
            "{} does not compile:\n{}",
            path.display(),
            loader.diagnostics.render(&loader.sources)
        ),
    }
}

/// Writes a generated env as `<dir>/envs/<name>.yaml` next to a copy of the repository's
/// templates in `<dir>/task-defs` (generated envs name `../task-defs/folio-module.yaml`).
pub fn write_env(dir: &Path, name: &str, yaml: &str) -> std::io::Result<PathBuf> {
    let envs = dir.join("envs");
    std::fs::create_dir_all(&envs)?;
    // Copies, not a symlink: the loader refuses paths that resolve outside the project.
    let task_defs = dir.join("task-defs");
    std::fs::create_dir_all(&task_defs)?;
    for entry in std::fs::read_dir(repo().join("task-defs"))? {
        let entry = entry?;
        std::fs::copy(entry.path(), task_defs.join(entry.file_name()))?;
    }
    let path = envs.join(format!("{name}.yaml"));
    std::fs::write(&path, yaml)?;
    Ok(path)
}

/// The same environment without its services: cluster, MSK (with its configuration) and RDS
/// (writer, reader, parameter group). Applying it first lets the ECS phase be measured on
/// its own, the way a matrix switches services on data stores that already exist.
pub fn without_services(desired: &DesiredState) -> DesiredState {
    let mut d = desired.clone();
    d.services.clear();
    d
}

/// A simulated sandbox with envctl's state directory (observe cache, journal) beside it.
pub struct PerfWorld {
    pub session: Session,
    pub state: tempfile::TempDir,
}

impl PerfWorld {
    /// `ecs_throttling`: whether the sandbox enforces ECS's token buckets. Applies whose
    /// duration is measured need them; worlds that only serve plans do not (see
    /// [`per_resource_refresh`] for why the comparison is run without them).
    pub async fn new(ecs_throttling: bool) -> PerfWorld {
        let session = Session::simulated(SandboxConfig {
            ecs_throttling,
            start_time: Some(start_time()),
            ..SandboxConfig::default()
        })
        .await
        .expect("the sandbox starts");
        PerfWorld {
            session,
            state: tempfile::tempdir().expect("a temp dir"),
        }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.state.path().to_path_buf()
    }

    pub fn sandbox(&self) -> &Sandbox {
        self.session.sandbox.as_ref().expect("a sandbox session")
    }

    pub async fn plan(&self, desired: &DesiredState) -> Planned {
        converge::plan(
            &self.session,
            desired,
            &self.state_dir(),
            &DiffOptions::default(),
        )
        .await
        .expect("plan")
    }

    /// Stands in for the Auto Scaling group of an `ecs.capacity: {instances: N}` env (perf-144):
    /// N instances of its type register in its cluster (at once, or 90 s after apply creates
    /// it), unless some already are. Nothing for the forms whose instances envctl launches.
    pub fn register_fleet(&self, desired: &DesiredState) {
        let cluster = &desired.cluster;
        if !matches!(cluster.capacity, envctl::model::ClusterCapacity::Instances) {
            return;
        }
        self.sandbox().retire_instances(&cluster.name);
        self.sandbox()
            .declare_fleet(&cluster.name, &cluster.instance_type, cluster.instances);
    }

    /// That group scaled to zero: its instances leave, so destroy can delete the cluster.
    pub fn retire_fleet(&self, desired: &DesiredState) {
        self.sandbox().retire_instances(&desired.cluster.name);
    }

    /// Plans and applies with the options the CLI uses; panics unless it succeeds.
    pub async fn converge(&self, desired: &DesiredState) -> ApplyReport {
        self.register_fleet(desired);
        let planned = self.plan(desired).await;
        let report = converge::apply(
            &self.session,
            desired,
            planned,
            &ApplyOptions::new("perf", self.state_dir()),
        )
        .await
        .expect("a valid plan");
        assert!(report.succeeded(), "{}", report.render());
        report
    }

    /// Every request from now on waits `millis` of real time in the sandbox before it is
    /// answered: the same sleep as `SandboxConfig::latency`, switched on after the world was
    /// built so the converging apply is not slowed down.
    pub fn set_latency(&self, millis: u64) {
        self.sandbox().set_faults(FaultConfig {
            latency: vec![LatencyFault {
                service: "*".into(),
                operation: "*".into(),
                millis,
            }],
            ..FaultConfig::default()
        });
    }
}

/// A world holding `desired`, converged, with a warm observe cache.
pub async fn converged(desired: &DesiredState, ecs_throttling: bool) -> PerfWorld {
    let world = PerfWorld::new(ecs_throttling).await;
    world.converge(desired).await;
    // The apply saved the cache; one plan more makes sure everything immutable is in it.
    world.plan(desired).await;
    world
}

/// The AWS calls of one `converge::plan` of a converged env with a warm cache.
pub async fn plan_calls(world: &PerfWorld, desired: &DesiredState) -> (RequestStats, Planned) {
    world.sandbox().reset_stats();
    let planned = world.plan(desired).await;
    (world.sandbox().stats(), planned)
}

/// Terraform's default `-parallelism`.
pub const TERRAFORM_PARALLELISM: usize = 10;

/// The reference strategy: refresh every resource on its own, as Terraform's AWS provider
/// does (aws_ecs_service: DescribeServices with one service; aws_ecs_task_definition:
/// DescribeTaskDefinition; aws_msk_cluster: DescribeClusterV2; aws_db_instance:
/// DescribeDBInstances with one identifier), `parallelism` at a time, through the same SDK
/// clients envctl uses. The resource ids come from `live`, as they would from a state file.
///
/// It is a lower bound of a Terraform refresh: the provider also reads the ECS cluster, the
/// MSK configuration and the DB parameter group (and tags separately for some), which are
/// left out. Returns the number of calls issued.
pub async fn per_resource_refresh(
    session: &Session,
    cluster: &str,
    live: &LiveState,
    parallelism: usize,
) -> Result<u64, String> {
    type Call = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>;
    let clients = &session.clients;
    let mut calls: Vec<Call> = Vec::new();
    for name in live.services.keys() {
        let (ecs, cluster, name) = (clients.ecs.clone(), cluster.to_string(), name.clone());
        calls.push(Box::pin(async move {
            ecs.describe_services()
                .cluster(cluster)
                .services(name)
                .send()
                .await
                .map(drop)
                .map_err(|e| format!("DescribeServices: {e:?}"))
        }));
    }
    for arn in live.task_definitions.keys() {
        let (ecs, arn) = (clients.ecs.clone(), arn.clone());
        calls.push(Box::pin(async move {
            ecs.describe_task_definition()
                .task_definition(arn)
                .send()
                .await
                .map(drop)
                .map_err(|e| format!("DescribeTaskDefinition: {e:?}"))
        }));
    }
    for k in live.kafka.values() {
        let (kafka, arn) = (clients.kafka.clone(), k.arn.clone());
        calls.push(Box::pin(async move {
            kafka
                .describe_cluster_v2()
                .cluster_arn(arn)
                .send()
                .await
                .map(drop)
                .map_err(|e| format!("DescribeClusterV2: {e:?}"))
        }));
    }
    for id in live.db_instances.keys() {
        let (rds, id) = (clients.rds.clone(), id.clone());
        calls.push(Box::pin(async move {
            rds.describe_db_instances()
                .db_instance_identifier(id)
                .send()
                .await
                .map(drop)
                .map_err(|e| format!("DescribeDBInstances: {e:?}"))
        }));
    }
    let issued = calls.len() as u64;
    let permits = Arc::new(tokio::sync::Semaphore::new(parallelism.max(1)));
    let mut running = tokio::task::JoinSet::new();
    for call in calls {
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        running.spawn(async move {
            let result = call.await;
            drop(permit);
            result
        });
    }
    while let Some(done) = running.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok(issued)
}

/// The simulated duration of the ECS phase of a fresh apply: the data stores and the
/// cluster are applied first (they take 12-25 simulated minutes and would hide everything
/// else), then the whole env, whose apply creates every service. Returns that second
/// apply's report and the sandbox's request log of it.
pub async fn apply_ecs_phase(desired: &DesiredState) -> (ApplyReport, Vec<RequestRecord>, f64) {
    let world = PerfWorld::new(true).await;
    world.converge(&without_services(desired)).await;
    world.sandbox().reset_stats();
    let started = world.session.clock.now();
    let report = world.converge(desired).await;
    (report, world.sandbox().request_log(), started)
}

/// The smallest possible duration of that phase: every service needs its own task
/// definition registered (one token each from ECS's task-definition bucket) before its
/// CreateService, and the last service created still has to start its task. Every other
/// bucket the phase draws from (service modify for CreateService, service read for the
/// polls) is looser, so the bound is the registrations' plus one task start.
pub fn apply_bound_secs(registrations: u64, task_start_secs: f64) -> f64 {
    let (burst, rate) = envctl_aws_model::ecs_rate_limit("RegisterTaskDefinition");
    let registering = envctl::exec::lower_bound_secs(registrations, burst as u32, rate);
    let (burst, rate) = envctl_aws_model::ecs_rate_limit("CreateService");
    let creating = envctl::exec::lower_bound_secs(registrations, burst as u32, rate);
    registering.max(creating) + task_start_secs
}

/// The task start of the sandbox's duration profile (40 s): how long the last service
/// needs after its CreateService.
pub fn task_start_secs() -> f64 {
    envctl_sandbox::DurationProfile::default()
        .ecs_task_start
        .as_secs_f64()
}

/// Where the time of an ECS phase went, from the sandbox's request log: seconds since the
/// apply started.
#[derive(Debug, Default, Clone)]
pub struct Timeline {
    pub registrations: u64,
    pub first_registration: Option<f64>,
    pub last_registration: Option<f64>,
    pub creates: u64,
    pub last_create: Option<f64>,
    pub describe_services: u64,
    pub last_describe: Option<f64>,
    pub throttled: u64,
    /// Registrations that answered after their predecessor by more than the bucket's
    /// refill interval (1 s): time the task-definition bucket was not kept busy.
    pub registration_gaps: Vec<(f64, f64)>,
}

impl Timeline {
    pub fn of(log: &[RequestRecord], started: f64) -> Timeline {
        let mut t = Timeline::default();
        let mut previous: Option<f64> = None;
        for r in log {
            let at = r.at - started;
            if r.outcome == Outcome::Throttled {
                t.throttled += 1;
            }
            match r.operation.as_str() {
                "RegisterTaskDefinition" => {
                    t.registrations += 1;
                    t.first_registration.get_or_insert(at);
                    t.last_registration = Some(at);
                    if let Some(p) = previous
                        && at - p > 1.0 + 1e-6
                    {
                        t.registration_gaps.push((p, at));
                    }
                    previous = Some(at);
                }
                "CreateService" => {
                    t.creates += 1;
                    t.last_create = Some(at);
                }
                "DescribeServices" => {
                    t.describe_services += 1;
                    t.last_describe = Some(at);
                }
                _ => {}
            }
        }
        t
    }

    pub fn render(&self) -> String {
        let s = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} s"));
        let mut out = format!(
            "{} RegisterTaskDefinition from {} to {}; {} CreateService, the last at {}; \
             {} DescribeServices, the last at {}; {} throttled",
            self.registrations,
            s(self.first_registration),
            s(self.last_registration),
            self.creates,
            s(self.last_create),
            self.describe_services,
            s(self.last_describe),
            self.throttled
        );
        if !self.registration_gaps.is_empty() {
            let gaps: Vec<String> = self
                .registration_gaps
                .iter()
                .take(10)
                .map(|(a, b)| format!("{a:.1}->{b:.1}"))
                .collect();
            out.push_str(&format!(
                "; {} gaps between registrations longer than 1 s: {}",
                self.registration_gaps.len(),
                gaps.join(", ")
            ));
        }
        out
    }
}

/// When the executor launched the actions of an apply (simulated seconds from its start):
/// how many at once, and the first few in order, to tell "launched late" from "waited once
/// launched".
pub fn launches(report: &ApplyReport) -> String {
    let mut started: Vec<(f64, f64, &str)> = report
        .results
        .iter()
        .map(|r| (r.started_secs, r.finished_secs, r.resource.as_str()))
        .collect();
    started.sort_by(|a, b| a.0.total_cmp(&b.0));
    let at_start = started.iter().filter(|s| s.0 == 0.0).count();
    let first: Vec<String> = started
        .iter()
        .take(3)
        .map(|(s, f, r)| format!("{r} {s:.1}-{f:.1} s"))
        .collect();
    let late: Vec<String> = started
        .iter()
        .filter(|s| s.0 > 0.0)
        .take(3)
        .map(|(s, f, r)| format!("{r} {s:.1}-{f:.1} s"))
        .collect();
    format!(
        "{} actions, {at_start} launched at 0 s (first: {}; first launched later: {})",
        started.len(),
        first.join(", "),
        late.join(", ")
    )
}

/// Mutating calls of converging a world that holds `before` to `after`.
pub async fn switch_calls(world: &PerfWorld, after: &DesiredState) -> RequestStats {
    world.sandbox().reset_stats();
    world.converge(after).await;
    world.sandbox().stats()
}

/// (operation, count) of the mutating calls in `stats`, for messages.
pub fn mutating_ops(stats: &RequestStats) -> Vec<(String, u64)> {
    stats
        .operations
        .iter()
        .filter(|(op, s)| {
            s.count > 0 && envctl_aws_model::is_mutating("", op.rsplit(':').next().unwrap_or(op))
        })
        .map(|(op, s)| (op.clone(), s.count))
        .collect()
}

/// The matrix the matrix-cost figures are measured on: three axes over perf-144, declared
/// the way people write them (the job outermost), so the declared order switches the
/// broker type at every point and the log level of all 144 services every second point.
/// The shipped playbooks put their one environment axis outermost, where the declared
/// order is already the best one and the comparison would show nothing.
pub const PERF_MATRIX: &str = "\
name: perf-144-matrix
description: two jobs x log level of every service x broker type, on 144 services
env: ../envs/perf-144.yaml
matrix:
  job:
    create: {vars: {profile: create}}
    update: {vars: {profile: update}}
  log_level:
    info: {set: {services.*.log_level: info}}
    warn: {set: {services.*.log_level: warn}}
  broker:
    m5: {set: {kafka.main.broker_type: kafka.m5.2xlarge}}
    m7g: {set: {kafka.main.broker_type: kafka.m7g.2xlarge}}
steps:
  - wait: 1m
teardown: always
";

/// Writes [`PERF_MATRIX`] with a copy of envs/perf-144.yaml under `dir` and plans it as
/// `envctl matrix plan` does.
pub fn perf_matrix(
    dir: &Path,
) -> (
    envctl::spec::playbook::LoadedPlaybook,
    envctl::matrix::MatrixPlan,
) {
    let env = std::fs::read_to_string(repo().join("envs/perf-144.yaml")).expect("perf-144");
    write_env(dir, "perf-144", &env).expect("write the env");
    let playbooks = dir.join("playbooks");
    std::fs::create_dir_all(&playbooks).expect("playbooks dir");
    let path = playbooks.join("perf-144-matrix.yaml");
    std::fs::write(&path, PERF_MATRIX).expect("write the playbook");
    let mut loader = Loader::new();
    let Some(loaded) = loader.load_playbook(&path) else {
        panic!("{}", loader.diagnostics.render(&loader.sources));
    };
    let plan = envctl::matrix::plan_matrix(&loaded, &[]).expect("matrix plan");
    (loaded, plan)
}

/// Simulated seconds spent changing the environment at each point when the matrix's points
/// run in `sequence` (indices into `plan.points`): one converge per point from an empty
/// account, under the ECS buckets. The workload at each point is the same whatever the
/// order, so it is left out, as in the planner's estimate.
pub async fn matrix_switching_secs(
    plan: &envctl::matrix::MatrixPlan,
    sequence: &[usize],
) -> Vec<f64> {
    let world = PerfWorld::new(true).await;
    let mut steps = Vec::new();
    for &i in sequence {
        let desired = &plan.configs[&plan.points[i].config_key];
        steps.push(world.converge(desired).await.elapsed_secs);
    }
    steps
}

/// Simulated seconds of rebuilding the environment for every point, as (create, destroy)
/// per point: created from empty, then destroyed, point after point in one account.
pub async fn matrix_rebuild_secs(plan: &envctl::matrix::MatrixPlan) -> Vec<(f64, f64)> {
    let world = PerfWorld::new(true).await;
    let mut steps = Vec::new();
    for point in &plan.points {
        let desired = &plan.configs[&point.config_key];
        let created = world.converge(desired).await.elapsed_secs;
        world.retire_fleet(desired);
        let planned = converge::plan_destroy(&world.session, desired, &world.state_dir())
            .await
            .expect("plan destroy");
        let report = converge::apply(
            &world.session,
            desired,
            planned,
            &ApplyOptions::new("perf-destroy", world.state_dir()),
        )
        .await
        .expect("a valid plan");
        assert!(report.succeeded(), "{}", report.render());
        steps.push((created, report.elapsed_secs));
    }
    steps
}

/// A destroy of `desired`, converged first on a sandbox that enforces ECS's buckets:
/// the report, the sandbox's counters for the destroy alone, and the plan's estimate.
pub async fn destroy_run(desired: &DesiredState) -> (ApplyReport, RequestStats, f64) {
    let world = converged(desired, true).await;
    world.retire_fleet(desired);
    let planned = converge::plan_destroy(&world.session, desired, &world.state_dir())
        .await
        .expect("plan destroy");
    let estimate = planned.plan.estimate_secs;
    world.sandbox().reset_stats();
    let report = converge::apply(
        &world.session,
        desired,
        planned,
        &ApplyOptions::new("perf-destroy", world.state_dir()),
    )
    .await
    .expect("a valid plan");
    assert!(report.succeeded(), "{}", report.render());
    (report, world.sandbox().stats(), estimate)
}

/// The smallest possible duration of destroying `services` services (one revision each)
/// and the data stores: every DeleteService through ECS's service-modify bucket, the last
/// service draining, then the slower of the MSK cluster's deletion and the DB reader's
/// followed by its writer's. Task-definition clean-up (a deregistration per revision and a
/// DeleteTaskDefinitions per ten, through the 1/s task-definition bucket) runs beside it.
pub fn destroy_bound_secs(services: u64) -> f64 {
    let profile = envctl_sandbox::DurationProfile::default();
    let (burst, rate) = envctl_aws_model::ecs_rate_limit("DeleteService");
    let deleting = envctl::exec::lower_bound_secs(services, burst as u32, rate)
        + profile.ecs_service_drain.as_secs_f64();
    let data_stores = profile
        .msk_delete
        .as_secs_f64()
        .max(2.0 * profile.rds_delete.as_secs_f64());
    let (burst, rate) = envctl_aws_model::ecs_rate_limit("DeregisterTaskDefinition");
    let cleanup =
        envctl::exec::lower_bound_secs(services + services.div_ceil(10), burst as u32, rate);
    (deleting + data_stores).max(cleanup)
}
