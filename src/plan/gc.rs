//! The gc plan: a destroy plan over everything the account's tags say envctl owns (and the
//! filter selects), across clusters, run by the same executor as apply and destroy.
use super::action::{Action, ActionKind, Change, Conflict, ConflictKind};
use super::critical_path::critical_path;
use super::diff::Plan;
use super::estimate::Estimates;
use super::id::ResourceId;
use super::op::{Delete, Op};
use crate::model::live::{LiveCapacityProvider, LiveCluster, LiveDb, LiveKafka, LiveService, Tags};
use envctl_aws_model::status::{
    CapacityProviderStatus, ClusterStatus, DbInstanceStatus, KafkaClusterState,
};

/// What an account and Region contain, as gc reads it.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub clusters: Vec<ClusterInventory>,
    pub kafka: Vec<LiveKafka>,
    pub dbs: Vec<LiveDb>,
    pub leftovers: Leftovers,
}

/// Resources that cost nothing but outlive their env when a run dies or a destroy is cut
/// short; only those marked as envctl's are read into it.
#[derive(Debug, Clone, Default)]
pub struct Leftovers {
    /// Task-definition revisions (`name` is the family).
    pub task_definitions: Vec<Leftover>,
    /// MSK configurations; their tags are the env their description names.
    pub kafka_configurations: Vec<Leftover>,
    pub db_parameter_groups: Vec<Leftover>,
    pub db_subnet_groups: Vec<Leftover>,
    /// Capacity providers, with the cluster a Managed Instances one is scoped to.
    pub capacity_providers: Vec<LeftoverProvider>,
    /// Secrets Manager secrets (the writers' master credentials).
    pub secrets: Vec<Leftover>,
    /// CloudWatch Logs groups (the awslogs groups envctl creates).
    pub log_groups: Vec<Leftover>,
}

