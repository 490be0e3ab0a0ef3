//! Observe, plan and apply as library calls: what `plan`, `apply` and the matrix runner
//! share.
use envctl_aws_model::operation::{EcsOp, KafkaOp, RdsOp};
use envctl_aws_model::status::ServiceStatus;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::account::observe::{ObserveCache, observe};
use crate::apply::service_watch::ServiceWatch;
use crate::apply::{self, ApplyReport, Context, Deadlines, Polls, Silent};
use crate::aws::AwsError;
use crate::aws::{ecs, kafka, paced, rds};
use crate::exec::Operation;
use crate::exec::journal::Journal;
use crate::exec::progress::Progress;
use crate::exec::{Cancel, InterruptibleClock};
use crate::model::DesiredState;
use crate::model::live::LiveState;
use crate::model::live::Tags;
use crate::plan::gc::{ClusterInventory, Inventory, gc_plan};
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

/// Reads the live state of the environment (through the observe cache), without planning:
/// what the matrix records as a point's effective configuration.
pub async fn observe_live(
    session: &Session,
    desired: &DesiredState,
    state_dir: &Path,
) -> Result<LiveState, ConvergeError> {
    let cache_path = ObserveCache::path(state_dir, &desired.env);
    let mut cache = ObserveCache::load(&cache_path);
    let live = observe(&session.reads(), desired, &mut cache).await?;
    let _ = cache.save(&cache_path);
    Ok(live)
}

/// Reads the live state and diffs it against the desired state; a resource with one of the
/// environment's names that envctl does not own is an error ([`PlanError::Conflicts`]):
/// what `plan`, `apply` and the matrix use.
pub async fn plan(
    session: &Session,
    desired: &DesiredState,
    state_dir: &Path,
    options: &DiffOptions,
) -> Result<Planned, ConvergeError> {
    // Boxed: one more inline async layer overflows rustc's layout query depth in callers.
    let planned = Box::pin(plan_observed(session, desired, state_dir, options)).await?;
    planned.plan.refuse_conflicts()?;
    Ok(planned)
}

/// Reads the live state and diffs it, conflicts included in the plan rather than refused:
/// what `status` shows.
pub async fn plan_observed(
    session: &Session,
    desired: &DesiredState,
    state_dir: &Path,
    options: &DiffOptions,
) -> Result<Planned, ConvergeError> {
    let cache_path = ObserveCache::path(state_dir, &desired.env);
    let mut cache = ObserveCache::load(&cache_path);
    let live = observe(&session.reads(), desired, &mut cache).await?;
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
    let live = observe(&session.reads(), desired, &mut cache).await?;
    let mut known: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (arn, td) in &cache.task_definitions {
        known
            .entry(td.family.clone())
            .or_default()
            .insert(arn.clone());
    }
    // Revisions are deleted only when they carry this env's tags (every revision envctl
    // registers does): a family named `<env>-<service>` may hold someone else's.
    let mut candidates: BTreeSet<String> = known.values().flatten().cloned().collect();
    candidates.extend(live.services.values().map(|s| s.task_definition.clone()));
    let mut owned_revisions = BTreeSet::new();
    for arn in candidates.into_iter().filter(|a| !a.is_empty()) {
        let tags = paced::call(
            session.clock.as_ref(),
            session.limits.as_ref(),
            &arn,
            Operation::Ecs(EcsOp::DescribeTaskDefinition),
            || ecs::task_definition_tags(&session.clients.ecs, &arn),
        )
        .await?;
        if tags.is_some_and(|t| crate::model::live::owned_by(&t, &desired.env)) {
            owned_revisions.insert(arn);
        }
    }
    let plan = crate::plan::destroy_plan(
        desired,
        &live,
        &known,
        &owned_revisions,
        &Estimates::default(),
    );
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
    // Recomputed, not read: the operations that run are the ones compared. They run as
    // planned now: equal fingerprints mean equal operations, and the saved file holds the
    // requests with their secrets masked (`plan::op`), which must not be sent.
    if fresh.plan.fingerprint != saved.plan.computed_fingerprint() {
        return Err(ConvergeError::LiveChanged);
    }
    Ok(fresh)
}

