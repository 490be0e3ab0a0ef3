//! diff(desired, live) -> Plan: pure, no network. Each resource is compared on the fields
//! envctl sets, in canonical form (sorted environment, AWS defaults filled in), so a
//! converged environment plans to nothing. One module per resource kind decides the
//! actions and their typed operations; this one orders them, drops dependencies on
//! resources that do nothing, and estimates.
pub mod creates;
mod ecs;
mod kafka;
mod logs;
mod rds;

use std::collections::{BTreeMap, BTreeSet};

use envctl_aws_model::state;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::action::{Action, ActionKind, Change, Conflict, ConflictKind};
use super::critical_path::critical_path;
use super::error::PlanError;
use super::estimate::Estimates;
use super::id::ResourceId;
use super::op::Op;
use crate::model::DesiredState;
use crate::model::live::{LiveState, owned_by};

pub use kafka::normalize_properties;

/// Plan JSON schema version (docs/plan-schema.md). 2: operations carry their requests.
pub const PLAN_SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub schema_version: u32,
    pub env: String,
    /// Every resource of the environment, in dependency order; no-ops included.
    pub actions: Vec<Action>,
    pub conflicts: Vec<Conflict>,
    /// Estimated wall time: the critical path through the dependencies, or the ECS
    /// task-definition rate limit, whichever is longer.
    pub estimate_secs: f64,
    /// Hash of the actions and their operations: `apply PLANFILE` re-plans and refuses if
    /// it differs.
    pub fingerprint: String,
}

impl Plan {
    /// A plan of `actions`, with its fingerprint.
    pub fn new(
        env: impl Into<String>,
        actions: Vec<Action>,
        conflicts: Vec<Conflict>,
        estimate_secs: f64,
    ) -> Plan {
        let fingerprint = fingerprint(&actions, &conflicts);
        Plan {
            schema_version: PLAN_SCHEMA_VERSION,
            env: env.into(),
            actions,
            conflicts,
            estimate_secs,
            fingerprint,
        }
    }

    /// The fingerprint of the actions as they are now (a plan read from a file may have
    /// been edited since its `fingerprint` was computed).
    pub fn computed_fingerprint(&self) -> String {
        fingerprint(&self.actions, &self.conflicts)
    }

    pub fn changes(&self) -> impl Iterator<Item = &Action> {
        self.actions.iter().filter(|a| a.kind != ActionKind::NoOp)
    }

    pub fn has_changes(&self) -> bool {
        self.changes().next().is_some()
    }

    pub fn action(&self, resource: &str) -> Option<&Action> {
        self.actions.iter().find(|a| a.id == resource)
    }

    /// Refuses a plan that names resources envctl does not own, or holds a change AWS
    /// would refuse: `plan` and `apply` stop here, before any mutating call.
    pub fn refuse_conflicts(&self) -> Result<(), PlanError> {
        let of = |kind: ConflictKind| -> Vec<Conflict> {
            self.conflicts
                .iter()
                .filter(|c| c.kind == kind)
                .cloned()
                .collect()
        };
        let not_owned = of(ConflictKind::NotOwned);
        if !not_owned.is_empty() {
            return Err(PlanError::Conflicts(not_owned));
        }
        let refused = of(ConflictKind::Refused);
        if !refused.is_empty() {
            return Err(PlanError::Refused(refused));
        }
        Ok(())
    }

