//! JMeter results (JTL) files in, per-label statistics out.
//!
//! The flow is a pipeline of small nouns:
//! `reader` (detects CSV or XML) -> `csv_jtl` / `xml_jtl` (stream rows as [`Sample`]s) ->
//! [`SampleAggregator`] (one [`LabelAccumulator`] per label, constant memory per label) ->
//! [`JtlReport`] (finished [`LabelStats`] rows plus TOTAL) -> `render` (Markdown, JSON, CSV).
//!
//! Memory does not grow with the number of rows: a row is parsed, folded into its label's
//! accumulator and dropped. It grows with the number of distinct labels, which is capped
//! ([`MAX_DISTINCT_LABELS`]) because a plan that puts request ids into labels would otherwise
//! grow without bound.
//!
//! Dependencies and why each is here:
//! - `csv`: JMeter quotes fields that contain the delimiter, quotes or line breaks (response
//!   messages, failure messages, labels); a split on commas would miscount them. `csv` reads
//!   byte records, so non-UTF-8 labels cost nothing until they are shown.
//! - `quick-xml`: XML JTL files can be gigabytes with response bodies inside; a pull parser
//!   reads them element by element without building a tree. Pinned to 0.38, the last
//!   byte-based release: 0.39+ hand out `&str` and reject a file with one non-UTF-8 byte,
//!   where a lossy label is wanted.
//! - `hdrhistogram` (no default features: no serialization, no threads): percentiles in
//!   constant memory per label, exact for values below 2048 ms and within 0.1% above
//!   (3 significant digits), instead of keeping every elapsed time to sort.
//! - `statrs` (no default features: no nalgebra, no rand): the Student t distribution's CDF
//!   for Welch's t-test; its regularized incomplete beta function is tested and accurate in
//!   the tails, which a hand-rolled series would not be without much care.
//! - `plotters` (only `svg_backend` and `line_series`: no font-kit, no bitmap backends):
//!   `chart` draws line and grouped bar charts to an SVG `String`, with no system fonts
//!   needed, so charts render the same on CI as on a laptop.

mod aggregator;
mod csv_jtl;
mod jtl_error;
mod jtl_report;
mod jtl_warning;
mod label_accumulator;
mod label_stats;
pub mod reader;
pub mod render;
mod sample;
mod xml_jtl;

pub use aggregator::{MAX_DISTINCT_LABELS, SampleAggregator};
pub use jtl_error::{JtlError, JtlErrorKind};
pub use jtl_report::JtlReport;
pub use jtl_warning::{JtlWarning, JtlWarningKind};
pub use label_accumulator::LabelAccumulator;
pub use label_stats::LabelStats;
pub use reader::{JtlFormat, read_jtl, summarize_jtl_files};
pub use render::ReportFormat;
pub use sample::Sample;
