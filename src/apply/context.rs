//! Everything an action needs while it runs: clients, the clock, rate limits, the journal,
//! the interruption flag, and the outputs learned so far. Every AWS call goes through
//! [`Context::read`] or [`Context::mutate`], so pacing, retries, journaling and
//! interruption are handled in one place.
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::error::ActionError;
use crate::account::observe::ObserveCache;
use crate::aws::paced;
use crate::aws::{AwsError, Clients};
use crate::exec::journal::{Entry, Journal, Phase};
use crate::exec::progress::{Finish, Progress, Summary};
use crate::exec::{
    Clock, Operation, PollInterval, Probe, RateLimits, WaitOutcome, await_condition,
};
use crate::model::live::Tags;
use crate::model::{DesiredState, tag};
use crate::spec::deferred::Outputs;
use crate::time::rfc3339;

/// The first pause of [`Context::mutate_through`]; it doubles up to 30 s.
const FIRST_PAUSE: Duration = Duration::from_secs(5);

/// A wait says what it waits for once this long has passed since its last word, in the
/// details (the run's log, `--verbose`): a 25-minute MSK creation shows as alive there. The
/// console's own heartbeat is rarer (`exec::plain_progress::QUIET_SECS`). Probes come at
/// most 60 s apart (MSK, RDS) and 15 s for ECS deployments, so details come at least once a
/// minute.
pub const HEARTBEAT: Duration = Duration::from_secs(45);

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
    /// How long a deployment may go on reporting that its tasks cannot be placed ("unable
    /// to place a task because no container instance met all of its requirements") before
    /// the service fails with that event, instead of waiting out `ecs_deployment`.
    pub ecs_placement: Duration,
    /// How long the container instances of `ecs.capacity: {instances: N}` (registered by
    /// something else) may take to register with room for the new services' tasks.
    pub ecs_capacity: Duration,
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

impl Deadlines {
    /// Every wait bounded by `limit` (`--wait-timeout`), except the short wait for an RDS
    /// modification to start, which only shortens.
    pub fn all(limit: Duration) -> Deadlines {
        Deadlines {
            ecs_deployment: limit,
            ecs_placement: Deadlines::default().ecs_placement.min(limit),
            ecs_capacity: Deadlines::default().ecs_capacity.min(limit),
            ecs_delete: limit,
            msk_create: limit,
            msk_operation: limit,
            msk_delete: limit,
            rds_create: limit,
            rds_modify: limit,
            rds_delete: limit,
            rds_modify_start: Deadlines::default().rds_modify_start.min(limit),
        }
    }
}

impl Deadlines {
    /// The env's `waits:`: one deadline for every wait on a kind of resource, envctl's
    /// default for a kind the env leaves out.
    pub fn from_waits(waits: &crate::spec::env::Waits) -> Deadlines {
        let mut d = Deadlines::default();
        if let Some(limit) = &waits.services {
            d.ecs_deployment = limit.value.0;
            d.ecs_delete = limit.value.0;
        }
        if let Some(limit) = &waits.kafka {
            d.msk_create = limit.value.0;
            d.msk_operation = limit.value.0;
            d.msk_delete = limit.value.0;
        }
        if let Some(limit) = &waits.rds {
            d.rds_create = limit.value.0;
            d.rds_modify = limit.value.0;
            d.rds_delete = limit.value.0;
            d.rds_modify_start = d.rds_modify_start.min(limit.value.0);
        }
        if let Some(limit) = &waits.placement {
            d.ecs_placement = limit.value.0;
        }
        if let Some(limit) = &waits.capacity {
            d.ecs_capacity = limit.value.0;
        }
        d
    }
}

