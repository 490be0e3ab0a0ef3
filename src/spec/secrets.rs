//! What looks like a secret: variable names, passwords in URLs, JVM system properties and
//! token parameters. `lint` turns these into errors (a secret belongs in `secrets:`, as an
//! ARN); `crate::redact` masks the same things wherever envctl writes values it did not
//! choose (task definitions read back from AWS, template output, step commands).
//!
//! The rules, documented in docs/lints.md:
//! - A **name** is split into words at anything not a letter or digit, upper-cased. It is a
//!   secret's when a word contains `PASSW`, `SECRET`, `TOKEN` or `CREDENTIAL`; is `PWD`,
//!   `PASS`, `AUTH` or `AUTHORIZATION` (whole words: `GIT_AUTHOR` is not) or ends in `PWD`;
//!   or when `KEY` is the last word or ends it (`API_KEY`, `APIKEY`), or follows `ACCESS`,
//!   `PRIVATE`, `SECRET` or `API` (`AWS_ACCESS_KEY_ID`). `KEY` in the middle of a name
//!   (`KAFKA_KEY_SERIALIZER`, `KEY_STORE_TYPE`) and after a word that names a data key
//!   (`ROUTING_KEY`, `PARTITION_KEY`, ...) is not.
//! - A **value** holds a secret when it has a URL with a password (`scheme://user:pw@host`,
//!   also an image `user:token@registry/repo`), a JVM option `-D<property>=<value>` whose
//!   property names a password, secret, token or credential, or a query parameter named
//!   like a secret (`?token=...`, `&password=...`).
//! - A named secret whose value is empty, a whole number or a boolean is a setting about
//!   secrets (`PASSWORD_MIN_LENGTH: 8`), not one.
use std::ops::Range;

use super::diagnostic::{Diagnostic, Diagnostics};
use super::env::Service;

/// Words that, before `KEY`, say the key is a data key rather than a credential.
const DATA_KEY_QUALIFIERS: &[&str] = &[
    "ROUTING",
    "PARTITION",
    "SORT",
    "CACHE",
    "PRIMARY",
    "FOREIGN",
    "MESSAGE",
    "RECORD",
    "SHARD",
    "GROUP",
];

/// Words after which `KEY` is a credential wherever it stands.
const CREDENTIAL_KEY_QUALIFIERS: &[&str] = &["ACCESS", "PRIVATE", "SECRET", "API"];

/// Whether an environment variable (or property) of this name holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let word_says_secret = |w: &&str| {
        ["PASSW", "SECRET", "TOKEN", "CREDENTIAL"]
            .iter()
            .any(|s| w.contains(s))
            || matches!(*w, "PWD" | "PASS" | "AUTH" | "AUTHORIZATION")
            || w.ends_with("PWD")
    };
    if words.iter().any(word_says_secret) {
        return true;
    }
    let last = words.len().saturating_sub(1);
    words.iter().enumerate().any(|(i, w)| {
        let before = i.checked_sub(1).map(|j| words[j]);
        let qualified = before.is_some_and(|b| CREDENTIAL_KEY_QUALIFIERS.contains(&b));
        let data_key = before.is_some_and(|b| DATA_KEY_QUALIFIERS.contains(&b));
        (*w == "KEY" && (qualified || (i == last && !data_key)))
            || (i == last && *w != "KEY" && w.ends_with("KEY") && w.len() > 3 && !data_key)
    })
}

/// Whether a value of a secret-named variable is a setting rather than a secret.
pub fn is_trivial_value(value: &str) -> bool {
    let v = value.trim();
    v.is_empty()
        || v.parse::<i64>().is_ok()
        || matches!(v.to_ascii_lowercase().as_str(), "true" | "false")
}

/// What kind of secret a range of a value is, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    UrlPassword,
    JvmProperty,
    QueryParameter,
}

impl SecretKind {
    pub fn describe(self) -> &'static str {
        match self {
            SecretKind::UrlPassword => "a URL with a password (user:password@host)",
            SecretKind::JvmProperty => "a JVM option setting a password, secret or token (-D...=)",
            SecretKind::QueryParameter => "a token or password as a URL parameter",
        }
    }
}

