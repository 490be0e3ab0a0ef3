//! Observe, plan and apply as library calls: what `plan`, `apply` and the matrix runner
//! share.
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::apply::{self, ApplyReport, Context, Deadlines, Polls, Silent};
use crate::aws::AwsError;
use crate::aws::observe::{ObserveCache, observe};
use crate::exec::journal::Journal;
use crate::exec::progress::Progress;
use crate::exec::{Cancel, InterruptibleClock, RateLimits};
use crate::model::DesiredState;
use crate::model::live::LiveState;
use crate::plan::{DiffOptions, Estimates, Plan, diff};
use crate::session::Session;

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
) -> Result<Planned, AwsError> {
    let cache_path = ObserveCache::path(state_dir, &desired.env);
    let mut cache = ObserveCache::load(&cache_path);
    let live = observe(&session.clients, session.clock.clone(), desired, &mut cache).await?;
    // Saving only speeds up the next plan: failing to write it is not an error.
    let _ = cache.save(&cache_path);
    let plan = diff(desired, &live, &Estimates::default(), options);
    Ok(Planned { live, plan, cache })
}

/// Reads the live state and plans the deletion of everything the environment owns.
pub async fn plan_destroy(
    session: &Session,
    desired: &DesiredState,
    state_dir: &Path,
) -> Result<Planned, AwsError> {
    let cache_path = ObserveCache::path(state_dir, &desired.env);
    let mut cache = ObserveCache::load(&cache_path);
    let live = observe(&session.clients, session.clock.clone(), desired, &mut cache).await?;
    let registered = cache
        .task_definitions
        .values()
        .map(|td| td.family.clone())
        .collect();
    let plan = crate::plan::destroy_plan(desired, &live, &registered, &Estimates::default());
    Ok(Planned { live, plan, cache })
}

pub struct ApplyOptions {
    pub run_id: String,
    pub state_dir: PathBuf,
    pub events: Arc<dyn Progress>,
    pub journal: Option<Arc<Journal>>,
    /// Stops the run: nothing new starts, and waits wake at once.
    pub cancel: Cancel,
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
            cancel: Cancel::new(),
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
) -> ApplyReport {
    let outputs = planned.live.outputs(desired);
    let ctx = Arc::new(Context {
        clients: session.clients.clone(),
        // Waits and backoffs sleep on a clock that wakes on cancellation; the limiter keeps
        // the plain clock, so calls still made after an interruption stay paced.
        clock: InterruptibleClock::wrap(session.clock.clone(), options.cancel.clone()),
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
    let report = apply::execute(&planned.plan, ctx.clone()).await;
    if let Ok(cache) = ctx.cache.lock() {
        let _ = cache.save(&ObserveCache::path(&options.state_dir, &desired.env));
    }
    report
}
