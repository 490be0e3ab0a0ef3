//! The reads behind `envctl import`: an ECS cluster's services and their current task
//! definitions, named MSK clusters with their configuration revision, and DB instances with
//! their replicas and parameters. Only Describe/List/Get calls: import changes nothing.
use envctl_aws_model::operation::EcsOp;
use envctl_aws_model::status::{
    CapacityProviderStatus, ClusterStatus, DbInstanceStatus, ServiceStatus,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::Reads;
use crate::aws::paced;
use crate::aws::{AwsError, Clients, ecs, kafka, rds};
use crate::exec::Operation;
use crate::exec::task_set::TaskSet;
use crate::exec::{Clock, RateLimits};
use crate::import::{ImportedDb, ImportedKafka, ImportedWorld};

/// What to read: `--cluster`, `--msk`, `--rds`.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub region: String,
    pub cluster: String,
    pub msk: Vec<String>,
    /// DB instance identifiers; a replica stands for its writer, whose replicas all come.
    pub rds: Vec<String>,
}

/// Import's reads retry the one way envctl retries ([`paced::retry`]); the ECS reads take
/// their token from ECS's buckets inside the closure, so a retry waits for a token too.
use paced::retry as retrying;

pub async fn read(reads: &Reads, request: &ImportRequest) -> Result<ImportedWorld, AwsError> {
    let (clients, clock) = (&reads.clients, reads.clock.clone());
    let (ecs_part, kafka_part, db) = tokio::join!(
        read_ecs(clients, &clock, &request.cluster),
        read_kafka(clients, &clock, &request.msk),
        read_rds(clients, &clock, &request.rds)
    );
    let (cluster, services, task_definitions) = ecs_part?;
    let capacity_providers = retrying(clock.as_ref(), &request.cluster, || {
        cluster_capacity_providers(&clients.ecs, &cluster)
    })
    .await?;
    Ok(ImportedWorld {
        capacity_providers,
        region: request.region.clone(),
        cluster,
        services,
        task_definitions,
        kafka: kafka_part?,
        db: db?,
    })
}

type EcsPart = (
    crate::model::live::LiveCluster,
    Vec<crate::model::live::LiveService>,
    BTreeMap<String, crate::model::TaskDefinition>,
);

async fn read_ecs(
    clients: &Clients,
    clock: &Arc<dyn Clock>,
    name: &str,
) -> Result<EcsPart, AwsError> {
    let cluster = retrying(clock.as_ref(), name, || {
        ecs::describe_cluster(&clients.ecs, name)
    })
    .await?
    .filter(|c| c.status == ClusterStatus::Active)
    .ok_or_else(|| {
        AwsError::local(
            "DescribeClusters",
            name,
            "no active ECS cluster by this name",
        )
    })?;
    let names = retrying(clock.as_ref(), name, || {
        ecs::list_services(&clients.ecs, name)
    })
    .await?;
    // Paced like apply, by ECS's own token buckets: a 144-service cluster is read without a
    // single throttling error (which would cost a backoff and a retry each).
    let limits = Arc::new(RateLimits::ecs(clock.clone()));
    let mut batches = TaskSet::new(clock.clone());
    for chunk in names.chunks(ecs::DESCRIBE_SERVICES_BATCH) {
        let (client, clock, cluster, chunk, limits) = (
            clients.ecs.clone(),
            clock.clone(),
            name.to_string(),
            chunk.to_vec(),
            limits.clone(),
        );
        batches.spawn(async move {
            retrying(clock.as_ref(), &cluster, || async {
                limits
                    .acquire(Operation::Ecs(EcsOp::DescribeServices))
                    .await;
                ecs::describe_services(&client, &cluster, &chunk).await
            })
            .await
        });
    }
    let mut services = Vec::new();
    while let Some(joined) = batches.join_next().await {
        let batch = joined
            .map_err(|e| AwsError::local("DescribeServices", name, e.to_string()))?
            .output?;
        services.extend(
            batch
                .into_iter()
                .filter(|s| s.status == ServiceStatus::Active),
        );
    }
    services.sort_by(|a, b| a.name.cmp(&b.name));
    let arns: BTreeSet<String> = services.iter().map(|s| s.task_definition.clone()).collect();
    let mut reads = TaskSet::new(clock.clone());
    for arn in arns {
        let (client, clock, limits) = (clients.ecs.clone(), clock.clone(), limits.clone());
        reads.spawn(async move {
            let td = retrying(clock.as_ref(), &arn, || async {
                limits
                    .acquire(Operation::Ecs(EcsOp::DescribeTaskDefinition))
                    .await;
                ecs::describe_task_definition(&client, &arn).await
            })
            .await;
            (arn, td)
        });
    }
    let mut task_definitions = BTreeMap::new();
    while let Some(joined) = reads.join_next().await {
        let (arn, td) = joined
            .map_err(|e| AwsError::local("DescribeTaskDefinition", name, e.to_string()))?
            .output;
        task_definitions.insert(arn, td?);
    }
    Ok((cluster, services, task_definitions))
}

