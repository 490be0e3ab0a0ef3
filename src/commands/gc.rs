//! `envctl gc [--env E] [--expired]`: finds every resource tagged as envctl's across the
//! account and Region (ECS clusters and services, MSK clusters, RDS instances), and deletes
//! those that match. It needs no env file: CI's last step after a job that was killed.
//! The deletion is a plan run by the same executor as apply and destroy (rate limits,
//! backoff, the journal, interruption, waits until gone).
use std::process::ExitCode;

use super::common;
use crate::cli::GcArgs;
use crate::converge;
use crate::model::live::Tags;
use crate::model::tag;
use crate::plan::render::render;
use crate::time::parse_rfc3339;

fn matches(tags: &Tags, args: &GcArgs, now: f64) -> bool {
    if tags.get(tag::TOOL).map(String::as_str) != Some(tag::TOOL_VALUE) {
        return false;
    }
    if let Some(env) = &args.env
        && tags.get(tag::ENV) != Some(env)
    {
        return false;
    }
    if args.expired {
        // Without a readable expiry nothing is "expired": gc never guesses.
        return tags
            .get(tag::EXPIRES)
            .and_then(|t| parse_rfc3339(t))
            .is_some_and(|t| t < now);
    }
    true
}

pub fn run(args: GcArgs) -> anyhow::Result<ExitCode> {
    let region = args
        .target
        .region
        .clone()
        .unwrap_or_else(|| "us-east-1".into());
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &region).await?;
        let result = gc(&session, &args, &region).await;
        session.close().await?;
        result
    })
}

async fn gc(
    session: &crate::session::Session,
    args: &GcArgs,
    region: &str,
) -> anyhow::Result<ExitCode> {
    let now = session.clock.now();
    let planned = converge::plan_gc(session, |tags| matches(tags, args, now)).await?;
    if !planned.plan.has_changes() {
        println!(
            "Nothing to collect{}.",
            if args.expired {
                " (no owned resource is past its expiry)"
            } else {
                ""
            }
        );
        for c in &planned.plan.conflicts {
            println!("  ! {}: {}", c.resource, c.message);
        }
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", render(&planned.plan));
    if !common::confirm(
        &format!(
            "\nDelete these {} resources?",
            planned.plan.changes().count()
        ),
        args.yes,
    )? {
        return Ok(common::exit(1));
    }
    let desired = converge::gc_desired(region);
    let state_dir = &args.target.state_dir;
    let run_id = common::run_id("gc");
    let cancel = common::cancel_on_interrupt();
    let run = common::Run {
        id: &run_id,
        cancel: &cancel,
        json: false,
        wait_timeout: None,
        // Resources of any env, not one env file's: envctl's default deadlines.
        waits: &Default::default(),
    };
    common::execute(session, &desired, planned, state_dir, run).await
}
