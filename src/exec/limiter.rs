//! Client-side token buckets mirroring ECS's own API throttling, so a large apply paces its
//! calls instead of provoking ThrottlingException and burning retries.
//!
//! ECS throttles per account and Region with token buckets by API category (the Amazon ECS
//! Developer Guide, "Request throttling for the Amazon ECS API"; docs/aws-behaviour.md). Other clients in the same
//! account share AWS's buckets, so these only keep envctl itself under the limits: throttling
//! can still happen and the backoff in `backoff.rs` still handles it. Create one
//! [`RateLimits`] per account and Region and share it between all tasks of a run.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::clock::Clock;
use envctl_aws_model::api::EcsApiGroup;
use envctl_aws_model::operation::{EcsOp, KafkaOp, LogsOp, RdsOp, SecretsManagerOp};

/// A bucket's shape: `burst` tokens, refilled at `rate_per_sec`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub burst: u32,
    pub rate_per_sec: f64,
}

/// A token bucket on a [`Clock`]. Waiters are served in the order they called `acquire`.
///
/// Implemented as GCRA (a virtual scheduling form of the token bucket): each acquisition
/// reserves the next free slot under a lock and then sleeps until it, so order is fixed at the
/// call and nobody can overtake. Times are whole microseconds relative to the bucket's
/// creation, which keeps 144 slots one second apart exactly even though `Clock::now` is an f64
/// of epoch seconds. A cancelled `acquire` still spends its slot: erring towards fewer calls.
pub struct TokenBucket {
    clock: Arc<dyn Clock>,
    limit: Limit,
    /// Microseconds between tokens.
    interval_us: u64,
    origin: f64,
    /// Theoretical arrival time of the next request, in µs since `origin`.
    next_us: Mutex<u64>,
}

impl TokenBucket {
    /// A full bucket. Rates below one token per 10^6 s (including zero, negative and NaN)
    /// count as that rate, which keeps the arithmetic far from saturation.
    pub fn new(clock: Arc<dyn Clock>, limit: Limit) -> Self {
        let rate = if limit.rate_per_sec >= 1e-6 {
            limit.rate_per_sec
        } else {
            1e-6
        };
        let interval_us = (1e6 / rate).round().max(1.0) as u64;
        let origin = clock.now();
        Self {
            clock,
            limit,
            interval_us,
            origin,
            next_us: Mutex::new(0),
        }
    }

    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Waits for a token and returns how long it waited on the clock.
    pub async fn acquire(&self) -> Duration {
        let wait = self.reserve();
        if !wait.is_zero() {
            self.clock.sleep(wait).await;
        }
        wait
    }

    /// Takes the next slot without waiting and returns how long until it comes; the caller
    /// must sleep that long on the clock before calling. For reporting a wait before it
    /// happens ("waiting 12 s for the RegisterTaskDefinition rate limit"); otherwise use
    /// [`TokenBucket::acquire`].
    pub fn reserve(&self) -> Duration {
        let now_us = ((self.clock.now() - self.origin) * 1e6).round().max(0.0) as u64;
        // The state is one integer updated in one statement; a poisoned lock still holds a
        // valid value.
        let mut next = self.next_us.lock().unwrap_or_else(|p| p.into_inner());
        let arrival = (*next).max(now_us).saturating_add(self.interval_us);
        *next = arrival;
        let window = u64::from(self.limit.burst).saturating_mul(self.interval_us);
        let allowed_at = arrival.saturating_sub(window);
        Duration::from_micros(allowed_at.saturating_sub(now_us))
    }
}

/// The ECS API categories envctl calls, each with its own bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    ServiceRead,
    ServiceModify,
    TaskDefinitionRead,
    TaskDefinitionModify,
    ClusterModify,
    /// RunTask calls launching on Fargate ("AWS Fargate throttling quotas": 20 calls per
    /// second, burst and sustained). Load engines take it besides [`Category::FargateLaunch`].
    FargateRunTask,
    /// Fargate task launches: one token per task a RunTask starts (100, then 20 per second).
    FargateLaunch,
}

impl Category {
    pub const ALL: [Category; 7] = [
        Category::ServiceRead,
        Category::ServiceModify,
        Category::TaskDefinitionRead,
        Category::TaskDefinitionModify,
        Category::ClusterModify,
        Category::FargateRunTask,
        Category::FargateLaunch,
    ];

