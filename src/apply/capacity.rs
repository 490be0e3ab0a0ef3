//! The env's EC2 capacity: the Managed Instances capacity provider envctl owns (created in
//! its cluster and waited for until ACTIVE, deleted on destroy and waited for until
//! INACTIVE), and the wait for container instances registered by something else.
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::EcsOp;
use std::collections::BTreeMap;

use envctl_aws_model::placement;

use super::conform;
use super::context::Context;
use super::error::ActionError;
use super::outcome::Outcome;
use crate::aws::ecs;
use crate::exec::{Operation, PollInterval, Probe};
use crate::model::ManagedInstancesSettings;
use crate::plan::ResourceId;
use crate::plan::op::{ProviderCreate, TaskReservation};
use crate::preflight;
use envctl_aws_model::placement::TaskNeeds;

type Step = Result<Outcome, ActionError>;

/// CreateCapacityProvider with `managedInstancesProvider` and its `cluster` (unless an
/// earlier run created it), then the wait until it is ACTIVE: a Managed Instances provider
/// is PROVISIONING first and a service naming it before then is refused
/// (terraform-provider-aws#45693). It is never attached with PutClusterCapacityProviders:
/// it belongs to its cluster from creation, and that call refuses it
/// (terraform-provider-aws#44783, aws-cdk#35699); the services name it in their strategy.
pub async fn create_provider(ctx: &Context, id: &ResourceId, planned: &ProviderCreate) -> Step {
    let resource = id.to_string();
    let ProviderCreate {
        cluster,
        name,
        settings,
        ..
    } = &conform::filled(&resource, planned, |_| {})?;
    let cluster = cluster.as_str();
    let mut detail = "ACTIVE".to_string();
    // Still PROVISIONING after an interrupted run (`wait_only`): created already, only
    // waited for.
    if !planned.wait_only {
        let tags = ctx.creation_tags();
        let request = ecs::ManagedInstancesProvider {
            name,
            cluster,
            settings,
            tags: &tags,
        };
        // The cluster was created moments before: ECS may not find it yet.
        ctx.mutate_through(
            &resource,
            Operation::Ecs(EcsOp::CreateCapacityProvider),
            (
                ErrorCode::ClusterNotFoundException,
                "the cluster just created is not visible yet",
                super::ecs::ECS_PROPAGATION,
            ),
            || ecs::create_managed_instances_provider(&ctx.clients.ecs, &request),
        )
        .await?;
        detail = format!(
            "created in {cluster} ({}), ACTIVE",
            settings.instance_types.join(", ")
        );
    }
    await_provider(ctx, &resource, cluster, name, Wanted::Active).await?;
    Ok(Outcome::Applied { detail })
}

/// The provider state a wait is for.
#[derive(Clone, Copy, PartialEq)]
enum Wanted {
    /// ACTIVE: usable in a service's strategy.
    Active,
    /// INACTIVE or no longer described: deleted, its instances terminated, its cluster
    /// deletable (DeleteCluster answers ClusterContainsCapacityProviderException before).
    Gone,
}

/// Polls DescribeCapacityProviders (with the provider's cluster) until the provider is in
/// the wanted state, with the heartbeat of every wait. A provider that fails to provision
/// (or vanishes while provisioning) ends the wait with its status.
/// The provider's status as DescribeCapacityProviders with its cluster reports it; `None`
/// when neither exists.
async fn provider_status(
    ctx: &Context,
    resource: &str,
    cluster: &str,
    name: &str,
) -> Result<Option<String>, ActionError> {
    let names = vec![name.to_string()];
    let described = match ctx
        .read(
            resource,
            Operation::Ecs(EcsOp::DescribeCapacityProviders),
            || ecs::describe_capacity_providers(&ctx.clients.ecs, &names, Some(cluster)),
        )
        .await
    {
        Ok(list) => list,
        // No cluster, no cluster-scoped provider.
        Err(e) if e.is_code(ErrorCode::ClusterNotFoundException) => Vec::new(),
        Err(e) => return Err(e),
    };
    Ok(described
        .into_iter()
        .find(|cp| cp.name == name)
        .map(|cp| cp.status))
}

