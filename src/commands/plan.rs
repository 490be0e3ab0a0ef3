//! `envctl plan ENV`: the changes an apply would make, as readable text or JSON.
use std::process::ExitCode;

use super::common;
use crate::cli::PlanArgs;
use crate::converge;
use crate::plan::render::render;
use crate::plan::saved::SAVED_PLAN_VERSION;
use crate::plan::{DiffOptions, SavedPlan, desired_hash};

pub fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let Some((compiled, sources)) = common::load_with_sources(&args.env, &args.overrides) else {
        return Ok(common::exit(1));
    };
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &compiled.desired.region).await?;
        let options = DiffOptions { adopt: args.adopt };
        let planned = converge::plan(
            &session,
            &compiled.desired,
            &args.target.state_dir,
            &options,
        )
        .await;
        let passed = match &planned {
            Ok(p) => super::preflight::gate_before_creating(&session, &compiled, &sources, &p.plan)
                .await
                .map(Some),
            Err(_) => Ok(None),
        };
        session.close().await?;
        let planned = planned?;
        if passed? == Some(false) {
            return Ok(common::exit(1));
        }
        let plan = planned.plan;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&plan)?);
        } else {
            print!("{}", render(&plan));
        }
        if let Some(out) = &args.out {
            let saved = SavedPlan {
                envctl_saved_plan: SAVED_PLAN_VERSION,
                env_path: args.env.display().to_string(),
                set: args.overrides.set.clone(),
                adopt: args.adopt,
                copy: args.overrides.copy.clone(),
                desired_hash: desired_hash(&compiled.desired),
                plan: plan.clone(),
            };
            std::fs::write(out, serde_json::to_vec_pretty(&saved)?)?;
            if !args.json {
                println!(
                    "\nSaved to {}: `envctl apply {}` executes exactly this plan.",
                    out.display(),
                    out.display()
                );
            }
        }
        Ok(if args.detailed_exitcode && plan.has_changes() {
            common::exit(2)
        } else {
            ExitCode::SUCCESS
        })
    })
}
