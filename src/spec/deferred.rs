//! Values that are only known after apply: endpoints of the RDS instances and MSK clusters.
//!
//! A task-definition template may say `{{ db.writer.host }}`; at render time the writer may not
//! exist yet. The template engine sees an opaque marker (private-use characters that envctl
//! refuses in any input file), and the rendered text is immediately parsed back into a
//! [`Deferred`] value. Only [`Deferred::resolve`] can turn it into a plain string, and it
//! fails if any reference is still unknown, so a placeholder can never reach AWS.
use std::collections::BTreeMap;
use std::fmt;

use serde::{Serialize, Serializer};

pub const MARK_OPEN: char = '\u{E000}';
pub const MARK_CLOSE: char = '\u{E001}';

/// An output of another resource, e.g. `rds.writer.address` or `kafka.main.bootstrap_brokers`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OutputRef(pub String);

impl OutputRef {
    /// The text a template engine substitutes for this reference.
    pub fn marker(&self) -> String {
        format!("{MARK_OPEN}{}{MARK_CLOSE}", self.0)
    }

    /// The resource that produces this output: `rds.writer`, `kafka.main`.
    pub fn resource(&self) -> &str {
        self.0.rsplit_once('.').map(|(r, _)| r).unwrap_or(&self.0)
    }
}

impl fmt::Display for OutputRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    Text(String),
    Ref(OutputRef),
}

/// A string that may contain references to outputs of other resources.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Deferred {
    parts: Vec<Part>,
}

/// Outputs known so far, by reference name.
pub type Outputs = BTreeMap<String, String>;

impl Deferred {
    pub fn literal(text: impl Into<String>) -> Self {
        let text = text.into();
        if text.is_empty() {
            return Deferred::default();
        }
        Deferred {
            parts: vec![Part::Text(text)],
        }
    }

    /// Splits rendered text at the markers; `None` if a marker is unbalanced.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find(MARK_OPEN) {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let after = &rest[open + MARK_OPEN.len_utf8()..];
            let close = after.find(MARK_CLOSE)?;
            let name = &after[..close];
            if name.contains(MARK_OPEN) {
                return None;
            }
            parts.push(Part::Ref(OutputRef(name.to_string())));
            rest = &after[close + MARK_CLOSE.len_utf8()..];
        }
        if rest.contains(MARK_CLOSE) {
            return None;
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Some(Deferred { parts })
    }

    pub fn refs(&self) -> impl Iterator<Item = &OutputRef> {
        self.parts.iter().filter_map(|p| match p {
            Part::Ref(r) => Some(r),
            Part::Text(_) => None,
        })
    }

    /// The plain string, or the first reference that is not known yet.
    pub fn resolve(&self, outputs: &Outputs) -> Result<String, OutputRef> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Ref(r) => match outputs.get(&r.0) {
                    Some(v) => out.push_str(v),
                    None => return Err(r.clone()),
                },
            }
        }
        Ok(out)
    }
}

/// The output an env file may name in a service secret, as `${rds.writer.master_secret_arn}`:
/// the ARN of the secret RDS creates for the writer's master password
/// (ManageMasterUserPassword), known once the writer exists.
pub const MASTER_SECRET_ARN: &str = "rds.writer.master_secret_arn";

/// A secret's `valueFrom` as written in an env file: every `${rds.writer.master_secret_arn}`
/// becomes a reference, the rest stays text (`:password::` selects the JSON key). `Err`
/// names the first `${...}` that is not an output a secret can refer to.
pub fn secret_value_from(text: &str) -> Result<Deferred, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("${") {
        let Some(close) = rest[open..].find('}') else {
            return Err(rest[open..].to_string());
        };
        let name = &rest[open + 2..open + close];
        if name != MASTER_SECRET_ARN {
            return Err(format!("${{{name}}}"));
        }
        if open > 0 {
            parts.push(Part::Text(rest[..open].to_string()));
        }
        parts.push(Part::Ref(OutputRef(name.to_string())));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_string()));
    }
    Ok(Deferred { parts })
}

/// Renders references as `${rds.writer.address}` (render output and plans only; never sent).
impl fmt::Display for Deferred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                Part::Text(t) => f.write_str(t)?,
                Part::Ref(r) => write!(f, "${{{r}}}")?,
            }
        }
        Ok(())
    }
}

impl Serialize for Deferred {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_may_name_the_managed_master_secret_and_nothing_else() {
        let v = secret_value_from("${rds.writer.master_secret_arn}:password::").expect("known");
        assert_eq!(
            v.refs().collect::<Vec<_>>(),
            vec![&OutputRef(MASTER_SECRET_ARN.into())]
        );
        let mut outputs = Outputs::new();
        assert!(v.resolve(&outputs).is_err());
        outputs.insert(MASTER_SECRET_ARN.into(), "arn:s".into());
        assert_eq!(v.resolve(&outputs).as_deref(), Ok("arn:s:password::"));
        let plain = "arn:aws:secretsmanager:us-east-1:1:secret:x";
        assert_eq!(secret_value_from(plain), Ok(Deferred::literal(plain)));
        assert_eq!(
            secret_value_from("${rds.writer.address}:password::"),
            Err("${rds.writer.address}".to_string())
        );
        assert_eq!(
            secret_value_from("${rds.writer.master_secret_arn"),
            Err("${rds.writer.master_secret_arn".to_string())
        );
    }

    #[test]
    fn markers_round_trip_and_resolve() {
        let host = OutputRef("rds.writer.address".into());
        let text = format!("jdbc:postgresql://{}:5432/folio", host.marker());
        let d = Deferred::parse(&text).unwrap();
        assert_eq!(
            d.to_string(),
            "jdbc:postgresql://${rds.writer.address}:5432/folio"
        );
        assert_eq!(d.resolve(&Outputs::new()), Err(host.clone()));
        let mut outputs = Outputs::new();
        outputs.insert("rds.writer.address".into(), "db.example".into());
        assert_eq!(
            d.resolve(&outputs).unwrap(),
            "jdbc:postgresql://db.example:5432/folio"
        );
        assert_eq!(host.resource(), "rds.writer");
    }

    #[test]
    fn unbalanced_markers_are_rejected() {
        assert!(Deferred::parse(&format!("a{MARK_OPEN}b")).is_none());
        assert!(Deferred::parse(&format!("a{MARK_CLOSE}b")).is_none());
        assert_eq!(
            Deferred::parse("plain").unwrap(),
            Deferred::literal("plain")
        );
    }
}
