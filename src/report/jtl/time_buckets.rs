//! Response-time percentiles over time, per label: what a run report charts so that a
//! reader sees the tail move during the workload, not only one mean per point.
//!
//! Samples fall into fixed-width buckets by their start time; each bucket keeps its
//! distinct response times with their counts (a `BTreeMap`), so its memory grows with
//! the distinct values of one bucket, not with the rows. The caller picks the width from
//! the workload's length (about [`BUCKETS_PER_WORKLOAD`] buckets), so a long test does
//! not multiply the buckets.
use std::collections::BTreeMap;

use serde::Serialize;

/// How many buckets a workload is cut into for the charts.
pub const BUCKETS_PER_WORKLOAD: i64 = 30;

/// Percentiles of one bucket of one label.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BucketPercentiles {
    /// Start of the bucket, ms since the epoch.
    pub start_ms: i64,
    pub samples: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// One label's buckets in time order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelTimeline {
    pub label: String,
    pub width_ms: i64,
    pub buckets: Vec<BucketPercentiles>,
}

/// Bucket width for a workload of `span_ms`: [`BUCKETS_PER_WORKLOAD`] buckets, whole
/// seconds, at least one second (JMeter's results are to the millisecond, but a bucket of
/// a few samples says nothing about a tail).
pub fn bucket_width_ms(span_ms: i64) -> i64 {
    let width = span_ms / BUCKETS_PER_WORKLOAD;
    (width / 1000).max(1) * 1000
}

#[derive(Debug, Clone, Default)]
pub struct TimeBuckets {
    origin_ms: i64,
    width_ms: i64,
    /// (label position, bucket index) -> elapsed ms -> count.
    counts: BTreeMap<(usize, i64), BTreeMap<u64, u64>>,
}

impl TimeBuckets {
    /// Buckets of `width_ms` (at least 1 ms) counted from `origin_ms`.
    pub fn new(origin_ms: i64, width_ms: i64) -> Self {
        Self {
            origin_ms,
            width_ms: width_ms.max(1),
            counts: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, label: usize, start_ms: i64, elapsed_ms: u64) {
        let bucket = start_ms
            .saturating_sub(self.origin_ms)
            .div_euclid(self.width_ms);
        *self
            .counts
            .entry((label, bucket))
            .or_default()
            .entry(elapsed_ms)
            .or_default() += 1;
    }

    /// Per label (in `names`' order, which is the labels' positions), its buckets with the
    /// median and p95 under JMeter's Aggregate Report rule (the k-th smallest value with
    /// k = round(n × p), p a 32-bit float), the rule of the report's own percentile tables.
    pub fn finish(&self, names: &[String]) -> Vec<LabelTimeline> {
        names
            .iter()
            .enumerate()
            .filter_map(|(position, name)| {
                let buckets: Vec<BucketPercentiles> = self
                    .counts
                    .range((position, i64::MIN)..=(position, i64::MAX))
                    .map(|(&(_, bucket), counts)| {
                        let samples = counts.values().sum();
                        BucketPercentiles {
                            start_ms: self.origin_ms + bucket * self.width_ms,
                            samples,
                            p50_ms: percentile(counts, samples, 50.0),
                            p95_ms: percentile(counts, samples, 95.0),
                        }
                    })
                    .collect();
                (!buckets.is_empty()).then(|| LabelTimeline {
                    label: name.clone(),
                    width_ms: self.width_ms,
                    buckets,
                })
            })
            .collect()
    }
}

/// The k-th smallest of `counts` with k = Math.round(samples × (percent / 100 as f32)).
fn percentile(counts: &BTreeMap<u64, u64>, samples: u64, percent: f64) -> f64 {
    let fraction = f64::from((percent as f32) / 100.0);
    let target = ((samples as f64 * fraction + 0.5).floor() as u64).max(1);
    let mut seen = 0;
    for (&value, &count) in counts {
        seen += count;
        if seen >= target {
            return value as f64;
        }
    }
    counts.keys().next_back().map_or(0.0, |&max| max as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two one-second buckets: 1..=20 ms in the first, 101..=120 ms in the second. By hand:
    /// p50 rank round(20 × 0.5) = 10 -> 10 and 110; p95 rank round(20 × 0.95f) = 19 -> 19
    /// and 119. A sample at -1 ms (before the origin) opens bucket -1.
    #[test]
    fn percentiles_per_bucket_follow_the_aggregate_rule() {
        let mut buckets = TimeBuckets::new(10_000, 1000);
        for (index, elapsed) in (1..=20).enumerate() {
            buckets.add(0, 10_000 + index as i64 * 10, elapsed);
            buckets.add(0, 11_000 + index as i64 * 10, 100 + elapsed);
        }
        buckets.add(1, 9_999, 7);
        let timelines = buckets.finish(&["Check-in".to_owned(), "Search".to_owned()]);
        let check_in = &timelines[0];
        assert_eq!(
            check_in
                .buckets
                .iter()
                .map(|b| (b.start_ms, b.samples, b.p50_ms, b.p95_ms))
                .collect::<Vec<_>>(),
            [(10_000, 20, 10.0, 19.0), (11_000, 20, 110.0, 119.0)]
        );
        assert_eq!(timelines[1].buckets[0].start_ms, 9_000);
    }

    #[test]
    fn a_workload_is_cut_into_about_thirty_whole_second_buckets() {
        assert_eq!(bucket_width_ms(900_000), 30_000);
        assert_eq!(bucket_width_ms(1_000), 1_000);
        assert_eq!(bucket_width_ms(0), 1_000);
    }
}
