//! `envctl matrix plan|run PLAYBOOK`.
use std::process::ExitCode;
use std::sync::Arc;

use std::path::Path;

use anyhow::{Context as _, bail};

use super::common;
use crate::cli::{
    MatrixArgs, MatrixCommand, MatrixPlanArgs, MatrixRunArgs, ProjectArgs, TargetArgs,
};
use crate::exec::Sink as _;
use crate::load::checks::{self, Target};
use crate::matrix::{self, MatrixOptions, RestoreMode};
use crate::results::{Status, content_hash, resume};
use crate::spec::Loader;
use crate::spec::copy::CopyName;
use crate::spec::node::MAX_FILE_BYTES;
use crate::spec::playbook::{LoadedPlaybook, TeardownPolicy};
use crate::spec::source::read_regular_file;

/// The run's console, lines and details, in its results directory.
pub const LOG_FILE: &str = "console.log";

/// Loads the playbook and checks its steps for `target` (before anything is spent: a run
/// that would fail on a missing plan or program fails here, before the first AWS call).
/// The playbook loaded for where the command runs (the sandbox or AWS) and its lock.
fn load_for(
    path: &Path,
    project: &ProjectArgs,
    copy: Option<&CopyName>,
    target: &TargetArgs,
) -> Option<LoadedPlaybook> {
    let on = if target.sandbox {
        Target::Sandbox
    } else {
        Target::Aws
    };
    load(path, project, copy, on, target.lock.as_deref())
}

fn load(
    path: &Path,
    project: &ProjectArgs,
    copy: Option<&CopyName>,
    target: Target,
    lock: Option<&str>,
) -> Option<LoadedPlaybook> {
    let mut loader = Loader::with_root(project.root.clone()).with_copy(copy.cloned());
    let loaded = loader.load_playbook(path);
    if let Some(loaded) = &loaded {
        checks::check_steps(&mut loader, loaded, target, lock);
    }
    // Errors in full, then one line counting the warnings, the steps' too (a plan the
    // sandbox does without, which AWS will need): `validate` shows them whole.
    let diagnostics = std::mem::take(&mut loader.diagnostics).sorted();
    common::report_diagnostics(&diagnostics, &loader.sources, path);
    if diagnostics.has_errors() {
        return None;
    }
    loaded
}

fn only(filters: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    filters
        .iter()
        .map(|f| match f.split_once('=') {
            Some((a, v)) => Ok((a.trim().to_string(), v.trim().to_string())),
            None => bail!("--only {f}: write AXIS=VARIANT, e.g. --only kafka=kraft-m7g"),
        })
        .collect()
}

pub fn run(args: MatrixArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        MatrixCommand::Plan(a) => plan(*a),
        MatrixCommand::Run(a) => run_matrix(*a),
    }
}

fn plan(args: MatrixPlanArgs) -> anyhow::Result<ExitCode> {
    let Some(loaded) = load_for(
        &args.playbook,
        &args.project,
        args.copy.as_ref(),
        &args.target,
    ) else {
        return Ok(common::exit(1));
    };
    let only = only(&args.only)?;
    let live = args.live || args.target.sandbox || args.target.endpoint_url.is_some();
    if !live {
        // Offline: from an empty account, as the render says.
        let plan = matrix::plan_matrix(&loaded, &only)?;
        print!("{}", plan.render(&loaded));
        return Ok(ExitCode::SUCCESS);
    }
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &loaded.env.spec.region.value).await?;
        let planned =
            plan_from_live(&loaded, &only, &session, &args.target, RestoreMode::Auto).await;
        session.close().await?;
        print!("{}", planned?.render(&loaded));
        Ok(ExitCode::SUCCESS)
    })
}

/// The matrix plan starting from what the account runs now, ending as the run will: with a
/// restore when `mode` asks for one or the environment is adopted (`RestoreMode::Auto`).
async fn plan_from_live(
    loaded: &LoadedPlaybook,
    only: &[(String, String)],
    session: &crate::session::Session,
    target: &crate::cli::TargetArgs,
    mode: RestoreMode,
) -> anyhow::Result<matrix::MatrixPlan> {
    // The points' configurations share the env's resources: any one names what to observe.
    let mut plan = matrix::plan_matrix(loaded, only)?;
    let Some(first) = plan.configs.values().next() else {
        return Ok(plan);
    };
    let live = crate::converge::observe_live(session, first, &target.state_dir)
        .await
        .context("reading the environment")?;
    plan.start_from(loaded, &live);
    let restores = match mode {
        RestoreMode::On => true,
        RestoreMode::Off => false,
        RestoreMode::Auto => matrix::restore::adopted(&live),
    };
    if restores {
        plan.ending = matrix::Ending::Restore;
    }
    Ok(plan)
}

