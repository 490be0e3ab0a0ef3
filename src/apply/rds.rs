//! RDS operations: the parameter group, the writer and its read replicas.
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::{RdsOp, SecretsManagerOp};
use std::collections::BTreeMap;
use std::time::Duration;

use super::conform;
use super::context::Context;
use super::error::ActionError;
use super::existing;
use super::outcome::Outcome;
use crate::aws::rds;
use crate::exec::Operation;
use crate::exec::{PollInterval, Probe};
use crate::model::live::{LiveDb, db_settled, engine_version_satisfies};
use crate::model::requests;
use crate::model::requests::DbModification;
use crate::plan::op::MasterSecret;
use crate::plan::{Planned, ResourceId};

type Step = Result<Outcome, ActionError>;

fn applied(detail: impl Into<String>) -> Step {
    Ok(Outcome::Applied {
        detail: detail.into(),
    })
}

pub async fn create_parameter_group(
    ctx: &Context,
    id: &ResourceId,
    planned: &requests::CreateDbParameterGroup,
) -> Step {
    let resource = id.to_string();
    let group = conform::filled(&resource, planned, |_| {})?;
    let mut req = group.clone();
    // Like every resource envctl creates, the group carries when it was made and until when
    // (`gc --expired` reads `envctl:expires`): the creation-time tags, added at the send.
    req.tags = ctx
        .creation_tags()
        .into_iter()
        .map(|(key, value)| requests::RdsTag { key, value })
        .collect();
    match ctx
        .mutate(
            &resource,
            Operation::Rds(RdsOp::CreateDBParameterGroup),
            || rds::create_parameter_group(&ctx.clients.rds, &req),
        )
        .await
    {
        Ok(()) => {}
        Err(e) if e.is_code(ErrorCode::DBParameterGroupAlreadyExists) => {
            existing::db_parameter_group(ctx, &resource, &group.db_parameter_group_name).await?;
        }
        Err(e) => return Err(e),
    }
    ctx.mutate(
        &resource,
        Operation::Rds(RdsOp::ModifyDBParameterGroup),
        || {
            rds::modify_parameter_group(
                &ctx.clients.rds,
                &group.db_parameter_group_name,
                &group.parameters,
            )
        },
    )
    .await?;
    // Instances created with the group boot with its values.
    applied(crate::plan::estimate::plural(
        group.parameters.len(),
        "parameter set",
        "parameters set",
    ))
}

/// Sets the parameters, then reboots the instances that use the group: static parameters
/// (max_connections) apply only at a reboot, an outage of a minute or two, acceptable in a
/// test environment and the only way the new value is real.
/// Tags an existing RDS resource (`--adopt`) as the environment's.
pub async fn adopt(ctx: &Context, id: &ResourceId, arn: &str) -> Step {
    let tags = ctx.adoption_tags();
    ctx.mutate(
        &id.to_string(),
        Operation::Rds(RdsOp::AddTagsToResource),
        || rds::add_tags(&ctx.clients.rds, arn, &tags),
    )
    .await?;
    applied("adopted")
}

pub async fn modify_parameter_group(
    ctx: &Context,
    id: &ResourceId,
    parameters: &BTreeMap<String, String>,
    reset: &[String],
    reboot: &[String],
) -> Step {
    let resource = id.to_string();
    let name = id.name();
    if !parameters.is_empty() {
        ctx.mutate(
            &resource,
            Operation::Rds(RdsOp::ModifyDBParameterGroup),
            || rds::modify_parameter_group(&ctx.clients.rds, name, parameters),
        )
        .await?;
    }
    if !reset.is_empty() {
        ctx.mutate(
            &resource,
            Operation::Rds(RdsOp::ResetDBParameterGroup),
            || rds::reset_parameters(&ctx.clients.rds, name, reset),
        )
        .await?;
    }
    for db in reboot {
        ctx.mutate(&resource, Operation::Rds(RdsOp::RebootDBInstance), || {
            rds::reboot_instance(&ctx.clients.rds, db)
        })
        .await?;
        ctx.events.detail(&resource, &format!("rebooting {db}"));
        // Converged means the values are in effect: ParameterApplyStatus `in-sync`.
        wait_status(ctx, id, db, "reboot", ctx.deadlines.rds_modify, |d| {
            db_settled(&d.status) && d.parameters_in_sync()
        })
        .await?;
    }
    applied(format!(
        "{}{}; rebooted {}",
        crate::plan::estimate::plural(parameters.len(), "parameter set", "parameters set"),
        if reset.is_empty() {
            String::new()
        } else {
            format!(", {} reset to the engine default", reset.len())
        },
        reboot.join(", ")
    ))
}

