//! Retries of throttled or transient AWS calls beyond the SDK's own attempts.
//!
//! The SDK's standard retry mode makes 3 attempts within a few seconds; a run that registers
//! 144 task definitions while someone else's pipeline shares the account can stay throttled
//! longer than that. Retrying here uses "full jitter" exponential backoff (AWS Architecture
//! Blog, "Exponential Backoff And Jitter"): the n-th wait is uniform in
//! `[0, min(cap, base * 2^n)]`, which spreads competing clients apart better than fixed or
//! equal-jitter delays. Waits sleep on the executor's [`Clock`] and the jitter comes from a
//! seeded generator, so a run on the sandbox is reproducible.
use std::future::Future;
use std::time::Duration;

use super::clock::Clock;

/// How long and how often to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// Ceiling of the first wait.
    pub base: Duration,
    /// Largest ceiling any wait can have.
    pub cap: Duration,
    /// Calls in total, the first one included; 1 means "never retry".
    pub max_attempts: u32,
}

impl BackoffPolicy {
    /// For ECS/MSK/RDS throttling on top of the SDK's retries: ceilings 1, 2, 4 ... 32 s,
    /// then 32 s; eight calls span up to about two minutes, the time 144 registrations need.
    pub const AWS_THROTTLING: BackoffPolicy = BackoffPolicy {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(32),
        max_attempts: 8,
    };

    /// The ceiling of the wait after the `retry`-th failure (0-based): `min(cap, base * 2^n)`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }
}

/// What a failed call deserves, decided by the caller who knows the error type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Throttling, a 5xx, a timeout: trying again may succeed.
    Retry,
    /// Validation, access denied, not found: trying again cannot help.
    Fatal,
}

/// How a retried call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryOutcome<T, E> {
    Succeeded {
        value: T,
        attempts: u32,
        /// Total time slept between attempts.
        waited: Duration,
    },
    /// Every attempt failed with a retryable error; `error` is the last one.
    Exhausted {
        error: E,
        attempts: u32,
        waited: Duration,
    },
    /// An attempt failed with an error the classifier called fatal.
    Fatal {
        error: E,
        attempts: u32,
        waited: Duration,
    },
}

impl<T, E> RetryOutcome<T, E> {
    pub fn attempts(&self) -> u32 {
        match self {
            RetryOutcome::Succeeded { attempts, .. }
            | RetryOutcome::Exhausted { attempts, .. }
            | RetryOutcome::Fatal { attempts, .. } => *attempts,
        }
    }

    /// The value, or the error that ended the retries.
    pub fn into_result(self) -> Result<T, E> {
        match self {
            RetryOutcome::Succeeded { value, .. } => Ok(value),
            RetryOutcome::Exhausted { error, .. } | RetryOutcome::Fatal { error, .. } => Err(error),
        }
    }
}

/// A retry loop with its own jitter generator. Give each concurrent task its own, seeded from
/// something stable such as the resource key, so runs repeat exactly.
#[derive(Debug, Clone)]
pub struct Backoff {
    policy: BackoffPolicy,
    rng: SplitMix64,
}

impl Backoff {
    pub fn new(policy: BackoffPolicy, seed: u64) -> Self {
        Self {
            policy,
            rng: SplitMix64(seed),
        }
    }

    /// Seeded from `key` (FNV-1a), so the same resource gets the same jitter in every run.
    pub fn for_key(policy: BackoffPolicy, key: &str) -> Self {
        let seed = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        Self::new(policy, seed)
    }

    pub fn policy(&self) -> BackoffPolicy {
        self.policy
    }

