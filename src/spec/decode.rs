//! Decoding merged node trees into typed values, collecting every problem instead of
//! stopping at the first (a user fixing a 144-service file wants all errors in one run).
//!
//! Each decoder returns `Option<T>`: `None` means "a diagnostic was recorded". Struct
//! decoders read every field before combining them with `?`, so one bad field does not hide
//! the next one.
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;

use schemars::JsonSchema;
use serde::{Serialize, Serializer};

use super::diagnostic::{Diagnostic, Diagnostics};
use super::node::{Key, Node, NodeKind};
use super::source::Span;

/// A value with the span it was read from.
#[derive(Clone)]
pub struct At<T> {
    pub value: T,
    pub span: Span,
}

impl<T> At<T> {
    pub fn new(value: T, span: Span) -> Self {
        At { value, span }
    }

    pub fn builtin(value: T) -> Self {
        At {
            value,
            span: Span::BUILTIN,
        }
    }
}

impl<T> Deref for At<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for At<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T: fmt::Display> fmt::Display for At<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// Equality ignores where a value came from: two specs mean the same thing.
impl<T: PartialEq> PartialEq for At<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Serialize> Serialize for At<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}

impl<T: JsonSchema> JsonSchema for At<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

/// Collects diagnostics while decoding.
#[derive(Default)]
pub struct Decoder {
    pub diagnostics: Diagnostics,
}

pub trait Decode: Sized {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self>;
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn error(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    pub fn type_error(&mut self, node: &Node, expected: &str) {
        let mut diag = Diagnostic::error(
            "wrong-type",
            node.span,
            format!("expected {expected}, found {}", node.type_name()),
        );
        if expected == "a string" && matches!(node.kind, NodeKind::Int(_) | NodeKind::Float(_)) {
            diag = diag.with_hint(
                "quote it (\"3.7\"): YAML reads 3.10 as the number 3.1, so versions and names must be strings",
            );
        }
        self.error(diag);
    }

    /// Opens a mapping as a struct with the given fields; unknown keys are reported with the
    /// closest valid name.
    pub fn fields<'n>(
        &mut self,
        node: &'n Node,
        what: &'static str,
        known: &'static [&'static str],
    ) -> Option<Fields<'n>> {
        let entries = match &node.kind {
            NodeKind::Map(entries) => entries.as_slice(),
            NodeKind::Null => &[],
            _ => {
                self.type_error(node, &format!("a mapping ({what})"));
                return None;
            }
        };
        for (key, _) in entries {
            if !known.contains(&key.name.as_str()) {
                self.error(unknown_key(key, what, known));
            }
        }
        Some(Fields {
            span: node.span,
            entries,
            what,
            known,
        })
    }

    /// Reads a mapping whose keys are names chosen by the user (services, Kafka clusters).
    pub fn named<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [(Key, Node)]> {
        match &node.kind {
            NodeKind::Map(entries) => Some(entries),
            NodeKind::Null => Some(&[]),
            _ => {
                self.type_error(node, &format!("a mapping of {what}"));
                None
            }
        }
    }

    /// Reads a string that must be one of `choices`.
    pub fn choice(&mut self, node: &Node, what: &str, choices: &[&str]) -> Option<At<String>> {
        let s = At::<String>::decode(node, self)?;
        let lower = s.value.to_ascii_lowercase();
        if let Some(c) = choices.iter().find(|c| **c == lower) {
            return Some(At::new(c.to_string(), s.span));
        }
        let mut diag = Diagnostic::error(
            "invalid-value",
            node.span,
            format!("`{}` is not a valid {what}", s.value),
        )
        .with_hint(format!("valid values: {}", choices.join(", ")));
        if let Some(best) = suggest(&s.value, choices.iter().copied()) {
            diag = diag.with_hint(format!(
                "did you mean `{best}`? valid values: {}",
                choices.join(", ")
            ));
        }
        self.error(diag);
        None
    }
}