/// Reads what the account and Region contain (every ECS cluster with its services, MSK
/// clusters, DB instances) through the session's limiter, and plans the deletion of what
/// `select` accepts by its tags.
pub async fn plan_gc(
    session: &Session,
    select: impl Fn(&Tags) -> bool,
) -> Result<Planned, ConvergeError> {
    let clients = &session.clients;
    let clock = session.clock.as_ref();
    let limits = session.limits.as_ref();
    let mut inventory = Inventory::default();
    let arns = paced::call(
        clock,
        limits,
        "*",
        Operation::Ecs(EcsOp::ListClusters),
        || ecs::list_clusters(&clients.ecs),
    )
    .await?;
    for arn in arns {
        let name = envctl_aws_model::arn::resource_name(&arn).to_string();
        let Some(cluster) = paced::call(
            clock,
            limits,
            &name,
            Operation::Ecs(EcsOp::DescribeClusters),
            || ecs::describe_cluster(&clients.ecs, &name),
        )
        .await?
        else {
            continue;
        };
        let names = paced::call(
            clock,
            limits,
            &name,
            Operation::Ecs(EcsOp::ListServices),
            || ecs::list_services(&clients.ecs, &name),
        )
        .await?;
        let mut services = Vec::new();
        for chunk in names.chunks(ecs::DESCRIBE_SERVICES_BATCH) {
            let described = paced::call(
                clock,
                limits,
                &name,
                Operation::Ecs(EcsOp::DescribeServices),
                || ecs::describe_services(&clients.ecs, &name, chunk),
            )
            .await?;
            services.extend(
                described
                    .into_iter()
                    .filter(|s| s.status != ServiceStatus::Inactive),
            );
        }
        // Its providers too: a Managed Instances one keeps the cluster until it is deleted
        // (DeleteCluster: ClusterContainsCapacityProviderException).
        let capacity_providers = paced::call(
            clock,
            limits,
            &name,
            Operation::Ecs(EcsOp::DescribeCapacityProviders),
            || ecs::cluster_capacity_providers(&clients.ecs, &name),
        )
        .await?;
        inventory.clusters.push(ClusterInventory {
            cluster,
            services,
            capacity_providers,
        });
    }
    inventory.kafka = paced::call(
        clock,
        limits,
        "kafka",
        Operation::Kafka(KafkaOp::ListClustersV2),
        || kafka::list_clusters(&clients.kafka),
    )
    .await?;
    inventory.dbs = paced::call(
        clock,
        limits,
        "rds",
        Operation::Rds(RdsOp::DescribeDBInstances),
        || rds::describe_instances(&clients.rds),
    )
    .await?;
    inventory.leftovers = crate::account::leftovers::read(&session.reads()).await?;
    let plan = gc_plan("gc", &inventory, select, &Estimates::default());
    plan.check()?;
    Ok(Planned {
        live: LiveState::default(),
        plan,
        cache: ObserveCache::default(),
    })
}

/// The desired state a gc run executes against: nothing (gc only deletes, by the names and
/// ARNs its operations carry).
pub fn gc_desired(region: &str) -> DesiredState {
    DesiredState {
        env: "gc".into(),
        copy: None,
        region: region.into(),
        tags: Default::default(),
        ttl_secs: 0,
        subnets: Vec::new(),
        security_groups: Vec::new(),
        cluster: crate::model::EcsCluster {
            name: String::new(),
            instance_type: String::new(),
            instances: 0,
            capacity: crate::model::ClusterCapacity::Instances,
        },
        services: Default::default(),
        kafka: Default::default(),
        db: None,
        log_retention_days: None,
        load_log_group: None,
    }
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
) -> Result<ApplyReport, PlanError> {
    let outputs = planned.live.outputs(desired);
    if let Some(journal) = &options.journal {
        // An AWS error text can quote a request value: the journal masks the env's secrets.
        if let Ok(requests) = serde_json::to_value(crate::model::requests::all(desired)) {
            journal.scrub(crate::redact::secret_values(&requests));
        }
    }
    let ctx = Arc::new(Context {
        clients: session.clients.clone(),
        // Waits and backoffs sleep on a clock that wakes on cancellation; the limiter keeps
        // the plain clock, so calls still made after an interruption stay paced.
        clock: InterruptibleClock::wrap(session.clock.clone(), options.cancel.clone()),
        limits: session.limits.clone(),
        events: options.events.clone(),
        journal: options.journal.clone(),
        deadlines: options.deadlines.clone(),
        run_id: options.run_id.clone(),
        owner: apply::Owner::of(desired),
        cancel: options.cancel.clone(),
        outputs: Mutex::new(outputs),
        cache: Mutex::new(planned.cache),
        kafka_configurations: Mutex::new(Default::default()),
        mutating_calls: AtomicU64::new(0),
        started_at: session.clock.now(),
        poll: options.polls.clone(),
        service_watch: ServiceWatch::new(options.polls.ecs_probe_gather),
    });
    let report = apply::execute(&planned.plan, ctx.clone()).await?;
    if let Ok(cache) = ctx.cache.lock() {
        let _ = cache.save(&ObserveCache::path(&options.state_dir, &desired.env));
    }
    Ok(report)
}
