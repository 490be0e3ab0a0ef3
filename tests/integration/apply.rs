//! plan and apply against the in-process sandbox on a simulated clock: deterministic
//! simulated seconds and exact call counts.
use std::path::PathBuf;

use envctl::compile::{Compiled, compile_env};
use envctl::converge::{
    ApplyOptions, ConvergeError, Planned, apply, gc_desired, plan, plan_gc, plan_saved,
};
use envctl::model::DesiredState;
use envctl::plan::{ActionKind, DiffOptions, Op, SavedPlan, ServiceRevision, desired_hash};
use envctl::session::Session;
use envctl::spec::Loader;
use envctl_sandbox::SandboxConfig;

use crate::repo;

pub fn compiled(env: &str, sets: &[&str]) -> Compiled {
    let mut loader = Loader::new();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match compile_env(
        &mut loader,
        &repo().join("envs").join(format!("{env}.yaml")),
        &sets,
    ) {
        Some(c) => c,
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    }
}

pub struct World {
    pub session: Session,
    pub state: tempfile::TempDir,
}

impl World {
    /// The options of a matrix run on this world's sandbox, quiet, without a lock: what the
    /// matrix, restore and load tests share.
    pub fn matrix_options(
        &self,
        results: &std::path::Path,
        run_id: &str,
    ) -> envctl::matrix::MatrixOptions {
        envctl::matrix::MatrixOptions {
            run_id: run_id.into(),
            results_root: results.to_path_buf(),
            state_dir: self.state_dir(),
            teardown: None,
            sandbox: true,
            endpoint_url: Some(self.sandbox().endpoint_url()),
            resume: false,
            restore: envctl::matrix::RestoreMode::Auto,
            cancel: envctl::exec::Cancel::new(),
            fence: None,
            lock_url: None,
            progress: std::sync::Arc::new(envctl::apply::Silent)
                as std::sync::Arc<dyn envctl::exec::Progress>,
            say: std::sync::Arc::new(|_: &str| {}),
            detail: std::sync::Arc::new(|_: &str| {}),
        }
    }

    pub async fn new() -> World {
        World::with(SandboxConfig::default()).await
    }