impl Default for Deadlines {
    fn default() -> Self {
        let min = |m: u64| Duration::from_secs(m * 60);
        Deadlines {
            ecs_deployment: min(30),
            ecs_placement: min(3),
            ecs_capacity: min(10),
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

/// Whose resources these are: the env's name (the ownership tag and marks checked when a
/// create meets an existing resource), the tags every resource carries, and how long one
/// lives (`envctl:expires`). The same for every operation of a run.
#[derive(Debug, Clone, Default)]
pub struct Owner {
    pub env: String,
    pub tags: Tags,
    pub ttl_secs: u64,
}

impl Owner {
    pub fn of(desired: &DesiredState) -> Owner {
        Owner {
            env: desired.env.clone(),
            tags: desired.tags.clone(),
            ttl_secs: desired.ttl_secs,
        }
    }
}

pub struct Context {
    pub clients: Clients,
    pub clock: Arc<dyn Clock>,
    /// The session's buckets: observe and apply draw from the same ones.
    pub limits: Arc<RateLimits>,
    pub events: Arc<dyn Progress>,
    /// Written before and after every mutating call.
    pub journal: Option<Arc<Journal>>,
    pub deadlines: Deadlines,
    pub run_id: String,
    pub owner: Owner,
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
    /// The DescribeServices looks that service waits share (ten names per call).
    pub service_watch: super::service_watch::ServiceWatch,
}

#[derive(Debug, Clone)]
pub struct Polls {
    pub ecs: (Duration, Duration),
    /// First look at a new deployment: a task takes about this long to start, so looking
    /// earlier only spends DescribeServices calls (shared by every service of the account).
    pub ecs_deployment_first: Duration,
    /// How long a service wait's look waits for the looks of other services to join it in
    /// one DescribeServices (ten names per call): deployments started a second apart are
    /// seen by one call instead of one each, at the cost of seeing each at most this late.
    pub ecs_probe_gather: Duration,
    pub msk: (Duration, Duration),
    pub rds: (Duration, Duration),
    /// First look after a deletion (docs/estimates.md, "When a wait first looks"): an MSK
    /// cluster's and a DB instance's at a quarter of the typical duration
    /// ([`FIRST_LOOK_SHARE`]), a service's at its typical 2-minute drain; then the kind's
    /// growing polls.
    pub delete_first: DeleteFirst,
}

/// The share of an MSK cluster's or a DB instance's typical deletion time (docs/estimates.md:
/// about 10 and 5 minutes) after which its wait first looks. AWS documents no deletion
/// durations, and a deletion may end well before the typical figure, so the first look
/// comes well before it: a deletion that finished early is seen at a quarter of the typical
/// time instead of being waited out (terraform-provider-aws looks earlier still: its RDS
/// deletion waiter after 30 s, its MSK one at once). From there the kind's polls double up
/// to their maximum and reach the typical duration exactly (MSK: 150 + 30 + 7 x 60 = 600 s;
/// RDS: 75 + 15 + 30 + 4 x 60 = 300 s), so a deletion of typical length is still seen when
/// it ends, not a poll later; it costs 8 (MSK) and 6 (RDS) Describe calls instead of 1.
///
/// A service's deletion keeps its first look at the typical 2-minute drain: its looks are
/// DescribeServices calls shared by every service of the account (ten names per call, one
/// throttle bucket), a destroy of 144 services would make four times as many of them, and
/// the most an early end can be waited out is those 2 minutes.
pub const FIRST_LOOK_SHARE: f64 = 0.25;

/// When each kind of deletion's wait first looks.
#[derive(Debug, Clone)]
pub struct DeleteFirst {
    pub ecs_service: Duration,
    pub msk_cluster: Duration,
    pub db_instance: Duration,
}

impl Default for Polls {
    fn default() -> Self {
        let s = Duration::from_secs;
        let est = crate::plan::Estimates::default();
        Polls {
            ecs: (s(5), s(15)),
            ecs_deployment_first: s(40),
            ecs_probe_gather: s(5),
            msk: (s(30), s(60)),
            rds: (s(15), s(60)),
            delete_first: DeleteFirst {
                ecs_service: Duration::from_secs_f64(est.ecs_service_delete),
                msk_cluster: first_look(est.msk_delete),
                db_instance: first_look(est.rds_delete),
            },
        }
    }
}

/// A deletion's first look: [`FIRST_LOOK_SHARE`] of its typical duration.
fn first_look(typical_secs: f64) -> Duration {
    Duration::from_secs_f64(typical_secs * FIRST_LOOK_SHARE)
}

impl Context {
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Seconds since the run started, on the run's clock.
    pub fn elapsed(&self) -> f64 {
        self.clock.now() - self.started_at
    }

    /// Sleeps `d` unless the run is interrupted: the first look of a wait that cannot end
    /// sooner. Sleeps at most a heartbeat at a time, saying what it waits for.
    pub async fn pause(&self, resource: &str, what: &str, d: Duration) {
        let start = self.clock.now();
        let mut left = d;
        while !left.is_zero() && !self.cancelled() {
            let step = left.min(HEARTBEAT);
            self.clock.sleep(step).await;
            left -= step;
            if !left.is_zero() {
                let elapsed = self.clock.now() - start;
                self.events.detail(
                    resource,
                    &format!(
                        "waiting for {what}: {elapsed:.0}s, first look at {:.0}s",
                        d.as_secs_f64()
                    ),
                );
            }
        }
    }

    /// The tags a resource gets at creation: the env's, plus when, until when and by which
    /// run. The one place the creation-time values are filled in (at the send, so a plan
    /// applied later still stamps the time it ran).
    pub fn creation_tags(&self) -> Tags {
        let now = self.clock.now();
        let mut tags = self.owner.tags.clone();
        tags.insert(tag::CREATED.into(), rfc3339(now));
        tags.insert(
            tag::EXPIRES.into(),
            rfc3339(now + self.owner.ttl_secs as f64),
        );
        tags.insert(tag::RUN_ID.into(), self.run_id.clone());
        tags
    }

    /// The tags of a resource taken over with `--adopt`: the creation tags plus the adopted
    /// marker, so later runs know it existed before envctl (a matrix restores it).
    pub fn adoption_tags(&self) -> Tags {
        let mut tags = self.creation_tags();
        tags.insert(tag::ADOPTED.into(), "true".into());
        tags
    }

    async fn call<T, F, Fut>(
        &self,
        resource: &str,
        operation: Operation,
        f: F,
    ) -> Result<T, ActionError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        Ok(paced::call(self.clock.as_ref(), &self.limits, resource, operation, f).await?)
    }

    /// A call that only reads.
    pub async fn read<T, F, Fut>(
        &self,
        resource: &str,
        operation: Operation,
        f: F,
    ) -> Result<T, ActionError>
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
        operation: Operation,
        f: F,
    ) -> Result<T, ActionError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        if self.cancelled() {
            return Err(ActionError::Interrupted { during: None });
        }
        self.journal(resource, operation.name(), Phase::Intent, None);
        self.mutating_calls.fetch_add(1, Ordering::SeqCst);
        let result = self.call(resource, operation, f).await;
        match &result {
            Ok(_) => self.journal(resource, operation.name(), Phase::Done, None),
            Err(e) => self.journal(
                resource,
                operation.name(),
                Phase::Failed,
                Some(e.to_string()),
            ),
        }
        result
    }

