//! RDS: the parameter group, the writer and its read replicas, and owned instances the
//! spec no longer has.
use envctl_aws_model::status::ParameterApplyStatus;
use std::collections::{BTreeMap, BTreeSet};

use super::{Planner, adoption, creates};
use crate::model::live::{
    LiveDb, LiveParameterGroup, db_settled, engine_version_satisfies, owned_by,
    storage_change_refusal,
};
use crate::model::requests::DbModification;
use crate::model::{parameter_family, parameter_group_name};
use crate::plan::action::{Action, ActionKind, Change, Conflict, ConflictKind};
use crate::plan::id::ResourceId;
use crate::plan::op::{Delete, Op};

pub(super) fn plan_db(p: &mut Planner) {
    let Some(db) = &p.desired.db else {
        return;
    };
    let est = p.est;
    if let Some(group) = &db.parameter_group {
        let id = ResourceId::db_parameter_group(&group.name);
        match p.live.db_parameter_groups.get(&group.name) {
            None => p.push(
                Action::new(
                    id,
                    ActionKind::Create,
                    Op::Create(creates::db_parameter_group(p.desired, group)),
                )
                .changes(param_changes(&BTreeMap::new(), &group.parameters))
                .estimate(est.rds_parameter_group),
            ),
            Some(l) if !p.owned(&l.tags) => p.conflict(id, "a DB parameter group"),
            Some(l) if l.family != group.family => p.conflicts.push(Conflict {
                resource: id,
                message: format!(
                    "DB parameter group {} is of family {}, not {}: a group's family is fixed when it is created; delete it and apply again",
                    group.name, l.family, group.family
                ),
                kind: ConflictKind::Refused,
            }),
            Some(l) => {
                let action = existing_parameter_group(p, id, group, l);
                p.push(action);
            }
        }
    } else if let Some(l) = p
        .live
        .db_parameter_groups
        .get(&parameter_group_name(
            &db.writer.identifier,
            &parameter_family(db.writer.engine_version.as_deref()),
        ))
        .filter(|l| p.owned(&l.tags))
    {
        // The spec sets no parameter any more, but the writer still runs the group an
        // earlier spec made: every value left in it goes back to the engine default.
        let action = group_update(p, &l.name, l, &BTreeMap::new());
        p.push(action);
    }
    // Instances wait for their group's action (a create, or values and reboots), the one
    // the spec names or the earlier one whose values are being reset.
    let pg_dep: Vec<ResourceId> = p
        .actions
        .iter()
        .filter(|a| matches!(a.op, Op::RdsParameterGroupModify { .. }))
        .map(|a| a.id.clone())
        .chain(
            db.parameter_group
                .iter()
                .map(|g| ResourceId::db_parameter_group(&g.name)),
        )
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut writer_replaced = false;
    for (i, inst) in std::iter::once(&db.writer)
        .chain(db.readers.iter())
        .enumerate()
    {
        let id = ResourceId::db_instance(&inst.identifier);
        let mut deps = pg_dep.clone();
        if i > 0 {
            deps.push(ResourceId::db_instance(&db.writer.identifier));
        }
        let create_secs = if i == 0 {
            est.rds_create
        } else {
            est.rds_replica_create
        };
        let Some(l) = p.live.db_instances.get(&inst.identifier) else {
            let engine = format!(
                "{} {}",
                inst.engine,
                inst.engine_version.clone().unwrap_or_default()
            );
            let mut changes = vec![
                Change::new("class", None, Some(inst.class.clone())),
                Change::new("engine", None, Some(engine.trim().to_string())),
            ];
            match &inst.source {
                Some(source) => changes.push(Change::new("replica of", None, Some(source.clone()))),
                None => changes.push(Change::new(
                    "storage_gb",
                    None,
                    Some(inst.storage_gb.to_string()),
                )),
            }
            p.push(
                Action::new(
                    id,
                    ActionKind::Create,
                    Op::Create(creates::db_instance(p.desired, inst)),
                )
                .changes(changes)
                .estimate(create_secs)
                .deps(deps),
            );
            continue;
        };
        if !p.owned(&l.tags) {
            p.conflict(id, "a DB instance");
            continue;
        }
        let adopt = adoption(&l.tags, p.env());
        let mut changes = adopt.clone();
        let mut kind = if changes.is_empty() {
            ActionKind::NoOp
        } else {
            ActionKind::UpdateInPlace
        };
        let mut reasons: Vec<String> = Vec::new();
        let mut secs = 0.0;
        let mut modification = DbModification::default();
        let live_class = l.pending_class.as_ref().unwrap_or(&l.class);
        if live_class != &inst.class {
            changes.push(Change::new(
                "class",
                Some(l.class.clone()),
                Some(inst.class.clone()),
            ));
            kind = kind.max(ActionKind::UpdateInPlace);
            reasons.push("ModifyDBInstance with ApplyImmediately: the instance is unavailable while its class changes".into());
            secs += est.rds_class_change;
            modification.class = Some(inst.class.clone());
        }
        if inst.source.is_none() && l.storage_gb != inst.storage_gb {
            changes.push(Change::new(
                "storage_gb",
                Some(l.storage_gb.to_string()),
                Some(inst.storage_gb.to_string()),
            ));
            if inst.storage_gb < l.storage_gb {
                kind = ActionKind::Replace;
                reasons.push("RDS storage can only grow".into());
            } else if let Some(why) =
                storage_change_refusal(l.storage_gb, inst.storage_gb, &l.status)
            {
                // RDS would answer InvalidParameterCombination mid-apply: say so in the plan,
                // before any call, and leave the storage alone.
                changes.pop();
                p.conflicts.push(Conflict {
                    resource: id.clone(),
                    message: format!(
                        "storage_gb {} -> {} refused: {why}",
                        l.storage_gb, inst.storage_gb
                    ),
                    kind: ConflictKind::Refused,
                });
            } else {
                kind = kind.max(ActionKind::UpdateInPlace);
                secs += est.rds_storage_change;
                modification.storage_gb = Some(inst.storage_gb);
            }
        }
        if l.source.as_deref() != inst.source.as_deref() {
            changes.push(Change::new(
                "replica of",
                l.source.clone(),
                inst.source.clone(),
            ));
            kind = ActionKind::Replace;
            reasons.push("a replica cannot change its source".into());
        }
        if let Some(v) = &inst.engine_version
            && inst.source.is_none()
            // Numeric, not a prefix: "16.10".starts_with("16.1") would call 16.10 converged
            // to 16.1, and an automatic minor upgrade (16.6 -> 16.8) must not be sent back
            // as a downgrade.
            && !engine_version_satisfies(&l.engine_version, v)
        {
            changes.push(Change::new(
                "engine_version",
                Some(l.engine_version.clone()),
                Some(v.clone()),
            ));
            kind = kind.max(ActionKind::UpdateInPlace);
            secs += est.rds_version_upgrade;
            modification.engine_version = Some(v.clone());
            if major(&l.engine_version) != major(v) {
                // RDS takes a new major only with AllowMajorVersionUpgrade and, from an
                // instance on a custom group, a group of the new family in the same call
                // (aws/aws-cli#5939): the group's change below goes with the version.
                reasons.push(format!(
                    "a major version upgrade ({} -> {}): ModifyDBInstance with AllowMajorVersionUpgrade{}",
                    major(&l.engine_version),
                    major(v),
                    inst.parameter_group
                        .as_deref()
                        .map(|g| format!(" and the new family's parameter group {g} (a group's family is fixed)"))
                        .unwrap_or_default()
                ));
            }
        }
        if inst.parameter_group.is_some() && l.parameter_group != inst.parameter_group {
            changes.push(Change::new(
                "parameter_group",
                l.parameter_group.clone(),
                inst.parameter_group.clone(),
            ));
            kind = kind.max(ActionKind::UpdateInPlace);
            modification.parameter_group = inst.parameter_group.clone();
        }
        // The group's values must be in effect (ParameterApplyStatus `in-sync`): static ones
        // wait for a reboot, which the group's own action sends when it changes values.
        let group_reboots = p.actions.iter().any(|a| {
            matches!(&a.op, Op::RdsParameterGroupModify { reboot, .. } if reboot.contains(&l.identifier))
        });
        let mut applying = false;
        match l
            .parameter_apply_status
            .as_deref()
            .map(ParameterApplyStatus::parse)
        {
            // An instance still creating or modifying is waited for first (below); the
            // wait reboots it if it comes up pending-reboot.
            Some(ParameterApplyStatus::PendingReboot)
                if !group_reboots && kind != ActionKind::Replace && db_settled(&l.status) =>
            {
                changes.push(Change::new(
                    "parameter_apply_status",
                    Some("pending-reboot".into()),
                    Some("in-sync".into()),
                ));
                kind = kind.max(ActionKind::UpdateInPlace);
                reasons.push("its parameter group's static values take effect only at a reboot (RebootDBInstance)".into());
                secs += est.rds_reboot;
                modification.reboot = true;
            }
            Some(ParameterApplyStatus::Applying) => applying = true,
            _ => {}
        }
        let role = creates::db_role(p.desired, &inst.identifier).map(str::to_string);
        let mut op = Op::RdsModify {
            modification,
            adopt: (!adopt.is_empty()).then(|| l.arn.clone()),
            role: role.clone(),
        };
        if kind == ActionKind::NoOp && applying {
            changes.push(Change::new(
                "parameter_apply_status",
                Some("applying".into()),
                Some("in-sync".into()),
            ));
            kind = ActionKind::UpdateInPlace;
            reasons.push("wait for its parameter group's values to apply".into());
            op = Op::RdsAwait { role: role.clone() };
        }
        // A change in progress (a create or modify of an earlier, interrupted run): wait for
        // it, so the endpoint is known before services need it.
        // storage-optimization follows a storage change for hours, usable: not in progress.
        if kind == ActionKind::NoOp && !db_settled(&l.status) {
            changes.push(Change::new(
                "status",
                Some(l.status.clone()),
                Some("available".into()),
            ));
            kind = ActionKind::UpdateInPlace;
            reasons.push("wait for a change already in progress".into());
            secs = create_secs;
            op = Op::RdsAwait { role: role.clone() };
        }
        // Deleting a writer promotes its read replicas to standalone instances (RDS User
        // Guide, "Working with DB instance read replicas"): a replaced writer takes its
        // readers along, each replaced after it as a replica of the new writer.
        if i == 0 {
            writer_replaced = kind == ActionKind::Replace;
        } else if writer_replaced && kind != ActionKind::Replace {
            kind = ActionKind::Replace;
            reasons.push(format!(
                "its writer {} is replaced: a replica of a deleted writer is promoted to a standalone instance",
                db.writer.identifier
            ));
        }
        if kind == ActionKind::Replace {
            secs = est.rds_delete + create_secs;
            op = Op::Replace {
                delete: Delete::DbInstance {
                    id: inst.identifier.clone(),
                    skip_final_snapshot: inst.skip_final_snapshot,
                },
                create: creates::db_instance(p.desired, inst),
            };
        }
        if kind == ActionKind::NoOp {
            op = Op::NoOp;
        }
        p.push(
            Action::new(id, kind, op)
                .changes(changes)
                .reasons(reasons)
                .estimate(secs)
                .deps(deps),
        );
    }
}

