//! ECS over virtual time: the one pass (`settle`) that applies every transition due, and the
//! emulated load engines with Fargate's task launch bucket.

use super::deployments::settle_service;
use super::*;

impl EcsState {
    // ---- state machines --------------------------------------------------------------

    /// Applies every due transition: deployments completing or failing (with rollback),
    /// DRAINING services becoming INACTIVE, tasks stopping.
    pub fn settle(&mut self, ctx: &Ctx<'_>) {
        let now = ctx.now;
        if self.next_due != 0.0 && now < self.next_due {
            return;
        }
        let mut next_due = f64::INFINITY;
        self.settle_capacity(ctx, &mut next_due);
        let mut seq = self.seq;
        let mut new_tasks: Vec<Task> = Vec::new();
        for cluster in self.clusters.values_mut() {
            for service in cluster.services.values_mut() {
                settle_service(ctx, service, &mut seq, &mut new_tasks, &mut next_due);
            }
        }
        for task in new_tasks {
            self.tasks.insert(task.arn.clone(), task);
        }
        // A stopped task drains (DEACTIVATING) for `ecs_task_stop` before it is STOPPED.
        let stop = ctx.profile.ecs_task_stop.as_secs_f64();
        for task in self.tasks.values_mut() {
            if let (Some(at), None) = (task.stopping_at, task.stopped_at) {
                if at + stop <= now {
                    task.stopped_at = Some(at + stop);
                } else {
                    next_due = next_due.min(at + stop);
                }
            }
        }
        self.seq = seq;
        // A stuck resource re-checks on every request until the fault is removed.
        self.next_due = if ctx.faults.stuck.is_empty() {
            next_due
        } else {
            0.0
        };
    }
}

impl EcsState {
    /// Fargate's task launch bucket (`envctl_aws_model::engine::FARGATE_TASK_LAUNCHES`):
    /// takes `n` launches at `now`, or none when fewer are left.
    pub(super) fn take_fargate_launches(&mut self, now: f64, n: f64) -> bool {
        let (burst, rate) = envctl_aws_model::engine::FARGATE_TASK_LAUNCHES;
        let (tokens, at) = self.fargate_launches.unwrap_or((burst, now));
        let tokens = (tokens + (now - at).max(0.0) * rate).min(burst);
        if tokens + 1e-9 >= n {
            self.fargate_launches = Some((tokens - n, now.max(at)));
            true
        } else {
            self.fargate_launches = Some((tokens, now.max(at)));
            false
        }
    }

    /// Advances the emulated load engines to `now`; returns the objects they put into S3.
    pub fn settle_engines(
        &mut self,
        ctx: &Ctx<'_>,
        store: &dyn crate::engines::ObjectStore,
    ) -> Vec<(String, String, Vec<u8>)> {
        let mut objects = Vec::new();
        for task in self.tasks.values_mut() {
            let (arn, running_at, stopping_at) =
                (task.arn.clone(), task.running_at, task.stopping_at);
            let Some(engine) = task.engine.as_mut() else {
                continue;
            };
            let Some(end) = engine.settle(&arn, ctx.now, running_at, stopping_at, store) else {
                continue;
            };
            objects.extend(end.objects);
            task.exit_code = Some(end.exit_code);
            if task.stopping_at.is_none() {
                task.desired_status = "STOPPED".into();
                task.stopping_at = Some(end.at);
                task.stopped_reason = Some("Essential container in task exited".into());
                task.stop_code = Some("EssentialContainerExited".into());
                // The task drains; settle() marks it STOPPED after ecs_task_stop.
                self.next_due = 0.0;
            }
        }
        objects
    }
}
