//! The environment spec (`envs/*.yaml`): what should exist, as the user wrote it.
//!
//! Fields keep their source span ([`At`]) where a lint or a later error needs to point at
//! them. Defaults (documented in docs/spec.md) are applied here, so everything downstream
//! reads complete values.
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::decode::{At, Decode, Decoder, Duration, Scalar};
use super::diagnostic::Diagnostic;
use super::node::Node;

/// A performance-test environment: ECS services on EC2, Kafka (MSK) clusters, RDS Postgres.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EnvSpec {
    /// Short name of the environment (lowercase letters, digits, dashes); prefixes every
    /// resource name and tag.
    pub env: At<String>,
    /// Path of another env file this one is a small diff of (relative to this file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extends: Option<At<String>>,
    /// AWS Region, e.g. us-east-1 (overridden by --region).
    pub region: At<String>,
    /// Team or person responsible; written to the `envctl:owner` tag.
    pub owner: At<String>,
    /// How long resources may live before `envctl gc --expired` removes them (default 24h).
    #[schemars(with = "Option<Duration>")]
    pub ttl: At<Duration>,
    /// Where the apply lock lives when several machines (CI runners) apply this env:
    /// `s3://bucket/prefix/`. Default: a file under the state dir (one machine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<At<String>>,
    /// Extra tags on every resource envctl creates.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Networks are referenced, never created.
    pub network: Network,
    pub ecs: Ecs,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rds: Option<Rds>,
    /// MSK clusters by key; services refer to them by this key.
    #[serde(default)]
    pub kafka: BTreeMap<String, KafkaCluster>,
    /// Services by name; the special key `defaults` holds values every service inherits.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, ServiceSchema>")]
    pub services: BTreeMap<String, Service>,
    /// How long apply and destroy wait for each kind of resource (`--wait-timeout` wins).
    #[serde(default, skip_serializing_if = "Waits::is_empty")]
    pub waits: Waits,
    /// The CloudWatch Logs groups envctl creates (the services' `/ecs/<env>` and the load
    /// engines' `/envctl/<env>/load`).
    #[serde(default)]
    pub logs: Logs,
}

/// The log groups envctl creates: how long CloudWatch Logs keeps their events.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Logs {
    /// Days CloudWatch Logs keeps a group's events (PutRetentionPolicy; default 30). One of
    /// the values CloudWatch Logs accepts: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365,
    /// 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653.
    #[schemars(with = "Option<u32>")]
    pub retention_days: At<u32>,
}

/// The retention envctl gives its log groups unless `logs.retention_days` says otherwise:
/// long enough to read a week's runs, short enough that a forgotten env's logs cost little.
pub const DEFAULT_LOG_RETENTION_DAYS: u32 = 30;

/// The values PutRetentionPolicy accepts for `retentionInDays` (CloudWatch Logs API
/// Reference, PutRetentionPolicy; docs/aws-behaviour.md, "Log groups get a retention").
pub const LOG_RETENTION_DAYS: &[u32] = &[
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
    3288, 3653,
];

impl Default for Logs {
    fn default() -> Self {
        Logs {
            retention_days: At::builtin(DEFAULT_LOG_RETENTION_DAYS),
        }
    }
}

impl Decode for Logs {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "logs", &["retention_days"])?;
        let retention_days: Option<At<u32>> = f.opt(d, "retention_days");
        let retention_days = match retention_days {
            Some(days) if !LOG_RETENTION_DAYS.contains(&days.value) => {
                let allowed: Vec<String> = LOG_RETENTION_DAYS.iter().map(u32::to_string).collect();
                d.error(
                    Diagnostic::error(
                        "invalid-value",
                        days.span,
                        format!(
                            "`logs.retention_days: {}` is not a retention CloudWatch Logs accepts",
                            days.value
                        ),
                    )
                    .with_hint(format!("use one of {}", allowed.join(", "))),
                );
                return None;
            }
            Some(days) => days,
            None => At::builtin(DEFAULT_LOG_RETENTION_DAYS),
        };
        Some(Logs { retention_days })
    }
}

