//! Observing the live state with as few calls as possible: DescribeServices ten at a time
//! (with tags), one ListServices page per 100 services, one DescribeDBInstances, one
//! ListClustersV2 and one ListConfigurations for all MSK clusters. Immutable things
//! (task-definition revisions, configuration revisions, bootstrap brokers of a cluster ARN)
//! come from a local cache (`.envctl/cache/<env>.json`) after the first read.
use envctl_aws_model::operation::{EcsOp, KafkaOp, LogsOp, RdsOp, SecretsManagerOp};
use envctl_aws_model::status::{
    ClusterStatus, KafkaClusterState, KafkaOperationState, ServiceStatus,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use tokio::task::JoinSet;

use crate::exec::Operation;

use super::Reads;
use crate::aws::{AwsError, Clients, ecs, kafka, rds};
use crate::model::live::{LiveKafkaConfiguration, LiveParameterGroup, LiveState};
use crate::model::{DesiredState, TaskDefinition};

/// What never changes once created, keyed by ARN.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ObserveCache {
    pub task_definitions: BTreeMap<String, TaskDefinition>,
    /// `arn#revision` -> server.properties.
    pub configuration_revisions: BTreeMap<String, String>,
    /// Cluster ARN -> bootstrap broker string.
    pub bootstrap_brokers: BTreeMap<String, String>,
}

impl ObserveCache {
    pub fn path(state_dir: &Path, env: &str) -> PathBuf {
        state_dir.join("cache").join(format!("{env}.json"))
    }

