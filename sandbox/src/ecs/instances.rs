//! ECS container instances and task placement: instances declared for a cluster (EC2) or
//! launched by a Managed Instances provider, their registration, where a service's tasks
//! fit, and List/DescribeContainerInstances.

use super::task_definitions::requires;
use super::*;
use envctl_aws_model::status::{
    CapacityProviderStatus, ClusterStatus, DeploymentStatus, RolloutState, ServiceStatus,
};

impl EcsState {
    // ---- capacity ----------------------------------------------------------------------

    /// The Managed Instances provider attached to `cluster` that a service's strategy names,
    /// and what it launches.
    fn managed_provider(&self, cluster: &Cluster, strategy: Option<&Value>) -> Option<Launch> {
        let names: Vec<&str> = strategy?
            .as_array()?
            .iter()
            .filter_map(|i| i.get("capacityProvider").and_then(Value::as_str))
            .collect();
        names.iter().find_map(|n| {
            let cp = self.capacity_providers.get(*n)?;
            if cp.kind != "MANAGED_INSTANCES"
                || cp.status != CapacityProviderStatus::Active
                || !serves(cp, cluster)
            {
                return None;
            }
            let template = cp.config.get("instanceLaunchTemplate")?;
            let instance_type = template
                .get("instanceRequirements")
                .and_then(|r| r.get("allowedInstanceTypes"))
                .and_then(Value::as_array)
                .and_then(|l| l.first())
                .and_then(Value::as_str)?;
            let (cpu, memory) = crate::catalogue::ec2_container_resources(instance_type)?;
            let subnets = str_list(template.get("networkConfiguration")?, "subnets");
            Some(Launch {
                provider: cp.name.clone(),
                cpu,
                memory,
                // Managed Instances count each awsvpc task's network interface (Developer
                // Guide, "Amazon ECS Managed Instances auto scaling and task placement").
                task_interfaces: envctl_aws_model::awsvpc_task_slots(instance_type),
                subnets,
            })
        })
    }

