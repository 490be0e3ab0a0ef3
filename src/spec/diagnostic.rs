//! Problems found in the user's files, with the position they are about, rendered like a
//! compiler's: `path:line:col`, the source line, a caret, and a hint saying what is valid.
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};
use serde::Serialize;
use std::path::Path;

use super::source::{Sources, Span};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable identifier, documented in docs/lints.md (e.g. `jvm-exceeds-hard-limit`).
    pub code: &'static str,
    pub message: String,
    pub span: Span,
    /// Further places that explain the problem (e.g. where a value was defined).
    pub notes: Vec<(Span, String)>,
    /// What would be valid.
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span,
            notes: Vec::new(),
            hint: None,
        }
    }

    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_note(mut self, span: Span, note: impl Into<String>) -> Self {
        self.notes.push((span, note.into()));
        self
    }

    /// Whether the text under this diagnostic's span is a secret: the quoted source line
    /// then shows it as `*`s, since diagnostics end up in CI logs.
    pub fn conceals_its_span(&self) -> bool {
        self.code.starts_with("secret-in-")
    }
}

/// Every problem found, in the order found; commands render them all at once.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

/// The JSON form of a diagnostic (`validate --format json`).
#[derive(Debug, Serialize)]
pub struct DiagnosticRecord {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub hint: Option<String>,
}

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn error_count(&self) -> usize {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    pub fn warning_count(&self) -> usize {
        self.items.len() - self.error_count()
    }

    pub fn has_errors(&self) -> bool {
        self.error_count() > 0
    }

    /// The errors alone: what a command other than `validate` prints in full (warnings are
    /// counted, see `commands::common::report_diagnostics`).
    pub fn errors_only(&self) -> Diagnostics {
        Diagnostics {
            items: self
                .items
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .cloned()
                .collect(),
        }
    }

    /// What every command but `validate` prints: the errors in full, first, then one line
    /// counting the warnings (by code) and naming the command that shows them. qcp1's ~50
    /// lines of warnings drowned every command's own output.
    pub fn render_errors_counting_warnings(&self, sources: &Sources, file: &Path) -> String {
        let mut out = self.errors_only().render(sources);
        let warnings = self.warning_count();
        if warnings > 0 {
            let mut codes: Vec<(&str, usize)> = Vec::new();
            for d in self
                .items
                .iter()
                .filter(|d| d.severity == Severity::Warning)
            {
                match codes.iter_mut().find(|(c, _)| *c == d.code) {
                    Some((_, n)) => *n += 1,
                    None => codes.push((d.code, 1)),
                }
            }
            let codes: Vec<String> = codes
                .iter()
                .map(|(c, n)| {
                    if *n > 1 {
                        format!("{c} x{n}")
                    } else {
                        c.to_string()
                    }
                })
                .collect();
            let file = file.display();
            out.push_str(&format!(
                "{} in {file} ({}): `envctl validate {file}` shows {}\n",
                crate::plan::estimate::plural(warnings, "lint warning", "lint warnings"),
                codes.join(", "),
                if warnings == 1 { "it" } else { "them" }
            ));
        }
        out
    }

    /// Sorted by file and position so output is stable however the checks ran, each
    /// problem once: a typo under `services.defaults` or in `--set services.*...` is merged
    /// into every service and found in each, at the one place it was written.
    pub fn sorted(mut self) -> Self {
        // Stable: diagnostics at one position keep the order they were found in, but the
        // same one found again (another service) must end up next to the first.
        let key = |d: &Diagnostic| (d.span.file, d.span.start, d.span.line, d.span.column);
        let mut seen: Vec<Diagnostic> = Vec::with_capacity(self.items.len());
        for d in std::mem::take(&mut self.items) {
            let again = seen
                .iter()
                .any(|s| key(s) == key(&d) && s.code == d.code && s.message == d.message);
            if !again {
                seen.push(d);
            }
        }
        self.items = seen;
        self.items.sort_by_key(key);
        self
    }

    pub fn records(&self, sources: &Sources) -> Vec<DiagnosticRecord> {
        self.items
            .iter()
            .map(|d| DiagnosticRecord {
                severity: d.severity,
                code: d.code,
                message: d.message.clone(),
                file: sources
                    .get(d.span.file)
                    .map(|s| s.name.clone())
                    .unwrap_or_else(|| "<built-in>".into()),
                line: d.span.line,
                column: d.span.column,
                hint: d.hint.clone(),
            })
            .collect()
    }

    /// Renders all diagnostics as text: `error[code]: message`, `--> file:line:col`, the
    /// source line with a caret, and the hint.
    pub fn render(&self, sources: &Sources) -> String {
        let mut files = SimpleFiles::new();
        let ids: Vec<usize> = sources
            .iter()
            .map(|(id, s)| files.add(s.name.clone(), self.concealed_text(id, &s.text)))
            .collect();
        let config = Config::default();
        let mut out = String::new();
        for d in &self.items {
            let mut cs = match d.severity {
                Severity::Error => CsDiagnostic::error(),
                Severity::Warning => CsDiagnostic::warning(),
            }
            .with_code(d.code)
            .with_message(d.message.clone());
            let mut labels = Vec::new();
            if let Some(&id) = ids.get(d.span.file.0 as usize) {
                labels.push(Label::primary(id, caret_range(sources, d.span)));
            }
            for (span, note) in &d.notes {
                if let Some(&id) = ids.get(span.file.0 as usize) {
                    labels
                        .push(Label::secondary(id, caret_range(sources, *span)).with_message(note));
                } else {
                    cs.notes.push(note.clone());
                }
            }
            cs = cs.with_labels(labels);
            if let Some(hint) = &d.hint {
                cs.notes.push(format!("hint: {hint}"));
            }
            match term::emit_into_string(&config, &files, &cs) {
                Ok(text) => out.push_str(&text),
                // A span that does not fit its file is a bug in envctl, but the message must
                // still reach the user.
                Err(_) => out.push_str(&format!(
                    "{}[{}]: {} ({})\n",
                    match d.severity {
                        Severity::Error => "error",
                        Severity::Warning => "warning",
                    },
                    d.code,
                    d.message,
                    sources.locate(d.span)
                )),
            }
        }
        out
    }
}

impl Diagnostics {
    /// A file's text with the spans of secret diagnostics overwritten by `*`, byte for
    /// byte, so every position stays where it was.
    fn concealed_text(&self, file: super::source::FileId, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        for d in self.items.iter().filter(|d| d.conceals_its_span()) {
            if d.span.file != file {
                continue;
            }
            let end = d.span.end.min(bytes.len());
            let start = d.span.start.min(end);
            // Whole characters only: a span cut inside one leaves its bytes alone.
            if text.is_char_boundary(start) && text.is_char_boundary(end) {
                bytes[start..end].fill(b'*');
            }
        }
        String::from_utf8(bytes).unwrap_or_else(|_| text.to_string())
    }
}

/// The range a caret underlines: the span itself, or one character where it is empty.
fn caret_range(sources: &Sources, span: Span) -> std::ops::Range<usize> {
    let len = sources.get(span.file).map(|s| s.text.len()).unwrap_or(0);
    let start = span.start.min(len);
    let end = span.end.clamp(start, len);
    if end > start {
        return start..end;
    }
    let text = sources
        .get(span.file)
        .map(|s| s.text.as_str())
        .unwrap_or("");
    let next = text[start..]
        .chars()
        .next()
        .filter(|c| *c != '\n')
        .map(|c| start + c.len_utf8())
        .unwrap_or(start);
    start..next
}
