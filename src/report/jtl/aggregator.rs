//! Routes each sample to its label's accumulator and to the TOTAL row.
use std::collections::HashMap;

use crate::report::jtl::time_buckets::TimeBuckets;
use crate::report::jtl::{Convention, JtlErrorKind, JtlReport, LabelAccumulator, Sample};

/// The most distinct labels one report accepts; see the module doc for why there is a cap.
pub const MAX_DISTINCT_LABELS: usize = 10_000;

/// Per-label accumulators in order of first appearance (the order of JMeter's Aggregate
/// Report, which usually follows the workflow: log in, check out, check in).
///
/// Every top-level sample is a row of its own. A Transaction Controller without "Generate
/// parent sample" writes its transaction sample next to its requests' samples, so TOTAL then
/// counts both, exactly as JMeter's Aggregate Report does ([`Convention::Aggregate`]); the
/// dashboard ([`Convention::Dashboard`]) leaves such parents out of TOTAL. With "Generate
/// parent sample" the requests are sub-samples and are not counted (see `xml_jtl`).
#[derive(Debug, Default)]
pub struct SampleAggregator {
    convention: Convention,
    /// Every sample added, parents included (TOTAL may leave some out).
    samples: u64,
    /// Raw label bytes -> position in `labels`; bytes, not strings, so that the hot path
    /// neither validates UTF-8 nor allocates for labels already seen.
    index_by_label: HashMap<Box<[u8]>, usize>,
    labels: Vec<(Box<[u8]>, LabelAccumulator)>,
    total: LabelAccumulator,
    /// Samples, first start and last end since the last [`Self::take_source_span`]: the
    /// span of the file being read, to tell whether merged files ran at the same time.
    source_span: Option<(u64, i64, i64)>,
    /// Percentiles over time, when a run report asked for them.
    time_buckets: Option<TimeBuckets>,
}

impl SampleAggregator {
    /// An aggregator for JMeter's Aggregate Report convention.
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_convention(convention: Convention) -> Self {
        Self {
            convention,
            total: LabelAccumulator::new(convention),
            ..Self::default()
        }
    }

    /// Also keeps each label's percentiles per bucket of `width_ms` from `origin_ms`
    /// (see [`TimeBuckets`]).
    pub fn with_time_buckets(mut self, origin_ms: i64, width_ms: i64) -> Self {
        self.time_buckets = Some(TimeBuckets::new(origin_ms, width_ms));
        self
    }

    pub fn add(&mut self, sample: &Sample<'_>) -> Result<(), JtlErrorKind> {
        // JMeter's dashboard skips an empty Transaction Controller parent before any row
        // sees it (`StatisticsSummaryConsumer.updateData`: `if (!sample.isEmptyController())`),
        // so its label's count, percentiles and throughput are over the non-empty ones only.
        if sample.empty_transaction && self.convention == Convention::Dashboard {
            return Ok(());
        }
        let index = match self.index_by_label.get(sample.label) {
            Some(&index) => index,
            None => {
                if self.labels.len() >= MAX_DISTINCT_LABELS {
                    return Err(JtlErrorKind::TooManyLabels {
                        limit: MAX_DISTINCT_LABELS,
                    });
                }
                let label: Box<[u8]> = sample.label.into();
                self.index_by_label.insert(label.clone(), self.labels.len());
                self.labels
                    .push((label, LabelAccumulator::new(self.convention)));
                self.labels.len() - 1
            }
        };
        self.samples += 1;
        let (count, start, end) = self.source_span.unwrap_or((0, i64::MAX, i64::MIN));
        self.source_span = Some((
            count + 1,
            start.min(sample.start_ms),
            end.max(sample.end_ms()),
        ));
        self.labels[index].1.add(sample);
        if let Some(buckets) = &mut self.time_buckets {
            buckets.add(index, sample.start_ms, sample.elapsed_ms);
        }
        if !(sample.transaction_parent && self.convention == Convention::Dashboard) {
            self.total.add(sample);
        }
        Ok(())
    }

    /// Samples, first start and last end (ms since the epoch) added since the previous
    /// call; `None` when none was.
    pub fn take_source_span(&mut self) -> Option<(u64, i64, i64)> {
        self.source_span.take()
    }

