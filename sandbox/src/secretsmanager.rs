//! AWS Secrets Manager (awsJson1.1, `X-Amz-Target: secretsmanager.<Op>`): the calls envctl
//! makes for the DB master credentials it keeps (GetRandomPassword, CreateSecret,
//! DescribeSecret, GetSecretValue, DeleteSecret, and ListSecrets for gc).
//!
//! Rules and messages follow the Secrets Manager API Reference (CreateSecret, DeleteSecret,
//! GetSecretValue, GetRandomPassword; Errors). A deletion without
//! `ForceDeleteWithoutRecovery` schedules the secret (default recovery window 30 days): it
//! keeps its name, refuses GetSecretValue, and a CreateSecret of that name fails; a forced
//! deletion (`ForceDeleteWithoutRecovery`) does the same for `secret_force_delete` of the
//! duration profile, the background deletion's "short delay".
//!
//! Deviation from AWS: GetRandomPassword's output is derived from a counter (deterministic
//! runs); the sandbox's secrets are not secret.

use crate::faults::hash_str;
use crate::json_input::opt_str;
use crate::protocol::ApiError;
use crate::state::{Ctx, World};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The default and bounds of a recovery window (DeleteSecret, RecoveryWindowInDays).
const DEFAULT_RECOVERY_DAYS: i64 = 30;
const RECOVERY_DAYS: std::ops::RangeInclusive<i64> = 7..=30;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SecretsState {
    secrets: BTreeMap<String, Secret>,
    counter: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Secret {
    name: String,
    arn: String,
    description: Option<String>,
    value: Option<String>,
    tags: Vec<(String, String)>,
    created: f64,
    /// When a scheduled deletion happens (DeleteSecret without ForceDeleteWithoutRecovery),
    /// or when a forced one's background deletion ends.
    deletion_date: Option<f64>,
    /// Deleted with ForceDeleteWithoutRecovery: no longer found by any read (as moto and
    /// terraform-provider-aws's `findSecretByID` see it), while its name stays held until
    /// `deletion_date`.
    #[serde(default)]
    forced: bool,
}

fn not_found() -> ApiError {
    ApiError::bad(
        "ResourceNotFoundException",
        "Secrets Manager can't find the specified secret.",
    )
}

fn invalid_parameter(message: impl Into<String>) -> ApiError {
    ApiError::bad("InvalidParameterException", message)
}

fn required<'a>(input: &'a Value, key: &str) -> Result<&'a str, ApiError> {
    opt_str(input, key)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::bad(
                "ValidationException",
                format!("1 validation error detected: Value null at '{key}' failed to satisfy constraint: Member must not be null"),
            )
        })
}

/// Secret names: 1-512 characters of ASCII letters, digits and `/_+=.@-` (CreateSecret, Name).
fn valid_name(name: &str) -> bool {
    (1..=512).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/_+=.@-".contains(c))
}

pub fn resource_of(input: &Value) -> Option<String> {
    opt_str(input, "SecretId")
        .or_else(|| opt_str(input, "Name"))
        .map(str::to_string)
}

pub fn handle(
    world: &mut World,
    ctx: &Ctx<'_>,
    op: &str,
    input: &Value,
) -> Result<Vec<u8>, ApiError> {
    let state = &mut world.secrets;
    state.purge(ctx.now);
    let out = match op {
        "GetRandomPassword" => state.random_password(input),
        "CreateSecret" => state.create(ctx, input),
        "DescribeSecret" => state.describe(input),
        "GetSecretValue" => state.get_value(input),
        "DeleteSecret" => state.delete(ctx, input),
        "ListSecrets" => state.list(input),
        _ => Err(ApiError::bad(
            "UnknownOperationException",
            format!("The sandbox does not implement Secrets Manager operation {op}"),
        )),
    }?;
    serde_json::to_vec(&out).map_err(|e| ApiError::new(500, "InternalServiceError", e.to_string()))
}

impl SecretsState {
    /// A scheduled deletion takes effect once its date passes.
    fn purge(&mut self, now: f64) {
        self.secrets
            .retain(|_, s| s.deletion_date.is_none_or(|d| d > now));
    }

    /// By name, full ARN, or the ARN without its random suffix (SecretId).
    fn find(&self, id: &str) -> Option<&Secret> {
        self.secrets
            .get(id)
            .or_else(|| {
                self.secrets
                    .values()
                    .find(|s| s.arn == id || s.arn.rsplit_once('-').is_some_and(|(p, _)| p == id))
            })
            .filter(|s| !s.forced)
    }

