//! CloudWatch Logs: the log groups the task definitions' awslogs driver writes to (the
//! services' and the load engines'), which envctl creates (owned, tagged, with a retention)
//! and deletes with the env, so the execution role needs no logs:CreateLogGroup.
use aws_sdk_cloudwatchlogs::Client;
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::LogsOp;

use super::error::AwsError;
use crate::model::live::{LiveLogGroup, Tags};

/// The group by exact name (DescribeLogGroups matches a prefix), with its tags
/// (DescribeLogGroups returns none: ListTagsForResource on `logGroupArn`); `None` when it
/// does not exist.
pub async fn describe(c: &Client, name: &str) -> Result<Option<LiveLogGroup>, AwsError> {
    let mut token = None;
    loop {
        let page = c
            .describe_log_groups()
            .log_group_name_prefix(name)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(LogsOp::DescribeLogGroups, name, e))?;
        if let Some(g) = page
            .log_groups()
            .iter()
            .find(|g| g.log_group_name() == Some(name))
        {
            let arn = match (g.log_group_arn(), g.arn()) {
                (Some(a), _) => a.to_string(),
                (None, Some(a)) => a.strip_suffix(":*").unwrap_or(a).to_string(),
                (None, None) => {
                    return Err(AwsError::missing(
                        LogsOp::DescribeLogGroups,
                        name,
                        "logGroupArn",
                    ));
                }
            };
            return Ok(Some(LiveLogGroup {
                name: name.to_string(),
                arn,
                tags: Tags::new(),
            }));
        }
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(None);
        }
    }
}

pub async fn tags(c: &Client, arn: &str) -> Result<Tags, AwsError> {
    let out = c
        .list_tags_for_resource()
        .resource_arn(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(LogsOp::ListTagsForResource, arn, e))?;
    Ok(out
        .tags()
        .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default())
}

/// Creates the group with the env's tags. `ResourceAlreadyExistsException` is returned as
/// is: the caller decides by its tags whether an earlier attempt made it.
pub async fn create(c: &Client, name: &str, tags: &Tags) -> Result<(), AwsError> {
    c.create_log_group()
        .log_group_name(name)
        .set_tags(Some(tags.clone().into_iter().collect()))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(LogsOp::CreateLogGroup, name, e))?;
    Ok(())
}

/// Sets how long the group keeps its events (`retentionInDays`, one of the values
/// CloudWatch Logs accepts; the spec checks it).
pub async fn put_retention(c: &Client, name: &str, days: u32) -> Result<(), AwsError> {
    let days = i32::try_from(days).map_err(|_| {
        AwsError::local(
            LogsOp::PutRetentionPolicy.as_str(),
            name,
            format!("a retention of {days} days is not one CloudWatch Logs accepts"),
        )
    })?;
    c.put_retention_policy()
        .log_group_name(name)
        .retention_in_days(days)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(LogsOp::PutRetentionPolicy, name, e))?;
    Ok(())
}

/// Deletes the group and its events; one already gone counts as deleted.
pub async fn delete(c: &Client, name: &str) -> Result<(), AwsError> {
    match c.delete_log_group().log_group_name(name).send().await {
        Ok(_) => Ok(()),
        Err(e) => {
            let err = AwsError::from_sdk(LogsOp::DeleteLogGroup, name, e);
            if err.is_code(ErrorCode::ResourceNotFoundException) {
                Ok(())
            } else {
                Err(err)
            }
        }
    }
}

/// Every log group of the account and Region (DescribeLogGroups, paged), without tags.
pub async fn list_all(c: &Client) -> Result<Vec<LiveLogGroup>, AwsError> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = c
            .describe_log_groups()
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(LogsOp::DescribeLogGroups, "*", e))?;
        for g in page.log_groups() {
            let Some(name) = g.log_group_name() else {
                continue;
            };
            let arn = match (g.log_group_arn(), g.arn()) {
                (Some(a), _) => a.to_string(),
                (None, Some(a)) => a.strip_suffix(":*").unwrap_or(a).to_string(),
                (None, None) => continue,
            };
            out.push(LiveLogGroup {
                name: name.to_string(),
                arn,
                tags: Tags::new(),
            });
        }
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(out);
        }
    }
}
