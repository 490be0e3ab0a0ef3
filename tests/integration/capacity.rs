//! EC2 capacity (issue 13) against the sandbox on a simulated clock: a Managed Instances
//! provider created, used and deleted; placement failures reported within their bound;
//! host-mode services rolling on full instances.
use std::collections::BTreeMap;

use envctl::apply::ApplyReport;
use envctl::compile::{Compiled, compile_env};
use envctl::converge::{ApplyOptions, apply, plan_destroy};
use envctl::model::tag;
use envctl::plan::{ActionKind, Op, ServiceRevision};
use envctl::spec::Loader;

use crate::apply::{World, compiled, owned_resources};
use crate::repo;

/// qcp1 as shipped: on an ECS Managed Instances provider envctl owns.
fn managed(sets: &[&str]) -> Compiled {
    compiled("qcp1", sets)
}

/// pcp1 on container instances registered by something else (`instances: 10`).
fn on_instances(sets: &[&str]) -> Compiled {
    let mut loader = Loader::new();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let path = repo().join("tests/fixtures/pcp1-instances.yaml");
    match compile_env(&mut loader, &path, &sets) {
        Some(c) => c,
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    }
}

/// Creates the env's cluster tagged as the env's (so apply adopts nothing and creates
/// nothing there) and registers `instances` (zone, CPU units, MiB) in it, as an Auto
/// Scaling group outside envctl would.
async fn cluster_with_instances(world: &World, c: &Compiled, instances: &[(&str, u32, u32)]) {
    let tags: BTreeMap<String, String> = BTreeMap::from([
        (tag::TOOL.to_string(), tag::TOOL_VALUE.to_string()),
        (tag::ENV.to_string(), c.desired.env.clone()),
    ]);
    envctl::aws::ecs::create_cluster(&world.session.clients.ecs, &c.desired.cluster.name, &tags)
        .await
        .expect("cluster");
    if !instances.is_empty() {
        world
            .sandbox()
            .declare_instances(&c.desired.cluster.name, instances);
    }
}

