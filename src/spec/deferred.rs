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
