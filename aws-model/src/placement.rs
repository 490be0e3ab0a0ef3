//! Where ECS puts a service's tasks on EC2 container instances: one pure model, used by the
//! sandbox to place tasks and by envctl's capacity lint to predict the same placement.
//!
//! What a task reserves (Amazon ECS Developer Guide, "Task definition parameters", memory):
//! `cpu` units, `memoryReservation` when set and else `memory` (the hard limit), and its
//! fixed host ports (bridge mode with a `hostPort`, or every container port in host mode).
//! A container instance takes a task only when all three fit ("Use strategies to define
//! Amazon ECS task placement": ECS first identifies the instances that satisfy CPU, memory
//! and port requirements).
//!
//! Strategy: for tasks in a service, ECS's default is `spread` on
//! `attribute:ecs.availability-zone` (same page). AWS does not document which instance
//! inside the chosen zone gets the task; the model binpacks on memory there (the
//! "spread by zone, then binpack memory" example of "Example Amazon ECS task placement
//! strategies"), which keeps the model deterministic and packs as tightly as ECS can.
//!
//! When nothing fits, the service event names the closest matching instance and the
//! requirement it misses ("Amazon ECS service event messages").
//!
//! Host ports are reserved per protocol: DescribeContainerInstances reports the TCP ports in
//! use as the `PORTS` resource and the UDP ones as `PORTS_UDP` (ECS API Reference, Resource),
//! so a TCP and a UDP mapping of the same number do not collide.
use std::collections::{BTreeMap, BTreeSet};

/// The ports the ECS container agent on Linux reserves when it registers an instance
/// (`ECS_RESERVED_PORTS`' default; `ECS_RESERVED_PORTS_UDP` defaults to none): no task can
/// take them, and DescribeContainerInstances lists them in `registeredResources` PORTS.
pub const AGENT_RESERVED_PORTS: [u16; 5] = [22, 2375, 2376, 51678, 51679];

/// `portMappings.protocol` (ECS's default is tcp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
}

impl Protocol {
    /// From a port mapping's `protocol`; absent or anything but udp is tcp, ECS's default.
    pub fn from_mapping(protocol: Option<&str>) -> Self {
        match protocol {
            Some(p) if p.eq_ignore_ascii_case("udp") => Protocol::Udp,
            _ => Protocol::Tcp,
        }
    }

    /// The DescribeContainerInstances resource that lists this protocol's ports in use.
    pub fn resource_name(self) -> &'static str {
        match self {
            Protocol::Tcp => "PORTS",
            Protocol::Udp => "PORTS_UDP",
        }
    }
}

/// A port on the host, of one protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    pub protocol: Protocol,
    pub port: u16,
}

impl HostPort {
    pub fn tcp(port: u16) -> Self {
        HostPort {
            protocol: Protocol::Tcp,
            port,
        }
    }

    pub fn udp(port: u16) -> Self {
        HostPort {
            protocol: Protocol::Udp,
            port,
        }
    }
}

/// One registered container instance and what its running tasks already reserve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInstance {
    /// Container instance id (the last part of its ARN).
    pub id: String,
    /// Availability Zone (`attribute:ecs.availability-zone`).
    pub zone: String,
    /// Registered CPU units (1024 per vCPU).
    pub cpu: u32,
    /// Registered memory for tasks, MiB.
    pub memory_mib: u32,
    /// CPU units reserved by the tasks placed on it.
    pub used_cpu: u32,
    /// Memory reserved by the tasks placed on it, MiB.
    pub used_memory_mib: u32,
    /// Host ports taken: the agent's reserved ones and those of the tasks placed on it.
    pub used_ports: BTreeSet<HostPort>,
    /// Network interfaces `awsvpc` tasks may attach (`awsvpc_task_slots` of its type);
    /// `None` when not known to be limited (an instance registered elsewhere: its account
    /// may use ENI trunking, which raises the limit).
    pub task_interfaces: Option<u32>,
    /// Network interfaces the `awsvpc` tasks placed on it attach.
    pub used_interfaces: u32,
}

