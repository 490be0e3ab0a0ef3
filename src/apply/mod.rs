//! Executing a plan: actions run as a dependency graph, concurrently, each with an explicit
//! outcome. Independent actions continue when one fails; its dependents are skipped. Once
//! interrupted, nothing new starts, calls in flight finish, waits end early.
mod capacity;
pub mod conform;
pub mod context;
mod ecs;
pub mod error;
mod existing;
mod kafka;
mod logs;
mod outcome;
mod park;
mod rds;
pub mod service_watch;

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::task::JoinSet;

pub use context::{Context, Deadlines, DeleteFirst, Owner, Polls, Silent};
pub use error::ActionError;
pub use outcome::{ApplyReport, Outcome, ResourceResult};

use crate::exec::ParticipantGuard;
use crate::plan::{Action, Create, Delete, Op, Plan, PlanError, ResourceId};

/// How many actions may be in flight at once; ECS calls are paced by the rate limiters
/// anyway, this bounds memory and open connections for a 1,000-service plan. Most of an
/// action's time is a wait (a 2-minute service drain): with 64, a 144-service destroy
/// drained in three waves and took 1,124 simulated seconds instead of ~740.
const MAX_IN_FLIGHT: usize = 256;

/// Executes the action's operation as planned.
async fn run_action(ctx: &Context, action: &Action) -> Result<Outcome, ActionError> {
    let id = &action.id;
    match &action.op {
        Op::NoOp => Ok(Outcome::Unchanged {
            detail: "nothing to do".into(),
        }),
        Op::Create(create) => run_create(ctx, id, create).await,
        Op::Delete(delete) => run_delete(ctx, id, delete).await,
        Op::Replace { delete, create } => {
            run_delete(ctx, id, delete).await?;
            run_create(ctx, id, create).await
        }
        Op::EcsClusterAdopt { arn } => ecs::adopt_cluster(ctx, id, arn).await,
        Op::Unhealthy { state } => Err(ActionError::Failed(format!(
            "{id} is {state}: envctl cannot repair this state by itself; fix the cause (see the AWS console's events for it), or replace it (delete it, then apply)"
        ))),
        Op::EcsServiceUpdate {
            running,
            revision,
            request,
            count,
            adopt,
            force,
            placement,
        } => {
            ecs::update_service(
                ctx,
                id,
                ecs::ServiceUpdate {
                    running,
                    revision,
                    request,
                    count: *count,
                    adopt: adopt.as_deref(),
                    force: *force,
                    placement: *placement,
                },
            )
            .await
        }
        Op::CapacityProviderUpdate {
            cluster,
            name,
            settings,
        } => capacity::update_provider(ctx, id, cluster, name, settings).await,
        Op::EcsCapacityAwait {
            instances,
            services,
            cluster,
            needs,
        } => capacity::await_registered(ctx, id, cluster, *instances, services, needs).await,
        Op::EcsServiceRestore {
            cluster,
            running,
            revision,
            count,
        } => ecs::restore_service(ctx, id, cluster, running, revision, *count).await,
        Op::KafkaConfigurationUpdate {
            arn,
            request,
            description,
        } => kafka::update_configuration(ctx, id, arn, request, description).await,
        Op::KafkaUpdate {
            arn,
            updates,
            adopt,
            configuration,
            security_protocol,
        } => {
            let planned = kafka::ClusterUpdates {
                updates,
                adopt: *adopt,
                configuration: configuration.as_ref(),
                security_protocol: security_protocol.as_deref(),
            };
            kafka::update(ctx, id, arn, planned).await
        }
        Op::KafkaAwait {
            arn,
            security_protocol,
        } => kafka::await_active(ctx, id, arn, security_protocol).await,
        Op::RdsParameterGroupModify {
            parameters,
            reset,
            reboot,
            adopt,
        } => {
            if let Some(arn) = adopt {
                rds::adopt(ctx, id, arn).await?;
            }
            rds::modify_parameter_group(ctx, id, parameters, reset, reboot).await
        }
        Op::RdsAdopt { arn } => rds::adopt(ctx, id, arn).await,
        Op::RdsModify {
            modification,
            adopt,
            role,
        } => rds::modify(ctx, id, modification, adopt.as_deref(), role.as_deref()).await,
        Op::RdsAwait { role } => rds::await_available(ctx, id, role.as_deref()).await,
        // `park` / `unpark`.
        Op::EcsServicePark {
            cluster,
            name,
            arn,
            count,
        } => park::park_service(ctx, id, cluster, name, arn, *count).await,
        Op::EcsServiceUnpark {
            cluster,
            name,
            arn,
            count,
        } => park::unpark_service(ctx, id, cluster, name, arn, *count).await,
        Op::RdsStop { id: instance } => park::stop_db(ctx, id, instance).await,
        Op::RdsStart { id: instance } => park::start_db(ctx, id, instance).await,
    }
}

