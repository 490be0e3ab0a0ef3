//! A YAML document as a tree of nodes that remember their source span.
//!
//! envctl does not deserialize YAML straight into its typed spec: `extends:`, service
//! `defaults` and `--set` overrides are merges of trees, and every value must still point at
//! the file, line and column it came from after the merge. So YAML is first read (by
//! serde-saphyr, with its budgets against hostile input) into this tree, merged, and then
//! decoded into types by `decode`, which reports every problem at once.
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::source::{FileId, Sources, Span};

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

/// A mapping key: always a string in envctl's files (numbers are read as their text).
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub name: String,
    pub span: Span,
}

impl Node {
    pub fn new(kind: NodeKind, span: Span) -> Self {
        Node { kind, span }
    }

    /// What a diagnostic calls this node's type.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            NodeKind::Null => "null",
            NodeKind::Bool(_) => "a boolean",
            NodeKind::Int(_) => "an integer",
            NodeKind::Float(_) => "a number",
            NodeKind::Str(_) => "a string",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "a mapping",
        }
    }

    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.kind {
            NodeKind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v)
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The scalar as text (for free-form maps such as Kafka server properties).
    pub fn scalar_text(&self) -> Option<String> {
        match &self.kind {
            NodeKind::Bool(b) => Some(b.to_string()),
            NodeKind::Int(i) => Some(i.to_string()),
            NodeKind::Float(f) => Some(f.to_string()),
            NodeKind::Str(s) => Some(s.clone()),
            NodeKind::Null | NodeKind::Seq(_) | NodeKind::Map(_) => None,
        }
    }
}

/// Why a YAML text could not be read as a tree.
#[derive(Debug, Clone)]
pub struct SyntaxError {
    pub message: String,
    pub span: Span,
}

/// The most nodes a text of `len` bytes may become, aliases expanded.
///
/// Written out, every node takes at least two bytes (`1,`), so a text of `len` bytes holds
/// about `len / 2` nodes; aliases multiply that. Sixteen nodes per byte leaves room for
/// generous reuse of anchors (`<<: *defaults` in every service), while an alias bomb, which
/// multiplies a few hundred bytes into millions of nodes, trips the budget after a few
/// thousand: expanding them is what costs time, so the time to refuse one now grows with
/// the size of the file rather than with the fixed ceiling (500,000 nodes took 7-12 s in a
/// debug build).
pub fn node_budget(len: usize) -> usize {
    const FLOOR: usize = 10_000;
    const CEILING: usize = 500_000;
    len.saturating_mul(16).saturating_add(FLOOR).min(CEILING)
}

/// Limits for envctl's own files: generous for a 1,000-service environment, small enough
/// that an alias bomb or a many-megabyte file fails within a second.
fn options(len: usize) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = 48;
    budget.max_aliases = 1_000;
    budget.max_anchors = 1_000;
    budget.max_nodes = node_budget(len);
    budget.max_events = 1_000_000;
    budget.max_total_scalar_bytes = 16 * 1024 * 1024;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options.with_snippet = false;
    // YAML 1.2 booleans only: a service called `y` or `no` must stay a name.
    options.strict_booleans = true;
    // Replayed alias events are nodes too: the same budget bounds them.
    options.alias_limits.max_total_replayed_events = node_budget(len);
    options
}

/// The largest file envctl will read; a spec is a few hundred KiB even at 1,000 services.
pub const MAX_FILE_BYTES: usize = 8 * 1024 * 1024;

/// Parses one YAML document of a user's file into a tree.
pub fn parse(sources: &Sources, file: FileId) -> Result<Node, SyntaxError> {
    parse_inner(sources, file, false)
}

/// Parses a template's output, which may carry endpoint reference markers.
pub fn parse_rendered(sources: &Sources, file: FileId) -> Result<Node, SyntaxError> {
    parse_inner(sources, file, true)
}

fn parse_inner(sources: &Sources, file: FileId, allow_markers: bool) -> Result<Node, SyntaxError> {
    let text = sources.get(file).map(|s| s.text.as_str()).unwrap_or("");
    let at_start = Span {
        file,
        start: 0,
        end: 0,
        line: 1,
        column: 1,
    };
    if text.len() > MAX_FILE_BYTES {
        return Err(SyntaxError {
            message: format!(
                "file is {} bytes; envctl reads at most {MAX_FILE_BYTES} bytes per file",
                text.len()
            ),
            span: at_start,
        });
    }
    if !allow_markers
        && (text.contains(super::deferred::MARK_OPEN) || text.contains(super::deferred::MARK_CLOSE))
    {
        return Err(SyntaxError {
            message: "the file contains a character from Unicode's private use area (U+E000/U+E001) that envctl reserves for endpoint references".into(),
            span: at_start,
        });
    }
    if text.trim().is_empty() {
        return Ok(Node::new(NodeKind::Map(Vec::new()), at_start));
    }
    match serde_saphyr::from_str_with_options::<Spanned<Raw>>(text, options(text.len())) {
        Ok(raw) => Ok(lower(raw, file, text)),
        Err(err) => {
            let span = err
                .location()
                .map(|loc| span_of(&loc, file, text))
                .unwrap_or(at_start);
            Err(SyntaxError {
                message: first_line(&err.to_string()),
                span,
            })
        }
    }
}

