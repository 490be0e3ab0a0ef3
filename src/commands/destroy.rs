//! `envctl destroy ENV`: list what the env owns, confirm, delete it in reverse order.
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;

use super::common;
use crate::cli::DestroyArgs;
use crate::converge::{self, ApplyOptions};
use crate::exec::progress;
use crate::plan::render::render;

pub fn run(args: DestroyArgs) -> anyhow::Result<ExitCode> {
    let Some(compiled) = common::load(&args.env, &args.overrides.set) else {
        return Ok(common::exit(1));
    };
    let desired = compiled.desired;
    let state_dir = args.target.state_dir.clone();
    let run_id = common::run_id(&desired.env);
    let _lock = common::lock(&state_dir, &desired.env, &run_id)?;
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &desired.region).await?;
        let result = async {
            let planned = converge::plan_destroy(&session, &desired, &state_dir).await?;
            if !args.json {
                print!("{}", render(&planned.plan));
            }
            if !planned.plan.has_changes() {
                return Ok(ExitCode::SUCCESS);
            }
            if !common::confirm(
                &format!(
                    "\nDelete these {} resources of {}?",
                    planned.plan.changes().count(),
                    desired.env
                ),
                args.yes,
            )? {
                eprintln!("Nothing deleted.");
                return Ok(common::exit(1));
            }
            let mut options = ApplyOptions::new(run_id.clone(), state_dir.clone());
            options.events = Arc::from(progress::for_stderr(session.clock.clone()));
            options.journal =
                Some(common::journal(&state_dir, &desired.env).context("opening the journal")?);
            options.cancel = common::on_interrupt();
            let report = converge::apply(&session, &desired, planned, &options).await;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("\n{}", report.render());
            }
            Ok(if report.interrupted {
                common::exit(common::EXIT_INTERRUPTED)
            } else if report.succeeded() {
                ExitCode::SUCCESS
            } else {
                common::exit(1)
            })
        }
        .await;
        session.close().await?;
        result
    })
}
