//! The operations of `park` and `unpark` (planned by `park::planner`): a service's count
//! kept in a tag and set to 0, and back with the wait until it is healthy; a DB instance
//! stopped, and brought back to `available` once RDS lets it start. They run like every
//! other action: through the run's [`Context`], so the session's buckets pace them, the
//! journal records them, progress shows them and an interruption stops them.
use envctl_aws_model::operation::{EcsOp, RdsOp};
use std::collections::BTreeMap;
use std::time::Duration;

use envctl_aws_model::state::db_instance::{AVAILABLE, STOPPED, STOPPING};

use super::context::Context;
use super::ecs::follow_deployment;
use super::error::ActionError;
use super::outcome::Outcome;
use super::rds::wait_status;
use crate::aws::{ecs, rds};
use crate::exec::Operation;
use crate::import::PARKED_COUNT_TAG;
use crate::plan::ResourceId;

type Step = Result<Outcome, ActionError>;

/// How long unpark waits for a start: RDS documents that it can take "from minutes to
/// hours". The env's `waits: {rds: ...}` or `--wait-timeout` only shorten it.
pub const DB_START_DEADLINE: Duration = Duration::from_secs(60 * 60);
/// How long unpark waits for a stopping instance to be stopped before it can start it; a
/// stop, like a start, can take "from minutes to hours".
pub const DB_STOP_DEADLINE: Duration = Duration::from_secs(60 * 60);

/// TagResource with the count, then UpdateService to 0: the tag first, so the count is
/// never lost.
pub async fn park_service(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    name: &str,
    arn: &str,
    count: u32,
) -> Step {
    let resource = id.to_string();
    let tags = BTreeMap::from([(PARKED_COUNT_TAG.to_string(), count.to_string())]);
    ctx.mutate(&resource, Operation::Ecs(EcsOp::TagResource), || {
        ecs::tag_resource(&ctx.clients.ecs, arn, &tags)
    })
    .await?;
    ctx.mutate(&resource, Operation::Ecs(EcsOp::UpdateService), || {
        ecs::update_service(&ctx.clients.ecs, cluster, name, None, Some(0))
    })
    .await?;
    Ok(Outcome::Applied {
        detail: format!("{count} -> 0 tasks (count kept in tag {PARKED_COUNT_TAG})"),
    })
}

/// UpdateService back to the remembered count, UntagResource, then the wait until the
/// service runs it with its deployment completed (the env's `waits: {services: ...}`).
pub async fn unpark_service(
    ctx: &Context,
    id: &ResourceId,
    cluster: &str,
    name: &str,
    arn: &str,
    count: u32,
) -> Step {
    let resource = id.to_string();
    let started = ctx
        .mutate(&resource, Operation::Ecs(EcsOp::UpdateService), || {
            ecs::update_service(&ctx.clients.ecs, cluster, name, None, Some(count))
        })
        .await?;
    let keys = [PARKED_COUNT_TAG];
    ctx.mutate(&resource, Operation::Ecs(EcsOp::UntagResource), || {
        ecs::untag_resource(&ctx.clients.ecs, arn, &keys)
    })
    .await?;
    let revision = started.task_definition.clone();
    follow_deployment(
        ctx,
        id,
        cluster,
        &started,
        &revision,
        format!("back to {count} tasks"),
    )
    .await
}

/// StopDBInstance; the instance is `stopping` afterwards, and nothing waits for `stopped`.
pub async fn stop_db(ctx: &Context, id: &ResourceId, instance: &str) -> Step {
    ctx.mutate(
        &id.to_string(),
        Operation::Rds(RdsOp::StopDBInstance),
        || rds::stop_instance(&ctx.clients.rds, instance),
    )
    .await?;
    Ok(Outcome::Applied {
        detail: "stopping (RDS starts it again by itself after 7 days)".into(),
    })
}

/// Brings the instance back to `available`: waits while it is `stopping` (RDS starts only a
/// stopped instance), starts it if it is `stopped`, then waits until it is `available`. A
/// state that needs an operator, or the instance gone, fails at once.
pub async fn start_db(ctx: &Context, id: &ResourceId, instance: &str) -> Step {
    let stop_deadline = DB_STOP_DEADLINE.min(ctx.deadlines.rds_modify);
    let settled = wait_status(
        ctx,
        id,
        instance,
        "the instance stopped",
        stop_deadline,
        |db| db.status != STOPPING,
    )
    .await?;
    if settled.status == AVAILABLE {
        return Ok(Outcome::Unchanged {
            detail: "already available".into(),
        });
    }
    let started = settled.status == STOPPED;
    if started {
        ctx.mutate(
            &id.to_string(),
            Operation::Rds(RdsOp::StartDBInstance),
            || rds::start_instance(&ctx.clients.rds, instance),
        )
        .await?;
    }
    let start_deadline = DB_START_DEADLINE.min(ctx.deadlines.rds_modify);
    wait_status(ctx, id, instance, "available", start_deadline, |db| {
        db.status == AVAILABLE
    })
    .await?;
    Ok(Outcome::Applied {
        detail: if started {
            "started; available"
        } else {
            "was starting; available"
        }
        .into(),
    })
}
