//! RDS: instances, read replicas and parameter groups, translated between the model and the
//! SDK.
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::RdsOp;
use std::collections::BTreeMap;

use aws_sdk_rds::Client;
use aws_sdk_rds::types::{ApplyMethod, Parameter, Tag};

use super::error::AwsError;
use crate::model::live::{LiveDb, Tags};
use crate::model::requests::DbModification;
use crate::model::requests::{CreateDbInstance, CreateDbParameterGroup, CreateDbSubnetGroup};

fn tags_of(tags: &[Tag]) -> Tags {
    tags.iter()
        .filter_map(|t| Some((t.key()?.to_string(), t.value()?.to_string())))
        .collect()
}

fn sdk_tags(tags: &Tags) -> Vec<Tag> {
    tags.iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect()
}

fn live_db(d: &aws_sdk_rds::types::DbInstance) -> Option<LiveDb> {
    Some(LiveDb {
        identifier: d.db_instance_identifier()?.to_string(),
        arn: d.db_instance_arn().unwrap_or_default().to_string(),
        status: d.db_instance_status().unwrap_or_default().to_string(),
        class: d.db_instance_class().unwrap_or_default().to_string(),
        pending_class: d
            .pending_modified_values()
            .and_then(|p| p.db_instance_class())
            .map(str::to_string),
        engine: d.engine().unwrap_or_default().to_string(),
        engine_version: d.engine_version().unwrap_or_default().to_string(),
        storage_gb: d.allocated_storage().unwrap_or(0).max(0) as u32,
        source: d
            .read_replica_source_db_instance_identifier()
            .map(str::to_string),
        address: d.endpoint().and_then(|e| e.address()).map(str::to_string),
        port: d
            .endpoint()
            .and_then(|e| e.port())
            .map(|p| p.clamp(0, 65535) as u16),
        parameter_group: d
            .db_parameter_groups()
            .first()
            .and_then(|g| g.db_parameter_group_name())
            .map(str::to_string),
        tags: tags_of(d.tag_list()),
        master_secret_arn: d
            .master_user_secret()
            .and_then(|m| m.secret_arn())
            .map(str::to_string),
        parameter_apply_status: d
            .db_parameter_groups()
            .first()
            .and_then(|g| g.parameter_apply_status())
            .map(str::to_string),
    })
}

/// Every DB instance of the account and Region (one call per 100).
pub async fn describe_instances(c: &Client) -> Result<Vec<LiveDb>, AwsError> {
    let mut out = Vec::new();
    let mut marker = None;
    loop {
        let page = c
            .describe_db_instances()
            .max_records(100)
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(RdsOp::DescribeDBInstances, "*", e))?;
        out.extend(page.db_instances().iter().filter_map(live_db));
        marker = page.marker().map(str::to_string);
        if marker.is_none() {
            return Ok(out);
        }
    }
}

pub async fn describe_instance(c: &Client, id: &str) -> Result<Option<LiveDb>, AwsError> {
    match c
        .describe_db_instances()
        .db_instance_identifier(id)
        .send()
        .await
    {
        Ok(out) => Ok(out.db_instances().iter().find_map(live_db)),
        Err(e) => {
            let err = AwsError::from_sdk(RdsOp::DescribeDBInstances, id, e);
            if err.is_code(ErrorCode::DBInstanceNotFound) {
                Ok(None)
            } else {
                Err(err)
            }
        }
    }
}

/// The user-set parameters of a group, or `None` if the group does not exist.
pub async fn parameters(
    c: &Client,
    group: &str,
) -> Result<Option<BTreeMap<String, String>>, AwsError> {
    let mut out = BTreeMap::new();
    let mut marker = None;
    loop {
        let page = match c
            .describe_db_parameters()
            .db_parameter_group_name(group)
            .source("user")
            .set_marker(marker)
            .send()
            .await
        {
            Ok(p) => p,
            Err(e) => {
                let err = AwsError::from_sdk(RdsOp::DescribeDBParameters, group, e);
                return if err.is_code(ErrorCode::DBParameterGroupNotFound) {
                    Ok(None)
                } else {
                    Err(err)
                };
            }
        };
        for p in page.parameters() {
            if let (Some(name), Some(value)) = (p.parameter_name(), p.parameter_value()) {
                out.insert(name.to_string(), value.to_string());
            }
        }
        marker = page.marker().map(str::to_string);
        if marker.is_none() {
            return Ok(Some(out));
        }
    }
}

pub async fn list_tags(c: &Client, arn: &str) -> Result<Tags, AwsError> {
    let out = c
        .list_tags_for_resource()
        .resource_name(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::ListTagsForResource, arn, e))?;
    Ok(tags_of(out.tag_list()))
}

