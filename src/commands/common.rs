//! What the AWS-facing commands share: loading an env with its diagnostics, choosing the
//! target (AWS or the sandbox), confirmation, the lock, the journal and interruption.
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::aws::Connection;
use crate::cli::{Overrides, TargetArgs};
use crate::compile::{Compiled, compile_env};
use crate::exec::journal::Journal;
use crate::exec::lock::{self, Holder, LockGuard};
use crate::session::Session;
use crate::spec::Loader;

/// Exit code of a run stopped by SIGINT/SIGTERM, as shells report it.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Compiles an env, printing its diagnostics (warnings too) to stderr.
pub fn load(env: &Path, overrides: &Overrides) -> Option<Compiled> {
    let sets = &overrides.set;
    let mut loader = Loader::with_root(overrides.project.root.clone());
    let compiled = compile_env(&mut loader, env, sets);
    let diagnostics = std::mem::take(&mut loader.diagnostics).sorted();
    if !diagnostics.is_empty() {
        eprint!("{}", diagnostics.render(&loader.sources));
    }
    compiled
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Connects to AWS or starts the embedded sandbox.
pub async fn session(target: &TargetArgs, env_region: &str) -> anyhow::Result<Session> {
    let region = target
        .region
        .clone()
        .unwrap_or_else(|| env_region.to_string());
    if target.sandbox {
        let dir = target.state_dir.join("sandbox");
        return Session::sandbox(dir, target.time_scale, &region).await;
    }
    Ok(Session::aws(&Connection {
        region,
        profile: target.profile.clone(),
        endpoint_url: target.endpoint_url.clone(),
        sandbox: false,
        no_sdk_retries: false,
    })
    .await)
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

/// Takes the environment's apply lock (fails fast, naming the holder).
pub fn lock(state_dir: &Path, env: &str, run_id: &str) -> anyhow::Result<LockGuard> {
    let guard = lock::acquire(
        state_dir,
        env,
        &Holder::current(run_id),
        Duration::from_secs(6 * 3600),
    )?;
    if let Some(old) = guard.took_over() {
        eprintln!(
            "note: took over a stale lock of {} (pid {}, run {})",
            old.owner, old.pid, old.run_id
        );
    }
    Ok(guard)
}

pub fn journal(state_dir: &Path, env: &str) -> anyhow::Result<Arc<Journal>> {
    Ok(Arc::new(Journal::open(state_dir, env)?))
}

/// Sets the returned flag on SIGINT or SIGTERM: nothing new starts, calls in flight finish,
/// the journal is written, and the command exits 130. A second signal exits at once.
pub fn on_interrupt() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let set = flag.clone();
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        for round in 0..2 {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
            }
            if round == 0 {
                set.store(true, Ordering::SeqCst);
                eprintln!("\ninterrupted: letting calls in flight finish (again to quit now)");
            } else {
                std::process::exit(i32::from(EXIT_INTERRUPTED));
            }
        }
    });
    flag
}

pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}

/// Executes a plan with progress, the journal and interruption, prints the result table
/// (or JSON), and picks the exit code: 0 done, 1 failures, 130 interrupted.
pub async fn execute(
    session: &crate::session::Session,
    desired: &crate::model::DesiredState,
    planned: crate::converge::Planned,
    state_dir: &Path,
    run_id: &str,
    json: bool,
    wait_timeout: Option<Duration>,
) -> anyhow::Result<ExitCode> {
    let mut options = crate::converge::ApplyOptions::new(run_id, state_dir);
    if let Some(limit) = wait_timeout {
        options.deadlines = crate::apply::Deadlines::all(limit);
    }
    options.events = Arc::from(crate::exec::progress::for_stderr(session.clock.clone()));
    options.journal = Some(journal(state_dir, &desired.env).context("opening the journal")?);
    options.cancel = on_interrupt();
    let report = crate::converge::apply(session, desired, planned, &options).await?;
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
