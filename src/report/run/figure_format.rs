//! How figures read in a report: durations as `HH:MM:SS` like the published reports,
//! response times to the millisecond, percentages to 0.01.
use crate::report::run::figure::{FigureKey, Section};
use crate::report::run::stats::{Noise, Significance, Summary};
use crate::report::timestamp::format_duration;

/// Decimals for a unit: seconds of response time to the ms, percentages and others to 0.01.
fn decimals(unit: &str) -> usize {
    match unit {
        "s" => 3,
        "count" => 1,
        _ => 2,
    }
}

/// `-0.001` shown with two decimals is `-0.00`, which reads as a decrease; a value that
/// rounds to zero is shown as zero.
pub fn without_negative_zero(value: f64, decimals: usize) -> f64 {
    let half_step = 0.5 * 10f64.powi(-(decimals as i32));
    if value.abs() < half_step { 0.0 } else { value }
}

/// One value in the figure's unit.
pub fn format_value(key: &FigureKey, value: f64) -> String {
    if key.section == Section::Duration {
        return format_duration((value * 1000.0).round() as i64);
    }
    let digits = decimals(&key.unit);
    format!("{:.digits$}", without_negative_zero(value, digits))
}

/// A spread or a difference in the figure's unit, with its sign when `signed`.
fn format_amount(key: &FigureKey, value: f64, signed: bool) -> String {
    let (digits, suffix) = if key.section == Section::Duration {
        (1, " s")
    } else {
        (decimals(&key.unit), "")
    };
    if signed {
        format!("{}{suffix}", format_signed(value, digits))
    } else {
        let value = without_negative_zero(value, digits);
        format!("{value:.digits$}{suffix}")
    }
}

/// Below this a difference is floating-point noise (two means of the same values summed in
/// another order), shown as zero.
const NOISE: f64 = 1e-9;
/// How many places `format_signed` adds before it gives up and says `<`.
const EXTRA_PLACES: usize = 3;

/// `value` with its sign, to `decimals` places, or more when fewer would round a non-zero
/// value to zero: "+0.0" would read as no change, and "-0.03 (+0.0%)" as two different
/// signs. Past `decimals + 3` places it reads "-<0.0001". Rounding never flips the sign.
pub fn format_signed(value: f64, decimals: usize) -> String {
    // No change has no sign.
    if value.abs() < NOISE {
        return format!("{:.decimals$}", 0.0);
    }
    let rounds_to_zero = |places: usize| (value.abs() * 10f64.powi(places as i32)).round() == 0.0;
    let mut places = decimals;
    while rounds_to_zero(places) && places < decimals + EXTRA_PLACES {
        places += 1;
    }
    if rounds_to_zero(places) {
        let sign = if value < 0.0 { '-' } else { '+' };
        return format!("{sign}<{:.places$}", 10f64.powi(-(places as i32)));
    }
    format!("{value:+.places$}")
}

/// What a delta cell says when the change is below the instrument's resolution.
pub fn no_measurable_change(key: &FigureKey, resolution: Option<f64>) -> String {
    match resolution {
        Some(step) if key.unit == "s" && step < 1.0 => format!(
            "no measurable change (< {} ms, the resolution)",
            format_trimmed(step * 1000.0)
        ),
        Some(step) => format!(
            "no measurable change (< {} {}, the resolution)",
            format_trimmed(step),
            key.unit
        ),
        None => "no measurable change".to_owned(),
    }
}