pub async fn create_parameter_group(
    c: &Client,
    req: &CreateDbParameterGroup,
) -> Result<(), AwsError> {
    c.create_db_parameter_group()
        .db_parameter_group_name(&req.db_parameter_group_name)
        .db_parameter_group_family(&req.db_parameter_group_family)
        .description(&req.description)
        .set_tags(Some(
            req.tags
                .iter()
                .map(|t| Tag::builder().key(&t.key).value(&t.value).build())
                .collect(),
        ))
        .send()
        .await
        .map_err(|e| {
            AwsError::from_sdk(
                RdsOp::CreateDBParameterGroup,
                &req.db_parameter_group_name,
                e,
            )
        })?;
    Ok(())
}

/// Sets parameters, 20 per call as RDS requires. `pending-reboot` is accepted for static and
/// dynamic parameters alike (max_connections is static).
pub async fn modify_parameter_group(
    c: &Client,
    group: &str,
    parameters: &BTreeMap<String, String>,
) -> Result<(), AwsError> {
    let all: Vec<Parameter> = parameters
        .iter()
        .map(|(k, v)| {
            Parameter::builder()
                .parameter_name(k)
                .parameter_value(v)
                .apply_method(ApplyMethod::PendingReboot)
                .build()
        })
        .collect();
    for chunk in all.chunks(20) {
        c.modify_db_parameter_group()
            .db_parameter_group_name(group)
            .set_parameters(Some(chunk.to_vec()))
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(RdsOp::ModifyDBParameterGroup, group, e))?;
    }
    Ok(())
}

/// ResetDBParameterGroup of `names`, 20 per call (the request's limit, as for Modify):
/// each goes back to the engine default, `pending-reboot` like every value envctl sets
/// (valid for static and dynamic parameters alike).
pub async fn reset_parameters(c: &Client, group: &str, names: &[String]) -> Result<(), AwsError> {
    let all: Vec<Parameter> = names
        .iter()
        .map(|k| {
            Parameter::builder()
                .parameter_name(k)
                .apply_method(ApplyMethod::PendingReboot)
                .build()
        })
        .collect();
    for chunk in all.chunks(20) {
        c.reset_db_parameter_group()
            .db_parameter_group_name(group)
            .reset_all_parameters(false)
            .set_parameters(Some(chunk.to_vec()))
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(RdsOp::ResetDBParameterGroup, group, e))?;
    }
    Ok(())
}

/// Creates a writer (with `password`, read from its secret) or a read replica (which takes
/// no password: it is the writer's, by physical replication).
pub async fn create_instance(
    c: &Client,
    req: &CreateDbInstance,
    tags: &Tags,
    password: Option<&super::secrets::MasterPassword>,
) -> Result<(), AwsError> {
    let id = &req.db_instance_identifier;
    match &req.source_db_instance_identifier {
        Some(source) => {
            c.create_db_instance_read_replica()
                .db_instance_identifier(id)
                .source_db_instance_identifier(source)
                .db_instance_class(&req.db_instance_class)
                .set_db_parameter_group_name(req.db_parameter_group_name.clone())
                .set_db_subnet_group_name(req.db_subnet_group_name.clone())
                .publicly_accessible(req.publicly_accessible)
                .set_vpc_security_group_ids(Some(req.vpc_security_group_ids.clone()))
                .set_tags(Some(sdk_tags(tags)))
                .send()
                .await
                .map_err(|e| AwsError::from_sdk(RdsOp::CreateDBInstanceReadReplica, id, e))?;
        }
        None => {
            c.create_db_instance()
                .db_instance_identifier(id)
                .db_instance_class(&req.db_instance_class)
                .set_engine(req.engine.clone())
                .set_engine_version(req.engine_version.clone())
                .set_allocated_storage(req.allocated_storage.map(|g| g as i32))
                .set_db_parameter_group_name(req.db_parameter_group_name.clone())
                .set_master_user_password(password.map(|p| p.expose().to_string()))
                .set_master_username(req.master_username.clone())
                .set_db_name(req.db_name.clone())
                .set_db_subnet_group_name(req.db_subnet_group_name.clone())
                .publicly_accessible(req.publicly_accessible)
                .set_vpc_security_group_ids(Some(req.vpc_security_group_ids.clone()))
                .set_tags(Some(sdk_tags(tags)))
                .send()
                .await
                .map_err(|e| AwsError::from_sdk(RdsOp::CreateDBInstance, id, e))?;
        }
    }
    Ok(())
}

/// Creates the DB subnet group envctl owns. `DBSubnetGroupAlreadyExists` is returned as is:
/// the caller decides by the group's tags whether it is the one an earlier attempt made.
pub async fn create_subnet_group(
    c: &Client,
    req: &CreateDbSubnetGroup,
    tags: &Tags,
) -> Result<(), AwsError> {
    let name = &req.db_subnet_group_name;
    c.create_db_subnet_group()
        .db_subnet_group_name(name)
        .db_subnet_group_description(&req.db_subnet_group_description)
        .set_subnet_ids(Some(req.subnet_ids.clone()))
        .set_tags(Some(sdk_tags(tags)))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::CreateDBSubnetGroup, name, e))?;
    Ok(())
}

