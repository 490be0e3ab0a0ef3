//! What AWS sells: EC2 instance types, MSK broker types and RDS classes, with the sizes the
//! lints and estimates need. Families follow AWS's published ratios (m: 4 GiB per vCPU,
//! c: 2, r: 8), which is all the placement checks use.

/// vCPUs and memory of an EC2 instance type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceSize {
    pub vcpus: u32,
    pub memory_mib: u32,
}

impl InstanceSize {
    /// Memory an ECS container instance offers to tasks: what the OS and the ECS agent keep
    /// is out (`OS_AND_AGENT_MEMORY_MIB`, shared with the sandbox).
    pub fn task_memory_mib(&self) -> u32 {
        self.memory_mib
            .saturating_sub(envctl_aws_model::OS_AND_AGENT_MEMORY_MIB)
    }

    pub fn cpu_units(&self) -> u32 {
        self.vcpus * 1024
    }
}

// One table for envctl and the sandbox (see `envctl_aws_model::ec2`).
use envctl_aws_model::{EC2_FAMILIES, EC2_SIZES as SIZES};

/// The EC2 instance type's size, if envctl knows it.
pub fn ec2_instance(name: &str) -> Option<InstanceSize> {
    let t3 = [
        ("t3.medium", 2, 4),
        ("t3.large", 2, 8),
        ("t3.xlarge", 4, 16),
        ("t3.2xlarge", 8, 32),
    ];
    if let Some((_, vcpus, gib)) = t3.iter().find(|(n, _, _)| *n == name) {
        return Some(InstanceSize {
            vcpus: *vcpus,
            memory_mib: gib * 1024,
        });
    }
    let (family, size) = name.split_once('.')?;
    let (_, gib_per_vcpu) = EC2_FAMILIES.iter().find(|(f, _)| *f == family)?;
    let (_, vcpus) = SIZES.iter().find(|(s, _)| *s == size)?;
    Some(InstanceSize {
        vcpus: *vcpus,
        memory_mib: vcpus * gib_per_vcpu * 1024,
    })
}

pub fn ec2_instance_names() -> Vec<String> {
    let mut names: Vec<String> = EC2_FAMILIES
        .iter()
        .flat_map(|(f, _)| SIZES.iter().map(move |(s, _)| format!("{f}.{s}")))
        .collect();
    names.extend(["t3.medium", "t3.large", "t3.xlarge", "t3.2xlarge"].map(String::from));
    names
}

/// MSK broker instance types (kafka.m5.large ... kafka.m7g.16xlarge, kafka.t3.small).
pub fn msk_broker_types() -> Vec<String> {
    let mut names = vec!["kafka.t3.small".to_string()];
    for family in ["m5", "m7g"] {
        for (size, _) in SIZES {
            if family == "m7g" && *size == "24xlarge" {
                continue;
            }
            names.push(format!("kafka.{family}.{size}"));
        }
    }
    names
}

/// RDS for PostgreSQL instance classes.
pub fn rds_classes() -> Vec<String> {
    let mut names = Vec::new();
    for family in ["m5", "m6g", "m6i", "m7g", "r5", "r6g", "r6i", "r7g"] {
        for (size, _) in SIZES {
            names.push(format!("db.{family}.{size}"));
        }
    }
    for family in ["t3", "t4g"] {
        for size in ["micro", "small", "medium", "large", "xlarge", "2xlarge"] {
            names.push(format!("db.{family}.{size}"));
        }
    }
    names
}

/// Kafka version as (major, minor), from MSK version names such as "2.8.0", "3.7.x",
/// "3.7.x.kraft" or "2.8.2.tiered".
pub fn kafka_version(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Kafka versions past MSK's end of support, as (major, minor, end date): MSK creates no new
/// clusters on them and upgrades existing ones without notice ("Supported Apache Kafka
/// versions" and "Amazon MSK version support" in the MSK Developer Guide).
pub const MSK_END_OF_SUPPORT: &[(u32, u32, &str)] = &[
    (1, 1, "2024-09-11"),
    (2, 1, "2024-09-11"),
    (2, 2, "2024-09-11"),
    (2, 3, "2024-09-11"),
    (2, 4, "2024-09-11"),
    (2, 5, "2024-06-08"),
    (2, 6, "2024-09-11"),
    (2, 7, "2024-09-11"),
    (2, 8, "2025-01-14"),
    (3, 1, "2024-09-11"),
    (3, 2, "2024-09-11"),
    (3, 3, "2024-09-11"),
    (3, 4, "2025-08-04"),
    (3, 5, "2025-10-23"),
];

/// Versions MSK still offers whose end of support is announced, as (major, minor, date):
/// "Supported Apache Kafka versions" (MSK Developer Guide) via endoflife.date/amazon-msk.
/// After the date MSK upgrades their clusters at any time, without notice, and phases out
/// creating new ones; 3.8 (recommended), 3.9, 4.0 and 4.1 have no date yet.
pub const MSK_SUPPORT_ENDS: &[(u32, u32, &str)] = &[(3, 6, "2026-06-01"), (3, 7, "2026-09-01")];

/// The announced end-of-support date of a version MSK still offers.
pub fn msk_support_ends(version: &str) -> Option<&'static str> {
    let (major, minor) = kafka_version(version)?;
    MSK_SUPPORT_ENDS
        .iter()
        .find(|(ma, mi, _)| *ma == major && *mi == minor)
        .map(|(_, _, date)| *date)
}

/// Versions MSK creates clusters on (ZooKeeper mode, then KRaft), for hints and for the
/// sandbox's default catalogue.
pub const MSK_CREATABLE: &[&str] = &["3.6.0", "3.7.x", "3.8.x", "3.9.x"];
pub const MSK_CREATABLE_KRAFT: &[&str] =
    &["3.7.x.kraft", "3.8.x.kraft", "3.9.x.kraft", "4.0.x.kraft"];

/// The end-of-support date of an MSK Kafka version, if it is past it.
pub fn msk_end_of_support(version: &str) -> Option<&'static str> {
    let (major, minor) = kafka_version(version)?;
    MSK_END_OF_SUPPORT
        .iter()
        .find(|(ma, mi, _)| *ma == major && *mi == minor)
        .map(|(_, _, date)| *date)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_family_ratios() {
        assert_eq!(
            ec2_instance("m6i.2xlarge"),
            Some(InstanceSize {
                vcpus: 8,
                memory_mib: 32 * 1024
            })
        );
        assert_eq!(
            ec2_instance("m5.large").map(|s| s.memory_mib),
            Some(8 * 1024)
        );
        assert_eq!(
            ec2_instance("r6g.xlarge").map(|s| s.memory_mib),
            Some(32 * 1024)
        );
        assert_eq!(ec2_instance("m6i.huge"), None);
        assert!(msk_broker_types().contains(&"kafka.m7g.2xlarge".to_string()));
        assert!(rds_classes().contains(&"db.r6g.xlarge".to_string()));
        assert_eq!(kafka_version("3.7.x"), Some((3, 7)));
        assert_eq!(kafka_version("2.8.2.tiered"), Some((2, 8)));
        assert_eq!(kafka_version("latest"), None);
    }

    #[test]
    fn end_of_support_covers_the_seed_version_and_not_current_ones() {
        assert_eq!(msk_end_of_support("2.8.0"), Some("2025-01-14"));
        assert_eq!(msk_end_of_support("2.8.2.tiered"), Some("2025-01-14"));
        for v in MSK_CREATABLE.iter().chain(MSK_CREATABLE_KRAFT) {
            assert_eq!(msk_end_of_support(v), None, "{v}");
        }
    }
}