    pub async fn with(config: SandboxConfig) -> World {
        World {
            session: Session::simulated(config).await.expect("sandbox starts"),
            state: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.state.path().to_path_buf()
    }

    pub fn sandbox(&self) -> &envctl_sandbox::Sandbox {
        self.session.sandbox.as_ref().expect("a sandbox session")
    }

    /// Stands in for the Auto Scaling group of an `ecs.capacity: {instances: N}` env: N
    /// instances of its type, registering in its cluster once the cluster exists (at once
    /// if it does), as agents started beside the env would.
    /// Does nothing for the other capacity forms (envctl launches or uses their instances).
    pub fn register_fleet(&self, desired: &envctl::model::DesiredState) {
        let cluster = &desired.cluster;
        if matches!(cluster.capacity, envctl::model::ClusterCapacity::Instances) {
            self.sandbox()
                .declare_fleet(&cluster.name, &cluster.instance_type, cluster.instances)
                .expect("an instance type the sandbox knows");
        }
    }

    /// The group of `register_fleet` scaled to zero: its instances leave the cluster, which
    /// destroy can then delete.
    pub fn retire_fleet(&self, cluster: &str) {
        self.sandbox().retire_instances(cluster);
    }

    pub fn mutating_calls(&self) -> u64 {
        self.sandbox().stats().mutating_calls()
    }

    /// Observes and diffs `desired` against this world with `options`.
    pub async fn plan_with(&self, desired: &DesiredState, options: DiffOptions) -> Planned {
        plan(&self.session, desired, &self.state_dir(), &options)
            .await
            .expect("plan")
    }

    /// The plan `status` shows: conflicts listed instead of refused.
    pub async fn plan_observed(&self, desired: &DesiredState) -> Planned {
        envctl::converge::plan_observed(
            &self.session,
            desired,
            &self.state_dir(),
            &DiffOptions::default(),
        )
        .await
        .expect("plan")
    }

    /// The plan a plain `envctl plan` would make.
    pub async fn plan(&self, desired: &DesiredState) -> Planned {
        self.plan_with(desired, DiffOptions::default()).await
    }

    /// Applies an already made plan under the given run id.
    pub async fn apply(
        &self,
        desired: &DesiredState,
        planned: Planned,
        run: &str,
    ) -> envctl::apply::ApplyReport {
        apply(
            &self.session,
            desired,
            planned,
            &ApplyOptions::new(run, self.state_dir()),
        )
        .await
        .expect("a valid plan")
    }

    /// Plans and applies; returns the report.
    pub async fn converge(&self, c: &Compiled) -> envctl::apply::ApplyReport {
        let planned = self.plan(&c.desired).await;
        self.apply(&c.desired, planned, "test-run").await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_apply_then_reapply_makes_no_mutating_calls() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let created = report
        .results
        .iter()
        .filter(|r| r.action == ActionKind::Create)
        .count();
    assert_eq!(created, report.results.len());
    // MSK creation (25 min) is the critical path; services start after it.
    assert!(
        report.elapsed_secs >= 25.0 * 60.0,
        "{}",
        report.elapsed_secs
    );

    let planned = world.plan(&c.desired).await;
    let changes: Vec<_> = planned
        .plan
        .changes()
        .map(|a| (a.id.to_string(), a.changes.clone()))
        .collect();
    assert!(
        changes.is_empty(),
        "no phantom diffs after apply: {changes:#?}"
    );

    let before = world.mutating_calls();
    let report = world.converge(&c).await;
    assert!(report.succeeded());
    assert_eq!(
        world.mutating_calls() - before,
        0,
        "a converged env re-applied makes no mutating calls"
    );
}

/// Every resource in the sandbox that carries the environment's tag.
pub async fn owned_resources(world: &World, c: &Compiled) -> Vec<String> {
    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("observe");
    planned
        .plan
        .actions
        .iter()
        .map(|a| a.id.to_string())
        .filter(|id| !id.starts_with("ecs/task-definitions/"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_leaves_nothing_owned() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let owned = owned_resources(&world, &c).await;
    // 18, the writer's master secret and the awslogs groups (the services' and the load
    // engines').
    assert_eq!(owned.len(), 21, "{owned:#?}");
    assert!(
        owned
            .iter()
            .any(|id| id == "ecs/capacity-provider/envctl-pcp1-pvt"),
        "{owned:#?}"
    );
    // The subnet group envctl created for the writer is owned and destroyed with it.
    assert!(
        owned
            .iter()
            .any(|id| id == "rds/subnet-group/pcp1-db-subnets"),
        "{owned:#?}"
    );
    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("plan");
    // The counts below are the destroy's (the create looks at each family once before
    // registering, docs/aws-behaviour.md "Creates whose response was lost").
    world.sandbox().reset_stats();
    let report = world.apply(&c.desired, planned, "destroy").await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(owned_resources(&world, &c).await, Vec::<String>::new());
    // Task definitions are deregistered and deleted too: ten revisions, one
    // DeleteTaskDefinitions (it takes ten ARNs), no ListTaskDefinitions (envctl knows them).
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("ecs", "DeregisterTaskDefinition").count, 10);
    assert_eq!(stats.get("ecs", "DeleteTaskDefinitions").count, 1);
    assert_eq!(stats.get("ecs", "ListTaskDefinitions").count, 0);
    assert_eq!(stats.get("rds", "DeleteDBSubnetGroup").count, 1);
}

/// Issue 26 item 4: a deletion that ends well before its typical duration is not waited out.
/// The sandbox deletes the MSK cluster in 60 s and the DB instances in 60 s; envctl first
/// looks at a quarter of the typical durations (MSK 600 s, RDS 300 s), so each wait ends at
/// its first look (150 s, 75 s) instead of at 600 s and 300 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_that_ends_early_is_seen_at_the_first_look() {
    let profile = envctl_sandbox::DurationProfile {
        msk_delete: std::time::Duration::from_secs(60),
        rds_delete: std::time::Duration::from_secs(60),
        ..envctl_sandbox::DurationProfile::default()
    };
    let world = World::with(SandboxConfig {
        profile,
        ..SandboxConfig::default()
    })
    .await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("plan");
    let report = world.apply(&c.desired, planned, "destroy").await;
    assert!(report.succeeded(), "{}", report.render());
    let took = |prefix: &str| -> Vec<(String, f64)> {
        report
            .results
            .iter()
            .filter(|r| r.resource.starts_with(prefix))
            .map(|r| (r.resource.clone(), r.finished_secs - r.started_secs))
            .collect()
    };
    let kafka = took("kafka/cluster/");
    assert!(!kafka.is_empty(), "{}", report.render());
    for (resource, secs) in &kafka {
        // DeleteCluster, the first look at 150 s: done (was 600 s).
        assert!((150.0..160.0).contains(secs), "{resource}: {secs} s");
    }
    let dbs = took("rds/instance/");
    assert_eq!(dbs.len(), 2, "{}", report.render());
    for (resource, secs) in &dbs {
        // DeleteDBInstance, the first look at 75 s: done (was 300 s).
        assert!((75.0..85.0).contains(secs), "{resource}: {secs} s");
    }
}

/// Applies `after` on top of a converged `before` and returns the report and the calls the
/// second apply made per operation.
async fn switch(
    world: &World,
    after: &Compiled,
) -> (envctl::apply::ApplyReport, envctl_sandbox::RequestStats) {
    world.sandbox().reset_stats();
    let report = world.converge(after).await;
    (report, world.sandbox().stats())
}

fn mutating_ops(stats: &envctl_sandbox::RequestStats) -> Vec<(String, u64)> {
    stats
        .operations
        .iter()
        .filter(|(op, s)| {
            s.count > 0 && envctl_aws_model::is_mutating("", op.rsplit(':').next().unwrap_or(op))
        })
        .map(|(op, s)| (op.clone(), s.count))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_level_switch_is_one_registration_and_one_update() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    let (report, stats) = switch(
        &world,
        &compiled("pcp1", &["services.mod-users.log_level=warn"]),
    )
    .await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(stats.mutating_calls(), 2, "{:?}", mutating_ops(&stats));
    assert_eq!(stats.get("ecs", "RegisterTaskDefinition").count, 1);
    assert_eq!(stats.get("ecs", "UpdateService").count, 1);
    // Switching back reuses the first revision: no registration at all.
    let (report, stats) = switch(&world, &compiled("pcp1", &[])).await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(
        mutating_ops(&stats),
        vec![("ecs:UpdateService".to_string(), 1)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_type_change_is_update_broker_type_with_the_current_version() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    let (report, stats) = switch(
        &world,
        &compiled("pcp1", &["kafka.tenant.broker_type=kafka.m7g.2xlarge"]),
    )
    .await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(
        mutating_ops(&stats),
        vec![("kafka:UpdateBrokerType".to_string(), 1)]
    );
    // A stale CurrentVersion would have been rejected by the sandbox, as MSK does.
    assert_eq!(stats.get("kafka", "UpdateBrokerType").errors, 0);
    let kafka = report
        .results
        .iter()
        .find(|r| r.resource == "kafka/cluster/tenant")
        .unwrap();
    // Six minutes per broker, four brokers, polled every 30-60 s.
    let took = kafka.finished_secs - kafka.started_secs;
    assert!((24.0 * 60.0..27.0 * 60.0).contains(&took), "{took}");
    let planned = world
        .plan(&compiled("pcp1", &["kafka.tenant.broker_type=kafka.m7g.2xlarge"]).desired)
        .await;
    assert!(!planned.plan.has_changes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_to_kraft_replaces_the_cluster_and_repoints_services() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    let kraft = compiled(
        "pcp1",
        &[
            "kafka.tenant.metadata=kraft",
            "kafka.tenant.version=\"3.7.x\"",
        ],
    );
    let (report, stats) = switch(&world, &kraft).await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(stats.get("kafka", "DeleteCluster").count, 1);
    assert_eq!(stats.get("kafka", "CreateClusterV2").count, 1);
    // Every service that reads KAFKA_HOST gets a new revision on the new brokers.
    assert_eq!(stats.get("ecs", "RegisterTaskDefinition").count, 10);
    let planned = world.plan(&kraft.desired).await;
    assert!(
        !planned.plan.has_changes(),
        "{:#?}",
        planned.plan.changes().collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rds_class_change_waits_for_modifying_then_available() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    let bigger = compiled("pcp1", &["rds.writer.class=db.r6g.2xlarge"]);
    let (report, stats) = switch(&world, &bigger).await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(
        mutating_ops(&stats),
        vec![("rds:ModifyDBInstance".to_string(), 1)]
    );
    let writer = report
        .results
        .iter()
        .find(|r| r.resource == "rds/instance/pcp1-db")
        .unwrap();
    // The class change takes ten minutes in the profile; returning earlier would mean the
    // "still available right after ModifyDBInstance" quirk fooled the wait.
    assert!(
        writer.finished_secs - writer.started_secs >= 600.0,
        "{:?}",
        writer
    );
    let planned = world.plan(&bigger.desired).await;
    assert!(!planned.plan.has_changes());
}

fn faults(json: serde_json::Value) -> envctl_sandbox::FaultConfig {
    serde_json::from_value(json).expect("fault config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_and_server_errors_still_converge_without_duplicates() {
    let world = World::new().await;
    world.sandbox().set_faults(faults(serde_json::json!({
        "seed": 7,
        "errors": [
            {"service": "*", "operation": "*", "rate": 0.3, "kind": "throttling"},
            {"service": "*", "operation": "*", "rate": 0.1, "kind": "server_error"}
        ]
    })));
    let c = compiled("pcp1", &[]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    assert!(stats.throttled() > 0, "faults were injected");
    world.sandbox().set_faults(Default::default());
    // Nothing was created twice.
    let services = envctl::aws::ecs::list_services(&world.session.clients.ecs, "pcp1-pvt")
        .await
        .unwrap();
    assert_eq!(services.len(), 10);
    let dbs = envctl::aws::rds::describe_instances(&world.session.clients.rds)
        .await
        .unwrap();
    assert_eq!(dbs.len(), 2);
    let clusters = envctl::aws::kafka::list_clusters(&world.session.clients.kafka)
        .await
        .unwrap();
    assert_eq!(clusters.len(), 1);
    let planned = world.plan(&c.desired).await;
    assert!(
        !planned.plan.has_changes(),
        "{:#?}",
        planned.plan.changes().collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_deployment_is_reported_with_events_and_dependents_continue() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    world.sandbox().set_faults(faults(
        serde_json::json!({"failing_deployments": ["mod-users"]}),
    ));
    let after = compiled("pcp1", &["services.*.log_level=warn"]);
    let report = world.converge(&after).await;
    assert!(!report.succeeded());
    let failed: Vec<_> = report.failures().map(|r| r.resource.clone()).collect();
    assert_eq!(failed, vec!["ecs/service/mod-users"]);
    let reason = report
        .failures()
        .next()
        .unwrap()
        .outcome
        .detail()
        .to_string();
    assert!(
        reason.contains("failed") && reason.contains("service events"),
        "{reason}"
    );
    assert!(
        reason.contains("stopped tasks: "),
        "the stopped tasks say why: {reason}"
    );
    assert_eq!(
        report
            .results
            .iter()
            .filter(|r| r.outcome.is_success())
            .count(),
        9,
        "independent services continue"
    );
    // Fixed, and applied again: it converges.
    world.sandbox().set_faults(Default::default());
    let report = world.converge(&after).await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(
        report.results.len(),
        1,
        "only the rolled-back service is left to do"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_msk_operation_fails_the_cluster_and_skips_nothing_else() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    world.sandbox().set_faults(faults(
        serde_json::json!({"failing_msk_operations": [{"cluster": "pcp1-msk-tenant"}]}),
    ));
    let after = compiled("pcp1", &["kafka.tenant.broker_type=kafka.m7g.2xlarge"]);
    let report = world.converge(&after).await;
    let failed: Vec<_> = report
        .failures()
        .map(|r| (r.resource.clone(), r.outcome.detail().to_string()))
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].1.contains("UpdateBrokerType failed"),
        "{failed:?}"
    );
    world.sandbox().set_faults(Default::default());
    assert!(world.converge(&after).await.succeeded());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_apply_stops_launching_and_the_next_apply_converges() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    let planned = world.plan(&c.desired).await;
    let options = ApplyOptions::new("interrupted", world.state_dir());
    let cancel = options.cancel.clone();
    // SIGINT arrives while the data stores are being created (the handler sets this flag).
    let clock = world.session.clock.clone();
    let guard = clock.participant();
    let flagger = tokio::spawn(async move {
        let _guard = guard;
        clock.sleep(std::time::Duration::from_secs(300)).await;
        cancel.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let report = apply(&world.session, &c.desired, planned, &options)
        .await
        .expect("a valid plan");
    flagger.await.unwrap();
    assert!(report.interrupted);
    assert!(!report.succeeded());
    assert!(
        report
            .results
            .iter()
            .any(|r| r.outcome == envctl::apply::Outcome::Cancelled),
        "{}",
        report.render()
    );
    assert_eq!(
        world.sandbox().stats().get("ecs", "CreateService").count,
        0,
        "no service was launched after the interrupt"
    );
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    assert_eq!(
        stats.get("rds", "CreateDBInstance").count,
        1,
        "nothing duplicated"
    );
    assert_eq!(
        stats.get("kafka", "CreateClusterV2").count,
        1,
        "nothing duplicated"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_apply_is_converged_by_the_next_apply() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    let planned = world.plan(&c.desired).await;
    let options = ApplyOptions::new("killed", world.state_dir());
    // Kill: the apply future is dropped mid-flight, nothing runs to completion.
    let killed = tokio::time::timeout(
        std::time::Duration::from_millis(50),
        apply(&world.session, &c.desired, planned, &options),
    )
    .await;
    assert!(killed.is_err(), "the apply was still running when killed");
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("kafka", "CreateClusterV2").count, 1);
    assert_eq!(stats.get("rds", "CreateDBInstance").count, 1);
    let planned = world.plan(&c.desired).await;
    assert!(!planned.plan.has_changes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_envctl_does_not_own_are_never_touched() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    // Someone else's service with a name in the spec: strip our tags from mod-users.
    let ecs = &world.session.clients.ecs;
    let arn = "arn:aws:ecs:us-east-1:123456789012:service/pcp1-pvt/mod-users".to_string();
    ecs.untag_resource()
        .resource_arn(&arn)
        .tag_keys("envctl:env")
        .tag_keys("envctl:tool")
        .send()
        .await
        .expect("untag");
    world.sandbox().reset_stats();
    let more = compiled("pcp1", &["services.mod-users.count=5"]);
    let refused = plan(
        &world.session,
        &more.desired,
        &world.state_dir(),
        &DiffOptions::default(),
    )
    .await;
    assert!(
        matches!(&refused, Err(ConvergeError::Plan(envctl::plan::PlanError::Conflicts(c))) if c.len() == 1),
        "a name collision is an error"
    );
    let planned = world.plan_observed(&more.desired).await;
    assert_eq!(planned.plan.conflicts.len(), 1);
    assert!(planned.plan.action("ecs/service/mod-users").is_none());
    assert_eq!(world.mutating_calls(), 0);
    let destroy = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .unwrap();
    assert!(
        destroy.plan.action("ecs/service/mod-users").is_none(),
        "destroy never deletes it"
    );
    // pcp1's Managed Instances provider is the cluster's default strategy: the foreign
    // service may run on it, so it stays with the cluster (ECS refuses to detach a provider
    // in use), and the plan says why.
    assert!(
        destroy
            .plan
            .action("ecs/capacity-provider/envctl-pcp1-pvt")
            .is_none()
    );
    assert!(
        destroy
            .plan
            .conflicts
            .iter()
            .any(|c| c.resource == "ecs/capacity-provider/envctl-pcp1-pvt"
                && c.message.contains("mod-users")),
        "{:?}",
        destroy.plan.conflicts
    );
    let report = world.apply(&c.desired, destroy, "destroy").await;
    assert!(report.succeeded(), "{}", report.render());
    let left = envctl::aws::ecs::describe_services(ecs, "pcp1-pvt", &["mod-users".to_string()])
        .await
        .unwrap();
    assert_eq!(left.len(), 1, "the foreign service is still there");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopt_takes_a_foreign_service_over_on_purpose() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let ecs = &world.session.clients.ecs;
    let arn = "arn:aws:ecs:us-east-1:123456789012:service/pcp1-pvt/mod-users".to_string();
    ecs.untag_resource()
        .resource_arn(&arn)
        .tag_keys("envctl:env")
        .tag_keys("envctl:tool")
        .send()
        .await
        .expect("untag");
    let planned = world
        .plan_with(&c.desired, DiffOptions { adopt: true })
        .await;
    let action = planned
        .plan
        .action("ecs/service/mod-users")
        .expect("adopted, so planned");
    assert_eq!(action.kind, ActionKind::UpdateInPlace);
    let report = world.apply(&c.desired, planned, "adopt").await;
    assert!(report.succeeded(), "{}", report.render());
    let planned = world.plan(&c.desired).await;
    assert!(
        planned.plan.conflicts.is_empty() && !planned.plan.has_changes(),
        "owned again, in sync"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_parameter_change_reboots_the_instances_that_use_the_group() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    let more = compiled("pcp1", &["rds.writer.parameters.max_connections=3000"]);
    let (report, stats) = switch(&world, &more).await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(
        mutating_ops(&stats),
        vec![
            ("rds:ModifyDBParameterGroup".to_string(), 1),
            ("rds:RebootDBInstance".to_string(), 2)
        ]
    );
    let planned = world.plan(&more.desired).await;
    assert!(!planned.plan.has_changes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopt_takes_foreign_msk_and_rds_resources_over_too() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let clusters = envctl::aws::kafka::list_clusters(&world.session.clients.kafka)
        .await
        .unwrap();
    let msk = clusters
        .iter()
        .find(|k| k.name == "pcp1-msk-tenant")
        .unwrap();
    world
        .session
        .clients
        .kafka
        .untag_resource()
        .resource_arn(&msk.arn)
        .tag_keys("envctl:env")
        .send()
        .await
        .expect("untag msk");
    let db = envctl::aws::rds::describe_instance(&world.session.clients.rds, "pcp1-db-reader")
        .await
        .unwrap()
        .unwrap();
    world
        .session
        .clients
        .rds
        .remove_tags_from_resource()
        .resource_name(&db.arn)
        .tag_keys("envctl:env")
        .send()
        .await
        .expect("untag rds");
    let planned = world.plan_observed(&c.desired).await;
    assert_eq!(
        planned.plan.conflicts.len(),
        2,
        "{:?}",
        planned.plan.conflicts
    );
    let planned = world
        .plan_with(&c.desired, DiffOptions { adopt: true })
        .await;
    let report = world.apply(&c.desired, planned, "adopt").await;
    assert!(report.succeeded(), "{}", report.render());
    let planned = world.plan(&c.desired).await;
    assert!(
        planned.plan.conflicts.is_empty() && !planned.plan.has_changes(),
        "{:?}",
        planned.plan.conflicts
    );
}

/// Renaming an MSK cluster whose old name is its spec key: the old cluster's delete and the
/// new one's create once shared the key `kafka/cluster/tenant`, the executor ran only one
/// of them, and the old cluster leaked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renaming_an_msk_cluster_named_like_its_key_deletes_the_old_one() {
    let world = World::new().await;
    let before = compiled("pcp1", &["kafka.tenant.name=tenant"]);
    let report = world.converge(&before).await;
    assert!(report.succeeded(), "{}", report.render());
    let after = compiled("pcp1", &[]);
    world.sandbox().reset_stats();
    let report = world.converge(&after).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("kafka", "DeleteCluster").count, 1);
    assert_eq!(stats.get("kafka", "CreateClusterV2").count, 1);
    let names: Vec<String> = envctl::aws::kafka::list_clusters(&world.session.clients.kafka)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, vec!["pcp1-msk-tenant".to_string()], "no leak");
    let planned = world.plan(&after.desired).await;
    assert!(
        !planned.plan.has_changes(),
        "{:#?}",
        planned.plan.changes().collect::<Vec<_>>()
    );
}

fn saved_plan(desired: &DesiredState, plan: envctl::plan::Plan) -> SavedPlan {
    let saved = SavedPlan {
        envctl_saved_plan: envctl::plan::saved::SAVED_PLAN_VERSION,
        env_path: "envs/pcp1.yaml".into(),
        set: Vec::new(),
        adopt: false,
        copy: None,
        desired_hash: desired_hash(desired),
        plan,
    };
    // Through the file format, as `plan --out` and `apply FILE` do.
    serde_json::from_str(&serde_json::to_string(&saved).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_plan_runs_exactly_its_operations() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    let after = compiled(
        "pcp1",
        &[
            "services.mod-users.count=3",
            "services.mod-inventory-storage.log_level=warn",
        ],
    );
    let planned = world.plan(&after.desired).await;
    // (new revision, count, adopt, force, placement) of each service update.
    type Decided = (bool, Option<u32>, bool, bool, bool);
    let ops: Vec<(String, Option<Decided>)> = planned
        .plan
        .changes()
        .map(|a| {
            let update = match &a.op {
                Op::EcsServiceUpdate {
                    revision,
                    count,
                    adopt,
                    force,
                    placement,
                    ..
                } => Some((
                    revision.is_new(),
                    *count,
                    adopt.is_some(),
                    *force,
                    *placement,
                )),
                _ => None,
            };
            (a.id.to_string(), update)
        })
        .collect();
    assert_eq!(
        ops,
        vec![
            (
                "ecs/service/mod-inventory-storage".to_string(),
                Some((true, None, false, false, false))
            ),
            (
                "ecs/service/mod-users".to_string(),
                Some((false, Some(3), false, false, false))
            ),
        ]
    );
    let saved = saved_plan(&after.desired, planned.plan);
    world.sandbox().reset_stats();
    let planned = plan_saved(&world.session, &after.desired, saved, &world.state_dir())
        .await
        .expect("the live state still holds");
    let report = world.apply(&after.desired, planned, "saved").await;
    assert!(report.succeeded(), "{}", report.render());
    // A new revision and its deployment for one, a count for the other: nothing else.
    assert_eq!(
        mutating_ops(&world.sandbox().stats()),
        vec![
            ("ecs:RegisterTaskDefinition".to_string(), 1),
            ("ecs:UpdateService".to_string(), 2)
        ]
    );
    assert!(!world.plan(&after.desired).await.plan.has_changes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_plan_is_refused_when_edited_or_when_the_live_state_moved() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let after = compiled("pcp1", &["services.mod-users.count=3"]);
    let planned = world.plan(&after.desired).await;
    // Edited: the count in the operation no longer matches what the plan showed.
    let mut edited = planned.plan.clone();
    for a in &mut edited.actions {
        if let Op::EcsServiceUpdate { count, .. } = &mut a.op {
            *count = Some(30);
        }
    }
    let refused = plan_saved(
        &world.session,
        &after.desired,
        saved_plan(&after.desired, edited),
        &world.state_dir(),
    )
    .await;
    assert!(matches!(refused, Err(ConvergeError::LiveChanged)));
    // The live state moved on: another apply changed mod-users since the plan was saved.
    let saved = saved_plan(&after.desired, planned.plan);
    assert!(
        world
            .converge(&compiled("pcp1", &["services.mod-users.count=4"]))
            .await
            .succeeded()
    );
    let before = world.mutating_calls();
    let refused = plan_saved(&world.session, &after.desired, saved, &world.state_dir()).await;
    assert!(matches!(refused, Err(ConvergeError::LiveChanged)));
    assert_eq!(world.mutating_calls(), before, "nothing was sent");
    // A plan for another spec.
    let other = saved_plan(&c.desired, world.plan(&c.desired).await.plan);
    let refused = plan_saved(&world.session, &after.desired, other, &world.state_dir()).await;
    assert!(matches!(refused, Err(ConvergeError::SpecChanged)));
}

/// With no credentials anywhere in the default chain, the command says how to provide them;
/// the hint is chosen by the error's type (a CredentialsError under the SDK's dispatch
/// failure), not by the words of its message. Instance metadata is off and the endpoint is
/// loopback, so nothing leaves the machine.
#[test]
fn a_missing_credential_chain_gets_the_credentials_hint() {
    let mut test = crate::Test::new()
        .args([
            "plan",
            "envs/pcp1.yaml",
            "--endpoint-url",
            "http://127.0.0.1:9",
        ])
        .in_repo()
        .env("AWS_CONFIG_FILE", Some("/nonexistent/envctl-test-config"))
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            Some("/nonexistent/envctl-test-credentials"),
        )
        .env("AWS_EC2_METADATA_DISABLED", Some("true"));
    for name in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ] {
        test = test.env(name, None);
    }
    let out = test.run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("hint: envctl uses the AWS default credential chain"),
        "{}",
        out.stderr
    );
}

/// gc is a plan run by apply's executor: under throttling it still
/// deletes everything the tags select, each resource once, and waits until it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_under_throttling_deletes_everything_once() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    world.sandbox().set_faults(faults(serde_json::json!({
        "seed": 11,
        "errors": [
            {"service": "*", "operation": "*", "rate": 0.4, "kind": "throttling"}
        ]
    })));
    world.sandbox().reset_stats();
    let pcp1 = |tags: &envctl::model::live::Tags| {
        tags.get("envctl:env").map(String::as_str) == Some("pcp1")
    };
    let planned = plan_gc(&world.session, pcp1).await.expect("the inventory");
    // 10 services, their cluster and its Managed Instances provider, the MSK cluster, the
    // writer and its reader; then the MSK configuration, the DB parameter and subnet groups,
    // the writer's master secret, the two awslogs groups (the services' and the load
    // engines'), and 10 task-definition families.
    assert_eq!(planned.plan.changes().count(), 31);
    let report = apply(
        &world.session,
        &gc_desired("us-east-1"),
        planned,
        &ApplyOptions::new("gc", world.state_dir()),
    )
    .await
    .expect("a valid plan");
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    assert!(stats.throttled() > 0, "faults were injected");
    // Answered without an error or a throttle (an injected throttle counts in both
    // `faulted` and `throttled`; only throttles are injected here).
    let accepted = |service: &str, op: &str| {
        let s = stats.get(service, op);
        s.count - s.errors - s.throttled
    };
    assert_eq!(accepted("ecs", "DeleteService"), 10);
    assert_eq!(accepted("ecs", "DeleteCluster"), 1);
    assert_eq!(accepted("kafka", "DeleteCluster"), 1);
    assert_eq!(accepted("rds", "DeleteDBInstance"), 2);
    world.sandbox().set_faults(Default::default());
    let again = plan_gc(&world.session, pcp1).await.expect("the inventory");
    assert!(
        !again.plan.has_changes(),
        "{:#?}",
        again.plan.changes().collect::<Vec<_>>()
    );
}

/// A deployment that never completes: `--wait-timeout 5m` bounds the wait, the message
/// tells the real elapsed time (it once left out the first 40 s: "not done after 260s"),
/// and the wait says what it waits for at least once a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_deployment_times_out_at_the_wait_timeout_with_heartbeats() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    world.sandbox().set_faults(faults(serde_json::json!({
        "stuck": [{"service": "ecs", "resource": "mod-users", "state": "IN_PROGRESS"}]
    })));
    let after = compiled("pcp1", &["services.mod-users.log_level=warn"]);
    let planned = world.plan(&after.desired).await;
    let mut options = ApplyOptions::new("stuck", world.state_dir());
    options.deadlines = envctl::apply::Deadlines::all(std::time::Duration::from_secs(300));
    let events = std::sync::Arc::new(envctl::exec::RecordingProgress::new());
    options.events = events.clone();
    let report = apply(&world.session, &after.desired, planned, &options)
        .await
        .expect("a valid plan");
    let users = report
        .results
        .iter()
        .find(|r| r.resource == "ecs/service/mod-users")
        .expect("a result");
    let reason = users.outcome.detail();
    assert!(reason.contains("not done after 300s"), "{reason}");
    assert!(reason.contains("deadline 300s"), "{reason}");
    let beats: Vec<f64> = events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            envctl::exec::Event::Detail { resource, text }
                if resource == "ecs/service/mod-users" =>
            {
                let rest = text.strip_prefix("waiting for ")?;
                let secs = rest.split(": ").nth(1)?.split('s').next()?;
                secs.parse().ok()
            }
            _ => None,
        })
        .collect();
    assert!(!beats.is_empty());
    let mut last = 0.0;
    for t in &beats {
        assert!(t - last <= 60.0, "a gap before {t}: {beats:?}");
        last = *t;
    }
    assert!(300.0 - last <= 60.0, "{beats:?}");
}

