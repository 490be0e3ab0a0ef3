//! OpenMessaging Benchmark results: the driver's result JSON in, envctl's figures out.
//!
//! `omb_result` reads the file OMB's driver writes (`bin/benchmark ... --output FILE`: its
//! `TestResult` class serialized by Jackson) as it is, field for field; `omb_figures` turns
//! one into what a report shows (throughput in msg/s and MB/s with the per-window series,
//! publish and end-to-end latency percentiles, publish errors, backlog), computed the way
//! OMB computes them. What OMB writes and how envctl reads it: docs/reports.md, "OpenMessaging
//! Benchmark results".

mod omb_error;
mod omb_figures;
mod omb_result;

pub use omb_error::{OmbError, OmbErrorKind};
pub use omb_figures::{
    BacklogFigures, ErrorFigures, LatencyFigures, OMB_WINDOW_SECS, OmbFigures, Throughput,
};
pub use omb_result::{OmbResult, read_omb_result};
