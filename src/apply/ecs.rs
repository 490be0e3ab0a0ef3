//! ECS actions: the cluster, and services with their task-definition revisions.
use std::time::Duration;

use super::context::Context;
use super::outcome::Outcome;
use crate::aws::ecs;
use crate::exec::{PollInterval, Probe, WaitOutcome, await_condition};
use crate::model::EcsService;
use crate::model::live::LiveService;
use crate::model::requests;
use crate::plan::{Action, ActionKind};

pub async fn cluster(ctx: &Context, action: &Action) -> Outcome {
    let name = ctx.desired.cluster.name.clone();
    if action.kind == ActionKind::Delete {
        return match ctx
            .mutate(&action.resource, "DeleteCluster", || {
                ecs::delete_cluster(&ctx.clients.ecs, &name)
            })
            .await
        {
            Ok(()) => Outcome::Applied {
                detail: "deleted".into(),
            },
            Err(e) if e.is_code("ClusterNotFoundException") => Outcome::Unchanged {
                detail: "already gone".into(),
            },
            Err(e) => Outcome::Failed {
                reason: e.to_string(),
            },
        };
    }
    let tags = ctx.creation_tags();
    if let Some(live) = &ctx.live.cluster
        && live.status == "ACTIVE"
    {
        // Only an adoption brings an existing cluster here: tag it as ours.
        return match ctx
            .mutate(&action.resource, "TagResource", || {
                ecs::tag_resource(&ctx.clients.ecs, &live.arn, &tags)
            })
            .await
        {
            Ok(()) => Outcome::Applied {
                detail: "adopted".into(),
            },
            Err(e) => Outcome::Failed {
                reason: e.to_string(),
            },
        };
    }
    match ctx
        .mutate(&action.resource, "CreateCluster", || {
            ecs::create_cluster(&ctx.clients.ecs, &name, &tags)
        })
        .await
    {
        Ok(()) => Outcome::Applied {
            detail: "created".into(),
        },
        Err(e) => Outcome::Failed {
            reason: e.to_string(),
        },
    }
}

