//! The last N elapsed times of one label, for the JMeter dashboard's percentiles.
//!
//! JMeter's HTML report generator keeps each percentile in a commons-math
//! `DescriptiveStatistics` whose window is `jmeter.reportgenerator.statistic_window`
//! (default 20,000): once full, every new value pushes out the oldest, and the percentile
//! is computed over what is left. Reproducing its figures means keeping the same window.

/// JMeter's default `jmeter.reportgenerator.statistic_window`.
pub const DASHBOARD_STATISTIC_WINDOW: usize = 20_000;

/// A ring buffer of the most recent values, in arrival order.
#[derive(Debug, Clone)]
pub struct RecentWindow {
    capacity: usize,
    values: Vec<u64>,
    /// Where the next value goes once `values` is full (its oldest entry).
    next: usize,
}

impl RecentWindow {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            values: Vec::new(),
            next: 0,
        }
    }

    pub fn push(&mut self, value: u64) {
        if self.values.len() < self.capacity {
            self.values.push(value);
        } else {
            self.values[self.next] = value;
            self.next = (self.next + 1) % self.capacity;
        }
    }

    /// The kept values, oldest first.
    pub fn in_arrival_order(&self) -> impl Iterator<Item = u64> + '_ {
        let (newer, older) = self.values.split_at(self.next);
        older.iter().chain(newer).copied()
    }

    /// Appends another window's values after this one's, keeping the last `capacity`.
    pub fn extend_with(&mut self, other: &RecentWindow) {
        for value in other.in_arrival_order() {
            self.push(value);
        }
    }

    /// commons-math `Percentile` with its default (`LEGACY`) estimation, as JMeter's
    /// dashboard uses it: position `pos = (p / 100) * (n + 1)` (p in percent, computed in
    /// that order as commons-math's `EstimationType.LEGACY.index` does, so positions are
    /// bit-identical); below 1 the
    /// minimum, at or above n the maximum, otherwise the linear interpolation between the
    /// `floor(pos)`-th and the next smallest value (1-based).
    pub fn legacy_percentile(&self, percent: f64) -> Option<f64> {
        let mut sorted = self.values.clone();
        sorted.sort_unstable();
        legacy_percentile_of_sorted(&sorted, percent)
    }
}

/// See [`RecentWindow::legacy_percentile`]; `sorted` is ascending.
pub fn legacy_percentile_of_sorted(sorted: &[u64], percent: f64) -> Option<f64> {
    let (&first, &last) = (sorted.first()?, sorted.last()?);
    let n = sorted.len() as f64;
    let position = (percent / 100.0) * (n + 1.0);
    if position < 1.0 {
        return Some(first as f64);
    }
    if position >= n {
        return Some(last as f64);
    }
    let below = position.floor();
    // 1 <= below < n, so both indices are in range.
    let lower = sorted[below as usize - 1] as f64;
    let upper = sorted[below as usize] as f64;
    Some(lower + (position - below) * (upper - lower))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_most_recent_values() {
        let mut window = RecentWindow::new(3);
        for value in [1, 2, 3, 4, 5] {
            window.push(value);
        }
        assert_eq!(window.in_arrival_order().collect::<Vec<_>>(), [3, 4, 5]);
        let mut other = RecentWindow::new(3);
        other.push(9);
        window.extend_with(&other);
        assert_eq!(window.in_arrival_order().collect::<Vec<_>>(), [4, 5, 9]);
    }

    // By hand from the LEGACY rule on 10, 20, ..., 100 (n = 10):
    // p50: pos 5.5 -> 50 + 0.5 * (60 - 50) = 55; p90: pos 9.9 -> 90 + 0.9 * 10 = 99;
    // p95: pos 10.45 >= n -> max 100; p5: pos 0.55 < 1 -> min 10.
    #[test]
    fn legacy_estimation_by_hand() {
        let sorted: Vec<u64> = (1..=10).map(|i| i * 10).collect();
        let p = |percent| legacy_percentile_of_sorted(&sorted, percent).unwrap();
        assert!((p(50.0) - 55.0).abs() < 1e-9);
        assert!((p(90.0) - 99.0).abs() < 1e-9);
        assert_eq!(p(95.0), 100.0);
        assert_eq!(p(5.0), 10.0);
        assert_eq!(legacy_percentile_of_sorted(&[42], 90.0), Some(42.0));
        assert_eq!(legacy_percentile_of_sorted(&[], 90.0), None);
    }
}
