//! The desired state: what should exist in AWS, lowered from a spec, as plain values with
//! stable keys. The planner diffs it against observed live state; the executor turns it into
//! API calls. Field names follow the AWS APIs so `envctl render` reads like the request.
pub mod live;
mod lower;
pub mod name_limits;
pub mod requests;
pub mod rollout;
mod task_definition;
mod template;

use std::collections::BTreeMap;

use serde::Serialize;

pub use lower::{lower, parameter_family, parameter_group_name};
pub use task_definition::{
    ContainerDefinition, LogConfiguration, PortMapping, SecretRef, TaskDefinition,
};
pub use template::TemplateCache;

use envctl_aws_model::placement::TaskNeeds;

use crate::spec::catalog;
use crate::spec::deferred::Deferred;

/// The tags that mark a resource as envctl's; see docs/ownership.md.
pub mod tag {
    pub const TOOL: &str = "envctl:tool";
    pub const TOOL_VALUE: &str = "envctl";
    pub const ENV: &str = "envctl:env";
    /// On every resource of an env's copy (`--copy NAME`): the copy's name. `envctl:env`
    /// then holds the copy's instance name (`<env>-<copy>`), which ownership compares.
    pub const COPY: &str = "envctl:copy";
    pub const OWNER: &str = "envctl:owner";
    pub const CREATED: &str = "envctl:created";
    pub const EXPIRES: &str = "envctl:expires";
    pub const RUN_ID: &str = "envctl:run-id";
    pub const CONTENT_HASH: &str = "envctl:content-hash";
    /// On the ECS cluster while a run holds the environment's lock: `<run id> <user@host>`.
    pub const LOCKED_BY: &str = "envctl:locked-by";
    /// On a resource envctl took over with `--adopt` (it existed before envctl): a matrix
    /// run on it puts it back afterwards (`--restore`) unless told otherwise.
    pub const ADOPTED: &str = "envctl:adopted";
}

/// Everything one environment should contain.
#[derive(Debug, Clone, Serialize)]
pub struct DesiredState {
    /// The env's instance name: its `env:`, with the copy's suffix under `--copy` (the lock
    /// key, the journal, the observe cache and the `envctl:env` tag all follow it).
    pub env: String,
    /// `--copy NAME`: which copy of the env this is (docs/ownership.md, "Copies").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy: Option<crate::spec::copy::CopyName>,
    pub region: String,
    /// Tags every resource gets (ownership tags with times are added at creation).
    pub tags: BTreeMap<String, String>,
    pub ttl_secs: u64,
    /// Referenced, never created.
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
    pub cluster: EcsCluster,
    pub services: BTreeMap<String, EcsService>,
    pub kafka: BTreeMap<String, KafkaCluster>,
    pub db: Option<Database>,
    /// Days CloudWatch Logs keeps the events of every log group envctl creates
    /// (`logs.retention_days`); `None` keeps them forever (gc's empty desired state only).
    pub log_retention_days: Option<u32>,
    /// The load engines' log group (`/envctl/<env>/load`), created with the env like the
    /// services' groups; `None` where no engine runs (gc).
    pub load_log_group: Option<String>,
}

/// The log group the load engines' awslogs driver writes to: envctl creates it with the env
/// (owned, tagged, with the env's retention), so the engines' execution role needs no
/// `logs:CreateLogGroup` (docs/aws-behaviour.md, "The awslogs group must exist, or be
/// created by ECS").
pub fn load_log_group(env: &str) -> String {
    format!("/envctl/{env}/load")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EcsCluster {
    pub name: String,
    pub instance_type: String,
    pub instances: u32,
    /// Where the services' tasks run (`ecs.capacity`).
    pub capacity: ClusterCapacity,
}

/// The EC2 capacity the services are placed on, as far as envctl's part in it goes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClusterCapacity {
    /// An ECS Managed Instances capacity provider that envctl creates, owns and deletes.
    ManagedInstances(ManagedCapacity),
    /// An existing capacity provider: used in the services' strategy, never changed.
    Provider { name: String },
    /// Container instances registered by something else (`launchType: EC2`).
    Instances,
}

impl ClusterCapacity {
    /// The capacity provider the services' strategy names, if any.
    pub fn strategy_provider(&self) -> Option<&str> {
        match self {
            ClusterCapacity::ManagedInstances(m) => Some(&m.provider),
            ClusterCapacity::Provider { name } => Some(name),
            ClusterCapacity::Instances => None,
        }
    }
}

