//! diff(desired, live) -> Plan: pure, no network. Each resource is compared on the fields
//! envctl sets, in canonical form (sorted environment, AWS defaults filled in), so a
//! converged environment plans to nothing.
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::action::{Action, ActionKind, Change, Conflict, KNOWN_AFTER_APPLY, key};
use super::estimate::Estimates;
use crate::model::live::{LiveState, owned_by};
use crate::model::{DesiredState, EcsService, KafkaCluster, TaskDefinition};
use crate::spec::catalog::kafka_version;
use crate::spec::deferred::Outputs;

/// Plan JSON schema version (docs/plan-schema.md).
pub const PLAN_SCHEMA_VERSION: u32 = 1;

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
    /// Hash of the actions: `apply PLANFILE` re-plans and refuses if it differs.
    pub fingerprint: String,
}

impl Plan {
    pub fn changes(&self) -> impl Iterator<Item = &Action> {
        self.actions.iter().filter(|a| a.kind != ActionKind::NoOp)
    }

    pub fn has_changes(&self) -> bool {
        self.changes().next().is_some()
    }

    pub fn action(&self, resource: &str) -> Option<&Action> {
        self.actions.iter().find(|a| a.resource == resource)
    }
}

#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// Take over resources with matching names that envctl does not own.
    pub adopt: bool,
}

