//! Running a matrix: for each point in envctl's order, converge the environment to the
//! point's configuration, read back what runs, run the workload, collect the metrics of the
//! point's window, and write it all under `results/<run-id>/`. Teardown follows the policy
//! on success, failure, timeout, the global deadline and interruption.
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::error::MatrixError;
use super::expand::Point;
use super::options::MatrixOptions;
use super::plan::MatrixPlan;
use super::point::{PointEnd, PointRun};
use super::restore::{self, BASELINE_FILE};
use crate::converge::{self, ApplyOptions};
use crate::exec::private_file;
use crate::model::DesiredState;
use crate::results::{
    self, AxisRecord, FileRef, OrderEstimates, PointSummary, RampRecord, RestoreRecord, RunRecord,
    Status, TeardownRecord,
};
use crate::session::Session;
use crate::spec::playbook::{LoadedPlaybook, TeardownPolicy};

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
) -> Result<RunRecord, MatrixError> {
    let playbook = &loaded.playbook;
    let run_dir = options.results_root.join(&options.run_id);
    let ordered: Vec<&Point> = plan
        .ordering
        .order
        .iter()
        .map(|&i| &plan.points[i])
        .collect();
    // Before anything is written or changed: a refused restore run leaves no trace.
    let baseline =
        restore::execute::prepare(loaded, &plan.configs, session, options, &ordered, &run_dir)
            .await?;
    private_file::create_dir_all(&run_dir).map_err(MatrixError::io(&run_dir))?;
    if let Some(b) = &baseline {
        let path = run_dir.join(BASELINE_FILE);
        results::write_json(&path, b).map_err(MatrixError::io(path))?;
    }
    let run_file = run_dir.join("run.json");
    let previous: Option<RunRecord> = if options.resume {
        let bytes = std::fs::read(&run_file).map_err(MatrixError::io(&run_file))?;
        Some(
            serde_json::from_slice(&bytes).map_err(|source| MatrixError::Json {
                path: run_file.clone(),
                source,
            })?,
        )
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
        lock_lost: None,
        teardown: TeardownRecord {
            policy: policy.as_str().into(),
            performed: false,
            status: None,
            detail: None,
        },
    };
    results::write_json(&run_file, &record).map_err(MatrixError::io(&run_file))?;
    let deadline = playbook
        .deadline
        .as_ref()
        .map(|d| clock.now() + d.value.0.as_secs_f64());
    let ramp = playbook.ramp.as_ref().map(|r| r.value.clone());
    let mut failed_ramps: Vec<String> = Vec::new();
    let mut ramp_ends: Vec<usize> = Vec::new();
    let total = ordered.len();
    let mut stop_reason: Option<String> = None;
    // The workloads measured so far: what the time left expects of the points to come.
    let mut workloads: Vec<f64> = Vec::new();
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
        // Fencing: a lease broken since the last renewal must stop the run before this
        // point switches the environment, not after.
        if let Some(fence) = &options.fence {
            fence.confirm().await;
        }
        if options.cancel.load(Ordering::SeqCst) {
            stop_reason = Some(if options.cancel.lock_lost() {
                "the lock was lost to another run".into()
            } else {
                "interrupted".into()
            });
            record.points[i].status = Status::Interrupted;
            continue;
        }
        if deadline.is_some_and(|d| clock.now() >= d) {
            stop_reason = Some("the playbook's deadline passed".into());
            record.points[i].status = Status::Skipped;
            continue;
        }
        let done = record
            .points
            .iter()
            .filter(|p| p.started_at.zip(p.finished_at).is_some())
            .count();
        let left = super::eta::Left::of(
            plan,
            i,
            |p| record.points[p].status == Status::Pending,
            &workloads,
        );
        (options.say)(&format!(
            "[{}/{total}] {}: starting ({} done; {})",
            i + 1,
            point.id,
            crate::plan::estimate::plural(done, "point", "points"),
            left.render(clock.simulated())
        ));
        record.points[i].status = Status::Running;
        record.points[i].started_at = Some(clock.now());
        results::write_json(&run_file, &record).map_err(MatrixError::io(&run_file))?;
        let PointEnd {
            status,
            workload_failed,
            workload_s,
        } = match run_point(loaded, plan, session, options, point, (i, total), &run_dir).await {
            Ok(end) => end,
            // The run stops, but still ends as the policy says (teardown or restore): an
            // error in one point must not leave the environment in that point's state.
            Err(e) => {
                (options.say)(&format!("[{}/{total}] {}: FAILED: {e}", i + 1, point.id));
                stop_reason = Some(format!("{} failed: {e}", point.id));
                PointEnd {
                    status: Status::Failed,
                    workload_failed: false,
                    workload_s: None,
                }
            }
        };
        if workload_failed && ramp.is_some() {
            ramp_ends.push(i);
        }
        workloads.extend(workload_s);
        record.points[i].status = status.clone();
        record.points[i].finished_at = Some(clock.now());
        results::write_json(&run_file, &record).map_err(MatrixError::io(&run_file))?;
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
    // The last change (teardown or restore) is made only while the lease is still ours.
    if let Some(fence) = &options.fence {
        fence.confirm().await;
    }
    record.lock_lost = options.cancel.lock_lost_reason();
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
        let restored = match plan.configs.values().next() {
            Some(desired) => {
                restore::execute::converge_back(session, desired, baseline, options).await
            }
            None => RestoreRecord::default(),
        };
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
        // plan_matrix refuses a matrix without points, so a configuration exists.
        let outcome = match plan.configs.values().next() {
            Some(desired) => teardown(session, desired, options).await,
            None => Err("no configuration to tear down".into()),
        };
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
        record.teardown.detail = Some(match &record.lock_lost {
            Some(reason) => format!(
                "not torn down: the lock was lost ({reason}); whoever holds the environment now \
                 decides, `envctl destroy {}` removes it",
                loaded.env.path.display()
            ),
            None => format!(
                "kept ({}): `envctl destroy {}` removes it",
                policy.as_str(),
                loaded.env.path.display()
            ),
        });
    }
    record.finished_at = Some(clock.now());
    results::write_json(&run_file, &record).map_err(MatrixError::io(&run_file))?;
    Ok(record)
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
        "{} deleted in {}",
        crate::plan::estimate::plural(report.results.len(), "resource", "resources"),
        crate::exec::progress::took(session.clock.as_ref(), report.elapsed_secs)
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

/// Runs one point through its steps (see [`PointRun`]).
async fn run_point(
    loaded: &LoadedPlaybook,
    plan: &MatrixPlan,
    session: &Session,
    options: &MatrixOptions,
    point: &Point,
    position: (usize, usize),
    run_dir: &Path,
) -> Result<PointEnd, MatrixError> {
    PointRun::new(
        loaded,
        &plan.configs,
        session,
        options,
        point,
        position,
        run_dir,
    )?
    .run()
    .await
}