async fn await_provider(
    ctx: &Context,
    resource: &str,
    cluster: &str,
    name: &str,
    wanted: Wanted,
) -> Result<(), ActionError> {
    let (initial, max) = ctx.poll.ecs;
    let since = ctx.clock.now();
    let (what, deadline) = match wanted {
        Wanted::Active => ("capacity provider ACTIVE", ctx.deadlines.ecs_capacity),
        Wanted::Gone => ("capacity provider INACTIVE", ctx.deadlines.ecs_delete),
    };
    ctx.wait(
        resource,
        what,
        since,
        deadline,
        PollInterval::growing(initial, max),
        || async {
            let status = provider_status(ctx, resource, cluster, name).await?;
            Ok(
                match (
                    wanted,
                    status
                        .as_deref()
                        .map(envctl_aws_model::status::CapacityProviderStatus::parse),
                ) {
                    (
                        Wanted::Active,
                        Some(envctl_aws_model::status::CapacityProviderStatus::Active),
                    ) => Probe::Done(()),
                    (
                        Wanted::Active,
                        Some(envctl_aws_model::status::CapacityProviderStatus::Provisioning),
                    ) => Probe::Pending {
                        status: "PROVISIONING".into(),
                    },
                    (Wanted::Active, other) => {
                        return Err(ActionError::Failed(format!(
                            "capacity provider {name} is {} instead of becoming ACTIVE",
                            other.as_ref().map_or("gone", |s| s.as_str())
                        )));
                    }
                    (
                        Wanted::Gone,
                        None | Some(envctl_aws_model::status::CapacityProviderStatus::Inactive),
                    ) => Probe::Done(()),
                    (Wanted::Gone, Some(status)) => Probe::Pending {
                        status: status.to_string(),
                    },
                },
            )
        },
    )
    .await
}

/// UpdateCapacityProvider with the settings the plan decided (apply does not compare them
/// again). Instances already running keep their settings: ECS applies an update to
/// instances launched afterwards.
pub async fn update_provider(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    name: &str,
    settings: &ManagedInstancesSettings,
) -> Step {
    let resource = id.to_string();
    ctx.mutate(
        &resource,
        Operation::Ecs(EcsOp::UpdateCapacityProvider),
        || ecs::update_managed_instances_provider(&ctx.clients.ecs, name, cluster, settings),
    )
    .await?;
    Ok(Outcome::Applied {
        detail: "updated; instances launched from now on use the new settings".into(),
    })
}

/// Deletes the provider from its cluster (no detach: it was never attached) and waits
/// until it is INACTIVE: ECS keeps it DEPROVISIONING while it terminates its instances,
/// and DeleteCluster refuses the cluster until then (ClusterContainsCapacityProviderException,
/// API reference). A provider already DEPROVISIONING (an interrupted destroy) is only
/// waited for.
pub async fn delete_provider(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    name: &str,
    deprovisioning: bool,
) -> Step {
    let resource = id.to_string();
    if !deprovisioning {
        match ctx
            .mutate(
                &resource,
                Operation::Ecs(EcsOp::DeleteCapacityProvider),
                || ecs::delete_capacity_provider(&ctx.clients.ecs, name, Some(cluster)),
            )
            .await
        {
            Ok(()) => {}
            // ECS refuses with this code the delete of a provider that does not exist (gone
            // already, or deleted by a run whose answer was lost) and of one it will not
            // delete: which one is read, never guessed from the message's words.
            Err(e) if e.is_code(ErrorCode::ClientException) => {
                if let Some(status) = provider_status(ctx, &resource, cluster, name).await?
                    && status != envctl_aws_model::status::CapacityProviderStatus::Deprovisioning
                    && status != envctl_aws_model::status::CapacityProviderStatus::Inactive
                {
                    return Err(e);
                }
            }
            Err(e) if e.is_code(ErrorCode::ClusterNotFoundException) => {
                return Ok(Outcome::Unchanged {
                    detail: "already gone".into(),
                });
            }
            Err(e) => return Err(e),
        }
    }
    await_provider(ctx, &resource, cluster, name, Wanted::Gone).await?;
    Ok(Outcome::Applied {
        detail: "deleted; INACTIVE, its instances terminated".into(),
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
    cluster: &str,
    instances: u32,
    services: &BTreeMap<String, u32>,
    reservations: &BTreeMap<String, TaskReservation>,
) -> Step {
    let resource = id.to_string();
    let needs: BTreeMap<&String, TaskNeeds> = reservations
        .iter()
        .map(|(name, r)| (name, r.into()))
        .collect();
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
                let registered = registered_instances(ctx, &resource, cluster).await?;
                let fleet: Vec<_> = registered
                    .iter()
                    .filter(|i| i.status == envctl_aws_model::status::ContainerInstanceStatus::Active)
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
        .read(
            resource,
            Operation::Ecs(EcsOp::ListContainerInstances),
            || ecs::cluster_capacity(&ctx.clients.ecs, cluster),
        )
        .await
    {
        Ok(list) => Ok(list),
        Err(e) if e.is_code(ErrorCode::ClusterNotFoundException) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}
