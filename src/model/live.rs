//! What exists in AWS, as observed: plain values the planner compares with the desired state.
//! Filled by `account::observe`; built by hand in tests.
use envctl_aws_model::status::{
    DbInstanceStatus, DeploymentStatus, ParameterApplyStatus, RolloutState, ServiceStatus,
};
use std::collections::{BTreeMap, BTreeSet};

use envctl_aws_model::placement::HostPort;
use serde::Serialize;

use super::{DesiredState, TaskDefinition, tag};
use crate::spec::deferred::Outputs;

#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveState {
    pub cluster: Option<LiveCluster>,
    /// Services of the cluster that are ACTIVE or DRAINING, by name.
    pub services: BTreeMap<String, LiveService>,
    /// Content of task-definition revisions in use, by ARN (revisions are immutable).
    pub task_definitions: BTreeMap<String, TaskDefinition>,
    /// MSK clusters by cluster name.
    pub kafka: BTreeMap<String, LiveKafka>,
    /// MSK configurations by name.
    pub kafka_configurations: BTreeMap<String, LiveKafkaConfiguration>,
    /// DB instances by identifier.
    pub db_instances: BTreeMap<String, LiveDb>,
    pub db_parameter_groups: BTreeMap<String, LiveParameterGroup>,
    /// The env's owned DB subnet group, by name, when it exists (read only when the spec
    /// says envctl owns it: DescribeDBSubnetGroups returns no tags).
    pub db_subnet_groups: BTreeSet<String>,
    /// The Secrets Manager secret envctl keeps the writer's master credentials in, by name,
    /// when it exists (read by name: [`super::Database::master_secret_name`]).
    #[serde(default)]
    pub db_master_secrets: BTreeMap<String, LiveSecret>,
    /// The CloudWatch Logs groups the task definitions name, by name, when they exist.
    #[serde(default)]
    pub log_groups: BTreeMap<String, LiveLogGroup>,
    /// The capacity provider the spec names (managed or existing), by name, when it exists.
    #[serde(default)]
    pub capacity_providers: BTreeMap<String, LiveCapacityProvider>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveCapacityProvider {
    pub name: String,
    pub arn: String,
    /// ACTIVE or INACTIVE (deleted; ECS describes it for a while).
    pub status: String,
    /// MANAGED_INSTANCES, EC2_AUTOSCALING, FARGATE...
    pub kind: String,
    pub tags: Tags,
    /// The cluster a cluster-scoped provider (Managed Instances) belongs to, as
    /// DescribeCapacityProviders gives it (a name or an ARN); none for account-wide ones.
    #[serde(default)]
    pub cluster: Option<String>,
    /// What a MANAGED_INSTANCES provider launches with (`managedInstancesProvider`); none for
    /// other kinds. Compared with the desired settings, so an edit is not silent drift.
    #[serde(default)]
    pub managed: Option<super::ManagedInstancesSettings>,
}

pub type Tags = BTreeMap<String, String>;

/// A CloudWatch Logs group (DescribeLogGroups; tags from ListTagsForResource).
#[derive(Debug, Clone, Serialize)]
pub struct LiveLogGroup {
    pub name: String,
    /// Without the trailing `:*` (`logGroupArn`), as ListTagsForResource takes it.
    pub arn: String,
    pub tags: Tags,
}

/// A Secrets Manager secret, as DescribeSecret shows it (never its value).
#[derive(Debug, Clone, Serialize)]
pub struct LiveSecret {
    pub name: String,
    pub arn: String,
    pub tags: Tags,
    /// Scheduled for deletion (DeleteSecret without ForceDeleteWithoutRecovery): it keeps
    /// its name and refuses GetSecretValue until the date passes.
    pub deleting: bool,
}