/// Compares the desired state with what exists.
pub fn diff(
    desired: &DesiredState,
    live: &LiveState,
    est: &Estimates,
    options: &DiffOptions,
) -> Plan {
    let mut actions = Vec::new();
    let mut conflicts = Vec::new();
    let env = desired.env.as_str();
    let owned = |tags: &BTreeMap<String, String>| options.adopt || owned_by(tags, env);

    // Data stores first: their outputs feed the task definitions.
    if let Some(db) = &desired.db {
        if let Some(group) = &db.parameter_group {
            let k = key::db_parameter_group(&group.name);
            match live.db_parameter_groups.get(&group.name) {
                None => actions.push(action(
                    k,
                    ActionKind::Create,
                    param_changes(&BTreeMap::new(), &group.parameters),
                    None,
                    est.rds_parameter_group,
                    vec![],
                )),
                Some(l) if !owned(&l.tags) => conflicts.push(conflict(&k, "a DB parameter group")),
                Some(l) => {
                    let changes = param_changes(&l.parameters, &group.parameters);
                    let kind = if changes.is_empty() {
                        ActionKind::NoOp
                    } else {
                        ActionKind::UpdateInPlace
                    };
                    let reason = (!changes.is_empty()).then(|| "ModifyDBParameterGroup, then a reboot of the instances using it: static parameters such as max_connections apply only at a reboot".to_string());
                    let users = live
                        .db_instances
                        .values()
                        .filter(|d| d.parameter_group.as_deref() == Some(group.name.as_str()))
                        .count();
                    let secs = est.rds_parameter_group + est.rds_reboot * users as f64;
                    actions.push(action(k, kind, changes, reason, secs, vec![]));
                }
            }
        }
        let pg_dep: Vec<String> = db
            .parameter_group
            .iter()
            .map(|g| key::db_parameter_group(&g.name))
            .collect();
        for (i, inst) in std::iter::once(&db.writer)
            .chain(db.readers.iter())
            .enumerate()
        {
            let k = key::db_instance(&inst.identifier);
            let mut deps = pg_dep.clone();
            if i > 0 {
                deps.push(key::db_instance(&db.writer.identifier));
            }
            let create_secs = if i == 0 {
                est.rds_create
            } else {
                est.rds_replica_create
            };
            match live.db_instances.get(&inst.identifier) {
                None => {
                    let mut changes = vec![
                        Change::new("class", None, Some(inst.class.clone())),
                        Change::new(
                            "engine",
                            None,
                            Some(
                                format!(
                                    "{} {}",
                                    inst.engine,
                                    inst.engine_version.clone().unwrap_or_default()
                                )
                                .trim()
                                .to_string(),
                            ),
                        ),
                    ];
                    if let Some(source) = &inst.source {
                        changes.push(Change::new("replica of", None, Some(source.clone())));
                    } else {
                        changes.push(Change::new(
                            "storage_gb",
                            None,
                            Some(inst.storage_gb.to_string()),
                        ));
                    }
                    actions.push(action(
                        k,
                        ActionKind::Create,
                        changes,
                        None,
                        create_secs,
                        deps,
                    ));
                }
                Some(l) if !owned(&l.tags) => conflicts.push(conflict(&k, "a DB instance")),
                Some(l) => {
                    let mut changes = adoption(&l.tags, env);
                    let mut kind = if changes.is_empty() {
                        ActionKind::NoOp
                    } else {
                        ActionKind::UpdateInPlace
                    };
                    let mut reasons = Vec::new();
                    let mut secs = 0.0;
                    let live_class = l.pending_class.as_ref().unwrap_or(&l.class);
                    if live_class != &inst.class {
                        changes.push(Change::new(
                            "class",
                            Some(l.class.clone()),
                            Some(inst.class.clone()),
                        ));
                        kind = kind.max(ActionKind::UpdateInPlace);
                        reasons.push("ModifyDBInstance with ApplyImmediately: the instance is unavailable while its class changes");
                        secs += est.rds_class_change;
                    }
                    if inst.source.is_none() && l.storage_gb != inst.storage_gb {
                        changes.push(Change::new(
                            "storage_gb",
                            Some(l.storage_gb.to_string()),
                            Some(inst.storage_gb.to_string()),
                        ));
                        if inst.storage_gb < l.storage_gb {
                            kind = ActionKind::Replace;
                            reasons.push("RDS storage can only grow");
                        } else {
                            kind = kind.max(ActionKind::UpdateInPlace);
                            secs += est.rds_storage_change;
                        }
                    }
                    if l.source.as_deref() != inst.source.as_deref() {
                        changes.push(Change::new(
                            "replica of",
                            l.source.clone(),
                            inst.source.clone(),
                        ));
                        kind = ActionKind::Replace;
                        reasons.push("a replica cannot change its source");
                    }
                    if let Some(v) = &inst.engine_version
                        && inst.source.is_none()
                        && !l.engine_version.starts_with(v.as_str())
                    {
                        changes.push(Change::new(
                            "engine_version",
                            Some(l.engine_version.clone()),
                            Some(v.clone()),
                        ));
                        kind = kind.max(ActionKind::UpdateInPlace);
                        secs += est.rds_version_upgrade;
                    }
                    if inst.parameter_group.is_some() && l.parameter_group != inst.parameter_group {
                        changes.push(Change::new(
                            "parameter_group",
                            l.parameter_group.clone(),
                            inst.parameter_group.clone(),
                        ));
                        kind = kind.max(ActionKind::UpdateInPlace);
                    }
                    // A change in progress (a create or modify of an earlier, interrupted run):
                    // wait for it, so the endpoint is known before services need it.
                    if kind == ActionKind::NoOp && l.status != "available" {
                        changes.push(Change::new(
                            "status",
                            Some(l.status.clone()),
                            Some("available".into()),
                        ));
                        kind = ActionKind::UpdateInPlace;
                        reasons.push("wait for a change already in progress");
                        secs = create_secs;
                    }
                    if kind == ActionKind::Replace {
                        secs = est.rds_delete + create_secs;
                    }
                    let reason = (!reasons.is_empty()).then(|| reasons.join("; "));
                    actions.push(action(k, kind, changes, reason, secs, deps));
                }
            }
        }
    }

    for (kafka_key, cluster) in &desired.kafka {
        plan_kafka(
            kafka_key,
            cluster,
            live,
            est,
            env,
            options,
            &mut actions,
            &mut conflicts,
        );
    }

    let cluster_key = key::cluster(&desired.cluster.name);
    match &live.cluster {
        None => actions.push(action(
            cluster_key.clone(),
            ActionKind::Create,
            vec![],
            None,
            est.ecs_cluster_create,
            vec![],
        )),
        Some(c) if c.status != "ACTIVE" => actions.push(action(
            cluster_key.clone(),
            ActionKind::Create,
            vec![Change::new(
                "status",
                Some(c.status.clone()),
                Some("ACTIVE".into()),
            )],
            None,
            est.ecs_cluster_create,
            vec![],
        )),
        Some(c) if !owned(&c.tags) => conflicts.push(conflict(&cluster_key, "an ECS cluster")),
        Some(c) => {
            let changes = adoption(&c.tags, env);
            let kind = if changes.is_empty() {
                ActionKind::NoOp
            } else {
                ActionKind::UpdateInPlace
            };
            actions.push(action(
                cluster_key.clone(),
                kind,
                changes,
                None,
                0.0,
                vec![],
            ));
        }
    }

    // Resources whose outputs change in this plan: services that read them wait, and see
    // their values as known after apply.
    let pending_outputs: BTreeSet<String> = actions
        .iter()
        .filter(|a| matches!(a.kind, ActionKind::Create | ActionKind::Replace))
        .filter_map(|a| output_resource(desired, &a.resource))
        .collect();
    let outputs = live.outputs(desired);
    for service in desired.services.values() {
        plan_service(
            service,
            desired,
            live,
            &outputs,
            &pending_outputs,
            est,
            &cluster_key,
            options,
            &mut actions,
            &mut conflicts,
        );
    }

    // Owned services that the spec no longer has.
    for (name, l) in &live.services {
        if !desired.services.contains_key(name) && owned_by(&l.tags, env) {
            actions.push(action(
                key::service(name),
                ActionKind::Delete,
                vec![Change::new(
                    "desired_count",
                    Some(l.desired_count.to_string()),
                    None,
                )],
                Some("no longer in the spec".into()),
                est.ecs_service_delete,
                vec![],
            ));
        }
    }
    let service_keys: Vec<String> = actions
        .iter()
        .filter(|a| a.resource.starts_with("ecs/service/") && a.kind != ActionKind::NoOp)
        .map(|a| a.resource.clone())
        .collect();
    // Owned data stores that the spec no longer has go last, after services moved off them.
    let desired_db: BTreeSet<&str> = desired
        .db
        .iter()
        .flat_map(|d| std::iter::once(&d.writer).chain(d.readers.iter()))
        .map(|i| i.identifier.as_str())
        .collect();
    let mut deleted_dbs: Vec<&crate::model::live::LiveDb> = live
        .db_instances
        .values()
        .filter(|l| !desired_db.contains(l.identifier.as_str()) && owned_by(&l.tags, env))
        .collect();
    deleted_dbs.sort_by_key(|l| l.source.is_none()); // readers before writers
    let reader_keys: Vec<String> = deleted_dbs
        .iter()
        .filter(|l| l.source.is_some())
        .map(|l| key::db_instance(&l.identifier))
        .collect();
    for l in deleted_dbs {
        let mut deps = service_keys.clone();
        if l.source.is_none() {
            deps.extend(reader_keys.iter().cloned());
        }
        actions.push(action(
            key::db_instance(&l.identifier),
            ActionKind::Delete,
            vec![Change::new("class", Some(l.class.clone()), None)],
            Some("no longer in the spec".into()),
            est.rds_delete,
            deps,
        ));
    }
    let desired_kafka: BTreeSet<&str> = desired.kafka.values().map(|k| k.name.as_str()).collect();
    for l in live.kafka.values() {
        if !desired_kafka.contains(l.name.as_str()) && owned_by(&l.tags, env) {
            actions.push(action(
                format!("kafka/cluster/{}", l.name),
                ActionKind::Delete,
                vec![Change::new(
                    "broker_type",
                    Some(l.broker_type.clone()),
                    None,
                )],
                Some("no longer in the spec".into()),
                est.msk_delete,
                service_keys.clone(),
            ));
        }
    }

    // A service waits for a data store only while the store's endpoint is not settled: it is
    // being created or replaced, or an earlier change is still in progress. A broker type
    // change keeps the endpoints, so services need not wait 24 minutes for it.
    let settles: BTreeSet<String> = actions
        .iter()
        .filter(|a| {
            matches!(a.kind, ActionKind::Create | ActionKind::Replace)
                || a.changes
                    .iter()
                    .any(|c| c.field == "status" || c.field == "state")
        })
        .map(|a| a.resource.clone())
        .collect();
    for a in actions
        .iter_mut()
        .filter(|a| a.resource.starts_with("ecs/service/"))
    {
        a.depends_on
            .retain(|d| d.starts_with("ecs/") || settles.contains(d));
    }
    // Dependencies on resources that do nothing are dropped: nothing to wait for.
    let active: BTreeSet<String> = actions
        .iter()
        .filter(|a| a.kind != ActionKind::NoOp)
        .map(|a| a.resource.clone())
        .collect();
    for a in &mut actions {
        a.depends_on.retain(|d| active.contains(d));
        a.depends_on.sort();
        a.depends_on.dedup();
    }
    let estimate_secs = plan_estimate(&actions, est);
    let fingerprint = fingerprint(&actions, &conflicts);
    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        env: desired.env.clone(),
        actions,
        conflicts,
        estimate_secs,
        fingerprint,
    }
}