/// Deadlines of the waits per kind of resource; a kind left out keeps envctl's default
/// (docs/spec.md).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Waits {
    /// A service's deployment and its deletion (default 30m and 15m).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Duration>")]
    pub services: Option<At<Duration>>,
    /// An MSK cluster's creation, update and deletion (default 90m, 3h and 1h).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Duration>")]
    pub kafka: Option<At<Duration>>,
    /// A DB instance's creation, modification and deletion (default 90m, 90m and 1h).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Duration>")]
    pub rds: Option<At<Duration>>,
    /// How long a deployment may keep reporting that its tasks cannot be placed (ECS's
    /// "unable to place a task" event) before its service fails with that event (default
    /// 3m): long enough for instances to launch and register, far shorter than `services`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Duration>")]
    pub placement: Option<At<Duration>>,
    /// How long apply waits, before it creates services, for the container instances of
    /// `ecs.capacity: {instances: N}` to register with room for them (default 10m).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Duration>")]
    pub capacity: Option<At<Duration>>,
}

impl Waits {
    pub fn is_empty(&self) -> bool {
        self.services.is_none()
            && self.kafka.is_none()
            && self.rds.is_none()
            && self.placement.is_none()
            && self.capacity.is_none()
    }
}

pub const WAIT_FIELDS: &[&str] = &["services", "kafka", "rds", "placement", "capacity"];

impl Decode for Waits {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "waits", WAIT_FIELDS)?;
        let mut deadline = |name: &str| {
            let value: Option<At<Duration>> = f.opt(d, name);
            // A zero deadline would fail every wait at its first look.
            value.filter(|v| {
                if v.value.secs() == 0 {
                    d.error(
                        Diagnostic::error(
                            "invalid-value",
                            v.span,
                            format!("`waits.{name}` must be above zero"),
                        )
                        .with_hint("write how long a wait may take: 20m, 2h; or leave it out for the default"),
                    );
                    false
                } else {
                    true
                }
            })
        };
        let services = deadline("services");
        let kafka = deadline("kafka");
        let rds = deadline("rds");
        let placement = deadline("placement");
        let capacity = deadline("capacity");
        Some(Waits {
            services,
            kafka,
            rds,
            placement,
            capacity,
        })
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Network {
    /// Subnet ids; MSK puts one broker group in each (zones), RDS uses them as its subnet group.
    pub subnets: Vec<At<String>>,
    pub security_groups: Vec<At<String>>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Ecs {
    /// ECS cluster name.
    pub cluster: At<String>,
    pub capacity: Capacity,
    /// IAM role ECS uses to start tasks (`executionRoleArn`): pulls images, reads `secrets`,
    /// writes logs (and creates the log group, see docs/spec.md). Required with `secrets`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_role: Option<At<String>>,
    /// IAM role the containers run as (`taskRoleArn`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_role: Option<At<String>>,
}

/// The EC2 capacity behind the ECS cluster, in one of three forms (docs/spec.md):
/// `managed_instances` (envctl creates and owns an ECS Managed Instances capacity provider),
/// `provider` (an existing capacity provider, never changed) or plain `instance_type` plus
/// `instances` (container instances registered by something else).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Capacity {
    /// EC2 instance type, e.g. m6i.2xlarge (with `managed_instances`: the first of its
    /// `instance_types`). Placement checks size every instance as this type.
    #[schemars(with = "Option<String>")]
    pub instance_type: At<String>,
    /// Number of container instances the services may use (with `managed_instances`: its
    /// `instances.max`; with `provider`: the most the provider scales to).
    #[schemars(with = "Option<u32>")]
    pub instances: At<u32>,
    /// An ECS Managed Instances capacity provider that envctl creates, attaches to the
    /// cluster, places the services on and deletes on destroy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_instances: Option<ManagedInstances>,
    /// Name of an existing capacity provider the services are placed on (envctl never
    /// changes it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<At<String>>,
}

/// How the capacity is provided, as far as envctl's part in it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityKind {
    /// envctl owns an ECS Managed Instances capacity provider.
    ManagedInstances,
    /// An existing capacity provider, used with a capacity provider strategy.
    Provider,
    /// Container instances registered elsewhere; envctl only checks they are there.
    Instances,
}

