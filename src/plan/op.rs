//! Typed operations: what `apply` does for an action, decided by the planner. The executor
//! matches on these and runs them; it never compares the spec with the live state again.
//! Only values AWS hands out during the run (a revision ARN, a configuration revision
//! written earlier in the same run) are resolved at execution time, as typed placeholders
//! ([`Planned`]).
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use envctl_aws_model::placement::{HostPort, Protocol, TaskNeeds};

use super::placeholder::{ConfigurationRevision, Planned};
use crate::model::requests::{self, DbModification};

/// What one action does.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Op {
    #[default]
    NoOp,
    Create(Create),
    Delete(Delete),
    /// Delete, wait until gone, create: the change cannot be made in place (or the
    /// resource was renamed).
    Replace {
        delete: Delete,
        create: Create,
    },
    /// Tag an existing ECS cluster (or the Managed Instances provider) as the environment's
    /// (`--adopt`): TagResource takes any ECS resource's ARN.
    EcsClusterAdopt {
        arn: String,
    },
    /// UpdateCapacityProvider on the owned Managed Instances provider with these settings
    /// (all of them: `infrastructureRoleArn` is required, and sending the whole launch
    /// template leaves nothing to ECS's merging).
    CapacityProviderUpdate {
        cluster: String,
        name: String,
        settings: crate::model::ManagedInstancesSettings,
    },
    /// Wait until the cluster has at least `instances` ACTIVE container instances (registered
    /// by something else: `ecs.capacity: {instances: N}`) and the tasks of the services about
    /// to be created (`services`: name -> task count; `needs`: what one task of each
    /// reserves) fit on what those instances have left. Reads only.
    EcsCapacityAwait {
        instances: u32,
        services: BTreeMap<String, u32>,
        cluster: String,
        needs: BTreeMap<String, TaskReservation>,
    },
    /// A new task-definition revision (registered, or an identical one reused) and/or a new
    /// task count, then wait for the deployment.
    EcsServiceUpdate {
        /// The revision the service runs now.
        running: String,
        /// The revision to run, decided by the planner: the running one, or a new one of
        /// this content.
        revision: ServiceRevision,
        /// The service's request: UpdateService sends its cluster, name and placement
        /// (strategy, network configuration, deployment configuration).
        request: requests::CreateService,
        /// The new desired count, when it changes.
        count: Option<u32>,
        /// The service's ARN, to tag it when it is being adopted.
        adopt: Option<String>,
        /// Start a new deployment even when neither revision nor count changes
        /// (`forceNewDeployment`): the service is unhealthy (its deployment failed, or tasks
        /// died), or its capacity provider strategy or network configuration changes (ECS
        /// requires a new deployment for a strategy change: pipe-cd/pipecd#6385).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        force: bool,
        /// Send the placement (strategy, network configuration, deployment percentages)
        /// as `request` has it: one of them differs from the observed service.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        placement: bool,
    },
    /// Run exactly this existing revision with this count (a matrix `--restore` putting a
    /// service back): UpdateService with the old ARN, never a registration.
    EcsServiceRestore {
        cluster: String,
        /// The revision the service runs now.
        running: String,
        revision: String,
        /// The count to restore, when it differs.
        count: Option<u32>,
    },
    /// UpdateConfiguration: a new revision with the request's server properties.
    KafkaConfigurationUpdate {
        arn: String,
        #[serde(with = "masked")]
        request: requests::CreateConfiguration,
        description: String,
    },
    /// In-place cluster operations, one at a time, each with the cluster's current version.
    KafkaUpdate {
        arn: String,
        updates: Vec<ClusterUpdate>,
        adopt: bool,
        /// The revision `configuration` (and a version upgrade with it) runs: the live
        /// latest, or the one written earlier in the run (a placeholder).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        configuration: Option<Planned<ConfigurationRevision>>,
        /// The clients' protocol, whose bootstrap string is published after; `None`: the
        /// cluster's preferred one (plaintext, else TLS).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        security_protocol: Option<String>,
    },
    /// Wait for a change already in progress (an earlier, interrupted run) to finish.
    KafkaAwait {
        arn: String,
        security_protocol: String,
    },
    RdsParameterGroupModify {
        parameters: BTreeMap<String, String>,
        /// Parameters set in the group that the spec no longer sets: reset to the engine
        /// default (ResetDBParameterGroup), as terraform-provider-aws does for a parameter
        /// removed from `aws_db_parameter_group`; left set, they would go on shaping every
        /// later measurement unseen.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reset: Vec<String>,
        /// Instances using the group, writer first: static parameters apply at a reboot.
        reboot: Vec<String>,
        /// The group's ARN, to tag it when it is being adopted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        adopt: Option<String>,
    },
    /// Tag an existing RDS resource (a DB parameter group whose values already match) as
    /// the environment's (`--adopt`).
    RdsAdopt {
        arn: String,
    },
    RdsModify {
        modification: DbModification,
        /// The instance's ARN, to tag it when it is being adopted.
        adopt: Option<String>,
        /// `writer` or `reader`: the outputs its endpoint is published as.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// Wait for a change already in progress to finish.
    RdsAwait {
        /// `writer` or `reader`: the outputs its endpoint is published as.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// A data store in a state envctl cannot repair on its own (an MSK cluster FAILED, a DB
    /// instance `incompatible-parameters` or `storage-full`): apply reports it as failed
    /// instead of calling the environment in sync.
    Unhealthy {
        state: String,
    },

    // ---- `park` / `unpark` (planned by `park::planner`, run by `apply::park`) ----
    /// Park a service: TagResource `envctl:parked-count=<count>` first (an interrupted park
    /// never loses a count), then UpdateService to 0. Does not wait for the tasks to stop.
    EcsServicePark {
        cluster: String,
        name: String,
        arn: String,
        /// The count it runs now, kept in the tag.
        count: u32,
    },
    /// Unpark a service: UpdateService back to `count`, UntagResource of the parked count,
    /// then the wait until it runs `count` tasks with its deployment completed.
    EcsServiceUnpark {
        cluster: String,
        name: String,
        arn: String,
        count: u32,
    },
    /// StopDBInstance (RDS stops only an available instance without read replicas; the
    /// planner keeps the others). Does not wait for `stopped`.
    RdsStop {
        id: String,
    },
    /// Bring a DB instance back to `available`: a `stopping` one is waited for until it is
    /// `stopped` (RDS starts only a stopped instance), a `stopped` one is started
    /// (StartDBInstance), a `starting` one only waited for; then the wait until `available`.
    RdsStart {
        id: String,
    },
}

/// A resource to create, with the request the executor sends (`model::requests`), decided
/// by the planner. Values AWS hands out during the run are [`Planned`] placeholders; the
/// executor fills them and checks the result against this plan before sending
/// (`apply::conform`). The creation-time tags (`envctl:created`, `envctl:expires`,
/// `envctl:run-id`) are the only values added at the send, by `Context::creation_tags`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "resource", rename_all = "kebab-case")]
pub enum Create {
    /// CreateCluster; an existing provider the env names (`ecs.capacity.provider`) is then
    /// attached with PutClusterCapacityProviders.
    EcsCluster {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attach: Option<String>,
    },
    /// CreateCapacityProvider (Managed Instances, in the env's cluster), then the wait until
    /// it is ACTIVE. A provider left PROVISIONING by an interrupted run is only waited for
    /// (`wait_only`), never created twice. No PutClusterCapacityProviders: ECS refuses it for
    /// a Managed Instances provider, which belongs to its cluster from creation.
    CapacityProvider(ProviderCreate),
    /// RegisterTaskDefinition (or an identical revision reused), then CreateService on the
    /// revision, which is a placeholder until then.
    EcsService {
        #[serde(with = "masked")]
        register: requests::RegisterTaskDefinition,
        request: requests::CreateService,
        revision: Planned<String>,
    },
    /// CreateConfiguration; MSK configurations take no tags, so `description` carries the
    /// env's ownership mark.
    KafkaConfiguration {
        #[serde(with = "masked")]
        request: requests::CreateConfiguration,
        description: String,
    },
    /// CreateClusterV2 on the configuration revision (written earlier in the run, or the
    /// live one), then the wait until ACTIVE and the bootstrap brokers of `security_protocol`.
    KafkaCluster {
        name: String,
        request: requests::CreateClusterV2,
        configuration: Planned<ConfigurationRevision>,
        security_protocol: String,
    },
    /// CreateDBParameterGroup, then ModifyDBParameterGroup with its parameters.
    DbParameterGroup {
        request: requests::CreateDbParameterGroup,
    },
    /// The owned subnet group and the writer's master secret first (when it has them), then
    /// CreateDBInstance or CreateDBInstanceReadReplica and the wait until available.
    DbInstance {
        request: requests::CreateDbInstance,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subnet_group: Option<requests::CreateDbSubnetGroup>,
        /// The writer's master secret: its name, and its ARN (a placeholder until created).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        master_secret: Option<MasterSecret>,
        /// `writer` or `reader` (the first replica): the outputs it publishes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// CreateLogGroup with the env's tags (one an earlier attempt made is taken), then
    /// PutRetentionPolicy with the env's `logs.retention_days` when there is one.
    LogGroup {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retention_days: Option<u32>,
    },
}

/// What one task of a service reserves on a container instance
/// (`envctl_aws_model::placement::TaskNeeds`, as the plan writes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskReservation {
    pub cpu: u32,
    pub memory_mib: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp_ports: Vec<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udp_ports: Vec<u16>,
    /// An `awsvpc` task: it attaches a network interface of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network_interface: bool,
}

impl From<&TaskNeeds> for TaskReservation {
    fn from(n: &TaskNeeds) -> Self {
        let ports = |p: Protocol| {
            n.host_ports
                .iter()
                .filter(|h| h.protocol == p)
                .map(|h| h.port)
                .collect()
        };
        TaskReservation {
            cpu: n.cpu,
            memory_mib: n.memory_mib,
            tcp_ports: ports(Protocol::Tcp),
            udp_ports: ports(Protocol::Udp),
            network_interface: n.network_interface,
        }
    }
}

impl From<&TaskReservation> for TaskNeeds {
    fn from(r: &TaskReservation) -> Self {
        let port = |protocol: Protocol| {
            move |port: &u16| HostPort {
                protocol,
                port: *port,
            }
        };
        TaskNeeds {
            cpu: r.cpu,
            memory_mib: r.memory_mib,
            host_ports: r
                .tcp_ports
                .iter()
                .map(port(Protocol::Tcp))
                .chain(r.udp_ports.iter().map(port(Protocol::Udp)))
                .collect(),
            network_interface: r.network_interface,
        }
    }
}

/// The revision an `EcsServiceUpdate` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ServiceRevision {
    /// The running revision (a count, placement or health change).
    Running,
    /// A revision of this content: an identical one already registered is reused (the
    /// content may hold endpoints known only during the run), otherwise it is registered.
    /// Its ARN is a placeholder until then.
    Register {
        #[serde(with = "masked")]
        register: requests::RegisterTaskDefinition,
        arn: Planned<String>,
    },
}

