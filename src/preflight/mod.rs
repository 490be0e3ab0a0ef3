//! `envctl preflight`: read-only checks of an env against what the account offers, before
//! anything is created. The offer is read by `account::offer`; the checks here are pure, and
//! every failure points at the env line it comes from and says what would be valid.
use envctl_aws_model::status::ContainerInstanceStatus;
use std::collections::BTreeMap;

use envctl_aws_model::placement::{self, ContainerInstance, Shortfall, Unplaced};

use crate::model::live::InstanceCapacity;
use crate::model::{DesiredState, parameter_family};
use crate::plan::{Action, Create, Op, Plan, ResourceId};
use crate::spec::catalog;
use crate::spec::decode::At;
use crate::spec::diagnostic::{Diagnostic, Diagnostics};
use crate::spec::env::{CapacityKind, EnvSpec};
use crate::spec::lint::placement_order;

/// An RDS engine version the Region offers (DescribeDBEngineVersions).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOffer {
    pub version: String,
    pub family: String,
    /// The minor RDS picks for a request naming only the major.
    pub default: bool,
}

/// What the account offers, as read; `None` where nothing was asked (no Kafka, no RDS).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offer {
    /// ListKafkaVersions, ACTIVE only.
    pub kafka_versions: Option<Vec<String>>,
    /// DescribeDBEngineVersions for the env's engine, available only.
    pub engine_versions: Option<Vec<EngineOffer>>,
    /// DescribeOrderableDBInstanceOptions: classes orderable for the resolved version.
    pub orderable_classes: Option<Vec<String>>,
    /// ListContainerInstances + DescribeContainerInstances of the env's cluster, for the
    /// `instances` capacity form when the cluster exists.
    pub container_instances: Option<Vec<InstanceCapacity>>,
    /// Tasks the env's services already run in that cluster (DescribeServices
    /// `runningCount`), read with the instances: their reservations are already out of the
    /// instances' remaining resources, so only the tasks still to start are placed.
    pub running_tasks: BTreeMap<String, u32>,
}

/// MSK's EBS volume per broker, GiB (MSK Developer Guide, "Broker storage").
pub const MSK_MAX_VOLUME_GIB: u32 = 16_384;

impl Offer {
    /// The version RDS would create for what the env asks: a full version only when it is
    /// offered, a major (or nothing) as that major's (or the newest) default minor.
    pub fn resolve_engine_version(&self, requested: Option<&str>) -> Option<&EngineOffer> {
        let offered = self.engine_versions.as_ref()?;
        match requested {
            Some(v) if v.contains('.') => offered.iter().find(|o| o.version == v),
            Some(major) => offered
                .iter()
                .filter(|o| o.default)
                .find(|o| o.version.split('.').next() == Some(major)),
            None => offered
                .iter()
                .filter(|o| o.default)
                .max_by_key(|o| version_key(&o.version)),
        }
    }
}

