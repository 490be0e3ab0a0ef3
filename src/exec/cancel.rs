//! Stopping a run: a flag that code checks between steps, and a token that sleeping waits
//! select on so that they wake at once instead of at their next poll.
//!
//! SIGINT/SIGTERM and a lost lock both cancel the run. CI runners send SIGKILL about ten
//! seconds after SIGTERM, and a deployment wait sleeps 15-40 s between polls: a wait that only
//! looks at a flag when it wakes would be killed mid-journal. [`Cancel`] derefs to its
//! `AtomicBool`, so code that only checks (`cancel.load(..)`) reads as before; [`Cancel::cancel`]
//! sets the flag and wakes every [`InterruptibleClock`] sleep built on it.
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::clock::{Clock, ParticipantGuard, SleepFuture};

/// A run's stop signal; clones share it.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    token: CancellationToken,
    lock_lost: Arc<AtomicBool>,
    /// Why the lock was lost, for the run's results.
    lock_lost_reason: Arc<std::sync::Mutex<Option<String>>>,
}

impl Cancel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the flag and wakes everything waiting on [`Cancel::cancelled`].
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.token.cancel();
    }

    /// Cancels because another run took the environment's lock: what the run would still do
    /// to the environment (a teardown) must not happen either.
    pub fn cancel_lock_lost(&self, reason: &str) {
        if let Ok(mut r) = self.lock_lost_reason.lock() {
            r.get_or_insert_with(|| reason.to_string());
        }
        self.lock_lost.store(true, Ordering::SeqCst);
        self.cancel();
    }

    pub fn lock_lost(&self) -> bool {
        self.lock_lost.load(Ordering::SeqCst)
    }

    /// Why the lock was lost (the first reason given), once it was.
    pub fn lock_lost_reason(&self) -> Option<String> {
        self.lock_lost_reason.lock().ok().and_then(|r| r.clone())
    }

    /// Set by [`Cancel::cancel`], or by a direct `store(true, ..)` on the flag (which wakes
    /// nothing: prefer `cancel`).
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst) || self.token.is_cancelled()
    }

    /// Completes once [`Cancel::cancel`] is called (at once if it was).
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }
}

impl Deref for Cancel {
    type Target = AtomicBool;

    fn deref(&self) -> &AtomicBool {
        &self.flag
    }
}

/// A clock whose sleeps end as soon as the run is cancelled. Loops that sleep on it must stop
/// once [`Clock::interrupted`] says so, or they would spin; [`super::await_condition`] does.
pub struct InterruptibleClock {
    inner: Arc<dyn Clock>,
    cancel: Cancel,
}

impl InterruptibleClock {
    pub fn wrap(inner: Arc<dyn Clock>, cancel: Cancel) -> Arc<dyn Clock> {
        Arc::new(Self { inner, cancel })
    }
}

impl Clock for InterruptibleClock {
    fn now(&self) -> f64 {
        self.inner.now()
    }

    fn sleep(&self, d: Duration) -> SleepFuture<'_> {
        Box::pin(async move {
            // Cancellation first: once cancelled, a simulated clock must not jump ahead for
            // a sleep that is being abandoned. Dropping the inner sleep is safe on every
            // clock: a simulated clock stops counting a cancelled sleep as asleep.
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => {}
                () = self.inner.sleep(d) => {}
            }
        })
    }

    fn participant(&self) -> ParticipantGuard {
        self.inner.participant()
    }

    fn interrupted(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn simulated(&self) -> bool {
        self.inner.simulated()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::clock::RealClock;
    use crate::exec::sim_clock::SimClock;

    #[tokio::test]
    async fn a_long_sleep_wakes_when_the_run_is_cancelled() {
        let cancel = Cancel::new();
        let clock = InterruptibleClock::wrap(Arc::new(RealClock), cancel.clone());
        assert!(!clock.interrupted());
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trigger.cancel();
        });
        let started = std::time::Instant::now();
        clock.sleep(Duration::from_secs(600)).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(clock.interrupted());
        assert!(cancel.load(Ordering::SeqCst), "the flag is set too");
        // Once cancelled, sleeps return at once.
        clock.sleep(Duration::from_secs(600)).await;
    }

    #[tokio::test]
    async fn a_simulated_clock_does_not_move_for_a_cancelled_sleep() {
        let sim = SimClock::builder(1_800_000_000.0)
            .stall_timeout(Duration::from_secs(10))
            .build();
        let cancel = Cancel::new();
        cancel.cancel();
        let clock = InterruptibleClock::wrap(Arc::new(sim.clone()), cancel);
        let _guard = clock.participant();
        clock.sleep(Duration::from_secs(3600)).await;
        assert_eq!(sim.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_wait_whose_probe_ignores_the_flag_ends_when_cancelled() {
        use crate::exec::wait::{PollInterval, Probe, WaitOutcome, await_condition};
        let cancel = Cancel::new();
        let clock = InterruptibleClock::wrap(Arc::new(RealClock), cancel.clone());
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trigger.cancel();
        });
        let probes = std::sync::atomic::AtomicU32::new(0);
        let started = std::time::Instant::now();
        let outcome: WaitOutcome<()> = await_condition(
            clock.as_ref(),
            Duration::from_secs(3600),
            PollInterval::fixed(Duration::from_secs(60)),
            || async {
                probes.fetch_add(1, Ordering::SeqCst);
                Probe::Pending {
                    status: "DRAINING".into(),
                }
            },
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            outcome,
            WaitOutcome::Interrupted {
                last_status: "DRAINING".into()
            }
        );
        // It stopped instead of probing in a loop once sleeps returned at once.
        assert_eq!(probes.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_stored_flag_reads_as_cancelled() {
        let cancel = Cancel::new();
        cancel.store(true, Ordering::SeqCst);
        assert!(cancel.is_cancelled());
    }
}
