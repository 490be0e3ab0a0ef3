//! The env's EC2 capacity: the Managed Instances capacity provider envctl owns (created,
//! attached to the cluster, deleted on destroy once its instances have left).
use super::context::Context;
use super::error::ActionError;
use super::outcome::Outcome;
use crate::aws::ecs;
use crate::exec::{Operation, PollInterval, Probe};
use crate::model::ClusterCapacity;
use crate::plan::ResourceId;
use crate::spec::catalog;

type Step = Result<Outcome, ActionError>;

/// CreateCapacityProvider with `managedInstancesProvider` (unless an earlier run created
/// it), then PutClusterCapacityProviders with it as the cluster's default strategy.
pub async fn create_provider(ctx: &Context, id: &ResourceId) -> Step {
    let ClusterCapacity::ManagedInstances(m) = &ctx.desired.cluster.capacity else {
        return Err(ActionError::NotInSpec(id.to_string()));
    };
    let resource = id.to_string();
    let cluster = ctx.desired.cluster.name.clone();
    let exists = ctx
        .live
        .capacity_providers
        .get(&m.provider)
        .is_some_and(|cp| cp.status == "ACTIVE");
    let mut detail = "attached to the cluster".to_string();
    if !exists {
        let sizes: Vec<catalog::InstanceSize> = m
            .instance_types
            .iter()
            .filter_map(|t| catalog::ec2_instance(t))
            .collect();
        let min_vcpus = sizes.iter().map(|s| s.vcpus).min().unwrap_or(1);
        let min_memory = sizes.iter().map(|s| s.memory_mib).min().unwrap_or(1024);
        let tags = ctx.creation_tags();
        let request = ecs::ManagedInstancesProvider {
            name: &m.provider,
            cluster: &cluster,
            infrastructure_role: &m.infrastructure_role,
            instance_profile: &m.instance_profile,
            subnets: &ctx.desired.subnets,
            security_groups: &ctx.desired.security_groups,
            instance_types: &m.instance_types,
            min_vcpus: i32::try_from(min_vcpus).unwrap_or(i32::MAX),
            min_memory_mib: i32::try_from(min_memory).unwrap_or(i32::MAX),
            tags: &tags,
        };
        ctx.mutate(&resource, Operation::Ecs("CreateCapacityProvider"), || {
            ecs::create_managed_instances_provider(&ctx.clients.ecs, &request)
        })
        .await?;
        detail = format!("created ({}), attached", m.instance_types.join(", "));
    }
    let providers = vec![m.provider.clone()];
    ctx.mutate(
        &resource,
        Operation::Ecs("PutClusterCapacityProviders"),
        || ecs::put_cluster_capacity_providers(&ctx.clients.ecs, &cluster, &providers),
    )
    .await?;
    Ok(Outcome::Applied { detail })
}

/// Detaches the provider (PutClusterCapacityProviders with none), deletes it, and waits
/// until the cluster has no container instance left: ECS terminates a Managed Instances
/// provider's instances when it is deleted, and DeleteCluster refuses a cluster that still
/// has some.
pub async fn delete_provider(ctx: &Context, id: &ResourceId, cluster: &str, name: &str) -> Step {
    let resource = id.to_string();
    match ctx
        .mutate(
            &resource,
            Operation::Ecs("PutClusterCapacityProviders"),
            || ecs::put_cluster_capacity_providers(&ctx.clients.ecs, cluster, &[]),
        )
        .await
    {
        Ok(()) => {}
        // The cluster is already gone: so is the attachment.
        Err(e) if e.is_code("ClusterNotFoundException") => {}
        Err(e) => return Err(e),
    }
    match ctx
        .mutate(&resource, Operation::Ecs("DeleteCapacityProvider"), || {
            ecs::delete_capacity_provider(&ctx.clients.ecs, name, Some(cluster))
        })
        .await
    {
        Ok(()) => {}
        Err(e) if e.is_code("ClientException") && e.to_string().contains("does not exist") => {
            return Ok(Outcome::Unchanged {
                detail: "already gone".into(),
            });
        }
        Err(e) => return Err(e),
    }
    let (initial, max) = ctx.poll.ecs;
    let since = ctx.clock.now();
    let left = ctx
        .wait(
            &resource,
            "its instances to leave the cluster",
            since,
            ctx.deadlines.ecs_delete,
            PollInterval::growing(initial, max),
            || async {
                let instances = match ctx
                    .read(&resource, Operation::Ecs("ListContainerInstances"), || {
                        ecs::cluster_capacity(&ctx.clients.ecs, cluster)
                    })
                    .await
                {
                    Ok(list) => list,
                    Err(e) if e.is_code("ClusterNotFoundException") => Vec::new(),
                    Err(e) => return Err(e),
                };
                Ok(if instances.is_empty() {
                    Probe::Done(())
                } else {
                    Probe::Pending {
                        status: format!("{} instances still registered", instances.len()),
                    }
                })
            },
        )
        .await;
    left?;
    Ok(Outcome::Applied {
        detail: "detached and deleted; its instances are gone".into(),
    })
}
