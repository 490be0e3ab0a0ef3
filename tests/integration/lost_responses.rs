//! Creates whose answer was lost: the sandbox executes the call and then drops its response
//! (`lost_responses`), as a connection closed after AWS acted would. envctl's retry, or the
//! next apply, must find what the first attempt made instead of failing on "already exists"
//! or making it twice; a same-named resource that is not the env's still fails, named.
use aws_sdk_ecs::types::TaskDefinitionStatus;
use envctl::converge::{ApplyOptions, apply, plan};
use envctl::model::DesiredState;
use envctl::plan::DiffOptions;
use envctl_sandbox::FaultConfig;

use crate::apply::{World, compiled};
use crate::ownership::{Foreign, assert_untouched, create_foreign};

fn faults(json: serde_json::Value) -> FaultConfig {
    serde_json::from_value(json).expect("fault config")
}

/// Every create operation envctl sends, with as many lost answers as pcp1 sends calls of it.
const LOST: &[(&str, u32)] = &[
    ("CreateCluster", 1),
    ("RegisterTaskDefinition", 10),
    ("CreateService", 10),
    ("CreateConfiguration", 1),
    ("CreateClusterV2", 1),
    ("CreateDBParameterGroup", 1),
    ("CreateDBSubnetGroup", 1),
    ("CreateDBInstance", 1),
    ("CreateDBInstanceReadReplica", 1),
];

/// The ACTIVE revisions of each service's family.
async fn revisions_per_family(world: &World, desired: &DesiredState) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for service in desired.services.values() {
        let family = &service.task_definition.family;
        let arns = envctl::aws::ecs::list_task_definitions(
            &world.session.clients.ecs,
            family,
            TaskDefinitionStatus::Active,
        )
        .await
        .expect("list revisions");
        out.push((family.clone(), arns.len()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_create_whose_answer_was_lost_is_found_not_repeated() {
    let world = World::new().await;
    let lost: Vec<serde_json::Value> = LOST
        .iter()
        .map(|(op, times)| serde_json::json!({"operation": op, "times": times}))
        .collect();
    world
        .sandbox()
        .set_faults(faults(serde_json::json!({ "lost_responses": lost })));
    let c = compiled("pcp1", &[]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    for (op, times) in LOST {
        let service = if op.contains("DB") {
            "rds"
        } else if *op == "CreateConfiguration" || *op == "CreateClusterV2" {
            "kafka"
        } else {
            "ecs"
        };
        assert_eq!(
            stats.get(service, op).faulted,
            u64::from(*times),
            "{op}: every planned answer was lost"
        );
    }
    world.sandbox().set_faults(FaultConfig::default());

    // Exactly one of each.
    let clients = &world.session.clients;
    let services = envctl::aws::ecs::list_services(&clients.ecs, "pcp1-pvt")
        .await
        .expect("services");
    assert_eq!(services.len(), 10);
    for (family, n) in revisions_per_family(&world, &c.desired).await {
        assert_eq!(n, 1, "{family}: one revision, not one per attempt");
    }
    let dbs = envctl::aws::rds::describe_instances(&clients.rds)
        .await
        .expect("DBs");
    assert_eq!(dbs.len(), 2);
    let clusters = envctl::aws::kafka::list_clusters(&clients.kafka)
        .await
        .expect("MSK");
    assert_eq!(clusters.len(), 1);
    let configurations = envctl::aws::kafka::list_configurations(&clients.kafka)
        .await
        .expect("configurations");
    assert_eq!(configurations.len(), 1, "{configurations:?}");
    assert_eq!(configurations[0].2, 1, "one revision of the configuration");

    let planned = world.plan(&c.desired).await;
    assert!(
        !planned.plan.has_changes(),
        "{:#?}",
        planned.plan.changes().collect::<Vec<_>>()
    );
}

/// Three applies that each register the revisions and then fail at CreateService, each
/// from a fresh checkout (no observe cache, as after a crash), then one that succeeds:
/// one revision per family, not four.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applies_that_died_after_registering_leave_one_revision_per_family() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    world.sandbox().set_faults(faults(serde_json::json!({
        "errors": [{"service": "ecs", "operation": "CreateService", "rate": 1.0, "kind": "server_error"}]
    })));
    let run = |n: usize| {
        let session = &world.session;
        let desired = &c.desired;
        async move {
            let state = tempfile::tempdir().expect("state dir");
            let planned = plan(session, desired, state.path(), &DiffOptions::default())
                .await
                .expect("plan");
            apply(
                session,
                desired,
                planned,
                &ApplyOptions::new(format!("run-{n}"), state.path()),
            )
            .await
            .expect("a valid plan")
        }
    };
    for n in 0..3 {
        let report = run(n).await;
        assert!(!report.succeeded(), "CreateService always fails");
    }
    world.sandbox().set_faults(FaultConfig::default());
    let report = run(3).await;
    assert!(report.succeeded(), "{}", report.render());
    for (family, n) in revisions_per_family(&world, &c.desired).await {
        assert_eq!(n, 1, "{family}");
    }
    let registered = world
        .sandbox()
        .stats()
        .get("ecs", "RegisterTaskDefinition")
        .count;
    assert_eq!(
        registered, 10,
        "one registration per service over four applies"
    );
}

