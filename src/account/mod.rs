//! Reading the account: what envctl observes before it plans, imports into an env file,
//! finds left over by its tags, and checks before it spends. Each is a composition of the
//! adapters in `aws` (which only translate) under the session's clock and rate limits;
//! nothing here mutates.
pub mod import;
pub mod leftovers;
pub mod observe;
pub mod offer;

use std::future::Future;
use std::sync::Arc;

use crate::aws::{AwsError, Clients, paced};
use crate::exec::{Clock, Operation, RateLimits};

/// The clients, clock and buckets every read goes through ([`paced::call`]): one retry
/// path, under the session's rate limiter, for reads as for writes.
#[derive(Clone)]
pub struct Reads {
    pub clients: Clients,
    pub clock: Arc<dyn Clock>,
    pub limits: Arc<RateLimits>,
}

impl Reads {
    pub fn new(clients: Clients, clock: Arc<dyn Clock>, limits: Arc<RateLimits>) -> Reads {
        Reads {
            clients,
            clock,
            limits,
        }
    }

    /// One paced read: a token from the session's buckets, then envctl's backoff while the
    /// error says a retry can help.
    pub async fn call<T, F, Fut>(
        &self,
        key: &str,
        operation: Operation,
        f: F,
    ) -> Result<T, AwsError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, AwsError>>,
    {
        paced::call(self.clock.as_ref(), &self.limits, key, operation, f).await
    }
}