impl ContainerInstance {
    /// An instance with no task on it: only the agent's reserved ports are taken.
    pub fn new(id: impl Into<String>, zone: impl Into<String>, cpu: u32, memory_mib: u32) -> Self {
        ContainerInstance {
            id: id.into(),
            zone: zone.into(),
            cpu,
            memory_mib,
            used_cpu: 0,
            used_memory_mib: 0,
            used_ports: AGENT_RESERVED_PORTS
                .into_iter()
                .map(HostPort::tcp)
                .collect(),
            task_interfaces: None,
            used_interfaces: 0,
        }
    }

    /// The same instance with room for `slots` `awsvpc` tasks (`None`: not limited).
    pub fn with_task_interfaces(mut self, slots: Option<u32>) -> Self {
        self.task_interfaces = slots;
        self
    }

    pub fn remaining_cpu(&self) -> u32 {
        self.cpu.saturating_sub(self.used_cpu)
    }

    pub fn remaining_memory_mib(&self) -> u32 {
        self.memory_mib.saturating_sub(self.used_memory_mib)
    }

    /// The requirements of `task` this instance cannot meet now, in the order ECS reports
    /// them (CPU, memory, ports, network interfaces).
    pub fn misses(&self, task: &TaskNeeds) -> Vec<Shortfall> {
        let mut out = Vec::new();
        if task.cpu > self.remaining_cpu() {
            out.push(Shortfall::Cpu);
        }
        if task.memory_mib > self.remaining_memory_mib() {
            out.push(Shortfall::Memory);
        }
        if task.host_ports.iter().any(|p| self.used_ports.contains(p)) {
            out.push(Shortfall::Ports);
        }
        if task.network_interface
            && self
                .task_interfaces
                .is_some_and(|slots| self.used_interfaces >= slots)
        {
            out.push(Shortfall::NetworkInterface);
        }
        out
    }

    pub fn reserve(&mut self, task: &TaskNeeds) {
        self.used_cpu += task.cpu;
        self.used_memory_mib += task.memory_mib;
        self.used_ports.extend(task.host_ports.iter().copied());
        self.used_interfaces += u32::from(task.network_interface);
    }

    /// Gives back what `task` reserved (the task stopped).
    pub fn release(&mut self, task: &TaskNeeds) {
        self.used_cpu = self.used_cpu.saturating_sub(task.cpu);
        self.used_memory_mib = self.used_memory_mib.saturating_sub(task.memory_mib);
        for p in &task.host_ports {
            self.used_ports.remove(p);
        }
        self.used_interfaces = self
            .used_interfaces
            .saturating_sub(u32::from(task.network_interface));
    }
}

/// What one task of a service reserves on the instance it is placed on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskNeeds {
    pub cpu: u32,
    pub memory_mib: u32,
    /// Fixed host ports (empty for awsvpc and for bridge with dynamic host ports).
    pub host_ports: Vec<HostPort>,
    /// An `awsvpc` task: it attaches a network interface of its own.
    pub network_interface: bool,
}

/// How containers reach the network, as far as host ports are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortMode {
    /// awsvpc: every task has its own network interface, no host port is taken.
    Awsvpc,
    /// bridge: only a fixed `hostPort` (non-zero) is taken; 0 or absent is dynamic.
    Bridge,
    /// host: the container port is the host port.
    Host,
}

impl PortMode {
    /// From a task definition's `networkMode` (ECS's default on EC2 is bridge).
    pub fn from_network_mode(mode: Option<&str>) -> Self {
        match mode {
            Some("awsvpc") => PortMode::Awsvpc,
            Some("host") => PortMode::Host,
            _ => PortMode::Bridge,
        }
    }
}

/// One container of a task definition, as far as placement is concerned.
#[derive(Debug, Clone, Default)]
pub struct ContainerNeeds {
    pub cpu: u32,
    /// `memory`: the hard limit.
    pub memory: Option<u32>,
    /// `memoryReservation`: the soft limit.
    pub memory_reservation: Option<u32>,
    /// `portMappings` as (containerPort, hostPort, protocol).
    pub ports: Vec<(u16, Option<u16>, Protocol)>,
}