impl Capacity {
    /// The network mode a template should use (`env.network_mode`): ECS Managed Instances
    /// run `awsvpc` and `host` tasks, not `bridge` (ECS Developer Guide, "Amazon ECS Managed
    /// Instances"), so one template serves every capacity form: awsvpc on Managed
    /// Instances, bridge on other EC2 capacity.
    pub fn network_mode(&self) -> &'static str {
        match self.kind() {
            CapacityKind::ManagedInstances => "awsvpc",
            CapacityKind::Provider | CapacityKind::Instances => "bridge",
        }
    }

    /// What task definitions name in `requiresCompatibilities`: `MANAGED_INSTANCES` on
    /// Managed Instances (ECS places nothing else there), `EC2` on other EC2 capacity.
    pub fn compatibility(&self) -> &'static str {
        match self.kind() {
            CapacityKind::ManagedInstances => "MANAGED_INSTANCES",
            CapacityKind::Provider | CapacityKind::Instances => "EC2",
        }
    }

    pub fn kind(&self) -> CapacityKind {
        if self.managed_instances.is_some() {
            CapacityKind::ManagedInstances
        } else if self.provider.is_some() {
            CapacityKind::Provider
        } else {
            CapacityKind::Instances
        }
    }
}

/// `ecs.capacity.managed_instances` (CreateCapacityProvider with `managedInstancesProvider`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ManagedInstances {
    /// Allowed EC2 instance types, e.g. [m6i.2xlarge]; the first sizes the placement checks.
    pub instance_types: Vec<At<String>>,
    /// envctl's budget of instances, checked before apply (AWS has no such bound).
    pub instances: InstanceRange,
    /// IAM role ECS uses to launch and manage the instances (`infrastructureRoleArn`).
    pub infrastructure_role: At<String>,
    /// Instance profile the instances run with (`ec2InstanceProfileArn`).
    pub instance_profile: At<String>,
}

