//! Resource identities: what an action acts on, typed. `Display` gives the stable key
//! strings of `plan --json` (`ecs/service/mod-users`, `kafka/cluster/tenant`), and parsing
//! reads them back, so a saved plan round-trips exactly.
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Text that is not a resource key: a saved plan or a journal edited by hand.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{0}` is not a resource key (expected e.g. `ecs/service/NAME`)")]
pub struct BadResourceId(pub String);

/// One resource of an environment.
///
/// Kafka clusters are identified by their *spec key* (`tenant`), not by their MSK name
/// (`pcp1-msk-tenant`): a rename keeps the identity and becomes a replacement whose
/// operation names the old and the new cluster. A cluster envctl owns that no spec key
/// describes any more is identified by its live name.
///
/// The variants are in the order of their keys, so ids sort as their keys do.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceId {
    /// The ECS Managed Instances capacity provider envctl owns (`ecs.capacity.
    /// managed_instances`), by its name.
    CapacityProvider {
        name: String,
    },
    EcsCluster {
        name: String,
    },
    /// The container instances registered in a cluster by something else (`ecs.capacity:
    /// {instances: N}`), by the cluster's name: apply waits for them, never changes them.
    ContainerInstances {
        cluster: String,
    },
    EcsService {
        name: String,
    },
    /// Every revision of a task-definition family (destroy only).
    TaskDefinitions {
        family: String,
    },
    KafkaCluster {
        key: String,
    },
    KafkaConfiguration {
        key: String,
    },
    DbInstance {
        id: String,
    },
    DbParameterGroup {
        name: String,
    },
    DbSubnetGroup {
        name: String,
    },
    /// The Secrets Manager secret with the writer's master credentials.
    DbMasterSecret {
        name: String,
    },
    /// A CloudWatch Logs group the task definitions' awslogs driver writes to.
    LogGroup {
        name: String,
    },
}

impl ResourceId {
    pub fn capacity_provider(name: impl Into<String>) -> Self {
        ResourceId::CapacityProvider { name: name.into() }
    }
    pub fn ecs_cluster(name: impl Into<String>) -> Self {
        ResourceId::EcsCluster { name: name.into() }
    }
    pub fn container_instances(cluster: impl Into<String>) -> Self {
        ResourceId::ContainerInstances {
            cluster: cluster.into(),
        }
    }
    pub fn service(name: impl Into<String>) -> Self {
        ResourceId::EcsService { name: name.into() }
    }
    pub fn task_definitions(family: impl Into<String>) -> Self {
        ResourceId::TaskDefinitions {
            family: family.into(),
        }
    }
    pub fn kafka_configuration(key: impl Into<String>) -> Self {
        ResourceId::KafkaConfiguration { key: key.into() }
    }
    pub fn kafka_cluster(key: impl Into<String>) -> Self {
        ResourceId::KafkaCluster { key: key.into() }
    }
    pub fn db_parameter_group(name: impl Into<String>) -> Self {
        ResourceId::DbParameterGroup { name: name.into() }
    }
    pub fn db_subnet_group(name: impl Into<String>) -> Self {
        ResourceId::DbSubnetGroup { name: name.into() }
    }
    pub fn db_master_secret(name: impl Into<String>) -> Self {
        ResourceId::DbMasterSecret { name: name.into() }
    }
    pub fn log_group(name: impl Into<String>) -> Self {
        ResourceId::LogGroup { name: name.into() }
    }
    pub fn db_instance(id: impl Into<String>) -> Self {
        ResourceId::DbInstance { id: id.into() }
    }

