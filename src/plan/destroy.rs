//! The destroy plan: every resource of the environment that envctl owns, deleted in reverse
//! dependency order. Nothing without the environment's tags is ever in it.
use envctl_aws_model::status::{CapacityProviderStatus, ClusterStatus};
use std::collections::{BTreeMap, BTreeSet};

use super::action::{Action, ActionKind, Change, Conflict, ConflictKind};
use super::critical_path::critical_path;
use super::diff::Plan;
use super::estimate::Estimates;
use super::id::ResourceId;
use super::op::{Delete, Op};
use crate::exec::{Category, lower_bound_secs};
use crate::model::DesiredState;
use crate::model::live::{LiveState, owned_by};

/// The family of a task-definition ARN (`...:task-definition/pcp1-mod-users:3`).
pub fn family_of(arn: &str) -> Option<&str> {
    envctl_aws_model::arn::task_definition_revision(arn).map(|(family, _)| family)
}

/// The least time `calls` take through the category's bucket, full at the start.
fn paced_secs(category: Category, calls: u64) -> f64 {
    let limit = category.limit();
    lower_bound_secs(calls, limit.burst, limit.rate_per_sec)
}

fn delete(id: ResourceId, what: Delete, changes: Vec<Change>, secs: f64) -> Action {
    Action::new(id, ActionKind::Delete, Op::Delete(what))
        .changes(changes)
        .estimate(secs)
}