/// envctl's budget for a Managed Instances provider's instances. AWS has no instance count
/// bounds for such a provider (CreateManagedInstancesProviderConfiguration has no minimum
/// or maximum): ECS launches what the tasks need and terminates idle instances.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct InstanceRange {
    /// Only 0 (the default): AWS keeps no instance without tasks.
    #[schemars(with = "Option<u32>")]
    pub min: At<u32>,
    /// Never sent to AWS: the placement check (lint `capacity-exceeded`, before every plan)
    /// refuses an env whose tasks need more instances of the first type than this.
    pub max: At<u32>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Rds {
    pub writer: DbWriter,
    /// Read replicas (CreateDBInstanceReadReplica); needed by services with `rw_split: true`.
    #[serde(default)]
    pub readers: Vec<DbReader>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DbWriter {
    /// DB instance identifier.
    pub id: At<String>,
    /// Instance class, e.g. db.r6g.xlarge.
    pub class: At<String>,
    /// Database engine (default postgres).
    #[schemars(with = "Option<String>")]
    pub engine: At<String>,
    /// Engine version, e.g. "16.3" (default: the engine's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<At<String>>,
    /// Allocated storage in GiB (default 100).
    #[schemars(with = "Option<u32>")]
    pub storage_gb: At<u32>,
    /// DB parameter group values, e.g. max_connections: 2731.
    #[serde(default)]
    pub parameters: BTreeMap<String, At<Scalar>>,
    /// Skip the final snapshot on destroy (default true: test environments).
    #[schemars(with = "Option<bool>")]
    pub skip_final_snapshot: bool,
    /// An existing DB subnet group to use. Without it envctl creates and owns
    /// `<id>-subnets` from `network.subnets`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet_group: Option<At<String>>,
    /// The database created with the instance (`DBName`; default folio).
    #[schemars(with = "Option<String>")]
    pub database: At<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DbReader {
    pub id: At<String>,
    /// Instance class (default: the writer's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<At<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MetadataMode {
    Zookeeper,
    Kraft,
}

impl MetadataMode {
    pub fn as_str(self) -> &'static str {
        match self {
            MetadataMode::Zookeeper => "zookeeper",
            MetadataMode::Kraft => "kraft",
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct KafkaCluster {
    /// MSK cluster name.
    pub name: At<String>,
    /// Broker instance type, e.g. kafka.m5.2xlarge.
    pub broker_type: At<String>,
    /// Total number of brokers (a multiple of `zones`).
    pub brokers: At<u32>,
    /// Availability zones (= client subnets used; default 2).
    #[schemars(with = "Option<u32>")]
    pub zones: At<u32>,
    /// Apache Kafka version as MSK names it, e.g. "2.8.0" or "3.7.x".
    pub version: At<String>,
    /// zookeeper or kraft (default zookeeper). KRaft needs Kafka 3.7 or later.
    #[schemars(with = "Option<MetadataMode>")]
    pub metadata: At<MetadataMode>,
    /// EBS volume per broker in GiB (default 100).
    #[schemars(with = "Option<u32>")]
    pub storage_gb: At<u32>,
    /// Server properties (the MSK configuration), e.g. log.retention.minutes: 480.
    #[serde(default)]
    pub properties: BTreeMap<String, At<Scalar>>,
    /// Expected throughput, for the storage sizing check (report 003's formula).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    /// Client-broker encryption (`EncryptionInTransit.ClientBroker`): PLAINTEXT,
    /// TLS_PLAINTEXT or TLS (default TLS_PLAINTEXT: clients may speak PLAINTEXT).
    #[schemars(with = "Option<ClientBroker>")]
    pub client_broker: At<ClientBroker>,
}

/// How clients may talk to the brokers; decides which bootstrap string services get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClientBroker {
    Plaintext,
    TlsPlaintext,
    Tls,
}

impl ClientBroker {
    /// As written in the env (any case; MSK spells them in capitals).
    pub const NAMES: [&'static str; 3] = ["plaintext", "tls_plaintext", "tls"];

    pub fn as_str(self) -> &'static str {
        match self {
            ClientBroker::Plaintext => "PLAINTEXT",
            ClientBroker::TlsPlaintext => "TLS_PLAINTEXT",
            ClientBroker::Tls => "TLS",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "plaintext" => Some(ClientBroker::Plaintext),
            "tls_plaintext" => Some(ClientBroker::TlsPlaintext),
            "tls" => Some(ClientBroker::Tls),
            _ => None,
        }
    }

    /// The Kafka client `security.protocol` that works against this setting: plaintext
    /// whenever the brokers accept it, SSL when they accept TLS only.
    pub fn security_protocol(self) -> &'static str {
        match self {
            ClientBroker::Plaintext | ClientBroker::TlsPlaintext => "PLAINTEXT",
            ClientBroker::Tls => "SSL",
        }
    }
}

/// Sizing inputs for `max(t_cluster) <= max(t_storage) * brokers / r`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Throughput {
    /// Aggregate producer throughput the test will drive, MB/s.
    pub cluster_mb_s: At<f64>,
    /// Sustained write throughput one broker's storage can take, MB/s.
    pub storage_mb_s: At<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    pub const NAMES: [&'static str; 5] = ["trace", "debug", "info", "warn", "error"];
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
    fn from_name(name: &str) -> Option<Self> {
        [
            LogLevel::Trace,
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Warn,
            LogLevel::Error,
        ]
        .into_iter()
        .find(|l| l.as_str() == name)
    }
}

/// One ECS service (a module) and the knobs its task definition is built from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Service {
    #[serde(skip)]
    pub name: At<String>,
    /// Task-definition template, relative to the env file.
    pub template: At<String>,
    /// Container image, with or without a tag.
    pub image: At<String>,
    /// Image tag, when `image` has none (e.g. 27.0.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<At<String>>,
    /// Desired task count (default 1).
    #[schemars(with = "Option<u32>")]
    pub count: At<u32>,
    pub memory: Memory,
    /// CPU units (1024 = one vCPU).
    pub cpu: At<u32>,
    /// JVM sizing; absent for non-Java containers (nginx).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jvm: Option<Jvm>,
    /// trace, debug, info, warn or error (default info).
    #[schemars(with = "Option<LogLevel>")]
    pub log_level: At<LogLevel>,
    /// Pass the RDS reader endpoint (DB_HOST_READER/DB_PORT_READER) so reads go to the replica.
    #[schemars(with = "Option<bool>")]
    pub rw_split: At<bool>,
    /// Key of the Kafka cluster this service uses (under `kafka:`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kafka: Option<At<String>>,
    /// Container port (default 8081).
    #[schemars(with = "Option<u16>")]
    pub port: u16,
    /// Extra environment variables (no secrets: use `secrets`).
    #[serde(default)]
    pub environment: BTreeMap<String, At<Scalar>>,
    /// Secrets by variable name: an ARN of Secrets Manager or SSM (passed as valueFrom).
    #[serde(default)]
    pub secrets: BTreeMap<String, At<String>>,
}

/// The schema of one entry under `services:` (every field optional there, since `defaults`
/// may supply it).
pub type ServiceSchema = Service;

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Memory {
    /// Hard limit in MiB (ECS `memory`): the container is killed above it.
    pub hard: At<u32>,
    /// Soft limit in MiB (ECS `memoryReservation`): what placement reserves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soft: Option<At<u32>>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Jvm {
    /// -Xmx in MiB.
    pub xmx: At<u32>,
    /// -XX:MetaspaceSize in MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metaspace: Option<At<u32>>,
    /// -XX:MaxMetaspaceSize in MiB (unset: metaspace is unbounded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_metaspace: Option<At<u32>>,
    /// Native memory beyond heap and metaspace (threads, code cache, GC), MiB; default 64.
    #[schemars(with = "Option<u32>")]
    pub overhead: At<u32>,
    /// Further JVM options appended to JAVA_OPTIONS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<At<String>>,
}

impl Jvm {
    pub const DEFAULT_OVERHEAD_MIB: u32 = 64;

    /// The JAVA_OPTIONS string the template receives.
    pub fn java_options(&self) -> String {
        let mut opts = vec![format!("-Xmx{}m", self.xmx.value)];
        if let Some(m) = &self.metaspace {
            opts.push(format!("-XX:MetaspaceSize={}m", m.value));
        }
        if let Some(m) = &self.max_metaspace {
            opts.push(format!("-XX:MaxMetaspaceSize={}m", m.value));
        }
        if let Some(extra) = &self.options {
            opts.push(extra.value.clone());
        }
        opts.join(" ")
    }
}

impl Service {
    /// The image reference with its tag.
    pub fn image_ref(&self) -> String {
        match &self.version {
            Some(v) => format!("{}:{}", self.image.value, v.value),
            None => self.image.value.clone(),
        }
    }
}

pub const ENV_FIELDS: &[&str] = &[
    "env", "extends", "region", "owner", "ttl", "lock", "tags", "network", "ecs", "rds", "kafka",
    "services", "waits", "logs",
];
pub const SERVICE_FIELDS: &[&str] = &[
    "template",
    "image",
    "version",
    "count",
    "memory",
    "cpu",
    "jvm",
    "log_level",
    "rw_split",
    "kafka",
    "port",
    "environment",
    "secrets",
];

impl Decode for EnvSpec {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "an environment", ENV_FIELDS)?;
        let env: Option<At<String>> = f.req(d, "env");
        if let Some(env) = &env {
            check_name(d, env, "environment name", 24);
        }
        let extends = f.opt(d, "extends");
        let region = f.req(d, "region");
        let owner = f.req(d, "owner");
        let ttl = f
            .opt(d, "ttl")
            .unwrap_or_else(|| At::builtin(Duration(std::time::Duration::from_secs(86_400))));
        let lock: Option<At<String>> = f.opt(d, "lock");
        if let Some(lock) = &lock
            && let Err(reason) = super::lock_url::parse(&lock.value)
        {
            d.error(
                Diagnostic::error("invalid-lock", lock.span, reason)
                    .with_hint("write `lock: s3://bucket/prefix/`, or leave it out for a lock file under the state dir"),
            );
        }
        let tags = f.or(d, "tags", BTreeMap::new());
        let network = f.req(d, "network");
        let ecs = f.req(d, "ecs");
        let rds = f.opt(d, "rds");
        let kafka = f.or(d, "kafka", BTreeMap::new());
        let services = match f.node("services") {
            Some(node) => decode_services(node, d),
            None => Some(BTreeMap::new()),
        };
        let waits = f.opt(d, "waits").unwrap_or_default();
        let logs = f.opt(d, "logs");
        let logs = match f.node("logs") {
            Some(_) => logs?,
            None => Logs::default(),
        };
        Some(EnvSpec {
            env: env?,
            extends,
            region: region?,
            owner: owner?,
            ttl,
            lock,
            tags,
            network: network?,
            ecs: ecs?,
            rds,
            kafka,
            services: services?,
            waits,
            logs,
        })
    }
}

