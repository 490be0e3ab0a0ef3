//! Observe, plan and apply as library calls: what `plan`, `apply` and the matrix runner
//! share.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use crate::apply::{self, ApplyReport, Context, Deadlines, Polls, Silent};
use crate::aws::AwsError;
use crate::aws::observe::{ObserveCache, observe};
use crate::exec::RateLimits;
use crate::exec::journal::Journal;
use crate::exec::progress::Progress;
use crate::model::DesiredState;
use crate::model::live::LiveState;
use crate::plan::{DiffOptions, Estimates, Plan, diff};
use crate::plan::{PlanError, SavedPlan, desired_hash};
use crate::session::Session;

/// Why observing, planning or applying could not start.
#[derive(Debug, thiserror::Error)]
pub enum ConvergeError {
    /// Reading the live state failed.
    #[error(transparent)]
    Observe(#[from] AwsError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// `apply PLANFILE` for a spec that changed since the plan was saved.
    #[error(
        "the plan was made for a different spec: the env file or its templates changed since; plan again"
    )]
    SpecChanged,
    /// `apply PLANFILE` when the live state moved on (or the file was edited): the saved
    /// operations are not what a plan shows now.
    #[error(
        "the live state changed since the plan was saved (or the file was edited): the plan would differ now; plan again"
    )]
    LiveChanged,
}

/// A plan with what it was computed from.
pub struct Planned {
    pub live: LiveState,
    pub plan: Plan,
    pub cache: ObserveCache,
}

/// Reads the live state and diffs it against the desired state.
pub async fn plan(
    session: &Session,
    desired: &DesiredState,
    state_dir: &Path,
    options: &DiffOptions,
) -> Result<Planned, ConvergeError> {
    let cache_path = ObserveCache::path(state_dir, &desired.env);
    let mut cache = ObserveCache::load(&cache_path);
    let live = observe(&session.clients, session.clock.clone(), desired, &mut cache).await?;
    // Saving only speeds up the next plan: failing to write it is not an error.
    let _ = cache.save(&cache_path);
    let plan = diff(desired, &live, &Estimates::default(), options);
    plan.check()?;
    Ok(Planned { live, plan, cache })
}

/// Reads the live state and plans the deletion of everything the environment owns.
pub async fn plan_destroy(
    session: &Session,
    desired: &DesiredState,
    state_dir: &Path,
) -> Result<Planned, ConvergeError> {
    let cache_path = ObserveCache::path(state_dir, &desired.env);
    let mut cache = ObserveCache::load(&cache_path);
    let live = observe(&session.clients, session.clock.clone(), desired, &mut cache).await?;
    let mut known: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (arn, td) in &cache.task_definitions {
        known
            .entry(td.family.clone())
            .or_default()
            .insert(arn.clone());
    }
    let plan = crate::plan::destroy_plan(desired, &live, &known, &Estimates::default());
    plan.check()?;
    Ok(Planned { live, plan, cache })
}

/// `apply PLANFILE`: the saved plan's operations, run against a fresh observation after
/// checking that the spec is the one it was made for and that planning now gives the same
/// plan (so the live state the operations were computed from still holds).
pub async fn plan_saved(
    session: &Session,
    desired: &DesiredState,
    saved: SavedPlan,
    state_dir: &Path,
) -> Result<Planned, ConvergeError> {
    if saved.desired_hash != desired_hash(desired) {
        return Err(ConvergeError::SpecChanged);
    }
    saved.plan.check()?;
    let fresh = plan(
        session,
        desired,
        state_dir,
        &DiffOptions { adopt: saved.adopt },
    )
    .await?;
    // Recomputed, not read: the operations that run are the ones compared.
    if fresh.plan.fingerprint != saved.plan.computed_fingerprint() {
        return Err(ConvergeError::LiveChanged);
    }
    Ok(Planned {
        plan: saved.plan,
        ..fresh
    })
}

pub struct ApplyOptions {
    pub run_id: String,
    pub state_dir: PathBuf,
    pub events: Arc<dyn Progress>,
    pub journal: Option<Arc<Journal>>,
    pub cancel: Arc<AtomicBool>,
    pub deadlines: Deadlines,
    pub polls: Polls,
}

impl ApplyOptions {
    pub fn new(run_id: impl Into<String>, state_dir: impl Into<PathBuf>) -> Self {
        ApplyOptions {
            run_id: run_id.into(),
            state_dir: state_dir.into(),
            events: Arc::new(Silent),
            journal: None,
            cancel: Arc::new(AtomicBool::new(false)),
            deadlines: Deadlines::default(),
            polls: Polls::default(),
        }
    }
}

/// Executes a plan's changes.
pub async fn apply(
    session: &Session,
    desired: &DesiredState,
    planned: Planned,
    options: &ApplyOptions,
) -> Result<ApplyReport, PlanError> {
    let outputs = planned.live.outputs(desired);
    let ctx = Arc::new(Context {
        clients: session.clients.clone(),
        clock: session.clock.clone(),
        limits: RateLimits::ecs(session.clock.clone()),
        events: options.events.clone(),
        journal: options.journal.clone(),
        deadlines: options.deadlines.clone(),
        run_id: options.run_id.clone(),
        desired: desired.clone(),
        live: planned.live,
        cancel: options.cancel.clone(),
        outputs: Mutex::new(outputs),
        cache: Mutex::new(planned.cache),
        kafka_configurations: Mutex::new(Default::default()),
        mutating_calls: AtomicU64::new(0),
        started_at: session.clock.now(),
        poll: options.polls.clone(),
    });
    let report = apply::execute(&planned.plan, ctx.clone()).await?;
    if let Ok(cache) = ctx.cache.lock() {
        let _ = cache.save(&ObserveCache::path(&options.state_dir, &desired.env));
    }
    Ok(report)
}