async fn read_kafka(
    clients: &Clients,
    clock: &Arc<dyn Clock>,
    names: &[String],
) -> Result<Vec<ImportedKafka>, AwsError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let (clusters, configurations) = tokio::join!(
        retrying(clock.as_ref(), "kafka", || kafka::list_clusters(
            &clients.kafka
        )),
        retrying(clock.as_ref(), "kafka", || kafka::list_configurations(
            &clients.kafka
        ))
    );
    let clusters = clusters?;
    let configuration_names: BTreeMap<String, String> = configurations?
        .into_iter()
        .map(|(name, arn, _, _)| (arn, name))
        .collect();
    let mut out = Vec::new();
    for name in names {
        let mut live = clusters
            .iter()
            .find(|k| &k.name == name)
            .cloned()
            .ok_or_else(|| {
                AwsError::local("ListClustersV2", name, "no MSK cluster by this name")
            })?;
        // Any string the cluster offers: a TLS-only cluster (MSK's default) has no plaintext
        // one, and its services still point at the TLS string.
        let strings = retrying(clock.as_ref(), &live.arn, || {
            kafka::bootstrap_strings(&clients.kafka, &live.arn)
        })
        .await?;
        live.bootstrap_brokers = strings.preferred().map(str::to_string);
        let client_broker = strings.client_broker().map(str::to_string);
        let server_properties = match (&live.configuration_arn, live.configuration_revision) {
            (Some(arn), Some(revision)) => Some(
                retrying(clock.as_ref(), arn, || {
                    kafka::configuration_revision(&clients.kafka, arn, revision)
                })
                .await?,
            ),
            _ => None,
        };
        let security_groups = retrying(clock.as_ref(), &live.arn, || {
            kafka::broker_security_groups(&clients.kafka, &live.arn)
        })
        .await?;
        out.push(ImportedKafka {
            configuration_name: live
                .configuration_arn
                .as_ref()
                .and_then(|arn| configuration_names.get(arn).cloned()),
            live,
            server_properties,
            security_groups,
            client_broker,
        });
    }
    Ok(out)
}

async fn read_rds(
    clients: &Clients,
    clock: &Arc<dyn Clock>,
    ids: &[String],
) -> Result<Option<ImportedDb>, AwsError> {
    if ids.is_empty() {
        return Ok(None);
    }
    let instances = retrying(clock.as_ref(), "rds", || {
        rds::describe_instances(&clients.rds)
    })
    .await?;
    let mut writers = BTreeSet::new();
    for id in ids {
        let instance = instances
            .iter()
            .find(|i| &i.identifier == id)
            .ok_or_else(|| {
                AwsError::local(
                    "DescribeDBInstances",
                    id,
                    "no DB instance by this identifier",
                )
            })?;
        writers.insert(instance.source.clone().unwrap_or_else(|| id.clone()));
    }
    let mut writers = writers.into_iter();
    let (Some(writer_id), None) = (writers.next(), writers.next()) else {
        return Err(AwsError::local(
            "DescribeDBInstances",
            &ids.join(","),
            "these instances belong to more than one writer; an env has one database",
        ));
    };
    let mut writer = instances
        .iter()
        .find(|i| i.identifier == writer_id)
        .cloned()
        .ok_or_else(|| {
            AwsError::local(
                "DescribeDBInstances",
                &writer_id,
                "the replicas' writer does not exist",
            )
        })?;
    // A writer envctl made keeps its credentials in envctl's secret (RDS then reports no
    // MasterUserSecret): services naming it import as the reference.
    if writer.master_secret_arn.is_none() {
        let name = crate::model::master_secret_name(&writer_id);
        writer.master_secret_arn = retrying(clock.as_ref(), &name, || {
            crate::aws::secrets::describe(&clients.secrets, &name)
        })
        .await?
        .map(|s| s.arn);
    }
    let mut readers: Vec<_> = instances
        .iter()
        .filter(|i| {
            i.source.as_deref() == Some(writer_id.as_str())
                && i.status != DbInstanceStatus::Deleting
        })
        .cloned()
        .collect();
    readers.sort_by(|a, b| a.identifier.cmp(&b.identifier));
    let parameters = match writer.parameter_group.as_deref() {
        Some(group) if !group.starts_with("default.") => retrying(clock.as_ref(), group, || {
            rds::parameters(&clients.rds, group)
        })
        .await?
        .unwrap_or_default(),
        _ => BTreeMap::new(),
    };
    let security_groups = retrying(clock.as_ref(), &writer_id, || {
        rds::instance_security_groups(&clients.rds, &writer_id)
    })
    .await?;
    Ok(Some(ImportedDb {
        writer,
        readers,
        parameters,
        security_groups,
    }))
}

/// The cluster's capacity providers other than Fargate's: those attached to it
/// (DescribeClusters' `capacityProviders`) and those scoped to it (a Managed Instances
/// provider's `cluster`), from DescribeCapacityProviders over every provider of the account
/// (paged), so a provider import would leave out is found however it was associated.
async fn cluster_capacity_providers(
    c: &aws_sdk_ecs::Client,
    cluster: &crate::model::live::LiveCluster,
) -> Result<Vec<crate::import::ImportedProvider>, AwsError> {
    // With the cluster: a Managed Instances provider is returned only so.
    Ok(ecs::cluster_capacity_providers(c, &cluster.name)
        .await?
        .into_iter()
        .filter(|cp| {
            let scoped = cp
                .cluster
                .as_deref()
                .is_some_and(|c| c == cluster.name || c == cluster.arn);
            let attached = cluster.capacity_providers.contains(&cp.name);
            (scoped || attached)
                && cp.status != CapacityProviderStatus::Inactive
                && !cp.name.starts_with("FARGATE")
        })
        .map(|cp| crate::import::ImportedProvider {
            name: cp.name,
            kind: cp.kind,
            managed: cp.managed,
        })
        .collect())
}