    fn random_password(&mut self, input: &Value) -> Result<Value, ApiError> {
        let length = input
            .get("PasswordLength")
            .and_then(Value::as_i64)
            .unwrap_or(32);
        if !(1..=4096).contains(&length) {
            return Err(invalid_parameter(
                "PasswordLength must be between 1 and 4096.",
            ));
        }
        let flag = |k: &str| input.get(k).and_then(Value::as_bool).unwrap_or(false);
        let excluded = opt_str(input, "ExcludeCharacters").unwrap_or("");
        let mut alphabet: Vec<char> = Vec::new();
        if !flag("ExcludeLowercase") {
            alphabet.extend('a'..='z');
        }
        if !flag("ExcludeUppercase") {
            alphabet.extend('A'..='Z');
        }
        if !flag("ExcludeNumbers") {
            alphabet.extend('0'..='9');
        }
        if !flag("ExcludePunctuation") {
            alphabet.extend("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".chars());
        }
        if flag("IncludeSpace") {
            alphabet.push(' ');
        }
        alphabet.retain(|c| !excluded.contains(*c));
        if alphabet.is_empty() {
            return Err(invalid_parameter(
                "The password cannot be generated: every character type is excluded.",
            ));
        }
        self.counter += 1;
        let n = self.counter;
        let password: String = (0..length)
            .map(|i| {
                let h = hash_str(n, &["secretsmanager-password", &i.to_string()]);
                alphabet[(h % alphabet.len() as u64) as usize]
            })
            .collect();
        Ok(json!({ "RandomPassword": password }))
    }