#[derive(Debug, Clone)]
pub struct LeftoverProvider {
    pub provider: Leftover,
    pub cluster: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Leftover {
    pub name: String,
    pub arn: String,
    pub tags: Tags,
}

#[derive(Debug, Clone)]
pub struct ClusterInventory {
    pub cluster: LiveCluster,
    /// Its services that are not INACTIVE.
    pub services: Vec<LiveService>,
    /// The capacity providers associated with it (attached, or scoped to it).
    pub capacity_providers: Vec<LiveCapacityProvider>,
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
        // The cluster's providers gc owns, after its services (a provider in a service's
        // strategy is not deleted) and before the cluster (a cluster-scoped one keeps it);
        // with services gc keeps, they may run on it: kept.
        let mut cluster_deps = mine.clone();
        for cp in c
            .capacity_providers
            .iter()
            .filter(|cp| cp.status != CapacityProviderStatus::Inactive && select(&cp.tags))
        {
            let id = ResourceId::capacity_provider(&cp.name);
            if foreign > 0 {
                conflicts.push(kept(
                    id,
                    format!("kept: cluster {name} runs {foreign} services gc may not delete"),
                ));
                continue;
            }
            actions.push(
                delete(
                    id.clone(),
                    Delete::CapacityProvider {
                        cluster: name.clone(),
                        name: cp.name.clone(),
                        deprovisioning: false,
                    },
                    vec![Change::new("type", Some(cp.kind.clone()), None)],
                    est.ecs_capacity_provider_delete,
                )
                .deps(mine.clone()),
            );
            cluster_deps.push(id);
        }
        if !select(&c.cluster.tags) || c.cluster.status != ClusterStatus::Active {
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
        actions.push(
            delete(id, Delete::EcsCluster { name: name.clone() }, vec![], 1.0).deps(cluster_deps),
        );
    }
    // Leaked capacity providers: after every service gc deletes (DeleteCapacityProvider
    // needs no service on it), before their cluster (DeleteCluster refuses a cluster a
    // provider is scoped to: ClusterContainsCapacityProviderException).
    for p in inventory
        .leftovers
        .capacity_providers
        .iter()
        .filter(|p| select(&p.provider.tags))
    {
        let id = ResourceId::capacity_provider(&p.provider.name);
        // A cluster's own provider is already planned with its cluster (above).
        if actions.iter().any(|a| a.id == id) {
            continue;
        }
        actions.push(
            delete(
                id.clone(),
                Delete::CapacityProvider {
                    cluster: p.cluster.clone().unwrap_or_default(),
                    name: p.provider.name.clone(),
                    deprovisioning: false,
                },
                vec![],
                1.0,
            )
            .deps(all_services.clone()),
        );
        if let Some(cluster) = &p.cluster
            && let Some(a) = actions
                .iter_mut()
                .find(|a| a.id == ResourceId::ecs_cluster(cluster))
        {
            a.deps.push(id);
        }
    }
    for k in &inventory.kafka {
        if select(&k.tags) && k.state != KafkaClusterState::Deleting {
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
        .filter(|d| select(&d.tags) && d.status != DbInstanceStatus::Deleting)
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
    // Then what the data stores used (configurations, parameter and subnet groups: AWS
    // refuses to delete them while in use), and task definitions last.
    let stores: Vec<ResourceId> = actions
        .iter()
        .filter(|a| !a.id.is_ecs())
        .map(|a| a.id.clone())
        .collect();
    let late = store_leftovers(inventory, &select, &stores, &mut conflicts);
    let mut before: Vec<ResourceId> = actions.iter().map(|a| a.id.clone()).collect();
    before.extend(late.iter().map(|a| a.id.clone()));
    actions.extend(late);
    actions.extend(task_definitions(inventory, &select, before, &mut conflicts));
    let estimate_secs = critical_path(&actions);
    Plan::new(env, actions, conflicts, estimate_secs)
}

fn kept(resource: ResourceId, message: String) -> Conflict {
    Conflict {
        resource,
        message,
        kind: ConflictKind::NotOwned,
    }
}

/// Owned MSK configurations, DB parameter groups and DB subnet groups, each deleted after
/// every data store gc deletes, and kept when a resource gc keeps still uses it.
fn store_leftovers(
    inventory: &Inventory,
    select: &impl Fn(&Tags) -> bool,
    stores: &[ResourceId],
    conflicts: &mut Vec<Conflict>,
) -> Vec<Action> {
    let left = &inventory.leftovers;
    let mut actions = Vec::new();
    let mut leftover = |id: ResourceId, users: Vec<&str>, what: Delete| {
        if users.is_empty() {
            actions.push(delete(id, what, vec![], 1.0).deps(stores.to_vec()));
        } else {
            conflicts.push(kept(id, format!("kept: used by {}", users.join(", "))));
        }
    };
    for c in left.kafka_configurations.iter().filter(|c| select(&c.tags)) {
        let users = inventory
            .kafka
            .iter()
            .filter(|k| !select(&k.tags) && k.configuration_arn.as_deref() == Some(&c.arn))
            .map(|k| k.name.as_str())
            .collect();
        leftover(
            ResourceId::kafka_configuration(&c.name),
            users,
            Delete::KafkaConfiguration { arn: c.arn.clone() },
        );
    }
    for g in left.db_parameter_groups.iter().filter(|g| select(&g.tags)) {
        let users = inventory
            .dbs
            .iter()
            .filter(|d| !select(&d.tags) && d.parameter_group.as_deref() == Some(&g.name))
            .map(|d| d.identifier.as_str())
            .collect();
        leftover(
            ResourceId::db_parameter_group(&g.name),
            users,
            Delete::DbParameterGroup {
                name: g.name.clone(),
            },
        );
    }
    // A writer's credentials go once the writer is gone.
    for sec in left.secrets.iter().filter(|s| select(&s.tags)) {
        leftover(
            ResourceId::db_master_secret(&sec.name),
            Vec::new(),
            Delete::DbMasterSecret {
                arn: sec.arn.clone(),
            },
        );
    }
    for g in left.log_groups.iter().filter(|g| select(&g.tags)) {
        leftover(
            ResourceId::log_group(&g.name),
            Vec::new(),
            Delete::LogGroup {
                name: g.name.clone(),
            },
        );
    }
    for g in left.db_subnet_groups.iter().filter(|g| select(&g.tags)) {
        leftover(
            ResourceId::db_subnet_group(&g.name),
            Vec::new(),
            Delete::DbSubnetGroup {
                name: g.name.clone(),
            },
        );
    }
    actions
}

/// Owned revisions, one action per family, after everything else: deregistered and
/// deleted ten per call. A revision a service gc keeps still runs is left alone.
fn task_definitions(
    inventory: &Inventory,
    select: &impl Fn(&Tags) -> bool,
    before: Vec<ResourceId>,
    conflicts: &mut Vec<Conflict>,
) -> Vec<Action> {
    let running: std::collections::BTreeSet<&str> = inventory
        .clusters
        .iter()
        .flat_map(|c| c.services.iter())
        .filter(|s| !select(&s.tags))
        .map(|s| s.task_definition.as_str())
        .collect();
    let mut families: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for td in inventory
        .leftovers
        .task_definitions
        .iter()
        .filter(|td| select(&td.tags))
    {
        if running.contains(td.arn.as_str()) {
            conflicts.push(kept(
                ResourceId::task_definitions(&td.name),
                format!("kept: {} runs in a service gc keeps", td.arn),
            ));
            continue;
        }
        families.entry(&td.name).or_default().push(td.arn.clone());
    }
    families
        .into_iter()
        .map(|(family, revisions)| {
            let n = revisions.len();
            delete(
                ResourceId::task_definitions(family),
                Delete::TaskDefinitions { revisions },
                vec![Change::new("revisions", Some(n.to_string()), None)],
                1.0,
            )
            .deps(before.clone())
        })
        .collect()
}