/// What a DB instance's create sends: its subnet group, its master secret (whose ARN is a
/// placeholder until created) and the instance, compared with the plan as one value.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InstanceCreate {
    pub request: requests::CreateDbInstance,
    pub subnet_group: Option<requests::CreateDbSubnetGroup>,
    pub master_secret: Option<MasterSecret>,
}

pub async fn create_instance(
    ctx: &Context,
    id: &ResourceId,
    planned: InstanceCreate,
    role: Option<&str>,
) -> Step {
    let tags = ctx.creation_tags();
    let resource = id.to_string();
    let checked = conform::filled(&resource, &planned, |_| {})?;
    if let Some(group) = &checked.subnet_group {
        create_subnet_group(ctx, &resource, group, &tags).await?;
    }
    let identifier = checked.request.db_instance_identifier.clone();
    let op = if checked.request.source_db_instance_identifier.is_some() {
        RdsOp::CreateDBInstanceReadReplica
    } else {
        RdsOp::CreateDBInstance
    };
    // The writer's password: from the secret envctl keeps it in (created first when
    // missing), read right before the call and dropped after it.
    let secret = match &checked.master_secret {
        Some(s) => Some(master_secret(ctx, &resource, &s.name, &s.description, &tags).await?),
        None => None,
    };
    let sending = conform::filled(&resource, &planned, |p| {
        if let (Some(s), Some(arn)) = (&mut p.master_secret, &secret) {
            s.arn = Planned::Known(arn.clone());
        }
    })?;
    let req = sending.request;
    let password = match &secret {
        Some(arn) => Some(
            ctx.read(
                &resource,
                Operation::SecretsManager(SecretsManagerOp::GetSecretValue),
                || crate::aws::secrets::master_password(&ctx.clients.secrets, arn),
            )
            .await?,
        ),
        None => None,
    };
    match ctx
        .mutate(&resource, Operation::Rds(op), || {
            rds::create_instance(&ctx.clients.rds, &req, &tags, password.as_ref())
        })
        .await
    {
        Ok(()) => {}
        // An earlier attempt created it (its response was lost): ours is waited for as if
        // just created, anyone else's is refused.
        Err(e) if e.is_code(ErrorCode::DBInstanceAlreadyExists) => {
            existing::db_instance(ctx, &resource, &identifier).await?;
        }
        Err(e) => return Err(e),
    }
    drop(password);
    let mut live = wait_status(
        ctx,
        id,
        &identifier,
        "available",
        ctx.deadlines.rds_create,
        |db| db.status == envctl_aws_model::status::DbInstanceStatus::Available,
    )
    .await?;
    if secret.is_some() {
        live.master_secret_arn = secret;
    }
    publish(ctx, &live, role);
    // Created right after its group was modified, an instance may boot without the changes
    // (RDS asks to wait five minutes first): a reboot puts them in effect.
    if live
        .parameter_apply_status
        .as_deref()
        .is_some_and(|s| s == envctl_aws_model::status::ParameterApplyStatus::PendingReboot)
    {
        return reboot_into_sync(ctx, id, &identifier, role).await;
    }
    applied(format!("created ({})", live.class))
}

