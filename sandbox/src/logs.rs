//! Amazon CloudWatch Logs (awsJson1.1, `X-Amz-Target: Logs_20140328.<Op>`): the log groups
//! envctl creates for its task definitions' awslogs driver (CreateLogGroup,
//! PutRetentionPolicy, DescribeLogGroups, ListTagsForResource, DeleteLogGroup).
//!
//! Which groups exist is the ECS emulation's set (the awslogs driver reads it when a task
//! starts); this module keeps what CloudWatch Logs adds: ARN, creation time and tags.
//! Rules and messages: CloudWatch Logs API Reference, CreateLogGroup / DeleteLogGroup /
//! DescribeLogGroups / ListTagsForResource / PutRetentionPolicy (Errors).

use crate::json_input::opt_str;
use crate::protocol::ApiError;
use crate::state::{Ctx, World};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// DescribeLogGroups' largest page (`limit`, default and maximum 50).
const PAGE: usize = 50;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LogsState {
    groups: BTreeMap<String, GroupMeta>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct GroupMeta {
    created: f64,
    tags: BTreeMap<String, String>,
    /// PutRetentionPolicy's `retentionInDays`; none keeps events forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retention_days: Option<i64>,
}

/// The values `retentionInDays` may take (PutRetentionPolicy, "Possible values").
const RETENTION_DAYS: &[i64] = &[
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
    3288, 3653,
];

fn not_found() -> ApiError {
    ApiError::bad(
        "ResourceNotFoundException",
        "The specified log group does not exist.",
    )
}

/// Log group names: 1-512 characters of letters, digits, `_-/.#` (CreateLogGroup).
fn valid_name(name: &str) -> bool {
    (1..=512).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-/.#".contains(c))
}

pub fn resource_of(input: &Value) -> Option<String> {
    opt_str(input, "logGroupName")
        .or_else(|| opt_str(input, "resourceArn"))
        .or_else(|| opt_str(input, "logGroupNamePrefix"))
        .map(str::to_string)
}

pub fn handle(
    world: &mut World,
    ctx: &Ctx<'_>,
    op: &str,
    input: &Value,
) -> Result<Vec<u8>, ApiError> {
    let out = match op {
        "CreateLogGroup" => create(world, ctx, input),
        "DescribeLogGroups" => describe(world, ctx, input),
        "DeleteLogGroup" => delete(world, input),
        "PutRetentionPolicy" => put_retention(world, input),
        "ListTagsForResource" => list_tags(world, ctx, input),
        _ => Err(ApiError::bad(
            "UnknownOperationException",
            format!("The sandbox does not implement CloudWatch Logs operation {op}"),
        )),
    }?;
    serde_json::to_vec(&out)
        .map_err(|e| ApiError::new(500, "ServiceUnavailableException", e.to_string()))
}

fn group_arn(ctx: &Ctx<'_>, name: &str) -> String {
    ctx.arn("logs", &format!("log-group:{name}"))
}

fn create(world: &mut World, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
    let name = opt_str(input, "logGroupName").unwrap_or("");
    if !valid_name(name) {
        return Err(ApiError::bad(
            "InvalidParameterException",
            format!(
                "1 validation error detected: Value '{name}' at 'logGroupName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_/#A-Za-z0-9]+"
            ),
        ));
    }
    if world.ecs.has_log_group(name) {
        return Err(ApiError::bad(
            "ResourceAlreadyExistsException",
            "The specified log group already exists",
        ));
    }
    let tags = input
        .get("tags")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    world.ecs.create_log_group(name);
    world.logs.groups.insert(
        name.to_string(),
        GroupMeta {
            created: ctx.now,
            tags,
            retention_days: None,
        },
    );
    Ok(json!({}))
}

fn put_retention(world: &mut World, input: &Value) -> Result<Value, ApiError> {
    let name = opt_str(input, "logGroupName").unwrap_or("");
    let days = input.get("retentionInDays").and_then(Value::as_i64);
    let Some(days) = days.filter(|d| RETENTION_DAYS.contains(d)) else {
        let listed: Vec<String> = RETENTION_DAYS.iter().map(i64::to_string).collect();
        return Err(ApiError::bad(
            "InvalidParameterException",
            format!(
                "1 validation error detected: Value '{}' at 'retentionInDays' failed to satisfy constraint: Member must satisfy enum value set: [{}]",
                input
                    .get("retentionInDays")
                    .map(Value::to_string)
                    .unwrap_or_default(),
                listed.join(", ")
            ),
        ));
    };
    if !world.ecs.has_log_group(name) {
        return Err(not_found());
    }
    if let Some(meta) = world.logs.groups.get_mut(name) {
        meta.retention_days = Some(days);
    }
    Ok(json!({}))
}

fn describe(world: &World, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
    let prefix = opt_str(input, "logGroupNamePrefix").unwrap_or("");
    let limit = input
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(PAGE, |l| (l as usize).clamp(1, PAGE));
    let after = opt_str(input, "nextToken").unwrap_or("");
    let names: Vec<String> = world
        .ecs
        .log_group_names()
        .filter(|n| n.starts_with(prefix) && n.as_str() > after)
        .collect();
    let page: Vec<Value> = names
        .iter()
        .take(limit)
        .map(|n| {
            let meta = world.logs.groups.get(n);
            let created = meta.map_or(0.0, |g| g.created);
            let arn = group_arn(ctx, n);
            let mut group = json!({
                "logGroupName": n,
                // Milliseconds since the epoch; `arn` ends in `:*`, `logGroupArn` does not.
                "creationTime": (created * 1000.0) as i64,
                "arn": format!("{arn}:*"),
                "logGroupArn": arn,
                "storedBytes": 0,
            });
            if let Some(days) = meta.and_then(|g| g.retention_days) {
                group["retentionInDays"] = json!(days);
            }
            group
        })
        .collect();
    let mut out = json!({ "logGroups": page });
    if names.len() > limit {
        out["nextToken"] = json!(names[limit - 1]);
    }
    Ok(out)
}

fn delete(world: &mut World, input: &Value) -> Result<Value, ApiError> {
    let name = opt_str(input, "logGroupName").unwrap_or("");
    if !world.ecs.delete_log_group(name) {
        return Err(not_found());
    }
    world.logs.groups.remove(name);
    Ok(json!({}))
}

fn list_tags(world: &World, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
    let arn = opt_str(input, "resourceArn").unwrap_or("");
    let prefix = group_arn(ctx, "");
    let name = arn
        .strip_prefix(&prefix)
        .map(|n| n.strip_suffix(":*").unwrap_or(n))
        .ok_or_else(|| {
            ApiError::bad(
                "InvalidParameterException",
                format!("Invalid resource ARN: {arn}"),
            )
        })?;
    if !world.ecs.has_log_group(name) {
        return Err(not_found());
    }
    let tags = world
        .logs
        .groups
        .get(name)
        .map(|g| g.tags.clone())
        .unwrap_or_default();
    Ok(json!({ "tags": tags }))
}