/// Whether tags mark a resource as envctl's for this environment.
pub fn owned_by(tags: &Tags, env: &str) -> bool {
    tags.get(tag::TOOL).map(String::as_str) == Some(tag::TOOL_VALUE)
        && tags.get(tag::ENV).map(String::as_str) == Some(env)
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveCluster {
    pub name: String,
    pub arn: String,
    pub status: String,
    pub tags: Tags,
    /// Capacity providers attached (PutClusterCapacityProviders).
    #[serde(default)]
    pub capacity_providers: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveService {
    pub name: String,
    pub arn: String,
    pub status: String,
    pub desired_count: u32,
    pub running_count: u32,
    pub task_definition: String,
    pub deployments: Vec<LiveDeployment>,
    pub tags: Tags,
    /// For an unhealthy service ([`LiveService::unhealthy`]): its latest events and why its
    /// latest tasks stopped, read by observe to explain the drift.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub problems: Vec<String>,
    /// The service's event messages, newest first, as DescribeServices returns them: the
    /// deployment wait reads placement failures here.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub events: Vec<String>,
    /// How the service is placed and rolled out, as DescribeServices returns it; `None` when
    /// not observed (a hand-built state), which the planner then does not compare.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub placement: Option<Placement>,
}

/// What UpdateService sends besides the revision and the count: the launch type or
/// capacity provider strategy, the awsvpc network configuration and the deployment
/// percentages. The planner builds the desired one from the same request apply sends
/// (`Placement::of`) and compares it with the observed one, so none of them changes
/// silently (issue 22).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// `EC2` (or another launch type); none on a capacity provider strategy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_type: Option<String>,
    /// (capacity provider, weight), sorted: ECS does not promise the order sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub strategy: Vec<(String, u32)>,
    /// The awsvpc configuration (subnets and security groups sorted); none for bridge and
    /// host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<super::requests::AwsvpcConfiguration>,
    pub minimum_healthy_percent: u32,
    pub maximum_percent: u32,
}

impl Placement {
    /// The placement a CreateService/UpdateService request asks for.
    pub fn of(req: &super::requests::CreateService) -> Placement {
        Placement::new(
            req.launch_type.clone(),
            req.capacity_provider_strategy
                .iter()
                .map(|i| (i.capacity_provider.clone(), i.weight))
                .collect(),
            req.network_configuration
                .as_ref()
                .map(|n| n.awsvpc_configuration.clone()),
            req.deployment_configuration.minimum_healthy_percent,
            req.deployment_configuration.maximum_percent,
        )
    }

    /// A placement in canonical form (lists sorted).
    pub fn new(
        launch_type: Option<String>,
        mut strategy: Vec<(String, u32)>,
        network: Option<super::requests::AwsvpcConfiguration>,
        minimum_healthy_percent: u32,
        maximum_percent: u32,
    ) -> Placement {
        strategy.sort();
        let network = network.map(|mut n| {
            n.subnets.sort();
            n.security_groups.sort();
            n
        });
        Placement {
            // A launch type beside a strategy is not a placement ECS has.
            launch_type: launch_type.filter(|_| strategy.is_empty()),
            strategy,
            network,
            minimum_healthy_percent,
            maximum_percent,
        }
    }

    /// "EC2" or "envctl-qcp1-pvt:1": how a plan shows where the tasks run.
    pub fn placed_on(&self) -> String {
        if self.strategy.is_empty() {
            return format!(
                "launchType {}",
                self.launch_type.as_deref().unwrap_or("(cluster default)")
            );
        }
        let items: Vec<String> = self
            .strategy
            .iter()
            .map(|(p, w)| format!("{p}:{w}"))
            .collect();
        format!("strategy {}", items.join(","))
    }
}

impl LiveService {
    /// Why the service is broken, if it is: its PRIMARY deployment FAILED (with the circuit
    /// breaker's rollback off, or nothing to roll back to, ECS leaves it so and the service
    /// keeps the desired revision, so comparing content alone calls it in sync), or the
    /// deployment COMPLETED and tasks died since (running < desired). A deployment still
    /// IN_PROGRESS is the start grace: ECS itself decides COMPLETED or FAILED (circuit
    /// breaker), so nothing is judged before it does.
    pub fn unhealthy(&self) -> Option<String> {
        if self.status != ServiceStatus::Active || self.desired_count == 0 {
            return None;
        }
        let primary = self
            .deployments
            .iter()
            .find(|d| d.status == DeploymentStatus::Primary)?;
        match RolloutState::parse(&primary.rollout_state) {
            RolloutState::Failed => Some(format!(
                "deployment {} FAILED, {} of {} tasks running",
                primary.id, self.running_count, self.desired_count
            )),
            RolloutState::Completed if self.running_count < self.desired_count => Some(format!(
                "{} of {} tasks running after deployment {} completed",
                self.running_count, self.desired_count, primary.id
            )),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveDeployment {
    pub id: String,
    /// PRIMARY (the newest) or ACTIVE (being replaced).
    pub status: String,
    /// IN_PROGRESS, COMPLETED or FAILED.
    pub rollout_state: String,
    pub task_definition: String,
    pub running_count: u32,
    pub desired_count: u32,
    pub failed_tasks: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveKafka {
    pub name: String,
    pub arn: String,
    /// CREATING, ACTIVE, UPDATING, DELETING, FAILED...
    pub state: String,
    /// The token every update must present (optimistic concurrency).
    pub current_version: String,
    pub broker_type: String,
    pub brokers: u32,
    pub client_subnets: Vec<String>,
    /// As MSK names it ("3.7.x.kraft" for KRaft).
    pub kafka_version: String,
    pub storage_gb: u32,
    pub configuration_arn: Option<String>,
    pub configuration_revision: Option<i64>,
    pub bootstrap_brokers: Option<String>,
    pub tags: Tags,
    /// While MSK's cool-down after the cluster's last storage scaling lasts, when it ends at
    /// the earliest (epoch seconds): the next UpdateBrokerStorage is refused until then
    /// (`envctl_aws_model::msk::STORAGE_COOL_DOWN_S`). Read only when the spec grows the
    /// storage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_cool_down_until: Option<f64>,
}

impl LiveKafka {
    pub fn kraft(&self) -> bool {
        self.kafka_version.ends_with(".kraft")
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveKafkaConfiguration {
    pub name: String,
    pub arn: String,
    pub latest_revision: i64,
    /// server.properties of the latest revision.
    pub server_properties: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveDb {
    pub identifier: String,
    pub arn: String,
    pub status: String,
    pub class: String,
    /// The class a pending ModifyDBInstance will apply.
    pub pending_class: Option<String>,
    pub engine: String,
    pub engine_version: String,
    pub storage_gb: u32,
    pub source: Option<String>,
    pub address: Option<String>,
    pub port: Option<u16>,
    pub parameter_group: Option<String>,
    pub tags: Tags,
    /// The Secrets Manager secret holding the writer's master credentials: the one envctl
    /// creates ([`LiveState::db_master_secrets`]), or for a writer made with
    /// ManageMasterUserPassword RDS's own (`MasterUserSecret.SecretArn`). JSON with
    /// `username` and `password`, so templates pass `<arn>:password::` as a valueFrom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_secret_arn: Option<String>,
    /// Whether the parameter group's values are in effect (`DBParameterGroups[0]
    /// .ParameterApplyStatus`): `in-sync`; `applying` (dynamic changes, for a moment);
    /// `pending-reboot` (static ones, such as max_connections, until a reboot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter_apply_status: Option<String>,
}

impl LiveDb {
    /// The group's values are in effect: converged means `in-sync` (no status: nothing to
    /// wait for, as with an instance RDS reported without a group).
    pub fn parameters_in_sync(&self) -> bool {
        self.parameter_apply_status
            .as_deref()
            .is_none_or(|s| s == ParameterApplyStatus::InSync)
    }
}

/// Whether a live engine version satisfies the desired one: the same major, and a minor at or
/// above the desired minor (RDS's automatic minor upgrades move the live version up; asking
/// to go back is a downgrade RDS refuses). A desired major alone ("16") accepts every minor.
/// Versions compare numerically, so "16.10" is above "16.9" and "16.1" is not "16.10".
pub fn engine_version_satisfies(live: &str, desired: &str) -> bool {
    fn parts(v: &str) -> Vec<u64> {
        v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
    }
    let (live, desired) = (parts(live), parts(desired));
    match (live.first(), desired.first()) {
        (Some(l), Some(d)) if l == d => live[1..] >= desired[1..],
        _ => false,
    }
}

/// Whether a DB instance status means usable and not changing any more: `available`, or
/// `storage-optimization`, which follows every storage change for hours while the instance
/// serves normally (RDS User Guide, "Increasing DB instance storage capacity").
pub fn db_settled(status: &str) -> bool {
    status == DbInstanceStatus::Available || status == DbInstanceStatus::StorageOptimization
}

/// Why RDS would refuse to grow an instance's storage from `live_gb` to `desired_gb` now, if
/// it would: an increase under 10%, or a change while the last one is still optimizing (RDS
/// User Guide, "Increasing DB instance storage capacity"; the six hours after a change are
/// not visible in DescribeDBInstances). `storage-optimization` itself is a usable state.
pub fn storage_change_refusal(live_gb: u32, desired_gb: u32, status: &str) -> Option<String> {
    if desired_gb <= live_gb {
        return None;
    }
    if u64::from(desired_gb) * 10 < u64::from(live_gb) * 11 {
        return Some(format!(
            "RDS grows storage by at least 10%: {live_gb} GiB needs at least {} GiB, not {desired_gb}",
            (u64::from(live_gb) * 11).div_ceil(10)
        ));
    }
    if status == DbInstanceStatus::StorageOptimization {
        return Some(
            "the previous storage change is still being optimized; RDS accepts the next one six hours after it at the earliest"
                .to_string(),
        );
    }
    None
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveParameterGroup {
    pub name: String,
    pub arn: String,
    /// The group's own family (DescribeDBParameterGroups), fixed when it was created.
    pub family: String,
    /// Parameters set by the user (Source=user).
    pub parameters: BTreeMap<String, String>,
    pub tags: Tags,
}

impl LiveState {
    /// Outputs of other resources that task definitions reference, as far as they exist:
    /// `rds.writer.address`, `rds.reader.port`, `kafka.<key>.bootstrap_brokers`, ...
    pub fn outputs(&self, desired: &DesiredState) -> Outputs {
        let mut out = Outputs::new();
        if let Some(db) = &desired.db {
            let mut put = |role: &str, id: &str| {
                if let Some(live) = self.db_instances.get(id)
                    && let (Some(address), Some(port)) = (&live.address, live.port)
                {
                    out.insert(format!("rds.{role}.address"), address.clone());
                    out.insert(format!("rds.{role}.port"), port.to_string());
                }
            };
            put("writer", &db.writer.identifier);
            if let Some(reader) = db.readers.first() {
                put("reader", &reader.identifier);
            }
            if let Some(arn) = self
                .db_instances
                .get(&db.writer.identifier)
                .and_then(|w| w.master_secret_arn.as_ref())
            {
                out.insert(
                    crate::spec::deferred::MASTER_SECRET_ARN.to_string(),
                    arn.clone(),
                );
            }
        }
        for (key, cluster) in &desired.kafka {
            let Some(bootstrap) = self
                .kafka
                .get(&cluster.name)
                .and_then(|k| k.bootstrap_brokers.as_ref())
            else {
                continue;
            };
            out.insert(format!("kafka.{key}.bootstrap_brokers"), bootstrap.clone());
            let first = bootstrap.split(',').next().unwrap_or_default();
            let (host, port) = first.rsplit_once(':').unwrap_or((first, "9092"));
            out.insert(format!("kafka.{key}.host"), host.to_string());
            out.insert(format!("kafka.{key}.port"), port.to_string());
        }
        out
    }
}

fn owned_tags(env: &str) -> Tags {
    BTreeMap::from([
        (tag::TOOL.into(), tag::TOOL_VALUE.into()),
        (tag::ENV.into(), env.into()),
    ])
}

fn converged_secret_arn(name: &str) -> String {
    format!("arn:aws:secretsmanager:us-east-1:1:secret:{name}-AbCdEf")
}

/// The live state a successful apply of `desired` leaves behind, with made-up ARNs and
/// endpoints: what the matrix planner diffs against to estimate a transition, and what
/// planner tests start from.
pub fn converged(desired: &DesiredState) -> LiveState {
    let mut live = LiveState {
        cluster: Some(LiveCluster {
            name: desired.cluster.name.clone(),
            arn: format!("arn:aws:ecs:us-east-1:1:cluster/{}", desired.cluster.name),
            status: "ACTIVE".into(),
            tags: owned_tags(&desired.env),
            capacity_providers: desired
                .cluster
                .capacity
                .strategy_provider()
                .map(str::to_string)
                .into_iter()
                .collect(),
        }),
        capacity_providers: desired
            .cluster
            .capacity
            .strategy_provider()
            .map(|name| {
                let cp = LiveCapacityProvider {
                    name: name.to_string(),
                    arn: format!("arn:aws:ecs:us-east-1:1:capacity-provider/{name}"),
                    status: "ACTIVE".into(),
                    kind: "MANAGED_INSTANCES".into(),
                    tags: owned_tags(&desired.env),
                    cluster: Some(desired.cluster.name.clone()),
                    managed: desired.managed_instances_settings(),
                };
                (name.to_string(), cp)
            })
            .into_iter()
            .collect(),
        ..LiveState::default()
    };
    for name in desired.log_groups().into_keys() {
        live.log_groups.insert(
            name.clone(),
            LiveLogGroup {
                arn: format!("arn:aws:logs:us-east-1:1:log-group:{name}"),
                name,
                tags: owned_tags(&desired.env),
            },
        );
    }
    if let Some(db) = &desired.db {
        if db.subnet_group.owned {
            live.db_subnet_groups.insert(db.subnet_group.name.clone());
        }
        if let Some(g) = &db.parameter_group {
            live.db_parameter_groups.insert(
                g.name.clone(),
                LiveParameterGroup {
                    name: g.name.clone(),
                    arn: format!("arn:aws:rds:us-east-1:1:pg:{}", g.name),
                    family: g.family.clone(),
                    parameters: g.parameters.clone(),
                    tags: owned_tags(&desired.env),
                },
            );
        }
        for i in std::iter::once(&db.writer).chain(db.readers.iter()) {
            live.db_instances.insert(
                i.identifier.clone(),
                LiveDb {
                    identifier: i.identifier.clone(),
                    arn: format!("arn:aws:rds:us-east-1:1:db:{}", i.identifier),
                    status: "available".into(),
                    class: i.class.clone(),
                    pending_class: None,
                    engine: i.engine.clone(),
                    engine_version: i.engine_version.clone().unwrap_or_else(|| "16.3".into()),
                    storage_gb: i.storage_gb,
                    source: i.source.clone(),
                    address: Some(format!("{}.abc.us-east-1.rds.amazonaws.com", i.identifier)),
                    port: Some(5432),
                    parameter_group: i.parameter_group.clone(),
                    tags: owned_tags(&desired.env),
                    // The writer's credentials are in the secret envctl creates.
                    master_secret_arn: i
                        .source
                        .is_none()
                        .then(|| converged_secret_arn(&db.master_secret_name())),
                    parameter_apply_status: Some("in-sync".into()),
                },
            );
        }
        let name = db.master_secret_name();
        live.db_master_secrets.insert(
            name.clone(),
            LiveSecret {
                arn: converged_secret_arn(&name),
                name,
                tags: owned_tags(&desired.env),
                deleting: false,
            },
        );
    }
    for k in desired.kafka.values() {
        let config_arn = format!(
            "arn:aws:kafka:us-east-1:1:configuration/{}/x",
            k.configuration.name
        );
        live.kafka_configurations.insert(
            k.configuration.name.clone(),
            LiveKafkaConfiguration {
                name: k.configuration.name.clone(),
                arn: config_arn.clone(),
                latest_revision: 1,
                server_properties: k.configuration.server_properties.clone(),
            },
        );
        live.kafka.insert(
            k.name.clone(),
            LiveKafka {
                name: k.name.clone(),
                arn: format!("arn:aws:kafka:us-east-1:1:cluster/{}/x", k.name),
                state: "ACTIVE".into(),
                current_version: "K1".into(),
                broker_type: k.broker_type.clone(),
                brokers: k.brokers,
                client_subnets: k.subnets.clone(),
                kafka_version: k.kafka_version.clone(),
                storage_gb: k.storage_gb,
                configuration_arn: Some(config_arn),
                configuration_revision: Some(1),
                bootstrap_brokers: Some(format!("b-1.{0}.kafka:9092,b-2.{0}.kafka:9092", k.name)),
                tags: owned_tags(&desired.env),
                storage_cool_down_until: None,
            },
        );
    }
    let outputs = live.outputs(desired);
    let requests = super::requests::create_services(desired);
    for s in desired.services.values() {
        let arn = format!(
            "arn:aws:ecs:us-east-1:1:task-definition/{}:1",
            s.task_definition.family
        );
        let resolved = s
            .task_definition
            .resolve(&outputs)
            .unwrap_or_else(|_| s.task_definition.clone());
        live.task_definitions.insert(arn.clone(), resolved);
        live.services.insert(
            s.name.clone(),
            LiveService {
                name: s.name.clone(),
                arn: format!(
                    "arn:aws:ecs:us-east-1:1:service/{}/{}",
                    desired.cluster.name, s.name
                ),
                status: "ACTIVE".into(),
                desired_count: s.desired_count,
                running_count: s.desired_count,
                task_definition: arn.clone(),
                deployments: vec![],
                events: vec![],
                tags: owned_tags(&desired.env),
                problems: Vec::new(),
                placement: requests.get(&s.name).map(Placement::of),
            },
        );
    }
    live
}

/// One registered container instance: its zone and CPU units / memory MiB, registered and
/// remaining (what `status` shows and the capacity wait compares with the services), and
/// the host ports in use on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceCapacity {
    pub arn: String,
    /// ACTIVE, DRAINING, REGISTERING, ...: only ACTIVE instances take new tasks.
    pub status: String,
    pub zone: Option<String>,
    pub registered_cpu: i32,
    pub registered_memory: i32,
    pub remaining_cpu: i32,
    pub remaining_memory: i32,
    /// `remainingResources` PORTS and PORTS_UDP: unlike CPU and memory these list what is
    /// taken (the agent's reserved ports and every running task's fixed host ports), not
    /// what is left; any port not listed is free (API Reference, ContainerInstance).
    pub ports_in_use: BTreeSet<HostPort>,
}

#[cfg(test)]
mod engine_version_tests {
    use super::engine_version_satisfies;

    #[test]
    fn storage_growth_needs_ten_percent_and_no_optimization_in_progress() {
        use super::storage_change_refusal;
        assert_eq!(storage_change_refusal(500, 550, "available"), None);
        assert!(storage_change_refusal(500, 549, "available").is_some_and(|r| r.contains("550")));
        assert!(storage_change_refusal(500, 600, "storage-optimization").is_some());
        assert_eq!(
            storage_change_refusal(500, 500, "storage-optimization"),
            None
        );
    }

    #[test]
    fn a_live_minor_at_or_above_the_desired_one_satisfies_it() {
        assert!(engine_version_satisfies("16.8", "16"));
        assert!(engine_version_satisfies("16.8", "16.6"));
        assert!(engine_version_satisfies("16.6", "16.6"));
        assert!(engine_version_satisfies("16.10", "16.9"));
        assert!(
            !engine_version_satisfies("16.6", "16.8"),
            "a live minor below the desired"
        );
        assert!(
            !engine_version_satisfies("16.1", "16.10"),
            "prefix is not a version match"
        );
        assert!(!engine_version_satisfies("17.4", "16"), "another major");
    }
}