fn version_key(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The part of the env a plan creates data stores for: the MSK clusters it creates (or
/// replaces) and the database when it creates (or replaces) an instance; `None` when it
/// creates neither. `plan` and `apply` run preflight on this part only, before any
/// mutating call: the offer is read for what is about to be created, and a store that
/// already runs is not held to what the account offers for new ones today.
pub fn creating(plan: &Plan, desired: &DesiredState) -> Option<DesiredState> {
    let creates = |a: &Action, what: fn(&Create) -> bool| match &a.op {
        Op::Create(c) => what(c),
        Op::Replace { create, .. } => what(create),
        _ => false,
    };
    let kafka_keys: Vec<&str> = plan
        .actions
        .iter()
        .filter(|a| creates(a, |c| matches!(c, Create::KafkaCluster { .. })))
        .filter_map(|a| match &a.id {
            ResourceId::KafkaCluster { key } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    let db = plan
        .actions
        .iter()
        .any(|a| creates(a, |c| matches!(c, Create::DbInstance { .. })));
    if kafka_keys.is_empty() && !db {
        return None;
    }
    let mut scoped = desired.clone();
    scoped
        .kafka
        .retain(|key, _| kafka_keys.contains(&key.as_str()));
    if !db {
        scoped.db = None;
    }
    Some(scoped)
}

/// Every check; errors and warnings point at the env.
pub fn check(spec: &EnvSpec, desired: &DesiredState, offer: &Offer) -> Diagnostics {
    let mut out = Diagnostics::new();
    check_kafka(spec, desired, offer, &mut out);
    check_rds(spec, offer, &mut out);
    check_subnets(spec, &mut out);
    check_arns(spec, &mut out);
    check_registered_capacity(spec, desired, offer, &mut out);
    out
}

fn check_kafka(spec: &EnvSpec, desired: &DesiredState, offer: &Offer, out: &mut Diagnostics) {
    for (key, k) in &spec.kafka {
        let Some(cluster) = desired.kafka.get(key) else {
            continue;
        };
        if let Some(active) = &offer.kafka_versions
            && !active.contains(&cluster.kafka_version)
        {
            let kraft = cluster.kraft;
            let same_mode: Vec<&str> = active
                .iter()
                .filter(|v| v.ends_with(".kraft") == kraft)
                .map(|v| v.trim_end_matches(".kraft"))
                .collect();
            out.push(
                Diagnostic::error(
                    "preflight-kafka-version",
                    k.version.span,
                    format!(
                        "{}: MSK in {} does not offer Kafka {} ({} mode)",
                        k.name.value,
                        desired.region,
                        k.version.value,
                        if kraft { "KRaft" } else { "ZooKeeper" }
                    ),
                )
                .with_hint(format!("versions offered: {}", same_mode.join(", "))),
            );
        }
        if k.storage_gb.value == 0 || k.storage_gb.value > MSK_MAX_VOLUME_GIB {
            out.push(
                Diagnostic::error(
                    "preflight-kafka-storage",
                    k.storage_gb.span,
                    format!(
                        "{}: {} GiB per broker is outside what MSK provisions",
                        k.name.value, k.storage_gb.value
                    ),
                )
                .with_hint(format!("use 1 to {MSK_MAX_VOLUME_GIB} GiB")),
            );
        }
        let types = catalog::msk_broker_types();
        if !types.contains(&k.broker_type.value) {
            out.push(
                Diagnostic::error(
                    "preflight-broker-type",
                    k.broker_type.span,
                    format!(
                        "{}: MSK has no broker type {}",
                        k.name.value, k.broker_type.value
                    ),
                )
                .with_hint(format!(
                    "e.g. {}",
                    types.iter().take(6).cloned().collect::<Vec<_>>().join(", ")
                )),
            );
        }
    }
}

fn check_rds(spec: &EnvSpec, offer: &Offer, out: &mut Diagnostics) {
    let Some(rds) = &spec.rds else { return };
    let w = &rds.writer;
    let Some(offered) = &offer.engine_versions else {
        return;
    };
    let requested = w.engine_version.as_ref().map(|v| v.value.as_str());
    let span = w
        .engine_version
        .as_ref()
        .map(|v| v.span)
        .unwrap_or(w.engine.span);
    let Some(resolved) = offer.resolve_engine_version(requested) else {
        let major = requested.and_then(|v| v.split('.').next());
        let same_major: Vec<&str> = offered
            .iter()
            .filter(|o| major.is_none_or(|m| o.version.split('.').next() == Some(m)))
            .map(|o| o.version.as_str())
            .collect();
        let hint = if same_major.is_empty() {
            format!(
                "versions offered: {}",
                offered
                    .iter()
                    .map(|o| o.version.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!(
                "use the major alone (\"{}\", RDS picks its default minor) or one of: {}",
                major.unwrap_or_default(),
                same_major.join(", ")
            )
        };
        out.push(
            Diagnostic::error(
                "preflight-engine-version",
                span,
                format!(
                    "{}: RDS does not create {} {}",
                    w.id.value,
                    w.engine.value,
                    requested.unwrap_or("(default)")
                ),
            )
            .with_hint(hint),
        );
        return;
    };
    // The parameter group envctl creates must be of the instance's family.
    if !w.parameters.is_empty() {
        let family = parameter_family(requested);
        if family != resolved.family {
            out.push(
                Diagnostic::error(
                    "preflight-parameter-family",
                    span,
                    format!(
                        "{}: the parameter group would be of family {family}, but {} {} needs {}",
                        w.id.value, w.engine.value, resolved.version, resolved.family
                    ),
                )
                .with_hint("give engine_version as the major the parameters are meant for"),
            );
        }
    }
    if let Some(classes) = &offer.orderable_classes {
        let mut check_class = |class: &At<String>| {
            if !classes.contains(&class.value) {
                out.push(
                    Diagnostic::error(
                        "preflight-instance-class",
                        class.span,
                        format!(
                            "{}: {} is not orderable for {} {} in this Region",
                            w.id.value, class.value, w.engine.value, resolved.version
                        ),
                    )
                    .with_hint(format!(
                        "orderable classes include {}",
                        classes
                            .iter()
                            .take(8)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                );
            }
        };
        check_class(&w.class);
        for r in &rds.readers {
            if let Some(c) = &r.class {
                check_class(c);
            }
        }
    }
}

/// RDS subnet groups need subnets in at least two zones, MSK one per zone. Without EC2
/// access the zones of a subnet are unknown, so distinct subnet ids stand in for zones.
fn check_subnets(spec: &EnvSpec, out: &mut Diagnostics) {
    let subnets = &spec.network.subnets;
    let mut distinct: Vec<&str> = subnets.iter().map(|s| s.value.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let needed = spec
        .kafka
        .values()
        .map(|k| k.zones.value as usize)
        .chain(spec.rds.as_ref().map(|_| 2))
        .max()
        .unwrap_or(0);
    if distinct.len() < needed
        && let Some(first) = subnets.first()
    {
        out.push(
            Diagnostic::error(
                "preflight-subnets",
                first.span,
                format!(
                    "network.subnets has {} distinct subnet(s); the env needs {needed} zones",
                    distinct.len()
                ),
            )
            .with_hint("list one subnet per Availability Zone (RDS needs two zones, MSK one per broker zone)"),
        );
    }
    for s in subnets {
        if !s.value.starts_with("subnet-") {
            out.push(
                Diagnostic::error(
                    "preflight-subnets",
                    s.span,
                    format!("`{}` is not a subnet id", s.value),
                )
                .with_hint("subnet ids look like subnet-0a1b2c3d4e5f67890"),
            );
        }
    }
}

/// With `ecs.capacity: {instances: N}` the instances are registered by something else, so
/// all envctl can do is check that they are there and can hold the services: at least N
/// ACTIVE (DRAINING and REGISTERING ones take no new tasks), and their remaining CPU and
/// memory fit every task. Not read (`None`) for the other forms or a cluster not created yet.
fn check_registered_capacity(
    spec: &EnvSpec,
    desired: &DesiredState,
    offer: &Offer,
    out: &mut Diagnostics,
) {
    let Some(registered) = &offer.container_instances else {
        return;
    };
    if spec.ecs.capacity.kind() != CapacityKind::Instances {
        return;
    }
    let active: Vec<&InstanceCapacity> = registered
        .iter()
        .filter(|i| i.status == ContainerInstanceStatus::Active)
        .collect();
    check_instance_count(spec, desired, active.len(), out);
    // With none registered every task is unplaced: the count finding says it already.
    if !active.is_empty() {
        check_remaining_room(spec, desired, &active, &offer.running_tasks, out);
    }
}

/// Fewer ACTIVE instances than `instances:` asks for.
fn check_instance_count(
    spec: &EnvSpec,
    desired: &DesiredState,
    active: usize,
    out: &mut Diagnostics,
) {
    let capacity = &spec.ecs.capacity;
    let cluster = &desired.cluster.name;
    let wanted = capacity.instances.value;
    let count = u32::try_from(active).unwrap_or(u32::MAX);
    if count < wanted {
        out.push(
            Diagnostic::error(
                "preflight-capacity-instances",
                capacity.instances.span,
                format!(
                    "cluster {cluster} has {count} ACTIVE container instance(s) registered; ecs.capacity.instances asks for {wanted}"
                ),
            )
            .with_hint(format!(
                "register {} more {} in {cluster} before apply (envctl does not launch them in this form), or set instances: {count}",
                wanted - count,
                capacity.instance_type.value
            )),
        );
    }
}

/// The env's tasks placed on what the ACTIVE instances have left, by the capacity lint's
/// model: remaining CPU and memory, and the host ports already in use there (the agent's and
/// other tasks', other teams' on a shared cluster included), so a fixed host port taken on an
/// instance keeps the env's task off it. The ports of the env's own running tasks are among
/// those in use, which is right: those tasks are not placed again, and a task still to start
/// cannot share an instance's port with them either.
fn check_remaining_room(
    spec: &EnvSpec,
    desired: &DesiredState,
    active: &[&InstanceCapacity],
    running: &BTreeMap<String, u32>,
    out: &mut Diagnostics,
) {
    let capacity = &spec.ecs.capacity;
    let cluster = &desired.cluster.name;
    let count = u32::try_from(active.len()).unwrap_or(u32::MAX);
    let fleet: Vec<ContainerInstance> = active.iter().map(|i| as_placed(i)).collect();
    let tasks = crate::model::task_needs(desired);
    let unplaced = unplaced_tasks(spec, &tasks, running, fleet.clone());
    let Some((first, why)) = unplaced.first() else {
        return;
    };
    let missing: usize = unplaced.iter().map(|(_, u)| u.len()).sum();
    let total: u32 = spec.services.values().map(|s| s.count.value).sum();
    // The first services in placement order (the largest), so a 144-service env stays readable.
    let mut services: Vec<String> = unplaced
        .iter()
        .take(5)
        .map(|(name, u)| {
            let count = spec.services.get(name).map_or(0, |s| s.count.value);
            format!("{name} {} of {count}, {}", u.len(), shortfall_words(u))
        })
        .collect();
    if unplaced.len() > services.len() {
        services.push(format!(
            "and {} more service(s)",
            unplaced.len() - services.len()
        ));
    }
    let sum =
        |f: fn(&InstanceCapacity) -> i32| -> i64 { active.iter().map(|i| i64::from(f(i))).sum() };
    let valid = match more_instances_needed(spec, &tasks, running, &fleet) {
        Some(more) => format!(
            "{count} registered; all tasks fit on {} ({more} more empty {})",
            count + more,
            capacity.instance_type.value
        ),
        None => "a task fits on no empty instance of the type: use a larger one".to_string(),
    };
    out.push(
        Diagnostic::error(
            "preflight-capacity-remaining",
            capacity.instances.span,
            format!(
                "{missing} of {total} tasks do not fit on what the {count} container instance(s) of {cluster} have left ({}): {} CPU units and {} MiB remain",
                services.join("; "),
                sum(|i| i.remaining_cpu),
                sum(|i| i.remaining_memory),
            ),
        )
        .with_hint(format!(
            "{valid}; ECS would report: {}",
            why.first().map(|u| u.event(first)).unwrap_or_default()
        )),
    );
}

/// A registered instance in the placement model: the CPU and memory its running tasks
/// reserve is what DescribeContainerInstances reports as registered minus remaining; its
/// ports in use are reported as they are.
pub fn as_placed(i: &InstanceCapacity) -> ContainerInstance {
    let units = |v: i32| u32::try_from(v).unwrap_or(0);
    let id = envctl_aws_model::arn::resource_name(&i.arn);
    let mut placed = ContainerInstance::new(
        id,
        i.zone.clone().unwrap_or_default(),
        units(i.registered_cpu),
        units(i.registered_memory),
    );
    placed.used_cpu = placed.cpu.saturating_sub(units(i.remaining_cpu));
    placed.used_memory_mib = placed.memory_mib.saturating_sub(units(i.remaining_memory));
    placed.used_ports = i.ports_in_use.clone();
    placed
}

/// (service, its tasks that found no instance) after placing `order` (service, what one
/// task reserves, tasks to start; in packing order) on `fleet`, as the capacity lint and
/// the sandbox place them.
pub fn unplaced_on<'a>(
    order: impl IntoIterator<Item = (&'a String, &'a placement::TaskNeeds, u32)>,
    mut fleet: Vec<ContainerInstance>,
) -> Vec<(String, Vec<Unplaced>)> {
    let mut out = Vec::new();
    for (name, task, count) in order {
        let mut spread = BTreeMap::new();
        let p = placement::place(&mut fleet, task, count, &mut spread);
        if !p.unplaced.is_empty() {
            out.push((name.clone(), p.unplaced));
        }
    }
    out
}

/// (service, its tasks that found no instance) after placing every service on `fleet`.
fn unplaced_tasks(
    spec: &EnvSpec,
    tasks: &BTreeMap<String, placement::TaskNeeds>,
    running: &BTreeMap<String, u32>,
    fleet: Vec<ContainerInstance>,
) -> Vec<(String, Vec<Unplaced>)> {
    // Running tasks already hold their share of the instances' remaining resources.
    let to_start = placement_order(spec, tasks)
        .into_iter()
        .map(|(name, task, count)| {
            let started = running.get(name).copied().unwrap_or(0);
            (name, task, count.saturating_sub(started))
        });
    unplaced_on(to_start, fleet)
}

/// Empty instances of the env's type to add to `fleet` until every task fits (bounded: a
/// task larger than one instance never fits).
fn more_instances_needed(
    spec: &EnvSpec,
    tasks: &BTreeMap<String, placement::TaskNeeds>,
    running: &BTreeMap<String, u32>,
    fleet: &[ContainerInstance],
) -> Option<u32> {
    let size = catalog::ec2_instance(&spec.ecs.capacity.instance_type.value)?;
    let zones = spec.network.subnets.len().max(1);
    let limit = u32::try_from(fleet.len())
        .unwrap_or(u32::MAX)
        .saturating_mul(4)
        .saturating_add(16);
    (1..=limit).find(|more| {
        let mut grown = fleet.to_vec();
        grown.extend((0..*more as usize).map(|i| {
            ContainerInstance::new(
                format!("new-{:02}", i + 1),
                format!("zone-{}", i % zones + 1),
                size.cpu_units(),
                size.task_memory_mib(),
            )
        }));
        unplaced_tasks(spec, tasks, running, grown).is_empty()
    })
}

/// Why a service's tasks were not placed, in words: "insufficient memory", ...
pub fn shortfall_words(unplaced: &[Unplaced]) -> String {
    let mut reasons: Vec<Shortfall> = unplaced.iter().filter_map(Unplaced::reason).collect();
    reasons.sort_unstable();
    reasons.dedup();
    let words: Vec<&str> = reasons
        .iter()
        .map(|r| match r {
            Shortfall::Cpu => "insufficient CPU",
            Shortfall::Memory => "insufficient memory",
            Shortfall::Ports => "host port taken",
            Shortfall::NetworkInterface => "no network interface left",
        })
        .collect();
    if words.is_empty() {
        "no instance".to_string()
    } else {
        words.join(", ")
    }
}

/// The parts of `arn:partition:service:region:account:resource`.
fn arn_parts(arn: &str) -> Option<[&str; 5]> {
    let mut it = arn.splitn(6, ':');
    let (Some("arn"), Some(partition), Some(service), Some(region), Some(account), Some(resource)) = (
        it.next(),
        it.next(),
        it.next(),
        it.next(),
        it.next(),
        it.next(),
    ) else {
        return None;
    };
    Some([partition, service, region, account, resource])
}

fn is_account(s: &str) -> bool {
    s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit())
}

fn check_arns(spec: &EnvSpec, out: &mut Diagnostics) {
    let region = &spec.region.value;
    let mut role_account = None;
    for role in [&spec.ecs.execution_role, &spec.ecs.task_role]
        .into_iter()
        .flatten()
    {
        match arn_parts(&role.value) {
            Some([_, "iam", "", account, resource])
                if is_account(account) && resource.starts_with("role/") =>
            {
                role_account = Some(account.to_string());
            }
            _ => out.push(
                Diagnostic::error(
                    "preflight-role-arn",
                    role.span,
                    format!("`{}` is not an IAM role ARN", role.value),
                )
                .with_hint("arn:aws:iam::<12-digit account>:role/<name> (IAM ARNs have no Region)"),
            ),
        }
    }
    for service in spec.services.values() {
        for (name, arn) in &service.secrets {
            // `${rds.writer.master_secret_arn}...`: envctl creates that secret in the env's
            // Region and account.
            if arn.value.starts_with("${") {
                continue;
            }
            let parts = arn_parts(&arn.value);
            let shape_ok = matches!(parts, Some([_, "secretsmanager", r, a, res]) if !r.is_empty() && is_account(a) && res.starts_with("secret:"))
                || matches!(parts, Some([_, "ssm", r, a, res]) if !r.is_empty() && is_account(a) && res.starts_with("parameter/"));
            if !shape_ok {
                out.push(
                    Diagnostic::error(
                        "preflight-secret-arn",
                        arn.span,
                        format!("{}: {name} is not a Secrets Manager or SSM parameter ARN", service.name.value),
                    )
                    .with_hint(format!(
                        "arn:aws:secretsmanager:{region}:<account>:secret:<name> or arn:aws:ssm:{region}:<account>:parameter/<name>"
                    )),
                );
                continue;
            }
            let Some([_, _, secret_region, account, _]) = parts else {
                continue;
            };
            if secret_region != region {
                out.push(
                    Diagnostic::warning(
                        "preflight-secret-region",
                        arn.span,
                        format!(
                            "{}: {name} is in {secret_region}, the env runs in {region}",
                            service.name.value
                        ),
                    )
                    .with_hint("a secret in another Region works only by full ARN and with the execution role allowed there; usually a copy in the env's Region is meant"),
                );
            }
            if let Some(role_account) = &role_account
                && account != role_account
            {
                out.push(
                    Diagnostic::warning(
                        "preflight-secret-account",
                        arn.span,
                        format!(
                            "{}: {name} belongs to account {account}, the execution role to {role_account}",
                            service.name.value
                        ),
                    )
                    .with_hint("cross-account secrets need a resource policy on the secret and its KMS key"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
