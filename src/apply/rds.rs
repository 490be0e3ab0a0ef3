//! RDS actions: the parameter group, the writer and its read replicas.
use super::context::Context;
use super::outcome::Outcome;
use crate::aws::rds::{self, DbModification};
use crate::exec::{PollInterval, Probe, WaitOutcome, await_condition};
use crate::model::live::LiveDb;
use crate::model::{DbInstance, requests};
use crate::plan::{Action, ActionKind};

pub async fn parameter_group(ctx: &Context, action: &Action) -> Outcome {
    if action.kind == ActionKind::Delete {
        let (_, name) = crate::plan::key::split(&action.resource);
        return match ctx
            .mutate(&action.resource, "DeleteDBParameterGroup", || {
                rds::delete_parameter_group(&ctx.clients.rds, name)
            })
            .await
        {
            Ok(()) => Outcome::Applied {
                detail: "deleted".into(),
            },
            Err(e) if e.is_code("DBParameterGroupNotFound") => Outcome::Unchanged {
                detail: "already gone".into(),
            },
            Err(e) => Outcome::Failed {
                reason: e.to_string(),
            },
        };
    }
    let Some(group) = ctx
        .desired
        .db
        .as_ref()
        .and_then(|d| d.parameter_group.clone())
    else {
        return Outcome::Failed {
            reason: "no parameter group in the spec".into(),
        };
    };
    if action.kind == ActionKind::Create {
        let req = requests::create_db_parameter_group(&ctx.desired, &group);
        if let Err(e) = ctx
            .mutate(&action.resource, "CreateDBParameterGroup", || {
                rds::create_parameter_group(&ctx.clients.rds, &req)
            })
            .await
            && !e.is_code("DBParameterGroupAlreadyExists")
        {
            return Outcome::Failed {
                reason: e.to_string(),
            };
        }
    }
    if let Err(e) = ctx
        .mutate(&action.resource, "ModifyDBParameterGroup", || {
            rds::modify_parameter_group(&ctx.clients.rds, &group.name, &group.parameters)
        })
        .await
    {
        return Outcome::Failed {
            reason: e.to_string(),
        };
    }
    if action.kind == ActionKind::Create {
        // Instances created with the group boot with its values.
        return Outcome::Applied {
            detail: format!("{} parameters set", group.parameters.len()),
        };
    }
    // Static parameters (max_connections) apply only at a reboot of the instances using the
    // group: an outage of a minute or two, acceptable in a test environment and the only
    // way the new value is real.
    let mut users: Vec<&crate::model::live::LiveDb> = ctx
        .live
        .db_instances
        .values()
        .filter(|d| d.parameter_group.as_deref() == Some(group.name.as_str()))
        .collect();
    users.sort_by_key(|d| d.source.is_some());
    for db in &users {
        let id = db.identifier.clone();
        if let Err(e) = ctx
            .mutate(&action.resource, "RebootDBInstance", || {
                rds::reboot_instance(&ctx.clients.rds, &id)
            })
            .await
        {
            return Outcome::Failed {
                reason: e.to_string(),
            };
        }
        ctx.events
            .status(&action.resource, &format!("rebooting {id}"));
        if let Err(reason) = wait_status(ctx, action, &id, ctx.deadlines.rds_modify, |d| {
            d.status == "available"
        })
        .await
        .into_result("reboot")
        {
            return Outcome::Failed { reason };
        }
    }
    Outcome::Applied {
        detail: format!(
            "{} parameters set; rebooted {}",
            group.parameters.len(),
            users
                .iter()
                .map(|d| d.identifier.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn role(ctx: &Context, id: &str) -> Option<&'static str> {
    let db = ctx.desired.db.as_ref()?;
    if db.writer.identifier == id {
        Some("writer")
    } else if db.readers.first().is_some_and(|r| r.identifier == id) {
        Some("reader")
    } else {
        None
    }
}

fn desired_instance<'a>(ctx: &'a Context, id: &str) -> Option<&'a DbInstance> {
    let db = ctx.desired.db.as_ref()?;
    std::iter::once(&db.writer)
        .chain(db.readers.iter())
        .find(|i| i.identifier == id)
}

pub async fn instance(ctx: &Context, action: &Action) -> Outcome {
    let (_, id) = crate::plan::key::split(&action.resource);
    let result = match (action.kind, desired_instance(ctx, id)) {
        (ActionKind::Delete, _) | (_, None) => delete(ctx, action, id)
            .await
            .map(|()| "deleted".to_string()),
        (ActionKind::Create, Some(inst)) => create(ctx, action, inst).await,
        (ActionKind::Replace, Some(inst)) => match delete(ctx, action, id).await {
            Ok(()) => create(ctx, action, inst).await,
            Err(e) => Err(e),
        },
        (_, Some(inst)) => modify(ctx, action, inst).await,
    };
    match result {
        Ok(detail) => Outcome::Applied { detail },
        Err(reason) => Outcome::Failed { reason },
    }
}

async fn create(ctx: &Context, action: &Action, inst: &DbInstance) -> Result<String, String> {
    let req = requests::create_db_instance(&ctx.desired, inst, &ctx.desired.security_groups);
    let tags = ctx.creation_tags();
    let op = if inst.source.is_some() {
        "CreateDBInstanceReadReplica"
    } else {
        "CreateDBInstance"
    };
    ctx.mutate(&action.resource, op, || {
        rds::create_instance(&ctx.clients.rds, &req, &tags)
    })
    .await
    .map_err(|e| e.to_string())?;
    let live = wait_status(
        ctx,
        action,
        &inst.identifier,
        ctx.deadlines.rds_create,
        |db| db.status == "available",
    )
    .await
    .into_result("available")?;
    publish(ctx, &live);
    Ok(format!("created ({})", live.class))
}

fn publish(ctx: &Context, live: &LiveDb) {
    if let (Some(role), Some(address), Some(port)) =
        (role(ctx, &live.identifier), &live.address, live.port)
    {
        ctx.set_outputs([
            (format!("rds.{role}.address"), address.clone()),
            (format!("rds.{role}.port"), port.to_string()),
        ]);
    }
}

async fn modify(ctx: &Context, action: &Action, inst: &DbInstance) -> Result<String, String> {
    let Some(live) = ctx.live.db_instances.get(&inst.identifier) else {
        return Err("the instance is gone".into());
    };
    if action
        .changes
        .iter()
        .any(|c| c.field == crate::plan::diff::ADOPT_FIELD)
    {
        let tags = ctx.creation_tags();
        ctx.mutate(&action.resource, "AddTagsToResource", || {
            rds::add_tags(&ctx.clients.rds, &live.arn, &tags)
        })
        .await
        .map_err(|e| e.to_string())?;
    }
    let m = DbModification {
        class: (live.pending_class.as_ref().unwrap_or(&live.class) != &inst.class)
            .then(|| inst.class.clone()),
        storage_gb: (inst.source.is_none() && live.storage_gb < inst.storage_gb)
            .then_some(inst.storage_gb),
        engine_version: inst
            .engine_version
            .clone()
            .filter(|v| inst.source.is_none() && !live.engine_version.starts_with(v.as_str())),
        parameter_group: inst
            .parameter_group
            .clone()
            .filter(|g| live.parameter_group.as_ref() != Some(g)),
    };
    if m == DbModification::default() {
        // Only waiting for an earlier change to finish.
        let live = wait_status(
            ctx,
            action,
            &inst.identifier,
            ctx.deadlines.rds_create,
            |db| db.status == "available",
        )
        .await
        .into_result("available")?;
        publish(ctx, &live);
        return Ok(format!("available ({})", live.class));
    }
    ctx.mutate(&action.resource, "ModifyDBInstance", || {
        rds::modify_instance(&ctx.clients.rds, &inst.identifier, &m)
    })
    .await
    .map_err(|e| e.to_string())?;
    // The status stays "available" for a few seconds after ModifyDBInstance: waiting for
    // "available" right away would return before anything happened. Wait for it to leave
    // "available" first (or for the change to show), then for it to return.
    let wanted = inst.class.clone();
    let left = wait_status(
        ctx,
        action,
        &inst.identifier,
        ctx.deadlines.rds_modify_start,
        |db| db.status != "available" || db.class == wanted,
    )
    .await;
    // Timing out here is fine: the change may have been applied without a visible
    // "modifying" phase; the wait below tells.
    if let WaitOutcome::Failed(reason) = left {
        return Err(reason);
    }
    let live = wait_status(
        ctx,
        action,
        &inst.identifier,
        ctx.deadlines.rds_modify,
        |db| db.status == "available" && db.class == wanted && db.pending_class.is_none(),
    )
    .await
    .into_result("modified and available")?;
    publish(ctx, &live);
    Ok(format!("modified ({})", live.class))
}

async fn wait_status(
    ctx: &Context,
    action: &Action,
    id: &str,
    deadline: std::time::Duration,
    done: impl Fn(&LiveDb) -> bool,
) -> WaitOutcome<LiveDb> {
    let (initial, max) = ctx.poll.rds;
    let done = &done;
    await_condition(
        ctx.clock.as_ref(),
        deadline,
        PollInterval::growing(initial, max),
        || async move {
            if ctx.cancelled() {
                return Probe::Failed {
                    reason: "interrupted while waiting for the instance".into(),
                };
            }
            match ctx
                .read(&action.resource, "DescribeDBInstances", || {
                    rds::describe_instance(&ctx.clients.rds, id)
                })
                .await
            {
                Ok(Some(db)) if done(&db) => Probe::Done(db),
                Ok(Some(db)) if db.status == "failed" || db.status == "incompatible-parameters" => {
                    Probe::Failed {
                        reason: format!("the instance is {}", db.status),
                    }
                }
                Ok(Some(db)) => {
                    ctx.events.status(&action.resource, &db.status);
                    Probe::Pending { status: db.status }
                }
                Ok(None) => Probe::Failed {
                    reason: "the instance disappeared".into(),
                },
                Err(e) => Probe::Failed {
                    reason: e.to_string(),
                },
            }
        },
    )
    .await
}

pub async fn delete(ctx: &Context, action: &Action, id: &str) -> Result<(), String> {
    let skip = desired_instance(ctx, id)
        .map(|i| i.skip_final_snapshot)
        .unwrap_or(true);
    match ctx
        .mutate(&action.resource, "DeleteDBInstance", || {
            rds::delete_instance(&ctx.clients.rds, id, skip)
        })
        .await
    {
        Ok(()) => {}
        Err(e) if e.is_code("DBInstanceNotFound") => return Ok(()),
        // Already deleting: wait below.
        Err(e) if e.is_code("InvalidDBInstanceState") => {}
        Err(e) => return Err(e.to_string()),
    }
    let (initial, max) = ctx.poll.rds;
    let outcome = await_condition(
        ctx.clock.as_ref(),
        ctx.deadlines.rds_delete,
        PollInterval::growing(initial, max),
        || async {
            match ctx
                .read(&action.resource, "DescribeDBInstances", || {
                    rds::describe_instance(&ctx.clients.rds, id)
                })
                .await
            {
                Ok(None) => Probe::Done(()),
                Ok(Some(db)) => Probe::Pending { status: db.status },
                Err(e) => Probe::Failed {
                    reason: e.to_string(),
                },
            }
        },
    )
    .await;
    outcome.into_result("instance deletion")
}
