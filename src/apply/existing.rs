//! A create answered "already exists" (or ECS's "Creation of service was not idempotent"):
//! the first attempt reached AWS and its response was lost, or an interrupted run made the
//! resource before it could record it. The resource is observed: one carrying this env's
//! tags is the one envctl made and is taken as created; anyone else's is a conflict, named,
//! and never used or changed (docs/aws-behaviour.md, "Creates whose response was lost").
use super::context::Context;
use super::error::ActionError;
use crate::aws::{ecs, kafka, logs, rds, secrets};
use crate::exec::Operation;
use crate::model::live::{LiveDb, LiveService, Tags, owned_by};
use envctl_aws_model::operation::{EcsOp, KafkaOp, LogsOp, RdsOp, SecretsManagerOp};

fn mine(ctx: &Context, tags: &Tags) -> bool {
    owned_by(tags, &ctx.owner.env)
}

fn not_ours(ctx: &Context, what: &'static str, name: &str) -> ActionError {
    ActionError::NotOurs {
        what,
        name: name.to_string(),
        env: ctx.owner.env.clone(),
    }
}

/// AWS said it exists, and a read right after finds nothing: it is being deleted, or the
/// answers disagree. Neither is safe to build on.
fn vanished(what: &str, name: &str) -> ActionError {
    ActionError::Failed(format!(
        "{what} {name}: AWS reported that it already exists, but it cannot be found; apply again"
    ))
}

/// The configuration description's ownership mark (MSK configurations take no tags).
pub fn configuration_mark(env: &str) -> String {
    format!("envctl:env={env} ")
}

pub async fn db_instance(ctx: &Context, resource: &str, name: &str) -> Result<LiveDb, ActionError> {
    let found = ctx
        .read(resource, Operation::Rds(RdsOp::DescribeDBInstances), || {
            rds::describe_instance(&ctx.clients.rds, name)
        })
        .await?;
    match found {
        Some(db) if mine(ctx, &db.tags) => Ok(db),
        Some(_) => Err(not_ours(ctx, "DB instance", name)),
        None => Err(vanished("DB instance", name)),
    }
}

pub async fn db_parameter_group(
    ctx: &Context,
    resource: &str,
    name: &str,
) -> Result<(), ActionError> {
    let tags = ctx
        .read(
            resource,
            Operation::Rds(RdsOp::DescribeDBParameterGroups),
            || rds::parameter_group_tags(&ctx.clients.rds, name),
        )
        .await?;
    match tags {
        Some(tags) if mine(ctx, &tags) => Ok(()),
        Some(_) => Err(not_ours(ctx, "DB parameter group", name)),
        None => Err(vanished("DB parameter group", name)),
    }
}

pub async fn db_subnet_group(ctx: &Context, resource: &str, name: &str) -> Result<(), ActionError> {
    let tags = ctx
        .read(
            resource,
            Operation::Rds(RdsOp::DescribeDBSubnetGroups),
            || rds::subnet_group_tags(&ctx.clients.rds, name),
        )
        .await?;
    match tags {
        Some(tags) if mine(ctx, &tags) => Ok(()),
        Some(_) => Err(not_ours(ctx, "DB subnet group", name)),
        None => Err(vanished("DB subnet group", name)),
    }
}

/// The ARN of the MSK cluster an earlier attempt created (CreateClusterV2 takes no client
/// token: the cluster is found by name).
pub async fn kafka_cluster(
    ctx: &Context,
    resource: &str,
    name: &str,
) -> Result<String, ActionError> {
    let found = ctx
        .read(resource, Operation::Kafka(KafkaOp::ListClustersV2), || {
            kafka::find_cluster(&ctx.clients.kafka, name)
        })
        .await?;
    match found {
        Some(k) if mine(ctx, &k.tags) => Ok(k.arn),
        Some(_) => Err(not_ours(ctx, "MSK cluster", name)),
        None => Err(vanished("MSK cluster", name)),
    }
}