/// Whether a DB subnet group exists (DBSubnetGroupNotFoundFault: it does not).
pub async fn subnet_group_exists(c: &Client, name: &str) -> Result<bool, AwsError> {
    match c
        .describe_db_subnet_groups()
        .db_subnet_group_name(name)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::DescribeDBSubnetGroups, name, e))
    {
        Ok(_) => Ok(true),
        Err(e) if e.is_code(ErrorCode::DBSubnetGroupNotFoundFault) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Deletes an owned DB subnet group; RDS refuses while an instance still uses it
/// (InvalidDBSubnetGroupStateFault), so callers delete it after the writer is gone.
pub async fn delete_subnet_group(c: &Client, name: &str) -> Result<(), AwsError> {
    match c
        .delete_db_subnet_group()
        .db_subnet_group_name(name)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::DeleteDBSubnetGroup, name, e))
    {
        Ok(_) => Ok(()),
        Err(e) if e.is_code(ErrorCode::DBSubnetGroupNotFoundFault) => Ok(()),
        Err(e) => Err(e),
    }
}

pub async fn modify_instance(c: &Client, id: &str, m: &DbModification) -> Result<(), AwsError> {
    c.modify_db_instance()
        .db_instance_identifier(id)
        .set_db_instance_class(m.class.clone())
        .set_allocated_storage(m.storage_gb.map(|g| g as i32))
        .set_engine_version(m.engine_version.clone())
        .set_db_parameter_group_name(m.parameter_group.clone())
        .set_allow_major_version_upgrade(m.engine_version.as_ref().map(|_| true))
        // Test environments: apply now, not in the next maintenance window.
        .apply_immediately(true)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::ModifyDBInstance, id, e))?;
    Ok(())
}

/// DeleteDBInstance; with `final_snapshot` RDS first takes a snapshot of that identifier,
/// without one it skips the final snapshot.
pub async fn delete_instance(
    c: &Client,
    id: &str,
    final_snapshot: Option<&str>,
) -> Result<(), AwsError> {
    c.delete_db_instance()
        .db_instance_identifier(id)
        .skip_final_snapshot(final_snapshot.is_none())
        .set_final_db_snapshot_identifier(final_snapshot.map(str::to_string))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::DeleteDBInstance, id, e))?;
    Ok(())
}

pub async fn delete_parameter_group(c: &Client, name: &str) -> Result<(), AwsError> {
    c.delete_db_parameter_group()
        .db_parameter_group_name(name)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::DeleteDBParameterGroup, name, e))?;
    Ok(())
}

/// Reboots an instance: how static parameters (max_connections) take effect.
pub async fn reboot_instance(c: &Client, id: &str) -> Result<(), AwsError> {
    c.reboot_db_instance()
        .db_instance_identifier(id)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::RebootDBInstance, id, e))?;
    Ok(())
}

pub async fn add_tags(c: &Client, arn: &str, tags: &Tags) -> Result<(), AwsError> {
    c.add_tags_to_resource()
        .resource_name(arn)
        .set_tags(Some(sdk_tags(tags)))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::AddTagsToResource, arn, e))?;
    Ok(())
}

/// Stops an available instance (`envctl park`); RDS starts it again after seven days.
pub async fn stop_instance(c: &Client, id: &str) -> Result<(), AwsError> {
    c.stop_db_instance()
        .db_instance_identifier(id)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::StopDBInstance, id, e))?;
    Ok(())
}

/// Starts a stopped instance (`envctl unpark`).
pub async fn start_instance(c: &Client, id: &str) -> Result<(), AwsError> {
    c.start_db_instance()
        .db_instance_identifier(id)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::StartDBInstance, id, e))?;
    Ok(())
}

/// Every DB parameter group of the account and Region as (name, ARN), every page. The list
/// carries no tags: ownership is read per group with [`list_tags`].
pub async fn list_parameter_groups(c: &Client) -> Result<Vec<(String, String)>, AwsError> {
    let mut out = Vec::new();
    let mut marker = None;
    loop {
        let page = c
            .describe_db_parameter_groups()
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(RdsOp::DescribeDBParameterGroups, "*", e))?;
        out.extend(page.db_parameter_groups().iter().filter_map(|g| {
            Some((
                g.db_parameter_group_name()?.to_string(),
                g.db_parameter_group_arn()?.to_string(),
            ))
        }));
        marker = page.marker().map(str::to_string);
        if marker.is_none() {
            return Ok(out);
        }
    }
}

