//! Waiting for AWS to reach a state, with a deadline and an explicit outcome.
//!
//! Most of what envctl waits for has no SDK waiter (MSK has none at all) or needs a condition
//! the waiters do not express ("*our* deployment COMPLETED", "RDS has *left* available"), so
//! the executor polls its own probes. The probe decides, the loop only schedules: it returns
//! [`Probe::Done`], [`Probe::Pending`] with a status line for progress, or [`Probe::Failed`]
//! (a circuit-breaker rollback, a cluster in FAILED) which ends the wait at once.
//!
//! Poll intervals may grow: [`PollInterval::growing`] doubles from `initial` up to `max`, so a
//! 3-minute ECS deployment is seen finishing within seconds while a 40-minute MSK create does
//! not spend hundreds of Describe calls out of the read buckets. The last sleep is shortened
//! to end on the deadline, and the probe runs once more there before giving up.
use std::future::Future;
use std::time::Duration;

use super::clock::Clock;

/// What a probe saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe<T> {
    Done(T),
    /// Not there yet; `status` is what to show (`"deployment ecs-svc/123 IN_PROGRESS 1/2"`).
    Pending {
        status: String,
    },
    /// Cannot get there any more; waiting longer would not help.
    Failed {
        reason: String,
    },
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitOutcome<T> {
    Done(T),
    Failed(String),
    TimedOut {
        /// The status of the last probe, for the error message.
        last_status: String,
        waited_secs: f64,
    },
    /// The run was interrupted (the clock's sleep ended early): not a failure of the
    /// resource, which the next apply picks up where this one stopped.
    Interrupted {
        last_status: String,
    },
}

/// Time between probes: starts at `initial`, doubles after each pending probe, stops at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollInterval {
    pub initial: Duration,
    pub max: Duration,
}

impl PollInterval {
    pub fn fixed(every: Duration) -> Self {
        Self {
            initial: every,
            max: every,
        }
    }

    pub fn growing(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max: max.max(initial),
        }
    }
}

impl<T> WaitOutcome<T> {
    /// Done as `Ok`; a failure or a timeout as the message an outcome table shows
    /// (`what` names what was awaited: "deployment ecs-svc/1", "cluster ACTIVE").
    pub fn into_result(self, what: &str) -> Result<T, String> {
        match self {
            WaitOutcome::Done(value) => Ok(value),
            WaitOutcome::Failed(reason) => Err(reason),
            WaitOutcome::TimedOut {
                last_status,
                waited_secs,
            } => Err(format!(
                "{what}: not done after {waited_secs:.0}s (last: {last_status})"
            )),
            WaitOutcome::Interrupted { last_status } => Err(format!(
                "{what}: interrupted while waiting (last: {last_status})"
            )),
        }
    }
}

