//! `envctl park ENV` and `envctl unpark ENV`: an env kept between test runs costs less while
//! parked (services at 0, DB instances stopped) and comes back as it was.
use envctl_aws_model::status::DbInstanceStatus;
use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;

use super::common;
use crate::account::observe::{ObserveCache, observe};
use crate::cli::ParkArgs;
use crate::converge::Planned;
use crate::park::cost::{capacity_step, park_cost};
use crate::park::{Kept, park_plan, planner, unpark_plan};
use crate::plan::Estimates;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Park,
    Unpark,
}

fn kept_lines(out: &mut String, kept: &[Kept]) {
    for k in kept {
        let _ = writeln!(out, "  keep  {}: {}", k.resource, k.reason);
    }
}

pub fn run(args: ParkArgs, direction: Direction) -> anyhow::Result<ExitCode> {
    let Some(compiled) = common::load(&args.env, &args.overrides) else {
        return Ok(common::exit(1));
    };
    let env_lock = compiled.loaded.spec.lock.as_ref().map(|l| l.value.clone());
    let waits = compiled.loaded.spec.waits.clone();
    let desired = compiled.desired;
    let state_dir = args.target.state_dir.clone();
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &desired.region).await?;
        let result = async {
            let cache_path = ObserveCache::path(&state_dir, &desired.env);
            let mut cache = ObserveCache::load(&cache_path);
            let live = observe(&session.reads(), &desired, &mut cache)
                .await
                .context("reading the environment")?;
            let _ = cache.save(&cache_path);
            let cluster = desired.cluster.name.clone();
            let mut out = String::new();
            let has_work = match direction {
                Direction::Park => {
                    let plan = park_plan(&desired, &live);
                    let _ = writeln!(out, "Park {}:", desired.env);
                    for s in &plan.services {
                        let _ = writeln!(out, "  scale ecs/service/{} {} -> 0 (count kept in tag {})", s.name, s.count, crate::import::PARKED_COUNT_TAG);
                    }
                    for id in &plan.databases {
                        let _ = writeln!(out, "  stop  rds/instance/{id} (RDS starts a stopped instance again after 7 days: unpark, or park again, within a week)");
                    }
                    kept_lines(&mut out, &plan.kept);
                    for k in &plan.kafka {
                        let _ = writeln!(out, "  keep  MSK {k}: MSK clusters cannot be stopped; it keeps running and billing");
                    }
                    let _ = writeln!(out, "{}", capacity_step(&desired));
                    let _ = writeln!(out, "{}", park_cost(&desired, &live, &plan.databases).render());
                    let _ = writeln!(out, "Unpark before `apply` or a matrix run: apply restores the counts but does not start a stopped DB instance.");
                    (!plan.services.is_empty() || !plan.databases.is_empty()).then(|| planner::park(&desired, &plan))
                }
                Direction::Unpark => {
                    let plan = unpark_plan(&desired, &live);
                    let _ = writeln!(out, "Unpark {}:", desired.env);
                    for id in &plan.databases {
                        let status = live.db_instances.get(id).map(|d| d.status.as_str()).unwrap_or_default();
                        let _ = match DbInstanceStatus::parse(status) {
                            DbInstanceStatus::Stopping => writeln!(out, "  start rds/instance/{id} once it is stopped (it is stopping), then wait until available"),
                            DbInstanceStatus::Starting => writeln!(out, "  wait until rds/instance/{id} is available (it is starting)"),
                            _ => writeln!(out, "  start rds/instance/{id}, then wait until available"),
                        };
                    }
                    for s in &plan.services {
                        let _ = writeln!(out, "  scale ecs/service/{} -> {}, then wait until healthy", s.name, s.count);
                    }
                    kept_lines(&mut out, &plan.kept);
                    (!plan.services.is_empty() || !plan.databases.is_empty()).then(|| planner::unpark(&desired, &live, &plan, &Estimates::default()))
                }
            };
            print!("{out}");
            let Some(plan) = has_work else {
                println!("Nothing to do.");
                return anyhow::Ok(ExitCode::SUCCESS);
            };
            let verb = if direction == Direction::Park { "Park" } else { "Unpark" };
            if !common::confirm(&format!("{verb} {}?", desired.env), args.yes)? {
                println!("Cancelled.");
                return Ok(common::exit(1));
            }
            let run_id = common::run_id(&desired.env);
            let scope = common::LockScope {
                env: &desired.env,
                env_lock: env_lock.as_deref(),
                cluster: &cluster,
                run_id: &run_id,
            };
            common::with_lock(&session, &args.target, scope, async |lock| {
            let planned = Planned {
                live,
                plan,
                cache,
            };
            let run = common::Run {
                id: &run_id,
                cancel: &lock.cancel,
                json: false,
                wait_timeout: None,
                waits: &waits,
            };
            let report = common::run_plan(&session, &desired, planned, &state_dir, run).await?;
            print!("\n{}", report.render());
            Ok(if report.interrupted {
                common::exit(common::EXIT_INTERRUPTED)
            } else if report.succeeded() {
                println!("{verb}ed.");
                ExitCode::SUCCESS
            } else {
                let what = if direction == Direction::Park {
                    "not parked"
                } else {
                    "did not come back"
                };
                let failures: Vec<String> = report
                    .failures()
                    .map(|f| format!("{} ({})", f.resource, f.outcome.detail()))
                    .collect();
                eprintln!("error: {what}: {}", failures.join("; "));
                common::exit(1)
            })
            })
            .await
        }
        .await;
        session.close().await?;
        result
    })
}
