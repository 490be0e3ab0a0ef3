//! `envctl status ENV`: what runs now, and where it differs from the spec.
use envctl_aws_model::status::{ClusterStatus, DeploymentStatus};
use std::fmt::Write as _;
use std::process::ExitCode;

use super::common;
use crate::cli::StatusArgs;
use crate::converge;
use crate::plan::{ActionKind, DiffOptions, Plan, ResourceId};

fn drift(plan: &Plan, resource: &ResourceId) -> String {
    match plan.actions.iter().find(|a| &a.id == resource) {
        Some(a) if a.kind != ActionKind::NoOp => {
            let fields: Vec<&str> = a.changes.iter().map(|c| c.field.as_str()).take(4).collect();
            format!("DRIFT: {} ({})", a.kind.verb(), fields.join(", "))
        }
        Some(_) => "in sync".into(),
        None if plan
            .conflicts
            .iter()
            .any(|c| &c.resource == resource && c.kind.is_not_owned()) =>
        {
            "NOT OWNED".into()
        }
        None => String::new(),
    }
}

/// A parked resource (`envctl park`) reads as parked, not as drift.
fn parked_or_drift(
    live: &crate::model::live::LiveState,
    plan: &Plan,
    resource: &ResourceId,
) -> String {
    match plan.actions.iter().find(|a| &a.id == resource) {
        Some(a) if crate::park::explained_by_parking(live, a) => "parked".into(),
        _ => drift(plan, resource),
    }
}

/// "10 instances; CPU reserved 14336 of 81920 units, memory 50000 of 322560 MiB".
fn capacity_line(instances: &[crate::aws::ecs::InstanceCapacity]) -> String {
    let sum = |f: fn(&crate::aws::ecs::InstanceCapacity) -> i32| -> i64 {
        instances.iter().map(|i| i64::from(f(i))).sum()
    };
    let (cpu, cpu_left) = (sum(|i| i.registered_cpu), sum(|i| i.remaining_cpu));
    let (mem, mem_left) = (sum(|i| i.registered_memory), sum(|i| i.remaining_memory));
    format!(
        "{} container instances; CPU reserved {} of {cpu} units, memory reserved {} of {mem} MiB",
        instances.len(),
        cpu - cpu_left,
        mem - mem_left
    )
}

