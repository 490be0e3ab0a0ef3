//! The finished numbers for one transaction label (or the TOTAL row).
use serde::Serialize;

/// One row of the per-label table. Times are milliseconds; percentiles follow the
/// [`crate::report::jtl::Convention`] the aggregator was built with (see
/// [`crate::report::jtl::LabelAccumulator::percentile_ms`]): whole milliseconds for the
/// Aggregate Report, interpolated for the dashboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelStats {
    pub label: String,
    pub samples: u64,
    pub errors: u64,
    /// `errors / samples * 100`.
    pub error_percent: f64,
    pub mean_ms: f64,
    pub min_ms: u64,
    pub max_ms: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// False when the label had more distinct response times at or above 2,048 ms than
    /// envctl keeps exactly, so those percentiles are within 0.1% (see `elapsed_counts`).
    pub percentiles_exact: bool,
    /// Samples per second over `first_start_ms..last_end_ms`, as JMeter computes throughput;
    /// `None` when that window is empty (all samples started and ended in the same ms).
    pub throughput_per_second: Option<f64>,
    /// Received KB/s over the same window (KB = 1,024 bytes, as JMeter counts them);
    /// `None` when the window is empty.
    pub received_kb_per_second: Option<f64>,
    /// Sent KB/s over the same window; 0 for files without `sentBytes`.
    pub sent_kb_per_second: Option<f64>,
    /// Start of the earliest sample, ms since the epoch.
    pub first_start_ms: i64,
    /// End (`start + elapsed`) of the latest-ending sample, ms since the epoch.
    pub last_end_ms: i64,
}
