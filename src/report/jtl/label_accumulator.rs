//! Running totals for one label, in constant memory per distinct response time.
use crate::report::jtl::elapsed_counts::ElapsedCounts;
use crate::report::jtl::recent_window::{DASHBOARD_STATISTIC_WINDOW, RecentWindow};
use crate::report::jtl::{Convention, LabelStats, Sample};

/// Folds samples of one label into counts, sums, extremes and every distinct elapsed time
/// with its count (plus, for the dashboard convention, the last samples in order).
#[derive(Debug, Clone)]
pub struct LabelAccumulator {
    samples: u64,
    errors: u64,
    elapsed_sum_ms: u128,
    received_bytes: u128,
    sent_bytes: u128,
    min_ms: u64,
    max_ms: u64,
    first_start_ms: i64,
    last_end_ms: i64,
    counts: ElapsedCounts,
    /// Only for [`Convention::Dashboard`]: its percentiles look at the last samples only.
    recent: Option<RecentWindow>,
}

impl Default for LabelAccumulator {
    fn default() -> Self {
        Self::new(Convention::default())
    }
}

impl LabelAccumulator {
    pub fn new(convention: Convention) -> Self {
        Self {
            samples: 0,
            errors: 0,
            elapsed_sum_ms: 0,
            received_bytes: 0,
            sent_bytes: 0,
            min_ms: u64::MAX,
            max_ms: 0,
            first_start_ms: i64::MAX,
            last_end_ms: i64::MIN,
            counts: ElapsedCounts::default(),
            recent: (convention == Convention::Dashboard)
                .then(|| RecentWindow::new(DASHBOARD_STATISTIC_WINDOW)),
        }
    }

    pub fn add(&mut self, sample: &Sample<'_>) {
        self.counts.add(sample.elapsed_ms);
        if let Some(recent) = &mut self.recent {
            recent.push(sample.elapsed_ms);
        }
        self.samples += 1;
        self.errors += u64::from(!sample.success);
        self.elapsed_sum_ms += u128::from(sample.elapsed_ms);
        self.received_bytes += u128::from(sample.received_bytes);
        self.sent_bytes += u128::from(sample.sent_bytes);
        self.min_ms = self.min_ms.min(sample.elapsed_ms);
        self.max_ms = self.max_ms.max(sample.elapsed_ms);
        self.first_start_ms = self.first_start_ms.min(sample.start_ms);
        self.last_end_ms = self.last_end_ms.max(sample.end_ms());
    }

