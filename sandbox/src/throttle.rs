//! ECS API token buckets on the virtual clock.
//!
//! The groups and their sizes are AWS's, from [`envctl_aws_model::api`] (shared with
//! envctl's rate limiter); this module only keeps the buckets' levels over virtual time.

use envctl_aws_model::api::EcsApiGroup;
use std::collections::HashMap;

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: f64,
}

#[derive(Debug, Default)]
pub struct Buckets {
    buckets: HashMap<EcsApiGroup, Bucket>,
}

impl Buckets {
    /// Takes a token for `operation` at virtual time `now`; false when throttled.
    pub fn take(&mut self, operation: &str, now: f64) -> bool {
        let group = EcsApiGroup::of(operation);
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
