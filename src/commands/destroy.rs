//! `envctl destroy ENV`: list what the env owns, confirm, delete it in reverse order.
use std::process::ExitCode;

use super::common;
use crate::cli::DestroyArgs;
use crate::converge;
use crate::plan::render::render_destroy;

pub fn run(args: DestroyArgs) -> anyhow::Result<ExitCode> {
    let Some(compiled) = common::load(&args.env, &args.overrides) else {
        return Ok(common::exit(1));
    };
    let desired = compiled.desired;
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
            let planned = converge::plan_destroy(&session, &desired, &state_dir).await?;
            if !args.json {
                print!("{}", render_destroy(&planned.plan));
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
