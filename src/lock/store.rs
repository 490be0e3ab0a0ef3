//! Where leases live, as one trait with two implementations: [`super::FileStore`] (a file
//! under the state dir, one machine) and [`super::S3Store`] (an object in S3, every CI runner
//! of an account). The hold ([`super::Hold`]), the keeper and `envctl unlock` speak only to
//! these traits, so the rules of the lock are written once and a store only says how to
//! create, replace and delete a lease atomically.
//!
//! Futures are boxed, as [`crate::exec::Clock`]'s sleeps are, so the traits stay object-safe:
//! the store is chosen at run time from `--lock`, `ENVCTL_LOCK` or the env's `lock:`.
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::LockError;
use super::lease::{Holder, Lease};

/// A store's answer, boxed so `dyn LeaseStore` is possible.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, LockError>> + Send + 'a>>;

/// The leases of every environment in one place.
pub trait LeaseStore: Send + Sync + Debug {
    /// Takes the lock for `env` for `ttl`: fails fast with [`LockError::Held`] naming the
    /// holder, unless the lease there is stale; then it is taken over, and the held lease says
    /// so ([`HeldLease::took_over`]). Of two runs racing for one stale lease, one wins.
    fn acquire<'a>(
        &'a self,
        env: &'a str,
        holder: &'a Holder,
        ttl: Duration,
    ) -> StoreFuture<'a, Box<dyn HeldLease>>;

    /// The lease on `env`, if any. Read-only: `envctl preflight` uses it to check the store.
    fn current<'a>(&'a self, env: &'a str) -> StoreFuture<'a, Option<Lease>>;

    /// Breaks run `run_id`'s lease on purpose (`envctl unlock`), refusing with
    /// [`LockError::OtherRun`] when another run holds it; returns the lease it removed.
    fn force_unlock<'a>(&'a self, env: &'a str, run_id: &'a str) -> StoreFuture<'a, Lease>;
}

/// A lease this run holds in some store. Dropping it gives the lease up, if it is still
/// ours: a run that ends by an error path, a panic or a cancelled future does not leave the
/// environment locked until the lease expires.
pub trait HeldLease: Send + Sync + Debug {
    fn lease(&self) -> &Lease;

    /// The stale lease this one replaced, if any: the previous run may have left the
    /// environment half-applied.
    fn took_over(&self) -> Option<&Lease>;

    /// Extends the lease to `ttl` from now; [`LockError::Lost`] if another run holds it now,
    /// [`LockError::Broken`] if it was deleted (`envctl unlock`).
    fn renew(&mut self, ttl: Duration) -> StoreFuture<'_, ()>;

    /// Gives the lease up now, if it is still ours, reporting what a drop would have to
    /// ignore.
    fn release(self: Box<Self>) -> StoreFuture<'static, ()>;
}