/// The entries of a mapping being decoded as a struct.
pub struct Fields<'n> {
    pub span: Span,
    entries: &'n [(Key, Node)],
    what: &'static str,
    known: &'static [&'static str],
}

impl<'n> Fields<'n> {
    pub fn node(&self, name: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.name == name)
            .map(|(_, v)| v)
            .filter(|v| v.kind != NodeKind::Null)
    }

    pub fn key_span(&self, name: &str) -> Option<Span> {
        self.entries
            .iter()
            .find(|(k, _)| k.name == name)
            .map(|(k, _)| k.span)
    }

    /// A field that must be present. A misspelt key that names it (`plann:`) is already an
    /// unknown-field error saying "did you mean `plan`?": the field is not said missing too.
    pub fn req<T: Decode>(&self, d: &mut Decoder, name: &str) -> Option<T> {
        match self.node(name) {
            Some(node) => T::decode(node, d),
            None if self.misspelt(name) => None,
            None => {
                d.error(
                    Diagnostic::error(
                        "missing-field",
                        self.span,
                        format!("{} is missing the required field `{name}`", self.what),
                    )
                    .with_hint(format!("add `{name}:` here")),
                );
                None
            }
        }
    }

    /// Whether an unknown key of the mapping is a likely typo of `name`.
    fn misspelt(&self, name: &str) -> bool {
        self.entries.iter().any(|(key, _)| {
            !self.known.contains(&key.name.as_str())
                && suggest(&key.name, self.known.iter().copied()) == Some(name)
        })
    }

    /// A field that may be absent (or null). A present but invalid value is reported and
    /// read as absent; the caller's result is discarded anyway because an error was recorded.
    pub fn opt<T: Decode>(&self, d: &mut Decoder, name: &str) -> Option<T> {
        self.node(name).and_then(|node| T::decode(node, d))
    }

    /// A field with a default.
    pub fn or<T: Decode>(&self, d: &mut Decoder, name: &str, default: T) -> T {
        self.opt(d, name).unwrap_or(default)
    }
}

fn unknown_key(key: &Key, what: &str, known: &[&str]) -> Diagnostic {
    let diag = Diagnostic::error(
        "unknown-field",
        key.span,
        format!("unknown field `{}` in {what}", key.name),
    );
    match suggest(&key.name, known.iter().copied()) {
        Some(best) => diag.with_hint(format!(
            "did you mean `{best}`? fields of {what}: {}",
            known.join(", ")
        )),
        None => diag.with_hint(format!("fields of {what}: {}", known.join(", "))),
    }
}

/// The closest candidate to a misspelt name, if it is close enough to be a likely typo.
pub fn suggest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(input, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

impl Decode for String {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.kind {
            NodeKind::Str(s) => Some(s.clone()),
            _ => {
                d.type_error(node, "a string");
                None
            }
        }
    }
}

impl Decode for bool {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match node.kind {
            NodeKind::Bool(b) => Some(b),
            _ => {
                d.type_error(node, "true or false");
                None
            }
        }
    }
}

macro_rules! decode_int {
    ($($t:ty),*) => {$(
        impl Decode for $t {
            fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
                match node.kind {
                    NodeKind::Int(i) => match <$t>::try_from(i) {
                        Ok(v) => Some(v),
                        Err(_) => {
                            d.error(Diagnostic::error(
                                "out-of-range",
                                node.span,
                                format!("{i} is out of range ({} to {})", <$t>::MIN, <$t>::MAX),
                            ));
                            None
                        }
                    },
                    _ => {
                        d.type_error(node, "a whole number");
                        None
                    }
                }
            }
        }
    )*};
}
decode_int!(u16, u32, u64, i64);

impl Decode for f64 {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match node.kind {
            NodeKind::Int(i) => Some(i as f64),
            NodeKind::Float(f) if f.is_finite() => Some(f),
            _ => {
                d.type_error(node, "a number");
                None
            }
        }
    }
}