/// `1` rather than `1.000`.
fn format_trimmed(value: f64) -> String {
    let text = format!("{value:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `0.743 ± 0.011 (CV 1.5%)` with repeats, `0.736` with one, `—` with none.
pub fn format_summary(key: &FigureKey, summary: Option<&Summary>) -> String {
    let Some(summary) = summary else {
        return "—".to_owned();
    };
    let mean = format_value(key, summary.mean);
    match summary.noise {
        Noise::NoEstimate => mean,
        Noise::Estimate {
            standard_deviation,
            coefficient_of_variation,
        } => {
            let spread = format_amount(key, standard_deviation, false);
            match coefficient_of_variation {
                Some(cv) => format!("{mean} ± {spread} (CV {:.1}%)", cv * 100.0),
                None => format!("{mean} ± {spread}"),
            }
        }
    }
}

/// `+0.029 (+3.9%)`; both parts keep the delta's sign however small it is.
pub fn format_delta(key: &FigureKey, absolute: f64, percent: Option<f64>) -> String {
    let amount = format_amount(key, absolute, true);
    match percent {
        Some(percent) => format!("{amount} ({}%)", format_signed(percent, 1)),
        None => amount,
    }
}

/// What the delta's test says, for a reader: `significant (p=0.003)`, `within noise
/// (p=0.42)`. Without an estimate of noise it says so, unless the whole report has one
/// repeat per variant (`report_has_repeats` false), where the report says n=1 once.
pub fn format_significance(significance: &Significance, report_has_repeats: bool) -> String {
    match significance {
        Significance::NoEstimateOfNoise if report_has_repeats => {
            "n=1 on one side, no estimate of noise".to_owned()
        }
        Significance::NoEstimateOfNoise => String::new(),
        Significance::NoNoise { .. } => "exact: no noise in the repeats".to_owned(),
        Significance::Tested(test) if test.significant => {
            format!("significant (p={})", format_p(test.p_value))
        }
        Significance::Tested(test) => format!("within noise (p={})", format_p(test.p_value)),
        Significance::RankTested(test) if test.significant => {
            format!("significant (rank test, p={})", format_p(test.p_value))
        }
        Significance::RankTested(test) => {
            format!("within noise (rank test, p={})", format_p(test.p_value))
        }
        Significance::TooFewRepeatsForRankTest {
            smallest_p_value, ..
        } => format!(
            "too few repeats for a rank test (p ≥ {})",
            format_p(*smallest_p_value)
        ),
    }
}

fn format_p(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_owned()
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(section: Section, unit: &str) -> FigureKey {
        FigureKey {
            section,
            subject: "x".into(),
            metric: "m".into(),
            statistic: "Average".into(),
            unit: unit.into(),
        }
    }

    #[test]
    fn durations_read_like_the_published_reports() {
        let duration = key(Section::Duration, "s");
        assert_eq!(format_value(&duration, 164.4), "00:02:44");
        assert_eq!(format_delta(&duration, -5.0, Some(-3.05)), "-5.0 s (-3.0%)");
        let summary = Summary::of(&[160.0, 168.0]).unwrap();
        assert_eq!(
            format_summary(&duration, Some(&summary)),
            "00:02:44 ± 5.7 s (CV 3.4%)"
        );
    }

    #[test]
    fn units_choose_the_precision() {
        assert_eq!(
            format_value(&key(Section::Transaction, "s"), 0.7365),
            "0.737"
        );
        assert_eq!(format_value(&key(Section::Service, "%"), 107.844), "107.84");
        assert_eq!(
            format_value(&key(Section::Database, "count"), 310.04),
            "310.0"
        );
        assert_eq!(format_summary(&key(Section::Service, "%"), None), "—");
        assert_eq!(
            format_summary(
                &key(Section::Service, "%"),
                Some(&Summary::of(&[51.7]).unwrap())
            ),
            "51.70"
        );
        assert_eq!(format_p(0.0004), "<0.001");
    }

    /// The issue's `-0.03 (+0.0%)` and `+0.0 s (-0.4%)`: a small change keeps its sign in
    /// both parts, with as many places as it takes to show it.
    #[test]
    fn rounding_never_flips_a_sign() {
        assert_eq!(
            format_delta(&key(Section::Service, "%"), -0.03, Some(-0.004)),
            "-0.03 (-0.004%)"
        );
        assert_eq!(
            format_delta(&key(Section::Duration, "s"), -0.04, Some(-0.4)),
            "-0.04 s (-0.4%)"
        );
        assert_eq!(
            format_delta(&key(Section::Service, "%"), -0.001, Some(-0.01)),
            "-0.001 (-0.01%)"
        );
        assert_eq!(format_signed(-0.000_000_1, 2), "-<0.00001");
        assert_eq!(format_signed(1e-12, 2), "0.00");
        assert_eq!(format_signed(2.345, 1), "+2.3");
    }

    #[test]
    fn changes_below_the_resolution_say_so() {
        let response = key(Section::Transaction, "s");
        assert_eq!(
            no_measurable_change(&response, response.resolution()),
            "no measurable change (< 1 ms, the resolution)"
        );
    }
}