fn major(version: &str) -> &str {
    version.split('.').next().unwrap_or(version)
}

/// The spec's parameter group as it exists: nothing to do, new values (ModifyDBParameterGroup,
/// then a reboot of the instances using it), or only its ownership tags (`--adopt`).
fn existing_parameter_group(
    p: &Planner,
    id: ResourceId,
    group: &crate::model::DbParameterGroup,
    l: &LiveParameterGroup,
) -> Action {
    let adopt = adoption(&l.tags, p.env());
    let mut action = group_update(p, &group.name, l, &group.parameters);
    if adopt.is_empty() {
        return action;
    }
    if action.kind == ActionKind::NoOp {
        return Action::new(
            id,
            ActionKind::UpdateInPlace,
            Op::RdsAdopt { arn: l.arn.clone() },
        )
        .changes(adopt)
        .estimate(1.0);
    }
    if let Op::RdsParameterGroupModify { adopt: tag, .. } = &mut action.op {
        *tag = Some(l.arn.clone());
    }
    let mut changes = adopt;
    changes.extend(action.changes.clone());
    action.changes(changes)
}

/// The env's parameter groups that no spec instance uses any more: the old family's after a
/// major version upgrade, or `<writer>-params` of envctl before groups were named by family.
/// Each is deleted after every instance action (RDS refuses to delete a group in use:
/// InvalidDBParameterGroupState), and only when every live instance on it is moved off it by
/// this plan.
fn plan_superseded_groups(p: &mut Planner) {
    let Some(db) = &p.desired.db else {
        return;
    };
    let wanted = db.parameter_group.as_ref().map(|g| g.name.as_str());
    let desired: BTreeMap<&str, Option<&str>> = std::iter::once(&db.writer)
        .chain(db.readers.iter())
        .map(|i| (i.identifier.as_str(), i.parameter_group.as_deref()))
        .collect();
    let instance_actions: Vec<ResourceId> = p
        .actions
        .iter()
        .filter(|a| matches!(a.id, ResourceId::DbInstance { .. }))
        .map(|a| a.id.clone())
        .collect();
    let mut deletes = Vec::new();
    for g in p.live.db_parameter_groups.values() {
        if Some(g.name.as_str()) == wanted || !owned_by(&g.tags, p.env()) {
            continue;
        }
        let moved_off = p
            .live
            .db_instances
            .values()
            .filter(|i| i.parameter_group.as_deref() == Some(g.name.as_str()))
            .all(|i| {
                desired
                    .get(i.identifier.as_str())
                    .is_some_and(|d| d.is_some_and(|d| d != g.name))
            });
        if !moved_off {
            continue;
        }
        deletes.push(
            Action::new(
                ResourceId::db_parameter_group(&g.name),
                ActionKind::Delete,
                Op::Delete(Delete::DbParameterGroup {
                    name: g.name.clone(),
                }),
            )
            .changes(vec![Change::new("family", Some(g.family.clone()), None)])
            .reason("no instance of the spec uses it any more (a major version upgrade moved them to a group of the new family)")
            .estimate(p.est.rds_parameter_group)
            .deps(instance_actions.clone()),
        );
    }
    p.actions.extend(deletes);
}