    /// The ECS API group whose bucket this category mirrors (the Fargate ones are not API
    /// groups: their limits are Fargate's launch quotas).
    pub fn group(self) -> Option<EcsApiGroup> {
        match self {
            Category::ServiceRead => Some(EcsApiGroup::ServiceRead),
            Category::ServiceModify => Some(EcsApiGroup::ServiceModify),
            Category::TaskDefinitionRead => Some(EcsApiGroup::TaskDefinitionRead),
            Category::TaskDefinitionModify => Some(EcsApiGroup::TaskDefinitionModify),
            Category::ClusterModify => Some(EcsApiGroup::ClusterModify),
            Category::FargateRunTask | Category::FargateLaunch => None,
        }
    }

    /// The category envctl paces an ECS API group by; groups it sends too few calls in to
    /// matter (the "other" buckets, RunTask's own) have none.
    pub fn of_group(group: EcsApiGroup) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.group() == Some(group))
    }

    /// The ECS default for this category ("Request throttling for the Amazon ECS API"), as
    /// `envctl_aws_model::api` states it for the sandbox too.
    pub fn limit(self) -> Limit {
        let (burst, rate_per_sec) = match self {
            Category::ServiceRead
            | Category::ServiceModify
            | Category::TaskDefinitionRead
            | Category::TaskDefinitionModify
            | Category::ClusterModify => {
                let (burst, rate) = self.group().map_or((1.0, 1.0), EcsApiGroup::limits);
                (burst as u32, rate)
            }
            Category::FargateRunTask => {
                let (burst, rate) = envctl_aws_model::engine::FARGATE_RUN_TASK_CALLS;
                (burst as u32, rate)
            }
            Category::FargateLaunch => {
                let (burst, rate) = envctl_aws_model::engine::FARGATE_TASK_LAUNCHES;
                (burst as u32, rate)
            }
        };
        Limit {
            burst,
            rate_per_sec,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// An AWS operation, with the API it belongs to: the same name exists in several APIs (ECS
/// and MSK both have DeleteCluster, CreateCluster, TagResource), and only ECS's operations
/// draw from ECS's buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Ecs(EcsOp),
    Kafka(KafkaOp),
    Rds(RdsOp),
    SecretsManager(SecretsManagerOp),
    /// CloudWatch Logs.
    Logs(LogsOp),
}

impl Operation {
    /// The API's own name for it (`"DeleteCluster"`), as journals and errors show it.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Ecs(op) => op.as_str(),
            Operation::Kafka(op) => op.as_str(),
            Operation::Rds(op) => op.as_str(),
            Operation::SecretsManager(op) => op.as_str(),
            Operation::Logs(op) => op.as_str(),
        }
    }
}

/// The throttling category of an ECS operation (`Operation::Ecs(EcsOp::UpdateService)`):
/// its API group's ([`EcsOp::group`]). Other APIs' operations, and ECS operations outside
/// those categories, are not limited client-side.
pub fn category(operation: Operation) -> Option<Category> {
    let Operation::Ecs(op) = operation else {
        return None;
    };
    Category::of_group(op.group())
}

/// The smallest time `n_calls` can take through a full bucket: the burst is free, the rest
/// come at `rate` per second. 144 registrations at 20 / 1 take at least 124 s.
pub fn lower_bound_secs(n_calls: u64, burst: u32, rate: f64) -> f64 {
    n_calls.saturating_sub(u64::from(burst)) as f64 / rate
}

/// One bucket per ECS category, shared by every task of a run against one account and Region.
pub struct RateLimits {
    /// Indexed by `Category as usize`, in the order of `Category::ALL`.
    buckets: [TokenBucket; 7],
}

impl RateLimits {
    /// Buckets with ECS's default limits, full at creation.
    pub fn ecs(clock: Arc<dyn Clock>) -> Self {
        Self {
            buckets: Category::ALL.map(|c| TokenBucket::new(clock.clone(), c.limit())),
        }
    }

    pub fn bucket(&self, category: Category) -> &TokenBucket {
        &self.buckets[category.index()]
    }

    /// Reserves a slot for `operation` without waiting (see [`TokenBucket::reserve`]).
    pub fn reserve(&self, operation: Operation) -> Duration {
        category(operation).map_or(Duration::ZERO, |c| self.bucket(c).reserve())
    }

