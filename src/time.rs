//! Civil time for tags and run ids: RFC 3339 UTC timestamps to and from seconds since the
//! epoch. The civil-date arithmetic itself (no time-zone database needed) has one copy, in
//! the sandbox crate, which envctl depends on and the sandbox cannot: `report::timestamp`
//! uses it too.
use envctl_aws_model::{civil_from_days, days_from_civil};

/// A duration as people read it: "1h 05m", "6m 40s", "45s".
pub fn human(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => {
            if s.is_multiple_of(60) {
                format!("{}m", s / 60)
            } else {
                format!("{}m {:02}s", s / 60, s % 60)
            }
        }
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `2026-11-30T12:00:00Z` from seconds since the epoch (UTC; civil-from-days, no time zone
/// database needed).
pub fn rfc3339(secs: f64) -> String {
    let secs = secs.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Today's date in UTC, `YYYY-MM-DD`, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    rfc3339(secs)[..10].to_string()
}

/// Seconds since the epoch from `rfc3339`'s format; `None` for anything else.
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let days = days_from_civil(y, m, d);
    Some((days * 86_400 + hh * 3600 + mm * 60 + ss) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        assert_eq!(rfc3339(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_996_800.0), "2026-11-30T00:00:00Z");
        for t in [0.0, 951_782_400.0, 1_795_996_800.0, 4_102_444_799.0] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
        }
        assert_eq!(parse_rfc3339("yesterday"), None);
    }
}
