//! ECS operations: the cluster, services with their task-definition revisions, and the
//! clean-up of a family's revisions.
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::EcsOp;
use std::time::Duration;

use super::conform;
use super::context::Context;
use super::error::ActionError;
use super::existing;
use super::outcome::Outcome;
use super::service_watch;
use crate::aws::ecs;
use crate::exec::Operation;
use crate::exec::{PollInterval, Probe};
use crate::model::live::LiveService;
use crate::model::requests;
use crate::plan::op::ServiceRevision;
use crate::plan::{Planned, ResourceId};

type Step = Result<Outcome, ActionError>;

fn applied(detail: impl Into<String>) -> Step {
    Ok(Outcome::Applied {
        detail: detail.into(),
    })
}

fn unchanged(detail: impl Into<String>) -> Step {
    Ok(Outcome::Unchanged {
        detail: detail.into(),
    })
}

pub async fn create_cluster(
    ctx: &Context,
    id: &ResourceId,
    name: &str,
    attach: Option<&str>,
) -> Step {
    let tags = ctx.creation_tags();
    // On an account's first use of ECS, CreateCluster makes the service-linked role
    // AWSServiceRoleForECS and refuses until it can assume it ("Unable to assume the service
    // linked role"; terraform-provider-aws#15452, aws/containers-roadmap#2614): retried. The
    // request is a linted name and tags, so another InvalidParameterException only fails
    // later, with the same error.
    ctx.mutate_through(
        &id.to_string(),
        Operation::Ecs(EcsOp::CreateCluster),
        (
            ErrorCode::InvalidParameterException,
            "the ECS service-linked role may still be propagating",
            ECS_PROPAGATION,
        ),
        || ecs::create_cluster(&ctx.clients.ecs, name, &tags),
    )
    .await?;
    // An existing provider (`ecs.capacity.provider`) serves a cluster's services only once
    // it is attached to that cluster; attaching changes the cluster, never the provider.
    if let Some(provider) = attach {
        let providers = vec![provider.to_string()];
        ctx.mutate_through(
            &id.to_string(),
            Operation::Ecs(EcsOp::PutClusterCapacityProviders),
            (
                ErrorCode::ClusterNotFoundException,
                "the cluster just created is not visible yet",
                ECS_PROPAGATION,
            ),
            || ecs::put_cluster_capacity_providers(&ctx.clients.ecs, name, &providers),
        )
        .await?;
        return applied(format!("created, {provider} attached"));
    }
    applied("created")
}

/// Only an adoption brings an existing cluster here: tag it as ours.
pub async fn adopt_cluster(ctx: &Context, id: &ResourceId, arn: &str) -> Step {
    let tags = ctx.adoption_tags();
    ctx.mutate(&id.to_string(), Operation::Ecs(EcsOp::TagResource), || {
        ecs::tag_resource(&ctx.clients.ecs, arn, &tags)
    })
    .await?;
    applied("adopted")
}

/// How long DeleteCluster is tried again while the cluster still has tasks: tasks told to
/// stop (a service's as it drains, an engine's after StopTask) are STOPPING for up to their
/// stop timeout; terraform-provider-aws retries ClusterContainsTasksException (and the
/// services and instances ones) for 10 minutes.
const CLUSTER_TASKS_STOP: Duration = Duration::from_secs(180);

/// How long a call naming a cluster just created may meet `ClusterNotFoundException`
/// (ECS's eventual consistency, hashicorp/terraform#15066), and CreateCluster the
/// service-linked role's absence on an account's first ECS use (terraform-provider-aws#15452):
/// terraform-provider-aws retries both for its propagation timeout, about 2 minutes.
pub(super) const ECS_PROPAGATION: Duration = Duration::from_secs(120);