fn action(
    resource: String,
    kind: ActionKind,
    changes: Vec<Change>,
    reason: Option<String>,
    estimate_secs: f64,
    depends_on: Vec<String>,
) -> Action {
    let estimate_secs = if kind == ActionKind::NoOp {
        0.0
    } else {
        estimate_secs
    };
    Action {
        resource,
        kind,
        changes,
        reason,
        estimate_secs,
        depends_on,
    }
}

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

fn conflict(resource: &str, what: &str) -> Conflict {
    Conflict {
        resource: resource.to_string(),
        message: format!(
            "{what} with this name exists but is not tagged as this environment's (envctl:env); envctl will not change or delete it (use --adopt to take it over)"
        ),
    }
}

/// The output prefix (`rds.writer`, `kafka.main`) a resource key produces, if any.
fn output_resource(desired: &DesiredState, resource: &str) -> Option<String> {
    let (kind, name) = key::split(resource);
    match kind {
        "kafka/cluster" => Some(format!("kafka.{name}")),
        "rds/instance" => {
            let db = desired.db.as_ref()?;
            if db.writer.identifier == name {
                Some("rds.writer".into())
            } else if db.readers.first().is_some_and(|r| r.identifier == name) {
                Some("rds.reader".into())
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The resource key behind an output prefix.
fn output_key(desired: &DesiredState, prefix: &str) -> Option<String> {
    match prefix.split_once('.') {
        Some(("kafka", k)) => Some(key::kafka_cluster(k)),
        Some(("rds", "writer")) => desired
            .db
            .as_ref()
            .map(|d| key::db_instance(&d.writer.identifier)),
        Some(("rds", "reader")) => desired
            .db
            .as_ref()
            .and_then(|d| d.readers.first())
            .map(|r| key::db_instance(&r.identifier)),
        _ => None,
    }
}

fn param_changes(
    live: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
) -> Vec<Change> {
    desired
        .iter()
        .filter(|(k, v)| live.get(*k) != Some(*v))
        .map(|(k, v)| {
            Change::new(
                format!("parameters.{k}"),
                live.get(k).cloned(),
                Some(v.clone()),
            )
        })
        .collect()
}

/// server.properties as sorted `key=value` lines, ignoring comments and blank lines, so
/// formatting differences are not changes.
pub fn normalize_properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn plan_kafka(
    kafka_key: &str,
    cluster: &KafkaCluster,
    live: &LiveState,
    est: &Estimates,
    env: &str,
    options: &DiffOptions,
    actions: &mut Vec<Action>,
    conflicts: &mut Vec<Conflict>,
) {
    let config_key = key::kafka_configuration(kafka_key);
    let desired_props = normalize_properties(&cluster.configuration.server_properties);
    let live_config = live.kafka_configurations.get(&cluster.configuration.name);
    let config_changes: Vec<Change> = match live_config {
        None => desired_props
            .iter()
            .map(|(k, v)| Change::new(k.clone(), None, Some(v.clone())))
            .collect(),
        Some(c) => {
            let old = normalize_properties(&c.server_properties);
            let mut changes: Vec<Change> = desired_props
                .iter()
                .filter(|(k, v)| old.get(*k) != Some(*v))
                .map(|(k, v)| Change::new(k.clone(), old.get(k).cloned(), Some(v.clone())))
                .collect();
            changes.extend(
                old.iter()
                    .filter(|(k, _)| !desired_props.contains_key(*k))
                    .map(|(k, v)| Change::new(k.clone(), Some(v.clone()), None)),
            );
            changes
        }
    };
    let config_kind = match (live_config, config_changes.is_empty()) {
        (None, _) => ActionKind::Create,
        (Some(_), true) => ActionKind::NoOp,
        (Some(_), false) => ActionKind::UpdateInPlace,
    };
    let config_reason = (config_kind == ActionKind::UpdateInPlace)
        .then(|| "UpdateConfiguration: a new revision".to_string());
    actions.push(action(
        config_key.clone(),
        config_kind,
        config_changes,
        config_reason,
        est.msk_configuration_write,
        vec![],
    ));

    let k = key::kafka_cluster(kafka_key);
    let Some(l) = live.kafka.get(&cluster.name) else {
        let changes = vec![
            Change::new("broker_type", None, Some(cluster.broker_type.clone())),
            Change::new("brokers", None, Some(cluster.brokers.to_string())),
            Change::new("kafka_version", None, Some(cluster.kafka_version.clone())),
            Change::new("storage_gb", None, Some(cluster.storage_gb.to_string())),
        ];
        actions.push(action(
            k,
            ActionKind::Create,
            changes,
            None,
            est.msk_create,
            vec![config_key],
        ));
        return;
    };
    if !(options.adopt || owned_by(&l.tags, env)) {
        conflicts.push(conflict(&k, "an MSK cluster"));
        return;
    }
    let mut changes = adoption(&l.tags, env);
    let mut kind = if changes.is_empty() {
        ActionKind::NoOp
    } else {
        ActionKind::UpdateInPlace
    };
    let mut reasons: Vec<String> = Vec::new();
    let mut secs = 0.0;
    let brokers = f64::from(cluster.brokers.max(1));
    if l.kraft() != cluster.kraft {
        let (from, to) = if cluster.kraft {
            ("ZooKeeper", "KRaft")
        } else {
            ("KRaft", "ZooKeeper")
        };
        reasons.push(format!(
            "{from} -> {to}: MSK cannot change a cluster's metadata mode in place"
        ));
        kind = ActionKind::Replace;
    }
    if l.kafka_version != cluster.kafka_version {
        changes.push(Change::new(
            "kafka_version",
            Some(l.kafka_version.clone()),
            Some(cluster.kafka_version.clone()),
        ));
        let upgrade = kafka_version(&cluster.kafka_version) > kafka_version(&l.kafka_version);
        if l.kraft() == cluster.kraft && !upgrade {
            reasons.push("MSK cannot downgrade Kafka".into());
            kind = ActionKind::Replace;
        } else if l.kraft() == cluster.kraft {
            kind = kind.max(ActionKind::RollingUpdate);
            secs += est.msk_version_per_broker * brokers;
        }
    }
    let zones: Vec<String> = cluster.subnets.clone();
    if l.client_subnets != zones {
        changes.push(Change::new(
            "client_subnets",
            Some(l.client_subnets.join(",")),
            Some(zones.join(",")),
        ));
        reasons.push("MSK cannot move brokers to other subnets".into());
        kind = ActionKind::Replace;
    }
    if l.broker_type != cluster.broker_type {
        changes.push(Change::new(
            "broker_type",
            Some(l.broker_type.clone()),
            Some(cluster.broker_type.clone()),
        ));
        kind = kind.max(ActionKind::RollingUpdate);
        secs += est.msk_broker_type_per_broker * brokers;
    }
    if l.brokers != cluster.brokers {
        changes.push(Change::new(
            "brokers",
            Some(l.brokers.to_string()),
            Some(cluster.brokers.to_string()),
        ));
        if cluster.brokers < l.brokers {
            reasons.push("envctl does not remove MSK brokers in place".into());
            kind = ActionKind::Replace;
        } else {
            kind = kind.max(ActionKind::UpdateInPlace);
            secs += est.msk_broker_count;
        }
    }
    if l.storage_gb != cluster.storage_gb {
        changes.push(Change::new(
            "storage_gb",
            Some(l.storage_gb.to_string()),
            Some(cluster.storage_gb.to_string()),
        ));
        if cluster.storage_gb < l.storage_gb {
            reasons.push("MSK storage can only grow".into());
            kind = ActionKind::Replace;
        } else {
            kind = kind.max(ActionKind::UpdateInPlace);
            secs += est.msk_storage;
        }
    }
    // The cluster must run the configuration's latest revision.
    let config_current = match (live_config, &l.configuration_arn, l.configuration_revision) {
        (Some(c), Some(arn), Some(rev)) => {
            &c.arn == arn && c.latest_revision == rev && config_kind == ActionKind::NoOp
        }
        _ => false,
    };
    if !config_current {
        let old = match (&l.configuration_arn, l.configuration_revision) {
            (Some(arn), Some(rev)) => Some(format!(
                "{} revision {rev}",
                arn.rsplit('/').nth(1).unwrap_or(arn)
            )),
            _ => None,
        };
        let new = match (live_config, config_kind) {
            (Some(c), ActionKind::NoOp) => format!(
                "{} revision {}",
                cluster.configuration.name, c.latest_revision
            ),
            _ => format!("{} {KNOWN_AFTER_APPLY}", cluster.configuration.name),
        };
        changes.push(Change::new("configuration", old, Some(new)));
        kind = kind.max(ActionKind::RollingUpdate);
        secs += est.msk_configuration_per_broker * brokers;
    }
    if kind == ActionKind::NoOp && l.state != "ACTIVE" {
        changes.push(Change::new(
            "state",
            Some(l.state.clone()),
            Some("ACTIVE".into()),
        ));
        kind = ActionKind::UpdateInPlace;
        reasons.push("wait for a change already in progress".into());
        secs = est.msk_create;
    }
    if kind == ActionKind::Replace {
        secs = est.msk_delete + est.msk_create;
        if !changes.iter().any(|c| c.field == "kafka_version") {
            changes.push(Change::new(
                "kafka_version",
                Some(l.kafka_version.clone()),
                Some(cluster.kafka_version.clone()),
            ));
        }
    }
    let reason = (!reasons.is_empty()).then(|| reasons.join("; "));
    actions.push(action(k, kind, changes, reason, secs, vec![config_key]));
}

/// Flattens a task definition to `field -> value` for field-level comparison; references
/// that cannot be resolved yet show as known after apply.
fn flatten(td: &TaskDefinition, outputs: &Outputs) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    out.insert("family".into(), td.family.clone());
    out.insert("networkMode".into(), td.network_mode.clone());
    out.insert(
        "requiresCompatibilities".into(),
        td.requires_compatibilities.join(","),
    );
    if let Some(r) = &td.task_role_arn {
        out.insert("taskRoleArn".into(), r.clone());
    }
    if let Some(r) = &td.execution_role_arn {
        out.insert("executionRoleArn".into(), r.clone());
    }
    let single = td.container_definitions.len() == 1;
    for c in &td.container_definitions {
        let p = if single {
            String::new()
        } else {
            format!("{}.", c.name)
        };
        out.insert(format!("{p}name"), c.name.clone());
        out.insert(format!("{p}image"), c.image.clone());
        out.insert(format!("{p}cpu"), c.cpu.to_string());
        out.insert(format!("{p}memory"), c.memory.to_string());
        if let Some(m) = c.memory_reservation {
            out.insert(format!("{p}memoryReservation"), m.to_string());
        }
        out.insert(format!("{p}essential"), c.essential.to_string());
        let ports: Vec<String> = c
            .port_mappings
            .iter()
            .map(|m| format!("{}:{}/{}", m.container_port, m.host_port, m.protocol))
            .collect();
        out.insert(format!("{p}portMappings"), ports.join(","));
        for (name, value) in &c.environment {
            let v = value
                .resolve(outputs)
                .unwrap_or_else(|_| KNOWN_AFTER_APPLY.to_string());
            out.insert(format!("{p}{name}"), v);
        }
        for s in &c.secrets {
            out.insert(format!("{p}secret {}", s.name), s.value_from.clone());
        }
        if let Some(log) = &c.log_configuration {
            out.insert(format!("{p}logDriver"), log.log_driver.clone());
            for (k, v) in &log.options {
                out.insert(format!("{p}log {k}"), v.clone());
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn plan_service(
    service: &EcsService,
    desired: &DesiredState,
    live: &LiveState,
    outputs: &Outputs,
    pending_outputs: &BTreeSet<String>,
    est: &Estimates,
    cluster_key: &str,
    options: &DiffOptions,
    actions: &mut Vec<Action>,
    conflicts: &mut Vec<Conflict>,
) {
    let k = key::service(&service.name);
    let mut deps = vec![cluster_key.to_string()];
    deps.extend(
        service
            .depends_on
            .iter()
            .filter_map(|r| output_key(desired, r)),
    );
    // A value from a resource that is being created or replaced is not known yet, even if
    // an old one exists.
    let mut visible = outputs.clone();
    visible.retain(|name, _| {
        !pending_outputs
            .iter()
            .any(|p| name.starts_with(&format!("{p}.")))
    });
    let new = flatten(&service.task_definition, &visible);
    let Some(l) = live.services.get(&service.name) else {
        let changes = ["image", "cpu", "memory", "memoryReservation"]
            .iter()
            .filter_map(|f| new.get(*f).map(|v| Change::new(*f, None, Some(v.clone()))))
            .chain(std::iter::once(Change::new(
                "desired_count",
                None,
                Some(service.desired_count.to_string()),
            )))
            .collect();
        actions.push(action(
            k,
            ActionKind::Create,
            changes,
            None,
            est.ecs_task_start,
            deps,
        ));
        return;
    };
    if !(options.adopt || owned_by(&l.tags, &desired.env)) {
        conflicts.push(conflict(&k, "an ECS service"));
        return;
    }
    let mut changes = adoption(&l.tags, &desired.env);
    let mut kind = ActionKind::NoOp;
    let mut secs: f64 = 0.0;
    match live.task_definitions.get(&l.task_definition) {
        Some(old_td) => {
            let old = flatten(old_td, &Outputs::new());
            for (field, value) in &new {
                if old.get(field) != Some(value) {
                    changes.push(Change::new(
                        field.clone(),
                        old.get(field).cloned(),
                        Some(value.clone()),
                    ));
                }
            }
            for (field, value) in &old {
                if !new.contains_key(field) {
                    changes.push(Change::new(field.clone(), Some(value.clone()), None));
                }
            }
        }
        None => changes.push(Change::new(
            "task definition",
            Some(format!("{} (content unknown)", l.task_definition)),
            Some(service.task_definition.family.clone()),
        )),
    }
    if changes.iter().any(|c| c.field != ADOPT_FIELD) {
        kind = ActionKind::RollingUpdate;
        secs = est.ecs_rolling();
    } else if !changes.is_empty() {
        kind = ActionKind::UpdateInPlace;
    }
    if l.desired_count != service.desired_count {
        changes.push(Change::new(
            "desired_count",
            Some(l.desired_count.to_string()),
            Some(service.desired_count.to_string()),
        ));
        kind = kind.max(ActionKind::UpdateInPlace);
        secs = secs.max(est.ecs_task_start);
    }
    actions.push(action(k, kind, changes, None, secs, deps));
}

/// Critical path through the dependency graph, or the task-definition rate limit: ECS
/// registers 20 at once and then one per second, and every new revision needs one.
/// The longest chain of actions through `depends_on` (actions run concurrently).
pub fn critical_path(actions: &[Action]) -> f64 {
    let mut finish: BTreeMap<&str, f64> = BTreeMap::new();
    // Actions are pushed after their dependencies, except deletes that wait on services;
    // iterate until stable (the graph is small and acyclic).
    for _ in 0..4 {
        for a in actions {
            let start = a
                .depends_on
                .iter()
                .map(|d| finish.get(d.as_str()).copied().unwrap_or(0.0))
                .fold(0.0, f64::max);
            finish.insert(&a.resource, start + a.estimate_secs);
        }
    }
    finish.values().copied().fold(0.0, f64::max)
}

fn plan_estimate(actions: &[Action], est: &Estimates) -> f64 {
    let critical = critical_path(actions);
    let registrations = actions
        .iter()
        .filter(|a| {
            a.resource.starts_with("ecs/service/")
                && matches!(a.kind, ActionKind::Create | ActionKind::RollingUpdate)
        })
        .count() as f64;
    let rate_bound = if registrations > 0.0 {
        (registrations - 20.0).max(0.0) / 1.0 + est.ecs_task_start
    } else {
        0.0
    };
    critical.max(rate_bound)
}

fn fingerprint(actions: &[Action], conflicts: &[Conflict]) -> String {
    let mut hasher = Sha256::new();
    for a in actions {
        hasher.update(serde_json::to_vec(&(&a.resource, a.kind, &a.changes)).unwrap_or_default());
    }
    for c in conflicts {
        hasher.update(c.resource.as_bytes());
    }
    hex::encode(&hasher.finalize()[..12])
}
