//! The per-label table for one or more JTL files.
use serde::Serialize;

use crate::report::jtl::{Convention, LabelStats};

/// Per-label rows in order of first appearance, plus the TOTAL row over all samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JtlReport {
    pub labels: Vec<LabelStats>,
    /// `None` when the input held no samples at all.
    pub total: Option<LabelStats>,
    /// The JMeter rules the figures follow.
    pub convention: Convention,
}

impl JtlReport {
    /// The name of the row over all labels, as in JMeter's own reports.
    pub const TOTAL_LABEL: &'static str = "TOTAL";

    /// Start of the first sample (ms since the epoch).
    pub fn start_ms(&self) -> Option<i64> {
        self.total.as_ref().map(|total| total.first_start_ms)
    }

    /// End of the last sample (ms since the epoch).
    pub fn end_ms(&self) -> Option<i64> {
        self.total.as_ref().map(|total| total.last_end_ms)
    }
}
