//! `park` / `unpark` round trip against the sandbox's state machines: services scaled to 0
//! with their counts kept in a tag, the DB instance stopping, stopped, starting, available,
//! and the services back at their counts; the env then plans no changes.
use std::time::Duration;

use envctl::aws::observe::{ObserveCache, observe};
use envctl::import::PARKED_COUNT_TAG;
use envctl::model::DesiredState;
use envctl::model::live::LiveState;
use envctl::park::execute::{self, Options};
use envctl::park::{explained_by_parking, park_plan, status_summary, unpark_plan};
use envctl::plan::render::render;

use crate::apply::{World, compiled};

async fn live(world: &World, desired: &DesiredState) -> LiveState {
    let mut cache = ObserveCache::default();
    observe(&world.session, desired, &mut cache)
        .await
        .expect("observe")
}

fn options() -> Options {
    Options {
        run_id: "park-test".into(),
        journal: None,
        cancel: envctl::exec::Cancel::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn park_then_unpark_restores_qcp1_exactly() {
    let world = World::new().await;
    let c = compiled("qcp1", &[]);
    let d = &c.desired;
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let clients = &world.session.clients;
    let clock = world.session.clock.clone();

    // Park: a tag and a scale-down per service, one StopDBInstance.
    let before = world.mutating_calls();
    let plan = park_plan(d, &live(&world, d).await);
    assert_eq!(plan.services.len(), d.services.len());
    assert_eq!(plan.databases, ["qcp1-db"]);
    let parked = execute::park(clients, clock.clone(), &d.cluster.name, &plan, &options()).await;
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
    let plan = unpark_plan(d, &parked_live);
    let unparked =
        execute::unpark(clients, clock.clone(), &d.cluster.name, &plan, &options()).await;
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
    let parked = execute::park(
        &world.session.clients,
        world.session.clock.clone(),
        &d.cluster.name,
        &plan,
        &options(),
    )
    .await;
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
    let plan = park_plan(d, &live(&world, d).await);
    let options = options();
    options.cancel.cancel();
    let before = world.mutating_calls();
    let report = execute::park(
        &world.session.clients,
        world.session.clock.clone(),
        &d.cluster.name,
        &plan,
        &options,
    )
    .await;
    assert!(report.interrupted && !report.succeeded());
    assert!(report.steps.is_empty());
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
    let clients = &world.session.clients;
    let clock = world.session.clock.clone();
    let plan = park_plan(d, &live(&world, d).await);
    let parked = execute::park(clients, clock.clone(), &d.cluster.name, &plan, &options()).await;
    assert!(parked.succeeded(), "{}", parked.render());

    let stopping = live(&world, d).await;
    assert_eq!(stopping.db_instances["qcp1-db"].status, "stopping");
    let plan = unpark_plan(d, &stopping);
    assert_eq!(plan.databases, ["qcp1-db"]);
    let before = world.mutating_calls();
    let started = clock.now();
    let unparked =
        execute::unpark(clients, clock.clone(), &d.cluster.name, &plan, &options()).await;
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