impl ServiceRevision {
    /// A new revision's content is run.
    pub fn is_new(&self) -> bool {
        matches!(self, ServiceRevision::Register { .. })
    }
}

/// CreateCapacityProvider's values for the owned Managed Instances provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderCreate {
    pub cluster: String,
    pub name: String,
    pub settings: crate::model::ManagedInstancesSettings,
    /// Created by an earlier run and still PROVISIONING: only waited for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait_only: bool,
}

/// The secret the writer's master password is kept in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MasterSecret {
    pub name: String,
    pub description: String,
    pub arn: Planned<String>,
}

/// Requests that can hold values the env did not write itself (task definitions, server
/// properties) are written with their secrets masked, like the plan's changes
/// (`redact::json`); a saved plan is therefore compared by fingerprint and the freshly
/// planned operations run (`converge::plan_saved`).
mod masked {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        let mut json = serde_json::to_value(value).map_err(serde::ser::Error::custom)?;
        crate::redact::json(&mut json);
        json.serialize(s)
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<T, D::Error> {
        T::deserialize(d)
    }
}

/// A resource to delete, named as AWS knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "resource", rename_all = "kebab-case")]
pub enum Delete {
    EcsCluster {
        name: String,
    },
    /// DeleteCapacityProvider with its cluster, then the wait until it is INACTIVE (it is
    /// DEPROVISIONING while ECS terminates its instances; DeleteCluster refuses the cluster
    /// until then). One already DEPROVISIONING (an interrupted destroy) is only waited for.
    CapacityProvider {
        cluster: String,
        name: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        deprovisioning: bool,
    },
    EcsService {
        cluster: String,
        name: String,
    },
    /// Deregister the environment's task-definition revisions (one call each: ECS has no
    /// batch deregistration) and delete them, ten ARNs per DeleteTaskDefinitions call. The
    /// revisions are the ones envctl knows (registered or described, and those its services
    /// run), so no ListTaskDefinitions is needed.
    TaskDefinitions {
        revisions: Vec<String>,
    },
    KafkaConfiguration {
        arn: String,
    },
    KafkaCluster {
        name: String,
        arn: String,
    },
    DbParameterGroup {
        name: String,
    },
    /// The DB subnet group envctl created for the writer; RDS refuses to delete it while an
    /// instance uses it, so it goes after the instances.
    DbSubnetGroup {
        name: String,
    },
    DbInstance {
        id: String,
        skip_final_snapshot: bool,
    },
    /// A log group envctl created, after the services that wrote to it.
    LogGroup {
        name: String,
    },
    /// The writer's master secret, after the writer (ForceDeleteWithoutRecovery, so the
    /// env's next apply can create it again at once).
    DbMasterSecret {
        arn: String,
    },
}