/// Probes until it reports done or failed, or until `deadline` (measured on `clock` from the
/// call) has passed. The probe runs at once, then after each interval.
pub async fn await_condition<T, F, Fut>(
    clock: &dyn Clock,
    deadline: Duration,
    poll: PollInterval,
    mut probe: F,
) -> WaitOutcome<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Probe<T>>,
{
    let start = clock.now();
    let deadline_us = u64::try_from(deadline.as_micros()).unwrap_or(u64::MAX);
    // Whole microseconds, like the limiter: f64 epoch seconds carry ~0.24 µs of noise that
    // would otherwise leave a sliver of time after the "last" sleep and cause an extra probe.
    let elapsed_us = || ((clock.now() - start) * 1e6).round().max(0.0) as u64;
    let mut interval = poll.initial;
    loop {
        let last_status = match probe().await {
            Probe::Done(value) => return WaitOutcome::Done(value),
            Probe::Failed { reason } => return WaitOutcome::Failed(reason),
            Probe::Pending { status } => status,
        };
        let elapsed = elapsed_us();
        if elapsed >= deadline_us {
            return WaitOutcome::TimedOut {
                last_status,
                waited_secs: elapsed as f64 / 1e6,
            };
        }
        let remaining = Duration::from_micros(deadline_us - elapsed);
        clock.sleep(interval.min(remaining)).await;
        // An interrupted clock's sleep ends at once: stop rather than poll in a tight loop.
        if clock.interrupted() {
            return WaitOutcome::Interrupted { last_status };
        }
        interval = interval.saturating_mul(2).min(poll.max);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::sync::Arc;

    use super::*;
    use crate::exec::sim_clock::SimClock;

    fn sim() -> (SimClock, Arc<dyn Clock>) {
        let sim = SimClock::builder(1_800_000_000.0)
            .stall_timeout(Duration::from_secs(10))
            .build();
        (sim.clone(), Arc::new(sim))
    }

    /// Runs a wait whose probe answers from `script` (one answer per probe) and records the
    /// simulated second of every probe.
    async fn scripted(
        deadline: Duration,
        poll: PollInterval,
        script: Vec<Probe<&'static str>>,
    ) -> (WaitOutcome<&'static str>, Vec<u64>) {
        let (sim, clock) = sim();
        let _guard = clock.participant();
        let times = RefCell::new(Vec::new());
        let answers = RefCell::new(script.into_iter());
        let outcome = await_condition(clock.as_ref(), deadline, poll, || {
            times.borrow_mut().push(sim.elapsed().as_secs());
            let answer = answers.borrow_mut().next().unwrap_or(Probe::Pending {
                status: "still IN_PROGRESS".into(),
            });
            async move { answer }
        })
        .await;
        (outcome, times.into_inner())
    }

    fn pending(status: &str) -> Probe<&'static str> {
        Probe::Pending {
            status: status.into(),
        }
    }

    #[tokio::test]
    async fn done_on_the_third_probe() {
        let (outcome, times) = scripted(
            Duration::from_secs(600),
            PollInterval::fixed(Duration::from_secs(10)),
            vec![pending("0/2"), pending("1/2"), Probe::Done("COMPLETED")],
        )
        .await;
        assert_eq!(outcome, WaitOutcome::Done("COMPLETED"));
        assert_eq!(times, vec![0, 10, 20]);
    }

    #[tokio::test]
    async fn a_failed_probe_ends_the_wait_at_once() {
        let (outcome, times) = scripted(
            Duration::from_secs(600),
            PollInterval::fixed(Duration::from_secs(10)),
            vec![
                pending("IN_PROGRESS"),
                Probe::Failed {
                    reason: "circuit breaker rolled back deployment ecs-svc/123".into(),
                },
            ],
        )
        .await;
        assert_eq!(
            outcome,
            WaitOutcome::Failed("circuit breaker rolled back deployment ecs-svc/123".into())
        );
        assert_eq!(times, vec![0, 10]);
    }

    #[tokio::test]
    async fn the_last_probe_lands_on_the_deadline() {
        let (outcome, times) = scripted(
            Duration::from_secs(60),
            PollInterval::fixed(Duration::from_secs(25)),
            vec![pending("CREATING 1"), pending("CREATING 2")],
        )
        .await;
        assert_eq!(times, vec![0, 25, 50, 60]);
        assert_eq!(
            outcome,
            WaitOutcome::TimedOut {
                last_status: "still IN_PROGRESS".into(),
                waited_secs: 60.0
            }
        );
    }

    #[tokio::test]
    async fn growing_intervals_double_up_to_their_max() {
        let (outcome, times) = scripted(
            Duration::from_secs(100),
            PollInterval::growing(Duration::from_secs(5), Duration::from_secs(20)),
            vec![],
        )
        .await;
        assert_eq!(times, vec![0, 5, 15, 35, 55, 75, 95, 100]);
        assert!(
            matches!(outcome, WaitOutcome::TimedOut { waited_secs, .. } if waited_secs == 100.0)
        );
    }

    #[tokio::test]
    async fn a_zero_deadline_probes_once() {
        let (outcome, times) = scripted(
            Duration::ZERO,
            PollInterval::fixed(Duration::from_secs(5)),
            vec![pending("available")],
        )
        .await;
        assert_eq!(times, vec![0]);
        assert_eq!(
            outcome,
            WaitOutcome::TimedOut {
                last_status: "available".into(),
                waited_secs: 0.0
            }
        );
    }
}
