//! What can go wrong with the lock, in one type for both stores: each variant's message
//! names the environment and where its lease lives, so a person can act on it.
use std::io;
use std::path::PathBuf;

use super::lease::{Lease, ago, stale_in};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "environment `{env}` is being applied by {} (pid {}, run {}), acquired {} ago, lease \
         expires in {}; lock file {}",
        holder.owner, holder.pid, holder.run_id, ago(*now - holder.acquired_at),
        ago(holder.expires_at - *now), path.display()
    )]
    Held {
        env: String,
        /// Boxed: a lease is large next to the other variants.
        holder: Box<Lease>,
        now: f64,
        path: PathBuf,
    },
    #[error("the lock on `{env}` was taken over by {} (run {}); lock file {}",
        holder.owner, holder.run_id, path.display())]
    Lost {
        env: String,
        holder: Box<Lease>,
        path: PathBuf,
    },
    #[error(
        "the lock on `{env}` was broken: its lease was deleted (`envctl unlock`); lock {location}"
    )]
    Broken { env: String, location: String },
    #[error(
        "lock file {} is not a lease ({reason}); delete it if no apply of this environment \
         is running",
        path.display()
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error("environment name `{0}` cannot name a lock file")]
    InvalidEnv(String),
    #[error("environment `{env}` is not locked ({location})")]
    NotLocked { env: String, location: String },
    #[error(
        "environment `{env}` is held by a run that is still renewing its lease: {}; breaking \
         it would let another run change the environment while that one still does (it stops \
         only at its next renewal). If that run is gone, wait {} until its lease goes stale, \
         or pass --force ({location})",
        holder.describe_holder(*now), ago(stale_in(holder, *now))
    )]
    StillRenewed {
        env: String,
        holder: Box<Lease>,
        now: f64,
        location: String,
    },
    #[error(
        "environment `{env}` is held by run {} of {} (pid {}), not by run {requested}; \
         nothing was unlocked ({location})",
        holder.run_id, holder.owner, holder.pid
    )]
    OtherRun {
        env: String,
        holder: Box<Lease>,
        requested: String,
        location: String,
    },
    /// The AWS error is part of this message, not a separate source: printed as a chain it
    /// would appear twice in one line.
    #[error("lock {location}: {error}")]
    Remote {
        location: String,
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "the lock bucket `{bucket}` does not exist ({location}); envctl never creates it: \
         create it once (docs/ci.md, \"The lock bucket\"), or point --lock / ENVCTL_LOCK / \
         the env's `lock:` at a bucket that exists"
    )]
    NoBucket { bucket: String, location: String },
    #[error("lock file {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}