/// A plan made before someone else created a same-named DB instance or MSK cluster: the
/// create meets "already exists", and the resource is not the env's, so the action fails
/// naming it, and the foreign resource is neither used nor tagged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_resource_met_at_create_fails_naming_it_and_is_left_alone() {
    for (kind, resource, what) in [
        (
            Foreign::DbInstance,
            "rds/instance/pcp1-db",
            "DB instance pcp1-db",
        ),
        (
            Foreign::MskCluster,
            "kafka/cluster/tenant",
            "MSK cluster pcp1-msk-tenant",
        ),
    ] {
        let world = World::new().await;
        let c = compiled("pcp1", &[]);
        let planned = world.plan(&c.desired).await;
        create_foreign(&world, kind).await;
        let report = world.apply(&c.desired, planned, "stale-plan").await;
        let failure = report
            .failures()
            .find(|r| r.resource == resource)
            .unwrap_or_else(|| panic!("{kind:?}: {}", report.render()));
        let detail = failure.outcome.detail().to_string();
        assert!(
            detail.contains(what) && detail.contains("not envctl's"),
            "{kind:?}: {detail}"
        );
        assert_untouched(&world, kind).await;
    }
}

/// The lock's PutObject `If-None-Match: *` takes effect and its answer is lost; the SDK's
/// retry sends the same body and meets the lease the first attempt wrote (412). envctl reads
/// it, sees its own run, host and process, and holds it: before, it reported the lock held
/// by "another run", itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_put_whose_answer_was_lost_meets_its_own_lease_and_holds_it() {
    use envctl::lock::{Holder, LeaseStore, S3Store};
    let sandbox = envctl_sandbox::Sandbox::start(envctl_sandbox::SandboxConfig::default())
        .await
        .expect("sandbox");
    // The SDK's own retries on, as against AWS: the retry is what meets the first write.
    let clients = envctl::aws::Clients::connect(&envctl::aws::Connection {
        region: "us-east-1".into(),
        endpoint_url: Some(sandbox.endpoint_url()),
        sandbox: true,
        ..envctl::aws::Connection::default()
    })
    .await;
    clients
        .s3
        .create_bucket()
        .bucket("locks")
        .send()
        .await
        .expect("bucket");
    sandbox.set_faults(faults(serde_json::json!({
        "lost_responses": [{"service": "s3", "operation": "PutObject", "times": 1}]
    })));
    let store = S3Store::new(clients.s3.clone(), "locks", "envs/");
    let holder = Holder::current("run-lost-answer");
    let held = store
        .acquire("pcp1", &holder, std::time::Duration::from_secs(60))
        .await
        .expect("its own lease, not another run's");
    assert_eq!(held.lease().run_id, "run-lost-answer");
    assert_eq!(sandbox.stats().get("s3", "PutObject").faulted, 1);
    held.release().await.expect("released");
    assert!(store.current("pcp1").await.expect("read").is_none());
}
