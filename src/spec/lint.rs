//! Semantic checks of an environment: things that parse but would fail or mislead in AWS.
//! Every check has a stable code, documented in docs/lints.md.
use super::catalog::{self, InstanceSize};
use super::decode::{At, suggest};
use super::diagnostic::{Diagnostic, Diagnostics};
use super::env::{EnvSpec, KafkaCluster, MetadataMode, Service};
use super::source::Span;

/// Runs every lint over a decoded environment.
pub fn lint_env(spec: &EnvSpec) -> Diagnostics {
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
    if let Some(instance) = instance {
        check_capacity(spec, instance, &mut out);
    }
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
    let it = &spec.ecs.capacity.instance_type;
    let size = catalog::ec2_instance(&it.value);
    if size.is_none() {
        out.push(unknown_choice(
            "unknown-instance-type",
            it,
            "EC2 instance type",
            &catalog::ec2_instance_names(),
        ));
    }
    size
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
        let r = k
            .properties
            .get("default.replication.factor")
            .and_then(|r| r.value.0.parse::<f64>().ok())
            .unwrap_or(3.0)
            .max(1.0);
        // Report 003: t_storage = t_cluster / brokers * r, so the cluster can take at most
        // max(t_storage) * brokers / r.
        let limit = t.storage_mb_s.value * f64::from(brokers) / r;
        if t.cluster_mb_s.value > limit {
            out.push(
                Diagnostic::error(
                    "kafka-storage-throughput",
                    t.cluster_mb_s.span,
                    format!(
                        "{}: {} MB/s exceeds what the brokers' storage can absorb: {} MB/s x {brokers} brokers / replication {r} = {limit:.0} MB/s",
                        k.name.value, t.cluster_mb_s.value, t.storage_mb_s.value
                    ),
                )
                .with_hint("add brokers, faster storage, or lower the replication factor"),
            );
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

/// The cluster must hold every task's reservation, plus room to start the replacement tasks
/// of the largest service during a rolling deployment (ECS defaults: minimumHealthyPercent
/// 100, maximumPercent 200, so new tasks start before old ones stop).
fn check_capacity(spec: &EnvSpec, instance: InstanceSize, out: &mut Diagnostics) {
    let instances = spec.ecs.capacity.instances.value;
    let mem_total = u64::from(instance.task_memory_mib()) * u64::from(instances);
    let cpu_total = u64::from(instance.cpu_units()) * u64::from(instances);
    let footprint = |s: &Service| {
        let mem = s.memory.soft.as_ref().unwrap_or(&s.memory.hard).value;
        (
            u64::from(mem) * u64::from(s.count.value),
            u64::from(s.cpu.value) * u64::from(s.count.value),
        )
    };
    let (mem_used, cpu_used) = spec
        .services
        .values()
        .map(footprint)
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let span: Span = spec.ecs.capacity.instances.span;
    let it = &spec.ecs.capacity.instance_type.value;
    if mem_used > mem_total || cpu_used > cpu_total {
        out.push(
            Diagnostic::error(
                "capacity-exceeded",
                span,
                format!(
                    "services reserve {mem_used} MiB and {cpu_used} CPU units; {instances} x {it} offer {mem_total} MiB and {cpu_total} units"
                ),
            )
            .with_hint("add instances, a larger instance type, or lower soft limits and CPU"),
        );
        return;
    }
    let largest = spec
        .services
        .values()
        .map(|s| (footprint(s), &s.name.value))
        .max_by_key(|((m, _), _)| *m);
    if let Some(((mem, cpu), name)) = largest
        && (mem_used + mem > mem_total || cpu_used + cpu > cpu_total)
    {
        out.push(
            Diagnostic::warning(
                "capacity-rolling-headroom",
                span,
                format!(
                    "a rolling deployment of {name} needs {mem} MiB and {cpu} CPU units more than the {} MiB and {} units left free",
                    mem_total - mem_used,
                    cpu_total - cpu_used
                ),
            )
            .with_hint("add an instance, or deploy with minimumHealthyPercent below 100"),
        );
    }
}
