//! ECS: the cluster, each service with its task definition compared field by field, and
//! owned services the spec no longer has.
use envctl_aws_model::placement;
use envctl_aws_model::status::{CapacityProviderStatus, ClusterStatus};
use std::collections::{BTreeMap, BTreeSet};

use super::{ADOPT_FIELD, Planner, adoption, creates, output_prefix, output_resource};
use crate::model::live::{Placement, owned_by};
use crate::model::requests::AwsvpcConfiguration;
use crate::model::{
    ClusterCapacity, EcsService, ManagedCapacity, ManagedInstancesSettings, TaskDefinition,
};
use crate::plan::action::{Action, ActionKind, Change, Conflict, ConflictKind, KNOWN_AFTER_APPLY};
use crate::plan::id::ResourceId;
use crate::plan::op::{Create, Delete, Op, ServiceRevision};
use crate::spec::deferred::Outputs;

pub(super) fn plan_cluster(p: &mut Planner) {
    let id = ResourceId::ecs_cluster(&p.desired.cluster.name);
    let create = || {
        Action::new(
            id.clone(),
            ActionKind::Create,
            Op::Create(creates::ecs_cluster(p.desired)),
        )
    };
    let action = match &p.live.cluster {
        None => create(),
        Some(c) if c.status != ClusterStatus::Active => create().changes(vec![Change::new(
            "status",
            Some(c.status.clone()),
            Some("ACTIVE".into()),
        )]),
        Some(c) if !p.owned(&c.tags) => {
            p.conflict(id, "an ECS cluster");
            return;
        }
        Some(c) => {
            let changes = adoption(&c.tags, p.env());
            if changes.is_empty() {
                Action::new(id.clone(), ActionKind::NoOp, Op::NoOp)
            } else {
                Action::new(
                    id.clone(),
                    ActionKind::UpdateInPlace,
                    Op::EcsClusterAdopt { arn: c.arn.clone() },
                )
                .changes(changes)
            }
        }
    };
    let secs = if action.kind == ActionKind::Create {
        p.est.ecs_cluster_create
    } else {
        0.0
    };
    p.push(action.estimate(secs));
}

/// The capacity the services are placed on. A Managed Instances provider is envctl's:
/// created (and attached to the cluster) when missing. An existing provider named by the
/// spec is never changed; when it does not exist the plan is refused, since every service
/// create would fail on it.
pub(super) fn plan_capacity(p: &mut Planner) {
    match &p.desired.cluster.capacity {
        ClusterCapacity::Instances => {}
        ClusterCapacity::Provider { name } => {
            let exists = p
                .live
                .capacity_providers
                .get(name)
                .is_some_and(|cp| cp.status == CapacityProviderStatus::Active);
            if !exists {
                p.conflicts.push(Conflict {
                    resource: ResourceId::capacity_provider(name),
                    message: format!(
                        "capacity provider {name} (ecs.capacity.provider) does not exist; envctl uses an existing provider and never creates one: create it, or use ecs.capacity.managed_instances"
                    ),
                    kind: ConflictKind::Refused,
                });
            }
        }
        ClusterCapacity::ManagedInstances(m) => plan_managed_provider(p, m),
    }
}

