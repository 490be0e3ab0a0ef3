//! Running a matrix: for each point in envctl's order, converge the environment to the
//! point's configuration, read back what runs, run the workload, collect the metrics of the
//! point's window, and write it all under `results/<run-id>/`. Teardown follows the policy
//! on success, failure, timeout, the global deadline and interruption.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context as _;

use super::expand::{Point, expand};
use super::order::{Costs, Method, Ordering as PointOrder, order};
use super::restore::{self, BASELINE_FILE, Baseline, RestoreError};
use super::steps::{StepContext, run_steps};
use super::{effective, metrics};
use crate::compile::compile_env_with;
use crate::converge::{self, ApplyOptions};
use crate::exec::private_file;
use crate::exec::progress::Progress;
use crate::model::DesiredState;
use crate::plan::{DiffOptions, Estimates};
use crate::results::{
    self, AxisRecord, FileRef, OrderEstimates, PointRecord, PointSummary, RampRecord,
    RestoreRecord, RunRecord, Status, TeardownRecord, TransitionRecord,
};
use crate::session::Session;
use crate::spec::Loader;
use crate::spec::playbook::{LoadedPlaybook, TeardownPolicy};

/// The expanded, ordered matrix with its estimates: what `matrix plan` prints and `matrix
/// run` executes.
pub struct MatrixPlan {
    pub points: Vec<Point>,
    pub ordering: PointOrder,
    pub costs: Costs,
    /// Desired state per configuration key.
    pub configs: BTreeMap<String, DesiredState>,
}

/// Expands, compiles every configuration and orders the points. `only` keeps the points
/// with these (axis, variant) pairs.
pub fn plan_matrix(
    loaded: &LoadedPlaybook,
    only: &[(String, String)],
) -> anyhow::Result<MatrixPlan> {
    let mut points = expand(&loaded.playbook);
    points.retain(|p| only.iter().all(|(a, v)| p.axis(a).is_none_or(|x| x == v)));
    if points.is_empty() {
        anyhow::bail!("no point of the matrix matches the --only filters");
    }
    let mut configs: Vec<(String, DesiredState)> = Vec::new();
    for p in &points {
        if configs.iter().any(|(k, _)| k == &p.config_key) {
            continue;
        }
        let mut loader = Loader::with_root(Some(loaded.env.root.clone()));
        let Some(compiled) = compile_env_with(&mut loader, &loaded.env.path, &p.sets) else {
            anyhow::bail!(
                "the configuration of {} does not compile:\n{}",
                p.id,
                loader.diagnostics.render(&loader.sources)
            );
        };
        configs.push((p.config_key.clone(), compiled.desired));
    }
    let costs = Costs::estimate(&configs, &Estimates::default());
    let ramp = loaded.playbook.ramp.as_ref().map(|r| r.value.as_str());
    let seed = loaded
        .playbook
        .shuffle
        .then(|| super::order::hash(&loaded.playbook.name.value));
    let ordering = order(&points, ramp, &costs, seed);
    Ok(MatrixPlan {
        points,
        ordering,
        costs,
        configs: configs.into_iter().collect(),
    })
}

pub struct MatrixOptions {
    pub run_id: String,
    pub results_root: PathBuf,
    pub state_dir: PathBuf,
    /// Overrides the playbook's teardown policy.
    pub teardown: Option<TeardownPolicy>,
    pub sandbox: bool,
    /// The sandbox endpoint, exported to workload commands as AWS_ENDPOINT_URL.
    pub endpoint_url: Option<String>,
    pub resume: bool,
    /// Put the environment back to what it ran before the first point (`--restore`).
    pub restore: RestoreMode,
    pub cancel: crate::exec::Cancel,
    pub progress: Arc<dyn Progress>,
    /// Where to say what happens (the CLI prints it; tests discard it).
    pub say: Arc<dyn Fn(&str) + Send + Sync>,
}

/// Whether a run records a baseline and converges back to it at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RestoreMode {
    /// Restore when the environment carries envctl's adopted marker (it existed before
    /// envctl took it over), and tear down otherwise.
    #[default]
    Auto,
    /// `--restore`.
    On,
    /// `--no-restore`: the teardown policy applies, even to an adopted environment.
    Off,
}

