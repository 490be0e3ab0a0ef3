//! The one way envctl sends an AWS call, reads and writes alike: a token from the shared
//! rate limiter for the call's ECS category, then retries with jittered exponential backoff
//! while the error says retrying can help (throttling, a 5xx, a dropped connection).
//!
//! Reads need pacing as much as writes: a cold-cache plan of 144 services sends 144
//! DescribeTaskDefinition at once, past the task-definition read bucket (50, then 20/s).
use std::future::Future;

use super::error::AwsError;
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
    let mut backoff = Backoff::for_key(BackoffPolicy::AWS_THROTTLING, key);
    let outcome = backoff.retry(clock, classify, f).await;
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