fn result<'a>(report: &'a ApplyReport, resource: &str) -> &'a envctl::apply::ResourceResult {
    report
        .results
        .iter()
        .find(|r| r.resource == resource)
        .unwrap_or_else(|| panic!("no result for {resource}: {}", report.render()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_instances_are_created_used_and_deleted_with_the_env() {
    let world = World::new().await;
    let c = managed(&[]);
    let provider = "ecs/capacity-provider/envctl-qcp1-pvt";
    let planned = world.plan(&c.desired).await;
    let estimate = planned.plan.estimate_secs;
    let action = planned
        .plan
        .action(provider)
        .expect("the provider is planned");
    assert_eq!(action.kind, ActionKind::Create);
    // Services wait for the provider, which waits for the cluster.
    assert!(action.deps.iter().any(|d| d == "ecs/cluster/qcp1-pvt"));
    let service = planned
        .plan
        .action("ecs/service/mod-users-b")
        .expect("a service");
    assert!(
        service.deps.iter().any(|d| d == provider),
        "{:?}",
        service.deps
    );

    let report = world.apply(&c.desired, planned, "managed").await;
    assert!(report.succeeded(), "{}", report.render());
    let users = result(&report, "ecs/service/mod-users-b");
    let capacity_calls: Vec<(String, u64)> = [
        "CreateCapacityProvider",
        "DescribeCapacityProviders",
        "PutClusterCapacityProviders",
        "DescribeServices",
    ]
    .iter()
    .map(|op| (op.to_string(), world.sandbox().stats().get("ecs", op).count))
    .collect();
    eprintln!(
        "fresh qcp1 with managed instances: {:.0} simulated s, plan estimate {estimate:.0} s; mod-users-b create took {:.0} s; calls {capacity_calls:?}",
        report.elapsed_secs,
        users.finished_secs - users.started_secs
    );
    assert!(
        report.elapsed_secs <= estimate * 1.1,
        "{} vs {estimate}",
        report.elapsed_secs
    );
    // The provider belongs to the cluster from CreateCapacityProvider: no association call
    // (ECS refuses it, terraform-provider-aws#44783), and the services were created only
    // once it was ACTIVE (after PROVISIONING, terraform-provider-aws#45693).
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("ecs", "PutClusterCapacityProviders").count, 0);
    assert_eq!(stats.get("ecs", "CreateCapacityProvider").count, 1);
    let provider_ready = result(&report, provider).finished_secs;
    assert!(
        provider_ready >= 30.0,
        "PROVISIONING lasts 30 s: {provider_ready}"
    );
    assert!(users.started_secs >= provider_ready);

    let ecs = &world.session.clients.ecs;
    // The provider launched instances for the services' tasks, and they hold them all: 53
    // awsvpc tasks at three network interfaces per m6i.2xlarge take 18, within qcp1's 20.
    let instances = envctl::aws::ecs::cluster_capacity(ecs, "qcp1-pvt")
        .await
        .expect("instances");
    assert_eq!(instances.len(), 18, "{instances:?}");
    assert!(instances.iter().all(|i| i.registered_cpu == 8192));
    let names: Vec<String> = c.desired.services.keys().cloned().collect();
    let mut running = 0;
    for chunk in names.chunks(10) {
        let services = envctl::aws::ecs::describe_services(ecs, "qcp1-pvt", chunk)
            .await
            .expect("services");
        for s in services {
            assert_eq!(s.running_count, s.desired_count, "{}", s.name);
            let primary = s.deployments.iter().find(|d| d.status == "PRIMARY");
            assert_eq!(primary.map(|d| d.rollout_state.as_str()), Some("COMPLETED"));
            running += s.running_count;
        }
    }
    assert_eq!(
        running,
        c.desired
            .services
            .values()
            .map(|s| s.desired_count)
            .sum::<u32>()
    );
    // awsvpc: CreateService carried the env's subnets and security groups, no public IP,
    // and the strategy on the provider instead of a launch type.
    let raw = ecs
        .describe_services()
        .cluster("qcp1-pvt")
        .services("mod-users-b")
        .send()
        .await
        .expect("describe");
    let s = &raw.services()[0];
    let vpc = s
        .network_configuration()
        .and_then(|n| n.awsvpc_configuration())
        .expect("networkConfiguration recorded");
    assert_eq!(vpc.subnets(), c.desired.subnets.as_slice());
    assert_eq!(vpc.security_groups(), c.desired.security_groups.as_slice());
    assert_eq!(vpc.assign_public_ip().map(|a| a.as_str()), Some("DISABLED"));
    assert_eq!(
        s.capacity_provider_strategy()
            .iter()
            .map(|i| i.capacity_provider())
            .collect::<Vec<_>>(),
        vec!["envctl-qcp1-pvt"]
    );

    // Converged: nothing to do, even for a checkout that reads every task definition back
    // from ECS (no observe cache): ECS stored the awsvpc host ports as the container ports,
    // and envctl sent them so (before, `hostPort: 0` made every service a rolling update).
    assert!(!world.plan(&c.desired).await.plan.has_changes());
    let cache = envctl::account::observe::ObserveCache::path(&world.state_dir(), &c.desired.env);
    std::fs::remove_file(&cache).expect("the observe cache exists");
    let fresh = world.plan(&c.desired).await;
    assert!(
        !fresh.plan.has_changes(),
        "{:#?}",
        fresh.plan.changes().collect::<Vec<_>>()
    );

    let planned = plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("plan");
    let delete = planned
        .plan
        .action(provider)
        .expect("the provider is deleted");
    assert!(delete.deps.iter().any(|d| d == "ecs/service/mod-users-b"));
    let cluster = planned
        .plan
        .action("ecs/cluster/qcp1-pvt")
        .expect("cluster");
    assert!(cluster.deps.iter().any(|d| d == provider));
    let report = world.apply(&c.desired, planned, "destroy").await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(owned_resources(&world, &c).await, Vec::<String>::new());
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("ecs", "DeleteCapacityProvider").count, 1);
    // No detach (it was never attached); DeleteCluster only once the provider is INACTIVE,
    // so it was not refused (ClusterContainsCapacityProviderException).
    assert_eq!(stats.get("ecs", "PutClusterCapacityProviders").count, 0);
    assert_eq!(stats.get("ecs", "DeleteCluster").count, 1);
    let destroy = result(&report, provider);
    eprintln!(
        "qcp1 destroy: {:.0} simulated s; the provider DEPROVISIONING took {:.0} s",
        report.elapsed_secs,
        destroy.finished_secs - destroy.started_secs
    );
}

