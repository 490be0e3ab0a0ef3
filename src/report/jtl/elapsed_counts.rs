//! Every elapsed time of one label, kept as an exact value -> count map, so percentiles are
//! exact at every magnitude (JMeter's `StatCalculator` keeps the same map).
//!
//! Memory grows with the number of *distinct* values, not with the number of samples:
//! response times in whole milliseconds repeat a lot. Two parts keep the hot path cheap:
//! values below [`DENSE_LIMIT_MS`] are counted in an array indexed by the value (one add,
//! no search), larger ones in an ordered map. A label whose large values are so spread out
//! that the map would pass [`MAX_EXACT_LARGE_VALUES`] entries falls back to an HdrHistogram
//! with 3 significant digits for its values at or above [`DENSE_LIMIT_MS`] (within 0.1%),
//! and says so, rather than grow without bound.
use std::collections::BTreeMap;

use hdrhistogram::Histogram;

/// Values below this many milliseconds are counted in a dense array: at most 16 KiB per
/// label, allocated only as far as the largest value seen.
pub const DENSE_LIMIT_MS: u64 = 2048;

/// Distinct values at or above [`DENSE_LIMIT_MS`] one label keeps exactly. At the bound a
/// label's `BTreeMap<u64, u64>` plus a full dense array measured 1.6 MiB (benches/jtl.rs
/// prints it), so the TOTAL row plus a few such labels stay within tens of MiB. Reaching
/// it takes over a minute of spread at 1 ms resolution, which real labels rarely have.
pub const MAX_EXACT_LARGE_VALUES: usize = 1 << 16;

/// Significant digits of the fallback histogram: within 0.1% of the exact value.
const FALLBACK_SIGNIFICANT_DIGITS: u8 = 3;

#[derive(Debug, Clone, Default)]
pub struct ElapsedCounts {
    /// `dense[v]` = how many samples took exactly `v` ms, for `v < DENSE_LIMIT_MS`.
    dense: Vec<u64>,
    /// Exact counts of values `>= DENSE_LIMIT_MS`, while under the bound.
    large: BTreeMap<u64, u64>,
    /// Replaces `large` once it would pass [`MAX_EXACT_LARGE_VALUES`].
    fallback: Option<Histogram<u64>>,
}

impl ElapsedCounts {
    pub fn add(&mut self, elapsed_ms: u64) {
        self.add_n(elapsed_ms, 1);
    }

    fn add_n(&mut self, elapsed_ms: u64, count: u64) {
        if elapsed_ms < DENSE_LIMIT_MS {
            // Lossless: elapsed_ms < 2048.
            let index = elapsed_ms as usize;
            if index >= self.dense.len() {
                self.dense.resize(index + 1, 0);
            }
            self.dense[index] += count;
            return;
        }
        if let Some(histogram) = &mut self.fallback {
            // An auto-resizing histogram takes any u64 the parsers hand over (< 2^63).
            let _ = histogram.record_n(elapsed_ms, count);
            return;
        }
        if self.large.len() >= MAX_EXACT_LARGE_VALUES && !self.large.contains_key(&elapsed_ms) {
            self.fall_back();
            if let Some(histogram) = &mut self.fallback {
                let _ = histogram.record_n(elapsed_ms, count);
                return;
            }
        }
        *self.large.entry(elapsed_ms).or_insert(0) += count;
    }

    /// Moves the exact large values into a histogram and frees the map.
    fn fall_back(&mut self) {
        let Ok(mut histogram) = Histogram::new(FALLBACK_SIGNIFICANT_DIGITS) else {
            // 3 digits is within HdrHistogram's 0..=5; keep counting exactly instead.
            return;
        };
        for (&value, &count) in &self.large {
            let _ = histogram.record_n(value, count);
        }
        self.large = BTreeMap::new();
        self.fallback = Some(histogram);
    }