/// The owned Managed Instances provider: created (in the env's cluster, then waited for
/// until ACTIVE) when missing, waited for when an earlier run left it PROVISIONING, and
/// updated in place when its settings differ from the spec's (instance types, roles, the
/// env's network): UpdateCapacityProvider takes every one of them (API reference,
/// UpdateManagedInstancesProviderConfiguration and InstanceLaunchTemplateUpdate), so none
/// needs a replacement. What it cannot change is the provider's type: an owned provider of
/// that name that is not MANAGED_INSTANCES is refused rather than replaced, because deleting
/// a provider needs every service off its strategy first (DeleteCapacityProvider), which
/// means taking the env's services down; the message says what to do instead.
fn plan_managed_provider(p: &mut Planner, m: &ManagedCapacity) {
    let id = ResourceId::capacity_provider(&m.provider);
    let cluster = ResourceId::ecs_cluster(&p.desired.cluster.name);
    let live = p.live.capacity_providers.get(&m.provider).filter(|cp| {
        cp.status == CapacityProviderStatus::Active
            || cp.status == CapacityProviderStatus::Provisioning
    });
    let action = match live {
        None => Action::new(
            id,
            ActionKind::Create,
            Op::Create(creates::capacity_provider(p.desired, m, false)),
        )
            .changes(vec![
                Change::new("instance_types", None, Some(m.instance_types.join(","))),
                Change::new("cluster", None, Some(p.desired.cluster.name.clone())),
            ])
            .reason("a Managed Instances provider is PROVISIONING before ECS accepts it in a service's strategy: the services wait until it is ACTIVE")
            .estimate(p.est.ecs_capacity_provider_create),
        Some(cp) if cp.status == CapacityProviderStatus::Provisioning && p.owned(&cp.tags) => Action::new(
            id,
            ActionKind::UpdateInPlace,
            Op::Create(creates::capacity_provider(p.desired, m, true)),
        )
        .changes(vec![Change::new(
            "status",
            Some("PROVISIONING".into()),
            Some("ACTIVE".into()),
        )])
        .reason("created by an earlier run: waited for, not created again")
        .estimate(p.est.ecs_capacity_provider_create),
        Some(cp) if !p.owned(&cp.tags) => {
            p.conflict(id, "an ECS capacity provider");
            return;
        }
        Some(cp) if cp.kind != "MANAGED_INSTANCES" => {
            let message = format!(
                "capacity provider {} is {}, not a Managed Instances provider, and UpdateCapacityProvider cannot change a provider's type; envctl does not replace it because DeleteCapacityProvider needs every service off it first: run `envctl destroy` for this env, then apply again",
                m.provider, cp.kind
            );
            p.conflicts.push(Conflict {
                resource: id,
                message,
                kind: ConflictKind::Refused,
            });
            return;
        }
        Some(cp) => {
            let adopt = super::adoption(&cp.tags, p.env());
            let action = existing_provider(p, id.clone(), m, cp.managed.as_ref());
            if adopt.is_empty() {
                action
            } else if action.kind == ActionKind::NoOp {
                // `--adopt`: only its ownership tags (TagResource takes any ECS ARN).
                Action::new(id, ActionKind::UpdateInPlace, Op::EcsClusterAdopt { arn: cp.arn.clone() })
                    .changes(adopt)
                    .estimate(1.0)
            } else {
                let mut changes = adopt;
                changes.extend(action.changes.clone());
                action.changes(changes)
            }
        }
    };
    p.push(action.deps(vec![cluster]));
}

/// An owned, ACTIVE Managed Instances provider: nothing to do, or UpdateCapacityProvider
/// with the desired settings.
fn existing_provider(
    p: &Planner,
    id: ResourceId,
    m: &ManagedCapacity,
    live: Option<&ManagedInstancesSettings>,
) -> Action {
    let desired = m.settings(&p.desired.subnets, &p.desired.security_groups);
    let changes = settings_changes(live, &desired);
    if changes.is_empty() {
        return Action::new(id, ActionKind::NoOp, Op::NoOp);
    }
    let op = Op::CapacityProviderUpdate {
        cluster: p.desired.cluster.name.clone(),
        name: m.provider.clone(),
        settings: desired,
    };
    Action::new(id, ActionKind::UpdateInPlace, op)
        .changes(changes)
        .reason("instances already running keep their settings until they are replaced")
        .estimate(1.0)
}

/// The settings that differ, one Change each, old -> new. Lists compare (and show) sorted:
/// ECS does not promise to return them in the order sent, and the order means nothing to
/// it. A provider whose settings could not be read shows every field as changing.
fn settings_changes(
    old: Option<&ManagedInstancesSettings>,
    new: &ManagedInstancesSettings,
) -> Vec<Change> {
    type Show = fn(&ManagedInstancesSettings) -> String;
    let fields: [(&str, Show); 7] = [
        ("instance_types", |s| sorted(&s.instance_types)),
        ("min_vcpus", |s| s.min_vcpus.to_string()),
        ("min_memory_mib", |s| s.min_memory_mib.to_string()),
        ("infrastructure_role", |s| s.infrastructure_role.clone()),
        ("instance_profile", |s| s.instance_profile.clone()),
        ("subnets", |s| sorted(&s.subnets)),
        ("security_groups", |s| sorted(&s.security_groups)),
    ];
    fields
        .iter()
        .filter_map(|(field, show)| {
            let new_value = show(new);
            let old_value = old.map(show);
            (old_value.as_deref() != Some(new_value.as_str()))
                .then(|| Change::new(*field, old_value, Some(new_value)))
        })
        .collect()
}

