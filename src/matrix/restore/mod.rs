//! `matrix run --restore`: record what the environment runs before the first point
//! (`baseline.json`), refuse up front a matrix that could not be undone, and afterwards put
//! every resource back exactly (the same task-definition revisions, counts, MSK
//! configuration revision and broker type, DB class and parameters), then check it.
//!
//! This module is pure: capturing, refusing, planning the way back and verifying only read
//! values; `execute` observes and runs the plan through the one executor.
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub mod execute;
#[cfg(test)]
mod tests;

use super::expand::Point;
use crate::model::DesiredState;
use crate::model::live::{LiveDb, LiveState};
use crate::model::requests::DbModification;
use crate::model::tag;
use crate::plan::{
    Action, ActionKind, Change, ClusterUpdate, DiffOptions, Estimates, Op, Plan, ResourceId,
    critical_path, diff,
};

/// The baseline's file in the run directory.
pub const BASELINE_FILE: &str = "baseline.json";

/// What every resource a matrix can change ran before the first point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub env: String,
    /// When it was read (virtual time in the sandbox).
    pub recorded_at: f64,
    /// By service name.
    pub services: BTreeMap<String, ServiceBaseline>,
    /// By the spec's key under `kafka:`.
    pub kafka: BTreeMap<String, KafkaBaseline>,
    /// By DB instance identifier.
    pub db_instances: BTreeMap<String, DbBaseline>,
    /// By parameter group name: the parameters some configuration of the matrix sets, with
    /// their values before the run.
    pub parameter_groups: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceBaseline {
    /// The revision's full ARN: the restore runs exactly this one again.
    pub task_definition: String,
    /// The revision's content hash, to recognise it in the report.
    pub content_hash: String,
    pub desired_count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KafkaBaseline {
    pub name: String,
    pub configuration_arn: Option<String>,
    pub configuration_revision: Option<i64>,
    pub broker_type: String,
    pub kafka_version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbBaseline {
    pub class: String,
    pub parameter_group: Option<String>,
}

/// Why a restore run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(
        "{location}: `teardown: {policy}` and --restore{why} are exclusive: a restore run puts the environment back instead of deleting it; remove `teardown:` from the playbook, or pass --no-restore to tear it down"
    )]
    TeardownExclusive {
        location: String,
        policy: String,
        /// Why this run restores when --restore was not given.
        why: String,
    },
    #[error(
        "--teardown and --restore are exclusive: a restore run puts the environment back instead of deleting it{adopted}"
    )]
    TeardownFlagExclusive { adopted: String },
    #[error(
        "{resource} does not exist before the run: a restore run only changes what exists (point {point} needs it); nothing was changed"
    )]
    Missing { resource: String, point: String },
    #[error(
        "point {point} would need {resource} {what}: a restore run cannot put that back exactly; nothing was changed. Leave the point out (--only) or run without --restore"
    )]
    Irreversible {
        point: String,
        resource: String,
        what: String,
    },
}