/// Editing `managed_instances.instance_types` of an applied env is planned as an in-place
/// update of the owned provider (not "no change"), applied with UpdateCapacityProvider,
/// visible in DescribeCapacityProviders, and converged afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_instance_types_update_the_managed_provider_in_place() {
    let world = World::new().await;
    let report = world.converge(&managed(&[])).await;
    assert!(report.succeeded(), "{}", report.render());
    let provider = "ecs/capacity-provider/envctl-qcp1-pvt";
    let c = managed(&["ecs.capacity.managed_instances.instance_types=[m6i.4xlarge, m6i.2xlarge]"]);
    let planned = world.plan(&c.desired).await;
    let action = planned
        .plan
        .action(provider)
        .expect("the provider is planned");
    assert_eq!(action.kind, ActionKind::UpdateInPlace);
    let changes: Vec<(&str, Option<&str>, Option<&str>)> = action
        .changes
        .iter()
        .map(|c| (c.field.as_str(), c.old.as_deref(), c.new.as_deref()))
        .collect();
    assert_eq!(
        changes,
        vec![(
            "instance_types",
            Some("m6i.2xlarge"),
            Some("m6i.2xlarge,m6i.4xlarge")
        )]
    );
    assert_eq!(
        planned.plan.changes().count(),
        1,
        "{:#?}",
        planned.plan.actions
    );

    let report = world.apply(&c.desired, planned, "update").await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(result(&report, provider).action, ActionKind::UpdateInPlace);
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("ecs", "UpdateCapacityProvider").count, 1);
    let described = world
        .session
        .clients
        .ecs
        .describe_capacity_providers()
        .capacity_providers("envctl-qcp1-pvt")
        .cluster("qcp1-pvt")
        .send()
        .await
        .expect("describe");
    let types = described.capacity_providers()[0]
        .managed_instances_provider()
        .and_then(|m| m.instance_launch_template())
        .and_then(|t| t.instance_requirements())
        .map(|r| r.allowed_instance_types().to_vec());
    assert_eq!(
        types,
        Some(vec!["m6i.4xlarge".to_string(), "m6i.2xlarge".to_string()])
    );
    assert!(!world.plan(&c.desired).await.plan.has_changes());
}

/// `instances: 10` on a cluster where none registers: apply waits for them before it
/// creates any service, says how many are there while it waits, and fails that wait at the
/// env's `waits.capacity` (2m here, 10m by default) with what it saw; no service is created,
/// so nothing is left half-deployed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_instances_fails_the_capacity_wait_and_creates_no_service() {
    let world = World::new().await;
    let c = on_instances(&["waits.capacity=2m"]);
    cluster_with_instances(&world, &c, &[]).await;
    let planned = world.plan(&c.desired).await;
    let wait = planned
        .plan
        .actions
        .iter()
        .find(|a| a.id == "ecs/container-instances/pcp1-pvt")
        .expect("the capacity wait is planned");
    let Op::EcsCapacityAwait {
        instances,
        services,
        ..
    } = &wait.op
    else {
        panic!("{:?}", wait.op)
    };
    assert_eq!(*instances, 10);
    assert_eq!(services.len(), c.desired.services.len());
    for a in planned.plan.actions.iter().filter(|a| a.id.is_service()) {
        assert!(a.deps.contains(&wait.id), "{} waits for it", a.id);
    }
    let mut options = ApplyOptions::new("capacity-wait", world.state_dir());
    options.deadlines = envctl::apply::Deadlines::from_waits(&c.loaded.spec.waits);
    let report = apply(&world.session, &c.desired, planned, &options)
        .await
        .expect("a valid plan");
    assert!(!report.succeeded());
    let waited = result(&report, "ecs/container-instances/pcp1-pvt");
    let reason = waited.outcome.detail();
    assert!(
        reason.contains("0 of 10 ACTIVE; 0 of 21 new tasks fit")
            && reason.contains("ECS_CLUSTER=pcp1-pvt"),
        "{reason}"
    );
    let took = waited.finished_secs - waited.started_secs;
    let log = world.sandbox().request_log();
    let looks = log
        .iter()
        .filter(|r| r.operation == "ListContainerInstances")
        .count();
    eprintln!(
        "no instances: the capacity wait failed after {took:.0} simulated s, {looks} ListContainerInstances"
    );
    // The 2-minute bound and at most one poll of slack.
    assert!((120.0..=150.0).contains(&took), "{took}");
    assert!(looks >= 3, "{looks}");
    assert!(
        !log.iter().any(|r| r.operation == "CreateService"),
        "no service is created without capacity"
    );
}

