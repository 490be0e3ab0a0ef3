//! `envctl apply ENV|PLANFILE`: show the plan, confirm, converge, report per resource.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;

use super::common;
use super::plan::{SavedPlan, desired_hash};
use crate::cli::ApplyArgs;
use crate::converge;
use crate::plan::DiffOptions;
use crate::plan::render::render;

pub fn run(args: ApplyArgs) -> anyhow::Result<ExitCode> {
    // A saved plan is a JSON file with our marker; anything else is an env file.
    let saved: Option<SavedPlan> = std::fs::read(&args.env)
        .ok()
        .filter(|b| b.first() == Some(&b'{'))
        .and_then(|b| serde_json::from_slice(&b).ok());
    let (env_path, sets, adopt) = match &saved {
        Some(s) => (PathBuf::from(&s.env_path), s.set.clone(), s.adopt),
        None => (args.env.clone(), args.overrides.set.clone(), args.adopt),
    };
    let Some(compiled) = common::load(&env_path, &sets) else {
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
    let desired = compiled.desired;
    let state_dir = args.target.state_dir.clone();
    let run_id = common::run_id(&desired.env);
    let env_lock = compiled.loaded.spec.lock.as_ref().map(|l| l.value.clone());
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &desired.region).await?;
        let lock = match common::lock(&session, &args.target, &desired.env, env_lock.as_deref(), &desired.cluster.name, &run_id).await {
            Ok(lock) => lock,
            Err(e) => {
                session.close().await?;
                return Err(e);
            }
        };
        let result = async {
            let planned = converge::plan(&session, &desired, &state_dir, &DiffOptions { adopt }).await?;
            if let Some(s) = &saved
                && s.plan.fingerprint != planned.plan.fingerprint
            {
                bail!("the live state changed since {} was saved: the plan would differ now; plan again", args.env.display());
            }
            if !args.json {
                print!("{}", render(&planned.plan));
            }
            if !planned.plan.has_changes() {
                return Ok(ExitCode::SUCCESS);
            }
            if saved.is_none() && !common::confirm("\nApply these changes?", args.yes)? {
                eprintln!("Nothing applied.");
                return Ok(common::exit(1));
            }
            common::execute(&session, &desired, planned, &state_dir, &run_id, &lock.cancel, args.json).await
        }
        .await;
        let result = lock.release(&session, result).await;
        session.close().await?;
        result
    })
}
