//! What an environment costs per day running and parked, and so what parking saves: one
//! computation that `park`, `status` and docs/park.md show the same way (the docs test
//! compares the doc's lines with what the park walk prints).
//!
//! Each priced thing is one line: what it is, how many of which type, the hourly price from
//! the shipped table (`park::prices`, whose page each line names) and whether parking stops
//! its billing. Parking stops the DB instances RDS can stop and, on ECS Managed Instances,
//! the instances the provider launched for the tasks (with no task left it terminates them;
//! it has no instance minimum: docs/aws-behaviour.md, "Import and parking"). MSK brokers,
//! DB instances RDS cannot stop and container instances registered by something else keep
//! billing. Storage is billed either way and is not counted.
use std::collections::BTreeSet;
use std::fmt::Write as _;

use envctl_aws_model::placement;

use super::prices;
use crate::model::live::{LiveState, owned_by};
use crate::model::{ClusterCapacity, DesiredState};

/// Whether parking stops a line's billing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhileParked {
    /// Not billed while parked: what parking saves.
    Saved,
    /// Billed while parked too.
    Running,
}

/// One priced thing of the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct CostLine {
    /// "rds/instance/qcp1-db", "MSK ptf-KRaft-mode", ...
    pub what: String,
    pub count: u32,
    /// The instance type, class or broker type.
    pub kind: String,
    /// USD per hour of one, from the price table; `None`: the table has no price for `kind`.
    pub hourly: Option<f64>,
    /// The page the price comes from.
    pub source: &'static str,
    pub while_parked: WhileParked,
    /// Why it is saved or keeps running.
    pub why: String,
}

impl CostLine {
    /// USD per day of the line, if priced.
    pub fn per_day(&self) -> Option<f64> {
        self.hourly.map(|h| h * 24.0 * f64::from(self.count))
    }
}

/// The environment's money per day, line by line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParkCost {
    pub lines: Vec<CostLine>,
    /// Capacity envctl cannot price (a capacity provider that is not envctl's).
    pub notes: Vec<String>,
}

impl ParkCost {
    fn sum(&self, keep: impl Fn(&CostLine) -> bool) -> f64 {
        self.lines
            .iter()
            .filter(|l| keep(l))
            .filter_map(CostLine::per_day)
            .sum()
    }

    /// USD per day while the environment runs (everything priced).
    pub fn running(&self) -> f64 {
        self.sum(|_| true)
    }

    /// USD per day while parked.
    pub fn parked(&self) -> f64 {
        self.sum(|l| l.while_parked == WhileParked::Running)
    }

    /// USD per day parking saves.
    pub fn saved(&self) -> f64 {
        self.sum(|l| l.while_parked == WhileParked::Saved)
    }

    /// Types without a price in the table.
    pub fn unpriced(&self) -> BTreeSet<&str> {
        self.lines
            .iter()
            .filter(|l| l.hourly.is_none())
            .map(|l| l.kind.as_str())
            .collect()
    }