    /// Adds another accumulator's samples, as if they had been added here (for the
    /// dashboard window: after this one's).
    pub fn merge(&mut self, other: &LabelAccumulator) {
        if other.samples == 0 {
            return;
        }
        self.counts.merge(&other.counts);
        if let (Some(mine), Some(theirs)) = (&mut self.recent, &other.recent) {
            mine.extend_with(theirs);
        }
        self.samples += other.samples;
        self.errors += other.errors;
        self.elapsed_sum_ms += other.elapsed_sum_ms;
        self.received_bytes += other.received_bytes;
        self.sent_bytes += other.sent_bytes;
        self.min_ms = self.min_ms.min(other.min_ms);
        self.max_ms = self.max_ms.max(other.max_ms);
        self.first_start_ms = self.first_start_ms.min(other.first_start_ms);
        self.last_end_ms = self.last_end_ms.max(other.last_end_ms);
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The `percent`-th percentile (50, 90, 95, 99) under this accumulator's [`Convention`]:
    /// - aggregate: what JMeter's Aggregate Report shows as "90% Line" (its
    ///   `StatCalculator.getPercentPoint(float)`): the smallest value whose cumulative
    ///   count reaches `Math.round(samples × p)` (half-up; a target of 0 gives the minimum),
    ///   where p is `percent / 100` held as a 32-bit float, as the report's columns pass it
    ///   (`Float.parseFloat("90") / 100`); `p >= 1` is the maximum. The float matters:
    ///   0.9f is 0.89999998, so when `samples × 0.9` is exactly k + 0.5 (n ending in 5)
    ///   JMeter rounds down where exact arithmetic rounds up, and 0.95f likewise for
    ///   n ≡ 10 (mod 20). The median is asked as the double 0.5, which is exact anyway.
    /// - dashboard: see [`RecentWindow::legacy_percentile`].
    pub fn percentile_ms(&self, percent: f64) -> Option<f64> {
        if self.samples == 0 {
            return None;
        }
        if let Some(recent) = &self.recent {
            return recent.legacy_percentile(percent);
        }
        let fraction = f64::from((percent as f32) / 100.0);
        if fraction >= 1.0 {
            return Some(self.max_ms as f64);
        }
        // Java's Math.round is floor(x + 0.5).
        let target = (self.samples as f64 * fraction + 0.5).floor() as u64;
        let value = self.counts.kth_smallest(target).unwrap_or(self.max_ms);
        // Past the fallback a value is a bucket's top; the clamp keeps min <= p <= max.
        Some(value.clamp(self.min_ms, self.max_ms) as f64)
    }

    /// The finished row, or `None` if no sample was added.
    pub fn finish(&self, label: String) -> Option<LabelStats> {
        if self.samples == 0 {
            return None;
        }
        let samples = self.samples as f64;
        let window_ms = self.last_end_ms.saturating_sub(self.first_start_ms);
        let percentile = |percent| self.percentile_ms(percent).unwrap_or(self.max_ms as f64);
        // JMeter's KB/s (both reports): bytes / (window in s) / 1024, over the same
        // window as throughput (`SamplingStatCalculator.getKBPerSecond`,
        // `StatisticsSummaryData.getKBytesPerSecond`).
        let kb_per_second = |bytes: u128| {
            (window_ms > 0).then(|| bytes as f64 / (window_ms as f64 / 1000.0) / 1024.0)
        };
        Some(LabelStats {
            label,
            samples: self.samples,
            errors: self.errors,
            error_percent: self.errors as f64 / samples * 100.0,
            mean_ms: self.elapsed_sum_ms as f64 / samples,
            min_ms: self.min_ms,
            max_ms: self.max_ms,
            p50_ms: percentile(50.0),
            p90_ms: percentile(90.0),
            p95_ms: percentile(95.0),
            p99_ms: percentile(99.0),
            percentiles_exact: self.counts.is_exact() || self.recent.is_some(),
            throughput_per_second: (window_ms > 0).then(|| samples * 1000.0 / window_ms as f64),
            received_kb_per_second: kb_per_second(self.received_bytes),
            sent_kb_per_second: kb_per_second(self.sent_bytes),
            first_start_ms: self.first_start_ms,
            last_end_ms: self.last_end_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accumulate(elapsed: &[u64]) -> LabelAccumulator {
        let mut accumulator = LabelAccumulator::new(Convention::Aggregate);
        for (index, &elapsed_ms) in elapsed.iter().enumerate() {
            let sample = Sample {
                label: b"x",
                start_ms: index as i64 * 100,
                elapsed_ms,
                success: true,
                transaction_parent: false,
                empty_transaction: false,
                received_bytes: 0,
                sent_bytes: 0,
            };
            accumulator.add(&sample);
        }
        accumulator
    }

    // Expected values by hand from JMeter's StatCalculator rule on sorted values
    // 10,20,...,100 (n = 10): p50 -> round(5.0) = 5th = 50; p90 -> 10 × 0.9f = 8.9999998
    // -> 9th = 90; p95 -> 10 × 0.95f = 9.4999999 -> 9th = 90 (exact arithmetic would say
    // round(9.5) = 10th = 100, which JMeter does not show); p99 -> round(9.9) = 10th = 100.
    #[test]
    fn percentiles_follow_jmeter_aggregate_report() {
        let accumulator = accumulate(&[100, 30, 10, 90, 20, 60, 40, 80, 50, 70]);
        assert_eq!(accumulator.percentile_ms(50.0), Some(50.0));
        assert_eq!(accumulator.percentile_ms(90.0), Some(90.0));
        assert_eq!(accumulator.percentile_ms(95.0), Some(90.0));
        assert_eq!(accumulator.percentile_ms(99.0), Some(100.0));
        // n = 7, p90: round(6.3) = 6th of 1..=7 -> 6 (a ceil-based nearest rank would say 7).
        assert_eq!(
            accumulate(&[1, 2, 3, 4, 5, 6, 7]).percentile_ms(90.0),
            Some(6.0)
        );
        // n = 1: every percentile is the only value; round(0.5) = 1.
        assert_eq!(accumulate(&[42]).percentile_ms(50.0), Some(42.0));
        assert_eq!(LabelAccumulator::default().percentile_ms(50.0), None);
    }

    /// JMeter's rank is `Math.round(n × p)` with p = 0.9f, a 32-bit float just below 0.9:
    /// when n × 0.9 lands on .5 (n ending in 5) it rounds down. n = 5, values 10..50:
    /// 5 × 0.9f = 4.4999999 -> 4th = 40 (exact arithmetic: round(4.5) = 5th = 50, 25% more).
    #[test]
    fn p90_rank_rounds_down_when_n_ends_in_5() {
        assert_eq!(
            accumulate(&[50, 10, 40, 20, 30]).percentile_ms(90.0),
            Some(40.0)
        );
        // n = 1655 (the run), values 1..=1655 ms: 1655 × 0.9f = 1489.4999 -> 1489th
        // = 1489 ms, not round(1489.5) = 1490.
        let ramp: Vec<u64> = (1..=1655).collect();
        assert_eq!(accumulate(&ramp).percentile_ms(90.0), Some(1489.0));
    }

    /// p95 with n ≡ 10 (mod 20): n × 0.95 = k + 0.5 and 0.95f is 0.94999999, so JMeter takes
    /// the k-th value. n = 30, values 1..=30: 30 × 0.95f = 28.4999996 -> 28 (exact: 29).
    #[test]
    fn p95_rank_rounds_down_when_n_is_10_mod_20() {
        let values: Vec<u64> = (1..=30).collect();
        assert_eq!(accumulate(&values).percentile_ms(95.0), Some(28.0));
        // p99's float (0.99f = 0.99000001) is above 0.99, so .5 still rounds up: n = 50,
        // 50 × 0.99f = 49.5000005 -> 50th.
        let fifty: Vec<u64> = (1..=50).collect();
        assert_eq!(accumulate(&fifty).percentile_ms(99.0), Some(50.0));
    }

    /// The example: above 2047 ms an HdrHistogram bucket's top read 157,823 where
    /// JMeter shows 157,782. Values by hand: sorted 157,700 (x98), 157,782, 157,823;
    /// n = 100, p99 -> round(99.0) = 99th = 157,782; p50 -> 50th = 157,700.
    #[test]
    fn large_values_are_exact() {
        let mut elapsed = vec![157_700; 98];
        elapsed.extend([157_823, 157_782]);
        let accumulator = accumulate(&elapsed);
        assert_eq!(accumulator.percentile_ms(99.0), Some(157_782.0));
        assert_eq!(accumulator.percentile_ms(50.0), Some(157_700.0));
        assert_eq!(accumulator.percentile_ms(100.0), Some(157_823.0));
        assert!(accumulator.finish("x".into()).unwrap().percentiles_exact);
    }

    /// Dashboard rule by hand on 10, 20, ..., 100: p50 at position 0.5 x 11 = 5.5 -> 55;
    /// p90 at 9.9 -> 99; p99 at 10.89 >= n -> max 100.
    #[test]
    fn dashboard_percentiles_interpolate() {
        let mut accumulator = LabelAccumulator::new(Convention::Dashboard);
        for (index, elapsed_ms) in [100, 30, 10, 90, 20, 60, 40, 80, 50, 70]
            .into_iter()
            .enumerate()
        {
            accumulator.add(&Sample {
                label: b"x",
                start_ms: index as i64,
                elapsed_ms,
                success: true,
                transaction_parent: false,
                empty_transaction: false,
                received_bytes: 0,
                sent_bytes: 0,
            });
        }
        let stats = accumulator.finish("x".into()).unwrap();
        assert!((stats.p50_ms - 55.0).abs() < 1e-9, "{}", stats.p50_ms);
        assert!((stats.p90_ms - 99.0).abs() < 1e-9, "{}", stats.p90_ms);
        assert_eq!(stats.p99_ms, 100.0);
    }

    #[test]
    fn finish_computes_throughput_over_first_start_to_last_end() {
        // Starts 0,100,200 with elapsed 50,50,300: window 0..500 ms -> 3 / 0.5 s = 6/s.
        let stats = accumulate(&[50, 50, 300]).finish("x".into()).unwrap();
        assert_eq!(stats.throughput_per_second, Some(6.0));
        assert_eq!((stats.first_start_ms, stats.last_end_ms), (0, 500));
        assert_eq!(
            (stats.min_ms, stats.max_ms, stats.mean_ms),
            (50, 300, 400.0 / 3.0)
        );
        assert!(LabelAccumulator::default().finish("x".into()).is_none());
    }

    /// JMeter's received/sent KB/s: bytes over the throughput window, KB = 1,024 bytes.
    /// Two samples at 0 ms (elapsed 100) and 400 ms (elapsed 100): window 500 ms; received
    /// 1,024 + 1,536 = 2,560 B -> 2.5 KB / 0.5 s = 5 KB/s; sent 256 B -> 0.5 KB/s.
    #[test]
    fn kb_per_second_over_the_throughput_window() {
        let mut accumulator = LabelAccumulator::new(Convention::Aggregate);
        for (start_ms, received_bytes, sent_bytes) in [(0, 1024, 128), (400, 1536, 128)] {
            accumulator.add(&Sample {
                label: b"x",
                start_ms,
                elapsed_ms: 100,
                success: true,
                transaction_parent: false,
                empty_transaction: false,
                received_bytes,
                sent_bytes,
            });
        }
        let stats = accumulator.finish("x".into()).unwrap();
        assert_eq!(stats.received_kb_per_second, Some(5.0));
        assert_eq!(stats.sent_kb_per_second, Some(0.5));
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let mut merged = accumulate(&[5, 7]);
        merged.merge(&accumulate(&[1, 9, 3]));
        let single = accumulate(&[5, 7, 1, 9, 3]);
        assert_eq!(merged.samples(), 5);
        assert_eq!(merged.percentile_ms(50.0), single.percentile_ms(50.0));
        assert_eq!(merged.finish("m".into()).unwrap().mean_ms, 5.0);
    }
}