/// Services are decoded after `defaults` was merged into each (see `load`); the `defaults`
/// entry itself is not a service.
fn decode_services(node: &Node, d: &mut Decoder) -> Option<BTreeMap<String, Service>> {
    let entries = d.named(node, "services")?;
    let mut out = BTreeMap::new();
    let mut ok = true;
    for (key, value) in entries {
        if key.name == "defaults" {
            continue;
        }
        let name = At::new(key.name.clone(), key.span);
        check_name(d, &name, "service name", 64);
        match decode_service(name, value, d) {
            Some(s) => {
                out.insert(key.name.clone(), s);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn decode_service(name: At<String>, node: &Node, d: &mut Decoder) -> Option<Service> {
    let f = d.fields(node, "a service", SERVICE_FIELDS)?;
    let template = f.req(d, "template");
    let image = f.req(d, "image");
    let version = f.opt(d, "version");
    let count = f.opt(d, "count").unwrap_or_else(|| At::builtin(1));
    let memory = f.req(d, "memory");
    let cpu = f.req(d, "cpu");
    let jvm = f.opt(d, "jvm");
    let log_level = match f.node("log_level") {
        Some(n) => d
            .choice(n, "log level", &LogLevel::NAMES)
            .and_then(|c| LogLevel::from_name(&c.value).map(|l| At::new(l, c.span))),
        None => Some(At::builtin(LogLevel::Info)),
    };
    let rw_split = f.opt(d, "rw_split").unwrap_or_else(|| At::builtin(false));
    let kafka = f.opt(d, "kafka");
    let port = f.or(d, "port", 8081u16);
    let environment = f.or(d, "environment", BTreeMap::new());
    let secrets = f.or(d, "secrets", BTreeMap::new());
    if let (Some(image), Some(version)) = (&image, &version) {
        let image: &At<String> = image;
        let version: &At<String> = version;
        if image_has_tag(&image.value) {
            d.error(
                Diagnostic::error(
                    "conflicting-fields",
                    version.span,
                    format!(
                        "`version` is set but the image `{}` already has a tag",
                        image.value
                    ),
                )
                .with_note(image.span, "tag given here")
                .with_hint("give the tag in one place: `image: repo/name` plus `version: 1.2.3`"),
            );
        }
    }
    Some(Service {
        name,
        template: template?,
        image: image?,
        version,
        count,
        memory: memory?,
        cpu: cpu?,
        jvm,
        log_level: log_level?,
        rw_split,
        kafka,
        port,
        environment,
        secrets,
    })
}

fn image_has_tag(image: &str) -> bool {
    let last = image.rsplit('/').next().unwrap_or(image);
    last.contains(':') || last.contains('@')
}

/// Names become parts of AWS resource names and tags: keep them to what every API accepts.
fn check_name(d: &mut Decoder, name: &At<String>, what: &str, max: usize) {
    let valid = !name.value.is_empty()
        && name.value.len() <= max
        && name
            .value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.value.starts_with(|c: char| c.is_ascii_lowercase());
    if !valid {
        d.error(
            Diagnostic::error("invalid-name", name.span, format!("`{}` is not a valid {what}", name.value))
                .with_hint(format!(
                    "use lowercase letters, digits and dashes, starting with a letter, at most {max} characters"
                )),
        );
    }
}

impl Decode for Network {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "network", &["subnets", "security_groups"])?;
        let subnets = f.req(d, "subnets");
        let security_groups = f.req(d, "security_groups");
        Some(Network {
            subnets: subnets?,
            security_groups: security_groups?,
        })
    }
}

impl Decode for Ecs {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(
            node,
            "ecs",
            &["cluster", "capacity", "execution_role", "task_role"],
        )?;
        let cluster = f.req(d, "cluster");
        let capacity = f.req(d, "capacity");
        let execution_role = f.opt(d, "execution_role");
        let task_role = f.opt(d, "task_role");
        Some(Ecs {
            cluster: cluster?,
            capacity: capacity?,
            execution_role,
            task_role,
        })
    }
}

impl Decode for Capacity {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(
            node,
            "ecs capacity",
            &[
                "managed_instances",
                "provider",
                "instance_type",
                "instances",
            ],
        )?;
        let managed: Option<ManagedInstances> = f.opt(d, "managed_instances");
        let provider: Option<At<String>> = f.opt(d, "provider");
        if f.node("managed_instances").is_some() {
            // The managed form says everything itself: a second source of sizes would be
            // ambiguous, and a provider name too.
            for other in ["provider", "instance_type", "instances"] {
                if let (Some(span), Some(first)) =
                    (f.key_span(other), f.key_span("managed_instances"))
                {
                    d.error(
                        Diagnostic::error(
                            "conflicting-fields",
                            span,
                            format!("`{other}` cannot be combined with `managed_instances`"),
                        )
                        .with_note(first, "managed instances declared here")
                        .with_hint(
                            "managed_instances sets the types (instance_types) and the count (instances: {min, max})",
                        ),
                    );
                }
            }
            let managed = managed?;
            let first = managed.instance_types.first().cloned();
            let Some(instance_type) = first else {
                d.error(
                    Diagnostic::error(
                        "invalid-value",
                        f.key_span("managed_instances").unwrap_or(f.span),
                        "managed_instances.instance_types is empty",
                    )
                    .with_hint("list at least one EC2 instance type, e.g. [m6i.2xlarge]"),
                );
                return None;
            };
            let instances = managed.instances.max.clone();
            return Some(Capacity {
                instance_type,
                instances,
                managed_instances: Some(managed),
                provider: None,
            });
        }
        // `provider` and the plain form both need the instance type and count: envctl cannot
        // read an Auto Scaling group's size without AWS, and the placement checks need it.
        let instance_type = f.req(d, "instance_type");
        let instances = f.req(d, "instances");
        Some(Capacity {
            instance_type: instance_type?,
            instances: instances?,
            managed_instances: None,
            provider,
        })
    }
}

