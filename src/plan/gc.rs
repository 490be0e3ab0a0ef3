//! The gc plan: a destroy plan over everything the account's tags say envctl owns (and the
//! filter selects), across clusters, run by the same executor as apply and destroy.
use super::action::{Action, ActionKind, Change, Conflict, ConflictKind};
use super::diff::{Plan, critical_path};
use super::estimate::Estimates;
use super::id::ResourceId;
use super::op::{Delete, Op};
use crate::model::live::{LiveCluster, LiveDb, LiveKafka, LiveService, Tags};

/// What an account and Region contain, as gc reads it.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub clusters: Vec<ClusterInventory>,
    pub kafka: Vec<LiveKafka>,
    pub dbs: Vec<LiveDb>,
}

#[derive(Debug, Clone)]
pub struct ClusterInventory {
    pub cluster: LiveCluster,
    /// Its services that are not INACTIVE.
    pub services: Vec<LiveService>,
}

/// The id of a service in gc's plan, which spans clusters: `ecs/service/<cluster>/<name>`.
pub fn service_id(cluster: &str, name: &str) -> ResourceId {
    ResourceId::service(format!("{cluster}/{name}"))
}

fn delete(id: ResourceId, what: Delete, changes: Vec<Change>, secs: f64) -> Action {
    Action::new(id, ActionKind::Delete, Op::Delete(what))
        .changes(changes)
        .estimate(secs)
}

/// Deletes what `select` accepts: services first, then the data stores (replicas before
/// their writer), and a cluster once its services are gone, unless it runs services gc
/// may not delete.
pub fn gc_plan(
    env: &str,
    inventory: &Inventory,
    select: impl Fn(&Tags) -> bool,
    est: &Estimates,
) -> Plan {
    let mut actions = Vec::new();
    let mut conflicts = Vec::new();
    let mut all_services = Vec::new();
    for c in &inventory.clusters {
        let name = &c.cluster.name;
        let mut mine = Vec::new();
        let mut foreign = 0;
        for s in &c.services {
            if !select(&s.tags) {
                foreign += 1;
                continue;
            }
            let id = service_id(name, &s.name);
            actions.push(delete(
                id.clone(),
                Delete::EcsService {
                    cluster: name.clone(),
                    name: s.name.clone(),
                },
                vec![Change::new(
                    "desired_count",
                    Some(s.desired_count.to_string()),
                    Some("0".into()),
                )],
                est.ecs_service_delete,
            ));
            mine.push(id);
        }
        all_services.extend(mine.iter().cloned());
        if !select(&c.cluster.tags) || c.cluster.status != "ACTIVE" {
            continue;
        }
        let id = ResourceId::ecs_cluster(name);
        if foreign > 0 {
            conflicts.push(Conflict {
                resource: id,
                message: format!("kept: it also runs {foreign} services gc may not delete"),
                kind: ConflictKind::NotOwned,
            });
            continue;
        }
        actions.push(delete(id, Delete::EcsCluster { name: name.clone() }, vec![], 1.0).deps(mine));
    }
    for k in &inventory.kafka {
        if select(&k.tags) && k.state != "DELETING" {
            actions.push(
                delete(
                    ResourceId::kafka_cluster(&k.name),
                    Delete::KafkaCluster {
                        name: k.name.clone(),
                        arn: k.arn.clone(),
                    },
                    vec![Change::new(
                        "broker_type",
                        Some(k.broker_type.clone()),
                        None,
                    )],
                    est.msk_delete,
                )
                .deps(all_services.clone()),
            );
        }
    }
    let dbs: Vec<&LiveDb> = inventory
        .dbs
        .iter()
        .filter(|d| select(&d.tags) && d.status != "deleting")
        .collect();
    for db in &dbs {
        let mut deps = all_services.clone();
        // A writer goes after its replicas.
        deps.extend(
            dbs.iter()
                .filter(|r| r.source.as_deref() == Some(db.identifier.as_str()))
                .map(|r| ResourceId::db_instance(&r.identifier)),
        );
        actions.push(
            delete(
                ResourceId::db_instance(&db.identifier),
                Delete::DbInstance {
                    id: db.identifier.clone(),
                    skip_final_snapshot: true,
                },
                vec![Change::new("class", Some(db.class.clone()), None)],
                est.rds_delete,
            )
            .deps(deps),
        );
    }
    let estimate_secs = critical_path(&actions);
    Plan::new(env, actions, conflicts, estimate_secs)
}
