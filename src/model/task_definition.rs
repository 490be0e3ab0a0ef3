//! An ECS task definition as RegisterTaskDefinition takes it, with a canonical form.
use std::collections::BTreeMap;

use envctl_aws_model::placement::{ContainerNeeds, PortMode, Protocol, TaskNeeds};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::spec::deferred::{Deferred, OutputRef, Outputs};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskDefinition {
    pub family: String,
    pub network_mode: String,
    pub requires_compatibilities: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_role_arn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_role_arn: Option<String>,
    pub container_definitions: Vec<ContainerDefinition>,
}

impl TaskDefinition {
    /// What one task of this definition reserves on a container instance: the placement
    /// rules' view of it (CPU, memory, and the host ports its network mode takes).
    pub fn needs(&self) -> TaskNeeds {
        let containers: Vec<ContainerNeeds> = self
            .container_definitions
            .iter()
            .map(|c| ContainerNeeds {
                cpu: c.cpu,
                memory: Some(c.memory),
                memory_reservation: c.memory_reservation,
                ports: c
                    .port_mappings
                    .iter()
                    .map(|p| {
                        let protocol = Protocol::from_mapping(Some(&p.protocol));
                        (p.container_port, Some(p.host_port), protocol)
                    })
                    .collect(),
            })
            .collect();
        let mode = PortMode::from_network_mode(Some(&self.network_mode));
        TaskNeeds::of_task(&containers, mode, None, None)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerDefinition {
    pub name: String,
    pub image: String,
    pub cpu: u32,
    /// Hard limit, MiB.
    pub memory: u32,
    /// Soft limit, MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_reservation: Option<u32>,
    pub essential: bool,
    pub port_mappings: Vec<PortMapping>,
    /// Sorted by name (a BTreeMap): AWS keeps the order it was given, so sorting here is what
    /// makes equal settings compare equal.
    #[serde(serialize_with = "env_list", deserialize_with = "env_from_list")]
    pub environment: BTreeMap<String, Deferred>,
    pub secrets: Vec<SecretRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_configuration: Option<LogConfiguration>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PortMapping {
    pub container_port: u16,
    pub host_port: u16,
    pub protocol: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    pub name: String,
    /// The secret's ARN (with an optional `:json-key:version-stage:version-id` suffix); it may
    /// refer to an output known only after apply, the RDS-managed master secret
    /// (`${rds.writer.master_secret_arn}:password::`).
    #[serde(deserialize_with = "literal_from_string")]
    pub value_from: Deferred,
}

/// A cached definition is resolved: its `valueFrom` is a literal.
fn literal_from_string<'de, D: Deserializer<'de>>(d: D) -> Result<Deferred, D::Error> {
    String::deserialize(d).map(Deferred::literal)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogConfiguration {
    pub log_driver: String,
    pub options: BTreeMap<String, String>,
}

fn env_list<S: Serializer>(env: &BTreeMap<String, Deferred>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Pair<'a> {
        name: &'a str,
        value: &'a Deferred,
    }
    s.collect_seq(env.iter().map(|(name, value)| Pair { name, value }))
}

/// Reads the `[{name, value}]` list back; cached definitions are resolved, so every value
/// is a literal.
fn env_from_list<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Deferred>, D::Error> {
    #[derive(Deserialize)]
    struct Pair {
        name: String,
        value: String,
    }
    let pairs = Vec::<Pair>::deserialize(d)?;
    Ok(pairs
        .into_iter()
        .map(|p| (p.name, Deferred::literal(p.value)))
        .collect())
}

impl TaskDefinition {
    /// References to other resources' outputs that this definition still needs.
    pub fn unresolved(&self) -> Vec<OutputRef> {
        let mut refs: Vec<OutputRef> = self
            .container_definitions
            .iter()
            .flat_map(|c| {
                c.environment
                    .values()
                    .chain(c.secrets.iter().map(|s| &s.value_from))
            })
            .flat_map(|v| v.refs().cloned())
            .collect();
        refs.sort();
        refs.dedup();
        refs
    }

    /// The same definition with every reference replaced by its value, or the first
    /// reference that is not known yet.
    pub fn resolve(&self, outputs: &Outputs) -> Result<TaskDefinition, OutputRef> {
        let mut out = self.clone();
        for c in &mut out.container_definitions {
            for value in c.environment.values_mut() {
                *value = Deferred::literal(value.resolve(outputs)?);
            }
            for secret in &mut c.secrets {
                secret.value_from = Deferred::literal(secret.value_from.resolve(outputs)?);
            }
        }
        Ok(out)
    }

    /// A stable hash of the canonical JSON; equal hashes mean nothing needs registering.
    /// Only meaningful for resolved definitions.
    pub fn content_hash(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let digest = Sha256::digest(&json);
        hex::encode(&digest[..16])
    }
}