/// Reads the baseline of everything the matrix's configurations name from the live state.
/// `points` are in run order, with their configurations; the first point that names a
/// missing resource is the one reported.
pub fn capture(
    points: &[(&Point, &DesiredState)],
    live: &LiveState,
    now: f64,
) -> Result<Baseline, RestoreError> {
    let mut baseline = Baseline {
        env: points
            .first()
            .map(|(_, d)| d.env.clone())
            .unwrap_or_default(),
        recorded_at: now,
        services: BTreeMap::new(),
        kafka: BTreeMap::new(),
        db_instances: BTreeMap::new(),
        parameter_groups: BTreeMap::new(),
    };
    for (point, desired) in points {
        let missing = |resource: ResourceId| RestoreError::Missing {
            resource: resource.to_string(),
            point: point.id.clone(),
        };
        for name in desired.services.keys() {
            if baseline.services.contains_key(name) {
                continue;
            }
            let l = live
                .services
                .get(name)
                .ok_or_else(|| missing(ResourceId::service(name)))?;
            baseline.services.insert(
                name.clone(),
                ServiceBaseline {
                    task_definition: l.task_definition.clone(),
                    content_hash: live
                        .task_definitions
                        .get(&l.task_definition)
                        .map(|td| td.content_hash())
                        .unwrap_or_default(),
                    desired_count: l.desired_count,
                },
            );
        }
        for (key, k) in &desired.kafka {
            if baseline.kafka.contains_key(key) {
                continue;
            }
            let l = live
                .kafka
                .get(&k.name)
                .ok_or_else(|| missing(ResourceId::kafka_cluster(key)))?;
            baseline.kafka.insert(
                key.clone(),
                KafkaBaseline {
                    name: l.name.clone(),
                    configuration_arn: l.configuration_arn.clone(),
                    configuration_revision: l.configuration_revision,
                    broker_type: l.broker_type.clone(),
                    kafka_version: l.kafka_version.clone(),
                },
            );
        }
        let Some(db) = &desired.db else { continue };
        for inst in std::iter::once(&db.writer).chain(&db.readers) {
            if baseline.db_instances.contains_key(&inst.identifier) {
                continue;
            }
            let l = live
                .db_instances
                .get(&inst.identifier)
                .ok_or_else(|| missing(ResourceId::db_instance(&inst.identifier)))?;
            baseline.db_instances.insert(
                inst.identifier.clone(),
                DbBaseline {
                    class: l.class.clone(),
                    parameter_group: l.parameter_group.clone(),
                },
            );
        }
        if let Some(group) = &db.parameter_group {
            let l = live
                .db_parameter_groups
                .get(&group.name)
                .ok_or_else(|| missing(ResourceId::db_parameter_group(&group.name)))?;
            let touched = baseline
                .parameter_groups
                .entry(group.name.clone())
                .or_default();
            for name in group.parameters.keys() {
                // A parameter left at the engine default has no user value to put back
                // (envctl has no ResetDBParameterGroup): `refuse` stops such a matrix.
                if let Some(value) = l.parameters.get(name) {
                    touched.insert(name.clone(), value.clone());
                }
            }
        }
    }
    Ok(baseline)
}