impl TaskNeeds {
    /// What a task with these containers reserves. A task-level `cpu`/`memory` (optional on
    /// EC2) replaces the containers' sum when it is set.
    pub fn of_task(
        containers: &[ContainerNeeds],
        mode: PortMode,
        task_cpu: Option<u32>,
        task_memory: Option<u32>,
    ) -> Self {
        let cpu = task_cpu.unwrap_or_else(|| containers.iter().map(|c| c.cpu).sum());
        let memory_mib = task_memory.unwrap_or_else(|| {
            containers
                .iter()
                .map(|c| c.memory_reservation.or(c.memory).unwrap_or(0))
                .sum()
        });
        let mut host_ports: Vec<HostPort> = containers
            .iter()
            .flat_map(|c| c.ports.iter())
            .filter_map(|(container, host, protocol)| {
                let port = match mode {
                    PortMode::Awsvpc => None,
                    // In host mode hostPort is omitted or equals the container port.
                    PortMode::Host => Some(host.filter(|h| *h != 0).unwrap_or(*container)),
                    PortMode::Bridge => host.filter(|h| *h != 0),
                }?;
                Some(HostPort {
                    protocol: *protocol,
                    port,
                })
            })
            .collect();
        host_ports.sort_unstable();
        host_ports.dedup();
        TaskNeeds {
            cpu,
            memory_mib,
            host_ports,
            network_interface: mode == PortMode::Awsvpc,
        }
    }
}

/// Why a task could not be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shortfall {
    Cpu,
    Memory,
    Ports,
    /// No network interface left for an `awsvpc` task.
    NetworkInterface,
}

impl Shortfall {
    /// The end of ECS's service event for this reason ("Amazon ECS service event messages").
    pub fn aws_text(self) -> &'static str {
        match self {
            Shortfall::Cpu => "has insufficient CPU units available",
            Shortfall::Memory => "has insufficient memory available",
            Shortfall::Ports => "is already using a port required by your task",
            // As ECS words it (aws-app-mesh-examples issue #342 quotes the event).
            Shortfall::NetworkInterface => "encountered error \"RESOURCE:ENI\"",
        }
    }
}

/// A task that found no instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unplaced {
    /// The cluster has no container instance at all.
    NoInstances,
    /// The instance that met most requirements, and what it missed first.
    Closest { instance: String, reason: Shortfall },
}

impl Unplaced {
    /// ECS's service event for a task it could not place.
    pub fn event(&self, service: &str) -> String {
        let head = format!(
            "service {service} was unable to place a task because no container instance met all of its requirements."
        );
        match self {
            Unplaced::NoInstances => {
                format!("{head} Reason: No Container Instances were found in your cluster.")
            }
            Unplaced::Closest { instance, reason } => format!(
                "{head} The closest matching container-instance {instance} {}.",
                reason.aws_text()
            ),
        }
    }

    pub fn reason(&self) -> Option<Shortfall> {
        match self {
            Unplaced::NoInstances => None,
            Unplaced::Closest { reason, .. } => Some(*reason),
        }
    }
}

/// The outcome of placing `count` tasks of one service.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// Instance id of each placed task, in placement order.
    pub placed: Vec<String>,
    /// One entry per task that was not placed.
    pub unplaced: Vec<Unplaced>,
}

/// Places `count` tasks of one service on `instances`, reserving what they take.
/// `spread` counts the service's tasks already running per zone (it is updated), so a
/// rolling deployment spreads its new tasks against the old ones as ECS does.
pub fn place(
    instances: &mut [ContainerInstance],
    task: &TaskNeeds,
    count: u32,
    spread: &mut BTreeMap<String, u32>,
) -> Placement {
    let mut out = Placement::default();
    for _ in 0..count {
        match choose(instances, task, spread) {
            Ok(i) => {
                instances[i].reserve(task);
                *spread.entry(instances[i].zone.clone()).or_insert(0) += 1;
                out.placed.push(instances[i].id.clone());
            }
            Err(unplaced) => out.unplaced.push(unplaced),
        }
    }
    out
}

