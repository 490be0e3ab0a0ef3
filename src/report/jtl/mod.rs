//! JMeter results (JTL) files in, per-label statistics out.
//!
//! The flow is a pipeline of small nouns:
//! `reader` (detects CSV or XML) -> `csv_jtl` / `xml_jtl` (stream rows as [`Sample`]s) ->
//! [`SampleAggregator`] (one [`LabelAccumulator`] per label, which keeps an
//! `elapsed_counts::ElapsedCounts` value -> count map for exact percentiles) ->
//! [`JtlReport`] (finished [`LabelStats`] rows plus TOTAL, under a [`Convention`]) ->
//! `render` (Markdown, JSON, CSV).
//!
//! Memory does not grow with the number of rows: a row is parsed, folded into its label's
//! accumulator and dropped. It grows with the number of distinct labels, which is capped
//! ([`MAX_DISTINCT_LABELS`]) because a plan that puts request ids into labels would otherwise
//! grow without bound, and with the number of distinct response times per label, which is
//! bounded too (`elapsed_counts::MAX_EXACT_LARGE_VALUES`).
//!
//! Dependencies and why each is here:
//! - `csv`: JMeter quotes fields that contain the delimiter, quotes or line breaks (response
//!   messages, failure messages, labels); a split on commas would miscount them. `csv` reads
//!   byte records, so non-UTF-8 labels cost nothing until they are shown.
//! - `quick-xml`: XML JTL files can be gigabytes with response bodies inside; a pull parser
//!   reads them element by element without building a tree. Pinned to 0.38, the last
//!   byte-based release: 0.39+ hand out `&str` and reject a file with one non-UTF-8 byte,
//!   where a lossy label is wanted.
//! - `hdrhistogram` (no default features: no serialization, no threads): only the fallback
//!   of a label with more distinct large response times than are kept exactly (within 0.1%,
//!   3 significant digits), so memory stays bounded on pathological files.

mod aggregator;
pub mod convention;
mod csv_jtl;
pub mod elapsed_counts;
mod jtl_error;
mod jtl_report;
mod jtl_warning;
mod label_accumulator;
mod label_stats;
pub mod reader;
pub mod recent_window;
pub mod render;
mod sample;
pub mod time_buckets;
mod xml_jtl;

pub use aggregator::{MAX_DISTINCT_LABELS, SampleAggregator};
pub use convention::Convention;
pub use jtl_error::{JtlError, JtlErrorKind};
pub use jtl_report::{DisjointFiles, FileSpan, JtlReport};
pub use jtl_warning::{JtlWarning, JtlWarningKind};
pub use label_accumulator::LabelAccumulator;
pub use label_stats::LabelStats;
pub use reader::{
    Grouping, JtlFormat, group_files, read_jtl, summarize_jtl_files, summarize_jtl_files_over_time,
};
pub use render::ReportFormat;
pub use sample::Sample;