/// Refuses, before any change, a matrix whose points could not be undone exactly: a point
/// whose plan from the baseline replaces or deletes something, upgrades Kafka or grows MSK
/// (MSK downgrades and shrinks nothing in place), grows or upgrades a DB instance's storage
/// or engine, or sets a DB parameter that is at the engine default before the run.
pub fn refuse_irreversible(
    points: &[(&Point, &DesiredState)],
    live: &LiveState,
    baseline: &Baseline,
) -> Result<(), RestoreError> {
    let options = DiffOptions::default();
    let mut checked: BTreeSet<&str> = BTreeSet::new();
    for (point, desired) in points {
        if !checked.insert(point.config_key.as_str()) {
            continue;
        }
        let plan = diff(desired, live, &Estimates::default(), &options);
        // The most fundamental reason first: a replaced cluster also brings the creates
        // that go with it (e.g. a configuration for the new Kafka version), and "replaced
        // (ZooKeeper to KRaft)" is what the user has to act on.
        let mut changes: Vec<_> = plan.changes().collect();
        changes.sort_by_key(|a| match &a.op {
            Op::Replace { .. } => 0,
            Op::Delete(_) => 1,
            _ => 2,
        });
        for a in changes {
            let refuse = |what: String| RestoreError::Irreversible {
                point: point.id.clone(),
                resource: a.id.to_string(),
                what,
            };
            let why = || {
                a.reason_text()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            };
            match &a.op {
                Op::Replace { .. } => return Err(refuse(format!("replaced{}", why()))),
                Op::Delete(_) => return Err(refuse("deleted".into())),
                Op::Create(_) => return Err(refuse("created".into())),
                Op::KafkaUpdate { updates, .. } => {
                    for u in updates {
                        match u {
                            ClusterUpdate::KafkaVersion { target, .. } => {
                                return Err(refuse(format!(
                                    "a Kafka upgrade to {target} (MSK cannot downgrade)"
                                )));
                            }
                            ClusterUpdate::BrokerStorage(gb) => {
                                return Err(refuse(format!(
                                    "its storage grown to {gb} GiB (MSK storage only grows)"
                                )));
                            }
                            ClusterUpdate::BrokerCount(n) => {
                                return Err(refuse(format!(
                                    "{n} brokers (envctl does not remove MSK brokers in place)"
                                )));
                            }
                            _ => {}
                        }
                    }
                }
                Op::RdsModify { modification, .. } => {
                    if let Some(gb) = modification.storage_gb {
                        return Err(refuse(format!(
                            "its storage grown to {gb} GiB (RDS storage only grows)"
                        )));
                    }
                    if let Some(v) = &modification.engine_version {
                        return Err(refuse(format!(
                            "an engine upgrade to {v} (RDS does not downgrade)"
                        )));
                    }
                }
                Op::RdsParameterGroupModify { parameters, .. } => {
                    let before = baseline.parameter_groups.get(a.id.name());
                    if let Some(name) = parameters
                        .keys()
                        .find(|n| before.is_none_or(|b| !b.contains_key(*n)))
                    {
                        return Err(refuse(format!(
                            "parameter {name} set, which is at the engine default before the run (envctl cannot reset it)"
                        )));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Whether any resource of the live state carries envctl's adopted marker: the environment
/// existed before envctl, and a matrix on it restores by default.
pub fn adopted(live: &LiveState) -> bool {
    let marked = |tags: &BTreeMap<String, String>| tags.contains_key(tag::ADOPTED);
    live.cluster.as_ref().is_some_and(|c| marked(&c.tags))
        || live.services.values().any(|s| marked(&s.tags))
        || live.kafka.values().any(|k| marked(&k.tags))
        || live.db_instances.values().any(|d| marked(&d.tags))
}

/// The plan that puts the live state back to the baseline: only operations that reuse what
/// existed (UpdateService with the old revision ARN, UpdateClusterConfiguration with the old
/// configuration revision, UpdateBrokerType, ModifyDBInstance, ModifyDBParameterGroup with
/// the old values), each with the planner's estimate.
pub fn restore_plan(baseline: &Baseline, live: &LiveState, est: &Estimates) -> Plan {
    let mut actions: Vec<Action> = Vec::new();
    let mut group_actions: Vec<ResourceId> = Vec::new();
    for (group, values) in &baseline.parameter_groups {
        let now = live.db_parameter_groups.get(group).map(|g| &g.parameters);
        let changes: Vec<Change> = values
            .iter()
            .filter(|(k, v)| now.and_then(|n| n.get(*k)) != Some(*v))
            .map(|(k, v)| {
                Change::new(
                    k.clone(),
                    now.and_then(|n| n.get(k)).cloned(),
                    Some(v.clone()),
                )
            })
            .collect();
        if changes.is_empty() {
            continue;
        }
        let mut users: Vec<&LiveDb> = live
            .db_instances
            .values()
            .filter(|d| d.parameter_group.as_deref() == Some(group.as_str()))
            .collect();
        users.sort_by_key(|d| d.source.is_some());
        let parameters = changes
            .iter()
            .filter_map(|c| Some((c.field.clone(), c.new.clone()?)))
            .collect();
        let id = ResourceId::db_parameter_group(group);
        group_actions.push(id.clone());
        actions.push(
            Action::new(
                id,
                ActionKind::UpdateInPlace,
                Op::RdsParameterGroupModify {
                    parameters,
                    reset: Vec::new(),
                    reboot: users.iter().map(|d| d.identifier.clone()).collect(),
                    adopt: None,
                },
            )
            .changes(changes)
            .estimate(est.rds_parameter_group + est.rds_reboot * users.len() as f64)
            .reason("restore: the parameter values before the run"),
        );
    }
    // Writer first: a reader's class change waits for the writer's.
    let mut dbs: Vec<(&String, &DbBaseline)> = baseline.db_instances.iter().collect();
    dbs.sort_by_key(|(id, _)| {
        live.db_instances
            .get(*id)
            .is_some_and(|d| d.source.is_some())
    });
    let mut writer: Option<ResourceId> = None;
    for (db_id, b) in dbs {
        let Some(l) = live.db_instances.get(db_id) else {
            continue;
        };
        let mut m = DbModification::default();
        let mut changes = Vec::new();
        if l.class != b.class {
            changes.push(Change::new(
                "class",
                Some(l.class.clone()),
                Some(b.class.clone()),
            ));
            m.class = Some(b.class.clone());
        }
        if l.parameter_group != b.parameter_group
            && let Some(group) = &b.parameter_group
        {
            changes.push(Change::new(
                "parameter_group",
                l.parameter_group.clone(),
                Some(group.clone()),
            ));
            m.parameter_group = Some(group.clone());
        }
        let id = ResourceId::db_instance(db_id);
        if l.source.is_none() {
            writer = Some(id.clone());
        }
        if changes.is_empty() {
            continue;
        }
        let mut deps = group_actions.clone();
        deps.extend(
            writer
                .iter()
                .filter(|w| **w != id && actions.iter().any(|a| &a.id == *w))
                .cloned(),
        );
        actions.push(
            Action::new(
                id,
                ActionKind::UpdateInPlace,
                Op::RdsModify {
                    modification: m,
                    adopt: None,
                    // Puts a class or group back: the endpoint stays what the run knows.
                    role: None,
                },
            )
            .changes(changes)
            .estimate(est.rds_class_change)
            .deps(deps)
            .reason("restore: the class and parameter group before the run"),
        );
    }
    for (key, b) in &baseline.kafka {
        let Some(l) = live.kafka.get(&b.name) else {
            continue;
        };
        let brokers = f64::from(l.brokers.max(1));
        let mut updates = Vec::new();
        let mut changes = Vec::new();
        let mut secs = 0.0;
        if l.broker_type != b.broker_type {
            changes.push(Change::new(
                "broker_type",
                Some(l.broker_type.clone()),
                Some(b.broker_type.clone()),
            ));
            updates.push(ClusterUpdate::BrokerType(b.broker_type.clone()));
            secs += est.msk_broker_type_per_broker * brokers;
        }
        let running = (l.configuration_arn.clone(), l.configuration_revision);
        if let (Some(arn), Some(revision)) = (&b.configuration_arn, b.configuration_revision)
            && running != (Some(arn.clone()), Some(revision))
        {
            changes.push(Change::new(
                "configuration",
                running.1.map(|r| format!("revision {r}")),
                Some(format!("revision {revision}")),
            ));
            updates.push(ClusterUpdate::ConfigurationRevision {
                arn: arn.clone(),
                revision,
            });
            secs += est.msk_configuration_per_broker * brokers;
        }
        if updates.is_empty() {
            continue;
        }
        actions.push(
            Action::new(
                ResourceId::kafka_cluster(key),
                ActionKind::RollingUpdate,
                Op::KafkaUpdate {
                    arn: l.arn.clone(),
                    updates,
                    adopt: false,
                    // Only the explicit revision of the baseline is run; the endpoints
                    // published after are the cluster's preferred ones.
                    configuration: None,
                    security_protocol: None,
                },
            )
            .changes(changes)
            .estimate(secs)
            .reason("restore: the broker type and configuration revision before the run"),
        );
    }
    for (name, b) in &baseline.services {
        let Some(l) = live.services.get(name) else {
            continue;
        };
        let revision_changes = l.task_definition != b.task_definition;
        let count = (l.desired_count != b.desired_count).then_some(b.desired_count);
        if !revision_changes && count.is_none() {
            continue;
        }
        let mut changes = Vec::new();
        if revision_changes {
            changes.push(Change::new(
                "task_definition",
                Some(short(&l.task_definition).to_string()),
                Some(short(&b.task_definition).to_string()),
            ));
        }
        if let Some(c) = count {
            changes.push(Change::new(
                "desired_count",
                Some(l.desired_count.to_string()),
                Some(c.to_string()),
            ));
        }
        let (kind, secs) = if revision_changes {
            (ActionKind::RollingUpdate, est.ecs_rolling())
        } else {
            (ActionKind::UpdateInPlace, est.ecs_task_start)
        };
        actions.push(
            Action::new(
                ResourceId::service(name),
                kind,
                Op::EcsServiceRestore {
                    cluster: live
                        .cluster
                        .as_ref()
                        .map(|c| c.name.clone())
                        .unwrap_or_default(),
                    running: l.task_definition.clone(),
                    revision: b.task_definition.clone(),
                    count,
                },
            )
            .changes(changes)
            .estimate(secs)
            .reason("restore: the revision and count before the run"),
        );
    }
    let estimate = critical_path(&actions);
    Plan::new(baseline.env.clone(), actions, Vec::new(), estimate)
}

fn short(arn: &str) -> &str {
    envctl_aws_model::arn::resource_name(arn)
}

/// Per resource of the baseline: whether the live state equals it, and if not, how.
pub fn verify(baseline: &Baseline, live: &LiveState) -> Vec<crate::results::ResourceVerification> {
    let mut out = Vec::new();
    let mut push = |resource: ResourceId, differences: Vec<String>| {
        out.push(crate::results::ResourceVerification {
            resource: resource.to_string(),
            ok: differences.is_empty(),
            differences,
        });
    };
    let differ = |field: &str, now: &dyn std::fmt::Display, before: &dyn std::fmt::Display| {
        format!("{field}: {now}, baseline {before}")
    };
    for (group, values) in &baseline.parameter_groups {
        let now = live.db_parameter_groups.get(group).map(|g| &g.parameters);
        let diffs = values
            .iter()
            .filter(|(k, v)| now.and_then(|n| n.get(*k)) != Some(*v))
            .map(|(k, v)| {
                let current = now
                    .and_then(|n| n.get(k))
                    .map_or("(not set)", String::as_str);
                differ(k, &current, v)
            })
            .collect();
        push(ResourceId::db_parameter_group(group), diffs);
    }
    for (id, b) in &baseline.db_instances {
        let diffs = match live.db_instances.get(id) {
            None => vec!["missing".to_string()],
            Some(l) => {
                let mut d = Vec::new();
                if l.class != b.class {
                    d.push(differ("class", &l.class, &b.class));
                }
                if l.parameter_group != b.parameter_group {
                    d.push(differ(
                        "parameter_group",
                        &l.parameter_group.clone().unwrap_or_default(),
                        &b.parameter_group.clone().unwrap_or_default(),
                    ));
                }
                d
            }
        };
        push(ResourceId::db_instance(id), diffs);
    }
    for (key, b) in &baseline.kafka {
        let diffs = match live.kafka.get(&b.name) {
            None => vec!["missing".to_string()],
            Some(l) => {
                let mut d = Vec::new();
                if l.broker_type != b.broker_type {
                    d.push(differ("broker_type", &l.broker_type, &b.broker_type));
                }
                if l.kafka_version != b.kafka_version {
                    d.push(differ("kafka_version", &l.kafka_version, &b.kafka_version));
                }
                if l.configuration_arn != b.configuration_arn
                    || l.configuration_revision != b.configuration_revision
                {
                    let show = |arn: &Option<String>, rev: Option<i64>| {
                        format!(
                            "{} revision {}",
                            arn.as_deref().map_or("(none)", short),
                            rev.map_or("-".to_string(), |r| r.to_string())
                        )
                    };
                    d.push(differ(
                        "configuration",
                        &show(&l.configuration_arn, l.configuration_revision),
                        &show(&b.configuration_arn, b.configuration_revision),
                    ));
                }
                d
            }
        };
        push(ResourceId::kafka_cluster(key), diffs);
    }
    for (name, b) in &baseline.services {
        let diffs = match live.services.get(name) {
            None => vec!["missing".to_string()],
            Some(l) => {
                let mut d = Vec::new();
                if l.task_definition != b.task_definition {
                    d.push(differ(
                        "task_definition",
                        &short(&l.task_definition),
                        &short(&b.task_definition),
                    ));
                }
                if l.desired_count != b.desired_count {
                    d.push(differ("desired_count", &l.desired_count, &b.desired_count));
                }
                d
            }
        };
        push(ResourceId::service(name), diffs);
    }
    out
}
