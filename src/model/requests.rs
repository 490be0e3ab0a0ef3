//! The API requests the desired state becomes, in the field names of the AWS APIs.
//!
//! `envctl render` prints these, and the AWS adapters build their SDK calls from these same
//! values, so what render shows is what is sent. Tags with times (`envctl:created`,
//! `envctl:expires`, `envctl:run-id`) are added by the executor at creation.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use sha2::{Digest, Sha256};

use super::{
    DbInstance, DbParameterGroup, DbSubnetGroup, DesiredState, EcsService, KafkaCluster,
    TaskDefinition, rollout,
};

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

/// ECS takes client tokens of at most 36 ASCII characters (API reference, "Ensuring
/// idempotency"); the token is a 32-hex hash, so no name length can overflow it.
pub const CLIENT_TOKEN_MAX: usize = 36;

/// The CreateService client token: a hash of what makes this create unique (cluster,
/// service, task-definition revision, run), so a retry after a lost response is the same
/// request while another env, revision or run never reuses it.
pub fn client_token(cluster: &str, service: &str, task_definition: &str, run_id: &str) -> String {
    let mut h = Sha256::new();
    for part in [cluster, service, task_definition, run_id] {
        h.update(part.as_bytes());
        // A separator, so ("ab", "c") and ("a", "bc") differ.
        h.update([0u8]);
    }
    hex::encode(&h.finalize()[..16])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tag {
    pub key: String,
    pub value: String,
}

/// RDS spells its tag fields with capitals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RdsTag {
    pub key: String,
    pub value: String,
}

fn rds_tag_list(tags: &BTreeMap<String, String>) -> Vec<RdsTag> {
    tags.iter()
        .map(|(k, v)| RdsTag {
            key: k.clone(),
            value: v.clone(),
        })
        .collect()
}

fn tag_list(tags: &BTreeMap<String, String>) -> Vec<Tag> {
    tags.iter()
        .map(|(k, v)| Tag {
            key: k.clone(),
            value: v.clone(),
        })
        .collect()
}

/// ECS RegisterTaskDefinition input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterTaskDefinition {
    #[serde(flatten)]
    pub definition: TaskDefinition,
    pub tags: Vec<Tag>,
}

