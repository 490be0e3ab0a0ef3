//! `park` / `unpark` round trip against the sandbox's state machines: services scaled to 0
//! with their counts kept in a tag, the DB instance stopping, stopped, starting, available,
//! and the services back at their counts; the env then plans no changes.
use std::time::Duration;

use envctl::account::observe::{ObserveCache, observe};
use envctl::apply::{ApplyReport, Outcome};
use envctl::converge::{ApplyOptions, Planned};
use envctl::exec::Cancel;
use envctl::import::PARKED_COUNT_TAG;
use envctl::model::DesiredState;
use envctl::model::live::LiveState;
use envctl::park::{explained_by_parking, park_plan, planner, status_summary, unpark_plan};
use envctl::plan::render::render;
use envctl::plan::{Estimates, Plan};

use crate::apply::{World, compiled};

async fn live(world: &World, desired: &DesiredState) -> LiveState {
    let mut cache = ObserveCache::default();
    observe(&world.session.reads(), desired, &mut cache)
        .await
        .expect("observe")
}

/// Runs a park or unpark plan as the command does: through the one executor, with the
/// session's buckets.
async fn run(
    world: &World,
    desired: &DesiredState,
    live: LiveState,
    plan: Plan,
    cancel: Cancel,
) -> ApplyReport {
    let mut options = ApplyOptions::new("park-test", world.state_dir());
    options.cancel = cancel;
    let cache = ObserveCache::load(&ObserveCache::path(&world.state_dir(), &desired.env));
    let planned = Planned { live, plan, cache };
    envctl::converge::apply(&world.session, desired, planned, &options)
        .await
        .expect("a valid plan")
}

/// Parks the env as `park` does: its steps from the observed state, as a plan.
async fn park(world: &World, desired: &DesiredState) -> ApplyReport {
    let live = live(world, desired).await;
    let plan = planner::park(desired, &park_plan(desired, &live));
    run(world, desired, live, plan, Cancel::new()).await
}