async fn run_create(
    ctx: &Context,
    id: &ResourceId,
    create: &Create,
) -> Result<Outcome, ActionError> {
    match create {
        Create::EcsCluster { name, attach } => {
            ecs::create_cluster(ctx, id, name, attach.as_deref()).await
        }
        Create::CapacityProvider(planned) => capacity::create_provider(ctx, id, planned).await,
        Create::EcsService {
            register,
            request,
            revision,
        } => ecs::create_service(ctx, id, register, request, revision).await,
        Create::KafkaConfiguration {
            request,
            description,
        } => kafka::create_configuration(ctx, id, request, description).await,
        Create::KafkaCluster {
            request,
            configuration,
            security_protocol,
            ..
        } => {
            let planned = kafka::ClusterCreate {
                request,
                configuration: configuration.clone(),
            };
            kafka::create(ctx, id, planned, security_protocol).await
        }
        Create::DbParameterGroup { request } => rds::create_parameter_group(ctx, id, request).await,
        Create::DbInstance {
            request,
            subnet_group,
            master_secret,
            role,
        } => {
            let planned = rds::InstanceCreate {
                request: request.clone(),
                subnet_group: subnet_group.clone(),
                master_secret: master_secret.clone(),
            };
            rds::create_instance(ctx, id, planned, role.as_deref()).await
        }
        Create::LogGroup {
            name,
            retention_days,
        } => logs::create(ctx, id, name, *retention_days).await,
    }
}

async fn run_delete(
    ctx: &Context,
    id: &ResourceId,
    delete: &Delete,
) -> Result<Outcome, ActionError> {
    match delete {
        Delete::EcsCluster { name } => ecs::delete_cluster(ctx, id, name).await,
        Delete::CapacityProvider {
            cluster,
            name,
            deprovisioning,
        } => capacity::delete_provider(ctx, id, cluster, name, *deprovisioning).await,
        Delete::EcsService { cluster, name } => ecs::delete_service(ctx, id, cluster, name).await,
        Delete::TaskDefinitions { revisions } => {
            ecs::delete_task_definitions(ctx, id, revisions).await
        }
        Delete::KafkaConfiguration { arn } => kafka::delete_configuration(ctx, id, arn).await,
        Delete::KafkaCluster { arn, .. } => kafka::delete(ctx, id, arn).await,
        Delete::DbParameterGroup { name } => rds::delete_parameter_group(ctx, id, name).await,
        Delete::DbSubnetGroup { name } => rds::delete_subnet_group(ctx, id, name).await,
        Delete::DbMasterSecret { arn } => rds::delete_master_secret(ctx, id, arn).await,
        Delete::LogGroup { name } => logs::delete(ctx, id, name).await,
        Delete::DbInstance {
            id: instance,
            skip_final_snapshot,
        } => rds::delete_instance(ctx, id, instance, *skip_final_snapshot).await,
    }
}

/// What a failed action means for the run: interrupted work is cancelled, not failed.
fn outcome_of(result: Result<Outcome, ActionError>) -> Outcome {
    match result {
        Ok(outcome) => outcome,
        Err(e) if e.is_interruption() => Outcome::Cancelled,
        Err(e) => Outcome::Failed {
            reason: e.to_string(),
        },
    }
}

struct Finished {
    id: ResourceId,
    outcome: Outcome,
    at: f64,
    guard: ParticipantGuard,
}