/// The ARN and latest revision of the MSK configuration an earlier attempt created: ours
/// when its description carries this env's mark.
pub async fn kafka_configuration(
    ctx: &Context,
    resource: &str,
    name: &str,
) -> Result<(String, i64), ActionError> {
    let all = ctx
        .read(
            resource,
            Operation::Kafka(KafkaOp::ListConfigurations),
            || kafka::list_configurations(&ctx.clients.kafka),
        )
        .await?;
    let mark = configuration_mark(&ctx.owner.env);
    match all.into_iter().find(|(n, ..)| n == name) {
        Some((_, arn, revision, description)) if description.starts_with(&mark) => {
            Ok((arn, revision))
        }
        Some(_) => Err(not_ours(ctx, "MSK configuration", name)),
        None => Err(vanished("MSK configuration", name)),
    }
}

/// The ECS service an earlier attempt (another run, so another client token) created, if an
/// ACTIVE one has the name: ECS's answer to such a create is an `InvalidParameterException`
/// like any refused parameter, so finding none means the create itself was refused.
pub async fn ecs_service(
    ctx: &Context,
    resource: &str,
    cluster: &str,
    name: &str,
) -> Result<Option<LiveService>, ActionError> {
    let names = vec![name.to_string()];
    let found = ctx
        .read(resource, Operation::Ecs(EcsOp::DescribeServices), || {
            ecs::describe_services(&ctx.clients.ecs, cluster, &names)
        })
        .await?;
    match found
        .into_iter()
        .find(|s| s.status == envctl_aws_model::status::ServiceStatus::Active)
    {
        Some(s) if mine(ctx, &s.tags) => Ok(Some(s)),
        Some(_) => Err(not_ours(ctx, "ECS service", name)),
        None => Ok(None),
    }
}

/// The writer's master secret, met by CreateSecret's `ResourceExistsException`: this env's
/// is used (an earlier apply made it, perhaps before its writer), anyone else's refused. One
/// scheduled for deletion keeps its name and refuses GetSecretValue: named, not waited for.
pub async fn master_secret(
    ctx: &Context,
    resource: &str,
    name: &str,
) -> Result<String, ActionError> {
    match describe_secret(ctx, resource, name).await? {
        Some(s) if !mine(ctx, &s.tags) => Err(not_ours(ctx, "secret", name)),
        Some(s) if s.deleting => Err(ActionError::Failed(format!(
            "secret {name} is scheduled for deletion; restore it (RestoreSecret) or delete it now (DeleteSecret with ForceDeleteWithoutRecovery), then apply again"
        ))),
        Some(s) => Ok(s.arn),
        None => Err(vanished("secret", name)),
    }
}

/// A secret whose name CreateSecret refused as held by a deletion: this env's (or one no
/// longer described, gone meanwhile) may be waited for; anyone else's is refused, as at
/// any create.
pub async fn secret_being_deleted(
    ctx: &Context,
    resource: &str,
    name: &str,
) -> Result<(), ActionError> {
    match describe_secret(ctx, resource, name).await? {
        Some(s) if !mine(ctx, &s.tags) => Err(not_ours(ctx, "secret", name)),
        _ => Ok(()),
    }
}

async fn describe_secret(
    ctx: &Context,
    resource: &str,
    name: &str,
) -> Result<Option<crate::model::live::LiveSecret>, ActionError> {
    ctx.read(
        resource,
        Operation::SecretsManager(SecretsManagerOp::DescribeSecret),
        || secrets::describe(&ctx.clients.secrets, name),
    )
    .await
}

/// A log group met by CreateLogGroup's `ResourceAlreadyExistsException`: it exists, which is
/// all the driver needs; a read that finds nothing means it is being deleted.
pub async fn log_group(ctx: &Context, resource: &str, name: &str) -> Result<(), ActionError> {
    let found = ctx
        .read(resource, Operation::Logs(LogsOp::DescribeLogGroups), || {
            logs::describe(&ctx.clients.logs, name)
        })
        .await?;
    match found {
        Some(_) => Ok(()),
        None => Err(vanished("log group", name)),
    }
}
