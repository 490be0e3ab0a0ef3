//! MSK: each spec cluster's configuration and cluster, and owned clusters the spec no
//! longer has. A cluster is identified by its spec key; a renamed one (its old cluster
//! still live under the old name) is replaced under that key, so the old one is deleted.
use envctl_aws_model::msk::broker_type_change_refusal;
use envctl_aws_model::status::KafkaClusterState;
use std::collections::{BTreeMap, BTreeSet};

use super::{Planner, adoption, creates};
use crate::model::live::{LiveKafka, owned_by};
use crate::model::{KafkaCluster, requests};
use crate::plan::action::{Action, ActionKind, Change, Conflict, ConflictKind, KNOWN_AFTER_APPLY};
use crate::plan::id::ResourceId;
use crate::plan::op::{ClusterUpdate, Create, Delete, Op};
use crate::spec::catalog::kafka_version;

pub(super) fn plan_clusters(p: &mut Planner) {
    for (key, cluster) in &p.desired.kafka {
        plan_cluster(p, key, cluster);
    }
}

fn plan_cluster(p: &mut Planner, kafka_key: &str, cluster: &KafkaCluster) {
    let est = p.est;
    let config_id = ResourceId::kafka_configuration(kafka_key);
    let desired_props = normalize_properties(&cluster.configuration.server_properties);
    let live_config = p.live.kafka_configurations.get(&cluster.configuration.name);
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
    let config_action = match (live_config, config_changes.is_empty()) {
        (None, _) => Action::new(
            config_id.clone(),
            ActionKind::Create,
            Op::Create(creates::kafka_configuration(p.desired, cluster)),
        ),
        (Some(_), true) => Action::new(config_id.clone(), ActionKind::NoOp, Op::NoOp),
        (Some(c), false) => Action::new(
            config_id.clone(),
            ActionKind::UpdateInPlace,
            Op::KafkaConfigurationUpdate {
                arn: c.arn.clone(),
                request: requests::create_configuration(cluster),
                description: creates::configuration_description(p.env()),
            },
        )
        .reason("UpdateConfiguration: a new revision"),
    };
    let config_kind = config_action.kind;
    p.push(
        config_action
            .changes(config_changes)
            .estimate(est.msk_configuration_write),
    );

    let id = ResourceId::kafka_cluster(kafka_key);
    let Some(l) = p.live.kafka.get(&cluster.name) else {
        let changes = vec![
            Change::new("broker_type", None, Some(cluster.broker_type.clone())),
            Change::new("brokers", None, Some(cluster.brokers.to_string())),
            Change::new("kafka_version", None, Some(cluster.kafka_version.clone())),
            Change::new("storage_gb", None, Some(cluster.storage_gb.to_string())),
        ];
        p.push(
            Action::new(
                id,
                ActionKind::Create,
                Op::Create(creates::kafka_cluster(
                    p.desired,
                    p.live,
                    cluster,
                    config_kind != ActionKind::NoOp,
                )),
            )
            .changes(changes)
            .estimate(est.msk_create)
            .deps(vec![config_id]),
        );
        return;
    };
    if !p.owned(&l.tags) {
        p.conflict(id, "an MSK cluster");
        return;
    }
    let adopt = adoption(&l.tags, p.env());
    let mut changes = adopt.clone();
    let mut kind = if changes.is_empty() {
        ActionKind::NoOp
    } else {
        ActionKind::UpdateInPlace
    };
    let mut reasons: Vec<String> = Vec::new();
    let mut updates: Vec<ClusterUpdate> = Vec::new();
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
    // The cluster must run the configuration's latest revision.
    let config_current = match (live_config, &l.configuration_arn, l.configuration_revision) {
        (Some(c), Some(arn), Some(rev)) => {
            &c.arn == arn && c.latest_revision == rev && config_kind == ActionKind::NoOp
        }
        _ => false,
    };
    let mut configuration_sent = false;
    // MSK moves clusters past their version's end of support by itself, without notice
    // (MSK Developer Guide, "Amazon MSK version support"): a live version above the pinned
    // one, in the same metadata mode, is AWS's doing and converged, like RDS's automatic
    // minor upgrades; sending it back would be a downgrade, i.e. a delete and recreate.
    let upgraded_by_msk = l.kafka_version != cluster.kafka_version
        && l.kraft() == cluster.kraft
        && msk_version_order(&l.kafka_version) > msk_version_order(&cluster.kafka_version);
    if upgraded_by_msk {
        reasons.push(format!(
            "MSK upgraded Kafka {} -> {} (end of support, or by hand): converged; pin {} in the spec to say so",
            cluster.kafka_version, l.kafka_version, l.kafka_version
        ));
    }
    if l.kafka_version != cluster.kafka_version && !upgraded_by_msk {
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
            // MSK takes the new configuration revision in the same operation.
            updates.push(ClusterUpdate::KafkaVersion {
                target: cluster.kafka_version.clone(),
                with_configuration: !config_current,
            });
            configuration_sent = !config_current;
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
        // UpdateBrokerType follows MSK's migration paths only; any other change is a new
        // cluster (MSK Developer Guide, "Update the Amazon MSK cluster broker size").
        match broker_type_change_refusal(&l.broker_type, &cluster.broker_type) {
            Some(why) => {
                reasons.push(why);
                kind = ActionKind::Replace;
            }
            None => {
                kind = kind.max(ActionKind::RollingUpdate);
                secs += est.msk_broker_type_per_broker * brokers;
                updates.push(ClusterUpdate::BrokerType(cluster.broker_type.clone()));
            }
        }
    }
    // Storage grows before brokers are added (fewer bytes to rebalance onto new brokers);
    // the changes list them in the plan's usual order.
    let (mut storage_update, mut count_update) = (None, None);
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
            count_update = Some(ClusterUpdate::BrokerCount(cluster.brokers));
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
        } else if let Some(until) = l.storage_cool_down_until {
            // MSK would answer BadRequestException mid-apply: say so in the plan, before any
            // call, with when it accepts the growth, and leave the storage alone.
            changes.pop();
            p.conflicts.push(Conflict {
                resource: id.clone(),
                message: format!(
                    "storage_gb {} -> {} refused: MSK needs a cool-down of at least 6 hours after every storage scaling (up to over 24 hours); the next is accepted from {} at the earliest",
                    l.storage_gb,
                    cluster.storage_gb,
                    crate::time::rfc3339(until)
                ),
                kind: ConflictKind::Refused,
            });
        } else {
            kind = kind.max(ActionKind::UpdateInPlace);
            secs += est.msk_storage;
            storage_update = Some(ClusterUpdate::BrokerStorage(cluster.storage_gb));
        }
    }
    updates.extend(storage_update);
    updates.extend(count_update);
    if !config_current {
        let old = match (&l.configuration_arn, l.configuration_revision) {
            (Some(arn), Some(rev)) => Some(format!(
                "{} revision {rev}",
                envctl_aws_model::arn::msk_name(arn).unwrap_or(arn)
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
        if !configuration_sent {
            updates.push(ClusterUpdate::Configuration);
        }
    }
    let mut op = Op::KafkaUpdate {
        arn: l.arn.clone(),
        updates,
        adopt: !adopt.is_empty(),
        configuration: Some(creates::configuration_revision(
            p.live,
            cluster,
            config_kind != ActionKind::NoOp,
        )),
        security_protocol: Some(cluster.security_protocol.clone()),
    };
    if kind == ActionKind::NoOp && l.state != KafkaClusterState::Active {
        changes.push(Change::new(
            "state",
            Some(l.state.clone()),
            Some("ACTIVE".into()),
        ));
        kind = ActionKind::UpdateInPlace;
        reasons.push("wait for a change already in progress".into());
        secs = est.msk_create;
        op = Op::KafkaAwait {
            arn: l.arn.clone(),
            security_protocol: cluster.security_protocol.clone(),
        };
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
        op = Op::Replace {
            delete: delete_op(l),
            create: creates::kafka_cluster(
                p.desired,
                p.live,
                cluster,
                config_kind != ActionKind::NoOp,
            ),
        };
    }
    if kind == ActionKind::NoOp {
        op = Op::NoOp;
    }
    p.push(
        Action::new(id, kind, op)
            .changes(changes)
            .reasons(reasons)
            .estimate(secs)
            .deps(vec![config_id]),
    );
}

fn delete_op(l: &LiveKafka) -> Delete {
    Delete::KafkaCluster {
        name: l.name.clone(),
        arn: l.arn.clone(),
    }
}

/// Owned clusters no spec key names, deleted after the services moved off them. One whose
/// name is a spec key being created is that key's old cluster: a rename, which replaces.
pub(super) fn plan_removed(p: &mut Planner) {
    let services = p.changed_services();
    let desired_names: BTreeSet<&str> = p.desired.kafka.values().map(|k| k.name.as_str()).collect();
    let removed: Vec<&LiveKafka> = p
        .live
        .kafka
        .values()
        .filter(|l| !desired_names.contains(l.name.as_str()) && owned_by(&l.tags, p.env()))
        .collect();
    for l in removed {
        let id = ResourceId::kafka_cluster(&l.name);
        let renamed = p
            .actions
            .iter_mut()
            .find(|a| a.id == id && matches!(a.op, Op::Create(Create::KafkaCluster { .. })));
        if let Some(a) = renamed {
            let Op::Create(create) = std::mem::take(&mut a.op) else {
                continue;
            };
            if let Create::KafkaCluster { name, .. } = &create {
                a.changes.insert(
                    0,
                    Change::new("name", Some(l.name.clone()), Some(name.clone())),
                );
            }
            a.kind = ActionKind::Replace;
            a.reasons
                .push("renamed: the old cluster is deleted, a new one created".into());
            a.estimate_secs = p.est.msk_delete + p.est.msk_create;
            a.op = Op::Replace {
                delete: delete_op(l),
                create,
            };
            continue;
        }
        p.actions.push(
            Action::new(id, ActionKind::Delete, Op::Delete(delete_op(l)))
                .changes(vec![Change::new(
                    "broker_type",
                    Some(l.broker_type.clone()),
                    None,
                )])
                .reason("no longer in the spec")
                .estimate(p.est.msk_delete)
                .deps(services.clone()),
        );
    }
    plan_superseded_configurations(p);
}

/// Configurations of this env that no spec cluster runs any more: the one a version upgrade
/// left behind (configurations are named per Kafka version, `model::kafka_configuration_name`)
/// or one of a removed cluster. Observe reads only desired configurations and those whose
/// description carries the env's mark, so every other one here is the env's own. MSK refuses
/// to delete a configuration a cluster still uses, so each is deleted after the clusters of
/// this plan moved off it; one a cluster outside the plan still runs is left alone.
fn plan_superseded_configurations(p: &mut Planner) {
    let wanted: BTreeSet<&str> = p
        .desired
        .kafka
        .values()
        .map(|k| k.configuration.name.as_str())
        .collect();
    let cluster_actions: BTreeMap<&str, ResourceId> = p
        .actions
        .iter()
        .filter_map(|a| match &a.id {
            ResourceId::KafkaCluster { .. } => Some(a.id.clone()),
            _ => None,
        })
        .flat_map(|id| {
            // A live cluster is planned under its spec key, or under its own name once removed.
            let by_key = p.desired.kafka.get(id.name()).map(|k| k.name.as_str());
            let by_name = p.live.kafka.get(id.name()).map(|l| l.name.as_str());
            [by_key, by_name]
                .into_iter()
                .flatten()
                .map(move |name| (name, id.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut deletes = Vec::new();
    for c in p.live.kafka_configurations.values() {
        if wanted.contains(c.name.as_str()) {
            continue;
        }
        let users: Vec<&LiveKafka> = p
            .live
            .kafka
            .values()
            .filter(|l| l.configuration_arn.as_deref() == Some(c.arn.as_str()))
            .collect();
        let deps: Option<Vec<ResourceId>> = users
            .iter()
            .map(|l| cluster_actions.get(l.name.as_str()).cloned())
            .collect();
        let Some(deps) = deps else {
            continue;
        };
        deletes.push(
            Action::new(
                ResourceId::kafka_configuration(&c.name),
                ActionKind::Delete,
                Op::Delete(Delete::KafkaConfiguration { arn: c.arn.clone() }),
            )
            .changes(vec![Change::new(
                "revision",
                Some(c.latest_revision.to_string()),
                None,
            )])
            .reason("no cluster of the spec runs it (superseded by a Kafka version change, or its cluster removed)")
            .estimate(p.est.msk_configuration_write)
            .deps(deps),
        );
    }
    p.actions.extend(deletes);
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

/// An MSK version name's order: (major, minor, patch), a wildcard patch (`3.7.x`: MSK
/// picks the latest patch) above every number; suffixes (`.kraft`, `.tiered`) do not count.
pub fn msk_version_order(version: &str) -> Option<(u32, u32, u32)> {
    let (major, minor) = kafka_version(version)?;
    let patch = match version.split('.').nth(2) {
        Some("x") => u32::MAX,
        Some(p) => p.parse().ok()?,
        None => 0,
    };
    Some((major, minor, patch))
}