pub async fn delete_cluster(ctx: &Context, id: &ResourceId, name: &str) -> Step {
    let result = ctx
        .mutate_through(
            &id.to_string(),
            Operation::Ecs(EcsOp::DeleteCluster),
            (
                ErrorCode::ClusterContainsTasksException,
                "tasks are still stopping",
                CLUSTER_TASKS_STOP,
            ),
            || ecs::delete_cluster(&ctx.clients.ecs, name),
        )
        .await;
    match result {
        Ok(()) => applied("deleted"),
        // Tasks still running after the wait are standalone ones nothing stops: load
        // engines of a run that was killed, or tasks someone else started.
        Err(e) if e.is_code(ErrorCode::ClusterContainsTasksException) => {
            Err(ActionError::Failed(format!(
                "cluster {name} still has running tasks that no service owns ({e}), e.g. load engines of a run that was killed: stop them (aws ecs list-tasks --cluster {name}, then aws ecs stop-task), then run destroy again; everything else of the env is deleted"
            )))
        }
        Err(e) if e.is_code(ErrorCode::ClusterNotFoundException) => unchanged("already gone"),
        // With `ecs.capacity: {instances: N}` the instances are not envctl's: it neither
        // stops nor deregisters them, so the cluster stays until their group is gone.
        // A cluster-scoped (Managed Instances) provider envctl does not own, e.g. one an
        // imported env runs on with `ecs.capacity.provider`: DeleteCluster waits for it.
        Err(e) if e.is_code(ErrorCode::ClusterContainsCapacityProviderException) => {
            Err(ActionError::Failed(format!(
                "cluster {name} still has a capacity provider scoped to it that envctl does not own ({e}): delete that provider (DeleteCapacityProvider with --cluster {name}) and wait until it is INACTIVE, then run destroy again"
            )))
        }
        Err(e) if e.is_code(ErrorCode::ClusterContainsContainerInstancesException) => {
            Err(ActionError::Failed(format!(
                "cluster {name} still has container instances registered, which envctl did not launch and does not stop: scale the group that launched them to zero (their agents deregister), then run destroy again to delete the cluster; everything else of the env is deleted"
            )))
        }
        Err(e) => Err(e),
    }
}

/// The revision to run: an identical one already registered (by content), or a new one.
/// `running` is the revision the service runs now, preferred among identical ones.
async fn revision(
    ctx: &Context,
    id: &ResourceId,
    definition: &crate::model::TaskDefinition,
    running: Option<&str>,
) -> Result<(String, bool), ActionError> {
    let outputs = ctx.outputs();
    let resolved = definition
        .resolve(&outputs)
        .map_err(|r| ActionError::Unresolved(r.to_string()))?;
    let hash = resolved.content_hash();
    // Revisions are immutable: any known ARN whose content hashes the same can be reused,
    // which is what makes switching back to an earlier variant cost no registration.
    let known = ctx.cache.lock().ok().and_then(|cache| {
        let current = running.map(str::to_string);
        let mut candidates: Vec<&String> = cache
            .task_definitions
            .iter()
            .filter(|(_, td)| td.family == resolved.family && td.content_hash() == hash)
            .map(|(arn, _)| arn)
            .collect();
        // Prefer the revision the service runs now, then the newest.
        candidates.sort_by_key(|arn| {
            (
                Some(*arn) != current.as_ref(),
                std::cmp::Reverse(revision_number(arn)),
            )
        });
        candidates.first().map(|a| a.to_string())
    });
    if let Some(arn) = known {
        return Ok((arn, false));
    }
    let resource = id.to_string();
    let env = ctx.owner.env.as_str();
    // Not known to this checkout, but an earlier run may have registered it and then lost
    // the answer, or crashed before CreateService: the family's newest revisions tell.
    // Only an economy (a duplicate revision is harmless): a lookup that keeps failing
    // (throttled past its retries) lets the registration go ahead.
    let earlier = match look_in_family(ctx, &resource, &resolved, &hash).await {
        Ok(found) => found,
        Err(e) if e.is_interruption() => return Err(e),
        Err(_) => None,
    };
    if let Some(arn) = earlier {
        if let Ok(mut cache) = ctx.cache.lock() {
            cache.task_definitions.insert(arn.clone(), resolved);
        }
        return Ok((arn, false));
    }
    let tags = ctx.creation_tags();
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let (attempts, resolved_ref, hash_ref, tags_ref) = (&attempts, &resolved, &hash, &tags);
    let (arn, registered) = ctx
        .mutate(
            &resource,
            Operation::Ecs(EcsOp::RegisterTaskDefinition),
            move || async move {
                // RegisterTaskDefinition takes no client token: a retry after a lost answer
                // would register a second, identical revision. Look first.
                if attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0
                    && let Ok(Some(found)) =
                        registered_earlier(&ctx.clients.ecs, resolved_ref, hash_ref, env).await
                {
                    return Ok((found, false));
                }
                let arn =
                    ecs::register_task_definition(&ctx.clients.ecs, resolved_ref, tags_ref).await?;
                Ok((arn, true))
            },
        )
        .await?;
    if let Ok(mut cache) = ctx.cache.lock() {
        cache.task_definitions.insert(arn.clone(), resolved);
    }
    Ok((arn, registered))
}

