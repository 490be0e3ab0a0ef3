//! What the AWS-facing commands share: loading an env with its diagnostics, choosing the
//! target (AWS or the sandbox), confirmation, the lock, the journal and interruption.
use envctl_aws_model::status::ClusterStatus;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::aws::Connection;
use crate::cli::{Overrides, TargetArgs};
use crate::compile::{Compiled, compile_env};
use crate::exec::journal::Journal;
use crate::exec::{Cancel, Console};
use crate::lock::{Fence, Hold, Holder, LockLocation, Releaser};
use crate::model::tag;
use crate::session::{ServedClock, Session};
use crate::spec::Loader;
use crate::spec::source::Sources;

/// Exit code of a run stopped by SIGINT/SIGTERM, as shells report it.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Compiles an env, printing its diagnostics (warnings too) to stderr.
pub fn load(env: &Path, overrides: &Overrides) -> Option<Compiled> {
    load_with_sources(env, overrides).map(|(compiled, _)| compiled)
}

/// [`load`], keeping the files read so later findings (preflight) can quote their lines.
pub fn load_with_sources(env: &Path, overrides: &Overrides) -> Option<(Compiled, Sources)> {
    let sets = &overrides.set;
    let mut loader =
        Loader::with_root(overrides.project.root.clone()).with_copy(overrides.copy.clone());
    let compiled = compile_env(&mut loader, env, sets);
    let diagnostics = std::mem::take(&mut loader.diagnostics).sorted();
    report_diagnostics(&diagnostics, &loader.sources, env);
    compiled.map(|c| (c, loader.sources))
}

/// Prints a file's errors in full, first, and counts its lint warnings in one line:
/// `validate` shows those (see `Diagnostics::render_errors_counting_warnings`).
pub fn report_diagnostics(diagnostics: &crate::spec::Diagnostics, sources: &Sources, file: &Path) {
    eprint!(
        "{}",
        diagnostics.render_errors_counting_warnings(sources, file)
    );
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The command's console (stderr, `--verbose`), installed for the code that has no handle
/// of its own (retries, load engines); made once per process.
pub fn console(target: &TargetArgs) -> Arc<Console> {
    if let Some(console) = crate::exec::console::installed() {
        return console;
    }
    let console = Arc::new(Console::stderr(target.verbose));
    crate::exec::console::install(console.clone());
    console
}

/// Connects to AWS or starts the embedded sandbox.
pub async fn session(target: &TargetArgs, env_region: &str) -> anyhow::Result<Session> {
    console(target);
    let region = target
        .region
        .clone()
        .unwrap_or_else(|| env_region.to_string());
    if target.sandbox {
        let dir = target.state_dir.join("sandbox");
        return Session::sandbox(dir, target.time_scale, &region).await;
    }
    let connection = Connection {
        region,
        profile: target.profile.clone(),
        endpoint_url: target.endpoint_url.clone(),
        sandbox: false,
        no_sdk_retries: false,
    };
    // The SDK reads AWS_ENDPOINT_URL itself; the sandbox's clock is asked for either way.
    let endpoint = target
        .endpoint_url
        .clone()
        .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok());
    if let Some(endpoint) = endpoint
        && let Some(clock) = ServedClock::probe(&endpoint).await
    {
        eprintln!(
            "note: {endpoint} is an envctl sandbox (time scale {}): waits and durations use its \
             simulated clock",
            clock.time_scale
        );
        return Ok(Session::served(&connection, &endpoint, clock).await);
    }
    Ok(Session::aws(&connection).await)
}

/// Asks on the terminal; without one, refuses unless `--yes` was given.
pub fn confirm(question: &str, yes: bool) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        bail!(
            "{} needs confirmation: run again with --yes (stdin is not a terminal)",
            question.trim()
        );
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// A run id: the env, the UTC time and the process id.
pub fn run_id(env: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let stamp: String = crate::time::rfc3339(now)
        .chars()
        .filter(|c| c.is_ascii_digit())
        .collect();
    format!("{env}-{stamp}-{}", std::process::id())
}

/// The environment's lock while a command runs: the hold on its lease (renewed, released
/// when dropped), the run's cancellation (SIGINT/SIGTERM, or the lease lost), and the stamp
/// on the ECS cluster.
pub struct RunLock {
    hold: Hold,
    pub cancel: Cancel,
    stamped: Option<String>,
    run_id: String,
}

/// Where a command's lock is taken: the env, its `lock:`, its cluster (stamped with the run)
/// and the run's id.
pub struct LockScope<'a> {
    pub env: &'a str,
    pub env_lock: Option<&'a str>,
    pub cluster: &'a str,
    pub run_id: &'a str,
}

