//! Masking secrets in what envctl writes: `***` and a short hash of the value, so two
//! values can still be compared ("did the password change?") without being shown.
//!
//! What counts as a secret is `spec::secrets`'s rule. The lints keep secrets out of env
//! files, but values envctl did not write itself still pass through: task definitions read
//! back from AWS (a foreign or adopted one), template output, step commands. Writers of
//! results and renderings mask JSON with [`json`]; the observe cache keeps no task
//! definition that holds a secret ([`json_has_secret`]), so it never stores one and diffs
//! still compare real values.
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::spec::secrets::{is_secret_name, is_trivial_value, secret_ranges};

/// `***` and the first 8 hex digits of the value's sha256.
pub fn mask(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    format!("***{}", &hex::encode(digest)[..8])
}

/// Whether a value is already a mask: masking is idempotent, so a document read back and
/// written again (a resumed run) keeps its hashes.
fn is_mask(value: &str) -> bool {
    value.len() == 11
        && value.starts_with("***")
        && value[3..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// The value with every secret inside it (URL passwords, JVM properties, token
/// parameters) masked.
pub fn text(value: &str) -> String {
    let ranges = secret_ranges(value);
    if ranges.is_empty() {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len());
    let mut at = 0;
    for (range, _) in ranges {
        out.push_str(&value[at..range.start]);
        let secret = &value[range.clone()];
        out.push_str(&if is_mask(secret) {
            secret.to_string()
        } else {
            mask(secret)
        });
        at = range.end;
    }
    out.push_str(&value[at..]);
    out
}

/// The value of a variable called `name`: all of it masked when the name says secret,
/// otherwise the secrets inside it.
pub fn named(name: &str, value: &str) -> String {
    if is_secret_name(name) && !is_trivial_value(value) && !is_mask(value) {
        mask(value)
    } else {
        text(value)
    }
}

/// Keys whose value is a map of variable names to values.
const NAMED_MAPS: &[&str] = &["environment", "vars", "env"];

/// Masks secrets in a JSON document in place: `{"name": N, "value": V}` pairs (ECS
/// environment entries) and maps under `environment`, `vars` or `env` by their names,
/// every other string by its content.
pub fn json(value: &mut Value) {
    walk(value, None, &mut |name, s| match name {
        Some(name) => named(name, s),
        None => text(s),
    });
}

/// Whether a JSON document holds anything [`json`] would mask.
pub fn json_has_secret(value: &Value) -> bool {
    let mut copy = value.clone();
    json(&mut copy);
    copy != *value
}

fn walk(
    value: &mut Value,
    in_named_map: Option<()>,
    mask: &mut dyn FnMut(Option<&str>, &str) -> String,
) {
    match value {
        Value::String(s) => *s = mask(None, s),
        Value::Array(items) => {
            for item in items {
                walk(item, None, mask);
            }
        }
        Value::Object(map) => {
            let pair_name = map.get("name").and_then(Value::as_str).map(str::to_string);
            for (key, child) in map.iter_mut() {
                match child {
                    Value::String(s) if in_named_map.is_some() => *s = mask(Some(key), s),
                    Value::String(s) if key == "value" && pair_name.is_some() => {
                        *s = mask(pair_name.as_deref(), s)
                    }
                    _ => {
                        let named_map = NAMED_MAPS.contains(&key.as_str()).then_some(());
                        walk(child, named_map, mask);
                    }
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn masks_keep_equal_values_comparable() {
        assert_eq!(mask("hunter2"), mask("hunter2"));
        assert_ne!(mask("hunter2"), mask("hunter3"));
        assert!(mask("hunter2").starts_with("***"));
        assert!(!mask("hunter2").contains("hunter2"));
        assert_eq!(mask("x").len(), 11);
    }

    #[test]
    fn values_are_masked_by_name_or_by_content() {
        assert_eq!(named("DB_PASSWD", "pw"), mask("pw"));
        assert_eq!(named("PASSWORD_MIN_LENGTH", "8"), "8");
        assert_eq!(
            named("DATABASE_URL", "postgres://u:pw@h/db"),
            format!("postgres://u:{}@h/db", mask("pw"))
        );
        assert_eq!(named("LOG_LEVEL", "info"), "info");
    }

    #[test]
    fn json_documents_are_masked_where_secrets_can_be() {
        let mut doc = json!({
            "containerDefinitions": [{
                "image": "u:tok@registry/app:1",
                "environment": [
                    {"name": "API_KEY", "value": "k1"},
                    {"name": "DB_HOST", "value": "db"},
                ],
                "secrets": [{"name": "DB_PASSWORD", "valueFrom": "arn:aws:secretsmanager:r:1:secret:x"}],
            }],
            "services": {"a": {"environment": {"DB_PWD": "p", "JAVA_OPTIONS": "-Dx.password=p -Xmx1g"}}},
            "vars": {"AWS_SECRET_ACCESS_KEY": "sandbox", "users": "5"},
        });
        assert!(json_has_secret(&doc));
        json(&mut doc);
        let c = &doc["containerDefinitions"][0];
        assert_eq!(c["image"], format!("u:{}@registry/app:1", mask("tok")));
        assert_eq!(c["environment"][0]["value"], mask("k1"));
        assert_eq!(c["environment"][1]["value"], "db");
        assert_eq!(
            c["secrets"][0]["valueFrom"],
            "arn:aws:secretsmanager:r:1:secret:x"
        );
        let env = &doc["services"]["a"]["environment"];
        assert_eq!(env["DB_PWD"], mask("p"));
        assert_eq!(
            env["JAVA_OPTIONS"],
            format!("-Dx.password={} -Xmx1g", mask("p"))
        );
        assert_eq!(doc["vars"]["AWS_SECRET_ACCESS_KEY"], mask("sandbox"));
        assert_eq!(doc["vars"]["users"], "5");
        let masked = doc.clone();
        json(&mut doc);
        assert_eq!(doc, masked, "masking twice changes nothing");
        assert!(!json_has_secret(&doc));
    }
}