    /// The money lines `park` and `status` print (and docs/park.md shows).
    pub fn render(&self) -> String {
        let mut out = String::from(
            "Money per day, from envctl's on-demand price table (us-east-1; docs/park.md, \"What parking saves\"):\n",
        );
        let width = self.lines.iter().map(|l| l.what.len()).max().unwrap_or(0);
        for l in &self.lines {
            let state = match l.while_parked {
                WhileParked::Saved => "saved  ",
                WhileParked::Running => "running",
            };
            let amount = match (l.hourly, l.per_day()) {
                (Some(h), Some(d)) => format!("at ${h}/h = ${d:.2}/day"),
                _ => "no price in envctl's table".to_string(),
            };
            let _ = writeln!(
                out,
                "  {state}  {:<width$}  {} x {} {amount}: {} ({})",
                l.what, l.count, l.kind, l.why, l.source
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "  {note}");
        }
        let _ = write!(
            out,
            "Running: about ${:.0}/day; parked: about ${:.0}/day; parking saves about ${:.0}/day. Storage (EBS, RDS, MSK) is billed either way and is not counted.",
            self.running(),
            self.parked(),
            self.saved()
        );
        let unpriced = self.unpriced();
        if !unpriced.is_empty() {
            let _ = write!(
                out,
                " No price in envctl's table for: {} (not counted).",
                unpriced.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
        out
    }
}

/// The tasks the spec runs, and the instances of `instance_type` a Managed Instances
/// provider launches for them: the fewest that hold every task (CPU, memory, one network
/// interface per awsvpc task), placed as the capacity lint and the sandbox place them; at
/// most `max`. `None` when envctl does not know the type's size.
pub fn managed_fleet(desired: &DesiredState, instance_type: &str, max: u32) -> Option<(u32, u32)> {
    let size = crate::spec::catalog::ec2_instance(instance_type)?;
    let needs = crate::model::task_needs(desired);
    let counts: Vec<(&String, u32)> = desired
        .services
        .iter()
        .map(|(name, s)| (name, s.desired_count))
        .collect();
    let tasks: u32 = counts.iter().map(|(_, n)| n).sum();
    let order = placement::packing_order(
        counts
            .iter()
            .filter_map(|(name, n)| needs.get(*name).map(|t| (*name, t, *n))),
    );
    let slots = envctl_aws_model::awsvpc_task_slots(instance_type);
    let fits = |n: u32| {
        let mut fleet: Vec<_> = placement::uniform_fleet(
            n,
            desired.subnets.len(),
            size.cpu_units(),
            size.task_memory_mib(),
        )
        .into_iter()
        .map(|ci| ci.with_task_interfaces(slots))
        .collect();
        order.iter().all(|(_, task, count)| {
            let mut spread = Default::default();
            placement::place(&mut fleet, task, *count, &mut spread)
                .unplaced
                .is_empty()
        })
    };
    let instances = if tasks == 0 {
        0
    } else {
        (1..=max).find(|n| fits(*n)).unwrap_or(max)
    };
    Some((instances, tasks))
}

/// What park does with the cluster's capacity, in one line of its plan.
pub fn capacity_step(desired: &DesiredState) -> String {
    let cluster = &desired.cluster;
    match &cluster.capacity {
        ClusterCapacity::ManagedInstances(m) => {
            let launched = managed_fleet(desired, &cluster.instance_type, m.max)
                .map(|(n, tasks)| format!("{n} x {} for the {tasks} tasks", cluster.instance_type))
                .unwrap_or_else(|| format!("its {}", cluster.instance_type));
            format!(
                "  scale in  ECS Managed Instances provider {} (envctl's): with no task left it terminates its instances ({launched}); unpark's tasks make it launch them again",
                m.provider
            )
        }
        ClusterCapacity::Provider { name } => format!(
            "  keep  ECS capacity provider {name}: not envctl's; its instances scale as its own settings say"
        ),
        ClusterCapacity::Instances => format!(
            "  keep  ECS container instances ({} x {}): registered by something else, which envctl neither starts nor stops; idle while parked, still billed",
            cluster.instances, cluster.instance_type
        ),
    }
}

/// The environment's money per day: `stopped` are the DB instances parking stops (`park`);
/// those already stopped or stopping count as stopped too (`status`, or parking again).
pub fn park_cost(desired: &DesiredState, live: &LiveState, stopped: &[String]) -> ParkCost {
    let mut cost = ParkCost::default();
    for db in live
        .db_instances
        .values()
        .filter(|d| owned_by(&d.tags, &desired.env))
    {
        let saved = stopped.contains(&db.identifier)
            || db.status == envctl_aws_model::status::DbInstanceStatus::Stopped
            || db.status == envctl_aws_model::status::DbInstanceStatus::Stopping;
        cost.lines.push(CostLine {
            what: format!("rds/instance/{}", db.identifier),
            count: 1,
            kind: db.class.clone(),
            hourly: prices::rds_hourly(&db.class),
            source: prices::RDS_SOURCE,
            while_parked: if saved {
                WhileParked::Saved
            } else {
                WhileParked::Running
            },
            why: if saved {
                "stopped".into()
            } else if super::unstoppable(db, live).is_some() {
                "a read replica or its source: RDS cannot stop it".into()
            } else {
                format!("{}: not stopped", db.status)
            },
        });
    }
    let cluster = &desired.cluster;
    match &cluster.capacity {
        ClusterCapacity::ManagedInstances(m) => {
            if let Some((n, tasks)) = managed_fleet(desired, &cluster.instance_type, m.max) {
                cost.lines.push(CostLine {
                    what: format!("ecs/capacity-provider/{}", m.provider),
                    count: n,
                    kind: cluster.instance_type.clone(),
                    hourly: prices::ec2_hourly(&cluster.instance_type),
                    source: prices::EC2_SOURCE,
                    while_parked: WhileParked::Saved,
                    why: format!("launched for the {tasks} tasks, terminated with none left"),
                });
            }
        }
        ClusterCapacity::Instances => cost.lines.push(CostLine {
            what: format!("ecs/cluster/{} instances", cluster.name),
            count: cluster.instances,
            kind: cluster.instance_type.clone(),
            hourly: prices::ec2_hourly(&cluster.instance_type),
            source: prices::EC2_SOURCE,
            while_parked: WhileParked::Running,
            why: "registered by something else; envctl does not stop them".into(),
        }),
        ClusterCapacity::Provider { name } => cost.notes.push(format!(
            "not counted: capacity provider {name}'s instances (not envctl's; they scale as its own settings say)"
        )),
    }
    for k in live
        .kafka
        .values()
        .filter(|k| owned_by(&k.tags, &desired.env))
    {
        cost.lines.push(CostLine {
            what: format!("msk/{}", k.name),
            count: k.brokers,
            kind: k.broker_type.clone(),
            hourly: prices::msk_hourly(&k.broker_type),
            source: prices::MSK_SOURCE,
            while_parked: WhileParked::Running,
            why: "MSK clusters cannot be stopped".into(),
        });
    }
    cost
}