/// Runs `body` holding the environment's lock, and gives the lock up when `body` ends,
/// whether it succeeded, failed or returned early with `?`: the commands never release it
/// by hand. A lock that cannot be taken fails fast, naming the holder, and `body` does not
/// run. A lease lost during the run turns the result into an error naming why.
pub async fn with_lock<T>(
    session: &Session,
    target: &TargetArgs,
    scope: LockScope<'_>,
    body: impl AsyncFnOnce(&RunLock) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let lock = lock(session, target, &scope).await?;
    let result = body(&lock).await;
    lock.release(session, result).await
}

/// Takes the environment's lock (fails fast, naming the holder), keeps it renewed, stamps
/// the env's ECS cluster with the run, and handles SIGINT/SIGTERM from now on.
async fn lock(
    session: &Session,
    target: &TargetArgs,
    scope: &LockScope<'_>,
) -> anyhow::Result<RunLock> {
    let location = LockLocation::choose(target.lock.as_deref(), scope.env_lock, &target.state_dir)
        .map_err(anyhow::Error::msg)?;
    let ttl = Duration::from_secs(target.lock_ttl.max(3));
    let store = lock_store(session, &location).await?;
    let cancel = Cancel::new();
    let hold = Hold::acquire(
        store.as_ref(),
        scope.env,
        &Holder::current(scope.run_id),
        ttl,
        cancel.clone(),
    )
    .await?;
    if let Some(old) = hold.took_over() {
        eprintln!(
            "note: took over a stale lock of {} (pid {}, run {}); the environment may be half-applied",
            old.owner, old.pid, old.run_id
        );
    }
    let owner = hold.lease().owner.clone();
    on_interrupt(cancel.clone(), Some(hold.releaser()));
    let value = format!("{} {owner}", scope.run_id);
    let stamped = stamp_cluster(session, scope.env, scope.cluster, &value).await;
    Ok(RunLock {
        hold,
        cancel,
        stamped,
        run_id: scope.run_id.to_string(),
    })
}

impl RunLock {
    /// What the run calls before each change it makes on its own schedule.
    pub fn fence(&self) -> Fence {
        self.hold.fence()
    }

    /// Removes the stamp and releases the lease. A lease lost during the run turns `result`
    /// into an error naming why: the run stopped because another one took the environment.
    async fn release<T>(self, session: &Session, result: anyhow::Result<T>) -> anyhow::Result<T> {
        if let Some(cluster) = &self.stamped {
            unstamp(session, cluster, &self.run_id).await;
        }
        let lost = self.hold.lost();
        let released = self.hold.release().await;
        if let Some(reason) = lost {
            bail!("{reason}: the run stopped");
        }
        if let Err(e) = released {
            eprintln!("warning: releasing the lock: {e}");
        }
        result
    }
}

/// Tags the env's cluster, when it exists and is the env's, with the run holding the lock
/// (`status` shows it); the cluster's name when it did. Best effort: the lock is the lease,
/// the tag only tells people.
async fn stamp_cluster(session: &Session, env: &str, cluster: &str, value: &str) -> Option<String> {
    let live = crate::aws::ecs::describe_cluster(&session.clients.ecs, cluster)
        .await
        .ok()
        .flatten()?;
    if live.status != ClusterStatus::Active || !crate::model::live::owned_by(&live.tags, env) {
        return None;
    }
    let tags = [(tag::LOCKED_BY.to_string(), value.to_string())].into();
    match crate::aws::ecs::tag_resource(&session.clients.ecs, &live.arn, &tags).await {
        Ok(()) => Some(live.name),
        Err(e) => {
            eprintln!("warning: could not stamp the cluster with this run: {e}");
            None
        }
    }
}

/// Removes the cluster's stamp if it still names `run_id` (a later run may have stamped it
/// since). Best effort, like the stamp.
pub async fn unstamp(session: &Session, cluster: &str, run_id: &str) {
    let Some(live) = crate::aws::ecs::describe_cluster(&session.clients.ecs, cluster)
        .await
        .ok()
        .flatten()
    else {
        return;
    };
    let ours = live
        .tags
        .get(tag::LOCKED_BY)
        .is_some_and(|v| v.split(' ').next() == Some(run_id));
    if ours
        && let Err(e) =
            crate::aws::ecs::untag_resource(&session.clients.ecs, &live.arn, &[tag::LOCKED_BY])
                .await
    {
        eprintln!("warning: could not remove this run's stamp from the cluster: {e}");
    }
}

pub fn journal(state_dir: &Path, env: &str) -> anyhow::Result<Arc<Journal>> {
    Ok(Arc::new(Journal::open(state_dir, env)?))
}

/// How long a second signal waits for the lease to be released before exiting anyway.
const RELEASE_ON_EXIT: Duration = Duration::from_secs(3);