/// How many of a family's newest revisions are compared before registering one: a lost
/// answer or a crash leaves its revision on top, unless others registered since.
const RECENT_REVISIONS: i32 = 5;

/// The family's newest revisions, each read paced and retried on its own like every read
/// of a plan: the one this env registered with this content, if any.
async fn look_in_family(
    ctx: &Context,
    resource: &str,
    resolved: &crate::model::TaskDefinition,
    hash: &str,
) -> Result<Option<String>, ActionError> {
    let recent = ctx
        .read(resource, Operation::Ecs(EcsOp::ListTaskDefinitions), || {
            ecs::latest_task_definitions(&ctx.clients.ecs, &resolved.family, RECENT_REVISIONS)
        })
        .await?;
    for arn in recent {
        let (td, tags) = ctx
            .read(
                resource,
                Operation::Ecs(EcsOp::DescribeTaskDefinition),
                || ecs::describe_task_definition_tagged(&ctx.clients.ecs, &arn),
            )
            .await?;
        if same_revision(&td, &tags, hash, &ctx.owner.env) {
            return Ok(Some(arn));
        }
    }
    Ok(None)
}

/// A revision this env registered (its tags) with exactly this content.
fn same_revision(
    td: &crate::model::TaskDefinition,
    tags: &crate::model::live::Tags,
    hash: &str,
    env: &str,
) -> bool {
    crate::model::live::owned_by(tags, env) && td.content_hash() == hash
}

/// The newest revision of the family that this env registered with exactly this content,
/// if any (ListTaskDefinitions `sort: DESC`, then DescribeTaskDefinition with tags, newest
/// first), read within a registration's retry.
async fn registered_earlier(
    c: &aws_sdk_ecs::Client,
    resolved: &crate::model::TaskDefinition,
    hash: &str,
    env: &str,
) -> Result<Option<String>, crate::aws::AwsError> {
    for arn in ecs::latest_task_definitions(c, &resolved.family, RECENT_REVISIONS).await? {
        let (td, tags) = ecs::describe_task_definition_tagged(c, &arn).await?;
        if same_revision(&td, &tags, hash, env) {
            return Ok(Some(arn));
        }
    }
    Ok(None)
}

fn revision_number(arn: &str) -> u64 {
    envctl_aws_model::arn::task_definition_revision(arn).map_or(0, |(_, revision)| revision)
}

fn what(arn: &str, registered: bool) -> String {
    if registered {
        format!("{} registered", short(arn))
    } else {
        format!("{} reused", short(arn))
    }
}

/// What CreateService sends: the planned request on the planned revision (a placeholder
/// until registered), compared with the plan as one value.
#[derive(Debug, Clone, serde::Serialize)]
struct ServiceCreate {
    request: requests::CreateService,
    revision: Planned<String>,
}