/// The env's `waits.placement` bounds how long a service may report ECS's "unable to place a
/// task" event: with 1m, a service too big for the registered instances fails two minutes
/// earlier than with the 3-minute default, with ECS's event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_placement_bound_comes_from_the_envs_waits() {
    let world = World::new().await;
    let c = on_instances(&[
        "waits.placement=1m",
        "services.mod-lists.memory.hard=20480",
        "services.mod-lists.memory.soft=20000",
    ]);
    let zones = ["us-east-1a", "us-east-1b"];
    let fleet: Vec<(&str, u32, u32)> = (0..10).map(|i| (zones[i % 2], 8192, 16384)).collect();
    cluster_with_instances(&world, &c, &fleet).await;
    let planned = world.plan(&c.desired).await;
    let mut options = ApplyOptions::new("placement-bound", world.state_dir());
    options.deadlines = envctl::apply::Deadlines::from_waits(&c.loaded.spec.waits);
    let report = apply(&world.session, &c.desired, planned, &options)
        .await
        .expect("a valid plan");
    assert!(!report.succeeded());
    // The capacity wait saw the shortfall coming and went on: room is ECS's to judge.
    let waited = result(&report, "ecs/container-instances/pcp1-pvt");
    assert!(
        waited
            .outcome
            .detail()
            .contains("10 of 10 ACTIVE; 19 of 21 new tasks fit (mod-lists: insufficient memory)"),
        "{}",
        waited.outcome.detail()
    );
    let lists = result(&report, "ecs/service/mod-lists");
    let reason = lists.outcome.detail();
    assert!(reason.contains("was unable to place a task"), "{reason}");
    let took = lists.finished_secs - lists.started_secs;
    // The first look at 40 s, the 1-minute bound, one 15 s poll of slack.
    assert!((100.0..=120.0).contains(&took), "{took}");
}

/// One service too big for the instances fails with ECS's reason (memory) while the others
/// are placed and complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_does_not_fit_by_memory_fails_fast_and_the_others_complete() {
    let world = World::new().await;
    let c = on_instances(&[
        "services.mod-lists.memory.hard=20480",
        "services.mod-lists.memory.soft=20000",
    ]);
    let zones = ["us-east-1a", "us-east-1b"];
    let fleet: Vec<(&str, u32, u32)> = (0..10).map(|i| (zones[i % 2], 8192, 16384)).collect();
    cluster_with_instances(&world, &c, &fleet).await;
    let report = world.converge(&c).await;
    let lists = result(&report, "ecs/service/mod-lists");
    let reason = lists.outcome.detail();
    assert!(
        reason.contains("has insufficient memory available"),
        "{reason}"
    );
    let took = lists.finished_secs - lists.started_secs;
    eprintln!("memory: mod-lists failed {took:.0} simulated s after its create started");
    assert!(took <= 240.0, "{took}");
    let others: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.resource.starts_with("ecs/service/") && r.resource != "ecs/service/mod-lists")
        .collect();
    assert!(!others.is_empty());
    for r in others {
        assert!(
            r.outcome.is_success(),
            "{}: {}",
            r.resource,
            r.outcome.detail()
        );
    }
}