/// The byte ranges of secrets inside a value, in order, not overlapping.
pub fn secret_ranges(value: &str) -> Vec<(Range<usize>, SecretKind)> {
    let mut out = Vec::new();
    out.extend(userinfo_passwords(value));
    out.extend(jvm_properties(value));
    out.extend(query_parameters(value));
    out.sort_by_key(|(r, _)| r.start);
    let mut kept: Vec<(Range<usize>, SecretKind)> = Vec::new();
    for (range, kind) in out {
        if kept.last().is_none_or(|(last, _)| range.start >= last.end) && !range.is_empty() {
            kept.push((range, kind));
        }
    }
    kept
}

/// `scheme://user:password@host` and image references `user:token@registry/repo`: the
/// password. Words are delimited by whitespace, quotes and commas.
fn userinfo_passwords(value: &str) -> Vec<(Range<usize>, SecretKind)> {
    let mut out = Vec::new();
    for (start, word) in words(value) {
        let authority_start = word.find("://").map(|i| i + 3).unwrap_or(0);
        let rest = &word[authority_start..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let Some(at) = authority.rfind('@') else {
            continue;
        };
        let userinfo = &authority[..at];
        if let Some(colon) = userinfo.find(':') {
            let from = start + authority_start + colon + 1;
            let to = start + authority_start + at;
            if to > from {
                out.push((from..to, SecretKind::UrlPassword));
            }
        }
    }
    out
}

/// `-Dsome.password=value`: the value.
fn jvm_properties(value: &str) -> Vec<(Range<usize>, SecretKind)> {
    let mut out = Vec::new();
    for (start, word) in words(value) {
        let Some(property) = word.strip_prefix("-D") else {
            continue;
        };
        let Some(eq) = property.find('=') else {
            continue;
        };
        if is_secret_name(&property[..eq]) {
            let from = start + 2 + eq + 1;
            out.push((from..start + word.len(), SecretKind::JvmProperty));
        }
    }
    out
}

/// `?token=value` or `&password=value` in a URL: the value.
fn query_parameters(value: &str) -> Vec<(Range<usize>, SecretKind)> {
    let mut out = Vec::new();
    for (start, word) in words(value) {
        let Some(q) = word.find('?') else { continue };
        let mut offset = q + 1;
        for pair in word[q + 1..].split('&') {
            if let Some(eq) = pair.find('=')
                && is_secret_name(&pair[..eq])
            {
                let from = start + offset + eq + 1;
                let end = pair.find('#').unwrap_or(pair.len());
                out.push((from..start + offset + end, SecretKind::QueryParameter));
            }
            offset += pair.len() + 1;
        }
    }
    out
}

/// Words separated by whitespace, commas and semicolons, with their byte offsets; a
/// leading quote is not part of a word (`"-Dx.password=y"`), quotes inside are
/// (`-Dx.secret="a b"` keeps its value whole up to the space).
fn words(value: &str) -> impl Iterator<Item = (usize, &str)> {
    let is_break = |c: char| c.is_whitespace() || matches!(c, ',' | ';');
    let is_quote = |c: char| matches!(c, '"' | '\'');
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in value.char_indices() {
        match (is_break(c), start) {
            (true, Some(s)) => {
                out.push((s, &value[s..i]));
                start = None;
            }
            (false, None) if !is_quote(c) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &value[s..]));
    }
    out.into_iter()
}