    fn create(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let name = required(input, "Name")?;
        if !valid_name(name) {
            return Err(invalid_parameter(format!(
                "Invalid name. Must be a valid name containing alphanumeric characters, or any of the following: -/_+=.@! ({name})"
            )));
        }
        if input.get("SecretString").is_some() && input.get("SecretBinary").is_some() {
            return Err(invalid_parameter(
                "You can't specify both a binary secret value and a string secret value in the same secret.",
            ));
        }
        if let Some(existing) = self.secrets.get(name) {
            return Err(if existing.deletion_date.is_some() {
                ApiError::bad(
                    "InvalidRequestException",
                    "You can't create this secret because a secret with this name is already scheduled for deletion.",
                )
            } else {
                ApiError::bad(
                    "ResourceExistsException",
                    format!("The operation failed because the secret {name} already exists."),
                )
            });
        }
        self.counter += 1;
        // ARNs end in '-' and six random characters (Secrets Manager User Guide, "Secret ARN").
        let suffix: String = (0..6)
            .map(|i| {
                let h = hash_str(self.counter, &["secret-arn", name, &i.to_string()]);
                char::from(
                    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[(h % 52) as usize],
                )
            })
            .collect();
        let arn = ctx.arn("secretsmanager", &format!("secret:{name}-{suffix}"));
        let tags = input
            .get("Tags")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|t| Some((opt_str(t, "Key")?.into(), opt_str(t, "Value")?.into())))
                    .collect()
            })
            .unwrap_or_default();
        let secret = Secret {
            name: name.to_string(),
            arn: arn.clone(),
            description: opt_str(input, "Description").map(str::to_string),
            value: opt_str(input, "SecretString").map(str::to_string),
            tags,
            created: ctx.now,
            deletion_date: None,
            forced: false,
        };
        let version = secret
            .value
            .as_ref()
            .map(|_| crate::util::uuid_like("secret-version", self.counter));
        self.secrets.insert(name.to_string(), secret);
        let mut out = json!({ "ARN": arn, "Name": name });
        if let Some(v) = version {
            out["VersionId"] = json!(v);
        }
        Ok(out)
    }

    fn describe(&self, input: &Value) -> Result<Value, ApiError> {
        let id = required(input, "SecretId")?;
        let s = self.find(id).ok_or_else(not_found)?;
        let mut out = json!({
            "ARN": s.arn,
            "Name": s.name,
            "CreatedDate": s.created,
            "Tags": s.tags.iter().map(|(k, v)| json!({"Key": k, "Value": v})).collect::<Vec<_>>(),
        });
        if let Some(d) = &s.description {
            out["Description"] = json!(d);
        }
        if let Some(d) = s.deletion_date {
            out["DeletedDate"] = json!(d);
        }
        Ok(out)
    }

    fn get_value(&self, input: &Value) -> Result<Value, ApiError> {
        let id = required(input, "SecretId")?;
        let s = self.find(id).ok_or_else(not_found)?;
        if s.deletion_date.is_some() {
            return Err(ApiError::bad(
                "InvalidRequestException",
                "You can't perform this operation on the secret because it was marked for deletion.",
            ));
        }
        let value = s.value.as_ref().ok_or_else(|| {
            ApiError::bad(
                "ResourceNotFoundException",
                "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT",
            )
        })?;
        Ok(json!({
            "ARN": s.arn,
            "Name": s.name,
            "SecretString": value,
            "VersionStages": ["AWSCURRENT"],
            "CreatedDate": s.created,
        }))
    }

    /// ListSecrets: secrets not scheduled for deletion (unless `IncludePlannedDeletion`),
    /// filtered by `tag-key` / `name` filters, 100 per page (MaxResults), by name.
    fn list(&self, input: &Value) -> Result<Value, ApiError> {
        let max = input
            .get("MaxResults")
            .and_then(Value::as_u64)
            .unwrap_or(100)
            .clamp(1, 100) as usize;
        let planned = input
            .get("IncludePlannedDeletion")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let filters: Vec<(String, Vec<String>)> = input
            .get("Filters")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| {
                        let key = opt_str(f, "Key")?.to_string();
                        let values = crate::json_input::str_list(f, "Values");
                        Some((key, values))
                    })
                    .collect()
            })
            .unwrap_or_default();
        for (key, _) in &filters {
            if !["tag-key", "tag-value", "name", "description", "all"].contains(&key.as_str()) {
                return Err(ApiError::bad(
                    "ValidationException",
                    format!("Invalid filter key: {key}"),
                ));
            }
        }
        let after = opt_str(input, "NextToken").unwrap_or("");
        let matching: Vec<&Secret> = self
            .secrets
            .values()
            .filter(|s| !s.forced && (planned || s.deletion_date.is_none()))
            .filter(|s| s.name.as_str() > after)
            .filter(|s| {
                filters.iter().all(|(key, values)| {
                    values.iter().any(|v| match key.as_str() {
                        "tag-key" => s.tags.iter().any(|(k, _)| k.starts_with(v.as_str())),
                        "tag-value" => s.tags.iter().any(|(_, tv)| tv.starts_with(v.as_str())),
                        "name" => s.name.starts_with(v.as_str()),
                        _ => true,
                    })
                })
            })
            .collect();
        let page: Vec<Value> = matching
            .iter()
            .take(max)
            .map(|s| {
                json!({
                    "ARN": s.arn,
                    "Name": s.name,
                    "Tags": s.tags.iter().map(|(k, v)| json!({"Key": k, "Value": v})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut out = json!({ "SecretList": page });
        if matching.len() > max {
            out["NextToken"] = json!(matching[max - 1].name);
        }
        Ok(out)
    }

    fn delete(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let id = required(input, "SecretId")?;
        let force = input
            .get("ForceDeleteWithoutRecovery")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let window = input.get("RecoveryWindowInDays").and_then(Value::as_i64);
        if force && window.is_some() {
            return Err(invalid_parameter(
                "You can't use ForceDeleteWithoutRecovery in conjunction with RecoveryWindowInDays.",
            ));
        }
        let days = window.unwrap_or(DEFAULT_RECOVERY_DAYS);
        if !RECOVERY_DAYS.contains(&days) {
            return Err(invalid_parameter(
                "The RecoveryWindowInDays value must be between 7 and 30 days (inclusive).",
            ));
        }
        let name = self.find(id).ok_or_else(not_found)?.name.clone();
        let Some(s) = self.secrets.get_mut(&name) else {
            return Err(not_found());
        };
        let arn = s.arn.clone();
        // A forced deletion is done by "an asynchronous background process, so there might
        // be a short delay before the secret is permanently deleted" (DeleteSecret,
        // ForceDeleteWithoutRecovery): until then the secret is deleted for every reader
        // and its name is held, as during a recovery window.
        let (date, gone_at) = if force {
            (
                ctx.now,
                ctx.now + ctx.profile.secret_force_delete.as_secs_f64(),
            )
        } else {
            let date = ctx.now + days as f64 * 86_400.0;
            (date, date)
        };
        s.deletion_date = Some(gone_at);
        s.forced = force;
        Ok(json!({ "ARN": arn, "Name": name, "DeletionDate": date }))
    }
}