pub fn run(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let Some(compiled) = common::load(&args.env, &args.overrides) else {
        return Ok(common::exit(1));
    };
    let desired = compiled.desired;
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &desired.region).await?;
        let planned = converge::plan_observed(
            &session,
            &desired,
            &args.target.state_dir,
            &DiffOptions::default(),
        )
        .await;
        // The cluster's registered instances and what the tasks reserve on them: whether
        // the capacity is there, and how full it is.
        let capacity = match &planned {
            Ok(p)
                if p.live
                    .cluster
                    .as_ref()
                    .is_some_and(|c| c.status == ClusterStatus::Active) =>
            {
                crate::aws::ecs::cluster_capacity(&session.clients.ecs, &desired.cluster.name)
                    .await
                    .ok()
            }
            _ => None,
        };
        session.close().await?;
        let planned = planned?;
        let (live, plan) = (&planned.live, &planned.plan);
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({"live": live, "plan": plan}))?
            );
            return Ok(ExitCode::SUCCESS);
        }
        let mut out = String::new();
        let cluster = live
            .cluster
            .as_ref()
            .map(|c| c.status.as_str())
            .unwrap_or("MISSING");
        let _ = writeln!(out, "ECS cluster {}: {cluster}", desired.cluster.name);
        // The stamp of the run holding the environment's lock (`<run id> <user@host>`).
        if let Some(holder) = live
            .cluster
            .as_ref()
            .and_then(|c| c.tags.get(crate::model::tag::LOCKED_BY))
        {
            let _ = writeln!(out, "  in use by run {holder}");
        }
        if let Some(instances) = &capacity {
            let _ = writeln!(out, "  {}", capacity_line(instances));
        }
        if let Some(provider) = desired.cluster.capacity.strategy_provider() {
            let state = live
                .capacity_providers
                .get(provider)
                .map(|p| p.status.as_str())
                .unwrap_or("MISSING");
            let _ = writeln!(out, "  capacity provider {provider}: {state}");
        }
        let _ = writeln!(
            out,
            "  {:<32} {:>9}  {:<40} {:<34} drift",
            "service", "running", "deployment", "revision"
        );
        let mut names: Vec<&String> = desired.services.keys().collect();
        names.extend(
            live.services
                .keys()
                .filter(|n| !desired.services.contains_key(*n)),
        );
        for name in names {
            let k = ResourceId::service(name);
            match live.services.get(name) {
                Some(s) => {
                    let primary = s
                        .deployments
                        .iter()
                        .find(|d| d.status == DeploymentStatus::Primary);
                    let deployment = primary
                        .map(|d| format!("{} {}", d.id, d.rollout_state))
                        .unwrap_or_default();
                    let revision = envctl_aws_model::arn::resource_name(&s.task_definition);
                    let _ = writeln!(
                        out,
                        "  {name:<32} {:>4}/{:<4}  {deployment:<40} {revision:<34} {}",
                        s.running_count,
                        s.desired_count,
                        parked_or_drift(live, plan, &k)
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "  {name:<32} {:>9}  {:<40} {:<34} {}",
                        "-",
                        "MISSING",
                        "",
                        drift(plan, &k)
                    );
                }
            }
        }
        for (k, c) in &desired.kafka {
            match live.kafka.get(&c.name) {
                Some(l) => {
                    let _ = writeln!(
                        out,
                        "MSK {} ({k}): {} {} x{}, Kafka {}, {} GiB, configuration revision {}  {}",
                        l.name,
                        l.state,
                        l.broker_type,
                        l.brokers,
                        l.kafka_version,
                        l.storage_gb,
                        l.configuration_revision
                            .map(|r| r.to_string())
                            .unwrap_or_else(|| "-".into()),
                        drift(plan, &ResourceId::kafka_cluster(k))
                    );
                }
                None => {
                    let _ = writeln!(out, "MSK {} ({k}): MISSING", c.name);
                }
            }
        }
        if let Some(db) = &desired.db {
            for (role, inst) in std::iter::once(("writer", &db.writer))
                .chain(db.readers.iter().map(|r| ("reader", r)))
            {
                match live.db_instances.get(&inst.identifier) {
                    Some(l) => {
                        let _ = writeln!(
                            out,
                            "RDS {} ({role}): {} {} {}  {}",
                            l.identifier,
                            l.status,
                            l.class,
                            l.engine_version,
                            parked_or_drift(live, plan, &ResourceId::db_instance(&inst.identifier))
                        );
                    }
                    None => {
                        let _ = writeln!(out, "RDS {} ({role}): MISSING", inst.identifier);
                    }
                }
            }
        }
        if let Some(parked) = crate::park::status_summary(&desired, live) {
            let _ = write!(out, "\n{parked}");
        }
        let changes = plan
            .changes()
            .filter(|a| !crate::park::explained_by_parking(live, a))
            .count();
        let _ = writeln!(
            out,
            "\n{}",
            if changes == 0 {
                "In sync with the spec.".to_string()
            } else {
                format!("{changes} resources differ from the spec: `envctl plan` shows how.")
            }
        );
        // A broken resource is not a matter of taste: CI must not pass over it.
        let unhealthy: Vec<String> = plan
            .changes()
            .filter(|a| {
                a.changes
                    .iter()
                    .any(|c| c.field == crate::plan::HEALTH_FIELD)
            })
            .map(|a| a.id.to_string())
            .collect();
        if !unhealthy.is_empty() {
            let _ = writeln!(out, "Unhealthy: {}.", unhealthy.join(", "));
        }
        print!("{out}");
        Ok(if unhealthy.is_empty() {
            ExitCode::SUCCESS
        } else {
            common::exit(2)
        })
    })
}

#[cfg(test)]
mod capacity_tests {
    use super::capacity_line;
    use crate::aws::ecs::InstanceCapacity;

    #[test]
    fn capacity_sums_registered_and_reserved_over_the_instances() {
        let instance = |remaining_cpu, remaining_memory| InstanceCapacity {
            arn: "arn".into(),
            status: "ACTIVE".into(),
            zone: Some("us-east-1a".into()),
            registered_cpu: 8192,
            registered_memory: 32256,
            remaining_cpu,
            remaining_memory,
            ports_in_use: Default::default(),
        };
        let line = capacity_line(&[instance(8192, 32256), instance(6144, 28256)]);
        assert_eq!(
            line,
            "2 container instances; CPU reserved 2048 of 16384 units, memory reserved 4000 of 64512 MiB"
        );
    }
}