/// The lints: a secret written into the env file, where it would end up in the task
/// definition, in plans and in logs.
pub fn check_service(s: &Service, out: &mut Diagnostics) {
    let service = &s.name.value;
    let move_hint = |name: &str| {
        format!(
            "move it to `secrets: {{{name}: <Secrets Manager or SSM ARN>}}` (passed to ECS as valueFrom): plain values end up in task definitions, plans and logs"
        )
    };
    for (name, value) in &s.environment {
        let text = &value.value.0;
        if is_secret_name(name) && !is_trivial_value(text) {
            out.push(
                Diagnostic::error(
                    "secret-in-environment",
                    value.span,
                    format!("{service}: `{name}` looks like a secret but is a plain environment variable"),
                )
                .with_hint(move_hint(name)),
            );
        } else if let Some((_, kind)) = secret_ranges(text).first() {
            out.push(
                Diagnostic::error(
                    "secret-in-value",
                    value.span,
                    format!("{service}: `{name}` contains {}", kind.describe()),
                )
                .with_hint(move_hint(name)),
            );
        }
    }
    if let Some(options) = s.jvm.as_ref().and_then(|j| j.options.as_ref())
        && let Some((_, kind)) = secret_ranges(&options.value).first()
    {
        out.push(
            Diagnostic::error(
                "secret-in-value",
                options.span,
                format!("{service}: jvm.options contains {}", kind.describe()),
            )
            .with_hint(
                "pass the value as a secret (`secrets: {NAME: <ARN>}`) and read it in the application, or reference it from JAVA_OPTIONS at start-up",
            ),
        );
    }
    for image in std::iter::once(&s.image).chain(s.version.as_ref()) {
        if let Some((_, kind)) = secret_ranges(&image.value).first() {
            out.push(
                Diagnostic::error(
                    "secret-in-value",
                    image.span,
                    format!("{service}: the image reference contains {}", kind.describe()),
                )
                .with_hint(
                    "name the image without credentials: ECS pulls from ECR with the execution role, and from a private registry with repositoryCredentials (a Secrets Manager ARN)",
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_and_their_false_friends() {
        for name in [
            "DB_PASSWORD",
            "DB_PASSWD",
            "DB_PWD",
            "DBPWD",
            "API_KEY",
            "APIKEY",
            "SIGNING_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "SSL_PRIVATE_KEY",
            "GITHUB_TOKEN",
            "OKAPI_AUTH",
            "HTTP_AUTHORIZATION",
            "CLIENT_CREDENTIALS",
            "javax.net.ssl.keyStorePassword",
            "db-pass",
        ] {
            assert!(is_secret_name(name), "{name} is a secret");
        }
        for name in [
            "KAFKA_KEY_SERIALIZER",
            "KEY_STORE_TYPE",
            "GIT_AUTHOR",
            "BOOK_AUTHORS",
            "ROUTING_KEY",
            "PARTITION_KEY",
            "LOG_LEVEL",
            "DB_HOST",
            "OKAPI_URL",
            "KEYCLOAK_URL",
            "MONKEY_COUNT",
            "PASSENGER_COUNT",
        ] {
            assert!(!is_secret_name(name), "{name} is not a secret");
        }
    }

    fn secrets(value: &str) -> Vec<&str> {
        secret_ranges(value)
            .into_iter()
            .map(|(r, _)| &value[r])
            .collect()
    }

    #[test]
    fn secrets_inside_values() {
        assert_eq!(secrets("postgres://user:pa55@db:5432/x"), ["pa55"]);
        assert_eq!(secrets("postgres://user@db:5432/x"), Vec::<&str>::new());
        assert_eq!(
            secrets("-Xmx512m -Djavax.net.ssl.keyStorePassword=changeit -Dfile.encoding=UTF-8"),
            ["changeit"]
        );
        assert_eq!(
            secrets("-Dkafka.sasl.jaas.secret=\"s3cr3t\" -Dx=1"),
            ["\"s3cr3t\""]
        );
        assert_eq!(
            secrets("deploy:ghp_abc123@ghcr.io/org/app:1.0"),
            ["ghp_abc123"]
        );
        assert_eq!(secrets("ghcr.io/org/app@sha256:abcdef"), Vec::<&str>::new());
        assert_eq!(secrets("folioorg/mod-users:19.2.0"), Vec::<&str>::new());
        assert_eq!(
            secrets("https://registry/x?region=eu&access_token=tok9#frag"),
            ["tok9"]
        );
        assert_eq!(secrets("https://a:b@h/p?token=t"), ["b", "t"]);
    }

    #[test]
    fn settings_about_secrets_are_not_secrets() {
        for v in ["", "8", " 12 ", "true", "FALSE"] {
            assert!(is_trivial_value(v), "{v}");
        }
        assert!(!is_trivial_value("hunter2"));
    }
}
