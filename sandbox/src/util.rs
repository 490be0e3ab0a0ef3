//! Small shared helpers: time formatting, locking, deterministic ids.

use envctl_aws_model::civil_from_days;
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