/// The env's `waits.services` bounds each service's deployment: the stuck one times out at
/// its deadline, named in the message, while the others finish; `--wait-timeout` would win.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_services_wait_deadline_from_the_spec_times_out_only_the_stuck_service() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    world.sandbox().set_faults(faults(serde_json::json!({
        "stuck": [{"service": "ecs", "resource": "mod-users", "state": "IN_PROGRESS"}]
    })));
    let after = compiled(
        "pcp1",
        // Long enough for a rolling deployment on the Managed Instances provider: its new
        // tasks wait for instances launched beside the old ones (90 s each round) before
        // they start; pcp1's ten services all roll in about 4 minutes.
        &["services.defaults.log_level=warn", "waits.services=10m"],
    );
    let planned = world.plan(&after.desired).await;
    let mut options = ApplyOptions::new("waits", world.state_dir());
    options.deadlines = envctl::apply::Deadlines::from_waits(&after.loaded.spec.waits);
    let report = apply(&world.session, &after.desired, planned, &options)
        .await
        .expect("a valid plan");
    let services: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.resource.starts_with("ecs/service/"))
        .collect();
    assert!(services.len() > 1, "{}", report.render());
    for r in services {
        let detail = r.outcome.detail();
        if r.resource == "ecs/service/mod-users" {
            assert!(detail.contains("not done after 600s"), "{detail}");
            assert!(detail.contains("deadline 600s"), "{detail}");
        } else {
            assert!(detail.contains("completed"), "{}: {detail}", r.resource);
        }
    }
}