fn sorted(list: &[String]) -> String {
    let mut list = list.to_vec();
    list.sort();
    list.join(",")
}

pub(super) fn plan_services(p: &mut Planner) {
    // Resources whose outputs change in this plan: services that read them wait, and see
    // their values as known after apply.
    let pending_outputs: BTreeSet<String> = p
        .actions
        .iter()
        .filter(|a| matches!(a.kind, ActionKind::Create | ActionKind::Replace))
        .filter_map(|a| output_prefix(p.desired, &a.id))
        .collect();
    let mut visible = p.live.outputs(p.desired);
    // A value from a resource that is being created or replaced is not known yet, even if
    // an old one exists.
    visible.retain(|name, _| {
        !pending_outputs
            .iter()
            .any(|prefix| name.starts_with(&format!("{prefix}.")))
    });
    let launches = managed_launches(p.desired);
    for service in p.desired.services.values() {
        plan_service(p, service, &visible, &launches);
    }
}

/// On Managed Instances the provider runs the fewest instances that hold the running tasks
/// (it launches for waiting tasks and terminates idle instances), so a rolling deployment's
/// new tasks, which ECS starts before it stops the old ones, wait for instances it launches
/// unless the fleet's spare room holds them. Those services, by the placement model: the
/// smallest uniform fleet of the first instance type that holds every service (with a
/// network interface per awsvpc task), then each service's spare room beside the others.
/// Empty for other capacity forms (their fleet is not resized by a deployment).
fn managed_launches(desired: &crate::model::DesiredState) -> BTreeSet<String> {
    let ClusterCapacity::ManagedInstances(m) = &desired.cluster.capacity else {
        return BTreeSet::new();
    };
    let Some(size) = crate::spec::catalog::ec2_instance(&desired.cluster.instance_type) else {
        return BTreeSet::new();
    };
    let slots = envctl_aws_model::awsvpc_task_slots(&desired.cluster.instance_type);
    let tasks = crate::model::task_needs(desired);
    let order = placement::packing_order(
        desired
            .services
            .iter()
            .filter_map(|(name, s)| tasks.get(name).map(|t| (name, t, s.desired_count))),
    );
    let limit = m.max.saturating_mul(4).saturating_add(16);
    for k in 1..=limit {
        let mut fleet: Vec<placement::ContainerInstance> = placement::uniform_fleet(
            k,
            desired.subnets.len(),
            size.cpu_units(),
            size.task_memory_mib(),
        )
        .into_iter()
        .map(|ci| ci.with_task_interfaces(slots))
        .collect();
        let mut spreads: BTreeMap<&String, BTreeMap<String, u32>> = BTreeMap::new();
        let mut all_placed = true;
        for (name, task, count) in &order {
            let spread = spreads.entry(name).or_default();
            all_placed &= placement::place(&mut fleet, task, *count, spread)
                .unplaced
                .is_empty();
        }
        if !all_placed {
            continue;
        }
        return order
            .iter()
            .filter(|(name, task, count)| {
                let spread = spreads.get(name).cloned().unwrap_or_default();
                placement::spare_tasks(&fleet, task, *count, &spread) < *count
            })
            .map(|(name, _, _)| (*name).clone())
            .collect();
    }
    BTreeSet::new()
}