/// Owned instances the spec no longer has: after the services that may use them, readers
/// before their writer.
pub(super) fn plan_removed(p: &mut Planner) {
    plan_superseded_groups(p);
    let services = p.changed_services();
    let desired_db: BTreeSet<&str> = p
        .desired
        .db
        .iter()
        .flat_map(|d| std::iter::once(&d.writer).chain(d.readers.iter()))
        .map(|i| i.identifier.as_str())
        .collect();
    let mut deleted: Vec<&LiveDb> = p
        .live
        .db_instances
        .values()
        .filter(|l| !desired_db.contains(l.identifier.as_str()) && owned_by(&l.tags, p.env()))
        .collect();
    deleted.sort_by_key(|l| l.source.is_none()); // readers before writers
    let readers: Vec<ResourceId> = deleted
        .iter()
        .filter(|l| l.source.is_some())
        .map(|l| ResourceId::db_instance(&l.identifier))
        .collect();
    let mut actions = Vec::new();
    for l in deleted {
        let mut deps = services.clone();
        if l.source.is_none() {
            deps.extend(readers.iter().cloned());
        }
        actions.push(
            Action::new(
                ResourceId::db_instance(&l.identifier),
                ActionKind::Delete,
                Op::Delete(Delete::DbInstance {
                    id: l.identifier.clone(),
                    skip_final_snapshot: true,
                }),
            )
            .changes(vec![Change::new("class", Some(l.class.clone()), None)])
            .reason("no longer in the spec")
            .estimate(p.est.rds_delete)
            .deps(deps),
        );
    }
    p.actions.extend(actions);
}