/// A service whose first deployment FAILED (nothing to roll back to) runs the desired
/// revision with no task: comparing content alone calls it in sync. It is drift: planned as
/// a forced redeployment with the events that explain it, and applied as one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_whose_deployment_failed_is_drift_and_apply_redeploys_it() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    world.sandbox().set_faults(faults(
        serde_json::json!({"failing_deployments": ["mod-users"]}),
    ));
    let report = world.converge(&c).await;
    assert!(!report.succeeded());
    for _ in 0..2 {
        let planned = world.plan(&c.desired).await;
        let changed: Vec<String> = planned.plan.changes().map(|a| a.id.to_string()).collect();
        assert_eq!(changed, vec!["ecs/service/mod-users"]);
        let action = planned
            .plan
            .action("ecs/service/mod-users")
            .expect("planned");
        assert_eq!(action.kind, ActionKind::RollingUpdate);
        assert!(matches!(
            action.op,
            Op::EcsServiceUpdate {
                force: true,
                revision: ServiceRevision::Running,
                ..
            }
        ));
        let reasons = action.reason_text().unwrap_or_default();
        assert!(
            reasons.contains("FAILED") && reasons.contains("stopped task: "),
            "{reasons}"
        );
    }
    world.sandbox().set_faults(Default::default());
    world.sandbox().reset_stats();
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(
        mutating_ops(&world.sandbox().stats()),
        vec![("ecs:UpdateService".to_string(), 1)]
    );
    assert!(!world.plan(&c.desired).await.plan.has_changes());
}