/// OMB workers in host mode take port 8080 on each of the 5 instances: with ECS's default
/// 100/200 the new tasks have nowhere to go. The deployment configuration envctl derives
/// (50/100: old tasks stop first) lets the rolling update complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_mode_workers_roll_on_full_instances() {
    let world = World::new().await;
    let c = compiled("kafka-omb", &[]);
    let zones = ["us-east-1a", "us-east-1b"];
    let fleet: Vec<(&str, u32, u32)> = (0..5).map(|i| (zones[i % 2], 16384, 32256)).collect();
    cluster_with_instances(&world, &c, &fleet).await;
    assert!(world.converge(&c).await.succeeded());
    let after = compiled("kafka-omb", &["services.omb-worker.version=0.0.2"]);
    let planned = world.plan(&after.desired).await;
    let mut options = ApplyOptions::new("roll", world.state_dir());
    options.deadlines = envctl::apply::Deadlines::default();
    let report = apply(&world.session, &after.desired, planned, &options)
        .await
        .expect("a valid plan");
    assert!(report.succeeded(), "{}", report.render());
    let raw = world
        .session
        .clients
        .ecs
        .describe_services()
        .cluster("kafka-omb")
        .services("omb-worker")
        .send()
        .await
        .expect("describe");
    let dc = raw.services()[0]
        .deployment_configuration()
        .expect("deployment configuration");
    assert_eq!(
        (dc.minimum_healthy_percent(), dc.maximum_percent()),
        (Some(50), Some(100))
    );
}

/// `validate`'s capacity check and the sandbox place with the same model: OMB workers (host
/// mode, port 8080) on 3 instances instead of 5 are predicted to leave 2 of 5 tasks
/// unplaced for a port, and the sandbox reports ECS's port event for them and fails the
/// service; nothing else is short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shortage_validate_predicts_is_the_one_the_sandbox_observes() {
    let c = compiled("kafka-omb", &[]);
    let mut spec = c.loaded.spec.clone();
    spec.ecs.capacity.instances.value = 3;
    let predicted =
        envctl::spec::lint::check_capacity(&spec, &envctl::model::task_needs(&c.desired));
    let diag = predicted
        .iter()
        .find(|d| d.code == "capacity-exceeded")
        .expect("a predicted shortage");
    assert!(
        diag.message
            .starts_with("2 of 5 tasks cannot be placed on 3 x c6i.4xlarge (omb-worker)"),
        "{}",
        diag.message
    );
    let port = "is already using a port required by your task";
    assert!(
        diag.hint.as_deref().is_some_and(|h| h.contains(port)),
        "{:?}",
        diag.hint
    );

    let world = World::new().await;
    let zones = ["us-east-1a", "us-east-1b"];
    let fleet: Vec<(&str, u32, u32)> = (0..3).map(|i| (zones[i % 2], 16384, 32256)).collect();
    cluster_with_instances(&world, &c, &fleet).await;
    // The env as applied says 3 too: the capacity wait sees them all and goes on, and ECS
    // judges the room.
    let mut c = c;
    c.desired.cluster.instances = 3;
    let report = world.converge(&c).await;
    let workers = result(&report, "ecs/service/omb-worker");
    let reason = workers.outcome.detail();
    assert!(reason.contains(port), "{reason}");
    let failed: Vec<&str> = report
        .results
        .iter()
        .filter(|r| !r.outcome.is_success())
        .map(|r| r.resource.as_str())
        .collect();
    assert_eq!(failed, vec!["ecs/service/omb-worker"]);
}

