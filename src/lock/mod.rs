//! The per-environment lock: one run at a time may change an environment, so two runs cannot
//! converge it at once and undo each other's changes halfway.
//!
//! A layer of its own, between the runtime ([`crate::exec`], whose [`crate::exec::Cancel`] a
//! lost lease trips) and the commands that take it. Only [`s3_store`] talks to AWS.
//!
//! - [`lease`]: the [`Lease`] and its [`Holder`], and the rules every store applies alike:
//!   when a lease is stale, when it still counts as renewed, when `unlock` may break it.
//! - [`location`]: where the lock lives ([`LockLocation`]), parsed from `--lock`,
//!   `ENVCTL_LOCK` or the env's `lock:`; pure, so the spec decoder checks a URL with it.
//! - [`store`]: [`LeaseStore`] and [`HeldLease`], the two things a store must do (take,
//!   read, break; renew, release), with two implementations: [`FileStore`] (a file under
//!   the state dir) and [`S3Store`] (an object with conditional writes).
//! - [`hold`]: [`Hold`], the scoped hold a run keeps while it lasts: renewed in the
//!   background ([`keeper`]), checked before each change through its [`Fence`], released
//!   when dropped.
//! - [`error`]: [`LockError`], one message per way the lock can fail.
pub mod error;
pub mod file_store;
pub mod hold;
pub mod keeper;
pub mod lease;
pub mod location;
pub mod s3_store;
pub mod store;

pub use error::LockError;
pub use file_store::FileStore;
pub use hold::Hold;
pub use keeper::{Fence, Releaser};
pub use lease::{Holder, Lease, RENEWALS_PER_TTL, check_unlock, renew_period, wall_clock_now};
pub use location::LockLocation;
pub use s3_store::S3Store;
pub use store::{HeldLease, LeaseStore};

/// The store at `location`; `s3` is the client an S3 location is reached with.
pub fn store_at(location: &LockLocation, s3: &aws_sdk_s3::Client) -> Box<dyn LeaseStore> {
    match location {
        LockLocation::Local(dir) => Box::new(FileStore::new(dir.clone())),
        LockLocation::S3 { bucket, prefix } => Box::new(S3Store::new(s3.clone(), bucket, prefix)),
    }
}