/// Every DB subnet group of the account and Region as (name, ARN), every page.
/// DescribeDBSubnetGroups returns no tags (docs/aws-behaviour.md, "DB subnet groups are
/// listed without tags"): ownership is read per group with [`list_tags`].
pub async fn list_subnet_groups(c: &Client) -> Result<Vec<(String, String)>, AwsError> {
    let mut out = Vec::new();
    let mut marker = None;
    loop {
        let page = c
            .describe_db_subnet_groups()
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(RdsOp::DescribeDBSubnetGroups, "*", e))?;
        out.extend(page.db_subnet_groups().iter().filter_map(|g| {
            Some((
                g.db_subnet_group_name()?.to_string(),
                g.db_subnet_group_arn()?.to_string(),
            ))
        }));
        marker = page.marker().map(str::to_string);
        if marker.is_none() {
            return Ok(out);
        }
    }
}

/// A DB parameter group as DescribeDBParameterGroups describes it: (ARN, family); `None`
/// when no group has the name. The family is the group's own, fixed at its creation.
pub async fn describe_parameter_group(
    c: &Client,
    name: &str,
) -> Result<Option<(String, String)>, AwsError> {
    let page = match c
        .describe_db_parameter_groups()
        .db_parameter_group_name(name)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::DescribeDBParameterGroups, name, e))
    {
        Ok(page) => page,
        Err(e) if e.is_code(ErrorCode::DBParameterGroupNotFound) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(page.db_parameter_groups().first().and_then(|g| {
        Some((
            g.db_parameter_group_arn()?.to_string(),
            g.db_parameter_group_family()?.to_string(),
        ))
    }))
}

/// The tags of a DB parameter group (DescribeDBParameterGroups for its ARN, then
/// ListTagsForResource); `None` when no group has the name.
pub async fn parameter_group_tags(c: &Client, name: &str) -> Result<Option<Tags>, AwsError> {
    match describe_parameter_group(c, name).await? {
        Some((arn, _)) => Ok(Some(list_tags(c, &arn).await?)),
        None => Ok(None),
    }
}

/// The tags of a DB subnet group (DescribeDBSubnetGroups for its ARN, then
/// ListTagsForResource); `None` when no group has the name.
pub async fn subnet_group_tags(c: &Client, name: &str) -> Result<Option<Tags>, AwsError> {
    let page = match c
        .describe_db_subnet_groups()
        .db_subnet_group_name(name)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::DescribeDBSubnetGroups, name, e))
    {
        Ok(page) => page,
        Err(e) if e.is_code(ErrorCode::DBSubnetGroupNotFoundFault) => return Ok(None),
        Err(e) => return Err(e),
    };
    match page
        .db_subnet_groups()
        .first()
        .and_then(|g| g.db_subnet_group_arn())
    {
        Some(arn) => Ok(Some(list_tags(c, arn).await?)),
        None => Ok(None),
    }
}
/// DescribeDBEngineVersions for one engine, every page: (version, parameter group family).
pub async fn describe_engine_versions(
    c: &Client,
    engine: &str,
    default_only: bool,
) -> Result<Vec<(String, String)>, AwsError> {
    let mut out = Vec::new();
    let mut marker = None;
    loop {
        let page = c
            .describe_db_engine_versions()
            .engine(engine)
            .default_only(default_only)
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(RdsOp::DescribeDBEngineVersions, engine, e))?;
        out.extend(page.db_engine_versions().iter().filter_map(|v| {
            Some((
                v.engine_version()?.to_string(),
                v.db_parameter_group_family()
                    .unwrap_or_default()
                    .to_string(),
            ))
        }));
        marker = page.marker().map(str::to_string);
        if marker.is_none() {
            return Ok(out);
        }
    }
}

/// DescribeOrderableDBInstanceOptions narrowed to one class: any row means orderable.
pub async fn class_orderable(
    c: &Client,
    engine: &str,
    version: &str,
    class: &str,
) -> Result<bool, AwsError> {
    let page = c
        .describe_orderable_db_instance_options()
        .engine(engine)
        .engine_version(version)
        .db_instance_class(class)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::DescribeOrderableDBInstanceOptions, class, e))?;
    Ok(!page.orderable_db_instance_options().is_empty())
}
/// The VPC security groups of a DB instance.
pub async fn instance_security_groups(c: &Client, id: &str) -> Result<Vec<String>, AwsError> {
    let out = c
        .describe_db_instances()
        .db_instance_identifier(id)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(RdsOp::DescribeDBInstances, id, e))?;
    Ok(out
        .db_instances()
        .iter()
        .flat_map(|d| d.vpc_security_groups())
        .filter_map(|g| g.vpc_security_group_id().map(str::to_string))
        .collect())
}
