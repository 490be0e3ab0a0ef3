//! Whether a service's memory grows steadily during a point, so that "no memory leak is
//! suspected" is a measured statement rather than a look at a chart.
//!
//! The rule: fit a least-squares line to the service's `MemoryUtilization` samples inside
//! the workload window; a leak is suspected when
//! - there are at least [`MIN_SAMPLES`] samples (fewer cannot tell a trend from a wobble),
//! - the slope is more than [`SUSPICIOUS_SLOPE_PER_HOUR`] percentage points per hour, and
//! - the line explains the samples well: R² of at least [`MIN_R_SQUARED`].
//!
//! Why these values: a JVM's heap saw-tooths around a level under steady load, which gives
//! a slope near zero or a low R². 2 %/h is 48 points a day, enough to exhaust any
//! reservation within a day or two of uptime; R² ≥ 0.8 asks that the growth is steady, not
//! one step (a cache warming up at the start gives a poor line fit over a long window).
use serde::Serialize;

pub const MIN_SAMPLES: usize = 10;
pub const SUSPICIOUS_SLOPE_PER_HOUR: f64 = 2.0;
pub const MIN_R_SQUARED: f64 = 0.8;

/// A least-squares line through `(hours, percent)` samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Trend {
    pub samples: usize,
    /// Percentage points per hour.
    pub slope_per_hour: f64,
    /// Share of the variance the line explains; 0 when the samples are all equal.
    pub r_squared: f64,
}

impl Trend {
    /// Fits `values` against `timestamps` (seconds); `None` for fewer than two distinct times.
    pub fn fit(timestamps: &[f64], values: &[f64]) -> Option<Self> {
        let n = timestamps.len().min(values.len());
        if n < 2 {
            return None;
        }
        let hours: Vec<f64> = timestamps[..n].iter().map(|t| t / 3600.0).collect();
        let values = &values[..n];
        let mean_x = hours.iter().sum::<f64>() / n as f64;
        let mean_y = values.iter().sum::<f64>() / n as f64;
        let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
        for (x, y) in hours.iter().zip(values) {
            let (dx, dy) = (x - mean_x, y - mean_y);
            sxx += dx * dx;
            sxy += dx * dy;
            syy += dy * dy;
        }
        if sxx == 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        let r_squared = if syy == 0.0 {
            0.0
        } else {
            (sxy * sxy) / (sxx * syy)
        };
        Some(Self {
            samples: n,
            slope_per_hour: slope,
            r_squared,
        })
    }

    /// The rule in the module comment.
    pub fn suspects_a_leak(&self) -> bool {
        self.samples >= MIN_SAMPLES
            && self.slope_per_hour > SUSPICIOUS_SLOPE_PER_HOUR
            && self.r_squared >= MIN_R_SQUARED
    }
}

/// The memory trend of one service in one point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryTrend {
    pub point: String,
    /// Index into the summary's variants.
    pub variant: usize,
    pub service: String,
    pub trend: Trend,
    pub suspected_leak: bool,
    /// Fitted to the sandbox's synthetic memory series: not a finding either way.
    pub synthetic: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_close(actual: f64, expected: f64) {
        assert!((actual - expected).abs() < 1e-9, "{actual} != {expected}");
    }

    // Expected values by hand: y = 60 + 60 * hours is a perfect line, 60 %/h, R² = 1.
    #[test]
    fn a_steady_climb_is_suspected() {
        let t: Vec<f64> = (0..16).map(|k| 60.0 * k as f64).collect();
        let y: Vec<f64> = t.iter().map(|s| 60.0 + 60.0 * s / 3600.0).collect();
        let trend = Trend::fit(&t, &y).unwrap();
        assert_close(trend.slope_per_hour, 60.0);
        assert_close(trend.r_squared, 1.0);
        assert!(trend.suspects_a_leak());
        // The same climb seen in too few samples is not enough evidence.
        let short = Trend::fit(&t[..MIN_SAMPLES - 1], &y[..MIN_SAMPLES - 1]).unwrap();
        assert!(!short.suspects_a_leak());
    }

    // x = 0, 1, 2, 3 hours, y = 1, 3, 2, 4: Sxx = Syy = 5, Sxy = 4, so slope = 0.8 and
    // R² = 4² / (5 * 5) = 0.64 (by hand; Python's statistics.linear_regression and
    // statistics.correlation agree).
    #[test]
    fn slope_and_r_squared_by_hand() {
        let trend = Trend::fit(&[0.0, 3600.0, 7200.0, 10800.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_close(trend.slope_per_hour, 0.8);
        assert_close(trend.r_squared, 0.64);
    }

    #[test]
    fn a_wobble_or_a_flat_line_is_not_a_leak() {
        let t: Vec<f64> = (0..16).map(|k| 60.0 * k as f64).collect();
        let wobble: Vec<f64> = (0..16)
            .map(|k| 50.0 + [0.0, 0.2, 0.0, -0.2][k % 4])
            .collect();
        let trend = Trend::fit(&t, &wobble).unwrap();
        assert!(!trend.suspects_a_leak(), "{trend:?}");
        let flat = Trend::fit(&t, &[40.0; 16]).unwrap();
        assert_eq!((flat.slope_per_hour, flat.r_squared), (0.0, 0.0));
        assert!(!flat.suspects_a_leak());
        assert_eq!(Trend::fit(&[5.0, 5.0], &[1.0, 2.0]), None);
        assert_eq!(Trend::fit(&[5.0], &[1.0]), None);
    }

    // Steady but slow: 1 %/h with R² = 1 stays under the slope threshold.
    #[test]
    fn slow_growth_is_below_the_threshold() {
        let t: Vec<f64> = (0..30).map(|k| 60.0 * k as f64).collect();
        let y: Vec<f64> = t.iter().map(|s| 40.0 + s / 3600.0).collect();
        assert!(!Trend::fit(&t, &y).unwrap().suspects_a_leak());
    }
}
