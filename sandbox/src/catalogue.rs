//! What the emulated account offers: Kafka versions, MSK broker types and storage, RDS
//! engine versions and orderable instance classes. Creates are checked against it (AWS
//! refuses versions it no longer offers), `envctl preflight` reads it through the real
//! describe operations, and tests replace it with `POST /_sandbox/catalogue`.

use envctl_aws_model::status::{EngineVersionStatus, KafkaVersionStatus};
use envctl_aws_model::{EC2_FAMILIES, EC2_SIZES, OS_AND_AGENT_MEMORY_MIB};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KafkaVersion {
    pub version: String,
    /// ACTIVE or DEPRECATED (ListKafkaVersions).
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineVersion {
    pub engine: String,
    pub version: String,
    pub family: String,
    /// The minor RDS picks when a request names only the major (or no version).
    #[serde(default)]
    pub default: bool,
    /// available or deprecated (DescribeDBEngineVersions `Status`); deprecated versions
    /// cannot be created.
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Catalogue {
    pub kafka_versions: Vec<KafkaVersion>,
    pub msk_broker_types: Vec<String>,
    /// EBS volume per broker, GiB (MSK: 1 to 16384).
    pub msk_max_volume_gib: i64,
    pub rds_engine_versions: Vec<EngineVersion>,
    /// Instance classes orderable for every offered postgres version.
    pub rds_classes: Vec<String>,
}

fn kafka(version: &str, status: &str) -> KafkaVersion {
    KafkaVersion {
        version: version.into(),
        status: status.into(),
    }
}

fn postgres(version: &str, default: bool, status: &str) -> EngineVersion {
    let major = version.split('.').next().unwrap_or(version);
    EngineVersion {
        engine: "postgres".into(),
        version: version.into(),
        family: format!("postgres{major}"),
        default,
        status: status.into(),
    }
}

impl Default for Catalogue {
    /// A snapshot of us-east-1 in 2026: Kafka 2.8 and 3.1-3.5 past end of support, postgres
    /// 16.3 deprecated (the seeds' versions), current versions available.
    fn default() -> Self {
        let mut kafka_versions: Vec<KafkaVersion> = [
            "2.6.2", "2.7.1", "2.8.0", "2.8.1", "3.1.1", "3.2.0", "3.3.2", "3.4.0", "3.5.1",
        ]
        .iter()
        .map(|v| kafka(v, "DEPRECATED"))
        .collect();
        kafka_versions.extend(
            [
                "3.6.0",
                "3.7.x",
                "3.7.x.kraft",
                "3.8.x",
                "3.8.x.kraft",
                "3.9.x",
                "3.9.x.kraft",
                "4.0.x.kraft",
            ]
            .iter()
            .map(|v| kafka(v, "ACTIVE")),
        );
        let mut msk_broker_types = vec!["kafka.t3.small".to_string()];
        for family in ["m5", "m7g"] {
            for size in [
                "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge",
            ] {
                msk_broker_types.push(format!("kafka.{family}.{size}"));
            }
        }
        let mut rds_classes = Vec::new();
        for family in ["m5", "m6g", "m6i", "m7g", "r5", "r6g", "r6i", "r7g"] {
            for size in [
                "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge",
            ] {
                rds_classes.push(format!("db.{family}.{size}"));
            }
        }
        for size in ["micro", "small", "medium", "large"] {
            rds_classes.push(format!("db.t3.{size}"));
            rds_classes.push(format!("db.t4g.{size}"));
        }
        Catalogue {
            kafka_versions,
            msk_broker_types,
            msk_max_volume_gib: 16384,
            rds_engine_versions: vec![
                postgres("15.7", false, "deprecated"),
                postgres("15.10", true, "available"),
                postgres("16.3", false, "deprecated"),
                postgres("16.6", false, "available"),
                postgres("16.8", true, "available"),
                postgres("17.4", true, "available"),
            ],
            rds_classes,
        }
    }
}

impl Catalogue {
    pub fn kafka_status(&self, version: &str) -> Option<&str> {
        self.kafka_versions
            .iter()
            .find(|k| k.version == version)
            .map(|k| k.status.as_str())
    }

    pub fn active_kafka_versions(&self) -> Vec<&str> {
        self.kafka_versions
            .iter()
            .filter(|k| k.status == KafkaVersionStatus::Active)
            .map(|k| k.version.as_str())
            .collect()
    }

    /// The version CreateDBInstance gets: a full version must be offered and available; a
    /// major ("16") or nothing selects that major's (or the engine's newest) default minor.
    /// `None` means RDS would refuse it.
    pub fn resolve_engine_version(&self, engine: &str, requested: Option<&str>) -> Option<String> {
        let of_engine = || {
            self.rds_engine_versions
                .iter()
                .filter(|v| v.engine == engine)
        };
        match requested {
            Some(v) if v.contains('.') => of_engine()
                .find(|e| e.version == v && e.status == EngineVersionStatus::Available)
                .map(|e| e.version.clone()),
            Some(major) => of_engine()
                .filter(|e| e.default && e.status == EngineVersionStatus::Available)
                .find(|e| e.version.split('.').next() == Some(major))
                .map(|e| e.version.clone()),
            None => of_engine()
                .filter(|e| e.default && e.status == EngineVersionStatus::Available)
                .max_by_key(|e| version_key(&e.version))
                .map(|e| e.version.clone()),
        }
    }

    /// The newest available minor of `version`'s major above it: what an automatic minor
    /// version upgrade moves an instance to.
    pub fn next_minor(&self, engine: &str, version: &str) -> Option<String> {
        let major = version.split('.').next()?;
        self.rds_engine_versions
            .iter()
            .filter(|e| e.engine == engine && e.status == EngineVersionStatus::Available)
            .filter(|e| e.version.split('.').next() == Some(major))
            .filter(|e| version_key(&e.version) > version_key(version))
            .max_by_key(|e| version_key(&e.version))
            .map(|e| e.version.clone())
    }

    pub fn rds_class_orderable(&self, class: &str) -> bool {
        self.rds_classes.iter().any(|c| c == class)
    }
}

/// "16.10" sorts above "16.8".
fn version_key(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// What a container instance of an EC2 type registers with ECS: CPU units (1024 per vCPU)
/// and memory for tasks in MiB. The instance's memory less what the OS and the ECS agent
/// keep (`OS_AND_AGENT_MEMORY_MIB`, the figure envctl's capacity lint sizes instances with),
/// so `validate` and the sandbox agree on what fits. `None` for a type the sandbox does not
/// know.
pub fn ec2_container_resources(instance_type: &str) -> Option<(u32, u32)> {
    let (family, size) = instance_type.split_once('.')?;
    let gib_per_vcpu = EC2_FAMILIES.iter().find(|(f, _)| *f == family)?.1;
    let vcpus = EC2_SIZES.iter().find(|(s, _)| *s == size)?.1;
    let memory = (vcpus * gib_per_vcpu * 1024).saturating_sub(OS_AND_AGENT_MEMORY_MIB);
    Some((vcpus * 1024, memory))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majors_resolve_to_their_default_minor_and_deprecated_minors_to_nothing() {
        let c = Catalogue::default();
        assert_eq!(
            c.resolve_engine_version("postgres", Some("16")).as_deref(),
            Some("16.8")
        );
        assert_eq!(c.resolve_engine_version("postgres", Some("16.3")), None);
        assert_eq!(
            c.resolve_engine_version("postgres", Some("16.6"))
                .as_deref(),
            Some("16.6")
        );
        assert_eq!(
            c.resolve_engine_version("postgres", None).as_deref(),
            Some("17.4")
        );
    }

    #[test]
    fn next_minor_stays_in_the_major() {
        let c = Catalogue::default();
        assert_eq!(c.next_minor("postgres", "16.6").as_deref(), Some("16.8"));
        assert_eq!(c.next_minor("postgres", "16.8"), None);
    }
}