    /// Adds another label's counts, as if its samples had been added here.
    pub fn merge(&mut self, other: &ElapsedCounts) {
        if other.dense.len() > self.dense.len() {
            self.dense.resize(other.dense.len(), 0);
        }
        for (mine, theirs) in self.dense.iter_mut().zip(&other.dense) {
            *mine += theirs;
        }
        for (&value, &count) in &other.large {
            self.add_n(value, count);
        }
        if let Some(theirs) = &other.fallback {
            if self.fallback.is_none() {
                self.fall_back();
            }
            if let Some(mine) = &mut self.fallback {
                let _ = mine.add(theirs);
            }
        }
    }

    /// False once the label fell back to the histogram for its large values.
    pub fn is_exact(&self) -> bool {
        self.fallback.is_none()
    }

    /// `(value, count)` in ascending value order. Past the fallback, a value is the highest
    /// value the histogram treats as equal to it (within 0.1%).
    pub fn ascending(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(|(value, &count)| (value as u64, count));
        let large = self.large.iter().map(|(&value, &count)| (value, count));
        let fallback = self.fallback.iter().flat_map(|histogram| {
            histogram
                .iter_recorded()
                .map(|bucket| (bucket.value_iterated_to(), bucket.count_at_value()))
        });
        dense.chain(large).chain(fallback)
    }

    /// The k-th smallest value (1-based; `k = 0` is the smallest), or `None` if fewer than
    /// `k` values were added.
    pub fn kth_smallest(&self, k: u64) -> Option<u64> {
        let mut remaining = k;
        for (value, count) in self.ascending() {
            remaining = remaining.saturating_sub(count);
            if remaining == 0 {
                return Some(value);
            }
        }
        None
    }

    /// How many distinct values are kept exactly (the memory the counts cost grows with it).
    pub fn distinct_values(&self) -> usize {
        self.dense.iter().filter(|count| **count > 0).count() + self.large.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(values: &[u64]) -> ElapsedCounts {
        let mut counts = ElapsedCounts::default();
        for &value in values {
            counts.add(value);
        }
        counts
    }

    #[test]
    fn kth_smallest_is_exact_on_both_sides_of_the_dense_limit() {
        // Sorted: 5, 2047, 2048, 157782, 157782, 157823.
        let counts = counts(&[157_823, 5, 157_782, 2048, 2047, 157_782]);
        let expected = [5, 5, 2047, 2048, 157_782, 157_782, 157_823];
        for (k, want) in expected.iter().enumerate() {
            assert_eq!(counts.kth_smallest(k as u64), Some(*want), "k={k}");
        }
        assert_eq!(counts.kth_smallest(7), None);
        assert!(counts.is_exact());
        assert_eq!(counts.distinct_values(), 5);
    }

    #[test]
    fn falls_back_past_the_bound_and_keeps_small_values_exact() {
        let mut counts = counts(&[7]);
        for step in 0..=MAX_EXACT_LARGE_VALUES as u64 {
            counts.add(DENSE_LIMIT_MS + step);
        }
        assert!(!counts.is_exact());
        assert_eq!(counts.distinct_values(), 1, "the map was freed");
        assert_eq!(counts.kth_smallest(1), Some(7));
        let largest = DENSE_LIMIT_MS + MAX_EXACT_LARGE_VALUES as u64;
        let approximate = counts
            .kth_smallest(MAX_EXACT_LARGE_VALUES as u64 + 2)
            .unwrap();
        assert!(
            approximate.abs_diff(largest) <= largest / 1000,
            "{approximate} vs {largest}"
        );
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let mut merged = counts(&[3, 5000, 3]);
        merged.merge(&counts(&[1, 9000, 5000]));
        let single = counts(&[3, 5000, 3, 1, 9000, 5000]);
        let as_vec = |c: &ElapsedCounts| c.ascending().collect::<Vec<_>>();
        assert_eq!(as_vec(&merged), as_vec(&single));
        assert_eq!(as_vec(&merged), [(1, 1), (3, 2), (5000, 2), (9000, 1)]);
    }
}
