//! Problems that do not stop a summary but that the reader should know about.
use std::fmt;

use serde::Serialize;

/// A non-fatal finding in one JTL source, rendered as `source:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JtlWarning {
    pub source_name: String,
    pub line: Option<u64>,
    pub kind: JtlWarningKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JtlWarningKind {
    /// The last row or element was cut off (JMeter killed mid-write, or the file copied while
    /// the test ran). Only the last one is forgiven: anywhere else the same damage means the
    /// file is corrupt and is an error, because skipping rows would silently bias the numbers.
    #[error("last row ignored because it is incomplete: {reason}")]
    TruncatedLastRow { reason: String },
    /// An XML file that ends without `</testResults>`: JMeter writes it only when the test
    /// ends, so the file is from a test that was still running or was killed.
    #[error("no closing </testResults>: the test was still running or was killed")]
    UnterminatedXml,
    #[error("no samples")]
    NoSamples,
}

impl fmt::Display for JtlWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.source_name, line, self.kind),
            None => write!(f, "{}: {}", self.source_name, self.kind),
        }
    }
}