/// The revision to run: an identical one already registered (by content), or a new one.
async fn revision(
    ctx: &Context,
    action: &Action,
    service: &EcsService,
) -> Result<(String, bool), String> {
    let outputs = ctx.outputs();
    let resolved = service.task_definition.resolve(&outputs).map_err(|r| {
        format!("{r} is still unknown: the resource that provides it did not report it")
    })?;
    let hash = resolved.content_hash();
    // Revisions are immutable: any known ARN whose content hashes the same can be reused,
    // which is what makes switching back to an earlier variant cost no registration.
    let known = ctx.cache.lock().ok().and_then(|cache| {
        let current = ctx
            .live
            .services
            .get(&service.name)
            .map(|l| l.task_definition.clone());
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
    let tags = ctx.creation_tags();
    let arn = ctx
        .mutate(&action.resource, "RegisterTaskDefinition", || {
            ecs::register_task_definition(&ctx.clients.ecs, &resolved, &tags)
        })
        .await
        .map_err(|e| e.to_string())?;
    if let Ok(mut cache) = ctx.cache.lock() {
        cache.task_definitions.insert(arn.clone(), resolved);
    }
    Ok((arn, true))
}

fn revision_number(arn: &str) -> u64 {
    arn.rsplit(':')
        .next()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

pub async fn service(ctx: &Context, action: &Action) -> Outcome {
    let (_, name) = crate::plan::key::split(&action.resource);
    if action.kind == ActionKind::Delete {
        return delete_service(ctx, action, name).await;
    }
    let Some(service) = ctx.desired.services.get(name) else {
        return Outcome::Failed {
            reason: format!("{name} is not in the desired state"),
        };
    };
    let (arn, registered) = match revision(ctx, action, service).await {
        Ok(r) => r,
        Err(reason) => return Outcome::Failed { reason },
    };
    let cluster = ctx.desired.cluster.name.clone();
    let live = ctx.live.services.get(name);
    if let Some(l) = live
        && action
            .changes
            .iter()
            .any(|c| c.field == crate::plan::diff::ADOPT_FIELD)
    {
        let tags = ctx.creation_tags();
        if let Err(e) = ctx
            .mutate(&action.resource, "TagResource", || {
                ecs::tag_resource(&ctx.clients.ecs, &l.arn, &tags)
            })
            .await
        {
            return Outcome::Failed {
                reason: e.to_string(),
            };
        }
    }
    let result = match live {
        None => {
            ctx.events
                .status(&action.resource, &format!("creating on {}", short(&arn)));
            let req = requests::create_service(&ctx.desired, service);
            let tags = ctx.creation_tags();
            ctx.mutate(&action.resource, "CreateService", || {
                ecs::create_service(&ctx.clients.ecs, &req, &arn, &tags)
            })
            .await
        }
        Some(l) => {
            let new_td = (l.task_definition != arn).then_some(arn.as_str());
            let new_count =
                (l.desired_count != service.desired_count).then_some(service.desired_count);
            if new_td.is_none() && new_count.is_none() {
                return Outcome::Unchanged {
                    detail: format!(
                        "already runs {} with {} tasks",
                        short(&arn),
                        service.desired_count
                    ),
                };
            }
            ctx.events
                .status(&action.resource, &format!("updating to {}", short(&arn)));
            ctx.mutate(&action.resource, "UpdateService", || {
                ecs::update_service(&ctx.clients.ecs, &cluster, name, new_td, new_count)
            })
            .await
        }
    };
    let started = match result {
        Ok(s) => s,
        Err(e) => {
            return Outcome::Failed {
                reason: e.to_string(),
            };
        }
    };
    // Track *our* deployment: the PRIMARY one on the revision just set.
    let Some(deployment) = started
        .deployments
        .iter()
        .find(|d| d.status == "PRIMARY" && d.task_definition == arn)
        .map(|d| d.id.clone())
    else {
        return Outcome::Failed {
            reason: format!("ECS reported no PRIMARY deployment of {}", short(&arn)),
        };
    };
    let what = if registered {
        format!("{} registered", short(&arn))
    } else {
        format!("{} reused", short(&arn))
    };
    match wait_for_deployment(ctx, action, name, &deployment, &arn).await {
        Ok(()) => Outcome::Applied {
            detail: format!("{what}; deployment {deployment} completed"),
        },
        Err(reason) => Outcome::Failed { reason },
    }
}

fn short(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

async fn wait_for_deployment(
    ctx: &Context,
    action: &Action,
    name: &str,
    deployment: &str,
    arn: &str,
) -> Result<(), String> {
    let cluster = ctx.desired.cluster.name.clone();
    let names = vec![name.to_string()];
    let (_, every) = ctx.poll.ecs;
    // Right after UpdateService the deployment is IN_PROGRESS by definition: the first look
    // is when a task can have started.
    let first = ctx.poll.ecs_deployment_first;
    if !ctx.cancelled() {
        ctx.clock.sleep(first).await;
    }
    let outcome = await_condition(
        ctx.clock.as_ref(),
        ctx.deadlines.ecs_deployment.saturating_sub(first),
        PollInterval::fixed(every),
        || async {
            if ctx.cancelled() {
                return Probe::Failed {
                    reason: "interrupted while waiting for the deployment".into(),
                };
            }
            let described = ctx
                .read(&action.resource, "DescribeServices", || {
                    ecs::describe_services(&ctx.clients.ecs, &cluster, &names)
                })
                .await;
            let services = match described {
                Ok(s) => s,
                Err(e) => {
                    return Probe::Failed {
                        reason: e.to_string(),
                    };
                }
            };
            let Some(s) = services.into_iter().next() else {
                return Probe::Failed {
                    reason: "the service disappeared".into(),
                };
            };
            probe_deployment(&s, deployment, arn, |text| {
                ctx.events.status(&action.resource, text)
            })
        },
    )
    .await;
    match outcome {
        WaitOutcome::Done(()) => Ok(()),
        WaitOutcome::Failed(reason) => {
            let events = ctx
                .read(&action.resource, "DescribeServices", || {
                    ecs::service_events(&ctx.clients.ecs, &cluster, name, 5)
                })
                .await
                .unwrap_or_default();
            let stopped = ctx
                .read(&action.resource, "ListTasks", || {
                    ecs::stopped_task_reasons(&ctx.clients.ecs, &cluster, name, 3)
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
            Err(text)
        }
        WaitOutcome::TimedOut {
            last_status,
            waited_secs,
        } => Err(format!(
            "deployment {deployment} not done after {waited_secs:.0}s (last: {last_status})"
        )),
    }
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
        Some(d) if d.desired_count == 0 && d.running_count == 0 && d.rollout_state != "FAILED" => {
            Probe::Done(())
        }
        Some(d) if d.rollout_state == "COMPLETED" => Probe::Done(()),
        Some(d) if d.rollout_state == "FAILED" => Probe::Failed {
            reason: format!(
                "deployment {deployment} failed ({} tasks failed to start); the circuit breaker rolls back",
                d.failed_tasks
            ),
        },
        Some(d) => {
            let text = format!(
                "deployment {deployment} {} {}/{} running",
                d.rollout_state, d.running_count, d.desired_count
            );
            status(&text);
            Probe::Pending { status: text }
        }
        None => {
            let primary = s.deployments.iter().find(|d| d.status == "PRIMARY");
            match primary {
                Some(p) if p.task_definition != arn => Probe::Failed {
                    reason: format!(
                        "deployment {deployment} was rolled back to {}",
                        short(&p.task_definition)
                    ),
                },
                // A count-only update makes no new deployment: the existing one counts.
                Some(p) if p.rollout_state == "COMPLETED" && p.running_count == p.desired_count => {
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

async fn delete_service(ctx: &Context, action: &Action, name: &str) -> Outcome {
    let cluster = ctx.desired.cluster.name.clone();
    if let Err(e) = ctx
        .mutate(&action.resource, "DeleteService", || {
            ecs::delete_service(&ctx.clients.ecs, &cluster, name)
        })
        .await
        && !e.is_code("ServiceNotFoundException")
    {
        return Outcome::Failed {
            reason: e.to_string(),
        };
    }
    match wait_service_gone(
        ctx,
        &action.resource,
        &cluster,
        name,
        ctx.deadlines.ecs_delete,
    )
    .await
    {
        Ok(()) => Outcome::Applied {
            detail: "deleted (INACTIVE)".into(),
        },
        Err(reason) => Outcome::Failed { reason },
    }
}

pub async fn wait_service_gone(
    ctx: &Context,
    resource: &str,
    cluster: &str,
    name: &str,
    deadline: Duration,
) -> Result<(), String> {
    let names = vec![name.to_string()];
    let (initial, max) = ctx.poll.ecs;
    let outcome = await_condition(
        ctx.clock.as_ref(),
        deadline,
        PollInterval::growing(initial, max),
        || async {
            match ctx
                .read(resource, "DescribeServices", || {
                    ecs::describe_services(&ctx.clients.ecs, cluster, &names)
                })
                .await
            {
                Ok(s) => match s.first() {
                    None => Probe::Done(()),
                    Some(s) if s.status == "INACTIVE" => Probe::Done(()),
                    Some(s) => Probe::Pending {
                        status: format!("{} ({} running)", s.status, s.running_count),
                    },
                },
                Err(e) => Probe::Failed {
                    reason: e.to_string(),
                },
            }
        },
    )
    .await;
    outcome.into_result("service deletion")
}

/// Deregisters a family's ACTIVE revisions and deletes its INACTIVE ones (ten per call).
pub async fn task_definitions(ctx: &Context, action: &Action) -> Outcome {
    use aws_sdk_ecs::types::TaskDefinitionStatus;
    let (_, family) = crate::plan::key::split(&action.resource);
    let active = match ctx
        .read(&action.resource, "ListTaskDefinitions", || {
            ecs::list_task_definitions(&ctx.clients.ecs, family, TaskDefinitionStatus::Active)
        })
        .await
    {
        Ok(a) => a,
        Err(e) => {
            return Outcome::Failed {
                reason: e.to_string(),
            };
        }
    };
    for arn in &active {
        if let Err(e) = ctx
            .mutate(&action.resource, "DeregisterTaskDefinition", || {
                ecs::deregister_task_definition(&ctx.clients.ecs, arn)
            })
            .await
        {
            return Outcome::Failed {
                reason: e.to_string(),
            };
        }
    }
    let inactive = match ctx
        .read(&action.resource, "ListTaskDefinitions", || {
            ecs::list_task_definitions(&ctx.clients.ecs, family, TaskDefinitionStatus::Inactive)
        })
        .await
    {
        Ok(a) => a,
        Err(e) => {
            return Outcome::Failed {
                reason: e.to_string(),
            };
        }
    };
    for chunk in inactive.chunks(10) {
        if let Err(e) = ctx
            .mutate(&action.resource, "DeleteTaskDefinitions", || {
                ecs::delete_task_definitions(&ctx.clients.ecs, chunk)
            })
            .await
        {
            return Outcome::Failed {
                reason: e.to_string(),
            };
        }
    }
    if let Ok(mut cache) = ctx.cache.lock() {
        cache.task_definitions.retain(|_, td| td.family != family);
    }
    Outcome::Applied {
        detail: format!("{} deregistered, {} deleted", active.len(), inactive.len()),
    }
}