    /// The next wait after the `retry`-th failure: uniform in `[0, ceiling(retry)]`.
    pub fn next_delay(&mut self, retry: u32) -> Duration {
        let ceiling = u64::try_from(self.policy.ceiling(retry).as_nanos()).unwrap_or(u64::MAX);
        // Multiply-shift maps a uniform u64 onto [0, ceiling] without modulo bias.
        let span = u128::from(ceiling) + 1;
        let nanos = (u128::from(self.rng.next_u64()) * span) >> 64;
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(ceiling))
    }

    /// Calls `op` until it succeeds, fails fatally, or `max_attempts` calls have failed,
    /// sleeping a jittered backoff on `clock` between attempts.
    ///
    /// Acquire rate-limit tokens inside `op`: AWS charges every attempt to its bucket.
    pub async fn retry<T, E, F, Fut>(
        &mut self,
        clock: &dyn Clock,
        classify: impl Fn(&E) -> Verdict,
        op: F,
    ) -> RetryOutcome<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.retry_observed(clock, classify, |_, _, _| {}, op).await
    }

    /// Like [`Backoff::retry`], calling `on_retry(error, failed_attempt, delay)` before each
    /// backoff sleep, so progress can show "throttled, retrying in 3 s".
    pub async fn retry_observed<T, E, F, Fut>(
        &mut self,
        clock: &dyn Clock,
        classify: impl Fn(&E) -> Verdict,
        mut on_retry: impl FnMut(&E, u32, Duration),
        mut op: F,
    ) -> RetryOutcome<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let max_attempts = self.policy.max_attempts.max(1);
        let mut waited = Duration::ZERO;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let error = match op().await {
                Ok(value) => {
                    return RetryOutcome::Succeeded {
                        value,
                        attempts,
                        waited,
                    };
                }
                Err(error) => error,
            };
            if classify(&error) == Verdict::Fatal {
                return RetryOutcome::Fatal {
                    error,
                    attempts,
                    waited,
                };
            }
            if attempts >= max_attempts {
                return RetryOutcome::Exhausted {
                    error,
                    attempts,
                    waited,
                };
            }
            let delay = self.next_delay(attempts - 1);
            on_retry(&error, attempts, delay);
            clock.sleep(delay).await;
            waited += delay;
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, seedable and good enough for jitter; pulling
/// in `rand` for this would be a dependency for ten lines.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::Arc;

    use super::*;
    use crate::exec::sim_clock::SimClock;

    #[derive(Debug, PartialEq)]
    enum CallError {
        Throttled,
        Invalid,
    }

    fn classify(e: &CallError) -> Verdict {
        match e {
            CallError::Throttled => Verdict::Retry,
            CallError::Invalid => Verdict::Fatal,
        }
    }

    fn sim() -> (SimClock, Arc<dyn Clock>) {
        let sim = SimClock::builder(1_800_000_000.0)
            .stall_timeout(Duration::from_secs(10))
            .build();
        (sim.clone(), Arc::new(sim))
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs for seed 1234567 from the reference C implementation.
        let mut rng = SplitMix64(1234567);
        let got: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            got,
            vec![
                6457827717110365317,
                3203168211198807973,
                9817491932198370423
            ]
        );
    }

    #[test]
    fn ceilings_double_up_to_the_cap_without_overflowing() {
        let p = BackoffPolicy::AWS_THROTTLING;
        let secs: Vec<u64> = (0..8).map(|n| p.ceiling(n).as_secs()).collect();
        assert_eq!(secs, vec![1, 2, 4, 8, 16, 32, 32, 32]);
        assert_eq!(p.ceiling(200), Duration::from_secs(32));
    }

    #[test]
    fn delays_are_seeded_and_within_their_ceilings() {
        let p = BackoffPolicy::AWS_THROTTLING;
        let run = |seed| {
            let mut b = Backoff::new(p, seed);
            (0..50).map(|n| b.next_delay(n % 8)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        for (i, d) in run(7).iter().enumerate() {
            assert!(*d <= p.ceiling(i as u32 % 8), "{i}: {d:?}");
        }
        // Full jitter spreads over the whole range, not just its top half.
        let mut b = Backoff::new(p, 42);
        let low = (0..1000)
            .filter(|_| b.next_delay(5) < Duration::from_secs(16))
            .count();
        assert!((400..600).contains(&low), "{low} of 1000 below half");
    }

    #[test]
    fn keys_seed_reproducibly() {
        let p = BackoffPolicy::AWS_THROTTLING;
        let mut a = Backoff::for_key(p, "ecs/service/mod-users");
        let mut b = Backoff::for_key(p, "ecs/service/mod-users");
        let mut c = Backoff::for_key(p, "ecs/service/mod-orders");
        let (da, db, dc) = (a.next_delay(5), b.next_delay(5), c.next_delay(5));
        assert_eq!(da, db);
        assert_ne!(da, dc);
    }

    #[tokio::test]
    async fn throttled_calls_are_retried_until_they_succeed() {
        let (sim, clock) = sim();
        let _guard = clock.participant();
        let calls = Cell::new(0);
        let mut backoff = Backoff::new(BackoffPolicy::AWS_THROTTLING, 99);
        let outcome = backoff
            .retry(clock.as_ref(), classify, || {
                calls.set(calls.get() + 1);
                let n = calls.get();
                async move {
                    if n < 3 {
                        Err(CallError::Throttled)
                    } else {
                        Ok(n)
                    }
                }
            })
            .await;
        let mut replay = Backoff::new(BackoffPolicy::AWS_THROTTLING, 99);
        let expected_wait = replay.next_delay(0) + replay.next_delay(1);
        assert_eq!(
            outcome,
            RetryOutcome::Succeeded {
                value: 3,
                attempts: 3,
                waited: expected_wait
            }
        );
        assert_eq!(sim.elapsed(), expected_wait);
    }

    #[tokio::test]
    async fn a_fatal_error_stops_at_once() {
        let (sim, clock) = sim();
        let _guard = clock.participant();
        let calls = Cell::new(0);
        let mut backoff = Backoff::new(BackoffPolicy::AWS_THROTTLING, 1);
        let outcome: RetryOutcome<(), _> = backoff
            .retry(clock.as_ref(), classify, || {
                calls.set(calls.get() + 1);
                async { Err(CallError::Invalid) }
            })
            .await;
        assert_eq!(
            outcome,
            RetryOutcome::Fatal {
                error: CallError::Invalid,
                attempts: 1,
                waited: Duration::ZERO
            }
        );
        assert_eq!(calls.get(), 1);
        assert_eq!(sim.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn retries_stop_after_max_attempts() {
        let (sim, clock) = sim();
        let _guard = clock.participant();
        let policy = BackoffPolicy {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
            max_attempts: 4,
        };
        let calls = Cell::new(0);
        let mut observed = Vec::new();
        let mut backoff = Backoff::new(policy, 5);
        let outcome: RetryOutcome<(), _> = backoff
            .retry_observed(
                clock.as_ref(),
                classify,
                |e, attempt, delay| observed.push((format!("{e:?}"), attempt, delay)),
                || {
                    calls.set(calls.get() + 1);
                    async { Err(CallError::Throttled) }
                },
            )
            .await;
        let mut replay = Backoff::new(policy, 5);
        let delays: Vec<Duration> = (0..3).map(|n| replay.next_delay(n)).collect();
        let waited: Duration = delays.iter().sum();
        let expected: Vec<_> = (1..=3)
            .zip(&delays)
            .map(|(attempt, d)| ("Throttled".to_string(), attempt, *d))
            .collect();
        assert_eq!(observed, expected);
        assert_eq!(calls.get(), 4);
        assert_eq!(outcome.attempts(), 4);
        assert_eq!(outcome.into_result(), Err::<(), _>(CallError::Throttled));
        assert_eq!(sim.elapsed(), waited);
        assert!(waited <= Duration::from_millis(100 + 200 + 400));
    }
}
