//! Small shared helpers: civil dates and time formatting, locking, deterministic ids.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering from poisoning.
///
/// A handler that panicked while holding the world lock leaves it poisoned. The handlers
/// only mutate the world through small, complete assignments and never panic on client
/// input, so the data is still usable; refusing every later request would turn one bug into
/// a dead sandbox.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant, "chrono-Compatible
/// Low-Level Date Algorithms"). The one copy of the civil-date arithmetic: envctl (which
/// depends on this crate; the reverse cannot be) uses it for tags and JTL timestamps.
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`]: (year, month, day).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `2026-11-29T23:43:08.123Z`.
pub fn rfc3339(secs: f64) -> String {
    let millis_total = (secs * 1000.0).round() as i64;
    let total = millis_total.div_euclid(1000);
    let millis = millis_total.rem_euclid(1000);
    let days = total.div_euclid(86_400);
    let rem = total.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// A UUID-shaped, deterministic identifier derived from a counter and a salt.
pub fn uuid_like(salt: &str, n: u64) -> String {
    let a = crate::faults::hash_str(n, &[salt, "a"]);
    let b = crate::faults::hash_str(n, &[salt, "b"]);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_trip_across_eras_and_leap_days() {
        for (y, m, d) in [
            (1970, 1, 1),
            (2000, 2, 29),
            (1900, 3, 1),
            (1600, 2, 29),
            (2026, 12, 31),
        ] {
            assert_eq!(civil_from_days(days_from_civil(y, m, d)), (y, m, d));
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2026, 11, 30), 20_787);
    }

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc3339(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_700_000_000.5), "2023-11-14T22:13:20.500Z");
        assert_eq!(rfc3339(951_782_400.0), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn uuid_like_is_stable() {
        assert_eq!(uuid_like("x", 1), uuid_like("x", 1));
        assert_ne!(uuid_like("x", 1), uuid_like("x", 2));
        assert_eq!(uuid_like("x", 1).len(), 36);
    }
}
