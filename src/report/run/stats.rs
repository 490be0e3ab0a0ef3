//! Statistics for figures measured with repeats (one figure per test run), e.g. the
//! "Check-in avg" of each of five runs of variant A against five runs of variant B.
//!
//! A single run gives no estimate of run-to-run noise; that is an explicit
//! [`Noise::NoEstimate`], never a NaN that would print as a number.
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The conventional two-sided significance level the reports use.
pub const SIGNIFICANCE_LEVEL: f64 = 0.05;

/// Why figures could not be summarized.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no values")]
    Empty,
    #[error("value #{index} is not a finite number: {value}")]
    NotFinite { index: usize, value: f64 },
}

/// Mean and run-to-run noise of one variant's repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub count: usize,
    pub mean: f64,
    pub noise: Noise,
}

/// How much the repeats scatter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Noise {
    /// Only one repeat: nothing to compare it with.
    NoEstimate,
    Estimate {
        /// Sample standard deviation (divides by n - 1).
        standard_deviation: f64,
        /// `standard_deviation / |mean|`; `None` when the mean is zero.
        coefficient_of_variation: Option<f64>,
    },
}

impl Summary {
    pub fn of(values: &[f64]) -> Result<Self, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NotFinite { index, value });
        }
        let mean = mean(values);
        let noise = match sample_variance(values, mean) {
            None => Noise::NoEstimate,
            Some(variance) => {
                let standard_deviation = variance.sqrt();
                Noise::Estimate {
                    standard_deviation,
                    coefficient_of_variation: (mean != 0.0)
                        .then(|| standard_deviation / mean.abs()),
                }
            }
        };
        Ok(Self {
            count: values.len(),
            mean,
            noise,
        })
    }
}

/// Whether two variants' figures differ by more than their noise explains.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Significance {
    /// A variant has a single repeat, so there is no estimate of noise to test against.
    NoEstimateOfNoise,
    /// Every repeat of both variants gave the same figure: the difference (possibly zero)
    /// is exact, and a t statistic would divide by zero.
    NoNoise {
        difference: f64,
    },
    Tested(WelchTest),
    /// A rank test over the repeats (used for percentiles; see [`mann_whitney_u_test`]).
    RankTested(RankTest),
    /// Too few repeats for the rank test to ever reach [`SIGNIFICANCE_LEVEL`]: even the
    /// most extreme ordering would give `smallest_p_value`.
    TooFewRepeatsForRankTest {
        difference: f64,
        smallest_p_value: f64,
    },
}

impl Significance {
    /// Whether a test found the difference significant (an exact, noise-free difference is
    /// not a test result and is not counted here).
    pub fn is_significant(&self) -> bool {
        match self {
            Self::Tested(test) => test.significant,
            Self::RankTested(test) => test.significant,
            _ => false,
        }
    }
}

/// The Mann-Whitney U test (Wilcoxon rank-sum), two-sided, exact, at [`SIGNIFICANCE_LEVEL`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RankTest {
    /// `mean(b) - mean(a)`, as for the other figures' deltas.
    pub difference: f64,
    /// U of variant `b`: how many (a, b) pairs have b above a, ties counting one half.
    pub u: f64,
    pub p_value: f64,
    /// `p_value < SIGNIFICANCE_LEVEL`.
    pub significant: bool,
}

/// Welch's unequal-variances t-test, two-sided, at [`SIGNIFICANCE_LEVEL`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WelchTest {
    /// `mean(b) - mean(a)`.
    pub difference: f64,
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (not an integer in general).
    pub degrees_of_freedom: f64,
    pub p_value: f64,
    /// `p_value < SIGNIFICANCE_LEVEL`.
    pub significant: bool,
}

