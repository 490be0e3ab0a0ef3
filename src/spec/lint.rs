//! Semantic checks of an environment: things that parse but would fail or mislead in AWS.
//! Every check has a stable code, documented in docs/lints.md.
use super::catalog::{self, InstanceSize};
use super::decode::{At, suggest};
use super::diagnostic::{Diagnostic, Diagnostics};
use super::env::{CapacityKind, EnvSpec, KafkaCluster, MetadataMode, Service};
use super::source::Span;
use envctl_aws_model::placement::{self, Shortfall, TaskNeeds, Unplaced};
use envctl_aws_model::sizing::{SizingError, StorageSizing};
use std::collections::BTreeMap;

/// Every lint but the capacity check, which wants the rendered task definitions
/// ([`check_capacity`]).
pub fn lint_env_base(spec: &EnvSpec) -> Diagnostics {
    let mut out = Diagnostics::new();
    let instance = check_instance_type(spec, &mut out);
    for service in spec.services.values() {
        check_service(spec, service, instance, &mut out);
    }
    for cluster in spec.kafka.values() {
        check_kafka(spec, cluster, &mut out);
    }
    check_rds(spec, &mut out);
    check_unique_names(spec, &mut out);
    out
}

/// Every lint, the capacity check sizing tasks from the spec alone (no host ports: those
/// need the rendered task definitions, which [`lint_env_base`] callers add).
pub fn lint_env(spec: &EnvSpec) -> Diagnostics {
    let mut out = lint_env_base(spec);
    out.extend(check_capacity(spec, &spec_task_needs(spec)));
    out
}

fn unknown_choice(
    code: &'static str,
    value: &At<String>,
    what: &str,
    known: &[String],
) -> Diagnostic {
    let diag = Diagnostic::error(
        code,
        value.span,
        format!("unknown {what} `{}`", value.value),
    );
    match suggest(&value.value, known.iter().map(String::as_str)) {
        Some(best) => diag.with_hint(format!("did you mean `{best}`?")),
        None => diag.with_hint(format!(
            "known {what}s include {}",
            known.iter().take(8).cloned().collect::<Vec<_>>().join(", ")
        )),
    }
}

fn check_instance_type(spec: &EnvSpec, out: &mut Diagnostics) -> Option<InstanceSize> {
    let capacity = &spec.ecs.capacity;
    // With managed instances `instance_type` is the first of `instance_types`: check them all.
    let listed: Vec<&At<String>> = match &capacity.managed_instances {
        Some(m) => m.instance_types.iter().collect(),
        None => vec![&capacity.instance_type],
    };
    for it in listed {
        if catalog::ec2_instance(&it.value).is_none() {
            out.push(unknown_choice(
                "unknown-instance-type",
                it,
                "EC2 instance type",
                &catalog::ec2_instance_names(),
            ));
        }
    }
    catalog::ec2_instance(&capacity.instance_type.value)
}

/// Memory the JVM can use at most: heap, metaspace and native overhead.
pub fn jvm_footprint_mib(service: &Service) -> Option<u32> {
    let jvm = service.jvm.as_ref()?;
    let metaspace = jvm
        .max_metaspace
        .as_ref()
        .or(jvm.metaspace.as_ref())
        .map(|m| m.value)
        .unwrap_or(0);
    Some(jvm.xmx.value + metaspace + jvm.overhead.value)
}

