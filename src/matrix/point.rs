//! One point of a matrix, as its steps: `switch` the environment to the point's
//! configuration, `read_back` what AWS runs, `run_steps` (the workload), `collect` the
//! metrics of its window, and `finish` (write `point.json`).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::error::MatrixError;
use super::expand::Point;
use super::options::MatrixOptions;
use super::steps::{StepContext, run_steps};
use super::{effective, metrics};
use crate::aws::engines::EngineCapacity;
use crate::converge::{self, ApplyOptions};
use crate::exec::private_file;
use crate::load::step::LoadEnv;
use crate::model::DesiredState;
use crate::plan::DiffOptions;
use crate::results::{self, PointRecord, Status, TransitionRecord};
use crate::session::Session;
use crate::spec::playbook::{LoadedPlaybook, Step};

/// How a point ended; `workload_failed` tells a failing step from an environment that did
/// not converge.
pub struct PointEnd {
    pub status: Status,
    pub workload_failed: bool,
    /// How long its workload took, steps and metrics padding (the point without its switch):
    /// what the run's time-left estimate expects of the points to come.
    pub workload_s: Option<f64>,
}

/// What a point needs while it runs, and the record it fills.
pub struct PointRun<'a> {
    loaded: &'a LoadedPlaybook,
    session: &'a Session,
    options: &'a MatrixOptions,
    point: &'a Point,
    desired: &'a DesiredState,
    /// `[3/8] level=warn: ` before everything the point says.
    prefix: String,
    dir: PathBuf,
    record: PointRecord,
    /// The env's MSK clusters as read back (name, ARN): whose operations are compared with
    /// the workload window.
    msk_clusters: Vec<(String, String)>,
}

