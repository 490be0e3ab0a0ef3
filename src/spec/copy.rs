//! `--copy NAME`: another instance of one env on the same account. Every AWS name envctl
//! derives from the env gets the copy's suffix (`-NAME`), so two copies never share a
//! resource, a lock or a cache; the ownership tags say which copy a resource belongs to
//! (docs/ownership.md, "Copies").
//!
//! The copy is applied to the decoded spec, before linting and lowering: the env's name (the
//! lock key, the task families and log groups the templates derive from `env.name`), the ECS
//! cluster (and the capacity provider named after it), the MSK clusters (and their
//! configurations), the DB instances (and their parameter group, subnet group and master
//! secret). Names the env only refers to (an existing capacity provider, subnet group,
//! secret ARNs) are not envctl's and stay as written.
use std::fmt;

use super::decode::At;
use super::env::EnvSpec;

/// The longest copy name: the suffix goes into names AWS keeps short (an RDS identifier has
/// 63 characters, an MSK cluster 64), so it stays a short label (`s1`, `shard-12`).
pub const MAX_LEN: usize = 12;

/// A valid copy name: 1 to [`MAX_LEN`] lowercase letters, digits and dashes, starting and
/// ending with a letter or digit, no two dashes in a row (RDS identifiers refuse a trailing
/// dash and two dashes in a row; ECS, MSK and RDS all accept `[a-z0-9-]`).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct CopyName(String);

impl TryFrom<String> for CopyName {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        CopyName::parse(&s)
    }
}

impl From<CopyName> for String {
    fn from(c: CopyName) -> String {
        c.0
    }
}

impl CopyName {
    pub fn parse(text: &str) -> Result<CopyName, String> {
        let rule = format!(
            "a copy name is 1 to {MAX_LEN} lowercase letters, digits and dashes, starting and ending with a letter or digit, without two dashes in a row (it becomes a suffix of RDS identifiers and MSK cluster names)"
        );
        let bad = |why: &str| Err(format!("`{text}` is not a valid copy name: {why}; {rule}"));
        if text.is_empty() {
            return bad("it is empty");
        }
        if text.len() > MAX_LEN {
            return bad(&format!("it has {} characters", text.len()));
        }
        if let Some(c) = text
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return bad(&format!("`{c}` is not allowed"));
        }
        if text.starts_with('-') || text.ends_with('-') {
            return bad("it starts or ends with a dash");
        }
        if text.contains("--") {
            return bad("it has two dashes in a row");
        }
        Ok(CopyName(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `name` with this copy's suffix.
    pub fn suffixed(&self, name: &str) -> String {
        format!("{name}-{}", self.0)
    }
}

impl fmt::Display for CopyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for CopyName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CopyName::parse(s)
    }
}

/// Renames everything the env names and owns for `copy`; spans keep pointing at the names
/// as written, so a lint about a suffixed name points at its line.
pub fn apply(spec: &mut EnvSpec, copy: &CopyName) {
    let rename = |name: &mut At<String>| name.value = copy.suffixed(&name.value);
    rename(&mut spec.env);
    rename(&mut spec.ecs.cluster);
    for k in spec.kafka.values_mut() {
        rename(&mut k.name);
    }
    if let Some(rds) = &mut spec.rds {
        rename(&mut rds.writer.id);
        for r in &mut rds.readers {
            rename(&mut r.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_names_are_short_lowercase_labels() {
        for good in ["s1", "shard-12", "a", "1", "abcdefghijkl"] {
            assert_eq!(
                CopyName::parse(good).map(|c| c.to_string()),
                Ok(good.into())
            );
        }
        for (bad, why) in [
            ("", "it is empty"),
            ("abcdefghijklm", "it has 13 characters"),
            ("S1", "`S` is not allowed"),
            ("s_1", "`_` is not allowed"),
            ("s.1", "`.` is not allowed"),
            ("-s1", "starts or ends with a dash"),
            ("s1-", "starts or ends with a dash"),
            ("s--1", "two dashes in a row"),
        ] {
            let err = CopyName::parse(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
            assert!(
                err.contains("lowercase letters, digits and dashes"),
                "{err}"
            );
        }
    }
}
