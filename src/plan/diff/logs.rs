//! CloudWatch Logs: the groups the task definitions' awslogs driver writes to. A missing
//! group is created (owned, tagged) before the services that log to it; an existing one,
//! envctl's or not, is used as it is (a group is a name the driver writes to, nothing in it
//! depends on who made it). Deleting an owned group is destroy's.
use super::{Planner, creates};
use crate::plan::action::{Action, ActionKind, Change};
use crate::plan::id::ResourceId;
use crate::plan::op::Op;

pub(super) fn plan_log_groups(p: &mut Planner) {
    for name in p.desired.log_groups().into_keys() {
        let id = ResourceId::log_group(&name);
        let action = if p.live.log_groups.contains_key(&name) {
            Action::new(id, ActionKind::NoOp, Op::NoOp)
        } else {
            Action::new(
                id,
                ActionKind::Create,
                Op::Create(creates::log_group(&name, p.desired.log_retention_days)),
            )
            .changes(vec![Change::new("log group", None, Some(name.clone()))])
            .estimate(1.0)
        };
        p.push(action);
    }
}

/// Services wait for the groups their containers log to: a task started before its group
/// exists stops at once (ResourceInitializationError).
pub(super) fn services_wait_for_log_groups(
    desired: &crate::model::DesiredState,
    actions: &mut [Action],
) {
    let groups = desired.log_groups();
    for a in actions.iter_mut().filter(|a| a.id.is_service()) {
        for (group, users) in &groups {
            if users.iter().any(|s| s == a.id.name()) {
                a.deps.push(ResourceId::log_group(group));
            }
        }
    }
}