/// Runs every change of the plan; returns one result per changed resource, in the order
/// they finished. A plan with two actions on one resource, or a dependency on an action it
/// does not contain, is refused before anything runs.
pub async fn execute(plan: &Plan, ctx: Arc<Context>) -> Result<ApplyReport, PlanError> {
    plan.check()?;
    let actions: Vec<Action> = plan.changes().cloned().collect();
    ctx.events.planned(actions.len());
    let mut finished: BTreeMap<ResourceId, Outcome> = BTreeMap::new();
    let mut started: BTreeMap<ResourceId, f64> = BTreeMap::new();
    let mut tasks: BTreeMap<tokio::task::Id, ResourceId> = BTreeMap::new();
    let mut results: Vec<ResourceResult> = Vec::new();
    let result =
        |a: &Action, outcome: Outcome, started_secs: f64, finished_secs: f64| ResourceResult {
            resource: a.id.to_string(),
            action: a.kind,
            outcome,
            started_secs,
            finished_secs,
        };
    // The guard of the last finished action, dropped once its dependents are launched.
    // Held from the start: until the first launch pass has spawned everything that is
    // ready, a simulated clock must not see the first task asleep and jump.
    let mut held: Option<ParticipantGuard> = Some(ctx.clock.participant());
    let mut running: JoinSet<Finished> = JoinSet::new();
    loop {
        // Launch everything whose dependencies are done.
        for a in &actions {
            if started.contains_key(&a.id) || running.len() >= MAX_IN_FLIGHT {
                continue;
            }
            if !a.deps.iter().all(|d| finished.contains_key(d)) {
                continue;
            }
            let now = ctx.elapsed();
            started.insert(a.id.clone(), now);
            let blocked = a
                .deps
                .iter()
                .find(|d| finished.get(*d).is_some_and(|o| !o.is_success()));
            let skip = match blocked {
                Some(dep) => Some(Outcome::Skipped {
                    because: format!("{dep} did not succeed"),
                }),
                None if ctx.cancelled() => Some(Outcome::Cancelled),
                None => None,
            };
            let resource = a.id.to_string();
            if let Some(outcome) = skip {
                ctx.events
                    .finished(&resource, outcome.finish(), outcome.detail());
                finished.insert(a.id.clone(), outcome.clone());
                results.push(result(a, outcome, now, now));
                continue;
            }
            ctx.events.started(&resource, a.kind.verb());
            // The guard is taken before the task exists, so a simulated clock never sees a
            // moment where the new work is neither busy nor asleep.
            let guard = ctx.clock.participant();
            let task_ctx = ctx.clone();
            let action = a.clone();
            let handle = running.spawn(async move {
                let outcome = outcome_of(run_action(&task_ctx, &action).await);
                // The guard travels back with the result: until the scheduler has launched
                // the dependents, a simulated clock must not jump ahead.
                Finished {
                    id: action.id,
                    outcome,
                    at: task_ctx.elapsed(),
                    guard,
                }
            });
            tasks.insert(handle.id(), a.id.clone());
        }
        drop(held.take());
        let Some(joined) = running.join_next_with_id().await else {
            // Nothing running: everything is done, or something waits on a dependency that
            // will never finish (a cycle, which the planner does not produce).
            for a in &actions {
                if !started.contains_key(&a.id) {
                    let now = ctx.elapsed();
                    let outcome = Outcome::Skipped {
                        because: "its dependencies never finished".into(),
                    };
                    results.push(result(a, outcome, now, now));
                }
            }
            break;
        };
        let (id, outcome, at, guard) = match joined {
            Ok((_, f)) => (f.id, f.outcome, f.at, Some(f.guard)),
            Err(e) => {
                // A panicking action must not take the run down with it.
                let Some(id) = tasks.get(&e.id()).cloned() else {
                    continue;
                };
                let error = ActionError::Internal(e.to_string());
                (id, outcome_of(Err(error)), ctx.elapsed(), None)
            }
        };
        ctx.events
            .finished(&id.to_string(), outcome.finish(), outcome.detail());
        if let Some(a) = actions.iter().find(|a| a.id == id) {
            let since = started.get(&id).copied().unwrap_or(0.0);
            results.push(result(a, outcome.clone(), since, at));
        }
        finished.insert(id, outcome);
        held = guard;
    }
    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|r| f(&r.outcome)).count();
    ctx.events.summary(&crate::exec::progress::Summary {
        succeeded: count(|o| matches!(o, Outcome::Applied { .. })),
        failed: count(|o| matches!(o, Outcome::Failed { .. })),
        skipped: count(|o| matches!(o, Outcome::Skipped { .. } | Outcome::Cancelled)),
        unchanged: count(|o| matches!(o, Outcome::Unchanged { .. })),
        elapsed_secs: ctx.elapsed(),
        simulated: ctx.clock.simulated(),
    });
    Ok(ApplyReport {
        results,
        elapsed_secs: ctx.elapsed(),
        simulated: ctx.clock.simulated(),
        mutating_calls: ctx.mutating_calls.load(std::sync::atomic::Ordering::SeqCst),
        interrupted: ctx.cancelled(),
    })
}