/// `count` identical container instances spread round-robin over `zones` zones: the fleet
/// an `instances: N` capacity of one type stands for when envctl predicts placement.
pub fn uniform_fleet(
    count: u32,
    zones: usize,
    cpu: u32,
    memory_mib: u32,
) -> Vec<ContainerInstance> {
    let zones = zones.max(1);
    (0..count as usize)
        .map(|i| {
            ContainerInstance::new(
                format!("instance-{:02}", i + 1),
                format!("zone-{}", i % zones + 1),
                cpu,
                memory_mib,
            )
        })
        .collect()
}

/// Services in the order that packs best (decreasing memory, then CPU, then name): the
/// order envctl's predictions place them in, so a fit that exists is found.
pub fn packing_order<'a, K: Ord>(
    services: impl IntoIterator<Item = (&'a K, &'a TaskNeeds, u32)>,
) -> Vec<(&'a K, &'a TaskNeeds, u32)> {
    let mut order: Vec<_> = services.into_iter().collect();
    order.sort_by(|a, b| (b.1.memory_mib, b.1.cpu, a.0).cmp(&(a.1.memory_mib, a.1.cpu, b.0)));
    order
}

/// How many more tasks like `task` fit beside what `instances` already hold (at most
/// `limit`): the room a rolling deployment has for its new tasks.
pub fn spare_tasks(
    instances: &[ContainerInstance],
    task: &TaskNeeds,
    limit: u32,
    spread: &BTreeMap<String, u32>,
) -> u32 {
    let mut trial = instances.to_vec();
    let mut spread = spread.clone();
    place(&mut trial, task, limit, &mut spread).placed.len() as u32
}

