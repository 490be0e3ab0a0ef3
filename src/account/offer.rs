//! The read-only calls `envctl preflight` makes: what the account offers for this env.
use envctl_aws_model::ErrorCode;
use envctl_aws_model::status::ServiceStatus;
use std::collections::BTreeMap;

use crate::aws::{AwsError, Clients, ecs, kafka, rds};
use crate::model::live::InstanceCapacity;
use crate::model::{ClusterCapacity, DesiredState};
use crate::plan::Plan;
use crate::preflight::{EngineOffer, Offer};
use crate::spec::diagnostic::Diagnostics;
use crate::spec::env::EnvSpec;

/// Preflight as `plan` and `apply` run it: only when the plan creates a data store, and only
/// for the stores it creates (`preflight::creating`); read-only. A plan that creates none
/// makes no call here.
pub async fn before_creating(
    clients: &Clients,
    spec: &EnvSpec,
    desired: &DesiredState,
    plan: &Plan,
) -> Result<Diagnostics, AwsError> {
    let Some(scoped) = crate::preflight::creating(plan, desired) else {
        return Ok(Diagnostics::new());
    };
    // The stores' offer only: the services are not what this plan's preflight is about, and
    // apply waits for the cluster's capacity itself before it creates them.
    let offer = read_store_offer(clients, &scoped).await?;
    Ok(crate::preflight::check(spec, &scoped, &offer).sorted())
}

/// Reads only what the env needs: the data stores' offer (`read_store_offer`) and, for
/// container instances registered outside envctl, those of the cluster.
pub async fn read_offer(clients: &Clients, desired: &DesiredState) -> Result<Offer, AwsError> {
    let mut offer = read_store_offer(clients, desired).await?;
    offer.container_instances = registered_instances(clients, desired).await?;
    if offer.container_instances.is_some() {
        offer.running_tasks = running_tasks(clients, desired).await?;
    }
    Ok(offer)
}

/// The cluster's container instances when the env's capacity is the `instances` form (the
/// only form whose instances envctl neither creates nor scales); `None` for the other forms
/// and when the cluster does not exist yet (nothing can be registered in it then).
async fn registered_instances(
    clients: &Clients,
    desired: &DesiredState,
) -> Result<Option<Vec<InstanceCapacity>>, AwsError> {
    if !matches!(desired.cluster.capacity, ClusterCapacity::Instances) {
        return Ok(None);
    }
    match ecs::cluster_capacity(&clients.ecs, &desired.cluster.name).await {
        Ok(instances) => Ok(Some(instances)),
        Err(e) if e.is_code(ErrorCode::ClusterNotFoundException) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Running tasks of the env's services in its cluster (DescribeServices, ten names per
/// call as the API allows): what the instances' remaining resources already exclude.
async fn running_tasks(
    clients: &Clients,
    desired: &DesiredState,
) -> Result<BTreeMap<String, u32>, AwsError> {
    let names: Vec<String> = desired.services.keys().cloned().collect();
    let mut running = BTreeMap::new();
    for batch in names.chunks(10) {
        for s in ecs::describe_services(&clients.ecs, &desired.cluster.name, batch).await? {
            if s.status == ServiceStatus::Active {
                running.insert(s.name, s.running_count);
            }
        }
    }
    Ok(running)
}

/// Kafka versions when the env has clusters, engine versions and orderable classes when it
/// has a database.
async fn read_store_offer(clients: &Clients, desired: &DesiredState) -> Result<Offer, AwsError> {
    let mut offer = Offer::default();
    if !desired.kafka.is_empty() {
        offer.kafka_versions = Some(kafka::active_kafka_versions(&clients.kafka).await?);
    }
    if let Some(db) = &desired.db {
        let engine = &db.writer.engine;
        let versions = engine_versions(clients, engine).await?;
        offer.engine_versions = Some(versions);
        if let Some(resolved) = offer.resolve_engine_version(db.writer.engine_version.as_deref()) {
            let version = resolved.version.clone();
            let mut classes: Vec<&String> = std::iter::once(&db.writer.class)
                .chain(db.readers.iter().map(|r| &r.class))
                .collect();
            classes.sort();
            classes.dedup();
            let mut orderable = Vec::new();
            for class in classes {
                if rds::class_orderable(&clients.rds, engine, &version, class).await? {
                    orderable.push(class.clone());
                }
            }
            offer.orderable_classes = Some(orderable);
        }
    }
    Ok(offer)
}

/// DescribeDBEngineVersions for one engine (available versions only: RDS leaves
/// deprecated ones out unless IncludeAll is set), every page.
async fn engine_versions(clients: &Clients, engine: &str) -> Result<Vec<EngineOffer>, AwsError> {
    let defaults = rds::describe_engine_versions(&clients.rds, engine, true).await?;
    let all = rds::describe_engine_versions(&clients.rds, engine, false).await?;
    Ok(all
        .into_iter()
        .map(|(version, family)| EngineOffer {
            default: defaults.iter().any(|(v, _)| *v == version),
            version,
            family,
        })
        .collect())
}
