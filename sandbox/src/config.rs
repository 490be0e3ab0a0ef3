//! Sandbox configuration and the duration profile.

use crate::faults::FaultConfig;
use std::path::PathBuf;
use std::time::Duration;

/// The default time scale: 120 virtual seconds per real second. A demo matrix with an MSK
/// replacement (create 25 min + delete 10 min + a few rolling ECS deployments and an RDS
/// class change) is about two virtual hours, so it finishes in about a minute.
pub const DEFAULT_TIME_SCALE: f64 = 120.0;

/// How the sandbox is started.
#[derive(Clone, Debug)]
pub struct SandboxConfig {
    /// TCP port on 127.0.0.1; 0 picks an ephemeral port.
    pub port: u16,
    /// Virtual seconds per real second (default [`DEFAULT_TIME_SCALE`]).
    pub time_scale: f64,
    /// Virtual time moves only through `Clock::advance` (tests).
    pub manual_clock: bool,
    /// The world (and virtual now) is loaded from and saved to `<state_dir>/world.json`.
    pub state_dir: Option<PathBuf>,
    pub faults: FaultConfig,
    pub profile: DurationProfile,
    /// Enforce the ECS token buckets on the virtual clock.
    pub ecs_throttling: bool,
    /// Real latency added to every request.
    pub latency: Duration,
    pub region: String,
    pub account_id: String,
    /// Virtual now when no saved world is loaded; `None` starts at the real time. Set it for
    /// runs that must be reproducible (synthetic metrics depend on absolute virtual time).
    pub start_time: Option<std::time::SystemTime>,
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            port: 0,
            time_scale: DEFAULT_TIME_SCALE,
            manual_clock: false,
            state_dir: None,
            faults: FaultConfig::default(),
            profile: DurationProfile::default(),
            ecs_throttling: true,
            latency: Duration::ZERO,
            region: "us-east-1".to_string(),
            account_id: "123456789012".to_string(),
            start_time: None,
        }
    }
}

/// Virtual durations of the emulated state machines. The defaults are typical values seen
/// on AWS for the resource sizes envctl manages.
#[derive(Clone, Debug, PartialEq)]
pub struct DurationProfile {
    /// ECS: a task goes from PROVISIONING to RUNNING (and a deployment completes) — 40 s.
    pub ecs_task_start: Duration,
    /// ECS: a stopped task drains (deregistration delay) — 30 s.
    pub ecs_task_stop: Duration,
    /// ECS: a deleted service stays DRAINING before INACTIVE — 2 min.
    pub ecs_service_drain: Duration,
    /// ECS: a cluster just created is not yet visible to CreateService and
    /// PutClusterCapacityProviders (`ClusterNotFoundException`, hashicorp/terraform#15066)
    /// for this long — 0 by default (off): ECS documents eventual consistency, not a
    /// duration; tests of the retry set it.
    pub ecs_cluster_propagation: Duration,
    /// ECS: on an account's first CreateCluster, the service-linked role AWSServiceRoleForECS
    /// is created and CreateCluster refuses ("Unable to assume the service linked role")
    /// until it can be assumed, this long after that first call (terraform-provider-aws#15452:
    /// the first attempt fails, later ones pass) — 0 by default: the role exists.
    pub ecs_service_linked_role: Duration,
    /// ECS Managed Instances: an instance launched for provisioning tasks boots and
    /// registers with the cluster — 90 s.
    pub ecs_instance_launch: Duration,
    /// ECS Managed Instances: a new capacity provider is PROVISIONING before ACTIVE — 30 s
    /// (terraform-provider-aws#45693 shows the state, no duration is documented).
    pub ecs_capacity_provider_provision: Duration,
    /// ECS Managed Instances: a deleted capacity provider is DEPROVISIONING (its instances
    /// terminate) before INACTIVE — 2 min.
    pub ecs_capacity_provider_deprovision: Duration,
    /// Secrets Manager: a DeleteSecret with ForceDeleteWithoutRecovery completes in the
    /// background; until then the name is held (CreateSecret of it is refused) — 20 s (an
    /// assumption: the API reference says "a short delay", with no figure).
    pub secret_force_delete: Duration,
    /// RDS: CreateDBInstance until available (the last `rds_backup` of it is backing-up) — 12 min.
    pub rds_create: Duration,
    /// RDS: the backing-up phase at the end of a create — 2 min.
    pub rds_backup: Duration,
    /// RDS: a read replica until available — 10 min.
    pub rds_replica_create: Duration,
    /// RDS: after ModifyDBInstance the status stays "available" this long — 5 s.
    pub rds_modify_delay: Duration,
    /// RDS: an instance class change (status "modifying") — 10 min.
    pub rds_class_change: Duration,
    /// RDS: other immediate modifications (storage, parameter group) — 3 min.
    pub rds_other_change: Duration,
    /// RDS: RebootDBInstance ("rebooting") — 90 s.
    pub rds_reboot: Duration,
    /// RDS: DeleteDBInstance until gone — 5 min.
    pub rds_delete: Duration,
    /// RDS: a DB parameter group still counts an instance as its member this long after the
    /// instance is gone (DeleteDBParameterGroup answers InvalidDBParameterGroupState) — 60 s
    /// (an assumption: users see the refusal right after the instance's deletion and not on
    /// a second try; terraform-provider-aws retries for up to 3 minutes).
    pub rds_parameter_group_release: Duration,
    /// MSK: CreateClusterV2 until ACTIVE — 25 min.
    pub msk_create: Duration,
    /// MSK: DeleteCluster until gone — 10 min.
    pub msk_delete: Duration,
    /// MSK: an operation stays PENDING before UPDATE_IN_PROGRESS — 15 s.
    pub msk_operation_pending: Duration,
    /// MSK: rolling broker type change, per broker — 6 min.
    pub msk_broker_type_per_broker: Duration,
    /// MSK: adding brokers — 20 min.
    pub msk_broker_count: Duration,
    /// MSK: storage increase — 5 min.
    pub msk_storage: Duration,
    /// MSK: rolling configuration change, per broker — 3 min.
    pub msk_configuration_per_broker: Duration,
    /// MSK: Kafka version upgrade, per broker — 8 min.
    pub msk_version_per_broker: Duration,
}

impl Default for DurationProfile {
    fn default() -> DurationProfile {
        let s = Duration::from_secs;
        DurationProfile {
            ecs_task_start: s(40),
            ecs_task_stop: s(30),
            ecs_service_drain: s(120),
            ecs_cluster_propagation: s(0),
            ecs_service_linked_role: s(0),
            ecs_instance_launch: s(90),
            ecs_capacity_provider_provision: s(30),
            ecs_capacity_provider_deprovision: s(120),
            secret_force_delete: s(20),
            rds_create: s(12 * 60),
            rds_backup: s(2 * 60),
            rds_replica_create: s(10 * 60),
            rds_modify_delay: s(5),
            rds_class_change: s(10 * 60),
            rds_other_change: s(3 * 60),
            rds_reboot: s(90),
            rds_delete: s(5 * 60),
            rds_parameter_group_release: s(60),
            msk_create: s(25 * 60),
            msk_delete: s(10 * 60),
            msk_operation_pending: s(15),
            msk_broker_type_per_broker: s(6 * 60),
            msk_broker_count: s(20 * 60),
            msk_storage: s(5 * 60),
            msk_configuration_per_broker: s(3 * 60),
            msk_version_per_broker: s(8 * 60),
        }
    }
}
