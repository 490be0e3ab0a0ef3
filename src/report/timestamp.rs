//! Calendar arithmetic for JTL timestamps: JMeter writes either milliseconds since the epoch
//! (`jmeter.save.saveservice.timestamp_format=ms`, the default) or a `SimpleDateFormat`
//! pattern such as `yyyy/MM/dd HH:mm:ss.SSS`. Hand-written instead of a date crate because
//! only this one civil-date conversion is needed; the conversion itself is the sandbox
//! crate's (envctl's one copy, shared with `crate::time`).
use envctl_aws_model::{civil_from_days, days_from_civil};

const MS_PER_DAY: i64 = 86_400_000;

/// Parses a JMeter timestamp: all digits means epoch milliseconds; otherwise a date
/// `YYYY{-/}MM{-/}DD{T or space}hh:mm:ss[.fff][Z|±hh[:]mm]`. A date without a zone is taken
/// as UTC because the JTL does not record JMeter's time zone; durations and throughput are
/// unaffected, only the printed start and end would be shifted.
pub fn parse_timestamp(field: &[u8]) -> Option<i64> {
    if !field.is_empty() && field.iter().all(u8::is_ascii_digit) {
        return parse_digits(field).and_then(|ms| i64::try_from(ms).ok());
    }
    parse_date(field)
}

/// Parses an unsigned decimal integer; `None` on anything else, including overflow.
pub fn parse_digits(field: &[u8]) -> Option<u64> {
    if field.is_empty() {
        return None;
    }
    field.iter().try_fold(0u64, |acc, &byte| {
        let digit = byte.checked_sub(b'0').filter(|d| *d <= 9)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

fn parse_date(field: &[u8]) -> Option<i64> {
    let mut cursor = DateCursor { rest: field };
    let year = cursor.number(4)?;
    let separator = cursor.one_of(b"-/")?;
    let month = cursor.number(2)?;
    cursor.exact(separator)?;
    let day = cursor.number(2)?;
    cursor.one_of(b"T ")?;
    let hour = cursor.number(2)?;
    cursor.exact(b':')?;
    let minute = cursor.number(2)?;
    cursor.exact(b':')?;
    let second = cursor.number(2)?;
    let millis = if cursor.one_of(b".,").is_some() {
        cursor.fraction_as_millis()?
    } else {
        0
    };
    let offset_minutes = cursor.zone_offset_minutes()?;
    if !cursor.rest.is_empty()
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let seconds_of_day = hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(days * MS_PER_DAY + seconds_of_day * 1000 + millis)
}

/// Reads a date field left to right; every step returns `None` when the text does not fit.
struct DateCursor<'a> {
    rest: &'a [u8],
}

impl DateCursor<'_> {
    fn number(&mut self, width: usize) -> Option<i64> {
        let digits = self.rest.get(..width)?;
        let value = parse_digits(digits)?;
        self.rest = &self.rest[width..];
        i64::try_from(value).ok()
    }

    fn one_of(&mut self, choices: &[u8]) -> Option<u8> {
        let (&first, rest) = self.rest.split_first()?;
        choices.contains(&first).then(|| {
            self.rest = rest;
            first
        })
    }

    fn exact(&mut self, expected: u8) -> Option<()> {
        self.one_of(&[expected]).map(|_| ())
    }

    /// `.5` is 500 ms and `.123456` is 123 ms: digits beyond milliseconds are dropped.
    fn fraction_as_millis(&mut self) -> Option<i64> {
        let length = self.rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if length == 0 {
            return None;
        }
        let mut millis = 0i64;
        for position in 0..3 {
            let digit = self
                .rest
                .get(position)
                .filter(|_| position < length)
                .map_or(0, |b| b - b'0');
            millis = millis * 10 + i64::from(digit);
        }
        self.rest = &self.rest[length..];
        Some(millis)
    }

    /// `Z`, `+0100`, `-05:30` or nothing (UTC).
    fn zone_offset_minutes(&mut self) -> Option<i64> {
        if self.rest.is_empty() {
            return Some(0);
        }
        if self.one_of(b"Z").is_some() {
            return Some(0);
        }
        let sign = if self.one_of(b"+-")? == b'-' { -1 } else { 1 };
        let hours = self.number(2)?;
        let _ = self.one_of(b":");
        let minutes = self.number(2)?;
        Some(sign * (hours * 60 + minutes))
    }
}

fn is_leap_year(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `2023-10-27T08:26:47.123Z`: ISO 8601 in UTC, sortable and unambiguous in a report.
pub fn format_utc(epoch_ms: i64) -> String {
    let days = epoch_ms.div_euclid(MS_PER_DAY);
    let ms_of_day = epoch_ms.rem_euclid(MS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60);
    let (second, millis) = (ms_of_day / 1000 % 60, ms_of_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
}

/// `HH:MM:SS` (hours may exceed 24), the way the published reports write durations.
pub fn format_duration(duration_ms: i64) -> String {
    let seconds = duration_ms.max(0) / 1000;
    format!(
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected epoch values computed independently with GNU date, e.g.
    // `date -u -d '2023-10-27 08:26:47.123' +%s%3N` -> 1698395207123.
    #[test]
    fn parses_epoch_milliseconds_and_dates() {
        assert_eq!(parse_timestamp(b"1698395207123"), Some(1_698_395_207_123));
        assert_eq!(
            parse_timestamp(b"2023-10-27 08:26:47.123"),
            Some(1_698_395_207_123)
        );
        assert_eq!(
            parse_timestamp(b"2023/10/27 08:26:47.123"),
            Some(1_698_395_207_123)
        );
        assert_eq!(
            parse_timestamp(b"2023-10-27T08:26:47"),
            Some(1_698_395_207_000)
        );
        assert_eq!(
            parse_timestamp(b"2023-10-27T09:26:47.123+0100"),
            Some(1_698_395_207_123)
        );
        assert_eq!(
            parse_timestamp(b"2023-10-27T08:26:47.1Z"),
            Some(1_698_395_207_100)
        );
        // 2024-02-29 is a leap day: `date -u -d '2024-02-29 00:00:00' +%s%3N` -> 1709164800000.
        assert_eq!(
            parse_timestamp(b"2024-02-29 00:00:00"),
            Some(1_709_164_800_000)
        );
    }

    #[test]
    fn rejects_what_is_not_a_timestamp() {
        for text in [
            &b""[..],
            b"12a",
            b"2023-02-29 00:00:00",
            b"2023-13-01 00:00:00",
            b"27/10/2023 08:26:47",
            b"2023-10-27 08:26:47 junk",
            b"99999999999999999999",
        ] {
            assert_eq!(
                parse_timestamp(text),
                None,
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn formats_round_trip() {
        assert_eq!(format_utc(1_698_395_207_123), "2023-10-27T08:26:47.123Z");
        assert_eq!(format_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_utc(1_709_164_800_000), "2024-02-29T00:00:00.000Z");
        assert_eq!(format_utc(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(format_duration(880_000), "00:14:40");
        assert_eq!(format_duration(90_061_000), "25:01:01");
    }
}
