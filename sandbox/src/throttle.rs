//! ECS API token buckets on the virtual clock.
//!
//! ECS throttles per account and Region with token buckets per API group: a bucket holds up
//! to `burst` tokens and refills at `rate` per second; a call takes one token or fails with
//! ThrottlingException. Source: "Request throttling for the Amazon ECS API",
//! <https://docs.aws.amazon.com/AmazonECS/latest/APIReference/request-throttling.html>

use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    ServiceRead,
    ServiceModify,
    TaskDefinitionModify,
    TaskDefinitionRead,
    ClusterModify,
    TaskModify,
    OtherRead,
    OtherModify,
}

impl Group {
    /// (burst, refill per second).
    pub fn limits(self) -> (f64, f64) {
        match self {
            Group::ServiceRead => (100.0, 20.0),
            Group::ServiceModify => (50.0, 5.0),
            Group::TaskDefinitionModify => (20.0, 1.0),
            Group::TaskDefinitionRead => (50.0, 20.0),
            Group::ClusterModify => (20.0, 1.0),
            // RunTask/StopTask: 100 burst, 40 per second.
            Group::TaskModify => (100.0, 40.0),
            Group::OtherRead => (500.0, 100.0),
            Group::OtherModify => (100.0, 20.0),
        }
    }

    pub fn of(operation: &str) -> Group {
        match operation {
            "DescribeServices" | "ListServices" => Group::ServiceRead,
            "CreateService" | "UpdateService" | "DeleteService" => Group::ServiceModify,
            "RegisterTaskDefinition" | "DeregisterTaskDefinition" | "DeleteTaskDefinitions" => {
                Group::TaskDefinitionModify
            }
            "DescribeTaskDefinition" | "ListTaskDefinitions" => Group::TaskDefinitionRead,
            "CreateCluster" | "DeleteCluster" => Group::ClusterModify,
            "RunTask" | "StopTask" => Group::TaskModify,
            op if crate::is_mutating("ecs", op) => Group::OtherModify,
            _ => Group::OtherRead,
        }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: f64,
}

#[derive(Debug, Default)]
pub struct Buckets {
    buckets: HashMap<Group, Bucket>,
}

impl Buckets {
    /// Takes a token for `operation` at virtual time `now`; false when throttled.
    pub fn take(&mut self, operation: &str, now: f64) -> bool {
        let group = Group::of(operation);
        let (burst, rate) = group.limits();
        let b = self.buckets.entry(group).or_insert(Bucket {
            tokens: burst,
            last: now,
        });
        let elapsed = (now - b.last).max(0.0);
        b.tokens = (b.tokens + elapsed * rate).min(burst);
        b.last = now.max(b.last);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_bucket_is_20_then_1_per_second() {
        let mut b = Buckets::default();
        let ok = (0..25)
            .filter(|_| b.take("RegisterTaskDefinition", 0.0))
            .count();
        assert_eq!(ok, 20);
        assert!(!b.take("DeregisterTaskDefinition", 0.5));
        assert!(b.take("RegisterTaskDefinition", 1.0));
        assert!(!b.take("RegisterTaskDefinition", 1.0));
        // Other groups are independent.
        assert!(b.take("DescribeServices", 1.0));
    }
}