fn check_service(
    spec: &EnvSpec,
    s: &Service,
    instance: Option<InstanceSize>,
    out: &mut Diagnostics,
) {
    let hard = &s.memory.hard;
    if let Some(soft) = &s.memory.soft
        && soft.value > hard.value
    {
        out.push(
            Diagnostic::error(
                "soft-above-hard",
                soft.span,
                format!(
                    "{}: soft memory limit {} MiB is above the hard limit {} MiB",
                    s.name.value, soft.value, hard.value
                ),
            )
            .with_note(hard.span, "hard limit set here")
            .with_hint("ECS rejects memoryReservation greater than memory"),
        );
    }
    if let (Some(jvm), Some(footprint)) = (&s.jvm, jvm_footprint_mib(s)) {
        let parts = format!(
            "Xmx {} + metaspace {} + overhead {} = {footprint} MiB",
            jvm.xmx.value,
            footprint - jvm.xmx.value - jvm.overhead.value,
            jvm.overhead.value
        );
        if footprint > hard.value {
            out.push(
                Diagnostic::error(
                    "jvm-exceeds-hard-limit",
                    jvm.xmx.span,
                    format!(
                        "{}: the JVM can use {parts}, more than the hard limit of {} MiB: the container will be OOM-killed under load",
                        s.name.value, hard.value
                    ),
                )
                .with_note(hard.span, "hard limit set here")
                .with_hint(format!(
                    "lower xmx to at most {} or raise memory.hard to at least {footprint}",
                    hard.value.saturating_sub(footprint - jvm.xmx.value)
                )),
            );
        } else if let Some(soft) = &s.memory.soft
            && footprint > soft.value
        {
            out.push(
                Diagnostic::warning(
                    "jvm-exceeds-soft-limit",
                    jvm.xmx.span,
                    format!(
                        "{}: the JVM can use {parts}, more than the soft limit of {} MiB: placement reserves less than the task may use",
                        s.name.value, soft.value
                    ),
                )
                .with_note(soft.span, "soft limit set here")
                .with_hint(format!("raise memory.soft to at least {footprint}")),
            );
        }
        if jvm.max_metaspace.is_none() {
            out.push(
                Diagnostic::warning(
                    "metaspace-unbounded",
                    jvm.xmx.span,
                    format!(
                        "{}: no max_metaspace: metaspace can grow until the container is killed",
                        s.name.value
                    ),
                )
                .with_hint("set jvm.max_metaspace (MaxMetaspaceSize), e.g. 512"),
            );
        }
    }
    if let Some(instance) = instance {
        if hard.value > instance.task_memory_mib() {
            out.push(Diagnostic::error(
                "task-exceeds-instance",
                hard.span,
                format!(
                    "{}: hard limit {} MiB does not fit on one {} ({} MiB for tasks)",
                    s.name.value,
                    hard.value,
                    spec.ecs.capacity.instance_type.value,
                    instance.task_memory_mib()
                ),
            ));
        }
        if s.cpu.value > instance.cpu_units() {
            out.push(Diagnostic::error(
                "task-exceeds-instance",
                s.cpu.span,
                format!(
                    "{}: {} CPU units do not fit on one {} ({} units)",
                    s.name.value,
                    s.cpu.value,
                    spec.ecs.capacity.instance_type.value,
                    instance.cpu_units()
                ),
            ));
        }
    }
    if s.rw_split.value {
        let readers = spec.rds.as_ref().map(|r| r.readers.len()).unwrap_or(0);
        if readers == 0 {
            out.push(
                Diagnostic::error(
                    "rw-split-without-reader",
                    s.rw_split.span,
                    format!(
                        "{}: rw_split is on but the environment has no RDS reader",
                        s.name.value
                    ),
                )
                .with_hint(
                    "add rds.readers, or set rw_split: false (only the writer pool is used then)",
                ),
            );
        }
    }
    if let Some(key) = &s.kafka
        && !spec.kafka.contains_key(&key.value)
    {
        let known: Vec<String> = spec.kafka.keys().cloned().collect();
        let diag = Diagnostic::error(
            "unknown-reference",
            key.span,
            format!(
                "{}: no Kafka cluster `{}` under `kafka:`",
                s.name.value, key.value
            ),
        );
        out.push(
            match suggest(&key.value, known.iter().map(String::as_str)) {
                Some(best) => diag.with_hint(format!("did you mean `{best}`?")),
                None if known.is_empty() => {
                    diag.with_hint("this environment declares no Kafka clusters")
                }
                None => diag.with_hint(format!("clusters: {}", known.join(", "))),
            },
        );
    }
    super::secrets::check_service(s, out);
}

