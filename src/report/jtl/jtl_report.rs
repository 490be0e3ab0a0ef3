//! The per-label table for one or more JTL files.
use serde::Serialize;

use crate::report::jtl::time_buckets::LabelTimeline;
use crate::report::jtl::{Convention, LabelStats};

/// Per-label rows in order of first appearance, plus the TOTAL row over all samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JtlReport {
    pub labels: Vec<LabelStats>,
    /// `None` when the input held no samples at all.
    pub total: Option<LabelStats>,
    /// The JMeter rules the figures follow.
    pub convention: Convention,
    /// When each input file ran, in the order given.
    pub files: Vec<FileSpan>,
    /// Per label, percentiles over time; empty unless asked for
    /// ([`crate::report::jtl::SampleAggregator::with_time_buckets`]).
    #[serde(skip)]
    pub timelines: Vec<LabelTimeline>,
}

/// One input file's samples and time span (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileSpan {
    pub source: String,
    pub samples: u64,
    pub first_start_ms: i64,
    pub last_end_ms: i64,
}

/// Merged files that did not all run at the same time: JMeter's throughput of the merged
/// table (samples over first start to last end) then counts the gaps between them as time
/// under load, and understates the rate at which the samples ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DisjointFiles {
    pub files: usize,
    /// Separate stretches of time the files cover (overlapping files form one).
    pub spans: usize,
    /// First start to last end.
    pub span_ms: i64,
    /// Time inside at least one file's span.
    pub covered_ms: i64,
    /// TOTAL's samples over the covered time: the rate while samples ran.
    pub covered_throughput_per_second: Option<f64>,
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

    /// `Some` when the files cover more than one separate stretch of time.
    pub fn disjoint_files(&self) -> Option<DisjointFiles> {
        let mut spans: Vec<(i64, i64)> = self
            .files
            .iter()
            .map(|file| (file.first_start_ms, file.last_end_ms))
            .collect();
        spans.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::new();
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        if merged.len() < 2 {
            return None;
        }
        let covered_ms: i64 = merged.iter().map(|(start, end)| end - start).sum();
        let samples = self.total.as_ref().map_or(0, |total| total.samples);
        Some(DisjointFiles {
            files: self.files.len(),
            spans: merged.len(),
            span_ms: self.end_ms().zip(self.start_ms()).map_or(0, |(e, s)| e - s),
            covered_ms,
            covered_throughput_per_second: (covered_ms > 0)
                .then(|| samples as f64 * 1000.0 / covered_ms as f64),
        })
    }
}