pub async fn create_service(
    ctx: &Context,
    id: &ResourceId,
    register: &requests::RegisterTaskDefinition,
    request: &requests::CreateService,
    revision_planned: &Planned<String>,
) -> Step {
    let resource = id.to_string();
    let (arn, registered) = match revision_planned.known() {
        Some(arn) => (arn.clone(), false),
        None => revision(ctx, id, &register.definition, None).await?,
    };
    let planned = ServiceCreate {
        request: request.clone(),
        revision: revision_planned.clone(),
    };
    let sending = conform::filled(&resource, &planned, |s| {
        s.revision = Planned::Known(arn.clone())
    })?;
    let req = sending.request;
    ctx.events
        .status(&resource, &format!("creating on {}", short(&arn)));
    let tags = ctx.creation_tags();
    // A cluster created moments ago may not be visible to CreateService yet.
    let started = match ctx
        .mutate_through(
            &resource,
            Operation::Ecs(EcsOp::CreateService),
            (
                ErrorCode::ClusterNotFoundException,
                "the cluster just created is not visible yet",
                ECS_PROPAGATION,
            ),
            || ecs::create_service(&ctx.clients.ecs, &req, &arn, &tags),
        )
        .await
    {
        Ok(started) => started,
        // ECS answers a CreateService for a name that exists with another client token with
        // this code ("Creation of service was not idempotent."), and every other refused
        // parameter with it too: whether the service now exists decides, never the words.
        Err(e) if e.is_code(ErrorCode::InvalidParameterException) => {
            match created_earlier(ctx, id, &req, &arn).await? {
                Some(live) => live,
                None => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    follow_deployment(
        ctx,
        id,
        &req.cluster,
        &started,
        &arn,
        what(&arn, registered),
    )
    .await
}

/// The service an earlier run created before its answer (or the run) was lost (docs/
/// aws-behaviour.md, "Creates whose response was lost"): ours is brought to the desired
/// revision and count, as an update would; a foreign one is refused; `None` when no ACTIVE
/// service has the name (the refusal was about the request itself).
async fn created_earlier(
    ctx: &Context,
    id: &ResourceId,
    req: &requests::CreateService,
    arn: &str,
) -> Result<Option<LiveService>, ActionError> {
    let resource = id.to_string();
    let cluster = req.cluster.clone();
    let Some(live) = existing::ecs_service(ctx, &resource, &cluster, id.name()).await? else {
        return Ok(None);
    };
    if live.task_definition == arn && live.desired_count == req.desired_count {
        return Ok(Some(live));
    }
    let new_td = (live.task_definition != arn).then_some(arn);
    ctx.mutate(&resource, Operation::Ecs(EcsOp::UpdateService), || {
        ecs::update_service(
            &ctx.clients.ecs,
            &cluster,
            id.name(),
            new_td,
            Some(req.desired_count),
        )
    })
    .await
    .map(Some)
}

/// What an `EcsServiceUpdate` does, as the plan decided.
pub struct ServiceUpdate<'a> {
    /// The revision the service runs now.
    pub running: &'a str,
    pub revision: &'a ServiceRevision,
    pub request: &'a requests::CreateService,
    pub count: Option<u32>,
    pub adopt: Option<&'a str>,
    /// `forceNewDeployment`: redeploy an unhealthy service even when nothing else changes,
    /// or take a strategy or network change (which ECS only applies with it).
    pub force: bool,
    /// Send the service's placement (strategy, network configuration, deployment
    /// percentages) as the planned request has it.
    pub placement: bool,
}

/// A new revision and/or task count, as the plan decided; the revision is resolved now
/// (reused by content, or registered), since only AWS hands out its ARN.
pub async fn update_service(ctx: &Context, id: &ResourceId, update: ServiceUpdate<'_>) -> Step {
    let ServiceUpdate {
        running,
        revision: planned_revision,
        request: planned_request,
        count,
        adopt,
        force,
        placement,
    } = update;
    let resource = id.to_string();
    let name = id.name();
    if let Some(arn) = adopt {
        let tags = ctx.adoption_tags();
        ctx.mutate(&resource, Operation::Ecs(EcsOp::TagResource), || {
            ecs::tag_resource(&ctx.clients.ecs, arn, &tags)
        })
        .await?;
    }
    let (arn, registered) = match planned_revision {
        ServiceRevision::Running => (running.to_string(), false),
        ServiceRevision::Register { register, arn } => match arn.known() {
            Some(arn) => (arn.clone(), false),
            None => revision(ctx, id, &register.definition, Some(running)).await?,
        },
    };
    let planned = ServiceUpdateSend {
        request: planned_request.clone(),
        revision: planned_revision.clone(),
    };
    let sending = conform::filled(&resource, &planned, |s| {
        if let ServiceRevision::Register { arn: planned, .. } = &mut s.revision {
            *planned = Planned::Known(arn.clone());
        }
    })?;
    let req = sending.request;
    // A revision whose content only became known now may be the one already running.
    let new_td = (running != arn.as_str()).then_some(arn.as_str());
    let cluster = req.cluster.clone();
    if new_td.is_none() && force {
        // Unhealthy on the desired revision: a new deployment of it, followed like any
        // rolling update (UpdateService with forceNewDeployment; a count change goes first).
        if count.is_some() {
            ctx.mutate(&resource, Operation::Ecs(EcsOp::UpdateService), || {
                ecs::update_service(&ctx.clients.ecs, &cluster, name, None, count)
            })
            .await?;
        }
        ctx.events
            .status(&resource, &format!("redeploying {}", short(&arn)));
        let started = ctx
            .mutate(&resource, Operation::Ecs(EcsOp::UpdateService), || {
                ecs::update_service_placed(&ctx.clients.ecs, &req, None, None, true)
            })
            .await?;
        return follow_deployment(
            ctx,
            id,
            &cluster,
            &started,
            &arn,
            format!("{} redeployed", short(&arn)),
        )
        .await;
    }
    if new_td.is_none() && count.is_none() && !placement {
        return if adopt.is_some() {
            applied("adopted")
        } else {
            unchanged(format!(
                "already runs {} with {} tasks",
                short(&arn),
                req.desired_count
            ))
        };
    }
    ctx.events
        .status(&resource, &format!("updating to {}", short(&arn)));
    // A new deployment carries the placement settings as the plan's request has them, and so
    // does an update the plan made for them (deployment percentages); a count change alone
    // only scales (no deployment to configure).
    let started = ctx
        .mutate(&resource, Operation::Ecs(EcsOp::UpdateService), || async {
            if new_td.is_some() || placement {
                ecs::update_service_placed(&ctx.clients.ecs, &req, new_td, count, force).await
            } else {
                ecs::update_service(&ctx.clients.ecs, &cluster, name, None, count).await
            }
        })
        .await?;
    follow_deployment(ctx, id, &cluster, &started, &arn, what(&arn, registered)).await
}

/// Puts a service back on a revision it ran before (a matrix `--restore`): UpdateService
/// with that ARN, which ECS accepts for any ACTIVE revision of the family
/// (docs/aws-behaviour.md), so nothing is registered.
pub async fn restore_service(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    running: &str,
    revision: &str,
    count: Option<u32>,
) -> Step {
    let resource = id.to_string();
    let name = id.name();
    let new_td = (running != revision).then_some(revision);
    if new_td.is_none() && count.is_none() {
        return unchanged(format!("already runs {}", short(revision)));
    }
    ctx.events
        .status(&resource, &format!("restoring {}", short(revision)));
    let started = ctx
        .mutate(&resource, Operation::Ecs(EcsOp::UpdateService), || {
            ecs::update_service(&ctx.clients.ecs, cluster, name, new_td, count)
        })
        .await?;
    follow_deployment(
        ctx,
        id,
        cluster,
        &started,
        revision,
        format!("{} restored", short(revision)),
    )
    .await
}

/// What UpdateService sends: the planned request on the planned revision (a placeholder
/// until registered), compared with the plan as one value.
#[derive(Debug, Clone, serde::Serialize)]
struct ServiceUpdateSend {
    request: requests::CreateService,
    revision: ServiceRevision,
}

/// Tracks *our* deployment: the PRIMARY one on the revision just set.
pub(super) async fn follow_deployment(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    started: &LiveService,
    arn: &str,
    what: String,
) -> Step {
    let Some(deployment) = started
        .deployments
        .iter()
        .find(|d| {
            d.status == envctl_aws_model::status::DeploymentStatus::Primary
                && d.task_definition == arn
        })
        .map(|d| d.id.clone())
    else {
        return Err(ActionError::Failed(format!(
            "ECS reported no PRIMARY deployment of {}",
            short(arn)
        )));
    };
    wait_for_deployment(ctx, id, cluster, &deployment, arn).await?;
    applied(format!("{what}; deployment {deployment} completed"))
}

fn short(arn: &str) -> &str {
    envctl_aws_model::arn::resource_name(arn)
}

async fn wait_for_deployment(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    deployment: &str,
    arn: &str,
) -> Result<(), ActionError> {
    let resource = id.to_string();
    let name = id.name();
    let (_, every) = ctx.poll.ecs;
    let since = ctx.clock.now();
    // Right after UpdateService the deployment is IN_PROGRESS by definition: the first look
    // is when a task can have started.
    ctx.pause(&resource, "the deployment", ctx.poll.ecs_deployment_first)
        .await;
    // Looks are shared with the other services' waits, ten names per DescribeServices.
    let watching = service_watch::watch(ctx, cluster, name);
    let deadline = ctx.deadlines.ecs_deployment;
    let last_look = since + deadline.as_secs_f64();
    // When this wait first saw the service report unplaceable tasks (envctl's clock).
    let unplaced_since: std::sync::Mutex<Option<f64>> = std::sync::Mutex::new(None);
    let waited = ctx
        .wait(
            &resource,
            &format!("deployment {deployment}"),
            since,
            deadline,
            PollInterval::fixed(every),
            || async {
                let Some(s) = service_watch::look(ctx, &watching, &resource, last_look).await?
                else {
                    return Err(ActionError::Failed("the service disappeared".into()));
                };
                if let Some(failed) = placement_stuck(
                    &s,
                    ctx.clock.now(),
                    &unplaced_since,
                    ctx.deadlines.ecs_placement,
                ) {
                    return Ok(failed);
                }
                Ok(probe_deployment(&s, deployment, arn, |text| {
                    ctx.events.status(&resource, text)
                }))
            },
        )
        .await;
    drop(watching);
    match waited {
        Err(ActionError::Failed(reason)) => {
            let events = ctx
                .read(&resource, Operation::Ecs(EcsOp::DescribeServices), || {
                    ecs::service_events(&ctx.clients.ecs, cluster, name, 5)
                })
                .await
                .unwrap_or_default();
            let stopped = ctx
                .read(&resource, Operation::Ecs(EcsOp::ListTasks), || {
                    ecs::stopped_task_reasons(&ctx.clients.ecs, cluster, name, 3)
                })
                .await
                .unwrap_or_default();
            let mut text = reason;
            if !events.is_empty() {
                text.push_str(&format!("; service events: {}", events.join(" | ")));
            }
            if !stopped.is_empty() {
                text.push_str(&format!("; stopped tasks: {}", stopped.join(" | ")));
            }
            Err(ActionError::Failed(text))
        }
        other => other,
    }
}

/// ECS's service event when a task finds no container instance ("Amazon ECS service event
/// messages"); the rest of the message names the closest instance and what it lacks.
pub const PLACEMENT_EVENT: &str =
    "was unable to place a task because no container instance met all of its requirements";

/// The service's newest placement failure, if it is still current: ECS repeats the event
/// while the tasks stay unplaced, and any later event (tasks started, steady state, a new
/// deployment) is newer than it.
pub fn current_placement_event(s: &LiveService) -> Option<&str> {
    s.events
        .first()
        .filter(|e| e.contains(PLACEMENT_EVENT))
        .map(String::as_str)
}

/// Fails a deployment whose tasks have been reported unplaceable for `bound` (measured
/// from when this wait first saw the event): no instance is coming that fits them, and
/// waiting out the deployment deadline would only hide the reason.
fn placement_stuck(
    s: &LiveService,
    now: f64,
    since: &std::sync::Mutex<Option<f64>>,
    bound: Duration,
) -> Option<Probe<()>> {
    let Ok(mut first_seen) = since.lock() else {
        return None;
    };
    // The newest deployment's own tasks: during a rolling update the old ones keep the
    // service's running count at the desired one while the new tasks find no room.
    let stuck = match s
        .deployments
        .iter()
        .find(|d| d.status == envctl_aws_model::status::DeploymentStatus::Primary)
    {
        Some(d) => d.running_count < d.desired_count,
        None => s.running_count < s.desired_count,
    };
    let Some(event) = current_placement_event(s).filter(|_| stuck) else {
        *first_seen = None;
        return None;
    };
    let seen = *first_seen.get_or_insert(now);
    let waited = now - seen;
    (waited >= bound.as_secs_f64()).then(|| Probe::Failed {
        reason: format!(
            "tasks could not be placed for {waited:.0}s (at most {}s): {event}",
            bound.as_secs()
        ),
    })
}

/// Reads one DescribeServices answer for a deployment: done when it is COMPLETED; failed
/// when it FAILED or was replaced by a rollback (the service is stable again, but not on
/// what was asked for).
pub fn probe_deployment(
    s: &LiveService,
    deployment: &str,
    arn: &str,
    mut status: impl FnMut(&str),
) -> Probe<()> {
    match s.deployments.iter().find(|d| d.id == deployment) {
        // Nothing to start: ECS reports COMPLETED a moment later; some endpoints (moto)
        // never do.
        Some(d)
            if d.desired_count == 0
                && d.running_count == 0
                && d.rollout_state != envctl_aws_model::status::RolloutState::Failed =>
        {
            Probe::Done(())
        }
        // COMPLETED is not enough: a count-only update starts no deployment, so the one
        // found here has long been COMPLETED while the new tasks are still starting (ECS
        // Developer Guide, "Updating a service": a desired-count change alone only scales).
        Some(d)
            if d.rollout_state == envctl_aws_model::status::RolloutState::Completed
                && s.running_count == s.desired_count =>
        {
            Probe::Done(())
        }
        Some(d) if d.rollout_state == envctl_aws_model::status::RolloutState::Failed => {
            Probe::Failed {
                reason: format!(
                    "deployment {deployment} failed ({} tasks failed to start); the circuit breaker rolls back",
                    d.failed_tasks
                ),
            }
        }
        Some(d) => {
            let text = format!(
                "deployment {deployment} {} {}/{} running",
                d.rollout_state, d.running_count, d.desired_count
            );
            status(&text);
            Probe::Pending { status: text }
        }
        None => {
            let primary = s
                .deployments
                .iter()
                .find(|d| d.status == envctl_aws_model::status::DeploymentStatus::Primary);
            match primary {
                Some(p) if p.task_definition != arn => Probe::Failed {
                    reason: format!(
                        "deployment {deployment} was rolled back to {}",
                        short(&p.task_definition)
                    ),
                },
                // A count-only update makes no new deployment: the existing one counts.
                Some(p)
                    if p.rollout_state == envctl_aws_model::status::RolloutState::Completed
                        && s.running_count == s.desired_count =>
                {
                    Probe::Done(())
                }
                Some(p) => Probe::Pending {
                    status: format!(
                        "deployment {} {} {}/{} running",
                        p.id, p.rollout_state, p.running_count, p.desired_count
                    ),
                },
                None => Probe::Pending {
                    status: "no deployment yet".into(),
                },
            }
        }
    }
}

pub async fn delete_service(ctx: &Context, id: &ResourceId, cluster: &str, name: &str) -> Step {
    match ctx
        .mutate(
            &id.to_string(),
            Operation::Ecs(EcsOp::DeleteService),
            || ecs::delete_service(&ctx.clients.ecs, cluster, name),
        )
        .await
    {
        Ok(()) => {}
        Err(e) if e.is_code(ErrorCode::ServiceNotFoundException) => {}
        Err(e) => return Err(e),
    }
    wait_service_gone(ctx, id, cluster, name, ctx.deadlines.ecs_delete).await?;
    applied("deleted (INACTIVE)")
}

pub async fn wait_service_gone(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    name: &str,
    deadline: Duration,
) -> Result<(), ActionError> {
    let resource = id.to_string();
    let (initial, max) = ctx.poll.ecs;
    let since = ctx.clock.now();
    ctx.pause(
        &resource,
        "the service deletion",
        ctx.poll.delete_first.ecs_service,
    )
    .await;
    // Looks are shared with the other services' deletions, ten names per DescribeServices.
    let watching = service_watch::watch(ctx, cluster, name);
    let last_look = since + deadline.as_secs_f64();
    ctx.wait(
        &resource,
        "service deletion",
        since,
        deadline,
        PollInterval::growing(initial, max),
        || async {
            let s = service_watch::look(ctx, &watching, &resource, last_look).await?;
            Ok(match s {
                None => Probe::Done(()),
                Some(s) if s.status == envctl_aws_model::status::ServiceStatus::Inactive => {
                    Probe::Done(())
                }
                Some(s) => Probe::Pending {
                    status: format!("{} ({} running)", s.status, s.running_count),
                },
            })
        },
    )
    .await
}

/// ECS takes up to ten ARNs per DeleteTaskDefinitions call.
const DELETE_TASK_DEFINITIONS_BATCH: usize = 10;

/// Deregisters the revisions (one call each; a revision already gone is skipped) and
/// deletes them ten per call. Only INACTIVE revisions can be deleted, hence the order.
pub async fn delete_task_definitions(ctx: &Context, id: &ResourceId, revisions: &[String]) -> Step {
    let resource = id.to_string();
    let mut gone = Vec::new();
    let mut deregistered = Vec::new();
    for arn in revisions {
        match ctx
            .mutate(
                &resource,
                Operation::Ecs(EcsOp::DeregisterTaskDefinition),
                || ecs::deregister_task_definition(&ctx.clients.ecs, arn),
            )
            .await
        {
            Ok(()) => deregistered.push(arn.clone()),
            // "The specified task definition does not exist": deleted by an earlier run.
            Err(e) if e.is_code(ErrorCode::ClientException) => gone.push(arn.clone()),
            Err(e) => return Err(e),
        }
    }
    for chunk in deregistered.chunks(DELETE_TASK_DEFINITIONS_BATCH) {
        ctx.mutate(
            &resource,
            Operation::Ecs(EcsOp::DeleteTaskDefinitions),
            || ecs::delete_task_definitions(&ctx.clients.ecs, chunk),
        )
        .await?;
    }
    if let Ok(mut cache) = ctx.cache.lock() {
        for arn in revisions {
            cache.task_definitions.remove(arn);
        }
    }
    applied(format!(
        "{} deregistered and deleted{}",
        deregistered.len(),
        if gone.is_empty() {
            String::new()
        } else {
            format!(", {} already gone", gone.len())
        }
    ))
}
