//! The lengths AWS allows the names envctl gives, checked before anything is sent: a copy's
//! suffix (`--copy`) makes every name longer, and a name over its limit would only be
//! refused halfway through an apply. Each limit has its source (docs/aws-behaviour.md,
//! "Name lengths").
use crate::spec::copy::CopyName;
use crate::spec::decode::At;
use crate::spec::diagnostic::{Diagnostic, Diagnostics};
use crate::spec::env::EnvSpec;

/// AWS's length limits on the names envctl gives, each with its source (docs/aws-behaviour.md,
/// "Name lengths").
pub mod limits {
    /// ECS CreateCluster `clusterName`: "Up to 255 letters (uppercase and lowercase),
    /// numbers, underscores, and hyphens are allowed" (Amazon ECS API Reference).
    pub const ECS_CLUSTER: usize = 255;
    /// ECS CreateCapacityProvider `name`: "Up to 255 characters are allowed" (Amazon ECS API
    /// Reference).
    pub const ECS_CAPACITY_PROVIDER: usize = 255;
    /// MSK CreateClusterV2 `clusterName`: 1 to 64 characters (terraform-provider-aws,
    /// internal/service/kafka/cluster.go: `validation.StringLenBetween(1, 64)`).
    pub const MSK_CLUSTER: usize = 64;
    /// RDS CreateDBInstance `DBInstanceIdentifier`: "Must contain from 1 to 63 letters,
    /// numbers, or hyphens" (Amazon RDS API Reference).
    pub const RDS_INSTANCE: usize = 63;
    /// RDS CreateDBParameterGroup `DBParameterGroupName`: "Must be 1 to 255 letters,
    /// numbers, or hyphens" (Amazon RDS API Reference).
    pub const RDS_PARAMETER_GROUP: usize = 255;
    /// RDS CreateDBSubnetGroup `DBSubnetGroupName`: "Must contain no more than 255
    /// letters, numbers, periods, underscores, spaces, or hyphens" (Amazon RDS API Reference).
    pub const RDS_SUBNET_GROUP: usize = 255;
    /// Secrets Manager CreateSecret `Name`: length 1 to 512 (AWS Secrets Manager API
    /// Reference).
    pub const SECRET: usize = 512;
}

/// The names an apply would give that AWS refuses as too long, each at the line that
/// names it; `copy` (already applied to `spec`) is named in the message when its suffix is
/// what pushed a name over.
pub fn check_name_lengths(spec: &EnvSpec, copy: Option<&CopyName>) -> Diagnostics {
    let mut out = Diagnostics::new();
    let mut check = |at: &At<String>, name: String, what: &str, max: usize| {
        if name.len() <= max {
            return;
        }
        let mut message = format!(
            "{what} `{name}` has {} characters; AWS allows at most {max}",
            name.len()
        );
        let hint = match copy {
            Some(c) if name.len() - (c.as_str().len() + 1) <= max => {
                message.push_str(&format!(" (with the suffix `-{c}` of copy `{c}`)"));
                format!(
                    "shorten this name by {} characters, or use a shorter copy name",
                    name.len() - max
                )
            }
            _ => format!("shorten this name by {} characters", name.len() - max),
        };
        out.push(Diagnostic::error("name-too-long", at.span, message).with_hint(hint));
    };
    let cluster = &spec.ecs.cluster;
    check(
        cluster,
        cluster.value.clone(),
        "ECS cluster",
        limits::ECS_CLUSTER,
    );
    if spec.ecs.capacity.managed_instances.is_some() {
        check(
            cluster,
            super::managed_instances_provider_name(&cluster.value),
            "the capacity provider of ECS cluster",
            limits::ECS_CAPACITY_PROVIDER,
        );
    }
    for k in spec.kafka.values() {
        check(
            &k.name,
            k.name.value.clone(),
            "MSK cluster",
            limits::MSK_CLUSTER,
        );
    }
    if let Some(rds) = &spec.rds {
        let w = &rds.writer;
        check(
            &w.id,
            w.id.value.clone(),
            "DB instance",
            limits::RDS_INSTANCE,
        );
        for r in &rds.readers {
            check(
                &r.id,
                r.id.value.clone(),
                "DB instance",
                limits::RDS_INSTANCE,
            );
        }
        let family = super::parameter_family(w.engine_version.as_ref().map(|v| v.value.as_str()));
        check(
            &w.id,
            super::parameter_group_name(&w.id.value, &family),
            "DB parameter group",
            limits::RDS_PARAMETER_GROUP,
        );
        if w.subnet_group.is_none() {
            check(
                &w.id,
                super::db_subnet_group_name(&w.id.value),
                "DB subnet group",
                limits::RDS_SUBNET_GROUP,
            );
        }
        check(
            &w.id,
            super::master_secret_name(&w.id.value),
            "secret",
            limits::SECRET,
        );
    }
    out
}