    /// Waits for a token for `operation` and returns how long it waited; operations without
    /// a category pass at once.
    pub async fn acquire(&self, operation: Operation) -> Duration {
        match category(operation) {
            Some(c) => self.bucket(c).acquire().await,
            None => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// envctl paces its calls by the buckets the sandbox throttles by
    /// (`envctl_aws_model::api`): every ECS operation in a paced group takes that group's
    /// bucket, with the same shape.
    #[test]
    fn the_client_and_the_sandbox_agree_on_every_limited_operation() {
        let mut paced = 0;
        for op in EcsOp::ALL {
            if let Some(c) = category(Operation::Ecs(*op)) {
                paced += 1;
                let (burst, rate) = envctl_aws_model::ecs_rate_limit(op.as_str());
                assert_eq!(
                    (f64::from(c.limit().burst), c.limit().rate_per_sec),
                    (burst, rate),
                    "{op}"
                );
            }
        }
        assert_eq!(paced, 12);
    }
    use crate::exec::sim_clock::SimClock;

    fn sim() -> (SimClock, Arc<dyn Clock>) {
        let sim = SimClock::builder(1_800_000_000.0)
            .stall_timeout(Duration::from_secs(10))
            .build();
        let clock: Arc<dyn Clock> = Arc::new(sim.clone());
        (sim, clock)
    }

    #[tokio::test]
    async fn registering_144_task_definitions_takes_exactly_124_seconds() {
        let (sim, clock) = sim();
        let limits = RateLimits::ecs(clock.clone());
        let _guard = clock.participant();
        for _ in 0..144 {
            limits
                .acquire(Operation::Ecs(EcsOp::RegisterTaskDefinition))
                .await;
        }
        assert_eq!(sim.elapsed(), Duration::from_secs(124));
        assert_eq!(lower_bound_secs(144, 20, 1.0), 124.0);
    }

    #[tokio::test]
    async fn a_burst_is_instant() {
        let (sim, clock) = sim();
        let limits = RateLimits::ecs(clock.clone());
        let _guard = clock.participant();
        for _ in 0..50 {
            assert_eq!(
                limits.acquire(Operation::Ecs(EcsOp::UpdateService)).await,
                Duration::ZERO
            );
        }
        assert_eq!(sim.elapsed(), Duration::ZERO);
        // The 51st waits one refill interval: 1/5 s.
        assert_eq!(
            limits.acquire(Operation::Ecs(EcsOp::UpdateService)).await,
            Duration::from_millis(200)
        );
        assert_eq!(sim.elapsed(), Duration::from_millis(200));
    }

    #[tokio::test]
    async fn concurrent_waiters_each_get_their_own_slot() {
        let (sim, clock) = sim();
        let limits = Arc::new(RateLimits::ecs(clock.clone()));
        let mut handles = Vec::new();
        for _ in 0..144 {
            let guard = clock.participant();
            let (limits, sim) = (limits.clone(), sim.clone());
            handles.push(tokio::spawn(async move {
                let _guard = guard;
                limits
                    .acquire(Operation::Ecs(EcsOp::DeregisterTaskDefinition))
                    .await;
                sim.elapsed()
            }));
        }
        let mut finished = Vec::new();
        for h in handles {
            match h.await {
                Ok(d) => finished.push(d.as_secs()),
                Err(e) => panic!("waiter failed: {e}"),
            }
        }
        finished.sort_unstable();
        let mut expected = vec![0; 20];
        expected.extend(1..=124);
        assert_eq!(finished, expected);
        assert_eq!(sim.elapsed(), Duration::from_secs(124));
    }

    #[tokio::test]
    async fn an_idle_bucket_refills_but_never_beyond_its_burst() {
        let (sim, clock) = sim();
        let bucket = TokenBucket::new(clock.clone(), Category::ClusterModify.limit());
        let _guard = clock.participant();
        for _ in 0..20 {
            bucket.acquire().await;
        }
        clock.sleep(Duration::from_secs(10)).await;
        for _ in 0..10 {
            assert_eq!(bucket.acquire().await, Duration::ZERO);
        }
        assert_eq!(bucket.acquire().await, Duration::from_secs(1));

        clock.sleep(Duration::from_secs(1000)).await;
        for _ in 0..20 {
            assert_eq!(bucket.acquire().await, Duration::ZERO);
        }
        assert_eq!(bucket.acquire().await, Duration::from_secs(1));
        assert_eq!(sim.elapsed(), Duration::from_secs(1012));
    }

    #[tokio::test]
    async fn msk_delete_cluster_does_not_wait_for_an_empty_ecs_cluster_bucket() {
        let (sim, clock) = sim();
        let limits = RateLimits::ecs(clock.clone());
        let _guard = clock.participant();
        for _ in 0..20 {
            limits.acquire(Operation::Ecs(EcsOp::DeleteCluster)).await;
        }
        assert_eq!(
            limits
                .acquire(Operation::Kafka(KafkaOp::DeleteCluster))
                .await,
            Duration::ZERO
        );
        assert_eq!(sim.elapsed(), Duration::ZERO);
        // ECS's own DeleteCluster still waits for the next token.
        assert_eq!(
            limits.acquire(Operation::Ecs(EcsOp::DeleteCluster)).await,
            Duration::from_secs(1)
        );
    }

    #[tokio::test]
    async fn buckets_are_independent_and_unknown_operations_are_not_limited() {
        let (sim, clock) = sim();
        let limits = RateLimits::ecs(clock.clone());
        let _guard = clock.participant();
        for _ in 0..20 {
            limits
                .acquire(Operation::Ecs(EcsOp::RegisterTaskDefinition))
                .await;
        }
        // The task-definition bucket is empty; reads and other APIs are unaffected.
        assert_eq!(
            limits
                .acquire(Operation::Ecs(EcsOp::DescribeTaskDefinition))
                .await,
            Duration::ZERO
        );
        assert_eq!(
            limits
                .acquire(Operation::Ecs(EcsOp::DescribeClusters))
                .await,
            Duration::ZERO
        );
        assert_eq!(sim.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_reservation_announces_the_wait_before_it_happens() {
        let (sim, clock) = sim();
        let limits = RateLimits::ecs(clock.clone());
        for _ in 0..20 {
            assert_eq!(
                limits.reserve(Operation::Ecs(EcsOp::RegisterTaskDefinition)),
                Duration::ZERO
            );
        }
        assert_eq!(
            limits.reserve(Operation::Ecs(EcsOp::RegisterTaskDefinition)),
            Duration::from_secs(1)
        );
        assert_eq!(
            limits.reserve(Operation::Ecs(EcsOp::RegisterTaskDefinition)),
            Duration::from_secs(2)
        );
        // A waiter arriving after the reservations queues behind them.
        let _guard = clock.participant();
        assert_eq!(
            limits
                .acquire(Operation::Ecs(EcsOp::RegisterTaskDefinition))
                .await,
            Duration::from_secs(3)
        );
        assert_eq!(sim.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test]
    async fn a_zero_rate_allows_the_burst_and_then_waits_practically_forever() {
        let (_sim, clock) = sim();
        for rate_per_sec in [0.0, -1.0, f64::NAN] {
            let bucket = TokenBucket::new(
                clock.clone(),
                Limit {
                    burst: 2,
                    rate_per_sec,
                },
            );
            assert_eq!(bucket.reserve(), Duration::ZERO);
            assert_eq!(bucket.reserve(), Duration::ZERO);
            assert_eq!(bucket.reserve(), Duration::from_secs(1_000_000));
            assert_eq!(bucket.reserve(), Duration::from_secs(2_000_000));
        }
    }

    #[test]
    fn operations_map_to_the_design_categories() {
        let table = [
            ("DescribeServices", Some(Category::ServiceRead)),
            ("ListServices", Some(Category::ServiceRead)),
            ("CreateService", Some(Category::ServiceModify)),
            ("UpdateService", Some(Category::ServiceModify)),
            ("DeleteService", Some(Category::ServiceModify)),
            (
                "RegisterTaskDefinition",
                Some(Category::TaskDefinitionModify),
            ),
            (
                "DeregisterTaskDefinition",
                Some(Category::TaskDefinitionModify),
            ),
            (
                "DeleteTaskDefinitions",
                Some(Category::TaskDefinitionModify),
            ),
            ("DescribeTaskDefinition", Some(Category::TaskDefinitionRead)),
            ("CreateCluster", Some(Category::ClusterModify)),
            ("DescribeClusters", None),
        ];
        for (operation, expected) in table {
            let op = EcsOp::parse(operation);
            assert!(op.is_some(), "{operation}");
            let got = op.and_then(|op| category(Operation::Ecs(op)));
            assert_eq!(got, expected, "{operation}");
        }
        // Same names in other APIs are theirs, not ECS's: MSK's DeleteCluster once drew a
        // token from ECS's cluster bucket.
        for operation in [
            Operation::Kafka(KafkaOp::DeleteCluster),
            Operation::Kafka(KafkaOp::CreateCluster),
            Operation::Kafka(KafkaOp::TagResource),
            Operation::Rds(RdsOp::DescribeDBInstances),
        ] {
            assert_eq!(category(operation), None, "{operation:?}");
        }
        let limits: Vec<_> = Category::ALL.iter().map(|c| c.limit()).collect();
        let shapes: Vec<_> = limits.iter().map(|l| (l.burst, l.rate_per_sec)).collect();
        assert_eq!(
            shapes,
            vec![
                (100, 20.0),
                (50, 5.0),
                (50, 20.0),
                (20, 1.0),
                (20, 1.0),
                (20, 20.0),
                (100, 20.0)
            ]
        );
    }

    #[test]
    fn the_lower_bound_is_zero_within_the_burst() {
        assert_eq!(lower_bound_secs(0, 20, 1.0), 0.0);
        assert_eq!(lower_bound_secs(20, 20, 1.0), 0.0);
        assert_eq!(lower_bound_secs(21, 20, 1.0), 1.0);
        assert_eq!(lower_bound_secs(300, 100, 20.0), 10.0);
    }
}