fn plan_service(
    p: &mut Planner,
    service: &EcsService,
    visible: &Outputs,
    launches: &BTreeSet<String>,
) {
    let id = ResourceId::service(&service.name);
    let mut deps = vec![ResourceId::ecs_cluster(&p.desired.cluster.name)];
    let managed = match &p.desired.cluster.capacity {
        ClusterCapacity::ManagedInstances(m) => {
            deps.push(ResourceId::capacity_provider(&m.provider));
            true
        }
        _ => false,
    };
    deps.extend(
        service
            .depends_on
            .iter()
            .filter_map(|r| output_resource(p.desired, r)),
    );
    let new = flatten(&service.task_definition, visible);
    let Some(l) = p.live.services.get(&service.name) else {
        let changes = ["image", "cpu", "memory", "memoryReservation"]
            .iter()
            .filter_map(|f| new.get(*f).map(|v| Change::new(*f, None, Some(v.clone()))))
            .chain(std::iter::once(Change::new(
                "desired_count",
                None,
                Some(service.desired_count.to_string()),
            )))
            .collect();
        p.push(
            Action::new(
                id,
                ActionKind::Create,
                Op::Create(creates::ecs_service(
                    p.desired,
                    service,
                    p.service_request(service),
                )),
            )
            .changes(changes)
            // On a new Managed Instances provider the tasks wait for instances to launch.
            .estimate(
                p.est.ecs_task_start
                    + if managed && p.live.capacity_providers.is_empty() {
                        p.est.ecs_instance_launch
                    } else {
                        0.0
                    },
            )
            .deps(deps),
        );
        return;
    };
    if !p.owned(&l.tags) {
        p.conflict(id, "an ECS service");
        return;
    }
    let adopt = adoption(&l.tags, p.env());
    let mut changes = adopt.clone();
    let mut kind = ActionKind::NoOp;
    let mut secs: f64 = 0.0;
    match p.live.task_definitions.get(&l.task_definition) {
        Some(old_td) => {
            let old = flatten(old_td, &Outputs::new());
            for (field, value) in &new {
                if old.get(field) != Some(value) {
                    changes.push(Change::new(
                        field.clone(),
                        old.get(field).cloned(),
                        Some(value.clone()),
                    ));
                }
            }
            for (field, value) in &old {
                if !new.contains_key(field) {
                    changes.push(Change::new(field.clone(), Some(value.clone()), None));
                }
            }
        }
        None => changes.push(Change::new(
            "task definition",
            Some(format!("{} (content unknown)", l.task_definition)),
            Some(service.task_definition.family.clone()),
        )),
    }
    let new_revision = changes.iter().any(|c| c.field != ADOPT_FIELD);
    if new_revision {
        kind = ActionKind::RollingUpdate;
        secs = p.est.ecs_rolling();
    } else if !changes.is_empty() {
        kind = ActionKind::UpdateInPlace;
    }
    let mut reasons = Vec::new();
    // The new tasks of a deployment on a Managed Instances fleet without room for them wait
    // for the instances the provider launches (issue 23: a 26-service switch estimated at
    // 1m 10s took several minutes).
    let rolling_secs = if launches.contains(&service.name) {
        p.est.ecs_rolling() + p.est.ecs_instance_launch
    } else {
        p.est.ecs_rolling()
    };
    if kind == ActionKind::RollingUpdate {
        secs = rolling_secs;
    }
    let placement = match &l.placement {
        Some(live) => {
            let desired = Placement::of(&p.service_request(service));
            let diff = placement_changes(live, &desired);
            reasons.extend(diff.reasons);
            if diff.redeploy {
                kind = kind.max(ActionKind::RollingUpdate);
                secs = secs.max(rolling_secs);
            } else if !diff.changes.is_empty() {
                kind = kind.max(ActionKind::UpdateInPlace);
            }
            if diff.replace {
                let mut all = std::mem::take(&mut changes);
                all.extend(diff.changes);
                replace_service(p, id, service, l, all, reasons, deps);
                return;
            }
            changes.extend(diff.changes);
            Some(diff.redeploy)
        }
        None => None,
    };
    let placement_redeploy = placement == Some(true);
    let placement = placement.is_some()
        && changes
            .iter()
            .any(|c| PLACEMENT_PREFIXES.iter().any(|p| c.field.starts_with(p)));
    let count = (l.desired_count != service.desired_count).then_some(service.desired_count);
    if count.is_some() {
        changes.push(Change::new(
            "desired_count",
            Some(l.desired_count.to_string()),
            Some(service.desired_count.to_string()),
        ));
        kind = kind.max(ActionKind::UpdateInPlace);
        secs = secs.max(p.est.ecs_task_start);
    }
    // Health is part of the state: a failed deployment or dead tasks on the desired
    // revision is drift, repaired by a new deployment (a new revision deploys anyway).
    let unhealthy = l.unhealthy();
    // A strategy or network change needs `forceNewDeployment` even with a new revision
    // (ECS refuses a strategy change without it); an unhealthy service only without one
    // (a new revision deploys anyway).
    let force = placement_redeploy || (unhealthy.is_some() && !new_revision);
    if let Some(why) = &unhealthy {
        changes.push(Change::new(
            super::HEALTH_FIELD,
            Some(why.clone()),
            Some("force new deployment".into()),
        ));
        kind = kind.max(ActionKind::RollingUpdate);
        secs = secs.max(rolling_secs);
        reasons.push(format!("unhealthy: {why}"));
        reasons.extend(l.problems.iter().cloned());
    }
    let op = if kind == ActionKind::NoOp {
        Op::NoOp
    } else {
        Op::EcsServiceUpdate {
            running: l.task_definition.clone(),
            revision: if new_revision {
                creates::service_revision(p.desired, service)
            } else {
                ServiceRevision::Running
            },
            request: p.service_request(service),
            count,
            adopt: (!adopt.is_empty()).then(|| l.arn.clone()),
            force,
            placement,
        }
    };
    p.push(
        Action::new(id, kind, op)
            .changes(changes)
            .reasons(reasons)
            .estimate(secs)
            .deps(deps),
    );
}