/// An in-place MSK cluster change, in the order MSK can take them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterUpdate {
    /// Upgrade the Kafka version; with `with_configuration`, the configuration revision
    /// goes along in the same operation (MSK takes both at once).
    KafkaVersion {
        target: String,
        with_configuration: bool,
    },
    BrokerType(String),
    BrokerStorage(u32),
    BrokerCount(u32),
    /// Run the configuration's latest revision (written earlier in this run, or live).
    Configuration,
    /// Run this existing configuration revision, not the latest (a matrix `--restore`
    /// putting the cluster back on the revision it ran before).
    ConfigurationRevision {
        arn: String,
        revision: i64,
    },
}

impl ClusterUpdate {
    /// The MSK API operation that makes the change.
    pub fn operation(&self) -> &'static str {
        match self {
            ClusterUpdate::Configuration | ClusterUpdate::ConfigurationRevision { .. } => {
                "UpdateClusterConfiguration"
            }
            ClusterUpdate::BrokerType(_) => "UpdateBrokerType",
            ClusterUpdate::BrokerCount(_) => "UpdateBrokerCount",
            ClusterUpdate::BrokerStorage(_) => "UpdateBrokerStorage",
            ClusterUpdate::KafkaVersion { .. } => "UpdateClusterKafkaVersion",
        }
    }
}