impl Decode for ManagedInstances {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(
            node,
            "managed instances",
            &[
                "instance_types",
                "instances",
                "infrastructure_role",
                "instance_profile",
            ],
        )?;
        let instance_types = f.req(d, "instance_types");
        let instances = f.req(d, "instances");
        let infrastructure_role = f.req(d, "infrastructure_role");
        let instance_profile = f.req(d, "instance_profile");
        Some(ManagedInstances {
            instance_types: instance_types?,
            instances: instances?,
            infrastructure_role: infrastructure_role?,
            instance_profile: instance_profile?,
        })
    }
}

impl Decode for InstanceRange {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "an instance range", &["min", "max"])?;
        let min: At<u32> = f.opt(d, "min").unwrap_or_else(|| At::builtin(0));
        let max: Option<At<u32>> = f.req(d, "max");
        // ECS Managed Instances keep no instance without tasks: the provider configuration
        // has no instance minimum (aws-sdk-ecs CreateManagedInstancesProviderConfiguration;
        // aws/containers-roadmap#2724), so a `min` above 0 would be a promise envctl cannot
        // keep (and `park` would bill instances that do not run).
        if min.value > 0 {
            d.error(
                Diagnostic::error(
                    "invalid-value",
                    min.span,
                    format!(
                        "instances: min {} cannot be kept: ECS Managed Instances have no instance minimum and terminate instances no task uses",
                        min.value
                    ),
                )
                .with_hint("leave `min` out (0 is what AWS does); to keep capacity warm, run a service that holds it"),
            );
            return None;
        }
        let max = max?;
        if max.value == 0 {
            d.error(
                Diagnostic::error(
                    "invalid-value",
                    max.span,
                    "instances: max 0 leaves no room for any task",
                )
                .with_hint("e.g. instances: {max: 10}"),
            );
            return None;
        }
        Some(InstanceRange { min, max })
    }
}