    /// Number of samples added so far, Transaction Controller parents included.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Finishes every label. Labels are shown decoded lossily (invalid UTF-8 becomes U+FFFD);
    /// two different byte strings that decode to the same text are merged, so that the
    /// table never shows two rows with the same name.
    pub fn finish(self) -> JtlReport {
        // Bucketed by raw label position; two raw labels that decode to one name stay two
        // timelines of that name (rare: invalid UTF-8), which the charts draw as one label.
        let timelines = self.time_buckets.as_ref().map_or_else(Vec::new, |buckets| {
            let names: Vec<String> = self
                .labels
                .iter()
                .map(|(raw, _)| String::from_utf8_lossy(raw).into_owned())
                .collect();
            buckets.finish(&names)
        });
        let mut merged: Vec<(String, LabelAccumulator)> = Vec::with_capacity(self.labels.len());
        let mut index_by_name: HashMap<String, usize> = HashMap::new();
        for (raw, accumulator) in self.labels {
            let name = String::from_utf8_lossy(&raw).into_owned();
            match index_by_name.get(&name) {
                Some(&index) => merged[index].1.merge(&accumulator),
                None => {
                    index_by_name.insert(name.clone(), merged.len());
                    merged.push((name, accumulator));
                }
            }
        }
        JtlReport {
            labels: merged
                .into_iter()
                .filter_map(|(name, acc)| acc.finish(name))
                .collect(),
            total: self.total.finish(JtlReport::TOTAL_LABEL.to_owned()),
            convention: self.convention,
            files: Vec::new(),
            timelines,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(label: &[u8], start_ms: i64, elapsed_ms: u64, success: bool) -> Sample<'_> {
        Sample {
            label,
            start_ms,
            elapsed_ms,
            success,
            transaction_parent: false,
            empty_transaction: false,
            received_bytes: 0,
            sent_bytes: 0,
        }
    }

    #[test]
    fn keeps_first_appearance_order_and_totals_everything() {
        let mut aggregator = SampleAggregator::new();
        aggregator
            .add(&sample(b"Check-out", 1000, 200, true))
            .unwrap();
        aggregator
            .add(&sample(b"Check-in", 1100, 100, false))
            .unwrap();
        aggregator
            .add(&sample(b"Check-out", 1300, 400, true))
            .unwrap();
        let report = aggregator.finish();
        let names: Vec<_> = report.labels.iter().map(|row| row.label.as_str()).collect();
        assert_eq!(names, ["Check-out", "Check-in"]);
        assert_eq!(report.labels[0].mean_ms, 300.0);
        let total = report.total.unwrap();
        assert_eq!((total.samples, total.errors), (3, 1));
        assert_eq!((total.first_start_ms, total.last_end_ms), (1000, 1700));
    }

    /// JMeter's dashboard (`StatisticsSummaryConsumer.updateData`) skips parents whose
    /// response message starts "Number of samples in transaction : 0" in their own row too,
    /// not only in TOTAL; the Aggregate Report counts them (as 0 ms samples here).
    #[test]
    fn dashboard_drops_empty_transaction_parents_from_their_row() {
        let parent = |elapsed_ms, empty| Sample {
            transaction_parent: true,
            empty_transaction: empty,
            ..sample(b"Optional search", 1000, elapsed_ms, true)
        };
        let rows = [
            parent(0, true),
            parent(40, false),
            parent(0, true),
            sample(b"Search", 1000, 40, true),
        ];
        let run = |convention| {
            let mut aggregator = SampleAggregator::with_convention(convention);
            for row in &rows {
                aggregator.add(row).unwrap();
            }
            let report = aggregator.finish();
            let optional = &report.labels[0];
            (
                optional.samples,
                optional.p50_ms,
                report.total.map(|total| total.samples),
            )
        };
        assert_eq!(run(Convention::Dashboard), (1, 40.0, Some(1)));
        assert_eq!(run(Convention::Aggregate), (3, 0.0, Some(4)));
    }

    #[test]
    fn labels_that_decode_to_the_same_text_become_one_row() {
        let mut aggregator = SampleAggregator::new();
        aggregator.add(&sample(b"caf\xE9", 0, 10, true)).unwrap();
        aggregator.add(&sample(b"caf\xFF", 0, 30, true)).unwrap();
        let report = aggregator.finish();
        assert_eq!(report.labels.len(), 1);
        assert_eq!(report.labels[0].label, "caf\u{FFFD}");
        assert_eq!(report.labels[0].samples, 2);
    }

    #[test]
    fn refuses_unbounded_label_sets() {
        let mut aggregator = SampleAggregator::new();
        for id in 0..MAX_DISTINCT_LABELS {
            aggregator
                .add(&sample(id.to_string().as_bytes(), 0, 1, true))
                .unwrap();
        }
        let error = aggregator
            .add(&sample(b"one more", 0, 1, true))
            .unwrap_err();
        assert!(matches!(
            error,
            JtlErrorKind::TooManyLabels {
                limit: MAX_DISTINCT_LABELS
            }
        ));
    }
}
