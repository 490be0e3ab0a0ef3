//! Executing a plan: actions run as a dependency graph, concurrently, each with an explicit
//! outcome. Independent actions continue when one fails; its dependents are skipped. Once
//! interrupted, nothing new starts, calls in flight finish, waits end early.
pub mod context;
mod ecs;
mod kafka;
mod outcome;
mod rds;

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::task::JoinSet;

pub use context::{Context, Deadlines, Polls, Silent};
pub use outcome::{ApplyReport, Outcome, ResourceResult};

use crate::exec::ParticipantGuard;
use crate::plan::{Action, ActionKind, Plan, key};

/// How many actions may be in flight at once; ECS calls are paced by the rate limiters
/// anyway, this bounds memory and open connections for a 1,000-service plan.
const MAX_IN_FLIGHT: usize = 64;

async fn run_action(ctx: &Context, action: &Action) -> Outcome {
    let (kind, _) = key::split(&action.resource);
    match kind {
        "ecs/cluster" => ecs::cluster(ctx, action).await,
        "ecs/service" => ecs::service(ctx, action).await,
        "ecs/task-definitions" => ecs::task_definitions(ctx, action).await,
        "kafka/configuration" => kafka::configuration(ctx, action).await,
        "kafka/cluster" => kafka::cluster(ctx, action).await,
        "rds/parameter-group" => rds::parameter_group(ctx, action).await,
        "rds/instance" => rds::instance(ctx, action).await,
        other => Outcome::Failed {
            reason: format!("envctl cannot act on `{other}`"),
        },
    }
}

struct Finished {
    resource: String,
    outcome: Outcome,
    at: f64,
    guard: ParticipantGuard,
}

/// Runs every change of the plan; returns one result per changed resource, in the order
/// they finished.
pub async fn execute(plan: &Plan, ctx: Arc<Context>) -> ApplyReport {
    let actions: Vec<Action> = plan.changes().cloned().collect();
    ctx.events.planned(actions.len());
    let mut finished: BTreeMap<String, Outcome> = BTreeMap::new();
    let mut started: BTreeMap<String, f64> = BTreeMap::new();
    let mut results: Vec<ResourceResult> = Vec::new();
    // The guard of the last finished action, dropped once its dependents are launched.
    // Held from the start: until the first launch pass has spawned everything that is
    // ready, a simulated clock must not see the first task asleep and jump.
    let mut held: Option<ParticipantGuard> = Some(ctx.clock.participant());
    let mut running: JoinSet<Finished> = JoinSet::new();
    loop {
        // Launch everything whose dependencies are done.
        for a in &actions {
            if started.contains_key(&a.resource) || running.len() >= MAX_IN_FLIGHT {
                continue;
            }
            if !a.depends_on.iter().all(|d| finished.contains_key(d)) {
                continue;
            }
            let now = ctx.elapsed();
            started.insert(a.resource.clone(), now);
            let blocked = a
                .depends_on
                .iter()
                .find(|d| finished.get(*d).is_some_and(|o| !o.is_success()));
            let skip = match blocked {
                Some(dep) => Some(Outcome::Skipped {
                    because: format!("{dep} did not succeed"),
                }),
                None if ctx.cancelled() => Some(Outcome::Cancelled),
                None => None,
            };
            if let Some(outcome) = skip {
                ctx.events
                    .finished(&a.resource, outcome.finish(), outcome.detail());
                finished.insert(a.resource.clone(), outcome.clone());
                results.push(ResourceResult {
                    resource: a.resource.clone(),
                    action: a.kind,
                    outcome,
                    started_secs: now,
                    finished_secs: now,
                });
                continue;
            }
            ctx.events.started(&a.resource, a.kind.verb());
            // The guard is taken before the task exists, so a simulated clock never sees a
            // moment where the new work is neither busy nor asleep.
            let guard = ctx.clock.participant();
            let task_ctx = ctx.clone();
            let action = a.clone();
            running.spawn(async move {
                let outcome = run_action(&task_ctx, &action).await;
                // The guard travels back with the result: until the scheduler has launched
                // the dependents, a simulated clock must not jump ahead.
                Finished {
                    resource: action.resource,
                    outcome,
                    at: task_ctx.elapsed(),
                    guard,
                }
            });
        }
        drop(held.take());
        let Some(joined) = running.join_next().await else {
            // Nothing running: everything is done, or something waits on a dependency that
            // will never finish (a cycle, which the planner does not produce).
            for a in &actions {
                if !started.contains_key(&a.resource) {
                    let now = ctx.elapsed();
                    let outcome = Outcome::Skipped {
                        because: "its dependencies never finished".into(),
                    };
                    results.push(ResourceResult {
                        resource: a.resource.clone(),
                        action: a.kind,
                        outcome,
                        started_secs: now,
                        finished_secs: now,
                    });
                }
            }
            break;
        };
        let (resource, outcome, at, guard) = match joined {
            Ok(f) => (f.resource, f.outcome, f.at, Some(f.guard)),
            Err(e) => {
                // A panicking action must not take the run down with it.
                let resource = actions
                    .iter()
                    .find(|a| {
                        started.contains_key(&a.resource) && !finished.contains_key(&a.resource)
                    })
                    .map(|a| a.resource.clone())
                    .unwrap_or_default();
                (
                    resource,
                    Outcome::Failed {
                        reason: format!("internal error: {e}"),
                    },
                    ctx.elapsed(),
                    None,
                )
            }
        };
        let outcome = match outcome {
            Outcome::Failed { reason } if ctx.cancelled() && reason.contains("interrupted") => {
                Outcome::Cancelled
            }
            other => other,
        };
        ctx.events
            .finished(&resource, outcome.finish(), outcome.detail());
        let kind = actions
            .iter()
            .find(|a| a.resource == resource)
            .map(|a| a.kind)
            .unwrap_or(ActionKind::NoOp);
        results.push(ResourceResult {
            resource: resource.clone(),
            action: kind,
            outcome: outcome.clone(),
            started_secs: started.get(&resource).copied().unwrap_or(0.0),
            finished_secs: at,
        });
        finished.insert(resource, outcome);
        held = guard;
    }
    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|r| f(&r.outcome)).count();
    ctx.events.summary(&crate::exec::progress::Summary {
        succeeded: count(|o| matches!(o, Outcome::Applied { .. })),
        failed: count(|o| matches!(o, Outcome::Failed { .. })),
        skipped: count(|o| matches!(o, Outcome::Skipped { .. } | Outcome::Cancelled)),
        unchanged: count(|o| matches!(o, Outcome::Unchanged { .. })),
        elapsed_secs: ctx.elapsed(),
    });
    ApplyReport {
        results,
        elapsed_secs: ctx.elapsed(),
        mutating_calls: ctx.mutating_calls.load(std::sync::atomic::Ordering::SeqCst),
        interrupted: ctx.cancelled(),
    }
}
