//! The executor's notion of time: every wait, backoff and rate limit sleeps on a `Clock`, so
//! the same code runs against AWS in real time and against the sandbox in virtual time.
//!
//! `RealClock` is tokio time plus the system clock. `SimClock` (in `sim_clock.rs`) is a
//! discrete-event clock whose time only moves when every participant is asleep.
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A future returned by [`Clock::sleep`]; boxed so `Clock` stays object-safe.
pub type SleepFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Time as the executor sees it. Used as `Arc<dyn Clock>`.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch.
    ///
    /// An f64 near today's epoch resolves about 0.24 µs, so code that needs exact durations
    /// (the rate limiter) rounds differences to whole microseconds.
    fn now(&self) -> f64;

    /// Completes once `d` has passed on this clock.
    fn sleep(&self, d: Duration) -> SleepFuture<'_>;

    /// Registers the caller as a unit of concurrent work. While the guard lives and its holder
    /// is not inside [`Clock::sleep`], the holder counts as busy and a simulated clock will
    /// not move; a real clock ignores it. Take one per concurrent task (or per branch of a
    /// `join!`), before the task starts, and drop it when the task ends.
    fn participant(&self) -> ParticipantGuard;

    /// True once the run using this clock was interrupted: its sleeps then return at once
    /// (see `cancel::InterruptibleClock`), so a loop that sleeps must stop instead of polling.
    fn interrupted(&self) -> bool {
        false
    }

    /// True when this clock is a sandbox's (scaled or simulated), not the wall clock: the
    /// durations it measures are simulated seconds and must say so wherever they are shown.
    fn simulated(&self) -> bool {
        false
    }
}

/// Marks its holder as a participant of a clock until dropped (see [`Clock::participant`]).
#[must_use = "a participant guard counts only while it is held"]
pub struct ParticipantGuard {
    leave: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl ParticipantGuard {
    /// A guard that does nothing: clocks that do not track participants hand these out.
    pub fn inert() -> Self {
        Self { leave: None }
    }

    /// A guard that runs `leave` once, when dropped.
    pub fn new(leave: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self {
            leave: Some(Box::new(leave)),
        }
    }
}

impl Drop for ParticipantGuard {
    fn drop(&mut self) {
        if let Some(leave) = self.leave.take() {
            leave();
        }
    }
}

impl std::fmt::Debug for ParticipantGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParticipantGuard")
            .field("tracked", &self.leave.is_some())
            .finish()
    }
}

/// Wall-clock time and tokio timers: what envctl uses against AWS.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> f64 {
        // A system clock set before 1970 is not worth failing a run for: report the epoch.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }

    fn sleep(&self, d: Duration) -> SleepFuture<'_> {
        Box::pin(tokio::time::sleep(d))
    }

    fn participant(&self) -> ParticipantGuard {
        ParticipantGuard::inert()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn guard_runs_its_leave_action_exactly_once_on_drop() {
        let left = Arc::new(AtomicUsize::new(0));
        let counter = left.clone();
        let guard = ParticipantGuard::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(left.load(Ordering::SeqCst), 0);
        drop(guard);
        assert_eq!(left.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn real_clock_reports_seconds_since_the_epoch() {
        // 2020-01-01 as a floor: a value in milliseconds or nanoseconds would be far above the
        // ceiling, a value relative to process start far below the floor.
        let now = RealClock.now();
        assert!(now > 1_577_836_800.0, "{now}");
        assert!(now < 32_503_680_000.0, "{now}");
    }

    #[tokio::test]
    async fn real_clock_sleep_completes_and_moves_now_forward() {
        let clock: Arc<dyn Clock> = Arc::new(RealClock);
        let before = clock.now();
        let _guard = clock.participant();
        clock.sleep(Duration::from_millis(5)).await;
        assert!(clock.now() >= before);
    }
}