/// Unparks the env as `unpark` does.
async fn unpark(world: &World, desired: &DesiredState, live: LiveState) -> ApplyReport {
    let steps = unpark_plan(desired, &live);
    let plan = planner::unpark(desired, &live, &steps, &Estimates::default());
    run(world, desired, live, plan, Cancel::new()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn park_then_unpark_restores_qcp1_exactly() {
    let world = World::new().await;
    let c = compiled("qcp1", &[]);
    let d = &c.desired;
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let clock = world.session.clock.clone();

    // Park: a tag and a scale-down per service, one StopDBInstance.
    let before = world.mutating_calls();
    let plan = park_plan(d, &live(&world, d).await);
    assert_eq!(plan.services.len(), d.services.len());
    assert_eq!(plan.databases, ["qcp1-db"]);
    let parked = park(&world, d).await;
    assert!(parked.succeeded(), "{}", parked.render());
    assert_eq!(
        world.mutating_calls() - before,
        2 * d.services.len() as u64 + 1
    );

    let stopping = live(&world, d).await;
    assert_eq!(stopping.db_instances["qcp1-db"].status, "stopping");
    clock.sleep(Duration::from_secs(5 * 60)).await;
    let parked_live = live(&world, d).await;
    assert_eq!(parked_live.db_instances["qcp1-db"].status, "stopped");
    for (name, s) in &parked_live.services {
        assert_eq!(s.desired_count, 0, "{name}");
        assert_eq!(
            s.tags.get(PARKED_COUNT_TAG),
            Some(&d.services[name].desired_count.to_string()),
            "{name}"
        );
    }
    // status: parked, not drift.
    let planned = world.plan(d).await;
    assert!(planned.plan.has_changes());
    let unexplained: Vec<_> = planned
        .plan
        .changes()
        .filter(|a| !explained_by_parking(&planned.live, a))
        .collect();
    assert!(unexplained.is_empty(), "{unexplained:?}");
    let summary = status_summary(d, &planned.live).unwrap_or_default();
    assert!(summary.starts_with("PARKED:"), "{summary}");

    // Parking twice does nothing more.
    let again = park_plan(d, &parked_live);
    assert!(
        again.services.is_empty() && again.databases.is_empty(),
        "{again:?}"
    );

    // Unpark: start, wait for available, restore the counts, wait for healthy services.
    let started = clock.now();
    let unparked = unpark(&world, d, parked_live).await;
    assert!(unparked.succeeded(), "{}", unparked.render());
    let secs = clock.now() - started;
    eprintln!("unpark of qcp1: {secs:.0} simulated s");
    // The sandbox's start takes 6 minutes; the services start after it.
    assert!(secs >= 6.0 * 60.0, "{secs}");

    let back = live(&world, d).await;
    assert_eq!(back.db_instances["qcp1-db"].status, "available");
    for (name, s) in &back.services {
        assert_eq!(s.desired_count, d.services[name].desired_count, "{name}");
        assert_eq!(s.running_count, s.desired_count, "{name}");
        assert!(!s.tags.contains_key(PARKED_COUNT_TAG), "{name}");
    }
    let planned = world.plan(d).await;
    assert!(!planned.plan.has_changes(), "{}", render(&planned.plan));
    assert!(status_summary(d, &planned.live).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parking_pcp1_keeps_rds_running_because_of_its_read_replica() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    let d = &c.desired;
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let plan = park_plan(d, &live(&world, d).await);
    assert!(plan.databases.is_empty());
    assert_eq!(plan.kept.len(), 2, "{:?}", plan.kept);
    let parked = park(&world, d).await;
    assert!(parked.succeeded(), "{}", parked.render());
    let after = live(&world, d).await;
    assert!(
        after
            .db_instances
            .values()
            .all(|db| db.status == "available")
    );
    assert!(after.services.values().all(|s| s.desired_count == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_before_the_first_call_changes_nothing() {
    let world = World::new().await;
    let c = compiled("qcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let d = &c.desired;
    let live = live(&world, d).await;
    let plan = planner::park(d, &park_plan(d, &live));
    let cancel = Cancel::new();
    cancel.cancel();
    let before = world.mutating_calls();
    let report = run(&world, d, live, plan, cancel).await;
    assert!(report.interrupted && !report.succeeded());
    // Nothing started: every service is cancelled, the DB after them skipped.
    assert!(
        report.results.iter().all(|r| match r.outcome {
            Outcome::Cancelled => r.resource.starts_with("ecs/service/"),
            Outcome::Skipped { .. } => r.resource == "rds/instance/qcp1-db",
            _ => false,
        }),
        "{}",
        report.render()
    );
    assert_eq!(world.mutating_calls(), before);
}

/// Issue 26 item 2: `unpark` right after `park`, the DB instance still `stopping`. It used to
/// skip the instance (exit 0, "Unparked.") and leave it stopped; now it waits until RDS has
/// stopped it, starts it, and waits until it is available and the services are healthy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpark_right_after_park_starts_the_db_that_was_still_stopping() {
    let world = World::new().await;
    let c = compiled("qcp1", &[]);
    let d = &c.desired;
    assert!(world.converge(&c).await.succeeded());
    let clock = world.session.clock.clone();
    let parked = park(&world, d).await;
    assert!(parked.succeeded(), "{}", parked.render());

    let stopping = live(&world, d).await;
    assert_eq!(stopping.db_instances["qcp1-db"].status, "stopping");
    let plan = unpark_plan(d, &stopping);
    assert_eq!(plan.databases, ["qcp1-db"]);
    let before = world.mutating_calls();
    let started = clock.now();
    let unparked = unpark(&world, d, stopping).await;
    assert!(unparked.succeeded(), "{}", unparked.render());
    let secs = clock.now() - started;
    // One StartDBInstance, then an UpdateService and an UntagResource per service.
    assert_eq!(
        world.mutating_calls() - before,
        1 + 2 * d.services.len() as u64
    );
    eprintln!("unpark right after park of qcp1: {secs:.0} simulated s");

    let back = live(&world, d).await;
    assert_eq!(back.db_instances["qcp1-db"].status, "available");
    assert!(
        back.services
            .values()
            .all(|s| s.running_count == d.services[&s.name].desired_count)
    );
    let planned = world.plan(d).await;
    assert!(!planned.plan.has_changes(), "{}", render(&planned.plan));
}

/// Issue 22: park draws from the session's ECS buckets, as every other call of the session
/// does (it used to make fresh ones, so a park after a big apply could send a burst the
/// account's buckets no longer had). With the service-modify bucket emptied first, qcp1's
/// 26 UpdateService calls wait for its refill: 26 tokens at 5 per second, 5.2 simulated
/// seconds; through a fresh bucket they would take none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn park_draws_from_the_sessions_buckets() {
    let world = World::new().await;
    let c = compiled("qcp1", &[]);
    let d = &c.desired;
    assert!(world.converge(&c).await.succeeded());
    let live = live(&world, d).await;
    let plan = planner::park(d, &park_plan(d, &live));
    let updates = plan.changes().count() as u64 - 1;
    assert_eq!(updates, d.services.len() as u64);

    let update = envctl::exec::Operation::Ecs(envctl_aws_model::operation::EcsOp::UpdateService);
    let bucket = envctl::exec::limiter::category(update).expect("UpdateService is limited");
    let limit = bucket.limit();
    // Empty the session's bucket: every token of the burst spent, none refilled yet.
    let clock = world.session.clock.clone();
    for _ in 0..limit.burst {
        world.session.limits.reserve(update);
    }
    let started = clock.now();
    let report = run(&world, d, live, plan, Cancel::new()).await;
    assert!(report.succeeded(), "{}", report.render());
    let secs = clock.now() - started;
    let paced = updates as f64 / limit.rate_per_sec;
    eprintln!("park of qcp1 behind an empty bucket: {secs:.1} simulated s (>= {paced:.1})");
    assert!(secs >= paced - 1e-6, "{secs} < {paced}");
    // The bucket is the session's: its next token comes after those park took.
    assert!(world.session.limits.reserve(update) > Duration::ZERO);
}

/// Issue 22: a park or unpark plan is a plan like any other: `plan`'s renderer shows its
/// actions, and it serializes (plan JSON, saved plans) and reads back with its operations.
#[test]
fn a_park_plan_renders_and_serializes_like_any_plan() {
    let c = compiled("qcp1", &[]);
    let d = &c.desired;
    let mut live = envctl::model::live::converged(d);
    let park = planner::park(d, &park_plan(d, &live));
    assert!(park.check().is_ok());
    let shown = render(&park);
    for said in [
        "ecs/service/okapi-b",
        "desired_count: 3 -> 0",
        "rds/instance/qcp1-db",
        "status: available -> stopped",
    ] {
        assert!(shown.contains(said), "{said}\n{shown}");
    }
    let json = serde_json::to_string(&park).expect("a plan serializes");
    for said in [
        "\"type\":\"ecs-service-park\"",
        "\"type\":\"rds-stop\"",
        "\"depends_on\":[\"ecs/service/",
    ] {
        assert!(json.contains(said), "{said}\n{json}");
    }
    let back: Plan = serde_json::from_str(&json).expect("a plan reads back");
    assert_eq!(back, park);
    assert_eq!(back.computed_fingerprint(), park.fingerprint);

    // Unpark of the parked env: the DB first, every service after it.
    for s in live.services.values_mut() {
        s.tags
            .insert(PARKED_COUNT_TAG.into(), s.desired_count.to_string());
        s.desired_count = 0;
    }
    if let Some(db) = live.db_instances.get_mut("qcp1-db") {
        db.status = "stopped".into();
    }
    let unpark = planner::unpark(d, &live, &unpark_plan(d, &live), &Estimates::default());
    assert!(unpark.check().is_ok());
    let db = unpark
        .action("rds/instance/qcp1-db")
        .expect("the DB starts");
    assert!(matches!(db.op, envctl::plan::Op::RdsStart { .. }), "{db:?}");
    assert!(
        unpark
            .changes()
            .filter(|a| a.id != db.id)
            .all(|a| a.deps == [db.id.clone()]),
        "{}",
        render(&unpark)
    );
    // The DB start (6 min) and then a service start (40 s).
    assert_eq!(unpark.estimate_secs, 6.0 * 60.0 + 40.0);
    let json = serde_json::to_string(&unpark).expect("a plan serializes");
    assert!(json.contains("\"type\":\"ecs-service-unpark\""), "{json}");
    let back: Plan = serde_json::from_str(&json).expect("a plan reads back");
    assert_eq!(back, unpark);
}

/// The container instances of the env's cluster and the CPU its tasks reserve on them, as
/// `status` reads them.
async fn fleet(world: &World, desired: &DesiredState) -> (usize, i32) {
    let instances =
        envctl::aws::ecs::cluster_capacity(&world.session.clients.ecs, &desired.cluster.name)
            .await
            .expect("the cluster's instances");
    let reserved = instances
        .iter()
        .map(|i| i.registered_cpu - i.remaining_cpu)
        .sum();
    (instances.len(), reserved)
}

/// Issue 35: after park and unpark, `status` showed qcp1's 53 tasks running on 0 container
/// instances: the Managed Instances provider scaled in to nothing when the services went to
/// 0, and scaling them back up started their tasks without placing them. Unparked, the
/// tasks wait for the instances the provider launches, and the fleet is what it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpark_brings_the_managed_instances_back_and_places_the_tasks_on_them() {
    let world = World::new().await;
    let c = compiled("qcp1", &[]);
    let d = &c.desired;
    assert!(
        matches!(
            d.cluster.capacity,
            envctl::model::ClusterCapacity::ManagedInstances(_)
        ),
        "qcp1's own fleet"
    );
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let (instances, reserved) = fleet(&world, d).await;
    assert!(
        instances > 0 && reserved > 0,
        "{instances} instances, {reserved} CPU"
    );

    assert!(park(&world, d).await.succeeded());
    world.session.clock.sleep(Duration::from_secs(5 * 60)).await;
    assert_eq!(fleet(&world, d).await, (0, 0), "the provider scaled in");

    let parked = live(&world, d).await;
    let unparked = unpark(&world, d, parked).await;
    assert!(unparked.succeeded(), "{}", unparked.render());
    assert_eq!(fleet(&world, d).await, (instances, reserved));
    let back = live(&world, d).await;
    for (name, s) in &back.services {
        assert_eq!(s.running_count, d.services[name].desired_count, "{name}");
    }
}