fn file_ref(path: &Path, name: &str) -> FileRef {
    let hash = std::fs::read(path)
        .map(|b| crate::results::content_hash(&b))
        .unwrap_or_default();
    FileRef {
        name: name.to_string(),
        path: path.display().to_string(),
        content_hash: hash,
    }
}

fn ramp_group(p: &Point, ramp: &str) -> String {
    p.axes
        .iter()
        .filter(|(a, _)| a != ramp)
        .map(|(a, v)| format!("{a}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs the matrix; returns the run record (also written to `run.json`).
pub async fn run(
    loaded: &LoadedPlaybook,
    plan: &MatrixPlan,
    session: &Session,
    options: &MatrixOptions,
) -> anyhow::Result<RunRecord> {
    let playbook = &loaded.playbook;
    let run_dir = options.results_root.join(&options.run_id);
    let ordered: Vec<&Point> = plan
        .ordering
        .order
        .iter()
        .map(|&i| &plan.points[i])
        .collect();
    // Before anything is written or changed: a refused restore run leaves no trace.
    let baseline = prepare_restore(loaded, plan, session, options, &ordered, &run_dir).await?;
    private_file::create_dir_all(&run_dir)
        .with_context(|| format!("creating {}", run_dir.display()))?;
    if let Some(b) = &baseline {
        results::write_json(&run_dir.join(BASELINE_FILE), b)?;
    }
    let run_file = run_dir.join("run.json");
    let previous: Option<RunRecord> = if options.resume {
        Some(serde_json::from_slice(
            &std::fs::read(&run_file)
                .with_context(|| format!("reading {} to resume", run_file.display()))?,
        )?)
    } else {
        None
    };
    // A restore run keeps the environment: it is put back, not deleted.
    let policy = if baseline.is_some() {
        TeardownPolicy::Never
    } else {
        options.teardown.unwrap_or(playbook.teardown.value)
    };
    let clock = session.clock.clone();
    let mut record = RunRecord {
        schema_version: results::RESULTS_SCHEMA_VERSION,
        run_id: options.run_id.clone(),
        envctl_version: env!("CARGO_PKG_VERSION").into(),
        playbook: file_ref(&loaded.path, &playbook.name.value),
        env: file_ref(&loaded.env.path, &loaded.env.spec.env.value),
        target: if options.sandbox {
            "sandbox".into()
        } else {
            "aws".into()
        },
        synthetic_metrics: options.sandbox,
        title: playbook.report.title.clone(),
        description: playbook.description.clone(),
        axes: playbook
            .matrix
            .iter()
            .map(|a| AxisRecord {
                name: a.name.value.clone(),
                variants: a.variants.iter().map(|v| v.name.value.clone()).collect(),
            })
            .collect(),
        baseline: playbook
            .report
            .baseline
            .0
            .iter()
            .map(|(a, v)| (a.value.clone(), v.value.clone()))
            .collect(),
        order: ordered.iter().map(|p| p.id.clone()).collect(),
        estimates: OrderEstimates {
            envctl_order_s: plan.ordering.envctl_s,
            declared_order_s: plan.ordering.declared_s,
            rebuild_per_point_s: plan.ordering.rebuild_s,
        },
        started_at: clock.now(),
        finished_at: None,
        status: Status::Running,
        points: ordered
            .iter()
            .map(|p| {
                let before = previous
                    .as_ref()
                    .and_then(|r| r.points.iter().find(|x| x.id == p.id));
                PointSummary {
                    id: p.id.clone(),
                    axes: p.axes.iter().cloned().collect(),
                    repeat: p.repeat,
                    status: before
                        .map(|b| {
                            if b.status == Status::Passed {
                                Status::Passed
                            } else {
                                Status::Pending
                            }
                        })
                        .unwrap_or(Status::Pending),
                    started_at: before.and_then(|b| b.started_at),
                    finished_at: before.and_then(|b| b.finished_at),
                    dir: format!("points/{}", p.dir),
                }
            })
            .collect(),
        ramp: None,
        restore: None,
        teardown: TeardownRecord {
            policy: policy.as_str().into(),
            performed: false,
            status: None,
            detail: None,
        },
    };
    results::write_json(&run_file, &record)?;
    let deadline = playbook
        .deadline
        .as_ref()
        .map(|d| clock.now() + d.value.0.as_secs_f64());
    let ramp = playbook.ramp.as_ref().map(|r| r.value.clone());
    let mut failed_ramps: Vec<String> = Vec::new();
    let mut ramp_ends: Vec<usize> = Vec::new();
    let total = ordered.len();
    let mut stop_reason: Option<String> = None;
    for (i, point) in ordered.iter().enumerate() {
        if record.points[i].status == Status::Passed {
            (options.say)(&format!(
                "[{}/{total}] {}: passed in an earlier run, skipped",
                i + 1,
                point.id
            ));
            continue;
        }
        if let Some(reason) = &stop_reason {
            record.points[i].status = Status::Skipped;
            (options.say)(&format!(
                "[{}/{total}] {}: skipped ({reason})",
                i + 1,
                point.id
            ));
            continue;
        }
        if let Some(r) = &ramp
            && failed_ramps.contains(&ramp_group(point, r))
        {
            record.points[i].status = Status::Skipped;
            (options.say)(&format!(
                "[{}/{total}] {}: skipped (the ramp failed at a lower {r})",
                i + 1,
                point.id
            ));
            continue;
        }
        if options.cancel.load(Ordering::SeqCst) {
            stop_reason = Some("interrupted".into());
            record.points[i].status = Status::Interrupted;
            continue;
        }
        if deadline.is_some_and(|d| clock.now() >= d) {
            stop_reason = Some("the playbook's deadline passed".into());
            record.points[i].status = Status::Skipped;
            continue;
        }
        let done: Vec<f64> = record
            .points
            .iter()
            .filter_map(|p| p.started_at.zip(p.finished_at))
            .map(|(a, b)| b - a)
            .collect();
        let per_point = if done.is_empty() {
            0.0
        } else {
            done.iter().sum::<f64>() / done.len() as f64
        };
        let eta = per_point * (total - i) as f64;
        (options.say)(&format!(
            "[{}/{total}] {}: starting ({} points done{})",
            i + 1,
            point.id,
            done.len(),
            if eta > 0.0 {
                format!(", about {} left", crate::plan::estimate::human(eta))
            } else {
                String::new()
            }
        ));
        record.points[i].status = Status::Running;
        record.points[i].started_at = Some(clock.now());
        results::write_json(&run_file, &record)?;
        let PointEnd {
            status,
            workload_failed,
        } = match run_point(loaded, plan, session, options, point, i, total, &run_dir).await {
            Ok(end) => end,
            // The run stops, but still ends as the policy says (teardown or restore): an
            // error in one point must not leave the environment in that point's state.
            Err(e) => {
                (options.say)(&format!("[{}/{total}] {}: FAILED: {e:#}", i + 1, point.id));
                stop_reason = Some(format!("{} failed: {e:#}", point.id));
                PointEnd {
                    status: Status::Failed,
                    workload_failed: false,
                }
            }
        };
        if workload_failed && ramp.is_some() {
            ramp_ends.push(i);
        }
        record.points[i].status = status.clone();
        record.points[i].finished_at = Some(clock.now());
        results::write_json(&run_file, &record)?;
        match status {
            Status::Passed => {}
            Status::Interrupted => stop_reason = Some("interrupted".into()),
            _ => {
                if let Some(r) = &ramp {
                    failed_ramps.push(ramp_group(point, r));
                }
                if playbook.fail_fast {
                    stop_reason = Some(format!("fail_fast after {}", point.id));
                }
            }
        }
    }
    if let Some(r) = &ramp {
        let mut limits: BTreeMap<String, Option<String>> = BTreeMap::new();
        let variants: Vec<String> = playbook
            .matrix
            .iter()
            .find(|a| &a.name.value == r)
            .map(|a| a.variants.iter().map(|v| v.name.value.clone()).collect())
            .unwrap_or_default();
        for (i, p) in ordered.iter().enumerate() {
            let group = ramp_group(p, r);
            let entry = limits.entry(group).or_insert(None);
            if record.points[i].status == Status::Passed
                && let Some(v) = p.axis(r)
            {
                let better = entry.as_ref().is_none_or(|cur| {
                    variants.iter().position(|x| x == v) > variants.iter().position(|x| x == cur)
                });
                if better {
                    *entry = Some(v.to_string());
                }
            }
        }
        record.ramp = Some(RampRecord {
            axis: r.clone(),
            limits,
        });
    }
    let interrupted = options.cancel.load(Ordering::SeqCst);
    let all_passed = record.points.iter().enumerate().all(|(i, p)| {
        p.status == Status::Passed
            || (ramp.is_some() && p.status == Status::Skipped)
            || ramp_ends.contains(&i)
    });
    // On a ramp, the workload failing at the top of the ramp is the finding (the limit),
    // not a failed run; any other failure is.
    let any_failed = record.points.iter().enumerate().any(|(i, p)| {
        matches!(p.status, Status::Failed | Status::Interrupted) && !ramp_ends.contains(&i)
    });
    record.status = if interrupted {
        Status::Interrupted
    } else if any_failed || !all_passed {
        Status::Failed
    } else {
        Status::Passed
    };
    // A lost lock means another run holds the environment now: never destroy it under them.
    let destroy = !options.cancel.lock_lost()
        && match policy {
            TeardownPolicy::Always => true,
            TeardownPolicy::Never => false,
            TeardownPolicy::OnSuccess | TeardownPolicy::KeepOnFailure => {
                record.status == Status::Passed
            }
        };
    if let Some(baseline) = &baseline {
        (options.say)(&format!(
            "restore: putting {} back to {BASELINE_FILE}",
            loaded.env.spec.env.value
        ));
        let desired = plan.configs.values().next().context("no configuration")?;
        let restored = restore_baseline(session, desired, baseline, options).await;
        (options.say)(&format!(
            "restore: {}",
            restored.detail.as_deref().unwrap_or_default()
        ));
        record.teardown.detail = Some(format!(
            "kept: --restore put it back to {BASELINE_FILE} (see `restore`)"
        ));
        record.restore = Some(restored);
    } else if destroy {
        (options.say)(&format!(
            "teardown ({}): destroying {}",
            policy.as_str(),
            loaded.env.spec.env.value
        ));
        let desired = plan.configs.values().next().context("no configuration")?;
        let outcome = teardown(session, desired, options).await;
        record.teardown.performed = true;
        record.teardown.status = Some(if outcome.is_ok() {
            Status::Passed
        } else {
            Status::Failed
        });
        record.teardown.detail = Some(match outcome {
            Ok(detail) | Err(detail) => detail,
        });
    } else {
        record.teardown.detail = Some(format!(
            "kept ({}): `envctl destroy {}` removes it",
            if options.cancel.lock_lost() {
                "the lock was lost to another run"
            } else {
                policy.as_str()
            },
            loaded.env.path.display()
        ));
    }
    record.finished_at = Some(clock.now());
    results::write_json(&run_file, &record)?;
    Ok(record)
}

/// Decides whether this run restores, checks that it may, and records (or, resuming, reads)
/// the baseline: before the first point, before any change.
async fn prepare_restore(
    loaded: &LoadedPlaybook,
    plan: &MatrixPlan,
    session: &Session,
    options: &MatrixOptions,
    ordered: &[&Point],
    run_dir: &Path,
) -> anyhow::Result<Option<Baseline>> {
    if options.restore == RestoreMode::Off {
        return Ok(None);
    }
    let points: Vec<(&Point, &DesiredState)> = ordered
        .iter()
        .filter_map(|p| plan.configs.get(&p.config_key).map(|d| (*p, d)))
        .collect();
    let Some((_, first)) = points.first() else {
        return Ok(None);
    };
    let live = converge::observe_live(session, first, &options.state_dir).await?;
    let adopted = restore::adopted(&live);
    if options.restore == RestoreMode::Auto && !adopted {
        return Ok(None);
    }
    let why = if options.restore == RestoreMode::Auto {
        " (the default for an environment envctl adopted; --no-restore opts out)"
    } else {
        ""
    };
    if options.teardown.is_some() {
        return Err(RestoreError::TeardownFlagExclusive {
            adopted: why.into(),
        }
        .into());
    }
    let teardown = &loaded.playbook.teardown;
    if !teardown.span.is_builtin() {
        return Err(RestoreError::TeardownExclusive {
            location: format!(
                "{}:{}:{}",
                loaded.path.display(),
                teardown.span.line,
                teardown.span.column
            ),
            policy: format!("{}{why}", teardown.value.as_str()),
        }
        .into());
    }
    let file = run_dir.join(BASELINE_FILE);
    if options.resume && file.is_file() {
        // The environment may be in an interrupted point's state now: the baseline is the
        // one the first run recorded (its checks passed then, for this same playbook).
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let baseline: Baseline = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not a baseline", file.display()))?;
        return Ok(Some(baseline));
    }
    let baseline = restore::capture(&points, &live, session.clock.now())?;
    restore::refuse_irreversible(&points, &live, &baseline)?;
    (options.say)(&format!(
        "restore: baseline of {} services, {} MSK clusters, {} DB instances recorded",
        baseline.services.len(),
        baseline.kafka.len(),
        baseline.db_instances.len()
    ));
    Ok(Some(baseline))
}

/// Converges back to the baseline with a plan of operations that reuse what existed, run by
/// the one executor, then observes and compares. Like teardown, it ignores the run's
/// interruption flag: an interrupted run must still put the environment back.
async fn restore_baseline(
    session: &Session,
    desired: &DesiredState,
    baseline: &Baseline,
    options: &MatrixOptions,
) -> RestoreRecord {
    let mut record = RestoreRecord {
        baseline_file: BASELINE_FILE.into(),
        ..RestoreRecord::default()
    };
    let failed = |mut record: RestoreRecord, detail: String| {
        record.status = Some(Status::Failed);
        record.detail = Some(detail);
        record
    };
    if options.cancel.lock_lost() {
        return failed(
            record,
            "not restored: the lock was lost to another run, which holds the environment now"
                .into(),
        );
    }
    let live = match converge::observe_live(session, desired, &options.state_dir).await {
        Ok(live) => live,
        Err(e) => return failed(record, format!("not restored: observing failed: {e}")),
    };
    let plan = restore::restore_plan(baseline, &live, &crate::plan::Estimates::default());
    record.estimated_s = plan.estimate_secs;
    let cache = crate::aws::observe::ObserveCache::load(&crate::aws::observe::ObserveCache::path(
        &options.state_dir,
        &desired.env,
    ));
    let planned = converge::Planned { live, plan, cache };
    let mut apply = ApplyOptions::new(
        format!("{}-restore", options.run_id),
        options.state_dir.clone(),
    );
    apply.events = options.progress.clone();
    let report = match converge::apply(session, desired, planned, &apply).await {
        Ok(report) => report,
        Err(e) => return failed(record, format!("not restored: {e}")),
    };
    record.performed = true;
    record.actual_s = report.elapsed_secs;
    record.mutating_calls = report.mutating_calls;
    let failures: Vec<String> = report
        .failures()
        .map(|f| format!("{}: {}", f.resource, f.outcome.detail()))
        .collect();
    let after = match converge::observe_live(session, desired, &options.state_dir).await {
        Ok(live) => live,
        Err(e) => return failed(record, format!("restored, but not verified: {e}")),
    };
    record.verification = restore::verify(baseline, &after);
    let differing: Vec<String> = record
        .verification
        .iter()
        .filter(|v| !v.ok)
        .map(|v| format!("{} ({})", v.resource, v.differences.join("; ")))
        .collect();
    if failures.is_empty() && differing.is_empty() {
        record.status = Some(Status::Passed);
        record.detail = Some(format!(
            "{} resources equal to the baseline after {} changes in {}",
            record.verification.len(),
            report
                .results
                .iter()
                .filter(|r| matches!(r.outcome, crate::apply::Outcome::Applied { .. }))
                .count(),
            crate::plan::estimate::human(record.actual_s)
        ));
        record
    } else {
        let mut text = Vec::new();
        if !failures.is_empty() {
            text.push(format!("failed: {}", failures.join("; ")));
        }
        if !differing.is_empty() {
            text.push(format!(
                "differs from the baseline: {}",
                differing.join(", ")
            ));
        }
        failed(record, text.join("; "))
    }
}

/// Destroys everything the env owns, ignoring the run's interruption flag (a cancelled CI
/// job must still clean up).
async fn teardown(
    session: &Session,
    desired: &DesiredState,
    options: &MatrixOptions,
) -> Result<String, String> {
    let planned = converge::plan_destroy(session, desired, &options.state_dir)
        .await
        .map_err(|e| e.to_string())?;
    let mut apply = ApplyOptions::new(
        format!("{}-teardown", options.run_id),
        options.state_dir.clone(),
    );
    apply.events = options.progress.clone();
    let report = converge::apply(session, desired, planned, &apply)
        .await
        .map_err(|e| e.to_string())?;
    let detail = format!(
        "{} resources deleted in {:.0}s",
        report.results.len(),
        report.elapsed_secs
    );
    if report.succeeded() {
        Ok(detail)
    } else {
        Err(format!(
            "{detail}; failures: {}",
            report
                .failures()
                .map(|f| format!("{}: {}", f.resource, f.outcome.detail()))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_point(
    loaded: &LoadedPlaybook,
    plan: &MatrixPlan,
    session: &Session,
    options: &MatrixOptions,
    point: &Point,
    index: usize,
    total: usize,
    run_dir: &Path,
) -> anyhow::Result<PointEnd> {
    let clock = session.clock.clone();
    let say = |text: &str| (options.say)(&format!("[{}/{total}] {}: {text}", index + 1, point.id));
    let point_dir = run_dir.join("points").join(&point.dir);
    private_file::create_dir_all(&point_dir)?;
    let started_at = clock.now();
    let desired = plan
        .configs
        .get(&point.config_key)
        .context("a point without a configuration")?;
    let mut record = PointRecord {
        id: point.id.clone(),
        axes: point.axes.iter().cloned().collect(),
        repeat: point.repeat,
        vars: point.vars.clone(),
        status: Status::Running,
        started_at,
        finished_at: None,
        transition: TransitionRecord::default(),
        steps: Vec::new(),
        effective_file: "effective.json".into(),
        metrics_file: None,
        failure: None,
    };
    // 1. Switch the environment.
    let planned = converge::plan(
        session,
        desired,
        &options.state_dir,
        &DiffOptions::default(),
    )
    .await?;
    record.transition.changes = planned
        .plan
        .changes()
        .map(|a| format!("{}: {}", a.id, a.kind.verb()))
        .collect();
    record.transition.estimated_s = planned.plan.estimate_secs;
    say(&format!(
        "switching: {} (est {})",
        super::order::summarize(&planned.plan),
        crate::plan::estimate::human(planned.plan.estimate_secs)
    ));
    let mut apply = ApplyOptions::new(options.run_id.clone(), options.state_dir.clone());
    apply.events = options.progress.clone();
    apply.cancel = options.cancel.clone();
    let report = converge::apply(session, desired, planned, &apply).await?;
    record.transition.actual_s = report.elapsed_secs;
    record.transition.mutating_calls = report.mutating_calls;
    let finish = |mut record: PointRecord,
                  status: Status,
                  failure: Option<String>|
     -> anyhow::Result<PointEnd> {
        // The workload ran when steps were recorded: a failure then is the workload's.
        let workload_failed = status == Status::Failed && !record.steps.is_empty();
        record.status = status.clone();
        record.failure = failure;
        record.finished_at = Some(clock.now());
        results::write_json(&point_dir.join("point.json"), &record)?;
        Ok(PointEnd {
            status,
            workload_failed,
        })
    };
    if report.interrupted {
        return finish(
            record,
            Status::Interrupted,
            Some("interrupted while switching the environment".into()),
        );
    }
    if !report.succeeded() {
        let why: Vec<String> = report
            .failures()
            .map(|f| format!("{}: {}", f.resource, f.outcome.detail()))
            .collect();
        say("the environment did not converge");
        return finish(
            record,
            Status::Failed,
            Some(format!(
                "the environment did not converge: {}",
                why.join("; ")
            )),
        );
    }
    // 2. What actually runs, read back from AWS.
    let live = converge::observe_live(session, desired, &options.state_dir).await?;
    results::write_json(
        &point_dir.join("effective.json"),
        &effective::effective(desired, &live),
    )?;
    // 3. The workload.
    let mut vars: BTreeMap<String, String> = point.vars.clone();
    vars.insert(
        "RESULTS_DIR".into(),
        std::fs::canonicalize(&point_dir)
            .unwrap_or(point_dir.clone())
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
        point_dir: point_dir.clone(),
        // `pb.yaml` has the parent "", which no process can start in: that is ".".
        workdir: loaded
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
        project: loaded.env.root.clone(),
        vars,
        demo: options.sandbox,
        clock: clock.clone(),
        cancel: options.cancel.clone(),
    };
    let steps_start = clock.now();
    let say_step = |text: &str| say(text);
    record.steps = run_steps(&loaded.playbook.steps, &ctx, &say_step).await;
    let steps_end = clock.now();
    // 4. Metrics of the window, once the padding after it has passed.
    let collect = &loaded.playbook.collect;
    let padding = collect.padding.0.as_secs_f64();
    if !options.cancel.load(Ordering::SeqCst) {
        clock.sleep(collect.padding.0).await;
    }
    match metrics::collect(
        &session.clients,
        desired,
        collect,
        steps_start - padding,
        steps_end + padding,
    )
    .await
    {
        Ok(m) => {
            results::write_json(&point_dir.join("metrics.json"), &m)?;
            record.metrics_file = Some("metrics.json".into());
        }
        Err(e) => say(&format!("metrics not collected: {e}")),
    }
    let step_status = if record.steps.iter().any(|s| s.status == Status::Interrupted) {
        Status::Interrupted
    } else if record.steps.iter().all(|s| s.status == Status::Passed)
        && record.steps.len() == count_steps(&loaded.playbook.steps)
    {
        Status::Passed
    } else {
        Status::Failed
    };
    let failure = match step_status {
        Status::Passed => None,
        _ => record
            .steps
            .iter()
            .find(|s| s.status != Status::Passed)
            .map(|s| {
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
    say(match step_status {
        Status::Passed => "passed",
        Status::Interrupted => "interrupted",
        _ => "FAILED",
    });
    finish(record, step_status, failure)
}

/// How a point ended; `workload_failed` tells a failing step from an environment that did
/// not converge.
struct PointEnd {
    status: Status,
    workload_failed: bool,
}

/// Steps a point runs when all pass (a parallel group counts its members).
fn count_steps(steps: &[crate::spec::playbook::Step]) -> usize {
    steps
        .iter()
        .map(|s| match s {
            crate::spec::playbook::Step::Parallel(p) => p.parallel.len(),
            _ => 1,
        })
        .sum()
}

impl MatrixPlan {
    /// The `matrix plan` text: points in order, transitions with estimates, and the three
    /// totals.
    pub fn render(&self, loaded: &LoadedPlaybook) -> String {
        use crate::plan::estimate::human;
        use std::fmt::Write;
        let mut out = String::new();
        let p = &loaded.playbook;
        let _ = writeln!(
            out,
            "Matrix {} over env {}: {} axes, {} points, {} environment configurations.",
            p.name.value,
            loaded.env.spec.env.value,
            p.matrix.len(),
            self.points.len(),
            self.configs.len()
        );
        let method = match &self.ordering.method {
            Method::Exact => format!("exact search over {} groups", self.ordering.groups),
            Method::Heuristic { lower_bound_s } => format!(
                "heuristic over {} groups; lower bound {}",
                self.ordering.groups,
                human(*lower_bound_s)
            ),
        };
        let _ = writeln!(out, "\nOrder ({method}):");
        let mut at = super::order::EMPTY;
        let index = |key: &str| self.costs.keys.iter().position(|k| k == key).unwrap_or(0);
        for (n, &i) in self.ordering.order.iter().enumerate() {
            let point = &self.points[i];
            let c = index(&point.config_key);
            let (secs, what) = if at == c {
                (0.0, "no change".to_string())
            } else {
                let secs = if at == super::order::EMPTY {
                    self.costs.from_empty[c]
                } else {
                    self.costs.between[at][c]
                };
                (
                    secs,
                    self.costs
                        .summaries
                        .get(&(at, c))
                        .cloned()
                        .unwrap_or_default(),
                )
            };
            let _ = writeln!(
                out,
                "  {:>2}. {:<48} {:>8}  {what}",
                n + 1,
                point.id,
                if secs > 0.0 {
                    format!("~{}", human(secs))
                } else {
                    "-".into()
                }
            );
            at = c;
        }
        let _ = writeln!(out, "\nEstimated time spent changing the environment:");
        let _ = writeln!(
            out,
            "  envctl order        {}",
            human(self.ordering.envctl_s)
        );
        let _ = writeln!(
            out,
            "  declared order      {}",
            human(self.ordering.declared_s)
        );
        let _ = writeln!(
            out,
            "  rebuild per point   {}",
            human(self.ordering.rebuild_s)
        );
        let saved = self.ordering.declared_s - self.ordering.envctl_s;
        if saved > 0.5 {
            let _ = writeln!(
                out,
                "  saving              {} against the declared order",
                human(saved)
            );
        }
        let _ = writeln!(
            out,
            "(plus the workload itself at each point; teardown: {})",
            p.teardown.value.as_str()
        );
        out
    }
}
