//! The one way envctl sends an AWS call, reads and writes alike: a token from the shared
//! rate limiter for the call's ECS category, then retries with jittered exponential backoff
//! while the error says retrying can help (throttling, a 5xx, a dropped connection).
//!
//! Reads need pacing as much as writes: a cold-cache plan of 144 services sends 144
//! DescribeTaskDefinition at once, past the task-definition read bucket (50, then 20/s).
//!
//! Retries are said: after a call's first failed attempt, one line says what failed and that
//! envctl retries (`retrying DescribeClusters pcp1-pvt (2/8): dispatch failure: ...`);
//! unreachable AWS was 70 silent seconds before the final error. The same failure of the same
//! operation is a line once per run (144 throttled registrations are one line), then a
//! detail, as every later attempt is.
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::error::AwsError;
use crate::exec::console::{self, Sink};
use crate::exec::{Backoff, BackoffPolicy, Clock, Operation, RateLimits, RetryOutcome, Verdict};

fn classify(e: &AwsError) -> Verdict {
    if e.retryable {
        Verdict::Retry
    } else {
        Verdict::Fatal
    }
}

/// Sends `f` under the limiter for `operation`, retrying on `key`'s jitter sequence.
pub async fn call<T, F, Fut>(
    clock: &dyn Clock,
    limits: &RateLimits,
    key: &str,
    operation: Operation,
    f: F,
) -> Result<T, AwsError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, AwsError>>,
{
    retry(clock, key, || async {
        limits.acquire(operation).await;
        f().await
    })
    .await
}

/// The retry half of [`call`], for callers that take their token themselves (several
/// reads of one batch under one bucket, as `import` does).
pub async fn retry<T, F, Fut>(clock: &dyn Clock, key: &str, f: F) -> Result<T, AwsError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, AwsError>>,
{
    retry_telling(clock, key, &Retries::process(), f).await
}

/// What a retry is said to, and the failures already said as a line (a repeated one is a
/// detail).
pub struct Retries<'a> {
    said: &'a Mutex<BTreeSet<(&'static str, String)>>,
    sink: Arc<dyn Sink>,
}

/// The failures this process has said.
static SAID: Mutex<BTreeSet<(&'static str, String)>> = Mutex::new(BTreeSet::new());

impl<'a> Retries<'a> {
    pub fn new(said: &'a Mutex<BTreeSet<(&'static str, String)>>, sink: Arc<dyn Sink>) -> Self {
        Retries { said, sink }
    }

    /// The process's console and what this process has said.
    fn process() -> Retries<'static> {
        Retries::new(&SAID, console::current())
    }

    /// Says the retry after `failed` attempts of `max`: a line for a call's first retry of a
    /// failure not said yet, a detail otherwise.
    fn tell(&self, error: &AwsError, failed: u32, max: u32, delay: Duration) {
        let what = match &error.code {
            Some(code) => format!("{code}: {}", error.message),
            None => error.message.clone(),
        };
        let resource = if error.resource.is_empty() {
            String::new()
        } else {
            format!(" {}", error.resource)
        };
        let text = format!(
            "retrying {}{resource} ({}/{max}, in {:.1}s): {what}",
            error.operation,
            failed + 1,
            delay.as_secs_f64()
        );
        let failure = (
            error.operation,
            error.code.clone().unwrap_or_else(|| error.message.clone()),
        );
        let new = failed == 1
            && self
                .said
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(failure);
        if new {
            self.sink.line(&text);
        } else {
            self.sink.detail(&text);
        }
    }
}

/// [`retry`], telling `retries` about each retry.
pub async fn retry_telling<T, F, Fut>(
    clock: &dyn Clock,
    key: &str,
    retries: &Retries<'_>,
    f: F,
) -> Result<T, AwsError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, AwsError>>,
{
    let mut backoff = Backoff::for_key(BackoffPolicy::AWS_THROTTLING, key);
    let max = backoff.policy().max_attempts;
    let outcome = backoff
        .retry_observed(
            clock,
            classify,
            |error, failed, delay| retries.tell(error, failed, max, delay),
            f,
        )
        .await;
    match outcome {
        RetryOutcome::Succeeded { value, .. } => Ok(value),
        RetryOutcome::Exhausted {
            error, attempts, ..
        } => Err(AwsError {
            message: format!("{} (gave up after {attempts} attempts)", error.message),
            ..error
        }),
        RetryOutcome::Fatal { error, .. } => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::SimClock;
    use crate::exec::console::Recorder;

    fn unreachable() -> AwsError {
        AwsError {
            operation: "DescribeClusters",
            resource: "pcp1-pvt".into(),
            code: None,
            message: "dispatch failure: io error: Connection refused".into(),
            retryable: true,
            credentials: false,
        }
    }

    /// Issue 35: unreachable AWS was 70 silent seconds. The first retry of a call is a line,
    /// the later ones details; the same failure of another call is a detail too.
    #[tokio::test]
    async fn the_first_retry_of_a_failure_is_said() {
        let sim = SimClock::new(1_800_000_000.0);
        let _guard = sim.participant();
        let said = Mutex::new(BTreeSet::new());
        let recorder = Arc::new(Recorder::default());
        let retries = Retries::new(&said, recorder.clone());
        for key in ["pcp1-pvt", "pcp1-pvt-again"] {
            let result: Result<(), AwsError> =
                retry_telling(&sim, key, &retries, || async { Err(unreachable()) }).await;
            let error = result.expect_err("never succeeds");
            assert!(error.message.ends_with("(gave up after 8 attempts)"));
        }
        let lines = recorder.lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("retrying DescribeClusters pcp1-pvt (2/8, in "),
            "{}",
            lines[0]
        );
        assert!(lines[0].ends_with("s): dispatch failure: io error: Connection refused"));
        // Attempts 3 to 8 of the first call, 2 to 8 of the second.
        assert_eq!(recorder.details().len(), 6 + 7);
    }
}
