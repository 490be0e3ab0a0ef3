//! Typed operations: what `apply` does for an action, decided by the planner. The executor
//! matches on these and runs them; it never compares the spec with the live state again.
//! Only values AWS hands out during the run (a revision ARN, a configuration revision
//! written earlier in the same run) are resolved at execution time.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
    /// Tag an existing ECS cluster as the environment's (`--adopt`).
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
    /// to be created (`services`: name -> task count; their reservations come from the
    /// desired state) fit on what those instances have left. Reads only.
    EcsCapacityAwait {
        instances: u32,
        services: BTreeMap<String, u32>,
    },
    /// A new task-definition revision (registered, or an identical one reused) and/or a new
    /// task count, then wait for the deployment.
    EcsServiceUpdate {
        /// The task definition's content changes: run the desired revision.
        new_revision: bool,
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
        /// as the spec has it: one of them differs from the observed service.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        placement: bool,
    },
    /// Run exactly this existing revision with this count (a matrix `--restore` putting a
    /// service back): UpdateService with the old ARN, never a registration.
    EcsServiceRestore {
        revision: String,
        /// The count to restore, when it differs.
        count: Option<u32>,
    },
    KafkaConfigurationUpdate {
        arn: String,
    },
    /// In-place cluster operations, one at a time, each with the cluster's current version.
    KafkaUpdate {
        arn: String,
        updates: Vec<ClusterUpdate>,
        adopt: bool,
    },
    /// Wait for a change already in progress (an earlier, interrupted run) to finish.
    KafkaAwait {
        arn: String,
    },
    RdsParameterGroupModify {
        parameters: BTreeMap<String, String>,
        /// Instances using the group, writer first: static parameters apply at a reboot.
        reboot: Vec<String>,
    },
    RdsModify {
        modification: DbModification,
        /// The instance's ARN, to tag it when it is being adopted.
        adopt: Option<String>,
    },
    /// Wait for a change already in progress to finish.
    RdsAwait,
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

/// A resource to create; its settings come from the desired state under the same id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "resource", rename_all = "kebab-case")]
pub enum Create {
    EcsCluster,
    /// CreateCapacityProvider (Managed Instances, in the env's cluster), then the wait until
    /// it is ACTIVE. A provider left PROVISIONING by an interrupted run is only waited for,
    /// never created twice. No PutClusterCapacityProviders: ECS refuses it for a Managed
    /// Instances provider, which belongs to its cluster from creation.
    CapacityProvider,
    EcsService,
    KafkaConfiguration,
    KafkaCluster {
        name: String,
    },
    DbParameterGroup,
    DbInstance,
    /// CreateLogGroup with the env's tags (one an earlier attempt made is taken).
    LogGroup,
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
    /// until then). One already DEPROVISIONING is only waited for.
    CapacityProvider {
        cluster: String,
        name: String,
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

/// ModifyDBInstance's fields envctl sets; `None` leaves a field alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbModification {
    pub class: Option<String>,
    pub storage_gb: Option<u32>,
    pub engine_version: Option<String>,
    pub parameter_group: Option<String>,
    /// RebootDBInstance after the modification: the group's static values are
    /// `pending-reboot` and take effect only at a reboot.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reboot: bool,
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
