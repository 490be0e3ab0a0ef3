//! `envctl apply ENV|PLANFILE`: show the plan, confirm, converge, report per resource.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use super::common;
use crate::cli::{ApplyArgs, Overrides};
use crate::converge;
use crate::plan::render::render;
use crate::plan::{DiffOptions, SavedPlan, desired_hash};
use crate::spec::source::read_regular_file;

pub fn run(args: ApplyArgs) -> anyhow::Result<ExitCode> {
    // A saved plan is a JSON file with our marker; anything else is an env file.
    // Read through the spec reader's cap: a FIFO or a device must not block or fill memory.
    let saved: Option<SavedPlan> =
        match read_regular_file(&args.env, crate::spec::node::MAX_FILE_BYTES) {
            Ok(bytes) => SavedPlan::read(&args.env.display().to_string(), &bytes)?,
            Err(_) => None,
        };
    if let Some(s) = &saved
        && (!args.overrides.set.is_empty() || args.adopt || args.overrides.copy.is_some())
    {
        // The plan was made, and its hash taken, with its own --set and --adopt: anything
        // given now would be silently dropped, or change what was reviewed.
        bail!(
            "--set cannot change a saved plan, nor can --adopt or --copy: {} applies what was \
             planned ({}{}{}); plan again with the new values (`envctl plan {} --set ... --out FILE`)",
            args.env.display(),
            if s.set.is_empty() {
                "no --set".to_string()
            } else {
                s.set
                    .iter()
                    .map(|v| format!("--set {v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            },
            if s.adopt { ", --adopt" } else { "" },
            s.copy
                .as_ref()
                .map(|c| format!(", --copy {c}"))
                .unwrap_or_default(),
            s.env_path
        );
    }
    let (env_path, sets, adopt, copy) = match &saved {
        Some(s) => (
            PathBuf::from(&s.env_path),
            s.set.clone(),
            s.adopt,
            s.copy.clone(),
        ),
        None => (
            args.env.clone(),
            args.overrides.set.clone(),
            args.adopt,
            args.overrides.copy.clone(),
        ),
    };
    let overrides = Overrides {
        set: sets,
        copy,
        project: args.overrides.project.clone(),
    };
    let Some((compiled, sources)) = common::load_with_sources(&env_path, &overrides) else {
        return Ok(common::exit(1));
    };
    if let Some(s) = &saved
        && s.desired_hash != desired_hash(&compiled.desired)
    {
        bail!(
            "{} was planned for a different spec: {} or its templates changed since; plan again",
            args.env.display(),
            env_path.display()
        );
    }
    let desired = compiled.desired.clone();
    let from_file = saved.is_some();
    let state_dir = args.target.state_dir.clone();
    let run_id = common::run_id(&desired.env);
    let env_lock = compiled.loaded.spec.lock.as_ref().map(|l| l.value.clone());
    let waits = compiled.loaded.spec.waits.clone();
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &desired.region).await?;
        let scope = common::LockScope {
            env: &desired.env,
            env_lock: env_lock.as_deref(),
            cluster: &desired.cluster.name,
            run_id: &run_id,
        };
        let result = common::with_lock(&session, &args.target, scope, async |lock| {
            // A saved plan runs its own operations, once a fresh plan confirms them.
            let planned = match saved {
                Some(s) => converge::plan_saved(&session, &desired, s, &state_dir)
                    .await
                    .with_context(|| format!("{} cannot be applied", args.env.display()))?,
                None => {
                    converge::plan(&session, &desired, &state_dir, &DiffOptions { adopt }).await?
                }
            };
            if !super::preflight::gate_before_creating(&session, &compiled, &sources, &planned.plan)
                .await?
            {
                return Ok(common::exit(1));
            }
            if !args.json {
                print!("{}", render(&planned.plan));
            }
            if !planned.plan.has_changes() {
                return Ok(ExitCode::SUCCESS);
            }
            if !from_file && !common::confirm("\nApply these changes?", args.yes)? {
                eprintln!("Nothing applied.");
                return Ok(common::exit(1));
            }
            common::execute(
                &session,
                &desired,
                planned,
                &state_dir,
                common::Run {
                    id: &run_id,
                    cancel: &lock.cancel,
                    json: args.json,
                    wait_timeout: args.wait_timeout,
                    waits: &waits,
                },
            )
            .await
        })
        .await;
        session.close().await?;
        result
    })
}
