//! The env's EC2 capacity: the Managed Instances capacity provider envctl owns (created,
//! attached to the cluster, deleted on destroy once its instances have left), and the wait
//! for container instances registered by something else.
use envctl_aws_model::ErrorCode;
use std::collections::BTreeMap;

use envctl_aws_model::placement;

use super::context::Context;
use super::error::ActionError;
use super::outcome::Outcome;
use crate::aws::ecs;
use crate::exec::{Operation, PollInterval, Probe};
use crate::model::{ClusterCapacity, ManagedInstancesSettings};
use crate::plan::ResourceId;
use crate::preflight;

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
        let settings = m.settings(&ctx.desired.subnets, &ctx.desired.security_groups);
        let tags = ctx.creation_tags();
        let request = ecs::ManagedInstancesProvider {
            name: &m.provider,
            cluster: &cluster,
            settings: &settings,
            tags: &tags,
        };
        ctx.mutate(&resource, Operation::Ecs("CreateCapacityProvider"), || {
            ecs::create_managed_instances_provider(&ctx.clients.ecs, &request)
        })
        .await?;
        detail = format!("created ({}), attached", m.instance_types.join(", "));
    }
    attach(ctx, &resource, &cluster, &m.provider).await?;
    Ok(Outcome::Applied { detail })
}

/// PutClusterCapacityProviders with the provider as the cluster's only one and default
/// strategy.
async fn attach(
    ctx: &Context,
    resource: &str,
    cluster: &str,
    provider: &str,
) -> Result<(), ActionError> {
    let providers = vec![provider.to_string()];
    ctx.mutate(
        resource,
        Operation::Ecs("PutClusterCapacityProviders"),
        || ecs::put_cluster_capacity_providers(&ctx.clients.ecs, cluster, &providers),
    )
    .await
}

/// UpdateCapacityProvider with the settings the plan decided (apply does not compare them
/// again), then the attachment when the plan found the provider detached. Instances already
/// running keep their settings: ECS applies an update to instances launched afterwards.
pub async fn update_provider(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    name: &str,
    settings: &ManagedInstancesSettings,
    attach_it: bool,
) -> Step {
    let resource = id.to_string();
    ctx.mutate(&resource, Operation::Ecs("UpdateCapacityProvider"), || {
        ecs::update_managed_instances_provider(&ctx.clients.ecs, name, cluster, settings)
    })
    .await?;
    let mut detail = "updated; instances launched from now on use the new settings".to_string();
    if attach_it {
        attach(ctx, &resource, cluster, name).await?;
        detail.push_str("; attached");
    }
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
        Err(e) if e.is_code(ErrorCode::ClusterNotFoundException) => {}
        Err(e) => return Err(e),
    }
    match ctx
        .mutate(&resource, Operation::Ecs("DeleteCapacityProvider"), || {
            ecs::delete_capacity_provider(&ctx.clients.ecs, name, Some(cluster))
        })
        .await
    {
        Ok(()) => {}
        Err(e)
            if e.is_code(ErrorCode::ClientException)
                && e.to_string().contains("does not exist") =>
        {
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
                let instances = registered_instances(ctx, &resource, cluster).await?;
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

/// Waits, before services are created, for the container instances of `ecs.capacity:
/// {instances: N}` (registered by something else) until at least `instances` are ACTIVE
/// (REGISTERING and DRAINING ones take no new tasks). Each look also places the tasks of
/// `services` (the ones the plan creates) on what those instances have left, as the
/// capacity lint and the sandbox place them, and says how many fit: the heartbeat while it
/// waits, the result when done. Once N are there, room is ECS's to judge per service: a
/// service whose tasks do not fit then fails with ECS's own event within `waits.placement`
/// while the others go on, instead of the whole apply failing here. Each look is
/// ListContainerInstances plus one DescribeContainerInstances per 100 instances.
pub async fn await_registered(
    ctx: &Context,
    id: &ResourceId,
    instances: u32,
    services: &BTreeMap<String, u32>,
) -> Step {
    let resource = id.to_string();
    let cluster = ctx.desired.cluster.name.clone();
    let needs = crate::compile::task_needs(&ctx.desired);
    let order = placement::packing_order(
        services
            .iter()
            .filter_map(|(name, count)| needs.get(name).map(|task| (name, task, *count))),
    );
    let total: u32 = services.values().sum();
    let wanted = usize::try_from(instances).unwrap_or(usize::MAX);
    let (initial, max) = ctx.poll.ecs;
    let since = ctx.clock.now();
    let what = format!("{instances} ACTIVE container instances in {cluster}");
    let look = ctx
        .wait(
            &resource,
            &what,
            since,
            ctx.deadlines.ecs_capacity,
            PollInterval::growing(initial, max),
            || async {
                let registered = registered_instances(ctx, &resource, &cluster).await?;
                let fleet: Vec<_> = registered
                    .iter()
                    .filter(|i| i.status == "ACTIVE")
                    .map(preflight::as_placed)
                    .collect();
                let active = fleet.len();
                let fit = room_words(&preflight::unplaced_on(order.iter().copied(), fleet), total);
                let status = format!("{active} of {instances} ACTIVE; {fit}");
                Ok(if active >= wanted {
                    Probe::Done(status)
                } else {
                    Probe::Pending { status }
                })
            },
        )
        .await
        .map_err(|e| match e {
            // What to do about it: envctl starts no instance in this form.
            ActionError::TimedOut { .. } => ActionError::Failed(format!(
                "{e}; envctl launches no instance with ecs.capacity.instances: start what registers them in cluster {cluster} (an Auto Scaling group whose agents set ECS_CLUSTER={cluster}) and apply again, or let envctl own the capacity with ecs.capacity.managed_instances"
            )),
            other => other,
        })?;
    Ok(Outcome::Applied { detail: look })
}

/// "18 of 20 new tasks fit (mod-lists: insufficient memory)".
fn room_words(unplaced: &[(String, Vec<placement::Unplaced>)], total: u32) -> String {
    let missing: usize = unplaced.iter().map(|(_, u)| u.len()).sum();
    let fit = usize::try_from(total)
        .unwrap_or(usize::MAX)
        .saturating_sub(missing);
    let mut words = format!("{fit} of {total} new tasks fit");
    if let Some((service, why)) = unplaced.first() {
        words.push_str(&format!(
            " ({service}: {})",
            preflight::shortfall_words(why)
        ));
    }
    words
}

/// The cluster's container instances (ListContainerInstances, then DescribeContainerInstances
/// per 100); none when the cluster does not exist (deleted, or not created yet).
async fn registered_instances(
    ctx: &Context,
    resource: &str,
    cluster: &str,
) -> Result<Vec<ecs::InstanceCapacity>, ActionError> {
    match ctx
        .read(resource, Operation::Ecs("ListContainerInstances"), || {
            ecs::cluster_capacity(&ctx.clients.ecs, cluster)
        })
        .await
    {
        Ok(list) => Ok(list),
        Err(e) if e.is_code(ErrorCode::ClusterNotFoundException) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}