    /// A missing or unreadable cache is an empty one: it only saves calls.
    pub fn load(path: &Path) -> ObserveCache {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Writes the cache, private. A task definition holding a secret (a foreign or adopted
    /// one can) is left out rather than masked: it is read from AWS again next time, so the
    /// cache never stores the secret and the planner still compares real values.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut kept = self.clone();
        kept.task_definitions.retain(|_, td| {
            !serde_json::to_value(td).is_ok_and(|v| crate::redact::json_has_secret(&v))
        });
        let bytes = serde_json::to_vec(&kept).unwrap_or_default();
        crate::exec::private_file::write_atomic(path, &bytes)
    }
}

/// Reads everything the planner compares, for one environment.
pub async fn observe(
    reads: &Reads,
    desired: &DesiredState,
    cache: &mut ObserveCache,
) -> Result<LiveState, AwsError> {
    let clients = &reads.clients;
    let (ecs_part, kafka_part, rds_part) = tokio::join!(
        observe_ecs(clients, reads, desired, cache.clone()),
        observe_kafka(clients, reads, desired, cache.clone()),
        observe_rds(clients, reads, desired)
    );
    let (cluster, services, task_definitions) = ecs_part?;
    let (kafka, configurations, revisions, bootstrap) = kafka_part?;
    let (mut db_instances, db_parameter_groups, db_subnet_groups, db_master_secrets) = rds_part?;
    // The writer's credentials are in envctl's secret; services name its ARN.
    if let Some(db) = &desired.db
        && let Some(secret) = db_master_secrets.get(&db.master_secret_name())
        && let Some(writer) = db_instances.get_mut(&db.writer.identifier)
    {
        writer.master_secret_arn = Some(secret.arn.clone());
    }
    // The one provider the spec names (owned or not): whether it exists and is ours.
    let wanted: Vec<String> = desired
        .cluster
        .capacity
        .strategy_provider()
        .map(str::to_string)
        .into_iter()
        .collect();
    // A Managed Instances provider belongs to its cluster and is described with it (API
    // reference, DescribeCapacityProviders `cluster`); without the cluster there is none.
    // An existing provider is described with the cluster too once it exists (it may be a
    // cluster-scoped one, which only that form returns), else account-wide.
    let managed = matches!(
        desired.cluster.capacity,
        crate::model::ClusterCapacity::ManagedInstances(_)
    );
    let cluster_active = cluster
        .as_ref()
        .is_some_and(|c| c.status == ClusterStatus::Active);
    let scope = (managed || cluster_active).then_some(desired.cluster.name.as_str());
    let capacity_providers = if wanted.is_empty() || (managed && !cluster_active) {
        BTreeMap::new()
    } else {
        reads
            .call(
                &desired.cluster.name,
                Operation::Ecs(EcsOp::DescribeCapacityProviders),
                || ecs::describe_capacity_providers(&clients.ecs, &wanted, scope),
            )
            .await?
            .into_iter()
            .map(|cp| (cp.name.clone(), cp))
            .collect()
    };
    let log_groups = observe_log_groups(clients, reads, desired).await?;
    cache
        .task_definitions
        .extend(task_definitions.iter().map(|(k, v)| (k.clone(), v.clone())));
    cache.configuration_revisions.extend(revisions);
    cache.bootstrap_brokers.extend(bootstrap);
    Ok(LiveState {
        cluster,
        services,
        task_definitions,
        kafka,
        kafka_configurations: configurations,
        db_instances,
        db_parameter_groups,
        db_subnet_groups,
        db_master_secrets,
        log_groups,
        capacity_providers,
    })
}

type EcsPart = (
    Option<crate::model::live::LiveCluster>,
    BTreeMap<String, crate::model::live::LiveService>,
    BTreeMap<String, TaskDefinition>,
);

async fn observe_ecs(
    clients: &Clients,
    reads: &Reads,
    desired: &DesiredState,
    cache: ObserveCache,
) -> Result<EcsPart, AwsError> {
    let cluster_name = desired.cluster.name.clone();
    let Some(cluster) = reads
        .call(
            &cluster_name,
            Operation::Ecs(EcsOp::DescribeClusters),
            || ecs::describe_cluster(&clients.ecs, &cluster_name),
        )
        .await?
    else {
        return Ok((None, BTreeMap::new(), BTreeMap::new()));
    };
    if cluster.status != ClusterStatus::Active {
        return Ok((Some(cluster), BTreeMap::new(), BTreeMap::new()));
    }
    let mut names: BTreeSet<String> = desired.services.keys().cloned().collect();
    names.extend(
        reads
            .call(&cluster_name, Operation::Ecs(EcsOp::ListServices), || {
                ecs::list_services(&clients.ecs, &cluster_name)
            })
            .await?,
    );
    let names: Vec<String> = names.into_iter().collect();
    let mut batches = JoinSet::new();
    for chunk in names.chunks(ecs::DESCRIBE_SERVICES_BATCH) {
        let client = clients.ecs.clone();
        let cluster_name = cluster_name.clone();
        let chunk = chunk.to_vec();
        let reads = reads.clone();
        batches.spawn(async move {
            reads
                .call(
                    &cluster_name,
                    Operation::Ecs(EcsOp::DescribeServices),
                    || ecs::describe_services(&client, &cluster_name, &chunk),
                )
                .await
        });
    }
    let mut services = BTreeMap::new();
    while let Some(result) = batches.join_next().await {
        let batch = result
            .map_err(|e| AwsError::local("DescribeServices", &cluster_name, e.to_string()))??;
        for s in batch {
            // INACTIVE services are deleted ones ECS still shows for a while.
            if s.status != ServiceStatus::Inactive {
                services.insert(s.name.clone(), s);
            }
        }
    }
    // An unhealthy service is drift: what explains it (its latest events, why its tasks
    // stopped) is read now, for the plan to show. Healthy services cost no extra call.
    for s in services.values_mut().filter(|s| s.unhealthy().is_some()) {
        let events = reads
            .call(&s.name, Operation::Ecs(EcsOp::DescribeServices), || {
                ecs::service_events(&clients.ecs, &cluster_name, &s.name, 3)
            })
            .await?;
        let stopped = reads
            .call(&s.name, Operation::Ecs(EcsOp::ListTasks), || {
                ecs::stopped_task_reasons(&clients.ecs, &cluster_name, &s.name, 3)
            })
            .await?;
        s.problems = events
            .into_iter()
            .map(|e| format!("event: {e}"))
            .chain(stopped.into_iter().map(|r| format!("stopped task: {r}")))
            .collect();
    }
    let mut task_definitions = BTreeMap::new();
    let mut missing = JoinSet::new();
    let arns: BTreeSet<String> = services
        .values()
        .map(|s| s.task_definition.clone())
        .collect();
    for arn in arns {
        match cache.task_definitions.get(&arn) {
            Some(td) => {
                task_definitions.insert(arn, td.clone());
            }
            None => {
                let client = clients.ecs.clone();
                let reads = reads.clone();
                missing.spawn(async move {
                    let td = reads
                        .call(&arn, Operation::Ecs(EcsOp::DescribeTaskDefinition), || {
                            ecs::describe_task_definition(&client, &arn)
                        })
                        .await;
                    (arn, td)
                });
            }
        }
    }
    while let Some(result) = missing.join_next().await {
        let (arn, td) = result
            .map_err(|e| AwsError::local("DescribeTaskDefinition", &cluster_name, e.to_string()))?;
        task_definitions.insert(arn, td?);
    }
    Ok((Some(cluster), services, task_definitions))
}

type KafkaPart = (
    BTreeMap<String, crate::model::live::LiveKafka>,
    BTreeMap<String, LiveKafkaConfiguration>,
    BTreeMap<String, String>,
    BTreeMap<String, String>,
);

/// When MSK's cool-down after the cluster's last storage scaling ends, if it still lasts;
/// read (ListClusterOperationsV2) only when the spec grows the cluster's storage, so a
/// plan that sends no UpdateBrokerStorage costs no call. The cool-down is counted from the
/// last completed storage operation's end: at least six hours (MSK Developer Guide, "Scale
/// up Amazon MSK Standard broker storage").
async fn storage_cool_down(
    reads: &Reads,
    desired: &DesiredState,
    live: &crate::model::live::LiveKafka,
) -> Result<Option<f64>, AwsError> {
    let grows = desired
        .kafka
        .values()
        .any(|d| d.name == live.name && d.storage_gb > live.storage_gb);
    if !grows {
        return Ok(None);
    }
    let operations = reads
        .call(
            &live.arn,
            Operation::Kafka(KafkaOp::ListClusterOperationsV2),
            || kafka::list_operations(&reads.clients.kafka, &live.arn),
        )
        .await?;
    let now = reads.clock.now();
    Ok(operations
        .iter()
        .filter(|o| o.operation_type == "UPDATE_BROKER_STORAGE")
        .filter(|o| o.state == KafkaOperationState::UpdateComplete)
        .filter_map(|o| o.end)
        .map(|end| end + envctl_aws_model::msk::STORAGE_COOL_DOWN_S)
        .reduce(f64::max)
        .filter(|until| *until > now))
}

async fn observe_kafka(
    clients: &Clients,
    reads: &Reads,
    desired: &DesiredState,
    cache: ObserveCache,
) -> Result<KafkaPart, AwsError> {
    if desired.kafka.is_empty() {
        return Ok(Default::default());
    }
    let (clusters, configurations) = tokio::join!(
        reads.call("kafka", Operation::Kafka(KafkaOp::ListClustersV2), || {
            kafka::list_clusters(&clients.kafka)
        }),
        reads.call(
            "kafka",
            Operation::Kafka(KafkaOp::ListConfigurations),
            || { kafka::list_configurations(&clients.kafka) }
        )
    );
    let wanted_configs: BTreeSet<&str> = desired
        .kafka
        .values()
        .map(|k| k.configuration.name.as_str())
        .collect();
    let mut live_clusters = BTreeMap::new();
    let mut bootstrap = BTreeMap::new();
    for mut k in clusters? {
        let ours = desired.kafka.values().any(|d| d.name == k.name)
            || crate::model::live::owned_by(&k.tags, &desired.env);
        if !ours {
            continue;
        }
        if k.state == KafkaClusterState::Active || k.state == KafkaClusterState::Updating {
            // The desired cluster's protocol picks the string (a TLS-only cluster has no
            // plaintext one); an owned cluster no longer in the spec gets the plaintext one.
            let protocol = desired
                .kafka
                .values()
                .find(|d| d.name == k.name)
                .map_or("PLAINTEXT", |d| d.security_protocol.as_str());
            let cached = cache.bootstrap_brokers.get(&k.arn).cloned();
            let brokers = match cached {
                Some(b) => Some(b),
                None => {
                    reads
                        .call(
                            &k.arn,
                            Operation::Kafka(KafkaOp::GetBootstrapBrokers),
                            || kafka::bootstrap_brokers_for(&clients.kafka, &k.arn, protocol),
                        )
                        .await?
                }
            };
            if let Some(b) = &brokers {
                bootstrap.insert(k.arn.clone(), b.clone());
            }
            k.bootstrap_brokers = brokers;
        }
        k.storage_cool_down_until = storage_cool_down(reads, desired, &k).await?;
        live_clusters.insert(k.name.clone(), k);
    }
    let mut live_configs = BTreeMap::new();
    let mut revisions = BTreeMap::new();
    let mark = format!("envctl:env={} ", desired.env);
    for (name, arn, latest, description) in configurations? {
        if !wanted_configs.contains(name.as_str()) && !description.starts_with(&mark) {
            continue;
        }
        let cache_key = format!("{arn}#{latest}");
        let text = match cache.configuration_revisions.get(&cache_key) {
            Some(t) => t.clone(),
            None => {
                reads
                    .call(
                        &arn,
                        Operation::Kafka(KafkaOp::DescribeConfigurationRevision),
                        || kafka::configuration_revision(&clients.kafka, &arn, latest),
                    )
                    .await?
            }
        };
        revisions.insert(cache_key, text.clone());
        live_configs.insert(
            name.clone(),
            LiveKafkaConfiguration {
                name,
                arn,
                latest_revision: latest,
                server_properties: text,
            },
        );
    }
    Ok((live_clusters, live_configs, revisions, bootstrap))
}

/// The log groups the task definitions name, with their tags (one DescribeLogGroups and
/// one ListTagsForResource per group; envs name one).
async fn observe_log_groups(
    clients: &Clients,
    reads: &Reads,
    desired: &DesiredState,
) -> Result<BTreeMap<String, crate::model::live::LiveLogGroup>, AwsError> {
    let mut out = BTreeMap::new();
    for name in desired.log_groups().into_keys() {
        let Some(mut group) = reads
            .call(&name, Operation::Logs(LogsOp::DescribeLogGroups), || {
                crate::aws::logs::describe(&clients.logs, &name)
            })
            .await?
        else {
            continue;
        };
        group.tags = reads
            .call(&name, Operation::Logs(LogsOp::ListTagsForResource), || {
                crate::aws::logs::tags(&clients.logs, &group.arn)
            })
            .await?;
        out.insert(name, group);
    }
    Ok(out)
}

type RdsPart = (
    BTreeMap<String, crate::model::live::LiveDb>,
    BTreeMap<String, LiveParameterGroup>,
    BTreeSet<String>,
    BTreeMap<String, crate::model::live::LiveSecret>,
);

/// The env's DB parameter groups: the spec's, and every other one an instance of the env
/// uses (the one a major version upgrade leaves behind, `<writer>-params` of envctl before
/// groups were named by family), each with its own family (DescribeDBParameterGroups: a
/// group's family is fixed, so a new major needs another group) and tags; the spec's with
/// its user-set values too.
async fn observe_parameter_groups(
    reads: &Reads,
    desired: &DesiredState,
    live: &BTreeMap<String, crate::model::live::LiveDb>,
) -> Result<BTreeMap<String, LiveParameterGroup>, AwsError> {
    let clients = &reads.clients;
    // The spec's group, or, when it sets no parameter, the one an earlier spec made for the
    // writer's family: its values are reset and destroy deletes it.
    let wanted = desired.db.as_ref().map(|db| match &db.parameter_group {
        Some(g) => g.name.clone(),
        None => crate::model::parameter_group_name(
            &db.writer.identifier,
            &crate::model::parameter_family(db.writer.engine_version.as_deref()),
        ),
    });
    let mut names: BTreeSet<String> = wanted.iter().cloned().collect();
    names.extend(
        live.values()
            .filter_map(|i| i.parameter_group.clone())
            .filter(|g| !g.starts_with("default.")),
    );
    let mut groups = BTreeMap::new();
    for name in names {
        let Some((arn, family)) = reads
            .call(
                &name,
                Operation::Rds(RdsOp::DescribeDBParameterGroups),
                || rds::describe_parameter_group(&clients.rds, &name),
            )
            .await?
        else {
            continue;
        };
        let parameters = if wanted.as_deref() == Some(name.as_str()) {
            reads
                .call(&name, Operation::Rds(RdsOp::DescribeDBParameters), || {
                    rds::parameters(&clients.rds, &name)
                })
                .await?
                .unwrap_or_default()
        } else {
            BTreeMap::new()
        };
        let tags = reads
            .call(&arn, Operation::Rds(RdsOp::ListTagsForResource), || {
                rds::list_tags(&clients.rds, &arn)
            })
            .await?;
        groups.insert(
            name.clone(),
            LiveParameterGroup {
                name,
                arn,
                family,
                parameters,
                tags,
            },
        );
    }
    Ok(groups)
}

async fn observe_rds(
    clients: &Clients,
    reads: &Reads,
    desired: &DesiredState,
) -> Result<RdsPart, AwsError> {
    let Some(db) = &desired.db else {
        return Ok(Default::default());
    };
    let instances = reads
        .call("rds", Operation::Rds(RdsOp::DescribeDBInstances), || {
            rds::describe_instances(&clients.rds)
        })
        .await?;
    let wanted: BTreeSet<&str> = std::iter::once(&db.writer)
        .chain(db.readers.iter())
        .map(|i| i.identifier.as_str())
        .collect();
    let live: BTreeMap<String, crate::model::live::LiveDb> = instances
        .into_iter()
        .filter(|i| {
            wanted.contains(i.identifier.as_str())
                || crate::model::live::owned_by(&i.tags, &desired.env)
        })
        .filter(|i| i.status != "deleted")
        .map(|i| (i.identifier.clone(), i))
        .collect();
    let groups = observe_parameter_groups(reads, desired, &live).await?;
    // Only a group envctl creates is read: destroy deletes it after the writer, and a
    // destroy interrupted after the writer is gone must still find it.
    let mut subnet_groups = BTreeSet::new();
    if db.subnet_group.owned
        && reads
            .call(
                &db.subnet_group.name,
                Operation::Rds(RdsOp::DescribeDBSubnetGroups),
                || rds::subnet_group_exists(&clients.rds, &db.subnet_group.name),
            )
            .await?
    {
        subnet_groups.insert(db.subnet_group.name.clone());
    }
    // The writer's master secret, by envctl's name for it: read even with no writer, so a
    // destroy interrupted after the writer is gone still finds it.
    let name = db.master_secret_name();
    let secrets = reads
        .call(
            &name,
            Operation::SecretsManager(SecretsManagerOp::DescribeSecret),
            || crate::aws::secrets::describe(&clients.secrets, &name),
        )
        .await?
        .map(|s| (s.name.clone(), s))
        .into_iter()
        .collect();
    Ok((live, groups, subnet_groups, secrets))
}