    /// Managed Instances capacity, once per settle: launched instances register; a PRIMARY
    /// deployment whose tasks found no instance is placed when it now fits, else its
    /// provider launches the fewest instances that make it fit (they register after
    /// `ecs_instance_launch`); instances of a provider that no task uses leave (scale in).
    pub(super) fn settle_capacity(&mut self, ctx: &Ctx<'_>, next_due: &mut f64) {
        let now = ctx.now;
        self.settle_providers(now, next_due);
        let names: Vec<String> = self
            .clusters
            .iter()
            .filter(|(_, c)| c.status == ClusterStatus::Active)
            .map(|(n, _)| n.clone())
            .collect();
        for name in names {
            let Some(cluster) = self.clusters.get_mut(&name) else {
                continue;
            };
            let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut cluster.launching)
                .into_iter()
                .partition(|ci| ci.registered_at <= now);
            cluster.container_instances.extend(ready);
            for ci in &waiting {
                *next_due = next_due.min(ci.registered_at);
            }
            cluster.launching = waiting;
            let Some(cluster) = self.clusters.get(&name) else {
                continue;
            };
            let pending: Vec<(String, String, i64, Option<Value>)> = cluster
                .services
                .values()
                .filter(|s| s.status == ServiceStatus::Active)
                .flat_map(|s| {
                    s.deployments
                        .iter()
                        // A rollout waiting for capacity, or a rescale of a completed one
                        // (unpark: 0 to N tasks on a provider that scaled in to nothing).
                        .filter(|d| {
                            d.status == DeploymentStatus::Primary
                                && d.rollout_state != RolloutState::Failed
                                && d.unplaced.is_some()
                        })
                        .map(|d| {
                            (
                                s.name.clone(),
                                d.task_definition.clone(),
                                d.desired_count,
                                s.extra.get("capacityProviderStrategy").cloned(),
                            )
                        })
                })
                .collect();
            let mut launches: Vec<RegisteredInstance> = Vec::new();
            let mut placed: Vec<String> = Vec::new();
            // Deployments given room earlier in this pass (placed now, or waiting for
            // instances being launched): the next ones are placed beside them, so two
            // services never count on the same free room.
            let mut ahead: Vec<(String, i64)> = Vec::new();
            for (service, td, desired, strategy) in &pending {
                let launching: Vec<ContainerInstance> = cluster
                    .launching
                    .iter()
                    .chain(&launches)
                    .map(RegisteredInstance::as_placed)
                    .collect();
                let registered_fit = launching.is_empty()
                    && self
                        .try_place(cluster, service, td, *desired, Vec::new(), &ahead)
                        .is_none();
                if registered_fit {
                    placed.push(service.clone());
                    ahead.push((td.clone(), *desired));
                    continue;
                }
                let Some(launch) = self.managed_provider(cluster, strategy.as_ref()) else {
                    continue;
                };
                if self
                    .try_place(cluster, service, td, *desired, launching.clone(), &ahead)
                    .is_none()
                {
                    // What is launching already makes room: wait for it.
                    ahead.push((td.clone(), *desired));
                    continue;
                }
                let total = cluster.container_instances.len() + launching.len();
                let candidate = |k: usize| -> Vec<ContainerInstance> {
                    (0..k)
                        .map(|i| {
                            let zone = managed_zone(ctx, &launch.subnets, total + i);
                            ContainerInstance::new(
                                format!("new-{i}"),
                                zone,
                                launch.cpu,
                                launch.memory,
                            )
                            .with_task_interfaces(launch.task_interfaces)
                        })
                        .collect()
                };
                let need = (1..=MANAGED_INSTANCES_MAX).find(|k| {
                    let mut extra = launching.clone();
                    extra.extend(candidate(*k));
                    self.try_place(cluster, service, td, *desired, extra, &ahead)
                        .is_none()
                });
                // A task no instance of the type can hold stays unplaced with its event.
                let Some(need) = need else {
                    continue;
                };
                ahead.push((td.clone(), *desired));
                for i in 0..need {
                    let n = self.seq + 1 + launches.len() as u64;
                    let id = format!("{n:032x}");
                    launches.push(RegisteredInstance {
                        arn: ctx.arn("ecs", &format!("container-instance/{name}/{id}")),
                        id,
                        zone: managed_zone(ctx, &launch.subnets, total + i),
                        cpu: launch.cpu,
                        memory_mib: launch.memory,
                        registered_at: now + ctx.profile.ecs_instance_launch.as_secs_f64(),
                        provider: Some(launch.provider.clone()),
                        task_interfaces: launch.task_interfaces,
                    });
                }
            }
            self.seq += launches.len() as u64;
            let start = ctx.profile.ecs_task_start.as_secs_f64();
            let Some(cluster) = self.clusters.get_mut(&name) else {
                continue;
            };
            for ci in &launches {
                *next_due = next_due.min(ci.registered_at);
            }
            cluster.launching.extend(launches);
            for s in cluster
                .services
                .values_mut()
                .filter(|s| placed.contains(&s.name))
            {
                let mut started = 0;
                for d in s
                    .deployments
                    .iter_mut()
                    .filter(|d| d.status == DeploymentStatus::Primary && d.unplaced.is_some())
                {
                    // The tasks leave PROVISIONING now and start as a new deployment's do
                    // (a rescale's from where they were).
                    d.unplaced = None;
                    d.due_at = now + start;
                    d.updated_at = now;
                    if let Some((from, _, _)) = d.rescaled {
                        d.rescaled = Some((from, now, now + start));
                    }
                    started += d.desired_count;
                    *next_due = next_due.min(d.due_at);
                }
                self.seq += 1;
                let message = format!("(service {}) has started {started} tasks.", s.name);
                Self::event(s, self.seq, now, message);
            }
            // Scale in: a provider's instance that holds no task, while nothing waits for
            // capacity, is terminated and deregisters.
            let Some(cluster) = self.clusters.get(&name) else {
                continue;
            };
            let waiting_for_capacity = cluster.services.values().any(|s| {
                s.status == ServiceStatus::Active
                    && s.deployments.iter().any(|d| d.unplaced.is_some())
            });
            if waiting_for_capacity || !cluster.launching.is_empty() {
                continue;
            }
            let idle: Vec<String> = cluster
                .container_instances
                .iter()
                .zip(self.occupied(cluster, None))
                .filter(|(ci, used)| {
                    ci.provider.is_some() && used.used_cpu == 0 && used.used_memory_mib == 0
                })
                .map(|(ci, _)| ci.id.clone())
                .collect();
            if let Some(cluster) = self.clusters.get_mut(&name) {
                cluster
                    .container_instances
                    .retain(|ci| !idle.contains(&ci.id));
            }
        }
    }

    /// Provider states: PROVISIONING becomes ACTIVE at `active_at`; DEPROVISIONING becomes
    /// INACTIVE at `gone_at`, when the instances it launched are terminated and deregister.
    fn settle_providers(&mut self, now: f64, next_due: &mut f64) {
        let mut gone = Vec::new();
        for cp in self.capacity_providers.values_mut() {
            match (cp.status.as_str(), cp.gone_at) {
                ("PROVISIONING", _) if cp.active_at <= now => cp.status = "ACTIVE".into(),
                ("PROVISIONING", _) => *next_due = next_due.min(cp.active_at),
                ("DEPROVISIONING", Some(at)) if at <= now => {
                    cp.status = "INACTIVE".into();
                    gone.push(cp.name.clone());
                }
                ("DEPROVISIONING", Some(at)) => *next_due = next_due.min(at),
                _ => {}
            }
        }
        for name in gone {
            for c in self.clusters.values_mut() {
                c.capacity_providers.retain(|n| *n != name);
                c.container_instances
                    .retain(|ci| ci.provider.as_deref() != Some(name.as_str()));
                c.launching
                    .retain(|ci| ci.provider.as_deref() != Some(name.as_str()));
            }
        }
    }

    /// Whether a Managed Instances provider in `strategy` can launch an instance that holds
    /// one task of `task_definition` (its tasks then wait for it instead of failing).
    pub(super) fn provider_fits(
        &self,
        cluster_name: &str,
        strategy: Option<&Value>,
        task_definition: &str,
    ) -> bool {
        let Some(cluster) = self.clusters.get(cluster_name) else {
            return false;
        };
        let Some(launch) = self.managed_provider(cluster, strategy) else {
            return false;
        };
        ContainerInstance::new("new", "zone", launch.cpu, launch.memory)
            .with_task_interfaces(launch.task_interfaces)
            .misses(&self.task_needs(task_definition))
            .is_empty()
    }

    /// Whether a capacity provider strategy names a Managed Instances provider.
    pub(super) fn names_managed(&self, strategy: Option<&Value>) -> bool {
        strategy
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|i| opt_str(i, "capacityProvider"))
            .filter_map(|n| self.capacity_providers.get(n))
            .any(|cp| cp.kind == "MANAGED_INSTANCES")
    }

    /// A task definition placed on a Managed Instances provider must have been validated for
    /// it: `MANAGED_INSTANCES` in `requiresCompatibilities` (Developer Guide, "Amazon ECS
    /// task definition parameters for Amazon ECS Managed Instances"; aws/aws-cdk#36098). The
    /// wording is ECS's for a task definition not validated for a launch type (its FARGATE
    /// form is the well-known one).
    pub(super) fn check_managed_compatibility(
        &self,
        task_definition: &str,
    ) -> Result<(), ApiError> {
        let ok = self
            .find_task_definition(task_definition)
            .is_some_and(|td| requires(td.doc.get("requiresCompatibilities"), "MANAGED_INSTANCES"));
        if ok {
            return Ok(());
        }
        Err(ApiError::bad(
            "InvalidParameterException",
            "Task definition does not support launch_type MANAGED_INSTANCES.",
        ))
    }

    /// CreateService/UpdateService refuse a launch type together with a capacity provider
    /// strategy, and a strategy naming a provider the cluster does not have (API
    /// reference, CreateService `capacityProviderStrategy`).
    pub(super) fn check_strategy(&self, cluster_name: &str, input: &Value) -> Result<(), ApiError> {
        let Some(strategy) = input
            .get("capacityProviderStrategy")
            .and_then(Value::as_array)
        else {
            return Ok(());
        };
        if input.get("launchType").is_some() {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.",
            ));
        }
        let Some(cluster) = self.clusters.get(cluster_name) else {
            return Ok(());
        };
        for item in strategy {
            let name = item
                .get("capacityProvider")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let provider = self.capacity_providers.get(name);
            let associated = match provider {
                Some(cp) => serves(cp, cluster),
                None => cluster.capacity_providers.iter().any(|a| a == name),
            };
            if associated && provider.is_some_and(|cp| cp.status != CapacityProviderStatus::Active)
            {
                return Err(not_active(name));
            }
            if !associated {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "The specified capacity provider strategy cannot contain a capacity provider that is not associated with the cluster. Associate the capacity provider with the cluster or specify a valid capacity provider and try again.",
                ));
            }
        }
        Ok(())
    }

    /// Registers container instances in a cluster (control API); returns their ARNs. For a
    /// cluster that does not exist (yet) they register once it is created, as the agents of
    /// an Auto Scaling group naming it would.
    pub fn declare_instances(
        &mut self,
        d: &DeclaredInstances,
        arn: impl Fn(&str) -> String,
    ) -> Vec<String> {
        let start = self.seq;
        let instances: Vec<RegisteredInstance> = d
            .instances
            .iter()
            .enumerate()
            .map(|(i, ci)| {
                let id = format!("{:032x}", start + 1 + i as u64);
                RegisteredInstance {
                    arn: arn(&format!("container-instance/{}/{id}", d.cluster)),
                    id,
                    zone: ci.zone.clone(),
                    cpu: ci.cpu,
                    memory_mib: ci.memory,
                    registered_at: 0.0,
                    provider: None,
                    task_interfaces: None,
                }
            })
            .collect();
        self.seq = start + d.instances.len() as u64;
        self.next_due = 0.0;
        let out = instances.iter().map(|ci| ci.arn.clone()).collect();
        match self
            .clusters
            .get_mut(&d.cluster)
            .filter(|c| c.status == ClusterStatus::Active)
        {
            Some(cluster) => cluster.container_instances.extend(instances),
            None => self
                .awaiting_cluster
                .entry(d.cluster.clone())
                .or_default()
                .extend(instances),
        }
        out
    }

    /// Stops the container instances that no capacity provider launched in `cluster` (and
    /// those still waiting for it), as scaling the Auto Scaling group that registered them to
    /// zero does (control API); returns how many left. Their agents deregister them, so the
    /// cluster can then be deleted.
    pub fn retire_instances(&mut self, cluster: &str) -> usize {
        let waiting = self.awaiting_cluster.remove(cluster).map_or(0, |v| v.len());
        let registered = self.clusters.get_mut(cluster).map_or(0, |c| {
            let before = c.container_instances.len();
            c.container_instances.retain(|ci| ci.provider.is_some());
            before - c.container_instances.len()
        });
        waiting + registered
    }

    /// What one task of a registered task definition reserves.
    fn task_needs(&self, task_definition: &str) -> TaskNeeds {
        let Some(td) = self.find_task_definition(task_definition) else {
            return TaskNeeds::default();
        };
        let num = |v: Option<&Value>| -> Option<u32> {
            match v? {
                Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
                Value::String(s) => s.parse().ok(),
                _ => None,
            }
        };
        let containers: Vec<ContainerNeeds> = td
            .doc
            .get("containerDefinitions")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|c| ContainerNeeds {
                        cpu: num(c.get("cpu")).unwrap_or(0),
                        memory: num(c.get("memory")),
                        memory_reservation: num(c.get("memoryReservation")),
                        ports: c
                            .get("portMappings")
                            .and_then(Value::as_array)
                            .map(|ports| {
                                ports
                                    .iter()
                                    .filter_map(|p| {
                                        let container = num(p.get("containerPort"))?;
                                        let host = num(p.get("hostPort"));
                                        Some((
                                            u16::try_from(container).ok()?,
                                            host.and_then(|h| u16::try_from(h).ok()),
                                            Protocol::from_mapping(
                                                p.get("protocol").and_then(Value::as_str),
                                            ),
                                        ))
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mode = PortMode::from_network_mode(td.doc.get("networkMode").and_then(Value::as_str));
        TaskNeeds::of_task(
            &containers,
            mode,
            num(td.doc.get("cpu")),
            num(td.doc.get("memory")),
        )
    }

    /// The cluster's instances with what the placed tasks of its services reserve, services
    /// in creation order (a deployment being replaced still holds its tasks), leaving out
    /// `except`.
    fn occupied(&self, cluster: &Cluster, except: Option<&str>) -> Vec<ContainerInstance> {
        let mut fleet: Vec<ContainerInstance> = cluster
            .container_instances
            .iter()
            .map(RegisteredInstance::as_placed)
            .collect();
        let mut services: Vec<&Service> = cluster
            .services
            .values()
            .filter(|s| s.status == ServiceStatus::Active && Some(s.name.as_str()) != except)
            .collect();
        services.sort_by(|a, b| {
            a.created_at
                .total_cmp(&b.created_at)
                .then(a.name.cmp(&b.name))
        });
        for s in services {
            let mut spread = BTreeMap::new();
            for d in s.deployments.iter().filter(|d| d.unplaced.is_none()) {
                let count = u32::try_from(d.desired_count.max(0)).unwrap_or(0);
                placement::place(
                    &mut fleet,
                    &self.task_needs(&d.task_definition),
                    count,
                    &mut spread,
                );
            }
        }
        fleet
    }

    /// Whether `service` rescaled to `desired` tasks of its deployment fits beside everything
    /// else in the cluster (its running tasks are among the `desired`); ECS's event for the
    /// first task that finds no instance, if any.
    pub(super) fn rescale_event(
        &self,
        cluster_name: &str,
        service: &str,
        task_definition: &str,
        desired: i64,
    ) -> Option<String> {
        let cluster = self.clusters.get(cluster_name)?;
        let mut fleet = self.occupied(cluster, Some(service));
        self.first_unplaced(
            &mut fleet,
            &mut BTreeMap::new(),
            service,
            task_definition,
            desired,
        )
    }

    /// Places `desired` tasks of `task_definition` on `fleet`; ECS's event for the first
    /// that found no instance.
    fn first_unplaced(
        &self,
        fleet: &mut [ContainerInstance],
        spread: &mut BTreeMap<String, u32>,
        service: &str,
        task_definition: &str,
        desired: i64,
    ) -> Option<String> {
        let count = u32::try_from(desired.max(0)).unwrap_or(0);
        let p = placement::place(fleet, &self.task_needs(task_definition), count, spread);
        p.unplaced.first().map(|u| u.event(service))
    }

    /// Places a new deployment's tasks beside everything else in the cluster (the service's
    /// own older deployments included, as during a rolling update); ECS's event for the
    /// first task that finds no instance, if any.
    pub(super) fn placement_event(
        &self,
        cluster_name: &str,
        service: &str,
        task_definition: &str,
        desired: i64,
    ) -> Option<String> {
        let cluster = self.clusters.get(cluster_name)?;
        self.try_place(cluster, service, task_definition, desired, Vec::new(), &[])
    }

    /// Places a deployment of `desired` tasks beside everything else in the cluster, on its
    /// instances plus `extra` ones, after `ahead` (deployments of other services already
    /// given room in this settle pass: (task definition, tasks)); ECS's event for the first
    /// task that found no instance.
    fn try_place(
        &self,
        cluster: &Cluster,
        service: &str,
        task_definition: &str,
        desired: i64,
        extra: Vec<ContainerInstance>,
        ahead: &[(String, i64)],
    ) -> Option<String> {
        let mut fleet = self.occupied(cluster, Some(service));
        fleet.extend(extra);
        for (td, count) in ahead {
            let count = u32::try_from((*count).max(0)).unwrap_or(0);
            let mut spread = BTreeMap::new();
            placement::place(&mut fleet, &self.task_needs(td), count, &mut spread);
        }
        let mut spread = BTreeMap::new();
        if let Some(s) = cluster
            .services
            .get(service)
            .filter(|s| s.status == ServiceStatus::Active)
        {
            // With maximumPercent 100 ECS stops old tasks before it starts new ones (and
            // frees their ports and memory): the new tasks do not need room beside them.
            // Above 100 the old tasks are counted as running while the new ones start.
            let stop_first = s
                .deployment_configuration
                .get("maximumPercent")
                .and_then(Value::as_i64)
                .is_some_and(|m| m <= 100);
            for d in s
                .deployments
                .iter()
                .filter(|d| d.unplaced.is_none() && !stop_first)
            {
                let count = u32::try_from(d.desired_count.max(0)).unwrap_or(0);
                placement::place(
                    &mut fleet,
                    &self.task_needs(&d.task_definition),
                    count,
                    &mut spread,
                );
            }
        }
        self.first_unplaced(&mut fleet, &mut spread, service, task_definition, desired)
    }

    pub(super) fn list_container_instances(&mut self, input: &Value) -> Result<Value, ApiError> {
        let cluster = self.active_cluster(&Self::cluster_name(input))?;
        let arns: Vec<String> = cluster
            .container_instances
            .iter()
            .map(|ci| ci.arn.clone())
            .collect();
        let (items, next) = page(&arns, input, 100)?;
        let mut out = json!({ "containerInstanceArns": items });
        if let Some(t) = next {
            out["nextToken"] = json!(t);
        }
        Ok(out)
    }

    pub(super) fn describe_container_instances(
        &mut self,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        self.active_cluster(&cluster_name)?;
        let Some(cluster) = self.clusters.get(&cluster_name) else {
            return Ok(json!({ "containerInstances": [], "failures": [] }));
        };
        let fleet = self.occupied(cluster, None);
        let wanted: Vec<String> = input
            .get("containerInstances")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut found = Vec::new();
        let mut failures = Vec::new();
        for w in &wanted {
            let hit = cluster
                .container_instances
                .iter()
                .zip(&fleet)
                .find(|(ci, _)| ci.arn == *w || ci.id == short_name(w));
            let Some((ci, used)) = hit else {
                failures.push(json!({ "arn": w, "reason": "MISSING" }));
                continue;
            };
            // Ports are listed as they are in use: in registeredResources the agent's
            // reserved ones, in remainingResources those and every placed task's.
            let resources = |cpu: u32, mem: u32, ports: &[HostPort]| {
                let of = |protocol: Protocol| -> Value {
                    json!({
                        "name": protocol.resource_name(),
                        "type": "STRINGSET",
                        "stringSetValue": ports
                            .iter()
                            .filter(|p| p.protocol == protocol)
                            .map(|p| p.port.to_string())
                            .collect::<Vec<_>>(),
                    })
                };
                json!([
                    {"name": "CPU", "type": "INTEGER", "integerValue": cpu},
                    {"name": "MEMORY", "type": "INTEGER", "integerValue": mem},
                    of(Protocol::Tcp),
                    of(Protocol::Udp),
                ])
            };
            let agent: Vec<HostPort> = AGENT_RESERVED_PORTS.map(HostPort::tcp).to_vec();
            let in_use: Vec<HostPort> = used.used_ports.iter().copied().collect();
            found.push(json!({
                "containerInstanceArn": ci.arn,
                "ec2InstanceId": format!("i-{}", &ci.id[15..]),
                "status": "ACTIVE",
                "agentConnected": true,
                "registeredAt": ts(ci.registered_at),
                "attributes": [{"name": "ecs.availability-zone", "value": ci.zone}],
                "registeredResources": resources(ci.cpu, ci.memory_mib, &agent),
                "remainingResources": resources(
                    used.remaining_cpu(),
                    used.remaining_memory_mib(),
                    &in_use,
                ),
            }));
        }
        Ok(json!({ "containerInstances": found, "failures": failures }))
    }
}

/// `ecs-svc/` followed by 19 digits, as AWS's deployment ids look.
/// The most instances the sandbox lets one Managed Instances provider launch for one
/// deployment (AWS bounds it by the account's EC2 quotas).
const MANAGED_INSTANCES_MAX: usize = 100;

/// The zone of the `n`-th instance a provider launches: round-robin over its subnets, named
/// as the region's zones (a, b, c...), so placement spreads across them as on AWS.
fn managed_zone(ctx: &Ctx<'_>, subnets: &[String], n: usize) -> String {
    let zones = subnets.len().max(1);
    let letter = char::from(b'a' + (n % zones).min(25) as u8);
    format!("{}{letter}", ctx.region)
}
