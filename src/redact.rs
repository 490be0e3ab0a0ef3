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

/// Every secret value a JSON document holds (what [`json`] would mask), so a text that
/// echoes one of them (an AWS error message quoting a request value) can be scrubbed by
/// [`scrub`] even where its shape says nothing.
pub fn secret_values(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut copy = value.clone();
    walk(&mut copy, None, &mut |name, s| {
        if name.is_some_and(|n| is_secret_name(n) && !is_trivial_value(s) && !is_mask(s)) {
            found.push(s.to_string());
        } else {
            found.extend(
                secret_ranges(s)
                    .into_iter()
                    .map(|(r, _)| s[r].to_string())
                    .filter(|v| !is_mask(v)),
            );
        }
        s.to_string()
    });
    found.sort();
    found.dedup();
    found
}

/// Shorter values are not replaced inside free text: a one- or two-character "secret"
/// would mask unrelated words, and is not worth hiding.
const SCRUB_MIN_LEN: usize = 4;

/// `text` with each of `secrets` replaced by its mask (longest first, so a secret that
/// contains another is masked whole), then the secrets recognisable by shape masked.
pub fn scrub(text_in: &str, secrets: &[String]) -> String {
    let mut ordered: Vec<&String> = secrets
        .iter()
        .filter(|s| s.len() >= SCRUB_MIN_LEN)
        .collect();
    ordered.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text_in.to_string();
    for secret in ordered {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), &mask(secret));
        }
    }
    text(&out)
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
    fn texts_echoing_a_known_secret_are_scrubbed() {
        let doc = json!({"environment": [
            {"name": "DB_PASSWD", "value": "hunter22"},
            {"name": "DATABASE_URL", "value": "postgres://u:s3cret@h/db"},
            {"name": "LOG_LEVEL", "value": "info"},
        ]});
        let secrets = secret_values(&doc);
        assert_eq!(secrets, vec!["hunter22".to_string(), "s3cret".to_string()]);
        let said = "Invalid value hunter22 (and s3cret) at level info";
        let scrubbed = scrub(said, &secrets);
        assert!(!scrubbed.contains("hunter22") && !scrubbed.contains("s3cret"));
        assert!(scrubbed.contains(&mask("hunter22")) && scrubbed.contains("info"));
        assert_eq!(
            scrub("see postgres://a:b0b@h", &[]),
            format!("see postgres://a:{}@h", mask("b0b"))
        );
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
