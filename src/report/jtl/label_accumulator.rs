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
        self.min_ms = self.min_ms.min(other.min_ms);
        self.max_ms = self.max_ms.max(other.max_ms);
        self.first_start_ms = self.first_start_ms.min(other.first_start_ms);
        self.last_end_ms = self.last_end_ms.max(other.last_end_ms);
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The percentile under this accumulator's [`Convention`]:
    /// - aggregate: what JMeter's Aggregate Report shows as "90% Line" (its
    ///   `StatCalculator.getPercentPoint`): the smallest value whose cumulative count
    ///   reaches `round(samples * fraction)` (Java's half-up `Math.round`; a target of 0
    ///   gives the minimum); `fraction >= 1` is the maximum;
    /// - dashboard: see [`RecentWindow::legacy_percentile`].
    pub fn percentile_ms(&self, fraction: f64) -> Option<f64> {
        if self.samples == 0 {
            return None;
        }
        if let Some(recent) = &self.recent {
            return recent.legacy_percentile(fraction);
        }
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
        let percentile = |fraction| self.percentile_ms(fraction).unwrap_or(self.max_ms as f64);
        Some(LabelStats {
            label,
            samples: self.samples,
            errors: self.errors,
            error_percent: self.errors as f64 / samples * 100.0,
            mean_ms: self.elapsed_sum_ms as f64 / samples,
            min_ms: self.min_ms,
            max_ms: self.max_ms,
            p50_ms: percentile(0.50),
            p90_ms: percentile(0.90),
            p95_ms: percentile(0.95),
            p99_ms: percentile(0.99),
            percentiles_exact: self.counts.is_exact() || self.recent.is_some(),
            throughput_per_second: (window_ms > 0).then(|| samples * 1000.0 / window_ms as f64),
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
            };
            accumulator.add(&sample);
        }
        accumulator
    }

    // Expected values by hand from JMeter's StatCalculator rule on sorted values
    // 10,20,...,100 (n = 10): p50 -> round(5.0) = 5th = 50; p90 -> round(9.0) = 9th = 90;
    // p95 -> round(9.5) = 10th = 100; p99 -> round(9.9) = 10th = 100.
    #[test]
    fn percentiles_follow_jmeter_aggregate_report() {
        let accumulator = accumulate(&[100, 30, 10, 90, 20, 60, 40, 80, 50, 70]);
        assert_eq!(accumulator.percentile_ms(0.50), Some(50.0));
        assert_eq!(accumulator.percentile_ms(0.90), Some(90.0));
        assert_eq!(accumulator.percentile_ms(0.95), Some(100.0));
        assert_eq!(accumulator.percentile_ms(0.99), Some(100.0));
        // n = 7, p90: round(6.3) = 6th of 1..=7 -> 6 (a ceil-based nearest rank would say 7).
        assert_eq!(
            accumulate(&[1, 2, 3, 4, 5, 6, 7]).percentile_ms(0.90),
            Some(6.0)
        );
        // n = 1: every percentile is the only value; round(0.5) = 1.
        assert_eq!(accumulate(&[42]).percentile_ms(0.50), Some(42.0));
        assert_eq!(LabelAccumulator::default().percentile_ms(0.5), None);
    }

    /// The example: above 2047 ms an HdrHistogram bucket's top read 157,823 where
    /// JMeter shows 157,782. Values by hand: sorted 157,700 (x98), 157,782, 157,823;
    /// n = 100, p99 -> round(99.0) = 99th = 157,782; p50 -> 50th = 157,700.
    #[test]
    fn large_values_are_exact() {
        let mut elapsed = vec![157_700; 98];
        elapsed.extend([157_823, 157_782]);
        let accumulator = accumulate(&elapsed);
        assert_eq!(accumulator.percentile_ms(0.99), Some(157_782.0));
        assert_eq!(accumulator.percentile_ms(0.50), Some(157_700.0));
        assert_eq!(accumulator.percentile_ms(1.0), Some(157_823.0));
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

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let mut merged = accumulate(&[5, 7]);
        merged.merge(&accumulate(&[1, 9, 3]));
        let single = accumulate(&[5, 7, 1, 9, 3]);
        assert_eq!(merged.samples(), 5);
        assert_eq!(merged.percentile_ms(0.5), single.percentile_ms(0.5));
        assert_eq!(merged.finish("m".into()).unwrap().mean_ms, 5.0);
    }
}