fn choose(
    instances: &[ContainerInstance],
    task: &TaskNeeds,
    spread: &BTreeMap<String, u32>,
) -> Result<usize, Unplaced> {
    if instances.is_empty() {
        return Err(Unplaced::NoInstances);
    }
    // Spread over the zones that have a fitting instance: fewest of this service's tasks
    // first, ties by zone name; then binpack on memory: least remaining memory, ties by id.
    let best = instances
        .iter()
        .enumerate()
        .filter(|(_, ci)| ci.misses(task).is_empty())
        .min_by(|(_, a), (_, b)| {
            let za = spread.get(&a.zone).copied().unwrap_or(0);
            let zb = spread.get(&b.zone).copied().unwrap_or(0);
            (za, &a.zone, a.remaining_memory_mib(), &a.id).cmp(&(
                zb,
                &b.zone,
                b.remaining_memory_mib(),
                &b.id,
            ))
        });
    if let Some((i, _)) = best {
        return Ok(i);
    }
    // Closest match: fewest missed requirements, then most remaining memory, then id.
    let closest = instances
        .iter()
        .map(|ci| (ci.misses(task), ci))
        .min_by(|(ma, a), (mb, b)| {
            (ma.len(), b.remaining_memory_mib(), &a.id).cmp(&(
                mb.len(),
                a.remaining_memory_mib(),
                &b.id,
            ))
        });
    match closest {
        Some((misses, ci)) => Err(Unplaced::Closest {
            instance: ci.id.clone(),
            reason: misses.first().copied().unwrap_or(Shortfall::Memory),
        }),
        None => Err(Unplaced::NoInstances),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(cpu: u32, memory_mib: u32, ports: &[u16]) -> TaskNeeds {
        TaskNeeds {
            cpu,
            memory_mib,
            host_ports: ports.iter().copied().map(HostPort::tcp).collect(),
            network_interface: false,
        }
    }

    fn fleet(spec: &[(&str, &str, u32, u32)]) -> Vec<ContainerInstance> {
        spec.iter()
            .map(|(id, zone, cpu, mem)| ContainerInstance::new(*id, *zone, *cpu, *mem))
            .collect()
    }

    #[test]
    fn spreads_over_zones_then_binpacks_memory() {
        // a1 has less memory left than a2, so a zone-a task goes to a1 while it fits.
        let mut ci = fleet(&[
            ("a1", "zone-a", 4096, 4096),
            ("a2", "zone-a", 4096, 8192),
            ("b1", "zone-b", 4096, 8192),
        ]);
        let p = place(&mut ci, &needs(512, 1024, &[]), 4, &mut BTreeMap::new());
        assert_eq!(p.placed, ["a1", "b1", "a1", "b1"]);
        assert!(p.unplaced.is_empty());
        assert_eq!(ci[0].remaining_memory_mib(), 2048);
        assert_eq!(ci[2].remaining_cpu(), 3072);
    }

    #[test]
    fn existing_tasks_count_for_the_spread() {
        let mut ci = fleet(&[("a1", "zone-a", 4096, 8192), ("b1", "zone-b", 4096, 8192)]);
        let mut spread = BTreeMap::from([("zone-a".to_string(), 2)]);
        let p = place(&mut ci, &needs(256, 512, &[]), 2, &mut spread);
        assert_eq!(p.placed, ["b1", "b1"]);
        assert_eq!(spread.get("zone-b"), Some(&2));
    }

    #[test]
    fn memory_shortfall_names_the_closest_instance() {
        // 3 x 3000 MiB on two 4096 MiB instances: the third task finds 1096 MiB at most.
        let mut ci = fleet(&[("a1", "zone-a", 4096, 4096), ("b1", "zone-b", 4096, 4096)]);
        let p = place(&mut ci, &needs(256, 3000, &[]), 3, &mut BTreeMap::new());
        assert_eq!(p.placed.len(), 2);
        assert_eq!(
            p.unplaced,
            [Unplaced::Closest {
                instance: "a1".into(),
                reason: Shortfall::Memory
            }]
        );
        assert_eq!(
            p.unplaced[0].event("svc"),
            "service svc was unable to place a task because no container instance met all of its requirements. The closest matching container-instance a1 has insufficient memory available."
        );
    }

    #[test]
    fn cpu_shortfall() {
        let mut ci = fleet(&[("a1", "zone-a", 1024, 8192)]);
        let p = place(&mut ci, &needs(768, 512, &[]), 2, &mut BTreeMap::new());
        assert_eq!(p.placed, ["a1"]);
        assert_eq!(p.unplaced[0].reason(), Some(Shortfall::Cpu));
    }

    #[test]
    fn a_fixed_host_port_allows_one_task_per_instance() {
        let mut ci = fleet(&[("a1", "zone-a", 8192, 16384), ("b1", "zone-b", 8192, 16384)]);
        let task = needs(256, 512, &[8080]);
        let p = place(&mut ci, &task, 3, &mut BTreeMap::new());
        assert_eq!(p.placed, ["a1", "b1"]);
        assert_eq!(p.unplaced[0].reason(), Some(Shortfall::Ports));
        // Once a task stops, its port is free again.
        ci[0].release(&task);
        let again = place(&mut ci, &task, 1, &mut BTreeMap::new());
        assert_eq!(again.placed, ["a1"]);
    }

    /// The agent's reserved ports are taken on an empty instance, and ports are per
    /// protocol: a UDP mapping of a number a TCP task holds still fits.
    #[test]
    fn agent_ports_are_taken_and_protocols_do_not_collide() {
        let mut ci = fleet(&[("a1", "zone-a", 8192, 16384)]);
        let ssh = place(&mut ci, &needs(256, 512, &[22]), 1, &mut BTreeMap::new());
        assert_eq!(ssh.unplaced[0].reason(), Some(Shortfall::Ports));
        place(&mut ci, &needs(256, 512, &[8125]), 1, &mut BTreeMap::new());
        let udp = TaskNeeds {
            host_ports: vec![HostPort::udp(8125)],
            ..needs(256, 512, &[])
        };
        assert_eq!(place(&mut ci, &udp, 1, &mut BTreeMap::new()).placed, ["a1"]);
        assert!(ci[0].used_ports.contains(&HostPort::udp(8125)));
    }

    #[test]
    fn spare_tasks_counts_room_without_reserving_it() {
        let mut ci = fleet(&[("a1", "zone-a", 8192, 16384), ("b1", "zone-b", 8192, 16384)]);
        let task = needs(1024, 4096, &[8080]);
        let mut spread = BTreeMap::new();
        place(&mut ci, &task, 1, &mut spread);
        // One port left (b1); memory would allow 7 more.
        assert_eq!(spare_tasks(&ci, &task, 5, &spread), 1);
        let no_port = needs(1024, 4096, &[]);
        assert_eq!(spare_tasks(&ci, &no_port, 10, &spread), 7);
        assert_eq!(ci[0].remaining_memory_mib(), 12288);
    }

    #[test]
    fn no_instances() {
        let p = place(&mut [], &needs(1, 1, &[]), 2, &mut BTreeMap::new());
        assert_eq!(p.unplaced, [Unplaced::NoInstances, Unplaced::NoInstances]);
        assert!(
            p.unplaced[0]
                .event("svc")
                .ends_with("Reason: No Container Instances were found in your cluster.")
        );
    }

    #[test]
    fn task_needs_follow_the_network_mode() {
        let containers = [ContainerNeeds {
            cpu: 512,
            memory: Some(2048),
            memory_reservation: Some(1536),
            ports: vec![
                (8081, None, Protocol::Tcp),
                (9000, Some(9000), Protocol::Tcp),
                (9100, Some(0), Protocol::Tcp),
            ],
        }];
        let bridge = TaskNeeds::of_task(&containers, PortMode::Bridge, None, None);
        assert_eq!(bridge, needs(512, 1536, &[9000]));
        let host = TaskNeeds::of_task(&containers, PortMode::Host, None, None);
        assert_eq!(host.host_ports, needs(0, 0, &[8081, 9000, 9100]).host_ports);
        let awsvpc = TaskNeeds::of_task(&containers, PortMode::Awsvpc, Some(1024), Some(4096));
        let one_interface = TaskNeeds {
            network_interface: true,
            ..needs(1024, 4096, &[])
        };
        assert_eq!(awsvpc, one_interface);
        let hard_only = [ContainerNeeds {
            cpu: 128,
            memory: Some(1024),
            ..Default::default()
        }];
        let t = TaskNeeds::of_task(&hard_only, PortMode::Awsvpc, None, None);
        assert_eq!(t.memory_mib, 1024);
    }

    /// awsvpc tasks take a network interface each: an m6i.2xlarge (4 interfaces, the
    /// primary one the instance's) holds three however small they are, and the fourth is
    /// reported as ECS words it; bridge tasks take none, and an instance whose limit is not
    /// known (registered elsewhere, maybe with ENI trunking) is not limited.
    #[test]
    fn awsvpc_tasks_are_limited_by_network_interfaces() {
        let slots = crate::awsvpc_task_slots("m6i.2xlarge");
        assert_eq!(slots, Some(3));
        assert_eq!(crate::awsvpc_task_slots("m5.large"), Some(2));
        assert_eq!(crate::awsvpc_task_slots("c6i.4xlarge"), Some(7));
        let small = TaskNeeds {
            network_interface: true,
            ..needs(128, 256, &[])
        };
        let mut one =
            vec![ContainerInstance::new("i-1", "a", 8192, 31744).with_task_interfaces(slots)];
        let p = place(&mut one, &small, 4, &mut BTreeMap::new());
        assert_eq!(p.placed.len(), 3);
        assert_eq!(p.unplaced.len(), 1);
        assert_eq!(p.unplaced[0].reason(), Some(Shortfall::NetworkInterface));
        assert!(
            p.unplaced[0].event("s").ends_with(
                "The closest matching container-instance i-1 encountered error \"RESOURCE:ENI\"."
            ),
            "{}",
            p.unplaced[0].event("s")
        );
        one[0].release(&small);
        assert!(
            one[0].misses(&small).is_empty(),
            "a stopped task gives its interface back"
        );
        let mut bridge =
            vec![ContainerInstance::new("i-1", "a", 8192, 31744).with_task_interfaces(slots)];
        assert_eq!(
            place(&mut bridge, &needs(128, 256, &[]), 10, &mut BTreeMap::new())
                .placed
                .len(),
            10
        );
        let mut unknown = vec![ContainerInstance::new("i-1", "a", 8192, 31744)];
        assert_eq!(
            place(&mut unknown, &small, 10, &mut BTreeMap::new())
                .placed
                .len(),
            10
        );
    }
}