impl Decode for Rds {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "rds", &["writer", "readers"])?;
        let writer = f.req(d, "writer");
        let readers = f.or(d, "readers", Vec::new());
        Some(Rds {
            writer: writer?,
            readers,
        })
    }
}

impl Decode for DbWriter {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(
            node,
            "the rds writer",
            &[
                "id",
                "class",
                "engine",
                "engine_version",
                "storage_gb",
                "parameters",
                "skip_final_snapshot",
                "subnet_group",
                "database",
            ],
        )?;
        let id = f.req(d, "id");
        let class = f.req(d, "class");
        let engine = match f.node("engine") {
            Some(n) => d.choice(n, "engine", &["postgres"]),
            None => Some(At::builtin("postgres".to_string())),
        };
        let engine_version = f.opt(d, "engine_version");
        let storage_gb = f.opt(d, "storage_gb").unwrap_or_else(|| At::builtin(100));
        let parameters = f.or(d, "parameters", BTreeMap::new());
        let skip_final_snapshot = f.or(d, "skip_final_snapshot", true);
        let subnet_group = f.opt(d, "subnet_group");
        let database = f
            .opt(d, "database")
            .unwrap_or_else(|| At::builtin("folio".to_string()));
        Some(DbWriter {
            id: id?,
            class: class?,
            engine: engine?,
            engine_version,
            storage_gb,
            parameters,
            skip_final_snapshot,
            subnet_group,
            database,
        })
    }
}