/// The fields of a service's placement as a plan names them: `placement` in an
/// `EcsServiceUpdate` is set when one of them changes.
const PLACEMENT_PREFIXES: [&str; 3] = [
    "capacityProviderStrategy",
    "networkConfiguration",
    "deploymentConfiguration",
];

/// How a service's placement differs from the desired one.
struct PlacementDiff {
    changes: Vec<Change>,
    reasons: Vec<String>,
    /// A new deployment is needed (`forceNewDeployment`): the strategy or the network
    /// configuration changes, which only new tasks can take.
    redeploy: bool,
    /// UpdateService cannot make the change: back from a strategy to a launch type.
    replace: bool,
}

/// Strategy (or launch type), awsvpc network configuration and deployment percentages,
/// compared field by field. Switching from a launch type to a strategy, or changing the
/// strategy, needs a new deployment (ECS refuses it otherwise: "When switching from launch
/// type to capacity provider strategy on an existing service, or making a change to a
/// capacity provider strategy on a service that is already using one, you must force a new
/// deployment", pipe-cd/pipecd#6385, kayac/ecspresso#481); so does a network change (the
/// running tasks keep their interfaces). Back from a strategy to a launch type UpdateService
/// cannot do at all (it has no `launchType`): the service is replaced
/// (terraform-provider-aws#22823). The percentages alone change in place.
fn placement_changes(live: &Placement, desired: &Placement) -> PlacementDiff {
    let mut d = PlacementDiff {
        changes: Vec::new(),
        reasons: Vec::new(),
        redeploy: false,
        replace: false,
    };
    let (old_on, new_on) = (live.placed_on(), desired.placed_on());
    if old_on != new_on {
        d.changes.push(Change::new(
            "capacityProviderStrategy",
            Some(old_on),
            Some(new_on),
        ));
        if desired.strategy.is_empty() && !live.strategy.is_empty() {
            d.replace = true;
            d.reasons.push("UpdateService cannot put a service on a strategy back on a launch type: it is deleted and created again".into());
        } else {
            d.redeploy = true;
            d.reasons.push(if live.strategy.is_empty() {
                "switching from a launch type to a capacity provider strategy: ECS requires a new deployment (forceNewDeployment)".into()
            } else {
                "the capacity provider strategy changes: ECS requires a new deployment (forceNewDeployment)".into()
            });
        }
    }
    let show =
        |n: &Option<AwsvpcConfiguration>, f: fn(&AwsvpcConfiguration) -> String| n.as_ref().map(f);
    type Field = (&'static str, fn(&AwsvpcConfiguration) -> String);
    let network: [Field; 3] = [
        ("networkConfiguration.subnets", |n| n.subnets.join(",")),
        ("networkConfiguration.securityGroups", |n| {
            n.security_groups.join(",")
        }),
        ("networkConfiguration.assignPublicIp", |n| {
            n.assign_public_ip.clone()
        }),
    ];
    let mut network_changed = false;
    for (field, f) in network {
        let (old, new) = (show(&live.network, f), show(&desired.network, f));
        if old != new {
            network_changed = true;
            d.changes.push(Change::new(field, old, new));
        }
    }
    if network_changed {
        d.redeploy = true;
        d.reasons.push("the awsvpc network configuration changes: only new tasks take it, so a new deployment starts (forceNewDeployment)".into());
    }
    let percents = [
        (
            "deploymentConfiguration.minimumHealthyPercent",
            live.minimum_healthy_percent,
            desired.minimum_healthy_percent,
        ),
        (
            "deploymentConfiguration.maximumPercent",
            live.maximum_percent,
            desired.maximum_percent,
        ),
    ];
    for (field, old, new) in percents {
        if old != new {
            d.changes.push(Change::new(
                field,
                Some(old.to_string()),
                Some(new.to_string()),
            ));
        }
    }
    d
}

/// A service that must go from a strategy back to a launch type: deleted (drained until
/// INACTIVE) and created again on the desired revision.
fn replace_service(
    p: &mut Planner,
    id: ResourceId,
    service: &EcsService,
    live: &crate::model::live::LiveService,
    changes: Vec<Change>,
    reasons: Vec<String>,
    deps: Vec<ResourceId>,
) {
    let op = Op::Replace {
        delete: Delete::EcsService {
            cluster: p.desired.cluster.name.clone(),
            name: live.name.clone(),
        },
        create: creates::ecs_service(p.desired, service, p.service_request(service)),
    };
    p.push(
        Action::new(id, ActionKind::Replace, op)
            .changes(changes)
            .reasons(reasons)
            .estimate(p.est.ecs_service_delete + p.est.ecs_task_start)
            .deps(deps),
    );
}

/// With `ecs.capacity: {instances: N}` the container instances are registered by something
/// else (an Auto Scaling group beside the env, whose agents join the cluster once it exists),
/// and ECS places a service's tasks only on instances already registered: services created
/// before them would only report "unable to place a task". So when the plan creates
/// services, they wait for one action first: N ACTIVE instances with room for their tasks.
/// A plan that creates no service with tasks has nothing to wait for (a count change or a
/// deployment reports its placement itself).
pub(super) fn plan_registered_capacity(p: &mut Planner) {
    let cluster = &p.desired.cluster;
    if !matches!(cluster.capacity, ClusterCapacity::Instances) {
        return;
    }
    let creates =
        |a: &Action| a.id.is_service() && matches!(a.op, Op::Create(Create::EcsService { .. }));
    let services: BTreeMap<String, u32> = p
        .actions
        .iter()
        .filter(|a| creates(a))
        .filter_map(|a| p.desired.services.get(a.id.name()))
        .filter(|s| s.desired_count > 0)
        .map(|s| (s.name.clone(), s.desired_count))
        .collect();
    // Services created with no task place nothing: nothing to wait for.
    if services.is_empty() {
        return;
    }
    let id = ResourceId::container_instances(&cluster.name);
    // Instances of a cluster created by this apply register after it: a launch's time.
    let new_cluster = p
        .live
        .cluster
        .as_ref()
        .is_none_or(|c| c.status != ClusterStatus::Active);
    let tasks: u32 = services.values().sum();
    let action = Action::new(
        id.clone(),
        ActionKind::UpdateInPlace,
        Op::EcsCapacityAwait {
            instances: cluster.instances,
            needs: {
                let needs = crate::model::task_needs(p.desired);
                services
                    .keys()
                    .filter_map(|name| needs.get(name).map(|n| (name.clone(), n.into())))
                    .collect()
            },
            services,
            cluster: cluster.name.clone(),
        },
    )
    .changes(vec![Change::new(
        "ACTIVE instances",
        None,
        Some(format!(
            "at least {} {} ({tasks} new tasks to place)",
            cluster.instances, cluster.instance_type
        )),
    )])
    .reason("registered by something else (ecs.capacity.instances): wait for them before creating services (waits.capacity)")
    .estimate(if new_cluster {
        p.est.ecs_instance_launch
    } else {
        0.0
    })
    .deps(vec![ResourceId::ecs_cluster(&cluster.name)]);
    for a in p.actions.iter_mut().filter(|a| creates(a)) {
        a.deps.push(id.clone());
    }
    // Before the services, so the plan reads in the order apply runs it.
    let at = p
        .actions
        .iter()
        .position(|a| a.id.is_service())
        .unwrap_or(p.actions.len());
    p.actions.insert(at, action);
}

/// Owned services that the spec no longer has.
pub(super) fn plan_removed_services(p: &mut Planner) {
    let mut actions = Vec::new();
    for (name, l) in &p.live.services {
        if !p.desired.services.contains_key(name) && owned_by(&l.tags, p.env()) {
            actions.push(
                Action::new(
                    ResourceId::service(name),
                    ActionKind::Delete,
                    Op::Delete(Delete::EcsService {
                        cluster: p.desired.cluster.name.clone(),
                        name: name.clone(),
                    }),
                )
                .changes(vec![Change::new(
                    "desired_count",
                    Some(l.desired_count.to_string()),
                    None,
                )])
                .reason("no longer in the spec")
                .estimate(p.est.ecs_service_delete),
            );
        }
    }
    p.actions.extend(actions);
}

/// Flattens a task definition to `field -> value` for field-level comparison; references
/// that cannot be resolved yet show as known after apply.
fn flatten(td: &TaskDefinition, outputs: &Outputs) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    out.insert("family".into(), td.family.clone());
    out.insert("networkMode".into(), td.network_mode.clone());
    out.insert(
        "requiresCompatibilities".into(),
        td.requires_compatibilities.join(","),
    );
    if let Some(r) = &td.task_role_arn {
        out.insert("taskRoleArn".into(), r.clone());
    }
    if let Some(r) = &td.execution_role_arn {
        out.insert("executionRoleArn".into(), r.clone());
    }
    let single = td.container_definitions.len() == 1;
    for c in &td.container_definitions {
        let p = if single {
            String::new()
        } else {
            format!("{}.", c.name)
        };
        out.insert(format!("{p}name"), c.name.clone());
        out.insert(format!("{p}image"), c.image.clone());
        out.insert(format!("{p}cpu"), c.cpu.to_string());
        out.insert(format!("{p}memory"), c.memory.to_string());
        if let Some(m) = c.memory_reservation {
            out.insert(format!("{p}memoryReservation"), m.to_string());
        }
        out.insert(format!("{p}essential"), c.essential.to_string());
        let ports: Vec<String> = c
            .port_mappings
            .iter()
            .map(|m| format!("{}:{}/{}", m.container_port, m.host_port, m.protocol))
            .collect();
        out.insert(format!("{p}portMappings"), ports.join(","));
        for (name, value) in &c.environment {
            let v = value
                .resolve(outputs)
                .unwrap_or_else(|_| KNOWN_AFTER_APPLY.to_string());
            out.insert(format!("{p}{name}"), v);
        }
        for s in &c.secrets {
            let v = s
                .value_from
                .resolve(outputs)
                .unwrap_or_else(|_| KNOWN_AFTER_APPLY.to_string());
            out.insert(format!("{p}secret {}", s.name), v);
        }
        if let Some(log) = &c.log_configuration {
            out.insert(format!("{p}logDriver"), log.log_driver.clone());
            for (k, v) in &log.options {
                out.insert(format!("{p}log {k}"), v.clone());
            }
        }
    }
    out
}