fn run_matrix(args: MatrixRunArgs) -> anyhow::Result<ExitCode> {
    let Some(loaded) = load_for(
        &args.playbook,
        &args.project,
        args.copy.as_ref(),
        &args.target,
    ) else {
        return Ok(common::exit(1));
    };
    if let Some(id) = &args.resume {
        // Before the lock and before any directory is made: a refused resume leaves no trace.
        let playbook = read_regular_file(&args.playbook, MAX_FILE_BYTES)
            .with_context(|| format!("reading {}", args.playbook.display()))?;
        resume::check(&args.results, id, &args.playbook, &content_hash(&playbook))?;
    }
    let only = only(&args.only)?;
    let env = loaded.env.spec.env.value.clone();
    let run_id = args.resume.clone().unwrap_or_else(|| {
        format!(
            "{}-{}",
            loaded.playbook.name.value,
            common::run_id(&env).trim_start_matches(&format!("{env}-"))
        )
    });
    let state_dir = args.target.state_dir.clone();
    let env_lock = loaded.env.spec.lock.as_ref().map(|l| l.value.clone());
    let cluster = loaded.env.spec.ecs.cluster.value.clone();
    let restore = if args.restore {
        RestoreMode::On
    } else if args.no_restore {
        RestoreMode::Off
    } else {
        RestoreMode::Auto
    };
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &loaded.env.spec.region.value).await?;
        // Everything said from here on is kept in the run's directory once the runner has
        // made it (a run refused before then leaves no trace).
        let console = common::console(&args.target);
        console.log_to(args.results.join(&run_id).join(LOG_FILE));
        // The summary starts from what exists and ends as the run will (a restore run
        // neither creates everything nor tears down).
        let mut plan = match plan_from_live(&loaded, &only, &session, &args.target, restore).await {
            Ok(plan) => plan,
            Err(e) => {
                session.close().await?;
                return Err(e);
            }
        };
        let teardown = args.teardown.as_deref().and_then(TeardownPolicy::from_name);
        if let (matrix::Ending::Teardown(_), Some(policy)) = (&plan.ending, teardown) {
            plan.ending = matrix::Ending::Teardown(policy);
        }
        for line in plan.render(&loaded).lines() {
            console.line(line);
        }
        // Results are announced once they exist (the run's end names the directory).
        console.line("");
        console.line(&format!(
            "run {run_id}{}",
            if session.clock.simulated() {
                ": on the sandbox, every time below is simulated ([hh:mm:ss] since the start)"
            } else {
                ""
            }
        ));
        // One run per environment at a time: the lock covers the whole matrix, renewed
        // while it runs.
        let scope = common::LockScope {
            env: &env,
            env_lock: env_lock.as_deref(),
            cluster: &cluster,
            run_id: &run_id,
        };
        let result = common::with_lock(&session, &args.target, scope, async |lock| {
            let endpoint = session.sandbox_endpoint();
            let options = MatrixOptions {
                run_id: run_id.clone(),
                results_root: args.results.clone(),
                state_dir: state_dir.clone(),
                teardown,
                sandbox: session.is_sandbox(),
                endpoint_url: endpoint,
                resume: args.resume.is_some(),
                restore,
                cancel: lock.cancel.clone(),
                fence: Some(lock.fence()),
                progress: crate::exec::progress_on(&console, session.clock.clone()),
                say: {
                    let console = console.clone();
                    Arc::new(move |text: &str| console.line(text))
                },
                detail: {
                    let console = console.clone();
                    Arc::new(move |text: &str| console.detail(text))
                },
                lock_url: args.target.lock.clone(),
            };
            matrix::run(&loaded, &plan, &session, &options)
                .await
                .map_err(anyhow::Error::from)
        })
        .await;
        session.close().await?;
        let run_dir = args.results.join(&run_id);
        if result.is_err() && run_dir.join("run.json").is_file() {
            // What was recorded before the run stopped; nothing is announced that was not.
            eprintln!("results so far in {}", run_dir.display());
        }
        let record = result?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&record)?);
        } else {
            let simulated = record.target == "sandbox";
            let took_header = if simulated {
                "took (simulated)"
            } else {
                "took"
            };
            println!("\n{:<52} {:<12} {took_header:>16}", "point", "status");
            for p in &record.points {
                let took = match (p.started_at, p.finished_at) {
                    (Some(a), Some(b)) => crate::plan::estimate::human(b - a),
                    _ => "-".into(),
                };
                println!(
                    "{:<52} {:<12} {took:>16}",
                    p.id,
                    format!("{:?}", p.status).to_lowercase()
                );
            }
            if let Some(ramp) = &record.ramp {
                for (group, limit) in &ramp.limits {
                    println!(
                        "ramp {}: limit {} for {group}",
                        ramp.axis,
                        limit.as_deref().unwrap_or("none (the first step failed)")
                    );
                }
            }
            let took = crate::plan::estimate::human(
                record.finished_at.unwrap_or(record.started_at) - record.started_at,
            );
            println!(
                "\nrun {}: {:?} in {took}{}; teardown: {}; results in {}",
                record.run_id,
                record.status,
                if simulated { " simulated" } else { "" },
                record.teardown.detail.clone().unwrap_or_default(),
                args.results.join(&record.run_id).display()
            );
            if let Some(restore) = &record.restore {
                println!("restore: {}", restore.detail.clone().unwrap_or_default());
            }
            println!(
                "report: envctl report {}",
                args.results.join(&record.run_id).display()
            );
        }
        // An environment that was not put back is a failed run, whatever the points did.
        let not_restored = record
            .restore
            .as_ref()
            .is_some_and(|r| r.status != Some(Status::Passed));
        Ok(match record.status {
            Status::Interrupted => common::exit(common::EXIT_INTERRUPTED),
            _ if not_restored => common::exit(1),
            Status::Passed => ExitCode::SUCCESS,
            _ => common::exit(1),
        })
    })
}
