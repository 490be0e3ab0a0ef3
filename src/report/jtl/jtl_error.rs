//! Why a JTL file could not be summarized, with the place in the file.
use std::fmt;

/// A fatal problem in one JTL source, rendered as `source:line: message` like a compiler.
#[derive(Debug, thiserror::Error)]
pub struct JtlError {
    /// The file name (or any name the caller gave the input).
    pub source_name: String,
    /// 1-based line where the offending row or element starts, when there is one.
    pub line: Option<u64>,
    pub kind: JtlErrorKind,
}

/// What went wrong; each variant names the column or attribute it is about.
#[derive(Debug, thiserror::Error)]
pub enum JtlErrorKind {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    #[error("the CSV header has no `{column}` column (header: {header})")]
    MissingColumn {
        column: &'static str,
        header: String,
    },
    #[error(
        "no CSV header and only {found} fields; without a header JMeter's default column set \
         ({expected} columns: timeStamp,elapsed,label,...) is assumed; add a header with \
         jmeter.save.saveservice.print_field_names=true"
    )]
    TooFewDefaultColumns { expected: usize, found: usize },
    #[error("expected {expected} fields like the first row, found {found}")]
    FieldCount { expected: usize, found: usize },
    #[error("`{column}` is not a whole number of milliseconds: {value:?}")]
    InvalidNumber { column: &'static str, value: String },
    #[error(
        "`{column}` is neither milliseconds since the epoch nor a date like \
         2023-10-27 08:26:47.123: {value:?}"
    )]
    InvalidTimestamp { column: &'static str, value: String },
    #[error("`{column}` is neither true nor false: {value:?}")]
    InvalidBoolean { column: &'static str, value: String },
    #[error(
        "statistical-mode results (a `SampleCount` column) aggregate several samples per row \
         and are not supported; save one row per sample"
    )]
    StatisticalMode,
    #[error("<{element}> has no `{attribute}` attribute")]
    MissingAttribute {
        element: String,
        attribute: &'static str,
    },
    #[error("not a JMeter XML results file: the root element is <{0}>, not <testResults>")]
    UnexpectedRoot(String),
    #[error("malformed CSV: {0}")]
    Csv(String),
    #[error("malformed XML: {0}")]
    Xml(String),
    #[error(
        "more than {limit} distinct labels; labels that carry ids (URLs with parameters?) would \
         make this table useless; name samplers by transaction"
    )]
    TooManyLabels { limit: usize },
}

impl JtlError {
    pub fn new(source_name: &str, line: Option<u64>, kind: JtlErrorKind) -> Self {
        Self {
            source_name: source_name.to_owned(),
            line,
            kind,
        }
    }
}

impl fmt::Display for JtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.source_name, line, self.kind),
            None => write!(f, "{}: {}", self.source_name, self.kind),
        }
    }
}