/// Tests whether variant `b` differs from variant `a`. Welch's test rather than Student's
/// because two environment variants have no reason to share a variance.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Result<Significance, StatsError> {
    let (summary_a, summary_b) = (Summary::of(a)?, Summary::of(b)?);
    let (
        Noise::Estimate {
            standard_deviation: sd_a,
            ..
        },
        Noise::Estimate {
            standard_deviation: sd_b,
            ..
        },
    ) = (summary_a.noise, summary_b.noise)
    else {
        return Ok(Significance::NoEstimateOfNoise);
    };
    let difference = summary_b.mean - summary_a.mean;
    let (n_a, n_b) = (a.len() as f64, b.len() as f64);
    let (share_a, share_b) = (sd_a * sd_a / n_a, sd_b * sd_b / n_b);
    let standard_error_squared = share_a + share_b;
    if standard_error_squared == 0.0 {
        return Ok(Significance::NoNoise { difference });
    }
    let t = difference / standard_error_squared.sqrt();
    let degrees_of_freedom = standard_error_squared * standard_error_squared
        / (share_a * share_a / (n_a - 1.0) + share_b * share_b / (n_b - 1.0));
    // Degrees of freedom are positive and finite here (both variances finite, one > 0), so
    // the distribution is always constructible; the fallback p = 1 would only ever make a
    // difference look *less* significant.
    let p_value = StudentsT::new(0.0, 1.0, degrees_of_freedom)
        .map(|distribution| (2.0 * distribution.sf(t.abs())).min(1.0))
        .unwrap_or(1.0);
    Ok(Significance::Tested(WelchTest {
        difference,
        t,
        degrees_of_freedom,
        p_value,
        significant: p_value < SIGNIFICANCE_LEVEL,
    }))
}