/// A count change alone starts no ECS deployment: the existing one stays COMPLETED while
/// the new tasks start, so apply waits for running == desired, not for COMPLETED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_only_update_waits_until_the_tasks_run() {
    let world = World::new().await;
    assert!(world.converge(&compiled("pcp1", &[])).await.succeeded());
    let after = compiled("pcp1", &["services.mod-users.count=4"]);
    let planned = world.plan(&after.desired).await;
    let mut options = ApplyOptions::new("scale", world.state_dir());
    // Look before the new tasks can have started (the sandbox takes 40 s to start one).
    options.polls.ecs_deployment_first = std::time::Duration::from_secs(1);
    let report = apply(&world.session, &after.desired, planned, &options)
        .await
        .expect("a valid plan");
    assert!(report.succeeded(), "{}", report.render());
    let out = world
        .session
        .clients
        .ecs
        .describe_services()
        .cluster(&after.desired.cluster.name)
        .services("mod-users")
        .send()
        .await
        .expect("describe services");
    let service = &out.services()[0];
    assert_eq!(service.desired_count(), 4);
    assert_eq!(service.running_count(), 4);
}

/// A standalone task (a load engine of a run that was killed) keeps DeleteCluster refused
/// (`ClusterContainsTasksException`): destroy deletes everything else and says which tasks
/// to stop; once they are stopping, the next destroy waits for them instead of failing,
/// as terraform-provider-aws's cluster delete does (docs/aws-behaviour.md, "A cluster with
/// tasks is not deleted: stopping ones are waited for").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_waits_for_stopping_tasks_and_names_running_ones() {
    let world = World::with(SandboxConfig {
        profile: envctl_sandbox::DurationProfile {
            ecs_task_stop: std::time::Duration::from_secs(120),
            ..envctl_sandbox::DurationProfile::default()
        },
        ..SandboxConfig::default()
    })
    .await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let ecs = &world.session.clients.ecs;
    let live = world.plan(&c.desired).await.live;
    let revision = live
        .services
        .values()
        .next()
        .expect("a service")
        .task_definition
        .clone();
    let started = ecs
        .run_task()
        .cluster(&c.desired.cluster.name)
        .task_definition(&revision)
        .launch_type(aws_sdk_ecs::types::LaunchType::Ec2)
        .network_configuration(
            aws_sdk_ecs::types::NetworkConfiguration::builder()
                .awsvpc_configuration(
                    aws_sdk_ecs::types::AwsVpcConfiguration::builder()
                        .subnets("subnet-0a1")
                        .build()
                        .expect("awsvpc"),
                )
                .build(),
        )
        .send()
        .await
        .expect("a standalone task");
    let task = started.tasks()[0].task_arn().expect("arn").to_string();

    let destroy = || async {
        let planned =
            envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
                .await
                .expect("plan");
        world.apply(&c.desired, planned, "destroy").await
    };
    let report = destroy().await;
    assert!(!report.succeeded());
    let text = report.render();
    assert!(
        text.contains("ClusterContainsTasksException") && text.contains("stop them"),
        "{text}"
    );
    ecs.stop_task()
        .cluster(&c.desired.cluster.name)
        .task(&task)
        .send()
        .await
        .expect("stop");
    let report = destroy().await;
    assert!(report.succeeded(), "{}", report.render());
}

/// On an account's first use of ECS, CreateCluster is refused until the service-linked role
/// it creates can be assumed, and a cluster just created is not found for a moment by the
/// calls that name it: the first apply waits through both instead of failing at its start
/// or halfway (docs/aws-behaviour.md, "A new account's first cluster, and a cluster just
/// created").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_apply_in_a_new_account_waits_for_the_role_and_the_cluster() {
    let world = World::with(SandboxConfig {
        profile: envctl_sandbox::DurationProfile {
            ecs_service_linked_role: std::time::Duration::from_secs(30),
            ecs_cluster_propagation: std::time::Duration::from_secs(60),
            ..envctl_sandbox::DurationProfile::default()
        },
        ..SandboxConfig::default()
    })
    .await;
    let c = compiled("pcp1", &[]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    let clusters = stats.get("ecs", "CreateCluster");
    let providers = stats.get("ecs", "CreateCapacityProvider");
    assert!(clusters.errors >= 1, "{clusters:?}");
    assert!(providers.errors >= 1, "{providers:?}");
}
