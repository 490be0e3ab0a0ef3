//! Performance-test results: JMeter JTL files in, per-label statistics and comparisons out.
//!
//! Two halves, each a pipeline of small nouns:
//! - [`jtl`]: JMeter result files -> per-label accumulation -> percentiles and the
//!   per-label table (`envctl report jtl`).
//! - [`run`]: a matrix run's results directory -> per-point measurements -> the comparison
//!   summary -> documents and renderers (`envctl report RUN_DIR`, `report compare`).
//!
//! - [`omb`]: OpenMessaging Benchmark result files -> throughput, latency and backlog
//!   figures, as OMB computes them.
//!
//! `timestamp` parses and formats the times both halves show.

pub mod jtl;
pub mod omb;
pub mod run;
mod timestamp;

pub use jtl::{
    JtlError, JtlErrorKind, JtlReport, JtlWarning, JtlWarningKind, LabelAccumulator, LabelStats,
    MAX_DISTINCT_LABELS, ReportFormat, Sample, SampleAggregator,
};
pub use run::{RunReportFormat, RunSummary};
