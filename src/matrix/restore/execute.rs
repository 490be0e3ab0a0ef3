//! The effectful half of `--restore`: deciding whether a run restores and recording the
//! baseline before the first point, and converging back to it (through the one executor)
//! and verifying at the end.
use std::collections::BTreeMap;
use std::path::Path;

use super::{BASELINE_FILE, Baseline, RestoreError};
use crate::converge::{self, ApplyOptions};
use crate::matrix::error::MatrixError;
use crate::matrix::expand::Point;
use crate::matrix::options::{MatrixOptions, RestoreMode};
use crate::model::DesiredState;
use crate::results::{RestoreRecord, Status};
use crate::session::Session;
use crate::spec::playbook::LoadedPlaybook;

/// Decides whether this run restores, checks that it may, and records (or, resuming, reads)
/// the baseline: before the first point, before any change.
pub async fn prepare(
    loaded: &LoadedPlaybook,
    configs: &BTreeMap<String, DesiredState>,
    session: &Session,
    options: &MatrixOptions,
    ordered: &[&Point],
    run_dir: &Path,
) -> Result<Option<Baseline>, MatrixError> {
    if options.restore == RestoreMode::Off {
        return Ok(None);
    }
    let points: Vec<(&Point, &DesiredState)> = ordered
        .iter()
        .filter_map(|p| configs.get(&p.config_key).map(|d| (*p, d)))
        .collect();
    let Some((_, first)) = points.first() else {
        return Ok(None);
    };
    let live = converge::observe_live(session, first, &options.state_dir).await?;
    let adopted = super::adopted(&live);
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
            policy: teardown.value.as_str().into(),
            why: why.into(),
        }
        .into());
    }
    let file = run_dir.join(BASELINE_FILE);
    if options.resume && file.is_file() {
        // The environment may be in an interrupted point's state now: the baseline is the
        // one the first run recorded (its checks passed then, for this same playbook).
        let bytes = std::fs::read(&file).map_err(MatrixError::io(&file))?;
        let baseline: Baseline =
            serde_json::from_slice(&bytes).map_err(|source| MatrixError::Json {
                path: file.clone(),
                source,
            })?;
        return Ok(Some(baseline));
    }
    let baseline = super::capture(&points, &live, session.clock.now())?;
    super::refuse_irreversible(&points, &live, &baseline)?;
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
pub async fn converge_back(
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
    let plan = super::restore_plan(baseline, &live, &crate::plan::Estimates::default());
    record.estimated_s = plan.estimate_secs;
    let cache = crate::account::observe::ObserveCache::load(
        &crate::account::observe::ObserveCache::path(&options.state_dir, &desired.env),
    );
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
    record.verification = super::verify(baseline, &after);
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
