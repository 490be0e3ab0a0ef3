//! Running totals for one label, in constant memory whatever the number of samples.
use hdrhistogram::Histogram;

use crate::report::jtl::{LabelStats, Sample};

/// Significant digits kept by the histogram: values below 2048 ms are exact, larger ones
/// are within 0.1%, and a label costs tens of kilobytes however many samples it has.
const HISTOGRAM_SIGNIFICANT_DIGITS: u8 = 3;

/// Folds samples of one label into counts, sums, extremes and a latency histogram.
#[derive(Debug, Clone)]
pub struct LabelAccumulator {
    samples: u64,
    errors: u64,
    elapsed_sum_ms: u128,
    min_ms: u64,
    max_ms: u64,
    first_start_ms: i64,
    last_end_ms: i64,
    histogram: Histogram<u64>,
}

/// The histogram refused a value (only possible beyond 2^63 ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("elapsed time {0} ms is too large to record")]
pub struct ElapsedOutOfRange(pub u64);

impl Default for LabelAccumulator {
    fn default() -> Self {
        Self::new()
    }
}

impl LabelAccumulator {
    pub fn new() -> Self {
        // `new` auto-resizes, so the histogram grows only as far as the largest value seen.
        let histogram = Histogram::new(HISTOGRAM_SIGNIFICANT_DIGITS)
            .expect("3 significant digits is within HdrHistogram's supported 0..=5");
        Self {
            samples: 0,
            errors: 0,
            elapsed_sum_ms: 0,
            min_ms: u64::MAX,
            max_ms: 0,
            first_start_ms: i64::MAX,
            last_end_ms: i64::MIN,
            histogram,
        }
    }

    pub fn add(&mut self, sample: &Sample<'_>) -> Result<(), ElapsedOutOfRange> {
        self.histogram
            .record(sample.elapsed_ms)
            .map_err(|_| ElapsedOutOfRange(sample.elapsed_ms))?;
        self.samples += 1;
        self.errors += u64::from(!sample.success);
        self.elapsed_sum_ms += u128::from(sample.elapsed_ms);
        self.min_ms = self.min_ms.min(sample.elapsed_ms);
        self.max_ms = self.max_ms.max(sample.elapsed_ms);
        self.first_start_ms = self.first_start_ms.min(sample.start_ms);
        self.last_end_ms = self.last_end_ms.max(sample.end_ms());
        Ok(())
    }

    /// Adds another accumulator's samples, as if they had been added here.
    pub fn merge(&mut self, other: &LabelAccumulator) {
        if other.samples == 0 {
            return;
        }
        // Both histograms auto-resize, so adding cannot run out of range.
        let _ = self.histogram.add(&other.histogram);
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

    /// The percentile JMeter's Aggregate Report shows as "90% Line" (its `StatCalculator`):
    /// the smallest value whose cumulative count reaches `round(samples * fraction)`, with
    /// Java's half-up rounding; `fraction >= 1` is the maximum. Matching JMeter means the
    /// numbers agree with what the testers see in the JMeter GUI.
    pub fn percentile_ms(&self, fraction: f64) -> Option<u64> {
        if self.samples == 0 {
            return None;
        }
        if fraction >= 1.0 {
            return Some(self.max_ms);
        }
        // Java's Math.round is floor(x + 0.5).
        let mut target = (self.samples as f64 * fraction + 0.5).floor() as u64;
        for bucket in self.histogram.iter_recorded() {
            target = target.saturating_sub(bucket.count_at_value());
            if target == 0 {
                // Above 2047 ms a bucket spans a few ms; the clamp keeps p ≤ max and ≥ min.
                return Some(bucket.value_iterated_to().clamp(self.min_ms, self.max_ms));
            }
        }
        Some(self.max_ms)
    }

    /// The finished row, or `None` if no sample was added.
    pub fn finish(&self, label: String) -> Option<LabelStats> {
        if self.samples == 0 {
            return None;
        }
        let samples = self.samples as f64;
        let window_ms = self.last_end_ms.saturating_sub(self.first_start_ms);
        let percentile = |fraction| self.percentile_ms(fraction).unwrap_or(self.max_ms);
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
        let mut accumulator = LabelAccumulator::new();
        for (index, &elapsed_ms) in elapsed.iter().enumerate() {
            let sample = Sample {
                label: b"x",
                start_ms: index as i64 * 100,
                elapsed_ms,
                success: true,
            };
            accumulator.add(&sample).unwrap();
        }
        accumulator
    }

    // Expected values by hand from JMeter's StatCalculator rule on sorted values
    // 10,20,...,100 (n = 10): p50 -> round(5.0) = 5th = 50; p90 -> round(9.0) = 9th = 90;
    // p95 -> round(9.5) = 10th = 100; p99 -> round(9.9) = 10th = 100.
    #[test]
    fn percentiles_follow_jmeter_aggregate_report() {
        let accumulator = accumulate(&[100, 30, 10, 90, 20, 60, 40, 80, 50, 70]);
        assert_eq!(accumulator.percentile_ms(0.50), Some(50));
        assert_eq!(accumulator.percentile_ms(0.90), Some(90));
        assert_eq!(accumulator.percentile_ms(0.95), Some(100));
        assert_eq!(accumulator.percentile_ms(0.99), Some(100));
        // n = 7, p90: round(6.3) = 6th of 1..=7 -> 6 (a ceil-based nearest rank would say 7).
        assert_eq!(
            accumulate(&[1, 2, 3, 4, 5, 6, 7]).percentile_ms(0.90),
            Some(6)
        );
        // n = 1: every percentile is the only value; round(0.5) = 1.
        assert_eq!(accumulate(&[42]).percentile_ms(0.50), Some(42));
        assert_eq!(LabelAccumulator::new().percentile_ms(0.5), None);
    }

    #[test]
    fn large_values_stay_within_a_tenth_of_a_percent_and_within_min_max() {
        let accumulator = accumulate(&[123_457, 123_457, 250_001]);
        let p50 = accumulator.percentile_ms(0.5).unwrap();
        assert!(p50.abs_diff(123_457) <= 124, "p50 {p50}");
        assert_eq!(accumulator.percentile_ms(0.99), Some(250_001));
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
        assert!(LabelAccumulator::new().finish("x".into()).is_none());
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
