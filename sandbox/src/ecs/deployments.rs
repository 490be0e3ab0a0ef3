//! ECS rolling deployments over virtual time: a deployment's running/pending ramp, the
//! deployment circuit breaker and its rollback, and a draining service becoming INACTIVE.

use super::services::deployment_id;
use super::*;
use envctl_aws_model::status::{DeploymentStatus, RolloutState, ServiceStatus};

fn circuit_breaker(s: &Service) -> (bool, bool) {
    let cb = s.deployment_configuration.get("deploymentCircuitBreaker");
    let get = |k: &str| {
        cb.and_then(|c| c.get(k))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    (get("enable"), get("rollback"))
}

/// (running, pending) of a deployment at `now`: a linear ramp over the task start time
/// for the new one, and the mirror image for the one it replaces.
pub(super) fn deployment_counts(d: &Deployment, now: f64) -> (i64, i64) {
    if let (Some(from), Some(at)) = (d.running_when_replaced, d.replaced_at) {
        // Draining: ramps down over the same time the replacement ramps up.
        let span = (d.due_at - d.created_at).max(1.0);
        let progress = ((now - at) / span).clamp(0.0, 1.0);
        let running = (from as f64 * (1.0 - progress)).ceil() as i64;
        return (running.min(from), 0);
    }
    if d.fails || d.rollout_state == RolloutState::Failed {
        return (
            0,
            if d.rollout_state == RolloutState::Failed {
                0
            } else {
                d.desired_count
            },
        );
    }
    if d.rollout_state == RolloutState::Completed {
        if let Some((from, at, due)) = d.rescaled
            && now < due
        {
            let progress = ((now - at) / (due - at).max(1e-9)).clamp(0.0, 1.0);
            let delta = ((d.desired_count - from) as f64 * progress).trunc() as i64;
            let running = from + delta;
            return (running, (d.desired_count - running).max(0));
        }
        return (d.desired_count, 0);
    }
    if d.unplaced.is_some() {
        return (0, 0);
    }
    let span = (d.due_at - d.created_at).max(1e-9);
    let progress = ((now - d.created_at) / span).clamp(0.0, 1.0);
    let running = (d.desired_count as f64 * progress).floor() as i64;
    (running, d.desired_count - running)
}

/// Threshold of failed tasks at which the circuit breaker trips: half the desired count, at
/// least 3, at most 200 (ECS developer guide, "How the Amazon ECS deployment circuit breaker
/// detects failures").
pub(super) fn failure_threshold(desired: i64) -> i64 {
    ((desired as f64 * 0.5).ceil() as i64).clamp(3, 200)
}

pub(super) fn settle_service(
    ctx: &Ctx<'_>,
    s: &mut Service,
    seq: &mut u64,
    new_tasks: &mut Vec<Task>,
    next_due: &mut f64,
) {
    let now = ctx.now;
    if s.status == ServiceStatus::Draining {
        match s.inactive_at {
            Some(at) if at <= now && !ctx.faults.is_stuck("ecs", &s.name, "DRAINING") => {
                s.status = "INACTIVE".into();
                s.deployments.clear();
                s.inactive_at = None;
            }
            Some(at) => *next_due = next_due.min(at),
            None => {}
        }
        return;
    }
    if s.status != ServiceStatus::Active {
        return;
    }
    // Loop: a failure can start a rollback deployment that is itself due later.
    for _ in 0..4 {
        let Some(idx) = s
            .deployments
            .iter()
            .position(|d| d.status == DeploymentStatus::Primary)
        else {
            return;
        };
        let d = &s.deployments[idx];
        if d.rollout_state != RolloutState::InProgress || d.unplaced.is_some() {
            // Unplaced tasks never start: the deployment waits for capacity.
            return;
        }
        if d.due_at > now || ctx.faults.is_stuck("ecs", &s.name, "IN_PROGRESS") {
            *next_due = next_due.min(d.due_at);
            return;
        }
        let primary = d.clone();
        let (cb_enable, cb_rollback) = circuit_breaker(s);
        let at = primary.due_at;
        let name = s.name.clone();
        let short_id = primary.id.trim_start_matches("ecs-svc/").to_string();
        if !primary.fails {
            let d = &mut s.deployments[idx];
            d.rollout_state = "COMPLETED".into();
            d.rollout_state_reason = format!("ECS deployment ecs-svc/{short_id} completed.");
            d.updated_at = at;
            // Drained deployments disappear from `deployments`, as on AWS.
            s.deployments
                .retain(|d| d.status == DeploymentStatus::Primary);
            s.last_completed = Some((primary.id.clone(), primary.task_definition.clone()));
            *seq += 1;
            EcsState::event(
                s,
                *seq,
                at,
                format!(
                    "(service {name}) (deployment {}) deployment completed.",
                    primary.id
                ),
            );
            *seq += 1;
            EcsState::event(
                s,
                *seq,
                at,
                format!("(service {name}) has reached a steady state."),
            );
            continue;
        }
        // Tasks fail to start. Record stopped tasks so DescribeTasks shows the reason.
        let threshold = failure_threshold(primary.desired_count);
        for _ in 0..threshold.min(10) {
            *seq += 1;
            let cluster = s
                .cluster_arn
                .rsplit('/')
                .next()
                .unwrap_or("default")
                .to_string();
            new_tasks.push(Task {
                arn: ctx.arn("ecs", &format!("task/{cluster}/{:032x}", *seq)),
                cluster_arn: s.cluster_arn.clone(),
                task_definition: primary.task_definition.clone(),
                group: format!("service:{name}"),
                started_by: Some(primary.id.clone()),
                launch_type: s.launch_type.clone(),
                created_at: primary.created_at,
                running_at: at,
                desired_status: "STOPPED".into(),
                stopping_at: Some(at),
                stopped_at: Some(at),
                stopped_reason: Some(
                    primary
                        .stop_reason
                        .clone()
                        .unwrap_or_else(|| "Essential container in task exited".to_string()),
                ),
                stop_code: Some(
                    if primary.stop_reason.is_some() {
                        "TaskFailedToStart"
                    } else {
                        "EssentialContainerExited"
                    }
                    .into(),
                ),
                containers: vec!["app".into()],
                failed: true,
                engine: None,
                exit_code: None,
            });
        }
        if !cb_enable {
            // Without the circuit breaker ECS keeps launching tasks that keep failing.
            let d = &mut s.deployments[idx];
            d.failed_tasks += threshold;
            d.due_at = at + ctx.profile.ecs_task_start.as_secs_f64();
            d.updated_at = at;
            *seq += 1;
            EcsState::event(
                s,
                *seq,
                at,
                format!("(service {name}) is unable to consistently start tasks successfully."),
            );
            continue;
        }
        {
            let d = &mut s.deployments[idx];
            d.failed_tasks = threshold;
            d.rollout_state = "FAILED".into();
            d.rollout_state_reason =
                "ECS deployment circuit breaker: tasks failed to start.".into();
            d.updated_at = at;
        }
        *seq += 1;
        EcsState::event(
            s,
            *seq,
            at,
            format!(
                "(service {name}) (deployment {}) deployment failed: tasks failed to start.",
                primary.id
            ),
        );
        let target = s.last_completed.clone();
        match (cb_rollback, target) {
            (true, Some((old_id, old_td))) => {
                *seq += 1;
                let n = *seq;
                *seq += 1;
                EcsState::event(
                    s,
                    *seq,
                    at,
                    format!("(service {name}) rolling back to deployment {old_id}."),
                );
                for d in &mut s.deployments {
                    if d.status == DeploymentStatus::Primary {
                        d.status = "ACTIVE".into();
                    }
                    if d.replaced_at.is_none() {
                        d.running_when_replaced = Some(0);
                        d.replaced_at = Some(at);
                    }
                }
                let id = deployment_id(n);
                let rollback = Deployment {
                    id: id.clone(),
                    status: "PRIMARY".into(),
                    task_definition: old_td.clone(),
                    desired_count: s.desired_count,
                    created_at: at,
                    updated_at: at,
                    rollout_state: "IN_PROGRESS".into(),
                    rollout_state_reason: format!(
                        "ECS deployment circuit breaker: rolling back to deploymentId {old_id}."
                    ),
                    due_at: at + ctx.profile.ecs_task_start.as_secs_f64(),
                    // The previous revision is known to start.
                    fails: false,
                    stop_reason: None,
                    failed_tasks: 0,
                    running_when_replaced: None,
                    replaced_at: None,
                    unplaced: None,
                    rescaled: None,
                };
                s.task_definition = old_td;
                s.deployments.insert(0, rollback);
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecs::services::deployment_id;

    fn deployment(desired: i64) -> Deployment {
        Deployment {
            id: deployment_id(1),
            status: "PRIMARY".into(),
            task_definition: "td".into(),
            desired_count: desired,
            created_at: 100.0,
            updated_at: 100.0,
            rollout_state: "IN_PROGRESS".into(),
            rollout_state_reason: String::new(),
            due_at: 140.0,
            fails: false,
            stop_reason: None,
            failed_tasks: 0,
            running_when_replaced: None,
            replaced_at: None,
            unplaced: None,
            rescaled: None,
        }
    }

    #[test]
    fn a_deployment_ramps_up_and_its_predecessor_drains() {
        let d = deployment(4);
        assert_eq!(deployment_counts(&d, 100.0), (0, 4));
        assert_eq!(deployment_counts(&d, 120.0), (2, 2));
        assert_eq!(deployment_counts(&d, 200.0), (4, 0));
        let mut old = deployment(4);
        old.running_when_replaced = Some(4);
        old.replaced_at = Some(100.0);
        assert_eq!(deployment_counts(&old, 120.0), (2, 0));
        assert_eq!(deployment_counts(&old, 140.0), (0, 0));
    }

    #[test]
    fn circuit_breaker_threshold_is_half_the_desired_count_within_3_and_200() {
        assert_eq!(failure_threshold(1), 3);
        assert_eq!(failure_threshold(10), 5);
        assert_eq!(failure_threshold(1000), 200);
    }
}