/// `instances: N` on a fresh apply: the group's instances (declared before the cluster
/// exists, as an Auto Scaling group whose agents name it) register once envctl has created
/// the cluster; apply waits for them (the planned `ecs/container-instances` action) and only
/// then creates the services.
/// Destroy then deletes everything of the env but the cluster, which ECS refuses to delete
/// while instances that are not envctl's are registered, and says what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_registering_after_the_cluster_is_created_get_the_services_and_keep_the_cluster()
{
    let world = World::new().await;
    let c = on_instances(&[]);
    world.register_fleet(&c.desired);
    let ecs = &world.session.clients.ecs;
    assert!(
        envctl::aws::ecs::cluster_capacity(ecs, &c.desired.cluster.name)
            .await
            .is_err(),
        "no cluster yet, so nothing registered"
    );

    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let instances = envctl::aws::ecs::cluster_capacity(ecs, &c.desired.cluster.name)
        .await
        .expect("instances");
    assert_eq!(instances.len(), 10);
    // The instances registered 90 s after the cluster; apply waited for them before it
    // created any service.
    let cluster_done = result(&report, "ecs/cluster/pcp1-pvt").finished_secs;
    let registered = result(&report, "ecs/container-instances/pcp1-pvt");
    let looks = world
        .sandbox()
        .request_log()
        .iter()
        .filter(|r| r.operation == "ListContainerInstances")
        .count();
    eprintln!(
        "instances registering after the cluster: the wait took {:.0} simulated s, {looks} ListContainerInstances; apply {:.0} s",
        registered.finished_secs - registered.started_secs,
        report.elapsed_secs
    );
    assert!(
        registered.finished_secs >= cluster_done + 90.0,
        "instances seen at {:.0} s, the cluster done at {cluster_done:.0} s",
        registered.finished_secs
    );
    assert!(
        registered
            .outcome
            .detail()
            .contains("10 of 10 ACTIVE; 21 of 21 new tasks fit"),
        "{}",
        registered.outcome.detail()
    );
    for r in report
        .results
        .iter()
        .filter(|r| r.resource.starts_with("ecs/service/"))
    {
        assert!(
            r.started_secs >= registered.finished_secs,
            "{} started at {:.0} s, before the instances ({:.0} s)",
            r.resource,
            r.started_secs,
            registered.finished_secs
        );
    }

    let planned = plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("plan");
    let report = world.apply(&c.desired, planned, "destroy").await;
    assert!(!report.succeeded(), "{}", report.render());
    let cluster = result(&report, "ecs/cluster/pcp1-pvt");
    let text = format!("{:?}", cluster.outcome);
    assert!(
        text.contains("still has container instances registered")
            && text.contains("scale the group that launched them to zero"),
        "{text}"
    );
    assert_eq!(
        owned_resources(&world, &c).await,
        vec!["ecs/cluster/pcp1-pvt".to_string()],
        "everything else is deleted"
    );
}

/// A provider an interrupted run left PROVISIONING is found by the next plan (described with
/// its cluster), waited for until ACTIVE and never created a second time; the services are
/// created once it is ACTIVE (terraform-provider-aws#45693).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_left_provisioning_is_waited_for_not_created_again() {
    let world = World::new().await;
    let c = managed(&[]);
    cluster_with_instances(&world, &c, &[]).await;
    let tags: BTreeMap<String, String> = BTreeMap::from([
        (tag::TOOL.to_string(), tag::TOOL_VALUE.to_string()),
        (tag::ENV.to_string(), c.desired.env.clone()),
    ]);
    let settings = c
        .desired
        .managed_instances_settings()
        .expect("qcp1 is on Managed Instances");
    let request = envctl::aws::ecs::ManagedInstancesProvider {
        name: "envctl-qcp1-pvt",
        cluster: "qcp1-pvt",
        settings: &settings,
        tags: &tags,
    };
    envctl::aws::ecs::create_managed_instances_provider(&world.session.clients.ecs, &request)
        .await
        .expect("the earlier run's create");
    let provider = "ecs/capacity-provider/envctl-qcp1-pvt";
    let planned = world.plan(&c.desired).await;
    let action = planned
        .plan
        .action(provider)
        .expect("the provider is planned");
    assert_eq!(action.kind, ActionKind::UpdateInPlace);
    let changes: Vec<(&str, Option<&str>, Option<&str>)> = action
        .changes
        .iter()
        .map(|c| (c.field.as_str(), c.old.as_deref(), c.new.as_deref()))
        .collect();
    assert_eq!(
        changes,
        vec![("status", Some("PROVISIONING"), Some("ACTIVE"))]
    );
    let report = world.apply(&c.desired, planned, "resume").await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("ecs", "CreateCapacityProvider").count, 1);
    assert!(!world.plan(&c.desired).await.plan.has_changes());
}

