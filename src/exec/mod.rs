//! The executor's infrastructure (placeholder docs, completed with the last module).
pub mod backoff;
pub mod clock;
pub mod journal;
pub mod limiter;
pub mod lock;
pub mod sim_clock;
pub mod wait;

pub use backoff::{Backoff, BackoffPolicy, RetryOutcome, Verdict};
pub use clock::{Clock, ParticipantGuard, RealClock, SleepFuture};
pub use journal::{Entry, Journal, JournalError, JournalRead, Phase};
pub use limiter::{Category, Limit, RateLimits, TokenBucket, category, lower_bound_secs};
pub use lock::{Holder, Lease, LockError, LockGuard};
pub use sim_clock::{AdvanceHook, SimClock, SimClockBuilder};
pub use wait::{PollInterval, Probe, WaitOutcome, await_condition};