/// The secret holding the writer's master credentials: created with a password Secrets
/// Manager generates, or, when it exists (an earlier attempt), this env's is reused. Returns
/// its ARN.
async fn master_secret(
    ctx: &Context,
    resource: &str,
    name: &str,
    description: &str,
    tags: &crate::model::live::Tags,
) -> Result<String, ActionError> {
    let password = ctx
        .read(
            resource,
            Operation::SecretsManager(SecretsManagerOp::GetRandomPassword),
            || crate::aws::secrets::random_password(&ctx.clients.secrets, name),
        )
        .await?;
    let create = || {
        ctx.mutate(
            resource,
            Operation::SecretsManager(SecretsManagerOp::CreateSecret),
            || {
                crate::aws::secrets::create_master_secret(
                    &ctx.clients.secrets,
                    name,
                    MASTER_USERNAME,
                    &password,
                    description,
                    tags,
                )
            },
        )
    };
    match create().await {
        Ok(arn) => Ok(arn),
        Err(e) if e.is_code(ErrorCode::ResourceExistsException) => {
            existing::master_secret(ctx, resource, name).await
        }
        // The name is still held by a deleted secret: the env's previous destroy deleted it
        // with ForceDeleteWithoutRecovery, which Secrets Manager completes in the background
        // ("there might be a short delay before the secret is permanently deleted. If you
        // delete a secret and then immediately create a secret with the same name, use
        // appropriate back off and retry logic", DeleteSecret). An apply right after a
        // destroy meets it; terraform-provider-aws retries CreateSecret the same way.
        Err(e) if e.is_code(ErrorCode::InvalidRequestException) => {
            once_the_name_is_free(ctx, resource, name, create).await
        }
        Err(e) => Err(e),
    }
}

/// How long a secret name may stay held by a forced deletion before envctl gives up: the
/// background deletion takes seconds; a name held longer belongs to a secret scheduled for
/// deletion (a recovery window of 7-30 days), which only RestoreSecret or a forced
/// DeleteSecret frees.
const SECRET_NAME_RELEASE: Duration = Duration::from_secs(120);

/// Retries CreateSecret while the name is held by a secret being deleted; one that is not
/// this env's is refused at once, and one still held after [`SECRET_NAME_RELEASE`] is
/// named with what to do.
async fn once_the_name_is_free<F, Fut>(
    ctx: &Context,
    resource: &str,
    name: &str,
    create: F,
) -> Result<String, ActionError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<String, ActionError>>,
{
    let create = &create;
    let waited = ctx
        .wait(
            resource,
            "the secret name, held by a deleted secret",
            ctx.clock.now(),
            SECRET_NAME_RELEASE,
            PollInterval::growing(Duration::from_secs(5), Duration::from_secs(20)),
            || async move {
                match create().await {
                    Ok(arn) => Ok(Probe::Done(arn)),
                    Err(e) if e.is_code(ErrorCode::ResourceExistsException) => {
                        existing::master_secret(ctx, resource, name)
                            .await
                            .map(Probe::Done)
                    }
                    Err(e) if e.is_code(ErrorCode::InvalidRequestException) => {
                        existing::secret_being_deleted(ctx, resource, name).await?;
                        Ok(Probe::Pending {
                            status: format!("{name} is being deleted"),
                        })
                    }
                    Err(e) => Err(e),
                }
            },
        )
        .await;
    match waited {
        Err(ActionError::TimedOut { .. }) => Err(ActionError::Failed(format!(
            "secret {name} is scheduled for deletion; restore it (RestoreSecret) or delete it now (DeleteSecret with ForceDeleteWithoutRecovery), then apply again"
        ))),
        other => other,
    }
}

/// The writer's master user (CreateDBInstance `MasterUsername`; the secret's `username`).
const MASTER_USERNAME: &str = requests::MASTER_USERNAME;