/// Issue 22: the plan observes and diffs everything apply sends. Changing the env's
/// `network.security_groups` plans every awsvpc service (a new deployment: only new tasks
/// take the new groups) beside the provider's update, with the reason; apply sends them,
/// DescribeServices shows the new groups on every service, and the next plan is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_security_groups_are_planned_and_applied_to_every_awsvpc_service() {
    let world = World::new().await;
    let report = world.converge(&managed(&[])).await;
    assert!(report.succeeded(), "{}", report.render());
    let c = managed(&["network.security_groups=[sg-0f1e2d3c4b5a60002]"]);
    let planned = world.plan(&c.desired).await;
    let services: Vec<&envctl::plan::Action> = planned
        .plan
        .actions
        .iter()
        .filter(|a| a.id.is_service())
        .collect();
    assert_eq!(services.len(), c.desired.services.len());
    for a in &services {
        assert_eq!(a.kind, ActionKind::RollingUpdate, "{}", a.id);
        let fields: Vec<(&str, Option<&str>, Option<&str>)> = a
            .changes
            .iter()
            .map(|c| (c.field.as_str(), c.old.as_deref(), c.new.as_deref()))
            .collect();
        assert_eq!(
            fields,
            vec![(
                "networkConfiguration.securityGroups",
                Some("sg-0f1e2d3c4b5a60001"),
                Some("sg-0f1e2d3c4b5a60002")
            )],
            "{}",
            a.id
        );
        assert!(
            a.reasons
                .iter()
                .any(|r| r.contains("network configuration")),
            "{:?}",
            a.reasons
        );
        assert!(
            matches!(
                a.op,
                Op::EcsServiceUpdate {
                    revision: ServiceRevision::Running,
                    force: true,
                    placement: true,
                    ..
                }
            ),
            "{:?}",
            a.op
        );
    }
    let json = serde_json::to_value(&planned.plan).expect("plan json");
    assert!(
        json.to_string()
            .contains("\"networkConfiguration.securityGroups\""),
        "plan --json names the field"
    );
    let before = world.sandbox().stats().get("ecs", "UpdateService").count;
    let report = world.apply(&c.desired, planned, "groups").await;
    assert!(report.succeeded(), "{}", report.render());
    let updates = world.sandbox().stats().get("ecs", "UpdateService").count - before;
    eprintln!(
        "security group change on qcp1: {:.0} simulated s, {updates} UpdateService",
        report.elapsed_secs
    );
    assert_eq!(updates, c.desired.services.len() as u64);
    let names: Vec<String> = c.desired.services.keys().cloned().collect();
    for chunk in names.chunks(10) {
        let raw = world
            .session
            .clients
            .ecs
            .describe_services()
            .cluster("qcp1-pvt")
            .set_services(Some(chunk.to_vec()))
            .send()
            .await
            .expect("describe");
        for s in raw.services() {
            let groups = s
                .network_configuration()
                .and_then(|n| n.awsvpc_configuration())
                .map(|v| v.security_groups().to_vec());
            assert_eq!(
                groups,
                Some(vec!["sg-0f1e2d3c4b5a60002".to_string()]),
                "{:?}",
                s.service_name()
            );
        }
    }
    assert!(!world.plan(&c.desired).await.plan.has_changes());
}

/// The issue-23 estimate: a new revision of every qcp1 service on Managed Instances. The
/// provider's fleet holds the running tasks and no more, so the new tasks (maximumPercent
/// 200) wait for instances it launches; the plan's estimate counts that launch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_update_on_managed_instances_is_estimated_with_its_instance_launches() {
    let world = World::new().await;
    let report = world.converge(&managed(&[])).await;
    assert!(report.succeeded(), "{}", report.render());
    let c = managed(&["services.*.log_level=warn"]);
    let planned = world.plan(&c.desired).await;
    let rolling = planned
        .plan
        .actions
        .iter()
        .filter(|a| a.kind == ActionKind::RollingUpdate)
        .count();
    assert_eq!(rolling, c.desired.services.len());
    let estimate = planned.plan.estimate_secs;
    let report = world.apply(&c.desired, planned, "switch").await;
    assert!(report.succeeded(), "{}", report.render());
    eprintln!(
        "qcp1 rolling update of {rolling} services on Managed Instances: {:.0} simulated s, estimate {estimate:.0} s",
        report.elapsed_secs
    );
    assert!(
        report.elapsed_secs <= estimate * 1.25 && estimate <= report.elapsed_secs * 1.25,
        "estimate {estimate} s vs {} s",
        report.elapsed_secs
    );
}
