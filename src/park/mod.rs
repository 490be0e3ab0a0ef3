//! Parking an environment between test runs: services scaled to 0 (the count kept in a tag),
//! DB instances stopped, and what that saves per day. Pure: the steps are computed from the
//! observed state here; `park::planner` turns them into a `Plan`, which `apply::execute`
//! runs like any other.
//!
//! AWS rules this follows (docs/aws-behaviour.md, "Import and parking"): RDS stops only an
//! available instance that neither has a read replica nor is one, and starts a stopped
//! instance again by itself after seven days; MSK provisioned clusters cannot be stopped;
//! a Managed Instances provider envctl created terminates its instances once no task is left
//! (services at 0 are enough), while container instances registered by something else keep
//! running. What that costs and saves is `cost`; `planner` turns park and unpark into a plan
//! that `apply::execute` runs.
pub mod cost;
pub mod planner;
pub mod prices;

use envctl_aws_model::status::{DbInstanceStatus, ServiceStatus};
use std::fmt::Write as _;

use crate::import::PARKED_COUNT_TAG;
use crate::model::DesiredState;
use crate::model::live::{LiveDb, LiveService, LiveState, owned_by};
use crate::plan::{Action, ResourceId};

/// One service to scale to 0 (park) or back (unpark).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceStep {
    pub name: String,
    pub arn: String,
    /// The count to remember (park) or to restore (unpark).
    pub count: u32,
}

/// Something left as it is, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub resource: String,
    pub reason: String,
}

/// What `park` will do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParkPlan {
    pub services: Vec<ServiceStep>,
    /// DB instances to stop.
    pub databases: Vec<String>,
    pub kept: Vec<Kept>,
    /// MSK clusters: they keep running (and costing).
    pub kafka: Vec<String>,
}

/// What `unpark` will do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UnparkPlan {
    /// DB instances to bring back to `available` (before the services, which need them):
    /// stopped ones are started, stopping ones are waited for until stopped and then
    /// started, starting ones are waited for.
    pub databases: Vec<String>,
    pub services: Vec<ServiceStep>,
    pub kept: Vec<Kept>,
}

fn owned_services<'a>(
    desired: &'a DesiredState,
    live: &'a LiveState,
) -> impl Iterator<Item = &'a LiveService> + 'a {
    live.services
        .values()
        .filter(move |s| s.status == ServiceStatus::Active && owned_by(&s.tags, &desired.env))
}

fn owned_dbs<'a>(
    desired: &'a DesiredState,
    live: &'a LiveState,
) -> impl Iterator<Item = &'a LiveDb> + 'a {
    live.db_instances
        .values()
        .filter(move |d| owned_by(&d.tags, &desired.env))
}

/// The count a parked service remembers, if it is parked.
pub fn parked_count(s: &LiveService) -> Option<u32> {
    if s.desired_count != 0 {
        return None;
    }
    s.tags.get(PARKED_COUNT_TAG)?.parse().ok()
}

/// Why RDS will not stop this instance, if it will not (AWS: no read replica on either side).
fn unstoppable(db: &LiveDb, live: &LiveState) -> Option<String> {
    if let Some(source) = &db.source {
        return Some(format!(
            "a read replica of {source}: RDS cannot stop read replicas or their sources; it keeps running"
        ));
    }
    let replicas: Vec<&str> = live
        .db_instances
        .values()
        .filter(|r| r.source.as_deref() == Some(db.identifier.as_str()))
        .map(|r| r.identifier.as_str())
        .collect();
    (!replicas.is_empty()).then(|| {
        format!(
            "has the read replica {}: RDS cannot stop an instance with read replicas; it keeps running",
            replicas.join(", ")
        )
    })
}

pub fn park_plan(desired: &DesiredState, live: &LiveState) -> ParkPlan {
    let mut plan = ParkPlan::default();
    for s in live.services.values() {
        if s.status != ServiceStatus::Active {
            continue;
        }
        if !owned_by(&s.tags, &desired.env) {
            plan.kept.push(Kept {
                resource: ResourceId::service(&s.name).to_string(),
                reason: "not the env's (no envctl tags): left alone; `apply --adopt` takes it over"
                    .into(),
            });
        } else if s.desired_count > 0 {
            plan.services.push(ServiceStep {
                name: s.name.clone(),
                arn: s.arn.clone(),
                count: s.desired_count,
            });
        }
    }
    for db in owned_dbs(desired, live) {
        let resource = ResourceId::db_instance(&db.identifier).to_string();
        if let Some(reason) = unstoppable(db, live) {
            plan.kept.push(Kept { resource, reason });
        } else if db.status == DbInstanceStatus::Available {
            plan.databases.push(db.identifier.clone());
        } else if db.status != DbInstanceStatus::Stopped && db.status != DbInstanceStatus::Stopping
        {
            plan.kept.push(Kept {
                resource,
                reason: format!(
                    "status {}: RDS stops only available instances; park again later",
                    db.status
                ),
            });
        }
    }
    plan.kafka = live
        .kafka
        .values()
        .filter(|k| owned_by(&k.tags, &desired.env))
        .map(|k| k.name.clone())
        .collect();
    plan
}

