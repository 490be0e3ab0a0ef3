//! `envctl gc [--env E] [--expired]`: finds every resource tagged as envctl's across the
//! account and Region (ECS clusters and services, MSK clusters, RDS instances), and deletes
//! those that match. It needs no env file: CI's last step after a job that was killed.
use std::process::ExitCode;
use std::time::Duration;

use super::common;
use crate::apply::context::parse_rfc3339;
use crate::aws::{ecs, kafka, rds};
use crate::cli::GcArgs;
use crate::exec::{PollInterval, Probe, WaitOutcome, await_condition};
use crate::model::live::Tags;
use crate::model::tag;

#[derive(Debug)]
enum Found {
    Service { cluster: String, name: String },
    Kafka { arn: String, name: String },
    Db { id: String, replica: bool },
    Cluster { name: String },
}

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
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(
            &args.target,
            args.target.region.as_deref().unwrap_or("us-east-1"),
        )
        .await?;
        let result = gc(&session, &args).await;
        session.close().await?;
        result
    })
}

async fn gc(session: &crate::session::Session, args: &GcArgs) -> anyhow::Result<ExitCode> {
    let c = &session.clients;
    let now = session.clock.now();
    let mut found = Vec::new();
    for arn in ecs::list_clusters(&c.ecs).await? {
        let name = arn.rsplit('/').next().unwrap_or(&arn).to_string();
        let Some(cluster) = ecs::describe_cluster(&c.ecs, &name).await? else {
            continue;
        };
        let names = ecs::list_services(&c.ecs, &name).await?;
        let mut foreign = 0;
        for chunk in names.chunks(ecs::DESCRIBE_SERVICES_BATCH) {
            for s in ecs::describe_services(&c.ecs, &name, chunk).await? {
                if s.status == "INACTIVE" {
                    continue;
                }
                if matches(&s.tags, args, now) {
                    found.push(Found::Service {
                        cluster: name.clone(),
                        name: s.name.clone(),
                    });
                } else {
                    foreign += 1;
                }
            }
        }
        // A cluster that also runs services gc may not delete is kept.
        if matches(&cluster.tags, args, now) && foreign == 0 {
            found.push(Found::Cluster { name });
        }
    }
    for k in kafka::list_clusters(&c.kafka).await? {
        if matches(&k.tags, args, now) && k.state != "DELETING" {
            found.push(Found::Kafka {
                arn: k.arn,
                name: k.name,
            });
        }
    }
    for db in rds::describe_instances(&c.rds).await? {
        if matches(&db.tags, args, now) && db.status != "deleting" {
            found.push(Found::Db {
                id: db.identifier,
                replica: db.source.is_some(),
            });
        }
    }
    if found.is_empty() {
        println!(
            "Nothing to collect{}.",
            if args.expired {
                " (no owned resource is past its expiry)"
            } else {
                ""
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("envctl owns {} matching resources:", found.len());
    for f in &found {
        println!("  - {f:?}");
    }
    if !common::confirm("Delete them?", args.yes)? {
        return Ok(common::exit(1));
    }
    let mut failures = 0;
    let clock = session.clock.clone();
    // Services first, then the data stores (readers before writers), then clusters.
    for f in found.iter().filter(|f| matches!(f, Found::Service { .. })) {
        if let Found::Service { cluster, name } = f {
            match ecs::delete_service(&c.ecs, cluster, name).await {
                Ok(()) => println!("deleted service {cluster}/{name}"),
                Err(e) => {
                    failures += 1;
                    eprintln!("{e}");
                }
            }
        }
    }
    for f in found
        .iter()
        .filter(|f| matches!(f, Found::Kafka { .. } | Found::Db { replica: true, .. }))
    {
        let result = match f {
            Found::Kafka { arn, name } => match kafka::describe_cluster(&c.kafka, arn).await {
                Ok(k) => kafka::delete_cluster(&c.kafka, arn, &k.current_version)
                    .await
                    .map(|()| format!("deleting MSK cluster {name}")),
                Err(e) => Err(e),
            },
            Found::Db { id, .. } => rds::delete_instance(&c.rds, id, true)
                .await
                .map(|()| format!("deleting DB instance {id}")),
            _ => continue,
        };
        match result {
            Ok(m) => println!("{m}"),
            Err(e) => {
                failures += 1;
                eprintln!("{e}");
            }
        }
    }
    for f in &found {
        if let Found::Db { id, replica: false } = f {
            // A writer goes after its replicas are gone.
            let _ = await_condition(
                clock.as_ref(),
                Duration::from_secs(3600),
                PollInterval::growing(Duration::from_secs(15), Duration::from_secs(60)),
                || async {
                    match rds::describe_instances(&c.rds).await {
                        Ok(all) if all.iter().any(|d| d.source.as_deref() == Some(id.as_str())) => {
                            Probe::Pending {
                                status: "replicas".into(),
                            }
                        }
                        Ok(_) => Probe::Done(()),
                        Err(e) => Probe::Failed {
                            reason: e.to_string(),
                        },
                    }
                },
            )
            .await;
            match rds::delete_instance(&c.rds, id, true).await {
                Ok(()) => println!("deleting DB instance {id}"),
                Err(e) => {
                    failures += 1;
                    eprintln!("{e}");
                }
            }
        }
    }
    for f in &found {
        if let Found::Cluster { name } = f {
            let outcome = await_condition(
                clock.as_ref(),
                Duration::from_secs(900),
                PollInterval::growing(Duration::from_secs(5), Duration::from_secs(30)),
                || async {
                    match ecs::list_services(&c.ecs, name).await {
                        Ok(s) if s.is_empty() => Probe::Done(()),
                        Ok(s) => match ecs::describe_services(
                            &c.ecs,
                            name,
                            &s.into_iter().take(10).collect::<Vec<_>>(),
                        )
                        .await
                        {
                            Ok(d) if d.iter().all(|x| x.status == "INACTIVE") => Probe::Done(()),
                            Ok(_) => Probe::Pending {
                                status: "services draining".into(),
                            },
                            Err(e) => Probe::Failed {
                                reason: e.to_string(),
                            },
                        },
                        Err(e) => Probe::Failed {
                            reason: e.to_string(),
                        },
                    }
                },
            )
            .await;
            let deleted = match outcome {
                WaitOutcome::Done(()) => ecs::delete_cluster(&c.ecs, name)
                    .await
                    .map_err(|e| e.to_string()),
                WaitOutcome::Failed(r) => Err(r),
                WaitOutcome::TimedOut { last_status, .. } => {
                    Err(format!("cluster {name}: {last_status}"))
                }
            };
            match deleted {
                Ok(()) => println!("deleted cluster {name}"),
                Err(e) => {
                    failures += 1;
                    eprintln!("{e}");
                }
            }
        }
    }
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        common::exit(1)
    })
}
