//! The executor's infrastructure (placeholder docs, completed with the last module).
pub mod backoff;
pub mod bar_progress;
pub mod clock;
pub mod journal;
pub mod limiter;
pub mod lock;
pub mod plain_progress;
pub mod progress;
pub mod recording_progress;
pub mod sim_clock;
pub mod wait;

pub use backoff::{Backoff, BackoffPolicy, RetryOutcome, Verdict};
pub use bar_progress::BarProgress;
pub use clock::{Clock, ParticipantGuard, RealClock, SleepFuture};
pub use journal::{Entry, Journal, JournalError, JournalRead, Phase};
pub use limiter::{Category, Limit, RateLimits, TokenBucket, category, lower_bound_secs};
pub use lock::{Holder, Lease, LockError, LockGuard};
pub use plain_progress::PlainProgress;
pub use progress::{Finish, Progress, Summary, for_stderr, group_of};
pub use recording_progress::{Event, RecordingProgress};
pub use sim_clock::{AdvanceHook, SimClock, SimClockBuilder};
pub use wait::{PollInterval, Probe, WaitOutcome, await_condition};
