//! `park` and `unpark` as plans: the steps computed in `park` (which services, which DB
//! instances) turned into actions with typed operations, dependencies and estimates, run
//! by `apply::execute` like any plan and shown by `plan`'s renderer.
//!
//! Park: every service parks on its own (tag, then count 0); the DB instances stop once
//! every service is scaled down (a service that failed to scale down keeps its database).
//! Unpark: every DB instance comes back first; every service goes back to its count once
//! they are all available (without its database a service only fails its health checks),
//! then waits until healthy.
use super::{ParkPlan, UnparkPlan};
use crate::model::DesiredState;
use crate::model::live::LiveState;
use crate::plan::{Action, ActionKind, Change, Estimates, Op, Plan, ResourceId, critical_path};
use envctl_aws_model::state::db_instance::{AVAILABLE, STOPPED, STOPPING};

/// The count change (none when it stays: an unpark interrupted after scaling back) and the
/// tag that remembers the count, added (park) or removed (unpark).
fn count_changes(from: u32, to: u32, tag: (Option<String>, Option<String>)) -> Vec<Change> {
    let mut changes = Vec::new();
    if from != to {
        changes.push(Change::new(
            "desired_count",
            Some(from.to_string()),
            Some(to.to_string()),
        ));
    }
    changes.push(Change::new(
        format!("tags.{}", crate::import::PARKED_COUNT_TAG),
        tag.0,
        tag.1,
    ));
    changes
}

fn status_change(from: &str, to: &str) -> Vec<Change> {
    vec![Change::new(
        "status",
        Some(from.to_string()),
        Some(to.to_string()),
    )]
}

/// The plan of `park`: scale the services to 0 (their counts kept in a tag), then stop the
/// DB instances. Nothing in it waits: the calls are the whole change.
pub fn park(desired: &DesiredState, steps: &ParkPlan) -> Plan {
    let cluster = &desired.cluster.name;
    let mut actions: Vec<Action> = steps
        .services
        .iter()
        .map(|s| {
            Action::new(
                ResourceId::service(&s.name),
                ActionKind::UpdateInPlace,
                Op::EcsServicePark {
                    cluster: cluster.clone(),
                    name: s.name.clone(),
                    arn: s.arn.clone(),
                    count: s.count,
                },
            )
            .changes(count_changes(s.count, 0, (None, Some(s.count.to_string()))))
            .reason(format!(
                "park: the count kept in tag {}",
                crate::import::PARKED_COUNT_TAG
            ))
        })
        .collect();
    let services: Vec<ResourceId> = actions.iter().map(|a| a.id.clone()).collect();
    actions.extend(steps.databases.iter().map(|id| {
        Action::new(
            ResourceId::db_instance(id),
            ActionKind::UpdateInPlace,
            Op::RdsStop { id: id.clone() },
        )
        .changes(status_change(AVAILABLE, STOPPED))
        .deps(services.clone())
        .reason("park: RDS starts a stopped instance again after 7 days")
    }));
    let estimate = critical_path(&actions);
    Plan::new(desired.env.clone(), actions, Vec::new(), estimate)
}

/// The plan of `unpark`: bring the DB instances back to `available` (waiting for a stopping
/// one to stop first), then restore every service's count and wait until it is healthy.
pub fn unpark(
    desired: &DesiredState,
    live: &LiveState,
    steps: &UnparkPlan,
    est: &Estimates,
) -> Plan {
    let cluster = &desired.cluster.name;
    let mut actions: Vec<Action> = steps
        .databases
        .iter()
        .map(|id| {
            let status = live
                .db_instances
                .get(id)
                .map_or(STOPPED, |d| d.status.as_str());
            let (secs, reason) = match status {
                STOPPING => (
                    est.rds_stop + est.rds_start,
                    "unpark: it is stopping; RDS starts only a stopped instance, so it is started once stopped",
                ),
                STOPPED => (est.rds_start, "unpark: started, then awaited"),
                _ => (est.rds_start, "unpark: it is starting; awaited"),
            };
            Action::new(
                ResourceId::db_instance(id),
                ActionKind::UpdateInPlace,
                Op::RdsStart { id: id.clone() },
            )
            .changes(status_change(status, AVAILABLE))
            .estimate(secs)
            .reason(reason)
        })
        .collect();
    let databases: Vec<ResourceId> = actions.iter().map(|a| a.id.clone()).collect();
    actions.extend(steps.services.iter().map(|s| {
        let live_service = live.services.get(&s.name);
        let now = live_service.map_or(0, |l| l.desired_count);
        let tag = live_service.and_then(|l| l.tags.get(crate::import::PARKED_COUNT_TAG).cloned());
        Action::new(
            ResourceId::service(&s.name),
            ActionKind::UpdateInPlace,
            Op::EcsServiceUnpark {
                cluster: cluster.clone(),
                name: s.name.clone(),
                arn: s.arn.clone(),
                count: s.count,
            },
        )
        .changes(count_changes(now, s.count, (tag, None)))
        .estimate(est.ecs_task_start)
        .deps(databases.clone())
        .reason(format!(
            "unpark: the count kept in tag {}, then healthy",
            crate::import::PARKED_COUNT_TAG
        ))
    }));
    let estimate = critical_path(&actions);
    Plan::new(desired.env.clone(), actions, Vec::new(), estimate)
}