/// ECS CreateService input (UpdateService takes the same count and task definition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateService {
    pub cluster: String,
    pub service_name: String,
    /// `family` here; the executor passes the registered revision's ARN.
    pub task_definition: String,
    pub desired_count: u32,
    /// `EC2` for instances registered elsewhere; absent with a capacity provider strategy
    /// (ECS refuses both at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_type: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capacity_provider_strategy: Vec<StrategyItem>,
    /// Required by ECS for an `awsvpc` task definition: the env's subnets and security
    /// groups, no public IP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_configuration: Option<NetworkConfiguration>,
    pub deployment_configuration: DeploymentConfiguration,
    pub enable_ecs_managed_tags: bool,
    pub propagate_tags: String,
    pub tags: Vec<Tag>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentConfiguration {
    pub minimum_healthy_percent: u32,
    pub maximum_percent: u32,
    pub deployment_circuit_breaker: CircuitBreaker,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyItem {
    pub capacity_provider: String,
    pub weight: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkConfiguration {
    pub awsvpc_configuration: AwsvpcConfiguration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AwsvpcConfiguration {
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
    /// Always DISABLED: the env's subnets are private (and EC2-backed awsvpc tasks cannot
    /// get a public IP anyway).
    pub assign_public_ip: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CircuitBreaker {
    pub enable: bool,
    pub rollback: bool,
}

/// MSK CreateConfiguration input (server properties as text; the SDK base64-encodes them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateConfiguration {
    pub name: String,
    pub kafka_versions: Vec<String>,
    pub server_properties: String,
}

/// MSK CreateClusterV2 input (provisioned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateClusterV2 {
    pub cluster_name: String,
    pub provisioned: Provisioned,
    pub tags: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provisioned {
    pub broker_node_group_info: BrokerNodeGroupInfo,
    pub kafka_version: String,
    pub number_of_broker_nodes: u32,
    /// The configuration's ARN and revision are outputs of CreateConfiguration.
    pub configuration_info: String,
    pub encryption_info: EncryptionInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionInfo {
    pub encryption_in_transit: EncryptionInTransit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionInTransit {
    pub client_broker: String,
    pub in_cluster: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerNodeGroupInfo {
    pub instance_type: String,
    pub client_subnets: Vec<String>,
    pub security_groups: Vec<String>,
    pub storage_info: StorageInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageInfo {
    pub ebs_storage_info: EbsStorageInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EbsStorageInfo {
    pub volume_size: u32,
}

/// RDS CreateDBInstance / CreateDBInstanceReadReplica input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateDbInstance {
    #[serde(rename = "DBInstanceIdentifier")]
    pub db_instance_identifier: String,
    #[serde(rename = "DBInstanceClass")]
    pub db_instance_class: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated_storage: Option<u32>,
    /// Replicas name their source; writers do not.
    #[serde(
        rename = "SourceDBInstanceIdentifier",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_db_instance_identifier: Option<String>,
    #[serde(
        rename = "DBParameterGroupName",
        skip_serializing_if = "Option::is_none"
    )]
    pub db_parameter_group_name: Option<String>,
    /// Where the master password comes from: the `password` key of the secret envctl
    /// creates in Secrets Manager, written as a CloudFormation-style dynamic reference
    /// (`{{resolve:secretsmanager:<name>:SecretString:password}}`). The adapter reads the
    /// value right before the call; rendered plans and journals show only this reference.
    #[serde(rename = "MasterUserPassword", skip_serializing_if = "Option::is_none")]
    pub master_user_password_from: Option<String>,
    /// The secret the password is read from (and created in when missing).
    #[serde(skip)]
    pub master_secret_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_username: Option<String>,
    /// The writer's database; without it only `postgres` exists.
    #[serde(rename = "DBName", skip_serializing_if = "Option::is_none")]
    pub db_name: Option<String>,
    /// The env's subnet group, for replicas too: replicas of one source in one Region must
    /// name subnet groups of the same VPC (CreateDBInstanceReadReplica API reference).
    #[serde(rename = "DBSubnetGroupName", skip_serializing_if = "Option::is_none")]
    pub db_subnet_group_name: Option<String>,
    /// Always false: a test database is reached from the env's VPC only.
    pub publicly_accessible: bool,
    pub vpc_security_group_ids: Vec<String>,
    pub tags: Vec<RdsTag>,
    /// The owned subnet group the writer needs, created by the adapter right before it
    /// (render shows it once, under `db_subnet_group`).
    #[serde(skip)]
    pub create_subnet_group: Option<CreateDbSubnetGroup>,
}

/// RDS CreateDBSubnetGroup input (only for a group envctl owns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateDbSubnetGroup {
    #[serde(rename = "DBSubnetGroupName")]
    pub db_subnet_group_name: String,
    #[serde(rename = "DBSubnetGroupDescription")]
    pub db_subnet_group_description: String,
    pub subnet_ids: Vec<String>,
    pub tags: Vec<RdsTag>,
}

/// RDS CreateDBParameterGroup + ModifyDBParameterGroup input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateDbParameterGroup {
    #[serde(rename = "DBParameterGroupName")]
    pub db_parameter_group_name: String,
    #[serde(rename = "DBParameterGroupFamily")]
    pub db_parameter_group_family: String,
    pub description: String,
    pub parameters: BTreeMap<String, String>,
    pub tags: Vec<RdsTag>,
}

/// Everything `render` prints for one environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    pub env: String,
    pub region: String,
    pub ecs_cluster: String,
    pub task_definitions: BTreeMap<String, RegisterTaskDefinition>,
    pub services: BTreeMap<String, CreateService>,
    pub kafka_configurations: BTreeMap<String, CreateConfiguration>,
    pub kafka_clusters: BTreeMap<String, CreateClusterV2>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_parameter_group: Option<CreateDbParameterGroup>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_subnet_group: Option<CreateDbSubnetGroup>,
    pub db_instances: Vec<CreateDbInstance>,
}

pub fn register_task_definition(
    state: &DesiredState,
    service: &EcsService,
) -> RegisterTaskDefinition {
    RegisterTaskDefinition {
        definition: service.task_definition.clone(),
        tags: tag_list(&state.tags),
    }
}

/// The service's placement: a strategy on the env's capacity provider, or `launchType:
/// EC2` on instances registered elsewhere.
pub fn placement_of(state: &DesiredState) -> (Option<String>, Vec<StrategyItem>) {
    match state.cluster.capacity.strategy_provider() {
        Some(p) => (
            None,
            vec![StrategyItem {
                capacity_provider: p.to_string(),
                weight: 1,
            }],
        ),
        None => (Some("EC2".into()), Vec::new()),
    }
}

/// The `networkConfiguration` an awsvpc service needs; none for host and bridge.
pub fn network_configuration(
    state: &DesiredState,
    service: &EcsService,
) -> Option<NetworkConfiguration> {
    (service.task_definition.network_mode == "awsvpc").then(|| NetworkConfiguration {
        awsvpc_configuration: AwsvpcConfiguration {
            subnets: state.subnets.clone(),
            security_groups: state.security_groups.clone(),
            assign_public_ip: "DISABLED".into(),
        },
    })
}

/// The deployment configuration the service rolls with (`model::rollout`, computed for
/// every service at once: `rolling`), with the circuit breaker on so a broken deployment
/// ends as a failure (and rolls back) instead of retrying forever.
fn deployment_configuration(
    rolling: &BTreeMap<String, rollout::Rolling>,
    service: &EcsService,
) -> DeploymentConfiguration {
    let rolling = rolling
        .get(&service.name)
        .copied()
        .unwrap_or(rollout::ECS_DEFAULT);
    DeploymentConfiguration {
        minimum_healthy_percent: rolling.minimum_healthy_percent,
        maximum_percent: rolling.maximum_percent,
        deployment_circuit_breaker: CircuitBreaker {
            enable: true,
            rollback: true,
        },
    }
}

/// CreateService for every service of the state. The rollout settings depend on every
/// service's reservations, so they are computed once here: per service they made planning
/// 1,000 services take seconds of CPU (quadratic).
pub fn create_services(state: &DesiredState) -> BTreeMap<String, CreateService> {
    let rolling = rollout::rolling_settings(state, &super::task_needs(state));
    state
        .services
        .values()
        .map(|s| (s.name.clone(), create_service_with(state, s, &rolling)))
        .collect()
}

/// CreateService for one service. Planning many services goes through [`create_services`].
pub fn create_service(state: &DesiredState, service: &EcsService) -> CreateService {
    let rolling = rollout::rolling_settings(state, &super::task_needs(state));
    create_service_with(state, service, &rolling)
}

fn create_service_with(
    state: &DesiredState,
    service: &EcsService,
    rolling: &BTreeMap<String, rollout::Rolling>,
) -> CreateService {
    let (launch_type, capacity_provider_strategy) = placement_of(state);
    CreateService {
        cluster: state.cluster.name.clone(),
        service_name: service.name.clone(),
        task_definition: service.task_definition.family.clone(),
        desired_count: service.desired_count,
        launch_type,
        capacity_provider_strategy,
        network_configuration: network_configuration(state, service),
        deployment_configuration: deployment_configuration(rolling, service),
        enable_ecs_managed_tags: true,
        propagate_tags: "SERVICE".into(),
        tags: tag_list(&state.tags),
    }
}

pub fn create_configuration(cluster: &KafkaCluster) -> CreateConfiguration {
    CreateConfiguration {
        name: cluster.configuration.name.clone(),
        kafka_versions: vec![cluster.kafka_version.clone()],
        server_properties: cluster.configuration.server_properties.clone(),
    }
}

pub fn create_cluster(state: &DesiredState, cluster: &KafkaCluster) -> CreateClusterV2 {
    CreateClusterV2 {
        cluster_name: cluster.name.clone(),
        provisioned: Provisioned {
            broker_node_group_info: BrokerNodeGroupInfo {
                instance_type: cluster.broker_type.clone(),
                client_subnets: cluster.subnets.clone(),
                security_groups: cluster.security_groups.clone(),
                storage_info: StorageInfo {
                    ebs_storage_info: EbsStorageInfo {
                        volume_size: cluster.storage_gb,
                    },
                },
            },
            kafka_version: cluster.kafka_version.clone(),
            number_of_broker_nodes: cluster.brokers,
            configuration_info: format!("${{kafka.{}.configuration}}", cluster.key),
            encryption_info: EncryptionInfo {
                encryption_in_transit: EncryptionInTransit {
                    client_broker: cluster.client_broker.clone(),
                    in_cluster: true,
                },
            },
        },
        tags: state.tags.clone(),
    }
}

/// The identifier of the final snapshot DeleteDBInstance takes of `instance` at `now`
/// (seconds since the epoch): `<instance>-final-<YYYYMMDDhhmmss>` (UTC). A snapshot outlives
/// its instance and an identifier is used once, so a fixed name made the second destroy of
/// a re-created env fail with `DBSnapshotAlreadyExists` and leave the instance running
/// (docs/aws-behaviour.md, "Final snapshots have a new name each time"). Instance
/// identifiers start with a letter and end with none of `-`, so the result is a valid
/// snapshot identifier (letters, digits, single hyphens; at most 255 characters).
pub fn final_snapshot_identifier(instance: &str, now: f64) -> String {
    let stamp: String = crate::time::rfc3339(now)
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    format!("{instance}-final-{stamp}")
}

/// The writer's master user name, in CreateDBInstance and in the secret's `username`.
pub const MASTER_USERNAME: &str = "folio_admin";

pub fn create_db_instance(
    state: &DesiredState,
    db: &DbInstance,
    security_groups: &[String],
) -> CreateDbInstance {
    let writer = db.source.is_none();
    CreateDbInstance {
        db_instance_identifier: db.identifier.clone(),
        db_instance_class: db.class.clone(),
        engine: writer.then(|| db.engine.clone()),
        engine_version: if writer {
            db.engine_version.clone()
        } else {
            None
        },
        allocated_storage: writer.then_some(db.storage_gb),
        source_db_instance_identifier: db.source.clone(),
        // A same-Region postgres replica cannot take a parameter group
        // (InvalidParameterCombination); it inherits the writer's.
        db_parameter_group_name: if writer {
            db.parameter_group.clone()
        } else {
            None
        },
        master_user_password_from: state.db.as_ref().filter(|_| writer).map(|d| {
            format!(
                "{{{{resolve:secretsmanager:{}:SecretString:password}}}}",
                d.master_secret_name()
            )
        }),
        master_secret_name: state
            .db
            .as_ref()
            .filter(|_| writer)
            .map(|d| d.master_secret_name()),
        master_username: writer.then(|| MASTER_USERNAME.to_string()),
        db_name: writer.then(|| db.database.clone()),
        db_subnet_group_name: Some(db.subnet_group.clone()),
        publicly_accessible: false,
        vpc_security_group_ids: security_groups.to_vec(),
        tags: rds_tag_list(&state.tags),
        create_subnet_group: if writer {
            state
                .db
                .as_ref()
                .and_then(|d| create_db_subnet_group(state, &d.subnet_group))
        } else {
            None
        },
    }
}

pub fn create_db_parameter_group(
    state: &DesiredState,
    group: &DbParameterGroup,
) -> CreateDbParameterGroup {
    CreateDbParameterGroup {
        db_parameter_group_name: group.name.clone(),
        db_parameter_group_family: group.family.clone(),
        description: format!("envctl parameters for {}", state.env),
        parameters: group.parameters.clone(),
        tags: rds_tag_list(&state.tags),
    }
}

/// The subnet group envctl creates, when it owns one.
pub fn create_db_subnet_group(
    state: &DesiredState,
    group: &DbSubnetGroup,
) -> Option<CreateDbSubnetGroup> {
    group.owned.then(|| CreateDbSubnetGroup {
        db_subnet_group_name: group.name.clone(),
        db_subnet_group_description: format!("envctl subnets for {}", state.env),
        subnet_ids: group.subnets.clone(),
        tags: rds_tag_list(&state.tags),
    })
}

/// All requests of an environment, as `render` shows them.
pub fn all(state: &DesiredState) -> Requests {
    Requests {
        env: state.env.clone(),
        region: state.region.clone(),
        ecs_cluster: state.cluster.name.clone(),
        task_definitions: state
            .services
            .values()
            .map(|s| (s.name.clone(), register_task_definition(state, s)))
            .collect(),
        services: create_services(state),
        kafka_configurations: state
            .kafka
            .values()
            .map(|k| (k.key.clone(), create_configuration(k)))
            .collect(),
        kafka_clusters: state
            .kafka
            .values()
            .map(|k| (k.key.clone(), create_cluster(state, k)))
            .collect(),
        db_parameter_group: state
            .db
            .as_ref()
            .and_then(|db| db.parameter_group.as_ref())
            .map(|g| create_db_parameter_group(state, g)),
        db_subnet_group: state
            .db
            .as_ref()
            .and_then(|db| create_db_subnet_group(state, &db.subnet_group)),
        db_instances: state
            .db
            .iter()
            .flat_map(|db| std::iter::once(&db.writer).chain(db.readers.iter()))
            .map(|i| create_db_instance(state, i, &state.security_groups))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn final_snapshots_are_named_by_instance_and_time() {
        assert_eq!(
            final_snapshot_identifier("pcp1-db", 1_795_996_800.0),
            "pcp1-db-final-20261130000000"
        );
        assert_ne!(
            final_snapshot_identifier("pcp1-db", 1_795_996_800.0),
            final_snapshot_identifier("pcp1-db", 1_795_996_801.0)
        );
    }

    use std::path::PathBuf;

    use super::*;
    use crate::compile::compile_env;
    use crate::spec::Loader;

    fn desired(env: &str, sets: &[&str]) -> DesiredState {
        let mut loader = Loader::new();
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("envs")
            .join(format!("{env}.yaml"));
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        match compile_env(&mut loader, &path, &sets) {
            Some(c) => c.desired,
            None => panic!("{}", loader.diagnostics.render(&loader.sources)),
        }
    }

    #[test]
    fn client_tokens_fit_ecs_and_differ_by_cluster_service_revision_and_run() {
        let long = "mod-circulation-storage-abcd"; // 28 characters
        let t = client_token(
            "pcp1-pvt",
            long,
            "arn:aws:ecs:us-east-1:1:task-definition/pcp1-x:10",
            "run-1",
        );
        assert_eq!(t.len(), 32);
        assert!(t.len() <= CLIENT_TOKEN_MAX && t.bytes().all(|b| b.is_ascii_hexdigit()));
        let base = ("c", "s", "td:1", "r");
        let variants = [
            client_token("c2", "s", "td:1", "r"),
            client_token("c", "s2", "td:1", "r"),
            client_token("c", "s", "td:2", "r"),
            client_token("c", "s", "td:1", "r2"),
            client_token("cs", "", "td:1", "r"),
        ];
        let token = client_token(base.0, base.1, base.2, base.3);
        assert_eq!(token, client_token("c", "s", "td:1", "r"), "deterministic");
        for v in variants {
            assert_ne!(v, token);
        }
    }

    #[test]
    fn the_writer_gets_its_subnet_group_database_and_no_public_access() {
        let state = desired("pcp1", &[]);
        let req = all(&state);
        let writer = &req.db_instances[0];
        assert_eq!(
            writer.db_subnet_group_name.as_deref(),
            Some("pcp1-db-subnets")
        );
        assert_eq!(writer.db_name.as_deref(), Some("folio"));
        assert!(!writer.publicly_accessible);
        assert_eq!(
            writer.db_parameter_group_name.as_deref(),
            Some("pcp1-db-params-postgres16")
        );
        let group = req.db_subnet_group.as_ref().expect("an owned subnet group");
        assert_eq!(
            group.subnet_ids,
            vec!["subnet-0a1b2c3d4e5f00001", "subnet-0a1b2c3d4e5f00002"]
        );
        assert_eq!(
            writer
                .create_subnet_group
                .as_ref()
                .map(|g| &g.db_subnet_group_name),
            Some(&group.db_subnet_group_name)
        );
    }

    #[test]
    fn a_postgres_replica_takes_no_parameter_group_and_the_writers_subnet_group() {
        let req = all(&desired("pcp1", &[]));
        let reader = &req.db_instances[1];
        assert_eq!(
            reader.source_db_instance_identifier.as_deref(),
            Some("pcp1-db")
        );
        assert_eq!(reader.db_parameter_group_name, None);
        assert_eq!(
            reader.db_subnet_group_name.as_deref(),
            Some("pcp1-db-subnets")
        );
        assert_eq!(reader.db_name, None);
        assert!(!reader.publicly_accessible);
        assert!(reader.create_subnet_group.is_none());
    }

    #[test]
    fn an_existing_subnet_group_is_named_not_created() {
        let req = all(&desired(
            "pcp1",
            &["rds.writer.subnet_group=shared-db-subnets"],
        ));
        assert!(req.db_subnet_group.is_none());
        assert_eq!(
            req.db_instances[0].db_subnet_group_name.as_deref(),
            Some("shared-db-subnets")
        );
        assert!(req.db_instances[0].create_subnet_group.is_none());
    }

    #[test]
    fn msk_client_broker_is_always_sent_and_decides_the_security_protocol() {
        let state = desired("pcp1", &[]);
        let cluster = &all(&state).kafka_clusters["tenant"];
        assert_eq!(
            cluster
                .provisioned
                .encryption_info
                .encryption_in_transit
                .client_broker,
            "TLS_PLAINTEXT"
        );
        assert_eq!(state.kafka["tenant"].security_protocol, "PLAINTEXT");
        let tls = desired("pcp1", &["kafka.tenant.client_broker=TLS"]);
        assert_eq!(tls.kafka["tenant"].client_broker, "TLS");
        assert_eq!(tls.kafka["tenant"].security_protocol, "SSL");
        let env = &tls.services["mod-users"]
            .task_definition
            .container_definitions[0]
            .environment;
        assert_eq!(
            env.get("KAFKA_SECURITY_PROTOCOL").map(|v| v.to_string()),
            Some("SSL".to_string())
        );
    }

    #[test]
    fn task_definitions_carry_the_execution_role_and_name_the_group_envctl_creates() {
        let state = desired("pcp1", &[]);
        let td = &state.services["mod-users"].task_definition;
        assert_eq!(
            td.execution_role_arn.as_deref(),
            Some("arn:aws:iam::123456789012:role/ecsTaskExecutionRole")
        );
        let log = td.container_definitions[0]
            .log_configuration
            .as_ref()
            .expect("awslogs");
        // envctl creates the group (logs/log-group), so the driver need not: no
        // logs:CreateLogGroup on the execution role.
        assert_eq!(log.options.get("awslogs-create-group"), None);
        assert_eq!(
            state.log_groups().get("/ecs/pcp1").map(Vec::len),
            Some(state.services.len())
        );
    }
}

#[cfg(test)]
mod lowering_checks {
    use std::path::PathBuf;

    use crate::compile::compile_env;
    use crate::spec::Loader;

    #[test]
    fn secrets_without_an_execution_role_are_an_error_at_the_secret() {
        let mut loader = Loader::new();
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("envs/pcp1.yaml");
        let compiled = compile_env(&mut loader, &path, &["ecs.execution_role=null".to_string()]);
        assert!(compiled.is_none());
        let records = loader.diagnostics.records(&loader.sources);
        let errors: Vec<_> = records
            .iter()
            .filter(|r| r.code == "secrets-without-execution-role")
            .collect();
        // One per service (ten), each at the first secret (DB_PASSWORD, line 63).
        assert_eq!(errors.len(), 10, "{records:?}");
        assert!(
            errors
                .iter()
                .all(|r| r.file.ends_with("pcp1.yaml") && r.line == 63),
            "{errors:?}"
        );
    }
}