/// `ecs.capacity.managed_instances`, lowered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManagedCapacity {
    /// The provider's name (`managed_instances_provider_name`).
    pub provider: String,
    pub instance_types: Vec<String>,
    /// envctl's budget, checked by the placement lint; never sent (AWS has no bound).
    pub max: u32,
    pub infrastructure_role: String,
    pub instance_profile: String,
}

/// What a Managed Instances provider launches with, as CreateCapacityProvider and
/// UpdateCapacityProvider send it and DescribeCapacityProviders returns it: the planner
/// compares the live one with the desired one, and an update op carries the desired one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ManagedInstancesSettings {
    /// `infrastructureRoleArn`.
    pub infrastructure_role: String,
    /// `instanceLaunchTemplate.ec2InstanceProfileArn`.
    pub instance_profile: String,
    /// `instanceLaunchTemplate.networkConfiguration`: the env's network.
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
    /// `instanceRequirements.allowedInstanceTypes`.
    pub instance_types: Vec<String>,
    /// `instanceRequirements.vCpuCount.min` and `memoryMiB.min` (both required by the API):
    /// the smallest among the instance types, so none of them is excluded.
    pub min_vcpus: i32,
    pub min_memory_mib: i32,
}

impl ManagedCapacity {
    /// The provider's settings with the env's network. An instance type the catalogue does
    /// not know leaves the minimums at 1 vCPU / 1024 MiB rather than excluding it.
    pub fn settings(
        &self,
        subnets: &[String],
        security_groups: &[String],
    ) -> ManagedInstancesSettings {
        let sizes: Vec<catalog::InstanceSize> = self
            .instance_types
            .iter()
            .filter_map(|t| catalog::ec2_instance(t))
            .collect();
        let min_vcpus = sizes.iter().map(|s| s.vcpus).min().unwrap_or(1);
        let min_memory = sizes.iter().map(|s| s.memory_mib).min().unwrap_or(1024);
        ManagedInstancesSettings {
            infrastructure_role: self.infrastructure_role.clone(),
            instance_profile: self.instance_profile.clone(),
            subnets: subnets.to_vec(),
            security_groups: security_groups.to_vec(),
            instance_types: self.instance_types.clone(),
            min_vcpus: i32::try_from(min_vcpus).unwrap_or(i32::MAX),
            min_memory_mib: i32::try_from(min_memory).unwrap_or(i32::MAX),
        }
    }
}

impl DesiredState {
    /// The owned Managed Instances provider's settings, when the env has one.
    pub fn managed_instances_settings(&self) -> Option<ManagedInstancesSettings> {
        match &self.cluster.capacity {
            ClusterCapacity::ManagedInstances(m) => {
                Some(m.settings(&self.subnets, &self.security_groups))
            }
            _ => None,
        }
    }
}

/// The name envctl gives the cluster's Managed Instances capacity provider. The `envctl-`
/// prefix keeps it valid whatever the cluster is called: CreateCapacityProvider refuses
/// names starting with "aws", "ecs" or "fargate" (API reference, `name`).
pub fn managed_instances_provider_name(cluster: &str) -> String {
    format!("envctl-{cluster}")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EcsService {
    pub name: String,
    pub desired_count: u32,
    pub task_definition: TaskDefinition,
    /// Resources whose outputs the task definition needs (`rds.writer`, `kafka.main`).
    pub depends_on: Vec<String>,
}

/// An MSK cluster and the configuration that holds its server properties.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KafkaCluster {
    /// Key under `kafka:` in the spec.
    pub key: String,
    pub name: String,
    pub broker_type: String,
    pub brokers: u32,
    pub zones: u32,
    /// The version string as MSK takes it ("3.7.x.kraft" selects KRaft).
    pub kafka_version: String,
    pub kraft: bool,
    pub storage_gb: u32,
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
    pub configuration: KafkaConfiguration,
    /// `EncryptionInTransit.ClientBroker`, always sent: MSK's own default is TLS only, which
    /// has no plaintext bootstrap string (docs/aws-behaviour.md).
    pub client_broker: String,
    /// The client `security.protocol` matching `client_broker` (PLAINTEXT or SSL); it also
    /// decides which bootstrap string the services get.
    pub security_protocol: String,
}

