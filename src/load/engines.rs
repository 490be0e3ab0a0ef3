//! The engines of one load step, from RunTask to the last STOPPED: started in RunTask calls
//! of at most 10 tasks, paced by Fargate's RunTask and task-launch buckets; a start barrier
//! (envctl opens it once every engine is RUNNING, by writing the barrier object with a
//! common `start_at`; an engine not RUNNING by the barrier's deadline fails the step, named
//! with its status and why); a heartbeat while they run; and StopTask for every engine that
//! is still up when the step ends otherwise than by all of them finishing (a failed engine,
//! the timeout, SIGINT/SIGTERM), confirmed by DescribeTasks so nothing is left running.
use envctl_aws_model::status::TaskStatus;
use std::time::Duration;

use envctl_aws_model::engine::{BARRIER_LEAD_S, RUN_TASK_MAX_COUNT, barrier_body};

use sha2::{Digest, Sha256};

use super::LoadError;
use crate::aws::engines::{self as api, EngineCapacity, EngineTask, RunEngines};
use crate::exec::{Cancel, Category};
use crate::session::Session;

/// How often envctl looks at the engines while they start, and while they run.
const START_POLL: Duration = Duration::from_secs(5);
const RUN_POLL: Duration = Duration::from_secs(15);
/// A heartbeat in the details (the run's log, `--verbose`) at most this often...
const HEARTBEAT: f64 = 60.0;
/// ...and on the console this often: a long step says it is alive, a short one says nothing.
const CONSOLE_HEARTBEAT: f64 = 600.0;
/// How long envctl waits for stopped engines to reach STOPPED: ECS gives a stopping task its
/// `stopTimeout` (the engine template's 120 s, Fargate's maximum) before SIGKILL, and the
/// engine puts its last results meanwhile.
const STOP_CONFIRM: f64 = 180.0;
/// DescribeTasks takes at most 100 tasks.
const DESCRIBE_MAX: usize = 100;

/// The seed of a step's RunTask client tokens: a digest of its run, point, repeat and step
/// and of when this attempt of the step started (a resumed run runs an unfinished step
/// again under the same run id, and ECS keeps a token for 24 hours: without the attempt,
/// the new RunTask would get the earlier, stopped engines back).
pub fn run_task_token_seed(
    run_id: &str,
    point: &str,
    repeat: &str,
    step: &str,
    attempt_started_at: f64,
) -> String {
    let digest = Sha256::digest(format!(
        "{run_id}\n{point}\n{repeat}\n{step}\n{attempt_started_at:.3}"
    ));
    hex::encode(digest)[..40].to_string()
}

/// RunTask's client token for the step's `batch`-th call (from 0): `envctl-<seed>-<batch>`,
/// 51 characters, within RunTask's 64 (ECS API Reference, RunTask `clientToken`; "Ensuring
/// idempotency"). Every retry of one call sends the same token, so ECS answers a retry of a
/// call whose answer was lost with the tasks that call started instead of starting more.
pub fn run_task_client_token(seed: &str, batch: u32) -> String {
    format!("envctl-{seed}-{batch:03}")
}

/// The engines of a step and how to reach them.
pub struct EngineRun<'a> {
    pub session: &'a Session,
    pub cluster: &'a str,
    pub task_definition: &'a str,
    pub container: &'a str,
    pub capacity: &'a EngineCapacity,
    pub subnets: &'a [String],
    pub security_groups: &'a [String],
    /// Names the step's engines in ECS (`startedBy`, at most 36 characters).
    pub started_by: &'a str,
    /// What RunTask's client tokens are made of ([`run_task_client_token`]): this step's
    /// run, point, repeat, step and attempt.
    pub token_seed: &'a str,
    pub environment: &'a [(String, String)],
    pub tags: &'a [(String, String)],
    pub engines: u32,
    pub barrier_bucket: &'a str,
    pub barrier_key: &'a str,
    pub barrier_timeout: Duration,
    /// The step's limit, from its start.
    pub timeout: Duration,
    pub cancel: &'a Cancel,
    /// Where the details go (the run's log): the starts, the heartbeats.
    pub detail: &'a (dyn Fn(&str) + Send + Sync),
}

/// One engine as last seen.
#[derive(Debug, Clone, PartialEq)]
pub struct Engine {
    /// `engine-01`, ... in launch order.
    pub name: String,
    pub task: EngineTask,
}

/// How the engines ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Every engine stopped with exit code 0.
    Finished,
    /// Not all engines started: RunTask refused some, or the barrier's deadline passed.
    NotStarted(String),
    /// An engine stopped with a non-zero exit code (or none).
    EngineFailed(String),
    TimedOut,
    Interrupted,
}