impl<T: Decode> Decode for At<T> {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        T::decode(node, d).map(|value| At::new(value, node.span))
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.kind {
            NodeKind::Seq(items) => {
                let decoded: Vec<Option<T>> = items.iter().map(|i| T::decode(i, d)).collect();
                decoded.into_iter().collect()
            }
            NodeKind::Null => Some(Vec::new()),
            _ => {
                d.type_error(node, "a list");
                None
            }
        }
    }
}

impl<T: Decode> Decode for BTreeMap<String, T> {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let entries = d.named(node, "entries")?;
        let decoded: Vec<Option<(String, T)>> = entries
            .iter()
            .map(|(k, v)| T::decode(v, d).map(|v| (k.name.clone(), v)))
            .collect();
        decoded.into_iter().collect()
    }
}

/// A mapping from names to names that keeps both spans (playbook baselines, exclusions).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamePairs(pub Vec<(At<String>, At<String>)>);

impl Decode for NamePairs {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let entries = d.named(node, "names")?;
        let decoded: Vec<Option<(At<String>, At<String>)>> = entries
            .iter()
            .map(|(k, v)| At::<String>::decode(v, d).map(|v| (At::new(k.name.clone(), k.span), v)))
            .collect();
        decoded
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .map(NamePairs)
    }
}

/// Any scalar, kept as text: Kafka server properties, DB parameters, environment variables.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[schemars(with = "ScalarSchema")]
pub struct Scalar(pub String);

/// What a [`Scalar`] accepts, for the JSON Schema.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // only its schema is used
enum ScalarSchema {
    String(String),
    Number(f64),
    Bool(bool),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Decode for Scalar {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match node.scalar_text() {
            Some(text) => Some(Scalar(text)),
            None => {
                d.type_error(node, "a string, number or boolean");
                None
            }
        }
    }
}

/// A duration written as `90s`, `5m`, `2h`, `1h30m` or `1d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let mut total: u64 = 0;
        let mut digits = String::new();
        for c in text.chars() {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            let n: u64 = digits.parse().ok()?;
            digits.clear();
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                _ => return None,
            };
            total = total.checked_add(n.checked_mul(unit)?)?;
        }
        if !digits.is_empty() {
            return None;
        }
        Some(Duration(std::time::Duration::from_secs(total)))
    }

    pub fn secs(&self) -> u64 {
        self.0.as_secs()
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = self.0.as_secs();
        if s == 0 {
            return f.write_str("0s");
        }
        for (unit, len) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
            if s >= len {
                write!(f, "{}{unit}", s / len)?;
                s %= len;
            }
        }
        Ok(())
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^([0-9]+[smhd])+$",
            "description": "A duration such as 90s, 5m, 2h, 1h30m or 1d"
        })
    }
}

impl Decode for Duration {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let text = match &node.kind {
            NodeKind::Str(s) => s.clone(),
            _ => {
                d.type_error(node, "a duration such as 90s, 5m or 2h");
                return None;
            }
        };
        match Duration::parse(&text) {
            Some(v) => Some(v),
            None => {
                d.error(
                    Diagnostic::error(
                        "invalid-value",
                        node.span,
                        format!("`{text}` is not a duration"),
                    )
                    .with_hint("write a number with a unit: 90s, 5m, 2h, 1h30m, 1d"),
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print() {
        assert_eq!(Duration::parse("1h30m").unwrap().secs(), 5400);
        assert_eq!(Duration::parse("2m").unwrap().secs(), 120);
        assert_eq!(Duration::parse("1d").unwrap().to_string(), "1d");
        assert_eq!(Duration::parse("5400s").unwrap().to_string(), "1h30m");
        for bad in ["", "5", "m", "5x", "1.5h", "-1s"] {
            assert!(Duration::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn suggestions_find_typos_only() {
        let fields = ["broker_type", "brokers", "zones", "version"];
        assert_eq!(suggest("broker_typ", fields), Some("broker_type"));
        assert_eq!(suggest("verison", fields), Some("version"));
        assert_eq!(suggest("xyz", fields), None);
    }
}