fn check_kafka(spec: &EnvSpec, k: &KafkaCluster, out: &mut Diagnostics) {
    let types = catalog::msk_broker_types();
    if !types.contains(&k.broker_type.value) {
        out.push(unknown_choice(
            "unknown-instance-type",
            &k.broker_type,
            "MSK broker type",
            &types,
        ));
    }
    let brokers = k.brokers.value;
    let zones = k.zones.value;
    if zones == 0 || brokers == 0 || !brokers.is_multiple_of(zones) {
        out.push(
            Diagnostic::error(
                "brokers-not-multiple-of-zones",
                k.brokers.span,
                format!(
                    "{}: {brokers} brokers cannot be spread evenly over {zones} zones",
                    k.name.value
                ),
            )
            .with_hint("MSK needs the broker count to be a positive multiple of the zone count"),
        );
    }
    if zones as usize > spec.network.subnets.len() {
        out.push(
            Diagnostic::error(
                "zones-exceed-subnets",
                k.zones.span,
                format!(
                    "{}: {zones} zones need {zones} client subnets, network.subnets has {}",
                    k.name.value,
                    spec.network.subnets.len()
                ),
            )
            .with_hint("add a subnet per zone, or lower zones"),
        );
    }
    if let Some(rf) = k.properties.get("default.replication.factor") {
        match rf.value.0.parse::<u32>() {
            Ok(r) if r > brokers => out.push(
                Diagnostic::error(
                    "replication-factor-exceeds-brokers",
                    rf.span,
                    format!(
                        "{}: default.replication.factor={r} but the cluster has {brokers} brokers: auto-created topics fail",
                        k.name.value
                    ),
                )
                .with_note(k.brokers.span, "broker count set here")
                .with_hint(format!("use at most {brokers}, or add brokers")),
            ),
            Ok(_) => {}
            Err(_) => out.push(Diagnostic::error(
                "invalid-value",
                rf.span,
                format!("default.replication.factor must be a whole number, found `{}`", rf.value),
            )),
        }
        if let (Some(min_isr), Ok(r)) = (
            k.properties.get("min.insync.replicas"),
            rf.value.0.parse::<u32>(),
        ) && let Ok(m) = min_isr.value.0.parse::<u32>()
            && m > r
        {
            out.push(Diagnostic::error(
                "min-isr-exceeds-replication",
                min_isr.span,
                format!("{}: min.insync.replicas={m} is above default.replication.factor={r}: producers with acks=all fail", k.name.value),
            ));
        }
    }
    if let Some(date) = catalog::msk_end_of_support(&k.version.value) {
        let offered = if k.metadata.value == MetadataMode::Kraft {
            catalog::MSK_CREATABLE_KRAFT
        } else {
            catalog::MSK_CREATABLE
        };
        out.push(
            Diagnostic::error(
                "kafka-version-end-of-support",
                k.version.span,
                format!(
                    "{}: MSK ended support for Kafka {} on {date} and creates no new clusters on it",
                    k.name.value, k.version.value
                ),
            )
            .with_hint(format!(
                "use a version MSK creates today: {} (`envctl preflight` lists what the account offers)",
                offered
                    .iter()
                    .map(|v| v.trim_end_matches(".kraft"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
    match catalog::kafka_version(&k.version.value) {
        Some(version) => {
            if k.metadata.value == MetadataMode::Kraft && version < (3, 7) {
                out.push(
                    Diagnostic::error(
                        "kraft-unsupported-version",
                        k.version.span,
                        format!(
                            "{}: MSK offers KRaft from Kafka 3.7, not {}",
                            k.name.value, k.version.value
                        ),
                    )
                    .with_note(k.metadata.span, "KRaft chosen here")
                    .with_hint("use version 3.7.x or later, or metadata: zookeeper"),
                );
            }
            if k.metadata.value == MetadataMode::Zookeeper && version >= (4, 0) {
                out.push(
                    Diagnostic::error(
                        "zookeeper-unsupported-version",
                        k.version.span,
                        format!(
                            "{}: Kafka {} has no ZooKeeper mode",
                            k.name.value, k.version.value
                        ),
                    )
                    .with_hint("use metadata: kraft, or a 3.x version"),
                );
            }
        }
        None => out.push(
            Diagnostic::error(
                "invalid-value",
                k.version.span,
                format!("`{}` is not a Kafka version", k.version.value),
            )
            .with_hint("write the version as MSK names it, e.g. \"2.8.0\" or \"3.7.x\""),
        ),
    }
    if k.version.value.ends_with(".kraft") {
        out.push(
            Diagnostic::error(
                "invalid-value",
                k.version.span,
                format!(
                    "{}: write the version without `.kraft` and set `metadata: kraft`",
                    k.name.value
                ),
            )
            .with_hint("envctl adds the suffix MSK expects"),
        );
    }
    if let Some(t) = &k.throughput {
        // The replication factor the env's topics get unless a workload says otherwise.
        let r = k
            .properties
            .get("default.replication.factor")
            .and_then(|r| r.value.0.parse::<u32>().ok())
            .filter(|&r| r > 0)
            .unwrap_or(3);
        let sizing = StorageSizing {
            storage_mb_s: t.storage_mb_s.value,
            brokers,
            replication_factor: r,
        };
        match sizing.producer_ceiling_mb_s() {
            Ok(limit) if t.cluster_mb_s.value > limit => out.push(
                Diagnostic::error(
                    "kafka-storage-throughput",
                    t.cluster_mb_s.span,
                    format!(
                        "{}: {} MB/s exceeds what the brokers' storage can absorb: {} MB/s x {brokers} brokers / replication {r} = {limit:.0} MB/s",
                        k.name.value, t.cluster_mb_s.value, t.storage_mb_s.value
                    ),
                )
                .with_hint("add brokers, faster storage, or lower the replication factor"),
            ),
            // No brokers and a replication factor above them have their own lints.
            Ok(_) | Err(SizingError::NoBrokers | SizingError::ReplicationAboveBrokers { .. }) => {}
            Err(e) => out.push(Diagnostic::error(
                "kafka-storage-throughput",
                t.storage_mb_s.span,
                format!("{}: no storage ceiling: {e}", k.name.value),
            )),
        }
    }
}

fn check_rds(spec: &EnvSpec, out: &mut Diagnostics) {
    let Some(rds) = &spec.rds else { return };
    let classes = catalog::rds_classes();
    let mut check_class = |c: &At<String>| {
        if !classes.contains(&c.value) {
            out.push(unknown_choice(
                "unknown-instance-type",
                c,
                "RDS instance class",
                &classes,
            ));
        }
    };
    check_class(&rds.writer.class);
    for r in &rds.readers {
        if let Some(c) = &r.class {
            check_class(c);
        }
    }
    if rds.writer.engine_version.is_none()
        && let Some((name, first)) = rds.writer.parameters.iter().next()
    {
        // The group's family must be the instance's (postgres16 for 16.x); without a version
        // RDS picks its newest default, which changes over time.
        out.push(
            Diagnostic::error(
                "parameters-without-engine-version",
                first.span,
                format!(
                    "{}: parameters ({name}, ...) need a parameter group of the instance's family, but engine_version is not set",
                    rds.writer.id.value
                ),
            )
            .with_hint("set rds.writer.engine_version to a major, e.g. \"16\""),
        );
    }
    if let Some(v) = &rds.writer.engine_version {
        let parts: Vec<&str> = v.value.split('.').collect();
        let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        if !(1..=2).contains(&parts.len()) || !parts.iter().all(numeric) {
            out.push(
                Diagnostic::error(
                    "invalid-value",
                    v.span,
                    format!("`{}` is not a postgres engine version", v.value),
                )
                .with_hint(
                    "a major (\"16\": RDS picks its default minor) or a major.minor RDS offers (\"16.8\"; `envctl preflight` lists them)",
                ),
            );
        }
    }
    if let Some(mc) = rds.writer.parameters.get("max_connections")
        && mc.value.0.parse::<u32>().is_err()
    {
        out.push(Diagnostic::error(
            "invalid-value",
            mc.span,
            format!(
                "max_connections must be a whole number, found `{}`",
                mc.value
            ),
        ));
    }
}

fn check_unique_names(spec: &EnvSpec, out: &mut Diagnostics) {
    let mut seen: Vec<&At<String>> = Vec::new();
    let mut names: Vec<&At<String>> = spec.kafka.values().map(|k| &k.name).collect();
    if let Some(rds) = &spec.rds {
        names.push(&rds.writer.id);
        names.extend(rds.readers.iter().map(|r| &r.id));
    }
    for name in names {
        if let Some(first) = seen.iter().find(|s| s.value == name.value) {
            out.push(
                Diagnostic::error(
                    "duplicate-name",
                    name.span,
                    format!("`{}` is used twice", name.value),
                )
                .with_note(first.span, "first used here"),
            );
        } else {
            seen.push(name);
        }
    }
}

/// What each service's task reserves as far as the spec alone tells: CPU and the soft limit
/// (else the hard one). Host ports live in the task-definition template, so they are added
/// by [`check_capacity`]'s callers that rendered it (see `compile`).
pub fn spec_task_needs(spec: &EnvSpec) -> BTreeMap<String, TaskNeeds> {
    spec.services
        .iter()
        .map(|(name, s)| {
            let memory = s.memory.soft.as_ref().unwrap_or(&s.memory.hard).value;
            let needs = TaskNeeds {
                cpu: s.cpu.value,
                memory_mib: memory,
                host_ports: Vec::new(),
                network_interface: false,
            };
            (name.clone(), needs)
        })
        .collect()
}

/// ECS's default `maximumPercent` for services: during a rolling deployment the new tasks
/// start while the old ones still run (Amazon ECS Developer Guide, "Deployment
/// configuration"), so the cluster needs room for `count * (200 - 100) / 100` extra tasks.
const DEFAULT_MAXIMUM_PERCENT: u32 = 200;

/// The outcome of placing every service on a fleet of `instances` instances.
struct Prediction {
    /// (service, unplaced tasks) in placement order.
    unplaced: Vec<(String, Vec<Unplaced>)>,
    /// Services whose rolling deployment cannot place all its new tasks, with the first
    /// reason.
    cannot_roll: Vec<(String, u32, Unplaced)>,
}

/// The services as (name, task, count) in decreasing memory order, the order that packs
/// best: the capacity lint and preflight predict whether a fit exists, not the order in
/// which apply happens to create the services.
pub fn placement_order<'a>(
    spec: &'a EnvSpec,
    tasks: &'a BTreeMap<String, TaskNeeds>,
) -> Vec<(&'a String, &'a TaskNeeds, u32)> {
    placement::packing_order(
        spec.services
            .iter()
            .filter_map(|(name, s)| tasks.get(name).map(|t| (name, t, s.count.value))),
    )
}

/// Places the services as the sandbox does (the shared `placement` model): instances of one
/// type spread over the subnets' zones, services in decreasing memory order (the order that
/// packs best: the lint predicts whether a fit exists). Then checks, one service at a time,
/// that its rolling deployment finds room beside everything else.
fn predict(
    spec: &EnvSpec,
    tasks: &BTreeMap<String, TaskNeeds>,
    size: InstanceSize,
    instances: u32,
) -> Prediction {
    let slots = task_interface_slots(spec);
    let mut fleet: Vec<_> = placement::uniform_fleet(
        instances,
        spec.network.subnets.len(),
        size.cpu_units(),
        size.task_memory_mib(),
    )
    .into_iter()
    .map(|ci| ci.with_task_interfaces(slots))
    .collect();
    let order = placement_order(spec, tasks);
    let mut unplaced = Vec::new();
    let mut spreads: BTreeMap<&String, BTreeMap<String, u32>> = BTreeMap::new();
    for (name, task, count) in &order {
        let spread = spreads.entry(name).or_default();
        let p = placement::place(&mut fleet, task, *count, spread);
        if !p.unplaced.is_empty() {
            unplaced.push(((*name).clone(), p.unplaced));
        }
    }
    let mut cannot_roll = Vec::new();
    if unplaced.is_empty() {
        for (name, task, count) in &order {
            let extra = (count * (DEFAULT_MAXIMUM_PERCENT - 100)).div_ceil(100);
            let mut trial = fleet.clone();
            let mut spread = spreads.get(name).cloned().unwrap_or_default();
            let p = placement::place(&mut trial, task, extra, &mut spread);
            if let Some(first) = p.unplaced.first() {
                cannot_roll.push(((*name).clone(), p.unplaced.len() as u32, first.clone()));
            }
        }
    }
    Prediction {
        unplaced,
        cannot_roll,
    }
}

/// How many `awsvpc` tasks one instance holds, when envctl knows: on Managed Instances
/// each such task gets a network interface of its own and ECS counts them when it places
/// tasks (ECS Developer Guide, "Amazon ECS Managed Instances auto scaling and task
/// placement", ENI density), so an m6i.2xlarge takes three. Instances of the other forms
/// may run with ENI trunking (an account setting envctl does not read), so they are not
/// limited here.
fn task_interface_slots(spec: &EnvSpec) -> Option<u32> {
    (spec.ecs.capacity.kind() == CapacityKind::ManagedInstances)
        .then(|| envctl_aws_model::awsvpc_task_slots(&spec.ecs.capacity.instance_type.value))
        .flatten()
}

/// Instances of the same type needed for `ok`, searched upwards from `from` (bounded: a
/// service that fits on no instance never fits).
fn instances_needed(from: u32, ok: impl Fn(u32) -> bool) -> Option<u32> {
    let limit = from.saturating_mul(4).saturating_add(16);
    (from + 1..=limit).find(|n| ok(*n))
}

fn names(list: &[String]) -> String {
    let shown: Vec<&str> = list.iter().take(5).map(String::as_str).collect();
    match list.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// The cluster must hold every task (CPU, memory and host ports, placed by ECS's default
/// strategy), plus the new tasks of each service's rolling deployment.
pub fn check_capacity(spec: &EnvSpec, tasks: &BTreeMap<String, TaskNeeds>) -> Diagnostics {
    let mut out = Diagnostics::new();
    let Some(size) = catalog::ec2_instance(&spec.ecs.capacity.instance_type.value) else {
        // unknown-instance-type is reported by lint_env.
        return out;
    };
    let instances = spec.ecs.capacity.instances.value;
    let span: Span = spec.ecs.capacity.instances.span;
    let it = &spec.ecs.capacity.instance_type.value;
    let total_tasks: u32 = spec.services.values().map(|s| s.count.value).sum();
    let (mem_used, cpu_used) = spec
        .services
        .iter()
        .filter_map(|(name, s)| tasks.get(name).map(|t| (t, u64::from(s.count.value))))
        .fold((0u64, 0u64), |(m, c), (t, n)| {
            (m + u64::from(t.memory_mib) * n, c + u64::from(t.cpu) * n)
        });
    let mem_total = u64::from(size.task_memory_mib()) * u64::from(instances);
    let cpu_total = u64::from(size.cpu_units()) * u64::from(instances);
    let p = predict(spec, tasks, size, instances);
    if let Some((first, why)) = p.unplaced.first() {
        let missing: usize = p.unplaced.iter().map(|(_, u)| u.len()).sum();
        let services: Vec<String> = p.unplaced.iter().map(|(n, _)| n.clone()).collect();
        let need = instances_needed(instances, |n| {
            predict(spec, tasks, size, n).unplaced.is_empty()
        });
        let reason = why.first().map(|u| u.event(first)).unwrap_or_default();
        let interfaces = match task_interface_slots(spec) {
            Some(slots)
                if p.unplaced
                    .iter()
                    .flat_map(|(_, u)| u)
                    .any(|u| u.reason() == Some(Shortfall::NetworkInterface)) =>
            {
                format!("; awsvpc tasks take a network interface each, {slots} per {it}")
            }
            _ => String::new(),
        };
        out.push(
            Diagnostic::error(
                "capacity-exceeded",
                span,
                format!(
                    "{missing} of {total_tasks} tasks cannot be placed on {instances} x {it} ({}): services reserve {mem_used} MiB and {cpu_used} CPU units, the instances offer {mem_total} MiB and {cpu_total} units{interfaces}",
                    names(&services)
                ),
            )
            .with_hint(match need {
                Some(n) => format!(
                    "all tasks fit on {n} x {it} ({} more), or use a larger instance type or lower soft limits and CPU; ECS would report: {reason}",
                    n - instances
                ),
                None => format!("a task does not fit on any one instance: use a larger instance type; ECS would report: {reason}"),
            }),
        );
        return out;
    }
    if let Some((first, _, why)) = p.cannot_roll.first() {
        let services: Vec<String> = p.cannot_roll.iter().map(|(n, _, _)| n.clone()).collect();
        let ports = p
            .cannot_roll
            .iter()
            .any(|(_, _, u)| u.reason() == Some(Shortfall::Ports));
        let need = instances_needed(instances, |n| {
            let q = predict(spec, tasks, size, n);
            q.unplaced.is_empty() && q.cannot_roll.is_empty()
        });
        let diag = Diagnostic::warning(
            "capacity-rolling-headroom",
            span,
            format!(
                "{} of {} services cannot roll at maximumPercent {DEFAULT_MAXIMUM_PERCENT} (the new tasks start beside the old ones) on {instances} x {it}: {}",
                services.len(),
                spec.services.len(),
                names(&services)
            ),
        );
        let fix = if ports {
            "with fixed host ports, deploy with minimumHealthyPercent 50 and maximumPercent 100 (old tasks stop first)".to_string()
        } else {
            "deploy with minimumHealthyPercent below 100".to_string()
        };
        let fix = match need {
            Some(n) => format!(
                "{n} x {it} ({} more) leave room for every rolling deployment, or {fix}",
                n - instances
            ),
            None => fix,
        };
        out.push(diag.with_hint(format!("{fix}; ECS would report: {}", why.event(first))));
    }
    out
}

/// How far ahead of an announced end of support `validate` and `preflight` start warning.
pub const KAFKA_SUPPORT_WARNING_DAYS: i64 = 180;

/// Warnings for Kafka versions whose MSK end of support is within
/// [`KAFKA_SUPPORT_WARNING_DAYS`] of `today` (`YYYY-MM-DD`) or past: MSK then upgrades the
/// cluster whenever it likes, without notice (a plan shows it as converged, with a note),
/// and phases out creating clusters on it. Kept apart from [`lint_env`], which is pure: the
/// commands pass the date.
pub fn kafka_support_warnings(spec: &EnvSpec, today: &str) -> Diagnostics {
    let mut out = Diagnostics::default();
    let Some(today_days) = iso_days(today) else {
        return out;
    };
    for k in spec.kafka.values() {
        let Some(date) = catalog::msk_support_ends(&k.version.value) else {
            continue;
        };
        let Some(end) = iso_days(date) else {
            continue;
        };
        let left = end - today_days;
        if left > KAFKA_SUPPORT_WARNING_DAYS {
            continue;
        }
        let when = if left > 0 {
            format!("ends on {date}, in {left} days")
        } else {
            format!("ended on {date}")
        };
        out.push(
            Diagnostic::warning(
                "kafka-version-support-ends",
                k.version.span,
                format!(
                    "{}: MSK's support for Kafka {} {when}: after it MSK upgrades the cluster at any time, without notice, and phases out creating clusters on it",
                    k.name.value, k.version.value
                ),
            )
            .with_hint("pin a version MSK supports without an end date (3.8.x is its recommended one); `envctl preflight` lists what the account offers"),
        );
    }
    out
}

fn iso_days(date: &str) -> Option<i64> {
    let mut parts = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    Some(envctl_aws_model::days_from_civil(y, m, d))
}