    /// One action per resource, and every dependency among the actions: what the executor
    /// relies on. A plan read from a file is checked before it runs.
    pub fn check(&self) -> Result<(), PlanError> {
        let mut seen = BTreeSet::new();
        for a in &self.actions {
            if !seen.insert(&a.id) {
                return Err(PlanError::DuplicateId(a.id.clone()));
            }
        }
        for a in &self.actions {
            if let Some(missing) = a.deps.iter().find(|d| !seen.contains(d)) {
                return Err(PlanError::UnknownDependency {
                    action: a.id.clone(),
                    missing: missing.clone(),
                });
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// Take over resources with matching names that envctl does not own.
    pub adopt: bool,
}

/// What the per-kind planners share while they add actions.
struct Planner<'a> {
    desired: &'a DesiredState,
    live: &'a LiveState,
    est: &'a Estimates,
    options: &'a DiffOptions,
    /// Every service's CreateService, built once (`requests::create_services`).
    service_requests: BTreeMap<String, crate::model::requests::CreateService>,
    actions: Vec<Action>,
    conflicts: Vec<Conflict>,
}

impl Planner<'_> {
    /// The service's CreateService as planned (built once for all services).
    fn service_request(
        &self,
        service: &crate::model::EcsService,
    ) -> crate::model::requests::CreateService {
        self.service_requests
            .get(&service.name)
            .cloned()
            .unwrap_or_else(|| crate::model::requests::create_service(self.desired, service))
    }

    fn env(&self) -> &str {
        &self.desired.env
    }

    /// Ours to change: tagged as the environment's, or taken over with `--adopt`.
    fn owned(&self, tags: &BTreeMap<String, String>) -> bool {
        self.options.adopt || owned_by(tags, self.env())
    }

    fn conflict(&mut self, resource: ResourceId, what: &str) {
        self.conflicts.push(Conflict {
            resource,
            message: format!(
                "{what} with this name exists but is not tagged as this environment's (envctl:env); envctl will not change, use or delete it"
            ),
            kind: ConflictKind::NotOwned,
        });
    }

    fn push(&mut self, action: Action) {
        self.actions.push(action);
    }

    /// Services whose actions change something: deleted data stores wait for them.
    fn changed_services(&self) -> Vec<ResourceId> {
        self.actions
            .iter()
            .filter(|a| a.id.is_service() && a.kind != ActionKind::NoOp)
            .map(|a| a.id.clone())
            .collect()
    }
}

/// Compares the desired state with what exists.
pub fn diff(
    desired: &DesiredState,
    live: &LiveState,
    est: &Estimates,
    options: &DiffOptions,
) -> Plan {
    let mut p = Planner {
        desired,
        live,
        est,
        options,
        service_requests: crate::model::requests::create_services(desired),
        actions: Vec::new(),
        conflicts: Vec::new(),
    };
    // Data stores first: their outputs feed the task definitions.
    rds::plan_db(&mut p);
    kafka::plan_clusters(&mut p);
    logs::plan_log_groups(&mut p);
    ecs::plan_cluster(&mut p);
    ecs::plan_capacity(&mut p);
    ecs::plan_services(&mut p);
    ecs::plan_registered_capacity(&mut p);
    ecs::plan_removed_services(&mut p);
    // Owned data stores that the spec no longer has go last, after services moved off them.
    rds::plan_removed(&mut p);
    kafka::plan_removed(&mut p);

    let Planner {
        mut actions,
        conflicts,
        ..
    } = p;
    mark_unhealthy_data_stores(desired, live, &mut actions);
    logs::services_wait_for_log_groups(desired, &mut actions);
    // A service waits for a data store only while the store's endpoint is not settled: it is
    // being created or replaced, or an earlier change is still in progress. A broker type
    // change keeps the endpoints, so services need not wait 24 minutes for it.
    let settles: BTreeSet<ResourceId> = actions
        .iter()
        .filter(|a| {
            matches!(a.kind, ActionKind::Create | ActionKind::Replace)
                || a.changes
                    .iter()
                    .any(|c| c.field == "status" || c.field == "state")
        })
        .map(|a| a.id.clone())
        .collect();
    for a in actions.iter_mut().filter(|a| a.id.is_service()) {
        a.deps.retain(|d| d.is_ecs() || settles.contains(d));
    }
    // Dependencies on resources that do nothing are dropped: nothing to wait for.
    let active: BTreeSet<ResourceId> = actions
        .iter()
        .filter(|a| a.kind != ActionKind::NoOp)
        .map(|a| a.id.clone())
        .collect();
    for a in &mut actions {
        a.deps.retain(|d| active.contains(d));
        a.deps.sort();
        a.deps.dedup();
    }
    let estimate_secs = plan_estimate(&actions, est);
    Plan::new(desired.env.clone(), actions, conflicts, estimate_secs)
}

/// A data store in a broken state is drift: never "No changes" over it, and never a wait
/// for it to become available (it will not by itself). A change the per-kind planners
/// decided otherwise stands (it may be the repair, e.g. more storage).
fn mark_unhealthy_data_stores(desired: &DesiredState, live: &LiveState, actions: &mut [Action]) {
    for a in actions.iter_mut().filter(|a| {
        a.kind == ActionKind::NoOp || matches!(a.op, Op::RdsAwait { .. } | Op::KafkaAwait { .. })
    }) {
        let broken = match &a.id {
            ResourceId::DbInstance { id } => live
                .db_instances
                .get(id)
                .filter(|d| state::db_instance::needs_operator(&d.status))
                .map(|d| d.status.clone()),
            ResourceId::KafkaCluster { key } => desired
                .kafka
                .get(key)
                .and_then(|k| live.kafka.get(&k.name))
                .filter(|k| state::kafka_cluster::needs_operator(&k.state))
                .map(|k| k.state.clone()),
            _ => None,
        };
        if let Some(state) = broken {
            a.kind = ActionKind::UpdateInPlace;
            a.changes
                .retain(|c| c.field != "status" && c.field != "state");
            a.changes.push(Change::new(
                HEALTH_FIELD,
                Some(state.clone()),
                Some("healthy".into()),
            ));
            a.reasons.push(format!(
                "{state}: apply cannot repair this; it fails until the cause is fixed"
            ));
            a.op = Op::Unhealthy { state };
        }
    }
}

/// The field of a change that repairs an unhealthy resource (`status` exits 2 on it).
pub const HEALTH_FIELD: &str = "health";

/// The field of the change that takes a resource over (`--adopt`): its ownership tags.
pub const ADOPT_FIELD: &str = "ownership tags";

/// A change that tags a resource as the environment's, when it is not yet.
fn adoption(tags: &BTreeMap<String, String>, env: &str) -> Vec<Change> {
    if owned_by(tags, env) {
        Vec::new()
    } else {
        vec![Change::new(
            ADOPT_FIELD,
            Some("not envctl's".into()),
            Some(format!("envctl:env={env} (adopted)")),
        )]
    }
}

/// The output prefix (`rds.writer`, `kafka.main`) a resource produces, if any.
fn output_prefix(desired: &DesiredState, resource: &ResourceId) -> Option<String> {
    match resource {
        ResourceId::KafkaCluster { key } => Some(format!("kafka.{key}")),
        ResourceId::DbInstance { id } => {
            let db = desired.db.as_ref()?;
            if &db.writer.identifier == id {
                Some("rds.writer".into())
            } else if db.readers.first().is_some_and(|r| &r.identifier == id) {
                Some("rds.reader".into())
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The resource behind an output prefix.
fn output_resource(desired: &DesiredState, prefix: &str) -> Option<ResourceId> {
    match prefix.split_once('.') {
        Some(("kafka", k)) => Some(ResourceId::kafka_cluster(k)),
        Some(("rds", "writer")) => desired
            .db
            .as_ref()
            .map(|d| ResourceId::db_instance(&d.writer.identifier)),
        Some(("rds", "reader")) => desired
            .db
            .as_ref()
            .and_then(|d| d.readers.first())
            .map(|r| ResourceId::db_instance(&r.identifier)),
        _ => None,
    }
}

/// Critical path through the dependency graph, or the task-definition rate limit: ECS
/// registers 20 at once and then one per second, and every new revision needs one.
fn plan_estimate(actions: &[Action], est: &Estimates) -> f64 {
    let critical = critical_path(actions);
    let registrations = actions
        .iter()
        .filter(|a| {
            a.id.is_service() && matches!(a.kind, ActionKind::Create | ActionKind::RollingUpdate)
        })
        .count() as f64;
    let rate_bound = if registrations > 0.0 {
        (registrations - 20.0).max(0.0) / 1.0 + est.ecs_task_start
    } else {
        0.0
    };
    critical.max(rate_bound)
}

/// What was shown and what will run: ids, kinds, changes and operations.
fn fingerprint(actions: &[Action], conflicts: &[Conflict]) -> String {
    let mut hasher = Sha256::new();
    for a in actions {
        hasher.update(serde_json::to_vec(&(&a.id, a.kind, &a.changes, &a.op)).unwrap_or_default());
    }
    for c in conflicts {
        hasher.update(c.resource.to_string().as_bytes());
    }
    hex::encode(&hasher.finalize()[..12])
}