/// The writer's DB subnet group, before the writer: one an earlier attempt left (same
/// name, this env's tags) is kept; a foreign one is refused rather than built on.
async fn create_subnet_group(
    ctx: &Context,
    resource: &str,
    group: &requests::CreateDbSubnetGroup,
    tags: &crate::model::live::Tags,
) -> Result<(), ActionError> {
    match ctx
        .mutate(resource, Operation::Rds(RdsOp::CreateDBSubnetGroup), || {
            rds::create_subnet_group(&ctx.clients.rds, group, tags)
        })
        .await
    {
        Ok(()) => Ok(()),
        Err(e) if e.is_code(ErrorCode::DBSubnetGroupAlreadyExists) => {
            existing::db_subnet_group(ctx, resource, &group.db_subnet_group_name).await
        }
        Err(e) => Err(e),
    }
}

/// Publishes the instance's endpoint (and the writer's secret) as the outputs of its
/// `role` (`writer`, `reader`).
fn publish(ctx: &Context, live: &LiveDb, role: Option<&str>) {
    if let (Some(role), Some(address), Some(port)) = (role, &live.address, live.port) {
        ctx.set_outputs([
            (format!("rds.{role}.address"), address.clone()),
            (format!("rds.{role}.port"), port.to_string()),
        ]);
    }
    // The secret RDS keeps the master password in (ManageMasterUserPassword): services
    // name it in `secrets:` as `${rds.writer.master_secret_arn}:password::`.
    if let (Some("writer"), Some(arn)) = (role, &live.master_secret_arn) {
        ctx.set_outputs([(
            crate::spec::deferred::MASTER_SECRET_ARN.to_string(),
            arn.clone(),
        )]);
    }
}

/// Waits for a change already in progress (or the adoption's tags) to settle.
pub async fn await_available(ctx: &Context, id: &ResourceId, role: Option<&str>) -> Step {
    let live = wait_status(
        ctx,
        id,
        id.name(),
        "available, parameters in sync",
        ctx.deadlines.rds_create,
        |db| {
            db_settled(&db.status)
                && db
                    .parameter_apply_status
                    .as_deref()
                    .is_none_or(|s| s != envctl_aws_model::status::ParameterApplyStatus::Applying)
        },
    )
    .await?;
    publish(ctx, &live, role);
    // A create an earlier run left, made too soon after its group changed.
    if live
        .parameter_apply_status
        .as_deref()
        .is_some_and(|s| s == envctl_aws_model::status::ParameterApplyStatus::PendingReboot)
    {
        return reboot_into_sync(ctx, id, id.name(), role).await;
    }
    applied(format!("available ({})", live.class))
}