fn first_line(message: &str) -> String {
    // serde-saphyr appends its own location and snippet; envctl renders its own.
    let line = message.lines().next().unwrap_or(message).trim();
    match line.find(" at line ") {
        Some(i) => line[..i].to_string(),
        None => line.to_string(),
    }
}

fn span_of(loc: &serde_saphyr::Location, file: FileId, text: &str) -> Span {
    let span = loc.span();
    let (start, len) = match (span.byte_offset(), span.byte_len()) {
        (Some(o), Some(l)) => (o as usize, l as usize),
        _ => (
            char_to_byte(text, span.offset() as usize),
            span.len() as usize,
        ),
    };
    let start = start.min(text.len());
    let end = (start + len).min(text.len());
    let (line, column) = if loc.line() > 0 {
        (loc.line() as u32, loc.column() as u32)
    } else {
        Sources::line_col(text, start)
    };
    Span {
        file,
        start,
        end,
        line,
        column,
    }
}

fn char_to_byte(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map(|(i, _)| i)
        .unwrap_or(text.len())
}

fn lower(raw: Spanned<Raw>, file: FileId, text: &str) -> Node {
    let span = span_of(&raw.referenced, file, text);
    let kind = match raw.value {
        Raw::Null => NodeKind::Null,
        Raw::Bool(b) => NodeKind::Bool(b),
        Raw::Int(i) => NodeKind::Int(i),
        Raw::Float(f) => NodeKind::Float(f),
        Raw::Str(s) => NodeKind::Str(s),
        Raw::Seq(items) => NodeKind::Seq(items.into_iter().map(|i| lower(i, file, text)).collect()),
        Raw::Map(entries) => NodeKind::Map(
            entries
                .into_iter()
                .map(|(k, v)| {
                    let key_span = span_of(&k.referenced, file, text);
                    let name = match k.value {
                        Raw::Str(s) => s,
                        Raw::Int(i) => i.to_string(),
                        Raw::Float(f) => f.to_string(),
                        Raw::Bool(b) => b.to_string(),
                        Raw::Null => "null".to_string(),
                        Raw::Seq(_) | Raw::Map(_) => "<complex key>".to_string(),
                    };
                    (
                        Key {
                            name,
                            span: key_span,
                        },
                        lower(v, file, text),
                    )
                })
                .collect(),
        ),
    };
    Node { kind, span }
}

/// The untyped shape serde-saphyr fills; positions come from the `Spanned` wrappers.
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<Raw>, Spanned<Raw>)>),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
        i64::try_from(v)
            .map(Raw::Int)
            .map_err(|_| E::custom(format!("integer {v} is too large")))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        i64::try_from(v)
            .map(Raw::Int)
            .map_err(|_| E::custom(format!("integer {v} is too large")))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        i64::try_from(v)
            .map(Raw::Int)
            .map_err(|_| E::custom(format!("integer {v} is too large")))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, _v: &[u8]) -> Result<Raw, E> {
        Err(E::custom("binary values are not supported"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Raw>>()? {
            items.push(item);
        }
        Ok(Raw::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Raw>>()? {
            let value = map.next_value::<Spanned<Raw>>()?;
            entries.push((key, value));
        }
        Ok(Raw::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Node, SyntaxError> {
        let mut sources = Sources::new();
        let id = sources.add("t.yaml".into(), None, text.into());
        parse(&sources, id)
    }

    #[test]
    fn scalars_and_keys_keep_their_positions() {
        let node = load("a: 1\nb:\n  c: hello\n  d: [true, 2.5]\n").unwrap();
        let b = node.get("b").unwrap();
        let c = b.get("c").unwrap();
        assert_eq!(c.kind, NodeKind::Str("hello".into()));
        assert_eq!((c.span.line, c.span.column), (3, 6));
        let keys = b.as_map().unwrap();
        assert_eq!((keys[1].0.span.line, keys[1].0.span.column), (4, 3));
        let d = b.get("d").unwrap();
        match &d.kind {
            NodeKind::Seq(items) => {
                assert_eq!(items[0].kind, NodeKind::Bool(true));
                assert_eq!(items[1].kind, NodeKind::Float(2.5));
                assert_eq!((items[1].span.line, items[1].span.column), (4, 13));
            }
            other => panic!("expected a list, got {other:?}"),
        }
    }

    #[test]
    fn duplicate_keys_are_an_error_with_a_position() {
        let err = load("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert!(
            err.message.to_lowercase().contains("duplicate"),
            "{}",
            err.message
        );
        assert_eq!(err.span.line, 3);
    }

    #[test]
    fn alias_bombs_fail_fast() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = format!("*a{}", i - 1);
            text.push_str(&format!("a{i}: &a{i} [{prev}, {prev}, {prev}, {prev}, {prev}, {prev}, {prev}, {prev}, {prev}, {prev}]\n"));
        }
        assert!(load(&text).is_err());
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(load(&text).is_err());
    }
}