    /// A mutating call sent again while AWS answers `code`, a refusal that passes by
    /// itself (a resource just created not yet visible, a deletion finishing, a role
    /// propagating), for up to `window` on the run's clock, every 5 s then growing to 30 s;
    /// the last answer is returned: the call's result, or the refusal it kept getting.
    /// terraform-provider-aws retries the same refusals the same way (docs/aws-behaviour.md,
    /// "envctl beside terraform-provider-aws, per resource kind").
    pub async fn mutate_through<T, F, Fut>(
        &self,
        resource: &str,
        operation: Operation,
        refusal: (envctl_aws_model::ErrorCode, &str, Duration),
        f: F,
    ) -> Result<T, ActionError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        let (code, why, window) = refusal;
        let since = self.clock.now();
        let mut pause = FIRST_PAUSE;
        loop {
            let result = self.mutate(resource, operation, &f).await;
            match result {
                Err(e)
                    if e.is_code(code)
                        && !self.cancelled()
                        && self.clock.now() - since + pause.as_secs_f64()
                            <= window.as_secs_f64() =>
                {
                    // The first retry is a console line; later ones are details (the run's
                    // log, --verbose), as for the SDK's own retries.
                    let text = format!("{code}: {why}; trying again in {}s", pause.as_secs());
                    if pause == FIRST_PAUSE {
                        self.events.status(resource, &text);
                    } else {
                        self.events.detail(resource, &text);
                    }
                    self.clock.sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(30));
                }
                other => return other,
            }
        }
    }

    /// Polls `probe` until it is done, fails, or `deadline` passes (from `since`, a time on
    /// the run's clock: a wait that began with a fixed sleep reports its real elapsed time).
    /// Ends at once with [`ActionError::Interrupted`] when the run is interrupted.
    pub async fn wait<T, F, Fut>(
        &self,
        resource: &str,
        what: &str,
        since: f64,
        deadline: Duration,
        poll: PollInterval,
        mut probe: F,
    ) -> Result<T, ActionError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Probe<T>, ActionError>>,
    {
        // The probe's typed error, kept while the wait loop only sees a failed probe.
        let error: Mutex<Option<ActionError>> = Mutex::new(None);
        let keep = |e: ActionError| {
            let reason = e.to_string();
            if let Ok(mut slot) = error.lock() {
                *slot = Some(e);
            }
            Probe::Failed { reason }
        };
        let remaining =
            deadline.saturating_sub(Duration::from_secs_f64((self.clock.now() - since).max(0.0)));
        // When the last line about this wait was written: a pending probe writes one more
        // once a heartbeat has passed (elapsed time, deadline, last status).
        let last_line = Mutex::new(since);
        let beat = |status: &str| {
            let now = self.clock.now();
            let Ok(mut last) = last_line.lock() else {
                return;
            };
            if now - *last >= HEARTBEAT.as_secs_f64() {
                *last = now;
                // A status that starts with what is awaited (`deployment ecs-svc/1
                // IN_PROGRESS 0/2 running`) is shown once: `last: IN_PROGRESS 0/2 running`.
                let status = status
                    .strip_prefix(what)
                    .map(str::trim_start)
                    .filter(|rest| !rest.is_empty())
                    .unwrap_or(status);
                self.events.detail(
                    resource,
                    &format!(
                        "waiting for {what}: {:.0}s of at most {:.0}s; last: {status}",
                        now - since,
                        deadline.as_secs_f64()
                    ),
                );
            }
        };
        let outcome = await_condition(self.clock.as_ref(), remaining, poll, || {
            let next = (!self.cancelled()).then(&mut probe);
            let keep = &keep;
            let beat = &beat;
            async move {
                match next {
                    None => keep(ActionError::Interrupted {
                        during: Some(what.to_string()),
                    }),
                    Some(fut) => match fut.await {
                        Ok(Probe::Pending { status }) => {
                            beat(&status);
                            Probe::Pending { status }
                        }
                        Ok(p) => p,
                        Err(e) => keep(e),
                    },
                }
            }
        })
        .await;
        match outcome {
            WaitOutcome::Done(value) => Ok(value),
            WaitOutcome::Failed(reason) => {
                Err(match error.lock().ok().and_then(|mut e| e.take()) {
                    // A probe that saw the interruption itself does not know what it was
                    // part of.
                    Some(ActionError::Interrupted { during: None }) => ActionError::Interrupted {
                        during: Some(what.to_string()),
                    },
                    Some(e) => e,
                    None => ActionError::Failed(reason),
                })
            }
            WaitOutcome::Interrupted { .. } => Err(ActionError::Interrupted {
                during: Some(what.to_string()),
            }),
            WaitOutcome::TimedOut { last_status, .. } => Err(ActionError::TimedOut {
                what: what.to_string(),
                elapsed_secs: self.clock.now() - since,
                deadline_secs: deadline.as_secs_f64(),
                last_status,
            }),
        }
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

#[cfg(test)]
mod first_look_tests {
    use super::*;

    /// The looks of a deletion's wait: the first look, then the kind's polls doubling up to
    /// their maximum (`exec::wait`), until `until` seconds.
    fn looks(first: Duration, (initial, max): (Duration, Duration), until: f64) -> Vec<f64> {
        let mut at = first.as_secs_f64();
        let mut interval = initial;
        let mut out = Vec::new();
        while at <= until + 1e-9 {
            out.push(at);
            at += interval.as_secs_f64();
            interval = interval.saturating_mul(2).min(max);
        }
        out
    }

    /// Issue 26 item 4: a deletion that finished early is seen at a quarter of its typical
    /// duration (it was seen at the typical duration: MSK at 600 s), and one of typical
    /// length is still seen when it ends (a look falls on the typical duration itself).
    #[test]
    fn a_deletion_is_first_looked_at_well_before_its_typical_end_and_seen_on_time_at_it() {
        let polls = Polls::default();
        let est = crate::plan::Estimates::default();
        for (kind, first, poll, typical) in [
            (
                "MSK cluster",
                polls.delete_first.msk_cluster,
                polls.msk,
                est.msk_delete,
            ),
            (
                "DB instance",
                polls.delete_first.db_instance,
                polls.rds,
                est.rds_delete,
            ),
        ] {
            let at = looks(first, poll, typical);
            assert_eq!(at.first().copied(), Some(typical / 4.0), "{kind}: {at:?}");
            assert!(
                at.iter().any(|t| (t - typical).abs() < 1e-9),
                "{kind}: no look at its typical {typical} s: {at:?}"
            );
        }
        assert_eq!(polls.delete_first.msk_cluster, Duration::from_secs(150));
        assert_eq!(polls.delete_first.db_instance, Duration::from_secs(75));
        // A service's looks are shared DescribeServices calls: at its typical drain.
        assert_eq!(polls.delete_first.ecs_service, Duration::from_secs(120));
    }
}