/// The MSK configuration a cluster runs at a Kafka version: `<cluster>-config-<version>`,
/// dots as dashes (configuration names allow only letters, digits and `-`). A
/// configuration's `KafkaVersions` is fixed when it is created, so a version upgrade needs
/// another configuration; naming it after the version makes that one a new resource and
/// the old one a leftover the plan deletes once the cluster has moved off it
/// (docs/aws-behaviour.md, "A Kafka version upgrade needs a configuration that supports the
/// target").
pub fn kafka_configuration_name(cluster: &str, kafka_version: &str) -> String {
    let version: String = kafka_version
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{cluster}-config-{version}")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KafkaConfiguration {
    pub name: String,
    /// server.properties lines, sorted by key, so equal settings give equal text.
    pub server_properties: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Database {
    pub writer: DbInstance,
    pub readers: Vec<DbInstance>,
    pub parameter_group: Option<DbParameterGroup>,
    pub subnet_group: DbSubnetGroup,
}

impl DesiredState {
    /// The CloudWatch Logs groups the services' awslogs drivers write to, in the env's
    /// Region: envctl creates them (owned, tagged) instead of relying on the driver's
    /// `awslogs-create-group`, which needs logs:CreateLogGroup on the execution role
    /// (docs/aws-behaviour.md, "The awslogs group must exist, or be created by ECS"). The
    /// load engines' group is one of them, used by no service.
    pub fn log_groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if let Some(group) = &self.load_log_group {
            out.insert(group.clone(), Vec::new());
        }
        for service in self.services.values() {
            for c in &service.task_definition.container_definitions {
                let Some(log) = &c.log_configuration else {
                    continue;
                };
                let region = log.options.get("awslogs-region");
                if log.log_driver != "awslogs" || region.is_some_and(|r| r != &self.region) {
                    continue;
                }
                if let Some(group) = log.options.get("awslogs-group") {
                    let users = out.entry(group.clone()).or_default();
                    if !users.contains(&service.name) {
                        users.push(service.name.clone());
                    }
                }
            }
        }
        out
    }
}

impl Database {
    /// The Secrets Manager secret envctl creates for the writer's master credentials (JSON
    /// `username`/`password`). Not RDS's ManageMasterUserPassword: RDS creates no read
    /// replica of such a writer (docs/aws-behaviour.md, "Master credentials").
    pub fn master_secret_name(&self) -> String {
        master_secret_name(&self.writer.identifier)
    }
}

/// The DB subnet group envctl creates for a writer that names none: `<writer>-subnets`.
pub fn db_subnet_group_name(writer: &str) -> String {
    format!("{writer}-subnets")
}

/// The master secret's name for a writer identifier (see [`Database::master_secret_name`]).
pub fn master_secret_name(writer: &str) -> String {
    format!("envctl-{writer}-master")
}

/// Where the instances live: without a subnet group RDS uses the default VPC, where a
/// security group of the env's VPC is rejected (docs/aws-behaviour.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbSubnetGroup {
    pub name: String,
    /// Created by envctl from `network.subnets` (false: an existing group named in the env).
    pub owned: bool,
    pub subnets: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbInstance {
    pub identifier: String,
    pub class: String,
    pub engine: String,
    pub engine_version: Option<String>,
    /// GiB; readers inherit the writer's storage.
    pub storage_gb: u32,
    /// The writer a reader replicates.
    pub source: Option<String>,
    pub skip_final_snapshot: bool,
    pub parameter_group: Option<String>,
    /// The writer's initial database (`DBName`); replicas copy the writer's databases.
    pub database: String,
    /// The writer's subnet group; a same-Region replica inherits it.
    pub subnet_group: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbParameterGroup {
    pub name: String,
    pub family: String,
    pub parameters: BTreeMap<String, String>,
}

impl KafkaCluster {
    pub fn resource(&self) -> String {
        format!("kafka.{}", self.key)
    }
}

impl DesiredState {
    /// Every reference any task definition makes, for "known after apply" reporting.
    pub fn deferred_values(&self) -> impl Iterator<Item = &Deferred> {
        self.services.values().flat_map(|s| {
            s.task_definition
                .container_definitions
                .iter()
                .flat_map(|c| c.environment.values())
        })
    }
}

/// What one task of each service reserves on a container instance: what the capacity check,
/// the rollout settings, the planner and preflight place against the instances.
pub fn task_needs(desired: &DesiredState) -> BTreeMap<String, TaskNeeds> {
    desired
        .services
        .iter()
        .map(|(name, s)| (name.clone(), s.task_definition.needs()))
        .collect()
}