    /// The kind part of the key: `ecs/service`.
    pub fn kind(&self) -> &'static str {
        match self {
            ResourceId::CapacityProvider { .. } => "ecs/capacity-provider",
            ResourceId::EcsCluster { .. } => "ecs/cluster",
            ResourceId::ContainerInstances { .. } => "ecs/container-instances",
            ResourceId::EcsService { .. } => "ecs/service",
            ResourceId::TaskDefinitions { .. } => "ecs/task-definitions",
            ResourceId::KafkaConfiguration { .. } => "kafka/configuration",
            ResourceId::KafkaCluster { .. } => "kafka/cluster",
            ResourceId::DbParameterGroup { .. } => "rds/parameter-group",
            ResourceId::DbSubnetGroup { .. } => "rds/subnet-group",
            ResourceId::DbMasterSecret { .. } => "rds/master-secret",
            ResourceId::LogGroup { .. } => "logs/log-group",
            ResourceId::DbInstance { .. } => "rds/instance",
        }
    }

    /// The name part of the key: `mod-users`.
    pub fn name(&self) -> &str {
        match self {
            ResourceId::EcsCluster { name }
            | ResourceId::CapacityProvider { name }
            | ResourceId::EcsService { name }
            | ResourceId::DbParameterGroup { name }
            | ResourceId::DbSubnetGroup { name }
            | ResourceId::DbMasterSecret { name }
            | ResourceId::LogGroup { name }
            | ResourceId::ContainerInstances { cluster: name } => name,
            ResourceId::TaskDefinitions { family } => family,
            ResourceId::KafkaConfiguration { key } | ResourceId::KafkaCluster { key } => key,
            ResourceId::DbInstance { id } => id,
        }
    }

    pub fn is_service(&self) -> bool {
        matches!(self, ResourceId::EcsService { .. })
    }

    pub fn is_ecs(&self) -> bool {
        matches!(
            self,
            ResourceId::EcsCluster { .. }
                | ResourceId::CapacityProvider { .. }
                | ResourceId::ContainerInstances { .. }
                | ResourceId::EcsService { .. }
                | ResourceId::TaskDefinitions { .. }
        )
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind(), self.name())
    }
}

impl FromStr for ResourceId {
    type Err = BadResourceId;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadResourceId(text.to_string());
        let (kind, name) = match text.match_indices('/').nth(1) {
            Some((i, _)) => (&text[..i], &text[i + 1..]),
            None => return Err(bad()),
        };
        if name.is_empty() {
            return Err(bad());
        }
        Ok(match kind {
            "ecs/capacity-provider" => ResourceId::capacity_provider(name),
            "ecs/cluster" => ResourceId::ecs_cluster(name),
            "ecs/container-instances" => ResourceId::container_instances(name),
            "ecs/service" => ResourceId::service(name),
            "ecs/task-definitions" => ResourceId::task_definitions(name),
            "kafka/configuration" => ResourceId::kafka_configuration(name),
            "kafka/cluster" => ResourceId::kafka_cluster(name),
            "rds/parameter-group" => ResourceId::db_parameter_group(name),
            "rds/subnet-group" => ResourceId::db_subnet_group(name),
            "rds/master-secret" => ResourceId::db_master_secret(name),
            "logs/log-group" => ResourceId::log_group(name),
            "rds/instance" => ResourceId::db_instance(name),
            _ => return Err(bad()),
        })
    }
}

impl PartialEq<str> for ResourceId {
    fn eq(&self, other: &str) -> bool {
        other
            .strip_prefix(self.kind())
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(self.name())
    }
}

impl PartialEq<&str> for ResourceId {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl Serialize for ResourceId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ResourceId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_print_and_parse_alike() {
        let keys = [
            "rds/parameter-group/pcp1-db-params",
            "ecs/cluster/pcp1",
            "ecs/capacity-provider/envctl-pcp1",
            "ecs/container-instances/pcp1",
            "ecs/service/mod-users",
            "ecs/task-definitions/pcp1-mod-users",
            "kafka/configuration/tenant",
            "rds/instance/pcp1-db",
            "kafka/cluster/tenant",
        ];
        for key in keys {
            let id: ResourceId = key.parse().unwrap();
            assert_eq!(id.to_string(), key);
            assert_eq!(id, key);
        }
        assert!("ecs/nothing/x".parse::<ResourceId>().is_err());
        let mut ids: Vec<ResourceId> = keys.iter().map(|k| k.parse().unwrap()).collect();
        ids.sort();
        let mut sorted = keys.to_vec();
        sorted.sort();
        assert_eq!(
            ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            sorted
        );
        assert!("ecs/service/".parse::<ResourceId>().is_err());
        assert!("plain".parse::<ResourceId>().is_err());
    }
}
