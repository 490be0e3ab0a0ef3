//! Everything an action needs while it runs: clients, the clock, rate limits, the journal,
//! the interruption flag, and the outputs learned so far. Every AWS call goes through
//! [`Context::read`] or [`Context::mutate`], so pacing, retries, journaling and
//! interruption are handled in one place.
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::aws::observe::ObserveCache;
use crate::aws::{AwsError, Clients};
use crate::exec::journal::{Entry, Journal, Phase};
use crate::exec::progress::{Finish, Progress, Summary};
use crate::exec::{Backoff, BackoffPolicy, Clock, RateLimits, RetryOutcome, Verdict};
use crate::model::live::{LiveState, Tags};
use crate::model::{DesiredState, tag};
use crate::spec::deferred::Outputs;

/// Progress nobody watches (tests, benchmarks).
pub struct Silent;

impl Progress for Silent {
    fn planned(&self, _: usize) {}
    fn started(&self, _: &str, _: &str) {}
    fn status(&self, _: &str, _: &str) {}
    fn finished(&self, _: &str, _: Finish, _: &str) {}
    fn summary(&self, _: &Summary) {}
}

/// How long each kind of wait may take before the action fails.
#[derive(Debug, Clone)]
pub struct Deadlines {
    pub ecs_deployment: Duration,
    pub ecs_delete: Duration,
    pub msk_create: Duration,
    pub msk_operation: Duration,
    pub msk_delete: Duration,
    pub rds_create: Duration,
    pub rds_modify: Duration,
    pub rds_delete: Duration,
    /// How long ModifyDBInstance may leave the status at "available" before envctl assumes
    /// the change was applied without a visible "modifying" phase.
    pub rds_modify_start: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        let min = |m: u64| Duration::from_secs(m * 60);
        Deadlines {
            ecs_deployment: min(30),
            ecs_delete: min(15),
            msk_create: min(90),
            msk_operation: min(180),
            msk_delete: min(60),
            rds_create: min(90),
            rds_modify: min(90),
            rds_delete: min(60),
            rds_modify_start: min(5),
        }
    }
}

/// The error a call returns once the run is interrupted: nothing new is launched.
pub fn interrupted(operation: &'static str, resource: &str) -> AwsError {
    AwsError {
        operation,
        resource: resource.to_string(),
        code: Some("Interrupted".into()),
        message: "not sent: the run was interrupted".into(),
        retryable: false,
    }
}

pub struct Context {
    pub clients: Clients,
    pub clock: Arc<dyn Clock>,
    pub limits: RateLimits,
    pub events: Arc<dyn Progress>,
    /// Written before and after every mutating call.
    pub journal: Option<Arc<Journal>>,
    pub deadlines: Deadlines,
    pub run_id: String,
    pub desired: DesiredState,
    pub live: LiveState,
    pub cancel: crate::exec::Cancel,
    /// Endpoints known so far; actions that create data stores add theirs.
    pub outputs: Mutex<Outputs>,
    /// Revisions registered or described: content is looked up here before registering.
    pub cache: Mutex<ObserveCache>,
    /// MSK configuration (ARN, revision) per Kafka key, once written.
    pub kafka_configurations: Mutex<BTreeMap<String, (String, i64)>>,
    pub mutating_calls: AtomicU64,
    pub started_at: f64,
    /// Seconds between polls of a deployment, an MSK operation or an RDS status.
    pub poll: Polls,
}

#[derive(Debug, Clone)]
pub struct Polls {
    pub ecs: (Duration, Duration),
    /// First look at a new deployment: a task takes about this long to start, so looking
    /// earlier only spends DescribeServices calls (shared by every service of the account).
    pub ecs_deployment_first: Duration,
    pub msk: (Duration, Duration),
    pub rds: (Duration, Duration),
}

impl Default for Polls {
    fn default() -> Self {
        let s = Duration::from_secs;
        Polls {
            ecs: (s(5), s(15)),
            ecs_deployment_first: s(40),
            msk: (s(30), s(60)),
            rds: (s(15), s(60)),
        }
    }
}

/// Throttling, server errors and dropped connections are worth another try; anything else
/// (validation, not found, conflicts) is not.
fn classify(e: &AwsError) -> Verdict {
    if e.retryable {
        Verdict::Retry
    } else {
        Verdict::Fatal
    }
}

impl Context {
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Seconds since the run started, on the run's clock.
    pub fn elapsed(&self) -> f64 {
        self.clock.now() - self.started_at
    }

    /// The tags a resource gets at creation: the env's, plus when, until when and by which run.
    pub fn creation_tags(&self) -> Tags {
        let now = self.clock.now();
        let mut tags = self.desired.tags.clone();
        tags.insert(tag::CREATED.into(), rfc3339(now));
        tags.insert(
            tag::EXPIRES.into(),
            rfc3339(now + self.desired.ttl_secs as f64),
        );
        tags.insert(tag::RUN_ID.into(), self.run_id.clone());
        tags
    }

    async fn call<T, F, Fut>(
        &self,
        resource: &str,
        operation: &'static str,
        f: F,
    ) -> Result<T, AwsError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        let mut backoff = Backoff::for_key(BackoffPolicy::AWS_THROTTLING, resource);
        let outcome = backoff
            .retry(self.clock.as_ref(), classify, || async {
                self.limits.acquire(operation).await;
                f().await
            })
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

    /// A call that only reads.
    pub async fn read<T, F, Fut>(
        &self,
        resource: &str,
        operation: &'static str,
        f: F,
    ) -> Result<T, AwsError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        self.call(resource, operation, f).await
    }

    /// A call that changes AWS: refused once interrupted, journaled before and after.
    pub async fn mutate<T, F, Fut>(
        &self,
        resource: &str,
        operation: &'static str,
        f: F,
    ) -> Result<T, AwsError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        if self.cancelled() {
            return Err(interrupted(operation, resource));
        }
        self.journal(resource, operation, Phase::Intent, None);
        self.mutating_calls.fetch_add(1, Ordering::SeqCst);
        let result = self.call(resource, operation, f).await;
        match &result {
            Ok(_) => self.journal(resource, operation, Phase::Done, None),
            Err(e) => self.journal(resource, operation, Phase::Failed, Some(e.to_string())),
        }
        result
    }

    fn journal(&self, resource: &str, operation: &str, phase: Phase, message: Option<String>) {
        if let Some(journal) = &self.journal {
            let entry = Entry {
                time: self.clock.now(),
                run_id: self.run_id.clone(),
                resource: resource.to_string(),
                operation: operation.to_string(),
                phase,
                message,
            };
            // The journal explains an interrupted run; failing to write it must not stop
            // the apply that it describes.
            let _ = journal.record(&entry);
        }
    }

    pub fn set_outputs(&self, values: impl IntoIterator<Item = (String, String)>) {
        if let Ok(mut outputs) = self.outputs.lock() {
            outputs.extend(values);
        }
    }

    pub fn outputs(&self) -> Outputs {
        self.outputs.lock().map(|o| o.clone()).unwrap_or_default()
    }
}

/// `2026-11-30T12:00:00Z` from seconds since the epoch (UTC; civil-from-days, no time zone
/// database needed).
pub fn rfc3339(secs: f64) -> String {
    let secs = secs.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
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
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
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