/// Tests whether variant `b`'s repeats rank differently from variant `a`'s, for figures
/// such as a label's p90 per repeat: a rank test assumes no distribution of them (a tail
/// percentile of response times is skewed, and a few repeats cannot show it is normal),
/// and the repeats, not the samples inside them, are the independent measurements.
///
/// The p-value is exact: the share of all `C(n_a + n_b, n_a)` ways to split the pooled
/// ranks (ties get their mid-rank) whose rank sum for `a` is at least as far from its
/// expectation as the observed one.
pub fn mann_whitney_u_test(a: &[f64], b: &[f64]) -> Result<Significance, StatsError> {
    let (summary_a, summary_b) = (Summary::of(a)?, Summary::of(b)?);
    if a.len() < 2 || b.len() < 2 {
        return Ok(Significance::NoEstimateOfNoise);
    }
    let difference = summary_b.mean - summary_a.mean;
    let all_equal = |values: &[f64]| values.iter().all(|value| *value == values[0]);
    if all_equal(a) && all_equal(b) {
        return Ok(Significance::NoNoise { difference });
    }
    let smallest_p_value = (2.0 / binomial(a.len() + b.len(), a.len())).min(1.0);
    if smallest_p_value >= SIGNIFICANCE_LEVEL {
        return Ok(Significance::TooFewRepeatsForRankTest {
            difference,
            smallest_p_value,
        });
    }
    // Mid-ranks doubled, so that ties stay whole numbers: a tie over 1-based positions
    // i..=j gets rank (i + j) / 2, doubled i + j.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&value| (value, true))
        .chain(b.iter().map(|&value| (value, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut doubled_ranks = vec![0_usize; pooled.len()];
    let mut start = 0;
    while start < pooled.len() {
        let mut end = start;
        while end + 1 < pooled.len() && pooled[end + 1].0 == pooled[start].0 {
            end += 1;
        }
        for rank in &mut doubled_ranks[start..=end] {
            *rank = (start + 1) + (end + 1);
        }
        start = end + 1;
    }
    let observed: usize = pooled
        .iter()
        .zip(&doubled_ranks)
        .filter(|((_, in_a), _)| *in_a)
        .map(|(_, rank)| rank)
        .sum();
    let (n_a, n_b, n) = (a.len(), b.len(), pooled.len());
    // ways[k][s]: subsets of k ranks whose doubled ranks sum to s; f64 because the counts
    // outgrow u64 for a few dozen repeats, and only their ratio matters.
    let total_sum: usize = doubled_ranks.iter().sum();
    let mut ways = vec![vec![0.0_f64; total_sum + 1]; n_a + 1];
    ways[0][0] = 1.0;
    for &rank in &doubled_ranks {
        for k in (1..=n_a).rev() {
            let (below, this) = ways.split_at_mut(k);
            for sum in (rank..=total_sum).rev() {
                this[0][sum] += below[k - 1][sum - rank];
            }
        }
    }
    let expected = n_a * (n + 1); // doubled: n_a (n + 1) / 2
    let distance = observed.abs_diff(expected);
    let splits: f64 = ways[n_a].iter().sum();
    let as_extreme: f64 = ways[n_a]
        .iter()
        .enumerate()
        .filter(|(sum, _)| sum.abs_diff(expected) >= distance)
        .map(|(_, count)| count)
        .sum();
    let p_value = (as_extreme / splits).min(1.0);
    // U of a = W_a - n_a (n_a + 1) / 2; U of b = n_a n_b - U of a.
    let u_a = observed as f64 / 2.0 - (n_a * (n_a + 1)) as f64 / 2.0;
    Ok(Significance::RankTested(RankTest {
        difference,
        u: (n_a * n_b) as f64 - u_a,
        p_value,
        significant: p_value < SIGNIFICANCE_LEVEL,
    }))
}

/// `C(n, k)` as a float (only compared with a threshold).
fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |product, i| product * (n - i) as f64 / (i + 1) as f64)
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Two-pass sample variance (n - 1); `None` for fewer than two values.
fn sample_variance(values: &[f64], mean: f64) -> Option<f64> {
    (values.len() >= 2).then(|| {
        values
            .iter()
            .map(|value| (value - mean).powi(2))
            .sum::<f64>()
            / (values.len() - 1) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_close(actual: f64, expected: f64, tolerance: f64) {
        assert!(
            (actual - expected).abs() <= tolerance,
            "{actual} is not within {tolerance} of {expected}"
        );
    }

    fn tested(significance: Significance) -> WelchTest {
        match significance {
            Significance::Tested(test) => test,
            other => panic!("expected a test, got {other:?}"),
        }
    }

    // Textbook set (Wikipedia, "Standard deviation"): population sd 2, so the sample sd
    // is sqrt(32 / 7) = 2.138089935299395 and the CV 2.138089935299395 / 5.
    #[test]
    fn summary_of_a_textbook_set() {
        let summary = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((summary.count, summary.mean), (8, 5.0));
        let Noise::Estimate {
            standard_deviation,
            coefficient_of_variation,
        } = summary.noise
        else {
            panic!("expected an estimate");
        };
        assert_close(standard_deviation, 2.138089935299395, 1e-12);
        assert_close(coefficient_of_variation.unwrap(), 0.427617987059879, 1e-12);
    }

    #[test]
    fn one_repeat_has_no_estimate_of_noise() {
        assert_eq!(Summary::of(&[0.736]).unwrap().noise, Noise::NoEstimate);
        assert_eq!(
            welch_t_test(&[0.736], &[0.765, 0.777]).unwrap(),
            Significance::NoEstimateOfNoise
        );
        assert_eq!(Summary::of(&[]), Err(StatsError::Empty));
        assert_eq!(
            Summary::of(&[1.0, f64::NAN])
                .map(|_| ())
                .unwrap_err()
                .to_string(),
            "value #1 is not a finite number: NaN"
        );
        let zero_mean = Summary::of(&[-1.0, 1.0]).unwrap();
        assert!(matches!(
            zero_mean.noise,
            Noise::Estimate {
                coefficient_of_variation: None,
                ..
            }
        ));
    }

    // Expected values for the three tests below were computed independently by
    // Python 3 without scipy: mean/variance/Welch-Satterthwaite by the textbook
    // formulas, and p = 2 * (1/2 - integral of the Student t density from 0 to |t|) with
    // Simpson's rule over 400,000 intervals (so not the incomplete beta function statrs uses).

    // Wikipedia, "Welch's t-test", example 1 (A1 vs A2): t = -2.46, df = 25.0, p = 0.021.
    #[test]
    fn welch_matches_the_wikipedia_example() {
        let a1 = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let a2 = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let test = tested(welch_t_test(&a1, &a2).unwrap());
        assert_close(test.difference, 2.1666666666666714, 1e-9);
        assert_close(test.t, 2.45535639828601, 1e-9);
        assert_close(test.degrees_of_freedom, 24.98852929023142, 1e-9);
        assert_close(test.p_value, 0.021378001462883045, 1e-9);
        assert!(test.significant);
    }

    // Seed report 000: "CI with DI Average sec" of four runs on kafka.m5.2xlarge vs four on
    // kafka.m7g.2xlarge. The 16.5 ms difference is well inside the noise.
    #[test]
    fn welch_on_check_in_averages_from_a_published_report() {
        let m5 = [0.736, 0.787, 0.764, 0.767];
        let m7g = [0.765, 0.777, 0.706, 0.74];
        let test = tested(welch_t_test(&m5, &m7g).unwrap());
        assert_close(test.difference, -0.016499999999999848, 1e-12);
        assert_close(test.t, -0.87419135566292, 1e-9);
        assert_close(test.degrees_of_freedom, 5.235990158489649, 1e-9);
        assert_close(test.p_value, 0.4202957642140045, 1e-9);
        assert!(!test.significant);
    }

    #[test]
    fn welch_detects_a_clear_regression() {
        let before = [10.1, 10.3, 9.9, 10.2, 10.0];
        let after = [11.0, 11.4, 10.9, 11.2, 11.3];
        let test = tested(welch_t_test(&before, &after).unwrap());
        assert_close(test.t, 9.08942501255297, 1e-9);
        assert_close(test.degrees_of_freedom, 7.476151980598219, 1e-9);
        assert_close(test.p_value, 2.657281868279071e-05, 1e-11);
        assert!(test.significant);
    }

    #[test]
    fn identical_repeats_are_an_exact_difference() {
        let significance = welch_t_test(&[1.0, 1.0], &[1.5, 1.5, 1.5]).unwrap();
        assert_eq!(significance, Significance::NoNoise { difference: 0.5 });
    }

    fn rank_tested(significance: Significance) -> RankTest {
        match significance {
            Significance::RankTested(test) => test,
            other => panic!("expected a rank test, got {other:?}"),
        }
    }

    // By hand: 4 vs 4 repeats, C(8, 4) = 70 splits. a = 1,2,3,4 has the smallest rank sum
    // (10); only it and its mirror (26) are as extreme: p = 2/70. a = 1,2,3,5 (sum 11):
    // sums <= 11 are {1,2,3,4} and {1,2,3,5}, mirrored 2 more: p = 4/70 = 0.0571 (scipy's
    // mannwhitneyu(method="exact") gives the same).
    #[test]
    fn mann_whitney_exact_by_hand() {
        let test =
            rank_tested(mann_whitney_u_test(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap());
        assert_close(test.p_value, 2.0 / 70.0, 1e-12);
        assert_eq!(test.u, 16.0);
        assert!(test.significant);
        let test =
            rank_tested(mann_whitney_u_test(&[1.0, 2.0, 3.0, 5.0], &[4.0, 6.0, 7.0, 8.0]).unwrap());
        assert_close(test.p_value, 4.0 / 70.0, 1e-12);
        assert_eq!((test.u, test.significant), (15.0, false));
    }

    // Ties by hand: a = 1,2,2,3 and b = 2,3,4,5. Pooled sorted 1,2,2,2,3,3,4,5 with
    // mid-ranks 1,3,3,3,5.5,5.5,7,8; W_a = 1 + 3 + 3 + 5.5 = 12.5, expected 18, so
    // |W - 18| >= 5.5. Enumerating the 70 splits: rank sums <= 12.5 are 1+3+3+3 = 10 (1
    // way), 1+3+3+5.5 = 12.5 (3 x 2 = 6 ways); mirrored (>= 23.5) 7 more: p = 14/70 = 0.2.
    #[test]
    fn mann_whitney_with_ties_by_hand() {
        let test =
            rank_tested(mann_whitney_u_test(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 4.0, 5.0]).unwrap());
        assert_close(test.p_value, 0.2, 1e-12);
        assert_eq!(test.u, 16.0 - (12.5 - 10.0));
    }

    #[test]
    fn too_few_repeats_for_a_rank_test_say_so() {
        // 2 vs 2: C(4, 2) = 6, so the most extreme split has p = 2/6.
        assert_eq!(
            mann_whitney_u_test(&[1.0, 2.0], &[3.0, 4.0]).unwrap(),
            Significance::TooFewRepeatsForRankTest {
                difference: 2.0,
                smallest_p_value: 2.0 / 6.0
            }
        );
        assert_eq!(
            mann_whitney_u_test(&[1.0], &[3.0, 4.0]).unwrap(),
            Significance::NoEstimateOfNoise
        );
        assert_eq!(
            mann_whitney_u_test(&[1.0, 1.0], &[3.0, 3.0]).unwrap(),
            Significance::NoNoise { difference: 2.0 }
        );
    }
}