impl<'a> PointRun<'a> {
    /// Prepares the point's directory and record; `index` counts from 0 in run order.
    pub fn new(
        loaded: &'a LoadedPlaybook,
        configs: &'a BTreeMap<String, DesiredState>,
        session: &'a Session,
        options: &'a MatrixOptions,
        point: &'a Point,
        (index, total): (usize, usize),
        run_dir: &Path,
    ) -> Result<PointRun<'a>, MatrixError> {
        let dir = run_dir.join("points").join(&point.dir);
        private_file::create_dir_all(&dir).map_err(MatrixError::io(&dir))?;
        // plan_matrix compiles a configuration for every point's key.
        let desired = configs
            .get(&point.config_key)
            .ok_or_else(|| MatrixError::Compile {
                point: point.id.clone(),
                diagnostics: "no configuration was compiled for it".into(),
            })?;
        let record = PointRecord {
            id: point.id.clone(),
            axes: point.axes.iter().cloned().collect(),
            repeat: point.repeat,
            vars: point.vars.clone(),
            status: Status::Running,
            started_at: session.clock.now(),
            finished_at: None,
            transition: TransitionRecord::default(),
            steps: Vec::new(),
            effective_file: "effective.json".into(),
            metrics_file: None,
            failure: None,
            msk_operations: Vec::new(),
        };
        Ok(PointRun {
            loaded,
            session,
            options,
            point,
            desired,
            prefix: format!("[{}/{total}] {}: ", index + 1, point.id),
            dir,
            record,
            msk_clusters: Vec::new(),
        })
    }

    fn say(&self, text: &str) {
        (self.options.say)(&format!("{}{text}", self.prefix));
    }

    /// Runs the steps in order; a switch that does not converge ends the point before the
    /// workload.
    pub async fn run(mut self) -> Result<PointEnd, MatrixError> {
        if let Some((status, failure)) = self.switch().await? {
            return self.finish(status, Some(failure));
        }
        self.read_back().await?;
        let window = self.run_steps().await;
        self.note_msk_operations(window).await;
        self.collect(window).await?;
        let (status, failure) = self.judge_steps();
        let took = crate::exec::progress::took(
            self.session.clock.as_ref(),
            self.session.clock.now() - self.record.started_at,
        );
        self.say(&format!(
            "{} in {took}",
            match status {
                Status::Passed => "passed",
                Status::Interrupted => "interrupted",
                _ => "FAILED",
            }
        ));
        self.finish(status, failure)
    }

    /// 1. Converges the environment to the point's configuration (only the changes); an
    ///    interruption or a failed change ends the point with that status.
    async fn switch(&mut self) -> Result<Option<(Status, String)>, MatrixError> {
        let (session, options, desired) = (self.session, self.options, self.desired);
        let planned = converge::plan(
            session,
            desired,
            &options.state_dir,
            &DiffOptions::default(),
        )
        .await?;
        let transition = &mut self.record.transition;
        transition.changes = planned
            .plan
            .changes()
            .map(|a| format!("{}: {}", a.id, a.kind.verb()))
            .collect();
        transition.estimated_s = planned.plan.estimate_secs;
        self.say(&format!(
            "switching: {} (est {})",
            super::order::summarize(&planned.plan),
            crate::plan::estimate::human(planned.plan.estimate_secs)
        ));
        let mut apply = ApplyOptions::new(options.run_id.clone(), options.state_dir.clone());
        apply.events = options.progress.clone();
        apply.cancel = options.cancel.clone();
        let report = converge::apply(session, desired, planned, &apply).await?;
        self.record.transition.actual_s = report.elapsed_secs;
        self.record.transition.mutating_calls = report.mutating_calls;
        if report.interrupted {
            return Ok(Some((
                Status::Interrupted,
                "interrupted while switching the environment".into(),
            )));
        }
        if !report.succeeded() {
            let why: Vec<String> = report
                .failures()
                .map(|f| format!("{}: {}", f.resource, f.outcome.detail()))
                .collect();
            self.say("the environment did not converge");
            return Ok(Some((
                Status::Failed,
                format!("the environment did not converge: {}", why.join("; ")),
            )));
        }
        Ok(None)
    }

    /// 2. What actually runs, read back from AWS into `effective.json`.
    async fn read_back(&mut self) -> Result<(), MatrixError> {
        let live =
            converge::observe_live(self.session, self.desired, &self.options.state_dir).await?;
        self.msk_clusters = self
            .desired
            .kafka
            .values()
            .filter_map(|k| live.kafka.get(&k.name))
            .map(|l| (l.name.clone(), l.arn.clone()))
            .collect();
        let path = self.dir.join("effective.json");
        results::write_json(&path, &effective::effective(self.desired, &live))
            .map_err(MatrixError::io(path))
    }

    /// 3. The workload, with the point's variables; returns its window (start, end).
    async fn run_steps(&mut self) -> (f64, f64) {
        let (options, point, desired) = (self.options, self.point, self.desired);
        let clock = self.session.clock.clone();
        let mut vars: BTreeMap<String, String> = point.vars.clone();
        vars.insert(
            "RESULTS_DIR".into(),
            std::fs::canonicalize(&self.dir)
                .unwrap_or(self.dir.clone())
                .display()
                .to_string(),
        );
        vars.insert("POINT".into(), point.id.clone());
        vars.insert("RUN_ID".into(), options.run_id.clone());
        vars.insert("REPEAT".into(), point.repeat.to_string());
        vars.insert("ENV".into(), desired.env.clone());
        for (a, v) in &point.axes {
            vars.insert(format!("AXIS_{a}"), v.clone());
        }
        if let Ok(exe) = std::env::current_exe() {
            vars.insert("ENVCTL".into(), exe.display().to_string());
        }
        if let Some(url) = &options.endpoint_url {
            // The demo workload talks to the sandbox like any AWS client would.
            vars.insert("AWS_ENDPOINT_URL".into(), url.clone());
            vars.insert("AWS_ACCESS_KEY_ID".into(), "sandbox".into());
            vars.insert("AWS_SECRET_ACCESS_KEY".into(), "sandbox".into());
            vars.insert("AWS_REGION".into(), desired.region.clone());
            vars.insert("ECS_CLUSTER".into(), desired.cluster.name.clone());
        }
        let ctx = StepContext {
            point_dir: self.dir.clone(),
            // `pb.yaml` has the parent "", which no process can start in: that is ".".
            workdir: self
                .loaded
                .path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
            project: self.loaded.env.root.clone(),
            vars,
            demo: options.sandbox,
            clock: clock.clone(),
            cancel: options.cancel.clone(),
            load: self.load_env(),
        };
        let start = clock.now();
        let prefix = self.prefix.clone();
        let say_step = |text: &str| (options.say)(&format!("{prefix}{text}"));
        self.record.steps = run_steps(&self.loaded.playbook.steps, &ctx, &say_step).await;
        (start, clock.now())
    }

    /// Where `load:` steps start their engines: the env's cluster and subnets, on Fargate.
    fn load_env(&self) -> LoadEnv<'a> {
        let (desired, spec) = (self.desired, &self.loaded.env.spec);
        LoadEnv {
            session: self.session,
            env: desired.env.clone(),
            region: desired.region.clone(),
            cluster: desired.cluster.name.clone(),
            subnets: desired.subnets.clone(),
            security_groups: desired.security_groups.clone(),
            tags: desired
                .tags
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            execution_role: spec.ecs.execution_role.as_ref().map(|r| r.value.clone()),
            task_role: spec.ecs.task_role.as_ref().map(|r| r.value.clone()),
            lock: self
                .options
                .lock_url
                .clone()
                .or_else(|| spec.lock.as_ref().map(|l| l.value.clone())),
            run_id: self.options.run_id.clone(),
            sandbox: self.options.sandbox,
            capacity: EngineCapacity::Fargate,
            detail: {
                let (detail, prefix) = (self.options.detail.clone(), self.prefix.clone());
                std::sync::Arc::new(move |text: &str| detail(&format!("{prefix}{text}")))
            },
        }
    }

    /// 3b. MSK operations that overlapped the workload window (ListClusterOperationsV2 per
    /// cluster): MSK upgrades a cluster past its version's end of support at any time,
    /// without notice, and patches it in its maintenance window, so a measurement can run
    /// into a rolling broker restart that envctl did not start. Each is said and recorded
    /// in `point.json` (`msk_operations`); a list that cannot be read is said, not fatal.
    async fn note_msk_operations(&mut self, (start, end): (f64, f64)) {
        let reads = self.session.reads();
        for (name, arn) in self.msk_clusters.clone() {
            let listed = reads
                .call(
                    &arn,
                    crate::exec::Operation::Kafka(
                        envctl_aws_model::operation::KafkaOp::ListClusterOperationsV2,
                    ),
                    || crate::aws::kafka::list_operations(&reads.clients.kafka, &arn),
                )
                .await;
            let operations = match listed {
                Ok(operations) => operations,
                Err(e) => {
                    self.say(&format!("MSK operations of {name} not read: {e}"));
                    continue;
                }
            };
            for o in operations
                .into_iter()
                .filter(|o| o.start.is_some_and(|s| s <= end) && o.end.is_none_or(|e| e >= start))
            {
                let span = match o.end {
                    Some(e) => format!("{} to {}", show_time(o.start), show_time(Some(e))),
                    None => format!("from {}, still running", show_time(o.start)),
                };
                self.say(&format!(
                    "note: MSK operation {} on {name} ({}, {span}) overlapped the workload window: the measurement may show it",
                    o.operation_type, o.state
                ));
                self.record
                    .msk_operations
                    .push(crate::results::MskOperationNote {
                        cluster: name.clone(),
                        operation_type: o.operation_type,
                        state: o.state,
                        started_at: o.start,
                        ended_at: o.end,
                    });
            }
        }
    }

    /// 4. Metrics of the window, once the padding after it has passed.
    async fn collect(&mut self, (start, end): (f64, f64)) -> Result<(), MatrixError> {
        let collect = &self.loaded.playbook.collect;
        let padding = collect.padding.0.as_secs_f64();
        let failed_at_once = self.record.steps.iter().any(super::steps::failed_at_once);
        if failed_at_once {
            self.say(
                "a step failed at once: the metrics are collected without waiting for the padding",
            );
        } else if !self.options.cancel.load(Ordering::SeqCst) {
            self.session.clock.sleep(collect.padding.0).await;
        }
        match metrics::collect(
            &self.session.clients,
            self.desired,
            collect,
            start - padding,
            end + padding,
        )
        .await
        {
            Ok(m) => {
                let path = self.dir.join("metrics.json");
                results::write_json(&path, &m).map_err(MatrixError::io(path))?;
                self.record.metrics_file = Some("metrics.json".into());
            }
            Err(e) => self.say(&format!("metrics not collected: {e}")),
        }
        Ok(())
    }

    /// The point's status from its steps, and the first failing step's reason.
    fn judge_steps(&self) -> (Status, Option<String>) {
        let steps = &self.record.steps;
        let status = if steps.iter().any(|s| s.status == Status::Interrupted) {
            Status::Interrupted
        } else if steps.iter().all(|s| s.status == Status::Passed)
            && steps.len() == count_steps(&self.loaded.playbook.steps)
        {
            Status::Passed
        } else {
            Status::Failed
        };
        let failure = match status {
            Status::Passed => None,
            _ => steps.iter().find(|s| s.status != Status::Passed).map(|s| {
                if let Some(failure) = &s.failure {
                    return format!("step {} failed: {failure}", s.name);
                }
                format!(
                    "step {} {}",
                    s.name,
                    if s.timed_out {
                        "timed out".to_string()
                    } else {
                        format!(
                            "exited with {}",
                            s.exit_code
                                .map(|c| c.to_string())
                                .unwrap_or_else(|| "no code".into())
                        )
                    }
                )
            }),
        };
        (status, failure)
    }

    /// 5. Writes `point.json` with the point's end.
    fn finish(mut self, status: Status, failure: Option<String>) -> Result<PointEnd, MatrixError> {
        // The workload ran when steps were recorded: a failure then is the workload's.
        let workload_failed = status == Status::Failed && !self.record.steps.is_empty();
        self.record.status = status.clone();
        self.record.failure = failure;
        let now = self.session.clock.now();
        self.record.finished_at = Some(now);
        let workload_s = (!self.record.steps.is_empty())
            .then_some(now - self.record.started_at - self.record.transition.actual_s);
        let path = self.dir.join("point.json");
        results::write_json(&path, &self.record).map_err(MatrixError::io(path))?;
        Ok(PointEnd {
            status,
            workload_failed,
            workload_s,
        })
    }
}

fn show_time(t: Option<f64>) -> String {
    t.map(crate::time::rfc3339).unwrap_or_else(|| "?".into())
}

/// Steps a point runs when all pass (a parallel group counts its members).
fn count_steps(steps: &[Step]) -> usize {
    steps
        .iter()
        .map(|s| match s {
            Step::Parallel(p) => p.parallel.len(),
            _ => 1,
        })
        .sum()
}