pub async fn modify(
    ctx: &Context,
    id: &ResourceId,
    m: &DbModification,
    adopt: Option<&str>,
    role: Option<&str>,
) -> Step {
    let resource = id.to_string();
    let name = id.name();
    if let Some(arn) = adopt {
        let tags = ctx.adoption_tags();
        ctx.mutate(&resource, Operation::Rds(RdsOp::AddTagsToResource), || {
            rds::add_tags(&ctx.clients.rds, arn, &tags)
        })
        .await?;
    }
    let fields = DbModification {
        reboot: false,
        ..m.clone()
    };
    if fields == DbModification::default() {
        if m.reboot {
            return reboot_into_sync(ctx, id, name, role).await;
        }
        return await_available(ctx, id, role).await;
    }
    let m = &fields;
    ctx.mutate(&resource, Operation::Rds(RdsOp::ModifyDBInstance), || {
        rds::modify_instance(&ctx.clients.rds, name, m)
    })
    .await?;
    // The status stays "available" for a few seconds after ModifyDBInstance: waiting for
    // "available" right away would return before anything happened. Wait for it to leave
    // "available" first (or for the change to show), then for it to return.
    // Every field the modification sets must show, not the class only: a storage-only
    // change otherwise reads as done while the instance is still "available" before it.
    let changed = |db: &LiveDb| {
        m.class.as_ref().is_none_or(|c| &db.class == c)
            && db.pending_class.is_none()
            && m.storage_gb.is_none_or(|s| db.storage_gb >= s)
            && m.engine_version
                .as_ref()
                .is_none_or(|v| engine_version_satisfies(&db.engine_version, v))
            && m.parameter_group
                .as_ref()
                .is_none_or(|g| db.parameter_group.as_ref() == Some(g))
    };
    let left = wait_status(
        ctx,
        id,
        name,
        "the modification to start",
        ctx.deadlines.rds_modify_start,
        |db| db.status != envctl_aws_model::status::DbInstanceStatus::Available || changed(db),
    )
    .await;
    // Timing out here is fine: the change may have been applied without a visible
    // "modifying" phase; the wait below tells.
    match left {
        Ok(_) | Err(ActionError::TimedOut { .. }) => {}
        Err(e) => return Err(e),
    }
    let live = wait_status(
        ctx,
        id,
        name,
        "modified and available",
        ctx.deadlines.rds_modify,
        // storage-optimization (hours after a storage change) is usable: done.
        |db| db_settled(&db.status) && changed(db),
    )
    .await?;
    publish(ctx, &live, role);
    if live
        .parameter_apply_status
        .as_deref()
        .is_some_and(|s| s == envctl_aws_model::status::ParameterApplyStatus::PendingReboot)
    {
        // A new parameter group is attached at once; its static values need the reboot.
        return reboot_into_sync(ctx, id, name, role).await;
    }
    applied(format!("modified ({})", live.class))
}

/// RebootDBInstance, then the wait until it is available with its group's values in effect
/// (ParameterApplyStatus `in-sync`).
async fn reboot_into_sync(ctx: &Context, id: &ResourceId, name: &str, role: Option<&str>) -> Step {
    let resource = id.to_string();
    ctx.mutate(&resource, Operation::Rds(RdsOp::RebootDBInstance), || {
        rds::reboot_instance(&ctx.clients.rds, name)
    })
    .await?;
    ctx.events.detail(&resource, &format!("rebooting {name}"));
    let live = wait_status(
        ctx,
        id,
        name,
        "rebooted with its parameters in sync",
        ctx.deadlines.rds_modify,
        |d| db_settled(&d.status) && d.parameters_in_sync(),
    )
    .await?;
    publish(ctx, &live, role);
    applied(format!("rebooted ({}, parameters in sync)", live.class))
}

pub(super) async fn wait_status(
    ctx: &Context,
    id: &ResourceId,
    instance: &str,
    what: &str,
    deadline: Duration,
    done: impl Fn(&LiveDb) -> bool,
) -> Result<LiveDb, ActionError> {
    let (initial, max) = ctx.poll.rds;
    let resource = id.to_string();
    let done = &done;
    let resource = &resource;
    ctx.wait(
        resource,
        what,
        ctx.clock.now(),
        deadline,
        PollInterval::growing(initial, max),
        || async move {
            let db = ctx
                .read(resource, Operation::Rds(RdsOp::DescribeDBInstances), || {
                    rds::describe_instance(&ctx.clients.rds, instance)
                })
                .await?;
            Ok(match db {
                Some(db) if done(&db) => Probe::Done(db),
                Some(db) if envctl_aws_model::state::db_instance::needs_operator(&db.status) => {
                    Probe::Failed {
                        reason: format!("the instance is {}", db.status),
                    }
                }
                Some(db) => {
                    ctx.events.status(resource, &db.status);
                    Probe::Pending { status: db.status }
                }
                None => Probe::Failed {
                    reason: "the instance disappeared".into(),
                },
            })
        },
    )
    .await
}