/// `known` maps the task-definition families envctl knows revisions of (its cache) to
/// those revisions' ARNs; `owned_revisions` holds those of them (and of the services'
/// revisions) that carry this env's tags. Only those are deregistered and deleted: a
/// family named like the env's may hold revisions someone else registered and runs.
pub fn destroy_plan(
    desired: &DesiredState,
    live: &LiveState,
    known: &BTreeMap<String, BTreeSet<String>>,
    owned_revisions: &BTreeSet<String>,
    est: &Estimates,
) -> Plan {
    let env = desired.env.as_str();
    let mut actions = Vec::new();
    let mut conflicts = Vec::new();
    let left_alone = |resource: ResourceId| Conflict {
        resource,
        message: "not tagged as this environment's: left alone".into(),
        kind: ConflictKind::NotOwned,
    };

    // DeleteService goes through ECS's service-modify bucket (50 at once, then 5/s): the
    // last deletion starts this much later, and everything after the services waits for it.
    let owned_services = live
        .services
        .values()
        .filter(|s| owned_by(&s.tags, env))
        .count();
    let service_pacing = paced_secs(Category::ServiceModify, owned_services as u64);
    let mut services = Vec::new();
    for (name, s) in &live.services {
        let id = ResourceId::service(name);
        if owned_by(&s.tags, env) {
            actions.push(delete(
                id.clone(),
                Delete::EcsService {
                    cluster: desired.cluster.name.clone(),
                    name: name.clone(),
                },
                vec![Change::new(
                    "desired_count",
                    Some(s.desired_count.to_string()),
                    Some("0".into()),
                )],
                est.ecs_service_delete + service_pacing,
            ));
            services.push(id);
        } else if desired.services.contains_key(name) {
            conflicts.push(left_alone(id));
        }
    }
    // Log groups envctl created, once nothing writes to them (their events go with them).
    for g in live.log_groups.values() {
        if owned_by(&g.tags, env) {
            actions.push(
                delete(
                    ResourceId::log_group(&g.name),
                    Delete::LogGroup {
                        name: g.name.clone(),
                    },
                    vec![],
                    1.0,
                )
                .deps(services.clone()),
            );
        }
    }
    // Revisions of the env's families: those of owned services, and those envctl
    // registered (a second destroy then has nothing left to do). Not billable: cleaned up
    // last, after the services, while the data stores are being deleted.
    let desired_families: BTreeSet<&str> = desired
        .services
        .values()
        .map(|s| s.task_definition.family.as_str())
        .collect();
    let mut revisions: BTreeSet<String> = known
        .iter()
        .filter(|(family, _)| desired_families.contains(family.as_str()))
        .flat_map(|(_, arns)| arns.iter().cloned())
        .collect();
    revisions.extend(
        live.services
            .values()
            .filter(|s| owned_by(&s.tags, env) && family_of(&s.task_definition).is_some())
            .map(|s| s.task_definition.clone()),
    );
    revisions.retain(|arn| owned_revisions.contains(arn));
    if !revisions.is_empty() {
        // Deregistrations go one by one through the 1/s task-definition bucket (20 at once),
        // deletions ten per call.
        let n = revisions.len();
        let paced = paced_secs(Category::TaskDefinitionModify, (n + n.div_ceil(10)) as u64);
        actions.push(
            delete(
                ResourceId::task_definitions(env),
                Delete::TaskDefinitions {
                    revisions: revisions.into_iter().collect(),
                },
                vec![Change::new("revisions", Some(n.to_string()), None)],
                paced.max(1.0),
            )
            .deps(services.clone()),
        );
    }
    let mut kafka = Vec::new();
    for k in live.kafka.values() {
        let key = desired
            .kafka
            .iter()
            .find(|(_, d)| d.name == k.name)
            .map(|(key, _)| key.clone())
            .unwrap_or_else(|| k.name.clone());
        let id = ResourceId::kafka_cluster(key);
        if !owned_by(&k.tags, env) {
            if desired.kafka.values().any(|d| d.name == k.name) {
                conflicts.push(left_alone(id));
            }
            continue;
        }
        actions.push(
            delete(
                id.clone(),
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
            .deps(services.clone()),
        );
        kafka.push(id);
    }
    for (key, d) in &desired.kafka {
        if let Some(c) = live.kafka_configurations.get(&d.configuration.name) {
            actions.push(
                delete(
                    ResourceId::kafka_configuration(key),
                    Delete::KafkaConfiguration { arn: c.arn.clone() },
                    vec![],
                    1.0,
                )
                .deps(kafka.clone()),
            );
        }
    }
    // Configurations of earlier Kafka versions (named per version) that an interrupted
    // apply left: observe reads only those whose description carries the env's mark.
    let wanted: Vec<&str> = desired
        .kafka
        .values()
        .map(|d| d.configuration.name.as_str())
        .collect();
    for c in live.kafka_configurations.values() {
        // MSK refuses to delete a configuration a cluster still uses; only the env's own
        // clusters are deleted here.
        let used_by_others = live.kafka.values().any(|k| {
            k.configuration_arn.as_deref() == Some(c.arn.as_str()) && !owned_by(&k.tags, env)
        });
        if wanted.contains(&c.name.as_str()) || used_by_others {
            continue;
        }
        actions.push(
            delete(
                ResourceId::kafka_configuration(&c.name),
                Delete::KafkaConfiguration { arn: c.arn.clone() },
                vec![],
                1.0,
            )
            .deps(kafka.clone()),
        );
    }
    let mut readers = Vec::new();
    let mut writers = Vec::new();
    for db in live.db_instances.values() {
        let id = ResourceId::db_instance(&db.identifier);
        if !owned_by(&db.tags, env) {
            conflicts.push(left_alone(id));
            continue;
        }
        let skip_final_snapshot = desired
            .db
            .iter()
            .flat_map(|d| std::iter::once(&d.writer).chain(d.readers.iter()))
            .find(|i| i.identifier == db.identifier)
            .is_none_or(|i| i.skip_final_snapshot);
        let action = delete(
            id.clone(),
            Delete::DbInstance {
                id: db.identifier.clone(),
                skip_final_snapshot,
            },
            vec![Change::new("class", Some(db.class.clone()), None)],
            est.rds_delete,
        );
        if db.source.is_some() {
            actions.push(action.deps(services.clone()));
            readers.push(id);
        } else {
            writers.push((id, action));
        }
    }
    let mut dbs = readers.clone();
    for (id, action) in writers {
        let mut deps = services.clone();
        deps.extend(readers.iter().cloned());
        actions.push(action.deps(deps));
        dbs.push(id);
    }
    if let Some(db) = &desired.db
        && db.subnet_group.owned
        && live.db_subnet_groups.contains(&db.subnet_group.name)
    {
        // RDS refuses to delete a subnet group an instance still uses
        // (InvalidDBSubnetGroupStateFault): after every instance.
        actions.push(
            delete(
                ResourceId::db_subnet_group(&db.subnet_group.name),
                Delete::DbSubnetGroup {
                    name: db.subnet_group.name.clone(),
                },
                vec![],
                1.0,
            )
            .deps(dbs.clone()),
        );
    }
    // The writer's credentials outlive it until it is gone (a failed delete keeps a writer
    // whose password only this secret knows).
    for s in live.db_master_secrets.values() {
        if owned_by(&s.tags, env) {
            actions.push(
                delete(
                    ResourceId::db_master_secret(&s.name),
                    Delete::DbMasterSecret { arn: s.arn.clone() },
                    vec![],
                    1.0,
                )
                .deps(dbs.clone()),
            );
        } else {
            conflicts.push(left_alone(ResourceId::db_master_secret(&s.name)));
        }
    }
    for g in live.db_parameter_groups.values() {
        if owned_by(&g.tags, env) {
            actions.push(
                delete(
                    ResourceId::db_parameter_group(&g.name),
                    Delete::DbParameterGroup {
                        name: g.name.clone(),
                    },
                    vec![],
                    1.0,
                )
                .deps(dbs.clone()),
            );
        }
    }
    let foreign: Vec<&str> = live
        .services
        .values()
        .filter(|s| !owned_by(&s.tags, env))
        .map(|s| s.name.as_str())
        .collect();
    // The owned capacity provider goes after the services (ECS refuses to delete a provider
    // a service's strategy names) and before the cluster (which keeps its instances until
    // the provider is gone). Services envctl does not own that run in the cluster may run
    // on it (it is the cluster's default strategy): it stays, with the cluster, and ECS
    // would refuse to detach it anyway ("in use and cannot be removed").
    let mut cluster_deps = services.clone();
    for cp in live.capacity_providers.values() {
        // PROVISIONING and DEPROVISIONING ones too: DeleteCluster waits for every
        // cluster-scoped provider to be INACTIVE.
        if cp.status == CapacityProviderStatus::Inactive {
            continue;
        }
        let id = ResourceId::capacity_provider(&cp.name);
        if !owned_by(&cp.tags, env) {
            conflicts.push(left_alone(id));
            continue;
        }
        if !foreign.is_empty() {
            conflicts.push(Conflict {
                resource: id,
                message: format!(
                    "kept: services envctl does not own run in its cluster ({}) and may be placed on it; destroy deletes it once they are gone",
                    foreign.join(", ")
                ),
                kind: ConflictKind::NotOwned,
            });
            continue;
        }
        actions.push(
            delete(
                id.clone(),
                Delete::CapacityProvider {
                    cluster: desired.cluster.name.clone(),
                    name: cp.name.clone(),
                    deprovisioning: cp.status
                        == envctl_aws_model::status::CapacityProviderStatus::Deprovisioning,
                },
                vec![Change::new("type", Some(cp.kind.clone()), None)],
                est.ecs_capacity_provider_delete,
            )
            .deps(services.clone()),
        );
        cluster_deps.push(id);
    }
    if let Some(c) = &live.cluster
        && owned_by(&c.tags, env)
        && c.status == ClusterStatus::Active
    {
        let id = ResourceId::ecs_cluster(&c.name);
        if foreign.is_empty() {
            actions.push(
                delete(
                    id,
                    Delete::EcsCluster {
                        name: c.name.clone(),
                    },
                    vec![],
                    1.0,
                )
                .deps(cluster_deps),
            );
        } else {
            conflicts.push(Conflict {
                resource: id,
                message: format!(
                    "kept: it also runs services envctl does not own ({})",
                    foreign.join(", ")
                ),
                kind: ConflictKind::NotOwned,
            });
        }
    }
    let estimate_secs = critical_path(&actions);
    Plan::new(desired.env.clone(), actions, conflicts, estimate_secs)
}