pub fn unpark_plan(desired: &DesiredState, live: &LiveState) -> UnparkPlan {
    let mut plan = UnparkPlan::default();
    for db in owned_dbs(desired, live) {
        let resource = ResourceId::db_instance(&db.identifier).to_string();
        match DbInstanceStatus::parse(&db.status) {
            // RDS starts only a stopped instance: a stopping one (unpark right after park)
            // is waited for first, not skipped.
            DbInstanceStatus::Stopped | DbInstanceStatus::Stopping | DbInstanceStatus::Starting => {
                plan.databases.push(db.identifier.clone())
            }
            DbInstanceStatus::Available => {}
            other => plan.kept.push(Kept {
                resource,
                reason: format!(
                    "status {other}: RDS starts only stopped instances; unpark waits for none \
                     but the stopped, stopping and starting ones"
                ),
            }),
        }
    }
    for s in owned_services(desired, live) {
        if let Some(count) = parked_count(s) {
            plan.services.push(ServiceStep {
                name: s.name.clone(),
                arn: s.arn.clone(),
                count,
            });
        } else if s.tags.contains_key(PARKED_COUNT_TAG) {
            // Scaled back already (an unpark interrupted before removing the tag): only the
            // tag goes.
            plan.services.push(ServiceStep {
                name: s.name.clone(),
                arn: s.arn.clone(),
                count: s.desired_count,
            });
        }
    }
    plan
}

/// Whether the environment is parked: one of its services is at 0 and remembers its count.
/// Only then is a stopped DB instance explained by parking; otherwise it is drift (an unpark
/// that did not bring it back, or someone stopping it by hand).
pub fn is_parked(live: &LiveState) -> bool {
    live.services.values().any(|s| parked_count(s).is_some())
}

/// Whether a plan action only says "this is parked": a service at 0 that remembers its
/// count, or a stopped DB instance of a parked env. `status` shows such resources as parked,
/// not as drift.
pub fn explained_by_parking(live: &LiveState, action: &Action) -> bool {
    match &action.id {
        ResourceId::EcsService { name } => {
            live.services.get(name).and_then(parked_count).is_some()
                && action.changes.iter().all(|c| c.field == "desired_count")
        }
        ResourceId::DbInstance { id } => {
            is_parked(live)
                && live.db_instances.get(id).is_some_and(|d| {
                    d.status == DbInstanceStatus::Stopped || d.status == DbInstanceStatus::Stopping
                })
                && action.changes.iter().all(|c| c.field == "status")
        }
        _ => false,
    }
}

/// The lines `status` adds for a parked environment, or `None` when nothing is parked.
pub fn status_summary(desired: &DesiredState, live: &LiveState) -> Option<String> {
    let services: Vec<&LiveService> = owned_services(desired, live).collect();
    let parked = services
        .iter()
        .filter(|s| parked_count(s).is_some())
        .count();
    let stopped: Vec<String> = owned_dbs(desired, live)
        .filter(|d| d.status == DbInstanceStatus::Stopped || d.status == DbInstanceStatus::Stopping)
        .map(|d| d.identifier.clone())
        .collect();
    // A stopped DB of an env whose services run is not parked: `status` shows it as drift.
    if parked == 0 {
        return None;
    }
    let mut out = format!(
        "PARKED: {parked} of {} services at 0 (`envctl unpark` restores them)",
        services.len()
    );
    if !stopped.is_empty() {
        let _ = write!(
            out,
            "; DB {} stopped (RDS starts a stopped instance again after 7 days)",
            stopped.join(", ")
        );
    }
    let _ = write!(
        out,
        ".\n{}\n",
        cost::park_cost(desired, live, &stopped).render()
    );
    Some(out)
}

#[cfg(test)]
mod tests;
