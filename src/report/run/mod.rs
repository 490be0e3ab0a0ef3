//! A matrix run's results directory in, the comparison report out.
//!
//! `results::RunDir` -> per point [`point_measurement::PointMeasurement`] -> the
//! [`RunSummary`] (variants, groups, figures with deltas and significance) ->
//! [`report_document::ReportDocument`] (headings, sentences, tables decided once) -> the
//! Markdown, HTML, JSON and CSV renderers, picked by [`RunReportFormat`].
//!
//! Dependencies and why each is here:
//! - `statrs` (no default features: no nalgebra, no rand): the Student t distribution's CDF
//!   for Welch's t-test; its regularized incomplete beta function is tested and accurate in
//!   the tails, which a hand-rolled series would not be without much care.
//! - `plotters` (only `svg_backend` and `line_series`: no font-kit, no bitmap backends):
//!   `chart` draws line and grouped bar charts to an SVG `String`, with no system fonts
//!   needed, so charts render the same on CI as on a laptop.

pub mod baseline;
pub mod chart;
pub mod csv_report;
pub mod figure;
pub mod figure_format;
mod group_section;
pub mod html_report;
pub mod json_report;
pub mod markdown_report;
pub mod memory_trend;
pub mod point_measurement;
pub mod report_document;
mod report_findings;
pub mod run_report_format;
pub mod run_summary;
pub mod shortfall;
pub mod stats;

pub use run_report_format::RunReportFormat;
pub use run_summary::RunSummary;
