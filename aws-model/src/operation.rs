//! AWS operation names as types, one enum per API, each name written once: envctl's call
//! sites name the operation they send (`Operation::Ecs(EcsOp::CreateCluster)`), the adapters
//! report errors under the same value, the client-side limiter and the sandbox's throttle
//! take an ECS operation's token bucket from [`EcsOp::group`].
//!
//! The variants are spelt as the API spells the action (`CreateDBInstance`, not
//! `CreateDbInstance`), so `as_str` is the variant's own name and a grep for the name AWS
//! documents finds every use.

use crate::api::{EcsApiGroup, is_mutating};
use std::fmt;

/// Defines one API's operation enum: `ALL`, `SERVICE`, `as_str`, `parse`, `is_mutating`,
/// `Display`, and the conversion to the `&'static str` errors and journals carry.
macro_rules! operations {
    (
        $(#[$meta:meta])*
        $name:ident = $service:literal { $( $variant:ident ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $variant, )+
        }

        impl $name {
            /// Every operation of this API that envctl or the sandbox knows.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The API's short name, as `is_mutating` and the request log know it.
            pub const SERVICE: &'static str = $service;

            /// The action's name as the API spells it (`"CreateCluster"`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => stringify!($variant), )+
                }
            }

            /// The operation of this API named `name`, if it is one envctl knows.
            pub fn parse(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|op| op.as_str() == name)
            }

            /// Whether it changes the world (see [`is_mutating`]).
            pub fn is_mutating(self) -> bool {
                is_mutating($service, self.as_str())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<$name> for &'static str {
            fn from(op: $name) -> &'static str {
                op.as_str()
            }
        }
    };
}

operations! {
    /// Amazon ECS actions (ECS API Reference, "Actions").
    EcsOp = "ecs" {
        CreateCapacityProvider,
        CreateCluster,
        CreateService,
        DeleteCapacityProvider,
        DeleteCluster,
        DeleteService,
        DeleteTaskDefinitions,
        DeregisterTaskDefinition,
        DescribeCapacityProviders,
        DescribeClusters,
        DescribeContainerInstances,
        DescribeServices,
        DescribeTaskDefinition,
        DescribeTasks,
        ListClusters,
        ListContainerInstances,
        ListServices,
        ListTagsForResource,
        ListTaskDefinitions,
        ListTasks,
        PutClusterCapacityProviders,
        RegisterTaskDefinition,
        RunTask,
        StopTask,
        TagResource,
        UntagResource,
        UpdateCapacityProvider,
        UpdateService,
    }
}

impl EcsOp {
    /// The token bucket ECS throttles it by ("Request throttling for the Amazon ECS API").
    pub fn group(self) -> EcsApiGroup {
        EcsApiGroup::of(self.as_str())
    }
}

operations! {
    /// Amazon MSK actions (MSK API Reference).
    KafkaOp = "kafka" {
        CreateCluster,
        CreateClusterV2,
        CreateConfiguration,
        DeleteCluster,
        DeleteConfiguration,
        DescribeClusterOperationV2,
        DescribeClusterV2,
        DescribeConfigurationRevision,
        GetBootstrapBrokers,
        ListClusterOperationsV2,
        ListClustersV2,
        ListConfigurations,
        ListKafkaVersions,
        ListTagsForResource,
        TagResource,
        UpdateBrokerCount,
        UpdateBrokerStorage,
        UpdateBrokerType,
        UpdateClusterConfiguration,
        UpdateClusterKafkaVersion,
        UpdateConfiguration,
    }
}

operations! {
    /// Amazon RDS actions (RDS API Reference).
    RdsOp = "rds" {
        AddTagsToResource,
        CreateDBInstance,
        CreateDBInstanceReadReplica,
        CreateDBParameterGroup,
        CreateDBSubnetGroup,
        DeleteDBInstance,
        DeleteDBParameterGroup,
        DeleteDBSubnetGroup,
        DescribeDBEngineVersions,
        DescribeDBInstances,
        DescribeDBParameterGroups,
        DescribeDBParameters,
        DescribeDBSubnetGroups,
        DescribeOrderableDBInstanceOptions,
        ListTagsForResource,
        ModifyDBInstance,
        ModifyDBParameterGroup,
        RebootDBInstance,
        ResetDBParameterGroup,
        StartDBInstance,
        StopDBInstance,
    }
}

operations! {
    /// AWS Secrets Manager actions (Secrets Manager API Reference).
    SecretsManagerOp = "secretsmanager" {
        CreateSecret,
        DeleteSecret,
        DescribeSecret,
        GetRandomPassword,
        GetSecretValue,
        ListSecrets,
    }
}

operations! {
    /// Amazon CloudWatch Logs actions (CloudWatch Logs API Reference).
    LogsOp = "logs" {
        CreateLogGroup,
        DeleteLogGroup,
        DescribeLogGroups,
        ListTagsForResource,
        PutRetentionPolicy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_the_variant_and_parses_back() {
        assert_eq!(EcsOp::CreateCluster.as_str(), "CreateCluster");
        assert_eq!(RdsOp::CreateDBInstance.to_string(), "CreateDBInstance");
        for op in EcsOp::ALL {
            assert_eq!(EcsOp::parse(op.as_str()), Some(*op));
        }
        assert_eq!(EcsOp::parse("describeservices"), None);
    }

    #[test]
    fn an_ecs_operation_knows_its_bucket() {
        assert_eq!(
            EcsOp::RegisterTaskDefinition.group(),
            EcsApiGroup::TaskDefinitionModify
        );
        assert_eq!(EcsOp::DescribeServices.group().limits(), (100.0, 20.0));
        assert_eq!(
            EcsOp::UpdateCapacityProvider.group(),
            EcsApiGroup::OtherModify
        );
        assert_eq!(EcsOp::DescribeClusters.group(), EcsApiGroup::OtherRead);
        assert!(EcsOp::RunTask.is_mutating() && !KafkaOp::DescribeClusterV2.is_mutating());
    }
}