impl Decode for DbReader {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "an rds reader", &["id", "class"])?;
        let id = f.req(d, "id");
        let class = f.opt(d, "class");
        Some(DbReader { id: id?, class })
    }
}

impl Decode for KafkaCluster {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(
            node,
            "a kafka cluster",
            &[
                "name",
                "broker_type",
                "brokers",
                "zones",
                "version",
                "metadata",
                "storage_gb",
                "properties",
                "throughput",
                "client_broker",
            ],
        )?;
        let name = f.req(d, "name");
        let broker_type = f.req(d, "broker_type");
        let brokers = f.req(d, "brokers");
        let zones = f.opt(d, "zones").unwrap_or_else(|| At::builtin(2));
        let version = f.req(d, "version");
        let metadata = match f.node("metadata") {
            Some(n) => d
                .choice(n, "metadata mode", &["zookeeper", "kraft"])
                .map(|c| {
                    let mode = if c.value == "kraft" {
                        MetadataMode::Kraft
                    } else {
                        MetadataMode::Zookeeper
                    };
                    At::new(mode, c.span)
                }),
            None => Some(At::builtin(MetadataMode::Zookeeper)),
        };
        let storage_gb = f.opt(d, "storage_gb").unwrap_or_else(|| At::builtin(100));
        let properties = f.or(d, "properties", BTreeMap::new());
        let throughput = f.opt(d, "throughput");
        let client_broker = match f.node("client_broker") {
            Some(n) => d
                .choice(n, "client-broker encryption", &ClientBroker::NAMES)
                .and_then(|c| ClientBroker::from_name(&c.value).map(|b| At::new(b, c.span))),
            None => Some(At::builtin(ClientBroker::TlsPlaintext)),
        };
        Some(KafkaCluster {
            name: name?,
            broker_type: broker_type?,
            brokers: brokers?,
            zones,
            version: version?,
            metadata: metadata?,
            storage_gb,
            properties,
            throughput,
            client_broker: client_broker?,
        })
    }
}

impl Decode for Throughput {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "kafka throughput", &["cluster_mb_s", "storage_mb_s"])?;
        let cluster = f.req(d, "cluster_mb_s");
        let storage = f.req(d, "storage_mb_s");
        Some(Throughput {
            cluster_mb_s: cluster?,
            storage_mb_s: storage?,
        })
    }
}

impl Decode for Memory {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "memory", &["hard", "soft"])?;
        let hard = f.req(d, "hard");
        let soft = f.opt(d, "soft");
        Some(Memory { hard: hard?, soft })
    }
}

impl Decode for Jvm {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(
            node,
            "jvm",
            &["xmx", "metaspace", "max_metaspace", "overhead", "options"],
        )?;
        let xmx = f.req(d, "xmx");
        let metaspace = f.opt(d, "metaspace");
        let max_metaspace = f.opt(d, "max_metaspace");
        let overhead = f
            .opt(d, "overhead")
            .unwrap_or_else(|| At::builtin(Jvm::DEFAULT_OVERHEAD_MIB));
        let options = f.opt(d, "options");
        Some(Jvm {
            xmx: xmx?,
            metaspace,
            max_metaspace,
            overhead,
            options,
        })
    }
}
