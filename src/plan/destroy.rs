//! The destroy plan: every resource of the environment that envctl owns, deleted in reverse
//! dependency order. Nothing without the environment's tags is ever in it.
use super::action::{Action, ActionKind, Change, Conflict, key};
use super::diff::Plan;
use super::estimate::Estimates;
use crate::model::DesiredState;
use crate::model::live::{LiveState, owned_by};

/// Key of the action that deregisters and deletes a family's task-definition revisions.
pub fn task_definitions_key(family: &str) -> String {
    format!("ecs/task-definitions/{family}")
}

/// `registered` names the task-definition families envctl knows revisions of (its cache).
pub fn destroy_plan(
    desired: &DesiredState,
    live: &LiveState,
    registered: &std::collections::BTreeSet<String>,
    est: &Estimates,
) -> Plan {
    let env = desired.env.as_str();
    let mut actions = Vec::new();
    let mut conflicts = Vec::new();
    let delete =
        |resource: String, changes: Vec<Change>, secs: f64, depends_on: Vec<String>| Action {
            resource,
            kind: ActionKind::Delete,
            changes,
            reason: None,
            estimate_secs: secs,
            depends_on,
        };

    let mut service_keys = Vec::new();
    for (name, s) in &live.services {
        if owned_by(&s.tags, env) {
            let k = key::service(name);
            actions.push(delete(
                k.clone(),
                vec![Change::new(
                    "desired_count",
                    Some(s.desired_count.to_string()),
                    Some("0".into()),
                )],
                est.ecs_service_delete,
                vec![],
            ));
            service_keys.push(k);
        } else if desired.services.contains_key(name) {
            conflicts.push(Conflict {
                resource: key::service(name),
                message: "not tagged as this environment's: left alone".into(),
            });
        }
    }
    // Revisions of the env's families (desired ones and those of owned services).
    let mut families: Vec<String> = desired
        .services
        .values()
        .map(|s| s.task_definition.family.clone())
        .collect();
    families.extend(
        live.services
            .values()
            .filter(|s| owned_by(&s.tags, env))
            .filter_map(|s| {
                s.task_definition
                    .rsplit('/')
                    .next()
                    .and_then(|r| r.rsplit_once(':'))
                    .map(|(f, _)| f.to_string())
            }),
    );
    families.sort();
    families.dedup();
    // Only families with revisions to remove: a family of a running service, or one envctl
    // registered (a second destroy then has nothing left to do).
    let in_use: std::collections::BTreeSet<String> = live
        .services
        .values()
        .filter(|s| owned_by(&s.tags, env))
        .filter_map(|s| {
            s.task_definition
                .rsplit('/')
                .next()
                .and_then(|r| r.rsplit_once(':'))
                .map(|(f, _)| f.to_string())
        })
        .collect();
    families.retain(|f| in_use.contains(f) || registered.contains(f));
    for family in &families {
        let service = desired
            .services
            .values()
            .find(|s| &s.task_definition.family == family)
            .map(|s| key::service(&s.name));
        let deps = service
            .filter(|k| service_keys.contains(k))
            .into_iter()
            .collect();
        actions.push(delete(
            task_definitions_key(family),
            vec![Change::new("revisions", Some("all".into()), None)],
            1.0,
            deps,
        ));
    }
    let mut kafka_keys = Vec::new();
    for k in live.kafka.values() {
        if !owned_by(&k.tags, env) {
            if desired.kafka.values().any(|d| d.name == k.name) {
                conflicts.push(Conflict {
                    resource: format!("kafka/cluster/{}", k.name),
                    message: "not tagged as this environment's: left alone".into(),
                });
            }
            continue;
        }
        let key_name = desired
            .kafka
            .iter()
            .find(|(_, d)| d.name == k.name)
            .map(|(key, _)| key.clone())
            .unwrap_or_else(|| k.name.clone());
        let resource = key::kafka_cluster(&key_name);
        actions.push(delete(
            resource.clone(),
            vec![Change::new(
                "broker_type",
                Some(k.broker_type.clone()),
                None,
            )],
            est.msk_delete,
            service_keys.clone(),
        ));
        kafka_keys.push(resource);
    }
    for (key_name, d) in &desired.kafka {
        if live
            .kafka_configurations
            .contains_key(&d.configuration.name)
        {
            actions.push(delete(
                key::kafka_configuration(key_name),
                vec![],
                1.0,
                kafka_keys.clone(),
            ));
        }
    }
    let mut reader_keys = Vec::new();
    let mut writer_keys = Vec::new();
    for db in live.db_instances.values() {
        if !owned_by(&db.tags, env) {
            conflicts.push(Conflict {
                resource: key::db_instance(&db.identifier),
                message: "not tagged as this environment's: left alone".into(),
            });
            continue;
        }
        let k = key::db_instance(&db.identifier);
        if db.source.is_some() {
            actions.push(delete(
                k.clone(),
                vec![Change::new("class", Some(db.class.clone()), None)],
                est.rds_delete,
                service_keys.clone(),
            ));
            reader_keys.push(k);
        } else {
            writer_keys.push((k, db.class.clone()));
        }
    }
    let mut db_keys = reader_keys.clone();
    for (k, class) in writer_keys {
        let mut deps = service_keys.clone();
        deps.extend(reader_keys.iter().cloned());
        actions.push(delete(
            k.clone(),
            vec![Change::new("class", Some(class), None)],
            est.rds_delete,
            deps,
        ));
        db_keys.push(k);
    }
    for g in live.db_parameter_groups.values() {
        if owned_by(&g.tags, env) {
            actions.push(delete(
                key::db_parameter_group(&g.name),
                vec![],
                1.0,
                db_keys.clone(),
            ));
        }
    }
    let foreign: Vec<&str> = live
        .services
        .values()
        .filter(|s| !owned_by(&s.tags, env))
        .map(|s| s.name.as_str())
        .collect();
    if let Some(c) = &live.cluster
        && owned_by(&c.tags, env)
        && c.status == "ACTIVE"
    {
        if foreign.is_empty() {
            actions.push(delete(
                key::cluster(&c.name),
                vec![],
                1.0,
                service_keys.clone(),
            ));
        } else {
            conflicts.push(Conflict {
                resource: key::cluster(&c.name),
                message: format!(
                    "kept: it also runs services envctl does not own ({})",
                    foreign.join(", ")
                ),
            });
        }
    }
    let estimate_secs = super::diff::critical_path(&actions);
    let fingerprint = {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for a in &actions {
            h.update(a.resource.as_bytes());
        }
        hex::encode(&h.finalize()[..12])
    };
    Plan {
        schema_version: super::diff::PLAN_SCHEMA_VERSION,
        env: desired.env.clone(),
        actions,
        conflicts,
        estimate_secs,
        fingerprint,
    }
}
