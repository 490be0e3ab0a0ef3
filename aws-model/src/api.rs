//! AWS API operations: which ones change the world, and the token bucket each ECS
//! operation draws from.
//!
//! ECS throttles per account and Region with token buckets per API group: a bucket holds up
//! to `burst` tokens and refills at `rate` per second; a call takes one token or fails with
//! ThrottlingException. Source: "Request throttling for the Amazon ECS API",
//! <https://docs.aws.amazon.com/AmazonECS/latest/APIReference/request-throttling.html>

/// Whether an operation changes the world (as opposed to reading it). envctl counts these
/// to report how many mutating AWS calls a plan made; the ECS buckets split on it.
pub fn is_mutating(service: &str, operation: &str) -> bool {
    // The verb decides for all four services today; the service stays in the signature so
    // callers need not change if an operation name ever means different things.
    let _ = service;
    const PREFIXES: &[&str] = &[
        "Create",
        "Update",
        "Delete",
        "Register",
        "Deregister",
        "Run",
        "Stop",
        "Tag",
        "Untag",
        "Modify",
        "Add",
        "Put",
        "Remove",
        "Reboot",
        "Reset",
        "Start",
    ];
    PREFIXES.iter().any(|p| operation.starts_with(p))
}

/// The ECS API group whose token bucket an operation draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EcsApiGroup {
    ServiceRead,
    ServiceModify,
    TaskDefinitionModify,
    TaskDefinitionRead,
    ClusterModify,
    TaskModify,
    OtherRead,
    OtherModify,
}

impl EcsApiGroup {
    /// (burst, refill per second).
    pub fn limits(self) -> (f64, f64) {
        match self {
            EcsApiGroup::ServiceRead => (100.0, 20.0),
            EcsApiGroup::ServiceModify => (50.0, 5.0),
            EcsApiGroup::TaskDefinitionModify => (20.0, 1.0),
            EcsApiGroup::TaskDefinitionRead => (50.0, 20.0),
            EcsApiGroup::ClusterModify => (20.0, 1.0),
            // RunTask/StopTask: 100 burst, 40 per second.
            EcsApiGroup::TaskModify => (100.0, 40.0),
            EcsApiGroup::OtherRead => (500.0, 100.0),
            EcsApiGroup::OtherModify => (100.0, 20.0),
        }
    }

    pub fn of(operation: &str) -> EcsApiGroup {
        match operation {
            "DescribeServices" | "ListServices" => EcsApiGroup::ServiceRead,
            "CreateService" | "UpdateService" | "DeleteService" => EcsApiGroup::ServiceModify,
            "RegisterTaskDefinition" | "DeregisterTaskDefinition" | "DeleteTaskDefinitions" => {
                EcsApiGroup::TaskDefinitionModify
            }
            "DescribeTaskDefinition" | "ListTaskDefinitions" => EcsApiGroup::TaskDefinitionRead,
            "CreateCluster" | "DeleteCluster" => EcsApiGroup::ClusterModify,
            "RunTask" | "StopTask" => EcsApiGroup::TaskModify,
            op if is_mutating("ecs", op) => EcsApiGroup::OtherModify,
            _ => EcsApiGroup::OtherRead,
        }
    }
}

/// The ECS token bucket an operation draws from, as `(burst, refills per second)`: the
/// numbers AWS documents and the sandbox enforces, so envctl can pace itself with the same
/// limits against either.
pub fn ecs_rate_limit(operation: &str) -> (f64, f64) {
    EcsApiGroup::of(operation).limits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_the_ecs_buckets() {
        assert_eq!(ecs_rate_limit("RegisterTaskDefinition"), (20.0, 1.0));
        assert_eq!(ecs_rate_limit("DescribeServices"), (100.0, 20.0));
        assert_eq!(ecs_rate_limit("UpdateService"), (50.0, 5.0));
        // Capacity provider calls are in no named group: the "other" modify bucket.
        assert_eq!(ecs_rate_limit("UpdateCapacityProvider"), (100.0, 20.0));
    }

    #[test]
    fn classifies_mutating_operations() {
        assert!(is_mutating("ecs", "UpdateService"));
        assert!(is_mutating("ecs", "RegisterTaskDefinition"));
        assert!(is_mutating("rds", "AddTagsToResource"));
        assert!(is_mutating("cloudwatch", "PutMetricData"));
        assert!(!is_mutating("ecs", "DescribeServices"));
        assert!(!is_mutating("kafka", "GetBootstrapBrokers"));
        assert!(!is_mutating("kafka", "ListClustersV2"));
    }
}
