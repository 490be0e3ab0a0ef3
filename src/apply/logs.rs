//! CloudWatch Logs groups for the awslogs driver: created before the services that log to
//! them, deleted by destroy after those services.
use super::context::Context;
use super::error::ActionError;
use super::existing;
use super::outcome::Outcome;
use crate::aws::logs;
use crate::exec::Operation;
use crate::plan::ResourceId;
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::LogsOp;

pub async fn create(
    ctx: &Context,
    id: &ResourceId,
    name: &str,
    retention_days: Option<u32>,
) -> Result<Outcome, ActionError> {
    let resource = id.to_string();
    let tags = ctx.creation_tags();
    match ctx
        .mutate(&resource, Operation::Logs(LogsOp::CreateLogGroup), || {
            logs::create(&ctx.clients.logs, name, &tags)
        })
        .await
    {
        Ok(()) => {}
        // Made by an earlier attempt whose answer was lost, or by someone else: either way
        // the driver can write to it; only an owned one is destroy's to delete.
        Err(e) if e.is_code(ErrorCode::ResourceAlreadyExistsException) => {
            existing::log_group(ctx, &resource, name).await?;
            return Ok(Outcome::Unchanged {
                detail: "exists".into(),
            });
        }
        Err(e) => return Err(e),
    }
    // A new group keeps its events forever until it is given a retention: envctl's groups
    // get the env's (docs/aws-behaviour.md, "Log groups get a retention").
    if let Some(days) = retention_days {
        ctx.mutate(
            &resource,
            Operation::Logs(LogsOp::PutRetentionPolicy),
            || logs::put_retention(&ctx.clients.logs, name, days),
        )
        .await?;
        return Ok(Outcome::Applied {
            detail: format!("created, retention {days} days"),
        });
    }
    Ok(Outcome::Applied {
        detail: "created".into(),
    })
}

pub async fn delete(ctx: &Context, id: &ResourceId, name: &str) -> Result<Outcome, ActionError> {
    ctx.mutate(
        &id.to_string(),
        Operation::Logs(LogsOp::DeleteLogGroup),
        || logs::delete(&ctx.clients.logs, name),
    )
    .await?;
    Ok(Outcome::Applied {
        detail: "deleted".into(),
    })
}