#[derive(Debug, Clone)]
pub struct EngineOutcome {
    pub engines: Vec<Engine>,
    pub run_task_calls: u32,
    pub stop_task_calls: u32,
    /// The step's start, the first RunTask, the barrier's opening and its `start_at`.
    pub started_at: f64,
    pub barrier_opened_at: Option<f64>,
    pub start_at: Option<f64>,
    pub ending: Ending,
    /// Engines not STOPPED when envctl gave up confirming (should be none).
    pub left_running: Vec<String>,
}

impl EngineRun<'_> {
    fn now(&self) -> f64 {
        self.session.clock.now()
    }

    /// Runs the engines to their end.
    pub async fn run(&self, say: &(dyn Fn(&str) + Send + Sync)) -> EngineOutcome {
        let started_at = self.now();
        let mut out = EngineOutcome {
            engines: Vec::new(),
            run_task_calls: 0,
            stop_task_calls: 0,
            started_at,
            barrier_opened_at: None,
            start_at: None,
            ending: Ending::Finished,
            left_running: Vec::new(),
        };
        if let Err(why) = self.start(&mut out).await {
            out.ending = Ending::NotStarted(why);
        } else {
            (self.detail)(&format!(
                "{} engine(s) started in {} RunTask call(s); waiting at the barrier (up to {})",
                out.engines.len(),
                out.run_task_calls,
                crate::plan::estimate::human(self.barrier_timeout.as_secs_f64())
            ));
            out.ending = match self.barrier(&mut out).await {
                Ok(()) => self.watch(&mut out, say).await,
                Err(ending) => ending,
            };
        }
        if out.ending != Ending::Finished {
            self.stop_all(&mut out).await;
        }
        out
    }

    /// RunTask in calls of at most 10, paced by Fargate's buckets.
    async fn start(&self, out: &mut EngineOutcome) -> Result<(), String> {
        let limits = &self.session.limits;
        let mut left = self.engines;
        while left > 0 {
            if self.cancel.is_cancelled() {
                return Err("interrupted while starting engines".into());
            }
            let count = left.min(RUN_TASK_MAX_COUNT);
            if *self.capacity == EngineCapacity::Fargate {
                limits.bucket(Category::FargateRunTask).acquire().await;
                for _ in 0..count {
                    limits.bucket(Category::FargateLaunch).acquire().await;
                }
            }
            let client_token = run_task_client_token(self.token_seed, out.run_task_calls);
            let request = RunEngines {
                cluster: self.cluster,
                task_definition: self.task_definition,
                container: self.container,
                count,
                capacity: self.capacity,
                subnets: self.subnets,
                security_groups: self.security_groups,
                started_by: self.started_by,
                client_token: &client_token,
                environment: self.environment,
                tags: self.tags,
            };
            out.run_task_calls += 1;
            let started =
                crate::aws::paced::retry(self.session.clock.as_ref(), self.started_by, || {
                    api::run_task(&self.session.clients.ecs, &request)
                })
                .await
                .map_err(|e| format!("RunTask: {e}"))?;
            for arn in started.task_arns {
                let name = format!("engine-{:02}", out.engines.len() + 1);
                out.engines.push(Engine {
                    name,
                    task: EngineTask {
                        arn,
                        last_status: "PROVISIONING".into(),
                        stopped_reason: None,
                        exit_code: None,
                        started_at: None,
                    },
                });
            }
            if !started.failures.is_empty() {
                return Err(format!(
                    "RunTask started {} of {count} engines: {}",
                    count as usize - started.failures.len().min(count as usize),
                    started.failures.join("; ")
                ));
            }
            left -= count;
        }
        Ok(())
    }

    async fn refresh(&self, out: &mut EngineOutcome) -> Result<(), LoadError> {
        let arns: Vec<String> = out.engines.iter().map(|e| e.task.arn.clone()).collect();
        for chunk in arns.chunks(DESCRIBE_MAX) {
            let tasks =
                crate::aws::paced::retry(self.session.clock.as_ref(), self.started_by, || {
                    api::describe(&self.session.clients.ecs, self.cluster, chunk)
                })
                .await?;
            for t in tasks {
                if let Some(e) = out.engines.iter_mut().find(|e| e.task.arn == t.arn) {
                    e.task = t;
                }
            }
        }
        Ok(())
    }

    /// Waits until every engine is RUNNING, then opens the barrier.
    async fn barrier(&self, out: &mut EngineOutcome) -> Result<(), Ending> {
        let deadline = self.now() + self.barrier_timeout.as_secs_f64();
        loop {
            if self.cancel.is_cancelled() {
                return Err(Ending::Interrupted);
            }
            if let Err(e) = self.refresh(out).await {
                return Err(Ending::NotStarted(format!("DescribeTasks: {e}")));
            }
            if let Some(e) = out
                .engines
                .iter()
                .find(|e| e.task.last_status == TaskStatus::Stopped)
            {
                return Err(Ending::NotStarted(format!(
                    "{} stopped before the barrier: {}",
                    e.name,
                    describe_stop(&e.task)
                )));
            }
            if out
                .engines
                .iter()
                .all(|e| e.task.last_status == TaskStatus::Running)
            {
                break;
            }
            if self.now() >= deadline {
                let waiting: Vec<String> = out
                    .engines
                    .iter()
                    .filter(|e| e.task.last_status != TaskStatus::Running)
                    .map(|e| format!("{} ({})", e.name, e.task.last_status))
                    .collect();
                return Err(Ending::NotStarted(format!(
                    "the barrier's deadline ({}) passed with {} of {} engines not RUNNING: {}",
                    crate::plan::estimate::human(self.barrier_timeout.as_secs_f64()),
                    waiting.len(),
                    out.engines.len(),
                    waiting.join(", ")
                )));
            }
            self.session.clock.sleep(START_POLL).await;
        }
        let opened = self.now();
        let start_at = opened + BARRIER_LEAD_S;
        let body = barrier_body(start_at).into_bytes();
        let s3 = &self
            .session
            .s3_for(self.barrier_bucket)
            .await
            .map_err(|e| Ending::NotStarted(format!("opening the barrier: {e}")))?
            .client;
        crate::aws::paced::retry(self.session.clock.as_ref(), self.barrier_key, || {
            api::put(s3, self.barrier_bucket, self.barrier_key, body.clone())
        })
        .await
        .map_err(|e| Ending::NotStarted(format!("opening the barrier: {e}")))?;
        out.barrier_opened_at = Some(opened);
        out.start_at = Some(start_at);
        Ok(())
    }

    /// Follows the engines until all stopped, one failed, the timeout or an interrupt.
    async fn watch(&self, out: &mut EngineOutcome, say: &(dyn Fn(&str) + Send + Sync)) -> Ending {
        let deadline = out.started_at + self.timeout.as_secs_f64();
        let mut last_beat = self.now();
        let mut last_line = self.now();
        loop {
            if self.cancel.is_cancelled() {
                return Ending::Interrupted;
            }
            if self.now() >= deadline {
                return Ending::TimedOut;
            }
            self.session.clock.sleep(RUN_POLL).await;
            if let Err(e) = self.refresh(out).await {
                return Ending::EngineFailed(format!("DescribeTasks: {e}"));
            }
            if let Some(e) = out
                .engines
                .iter()
                .find(|e| e.task.last_status == TaskStatus::Stopped && e.task.exit_code != Some(0))
            {
                return Ending::EngineFailed(format!(
                    "{} failed: {}",
                    e.name,
                    describe_stop(&e.task)
                ));
            }
            let running = out
                .engines
                .iter()
                .filter(|e| e.task.last_status != TaskStatus::Stopped)
                .count();
            if running == 0 {
                return Ending::Finished;
            }
            if self.now() - last_beat >= HEARTBEAT {
                last_beat = self.now();
                let text = format!(
                    "{running} of {} engines running, {} since the barrier opened",
                    out.engines.len(),
                    crate::exec::progress::took(
                        self.session.clock.as_ref(),
                        self.now() - out.barrier_opened_at.unwrap_or(out.started_at)
                    )
                );
                if self.now() - last_line >= CONSOLE_HEARTBEAT {
                    last_line = self.now();
                    say(&text);
                } else {
                    (self.detail)(&text);
                }
            }
        }
    }

    /// StopTask for every engine not STOPPED, then DescribeTasks until they are. Runs even
    /// after an interrupt: nothing may be left running.
    async fn stop_all(&self, out: &mut EngineOutcome) {
        let reason = match &out.ending {
            Ending::Interrupted => "envctl: the run was interrupted",
            Ending::TimedOut => "envctl: the load step timed out",
            _ => "envctl: another engine of the step failed",
        };
        let _ = self.refresh(out).await;
        for e in out
            .engines
            .iter()
            .filter(|e| e.task.last_status != TaskStatus::Stopped)
        {
            out.stop_task_calls += 1;
            // A failed StopTask shows up below as an engine still running.
            let _ = crate::aws::paced::retry(self.session.clock.as_ref(), &e.task.arn, || {
                api::stop(&self.session.clients.ecs, self.cluster, &e.task.arn, reason)
            })
            .await;
        }
        let until = self.now() + STOP_CONFIRM;
        loop {
            let _ = self.refresh(out).await;
            let up: Vec<String> = out
                .engines
                .iter()
                .filter(|e| e.task.last_status != TaskStatus::Stopped)
                .map(|e| e.name.clone())
                .collect();
            if up.is_empty() || self.now() >= until {
                out.left_running = up;
                return;
            }
            self.session.clock.sleep(START_POLL).await;
        }
    }
}

/// "exit code 1: Essential container in task exited".
pub fn describe_stop(t: &EngineTask) -> String {
    format!(
        "{}{}",
        match t.exit_code {
            Some(code) => format!("exit code {code}"),
            None => "no exit code".into(),
        },
        t.stopped_reason
            .as_deref()
            .map(|r| format!(", stoppedReason \"{r}\""))
            .unwrap_or_default()
    )
}
