//! Why an OMB result file could not be read.

/// A result file that is not what OMB's driver writes, with the file's name.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {kind}")]
pub struct OmbError {
    pub source_name: String,
    pub kind: OmbErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum OmbErrorKind {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// serde_json's message names the line and column.
    #[error("not an OpenMessaging Benchmark result: {0}")]
    Json(#[from] serde_json::Error),
    /// OMB appends one value per window to every series, so they have one length.
    #[error("`{field}` has {found} windows where `publishRate` has {expected}")]
    SeriesLength {
        field: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("`{field}` holds a negative or non-finite value in window {window}: {value}")]
    BadValue {
        field: &'static str,
        window: usize,
        value: f64,
    },
}