/// The update of an owned group that exists: the parameters the spec sets (ModifyDBParameterGroup)
/// and those set in the group that it no longer sets (ResetDBParameterGroup, to the engine
/// default), then a reboot of the instances using it, writer first (static parameters such
/// as max_connections apply only at a reboot). A no-op when both agree.
fn group_update(
    p: &Planner,
    name: &str,
    live: &LiveParameterGroup,
    desired: &BTreeMap<String, String>,
) -> Action {
    let id = ResourceId::db_parameter_group(name);
    let changes = param_changes(&live.parameters, desired);
    if changes.is_empty() {
        return Action::new(id, ActionKind::NoOp, Op::NoOp);
    }
    let mut users: Vec<&LiveDb> = p
        .live
        .db_instances
        .values()
        .filter(|d| d.parameter_group.as_deref() == Some(name))
        .collect();
    users.sort_by_key(|d| d.source.is_some());
    let reset: Vec<String> = live
        .parameters
        .keys()
        .filter(|k| !desired.contains_key(*k))
        .cloned()
        .collect();
    let secs = p.est.rds_parameter_group + p.est.rds_reboot * users.len() as f64;
    let reason = if reset.is_empty() {
        "ModifyDBParameterGroup, then a reboot of the instances using it: static parameters such as max_connections apply only at a reboot"
    } else {
        "ModifyDBParameterGroup, ResetDBParameterGroup for the parameters the spec no longer sets (back to the engine default), then a reboot of the instances using it: static parameters such as max_connections apply only at a reboot"
    };
    Action::new(
        id,
        ActionKind::UpdateInPlace,
        Op::RdsParameterGroupModify {
            parameters: desired.clone(),
            reset,
            reboot: users.iter().map(|d| d.identifier.clone()).collect(),
            adopt: None,
        },
    )
    .reason(reason)
    .changes(changes)
    .estimate(secs)
}

/// Each parameter the spec sets with a value other than the live one, and each one set in
/// the group that the spec does not set (shown going to the engine default: no value).
fn param_changes(
    live: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
) -> Vec<Change> {
    let set = desired
        .iter()
        .filter(|(k, v)| live.get(*k) != Some(*v))
        .map(|(k, v)| {
            Change::new(
                format!("parameters.{k}"),
                live.get(k).cloned(),
                Some(v.clone()),
            )
        });
    let reset = live
        .iter()
        .filter(|(k, _)| !desired.contains_key(*k))
        .map(|(k, v)| Change::new(format!("parameters.{k}"), Some(v.clone()), None));
    set.chain(reset).collect()
}