pub async fn delete_instance(
    ctx: &Context,
    id: &ResourceId,
    instance: &str,
    skip_final_snapshot: bool,
) -> Step {
    let resource = id.to_string();
    // Named when it is sent: a snapshot identifier is never reused (a fixed one failed
    // the second destroy of a re-created env).
    let final_snapshot = (!skip_final_snapshot)
        .then(|| requests::final_snapshot_identifier(instance, ctx.clock.now()));
    match ctx
        .mutate(&resource, Operation::Rds(RdsOp::DeleteDBInstance), || {
            rds::delete_instance(&ctx.clients.rds, instance, final_snapshot.as_deref())
        })
        .await
    {
        Ok(()) => {}
        Err(e) if e.is_code(ErrorCode::DBInstanceNotFound) => {
            return Ok(Outcome::Unchanged {
                detail: "already gone".into(),
            });
        }
        // Already deleting: wait below.
        Err(e) if e.is_code(ErrorCode::InvalidDBInstanceState) => {}
        Err(e) => return Err(e),
    }
    let (initial, max) = ctx.poll.rds;
    let since = ctx.clock.now();
    ctx.pause(
        &resource,
        "the instance deletion",
        ctx.poll.delete_first.db_instance,
    )
    .await;
    ctx.wait(
        &resource,
        "instance deletion",
        since,
        ctx.deadlines.rds_delete,
        PollInterval::growing(initial, max),
        || async {
            let db = ctx
                .read(
                    &resource,
                    Operation::Rds(RdsOp::DescribeDBInstances),
                    || rds::describe_instance(&ctx.clients.rds, instance),
                )
                .await?;
            Ok(match db {
                None => Probe::Done(()),
                Some(db) => Probe::Pending { status: db.status },
            })
        },
    )
    .await?;
    applied("deleted")
}

/// How long a parameter group may go on counting a deleted instance as its member: RDS
/// refuses its deletion for a while after the last instance is gone; terraform-provider-aws
/// retries DeleteDBParameterGroup on InvalidDBParameterGroupState for 3 minutes.
const PARAMETER_GROUP_RELEASE: Duration = Duration::from_secs(180);

/// Deletes the group once its instances are gone (the plan orders it after them). A group
/// RDS still counts a just-deleted instance in is tried again until
/// [`PARAMETER_GROUP_RELEASE`] has passed, instead of being left behind by the destroy.
pub async fn delete_parameter_group(ctx: &Context, id: &ResourceId, name: &str) -> Step {
    match ctx
        .mutate_through(
            &id.to_string(),
            Operation::Rds(RdsOp::DeleteDBParameterGroup),
            (
                ErrorCode::InvalidDBParameterGroupState,
                "the group still counts an instance just deleted",
                PARAMETER_GROUP_RELEASE,
            ),
            || rds::delete_parameter_group(&ctx.clients.rds, name),
        )
        .await
    {
        Ok(()) => applied("deleted"),
        Err(e) if e.is_code(ErrorCode::DBParameterGroupNotFound) => Ok(Outcome::Unchanged {
            detail: "already gone".into(),
        }),
        Err(e) => Err(e),
    }
}

/// Deletes the owned DB subnet group once its instances are gone; one already gone counts as
/// done (the adapter treats DBSubnetGroupNotFoundFault as success).
pub async fn delete_subnet_group(ctx: &Context, id: &ResourceId, name: &str) -> Step {
    ctx.mutate(
        &id.to_string(),
        Operation::Rds(RdsOp::DeleteDBSubnetGroup),
        || rds::delete_subnet_group(&ctx.clients.rds, name),
    )
    .await?;
    applied("deleted")
}

/// Deletes the writer's master secret once the writer is gone (one already gone is done).
pub async fn delete_master_secret(ctx: &Context, id: &ResourceId, arn: &str) -> Step {
    ctx.mutate(
        &id.to_string(),
        Operation::SecretsManager(SecretsManagerOp::DeleteSecret),
        || crate::aws::secrets::delete(&ctx.clients.secrets, arn),
    )
    .await?;
    applied("deleted")
}
