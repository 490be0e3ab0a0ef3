//! Secrets Manager: the secret envctl keeps a writer's master credentials in (a JSON document
//! with `username` and `password`, the shape RDS's own managed secrets have), so read
//! replicas work (RDS refuses a replica of a writer with `ManageMasterUserPassword`) and the
//! password never passes through envctl's output, files or plans.
//!
//! The password exists in envctl's memory only between GetSecretValue and CreateDBInstance,
//! as a [`MasterPassword`], whose `Debug` does not show it.
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::SecretsManagerOp;
use std::fmt;

use aws_sdk_secretsmanager::Client;
use aws_sdk_secretsmanager::types::Tag;

use super::error::AwsError;
use crate::model::live::{LiveSecret, Tags};

/// A generated master password. Never printed: `Debug` and `Display` are masked.
pub struct MasterPassword(String);

impl MasterPassword {
    /// The value, for the one request that needs it (CreateDBInstance).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for MasterPassword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterPassword(***)")
    }
}

/// RDS refuses `/`, `'`, `"`, `@` and space in a master password (CreateDBInstance,
/// MasterUserPassword); 32 letters, digits and the other punctuation are far past its minimum.
const EXCLUDED: &str = "/'\"@ \\`";
const LENGTH: i64 = 32;

fn sdk_tags(tags: &Tags) -> Vec<Tag> {
    tags.iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect()
}

/// The secret by name, `None` when it does not exist (ResourceNotFoundException). A secret
/// scheduled for deletion is reported with `deleting`.
pub async fn describe(c: &Client, name: &str) -> Result<Option<LiveSecret>, AwsError> {
    match c.describe_secret().secret_id(name).send().await {
        Ok(out) => Ok(Some(LiveSecret {
            name: out.name().unwrap_or(name).to_string(),
            arn: out.arn().unwrap_or_default().to_string(),
            tags: out
                .tags()
                .iter()
                .filter_map(|t| Some((t.key()?.to_string(), t.value()?.to_string())))
                .collect(),
            deleting: out.deleted_date().is_some(),
        })),
        Err(e) => {
            let err = AwsError::from_sdk(SecretsManagerOp::DescribeSecret, name, e);
            if err.is_code(ErrorCode::ResourceNotFoundException) {
                Ok(None)
            } else {
                Err(err)
            }
        }
    }
}

/// A password Secrets Manager generates (GetRandomPassword), so it is made by the service
/// that keeps it, not by envctl's own randomness.
pub async fn random_password(c: &Client, name: &str) -> Result<MasterPassword, AwsError> {
    let random = c
        .get_random_password()
        .password_length(LENGTH)
        .exclude_characters(EXCLUDED)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(SecretsManagerOp::GetRandomPassword, name, e))?;
    random
        .random_password()
        .map(|p| MasterPassword(p.to_string()))
        .ok_or_else(|| {
            AwsError::missing(SecretsManagerOp::GetRandomPassword, name, "RandomPassword")
        })
}

/// Creates the secret with `password`. Returns its ARN. `ResourceExistsException` is
/// returned as is: the caller decides by the secret's tags whether an earlier attempt made it.
pub async fn create_master_secret(
    c: &Client,
    name: &str,
    username: &str,
    password: &MasterPassword,
    description: &str,
    tags: &Tags,
) -> Result<String, AwsError> {
    let document =
        serde_json::json!({ "username": username, "password": password.expose() }).to_string();
    let out = c
        .create_secret()
        .name(name)
        .description(description)
        .secret_string(document)
        .set_tags(Some(sdk_tags(tags)))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(SecretsManagerOp::CreateSecret, name, e))?;
    out.arn()
        .map(str::to_string)
        .ok_or_else(|| AwsError::missing(SecretsManagerOp::CreateSecret, name, "ARN"))
}

/// The `password` key of the secret's current value.
pub async fn master_password(c: &Client, arn: &str) -> Result<MasterPassword, AwsError> {
    let out = c
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(SecretsManagerOp::GetSecretValue, arn, e))?;
    out.secret_string()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .and_then(|v| v.get("password")?.as_str().map(str::to_string))
        .map(MasterPassword)
        .ok_or_else(|| {
            AwsError::missing(SecretsManagerOp::GetSecretValue, arn, "JSON `password` key")
        })
}

/// Deletes the secret now (`ForceDeleteWithoutRecovery`): a scheduled deletion keeps the
/// name for 7-30 days, and the env's next apply could not create its secret again. A secret
/// already gone counts as deleted.
pub async fn delete(c: &Client, arn: &str) -> Result<(), AwsError> {
    match c
        .delete_secret()
        .secret_id(arn)
        .force_delete_without_recovery(true)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) => {
            let err = AwsError::from_sdk(SecretsManagerOp::DeleteSecret, arn, e);
            if err.is_code(ErrorCode::ResourceNotFoundException) {
                Ok(())
            } else {
                Err(err)
            }
        }
    }
}

/// Every secret tagged `envctl:tool` (ListSecrets with a `tag-key` filter, paged), with its
/// tags: what gc judges. Secrets scheduled for deletion are left out (they go by themselves).
pub async fn list_envctls(c: &Client) -> Result<Vec<LiveSecret>, AwsError> {
    let filter = aws_sdk_secretsmanager::types::Filter::builder()
        .key(aws_sdk_secretsmanager::types::FilterNameStringType::TagKey)
        .values(crate::model::tag::TOOL)
        .build();
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = c
            .list_secrets()
            .filters(filter.clone())
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(SecretsManagerOp::ListSecrets, "*", e))?;
        for s in page.secret_list() {
            let (Some(name), Some(arn)) = (s.name(), s.arn()) else {
                continue;
            };
            out.push(LiveSecret {
                name: name.to_string(),
                arn: arn.to_string(),
                tags: s
                    .tags()
                    .iter()
                    .filter_map(|t| Some((t.key()?.to_string(), t.value()?.to_string())))
                    .collect(),
                deleting: s.deleted_date().is_some(),
            });
        }
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(out);
        }
    }
}