/// On SIGINT or SIGTERM, cancels the run: nothing new is launched, calls in flight finish,
/// waits wake at once, the journal is written, and the command exits 130. A second signal
/// exits at once, after releasing the lease (within [`RELEASE_ON_EXIT`]).
fn on_interrupt(cancel: Cancel, releaser: Option<Releaser>) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        for round in 0..2 {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
            }
            if round == 0 {
                cancel.cancel();
                eprintln!("\ninterrupted: letting calls in flight finish (again to quit now)");
            } else {
                if let Some(releaser) = &releaser {
                    match tokio::time::timeout(RELEASE_ON_EXIT, releaser.release()).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => eprintln!("warning: releasing the lock: {e}"),
                        Err(_) => eprintln!(
                            "warning: the lock was not released in time; it ends at its expiry"
                        ),
                    }
                }
                std::process::exit(i32::from(EXIT_INTERRUPTED));
            }
        }
    });
}

/// A run without an env lock (`gc` works across the account): SIGINT/SIGTERM cancel it as
/// they cancel a locked run, with nothing to release.
pub fn cancel_on_interrupt() -> Cancel {
    let cancel = Cancel::new();
    on_interrupt(cancel.clone(), None);
    cancel
}

pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}

/// How a command runs a plan: its run id, what cancels it, how it reports, and how long its
/// waits may take: the env's `waits:`, unless `--wait-timeout` bounds every wait.
pub struct Run<'a> {
    pub id: &'a str,
    pub cancel: &'a Cancel,
    pub json: bool,
    pub wait_timeout: Option<Duration>,
    pub waits: &'a crate::spec::env::Waits,
}

/// Executes a plan with progress, the journal and interruption, prints the result table
/// (or JSON), and picks the exit code: 0 done, 1 failures, 130 interrupted.
pub async fn execute(
    session: &crate::session::Session,
    desired: &crate::model::DesiredState,
    planned: crate::converge::Planned,
    state_dir: &Path,
    run: Run<'_>,
) -> anyhow::Result<ExitCode> {
    let json = run.json;
    let report = run_plan(session, desired, planned, state_dir, run).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("\n{}", report.render());
    }
    Ok(if report.interrupted {
        exit(EXIT_INTERRUPTED)
    } else if report.succeeded() {
        ExitCode::SUCCESS
    } else {
        exit(1)
    })
}

/// Executes a plan through the one executor (`apply::execute`) with the session's buckets,
/// progress on stderr, the journal and interruption; returns its report unprinted (`park`
/// words its own failures).
pub async fn run_plan(
    session: &crate::session::Session,
    desired: &crate::model::DesiredState,
    planned: crate::converge::Planned,
    state_dir: &Path,
    run: Run<'_>,
) -> anyhow::Result<crate::apply::ApplyReport> {
    let Run {
        id: run_id,
        cancel,
        json: _,
        wait_timeout,
        waits,
    } = run;
    let mut options = crate::converge::ApplyOptions::new(run_id, state_dir);
    options.deadlines = match wait_timeout {
        Some(limit) => crate::apply::Deadlines::all(limit),
        None => crate::apply::Deadlines::from_waits(waits),
    };
    // The details (every poll) go to the run's log, beside the journal.
    let console =
        crate::exec::console::installed().unwrap_or_else(|| Arc::new(Console::stderr(false)));
    let logs = state_dir.join("logs");
    if crate::exec::private_file::create_dir_all(&logs).is_ok() {
        console.log_to(logs.join(format!("{run_id}.log")));
    }
    options.events = crate::exec::progress_on(&console, session.clock.clone());
    options.journal = Some(journal(state_dir, &desired.env).context("opening the journal")?);
    options.cancel = cancel.clone();
    Ok(crate::converge::apply(session, desired, planned, &options).await?)
}

/// The date `validate` and `preflight` compare announced end-of-support dates with: the
/// system clock's UTC date, or `ENVCTL_TODAY` (`YYYY-MM-DD`) when set, so a run (and a test)
/// can ask "what will this say on that day".
pub fn today() -> String {
    match std::env::var("ENVCTL_TODAY") {
        Ok(d)
            if d.len() == 10 && crate::time::parse_rfc3339(&format!("{d}T00:00:00Z")).is_some() =>
        {
            d
        }
        _ => crate::time::today(),
    }
}

/// The lease store at `location`, an S3 one reached through a client of its bucket's
/// Region (the bucket may be in another Region than the env: `Session::s3_for`).
pub async fn lock_store(
    session: &Session,
    location: &LockLocation,
) -> anyhow::Result<Box<dyn crate::lock::LeaseStore>> {
    let s3 = match location {
        LockLocation::S3 { bucket, .. } => session.s3_for(bucket).await?.client,
        LockLocation::Local(_) => session.clients.s3.clone(),
    };
    Ok(crate::lock::store_at(location, &s3))
}
