//! Keeps a run's lease alive while the run lasts, and stops the run if the lease is lost.
//!
//! A lease has an expiry so that a killed run (SIGKILL, a lost CI runner) does not lock the
//! environment forever; a run longer than the TTL (a matrix of many points) must therefore
//! renew it. The keeper renews every `every` (a third of the TTL by default: two renewals may
//! fail before the lease expires). If a renewal finds the lease taken over or broken
//! (`envctl unlock --force`), or no renewal succeeds before the expiry, the keeper records why
//! and cancels the run: nothing new starts, and waits wake at once ([`crate::exec::cancel`]).
//!
//! A periodic renewal alone leaves a window: a matrix on the sandbox can switch and tear down
//! the environment within one renewal period after its lease was broken. So a run also
//! renews through its [`Fence`] right before each change it makes on its own schedule (a
//! matrix point's switch, the teardown, the restore): a lease lost since the last renewal
//! stops the run before that change, not after.
//!
//! Renewal runs in real time, whatever clock the run uses: leases are compared across
//! machines by wall-clock time.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::LockError;
use super::lease::wall_clock_now;
use super::store::HeldLease;
use crate::exec::cancel::Cancel;

/// The held lease, shared by the keeper, the signal handler and the hold that releases it.
pub(super) type Slot = Arc<tokio::sync::Mutex<Option<Box<dyn HeldLease>>>>;

/// What renews the lease: the keeper's loop and the run's fence share it.
#[derive(Clone)]
pub(super) struct Renewer {
    pub(super) slot: Slot,
    pub(super) ttl: Duration,
    pub(super) every: Duration,
    pub(super) cancel: Cancel,
    pub(super) lost: Arc<Mutex<Option<String>>>,
}

/// How one renewal ended.
#[derive(Debug, PartialEq)]
pub(super) enum Renewal {
    Renewed,
    /// Failed for a reason that may pass (S3 unreachable); the lease is still ours until it
    /// expires.
    Retry,
    /// Lost, or released: the run holds nothing any more.
    Gone,
}

impl Renewer {
    fn give_up(&self, reason: String) {
        if let Ok(mut l) = self.lost.lock() {
            l.get_or_insert_with(|| reason.clone());
        }
        eprintln!("\nerror: {reason}; stopping the run");
        self.cancel.cancel_lock_lost(&reason);
    }

    pub(super) async fn renew(&self) -> Renewal {
        let mut held = self.slot.lock().await;
        let Some(lock) = held.as_mut() else {
            return Renewal::Gone; // released
        };
        match lock.renew(self.ttl).await {
            Ok(()) => Renewal::Renewed,
            Err(e @ (LockError::Lost { .. } | LockError::Broken { .. })) => {
                // Not ours any more: forget it without deleting someone else's lease.
                held.take();
                self.give_up(e.to_string());
                Renewal::Gone
            }
            Err(e) if wall_clock_now() + self.every.as_secs_f64() >= lock.lease().expires_at => {
                held.take();
                self.give_up(format!(
                    "the lock could not be renewed before it expires ({e})"
                ));
                Renewal::Gone
            }
            Err(e) => {
                eprintln!("warning: renewing the lock failed, will retry: {e}");
                Renewal::Retry
            }
        }
    }
}

/// Lets a run confirm it still holds its lease right before it changes the environment.
#[derive(Clone)]
pub struct Fence(pub(super) Renewer);

impl Fence {
    /// Renews the lease now; false once it is lost (the run is then cancelled, and the
    /// reason recorded on its [`Cancel`]). A renewal that fails for a passing reason leaves
    /// the lease ours until its expiry, so the run goes on.
    pub async fn confirm(&self) -> bool {
        if !self.0.cancel.lock_lost() {
            self.0.renew().await;
        }
        !self.0.cancel.lock_lost()
    }
}

/// Releases the lease from elsewhere (a second SIGINT exits without unwinding).
#[derive(Clone)]
pub struct Releaser(pub(super) Slot);

impl Releaser {
    /// Releases the lease if it is still held here; true if it was.
    pub async fn release(&self) -> Result<bool, LockError> {
        let taken = self.0.lock().await.take();
        match taken {
            Some(lock) => lock.release().await.map(|()| true),
            None => Ok(false),
        }
    }
}

/// Renews every `every` until the lease is gone (lost or released).
pub(super) async fn keep(renewer: Renewer) {
    loop {
        tokio::time::sleep(renewer.every).await;
        if renewer.renew().await == Renewal::Gone {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::Hold;
    use crate::lock::file_store as lock;
    use crate::lock::lease::Holder;

    fn holder(run_id: &str) -> Holder {
        // Another host: only the expiry can end these leases.
        Holder {
            owner: format!("{run_id}@ci"),
            host: "another-runner".into(),
            pid: std::process::id(),
            run_id: run_id.into(),
        }
    }

    #[tokio::test]
    async fn renewal_keeps_a_lease_past_its_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_millis(600);
        let guard = lock::acquire(dir.path(), "qcp1", &holder("r1"), ttl).unwrap();
        let first_expiry = guard.lease().expires_at;
        let cancel = Cancel::new();
        let keeper = Hold::start(
            Box::new(guard),
            ttl,
            Duration::from_millis(150),
            cancel.clone(),
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // Two and a half TTLs later, another run still finds it held.
        match lock::acquire(dir.path(), "qcp1", &holder("r2"), ttl) {
            Err(LockError::Held { holder, .. }) => {
                assert_eq!(holder.run_id, "r1");
                assert!(holder.expires_at > first_expiry + 0.5, "{holder:?}");
            }
            other => panic!("expected Held, got {other:?}"),
        }
        assert!(!cancel.is_cancelled());
        assert_eq!(keeper.lost(), None);
        keeper.release().await.unwrap();
        assert!(!dir.path().join("locks/qcp1.json").exists());
    }

    #[tokio::test]
    async fn a_lost_lease_cancels_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_secs(3600);
        let guard = lock::acquire(dir.path(), "qcp1", &holder("r1"), ttl).unwrap();
        let cancel = Cancel::new();
        let keeper = Hold::start(
            Box::new(guard),
            ttl,
            Duration::from_millis(100),
            cancel.clone(),
        );
        // Someone breaks the lease on purpose and another run takes the environment.
        lock::force_unlock(dir.path(), "qcp1", "r1").unwrap();
        let thief = lock::acquire(dir.path(), "qcp1", &holder("r2"), ttl).unwrap();
        tokio::time::timeout(Duration::from_secs(5), cancel.cancelled())
            .await
            .expect("the keeper cancels the run");
        let lost = keeper.lost().unwrap_or_default();
        assert!(lost.contains("taken over by r2@ci (run r2)"), "{lost}");
        keeper.release().await.unwrap();
        // The new holder's lease is untouched.
        match lock::force_unlock(dir.path(), "qcp1", "r2") {
            Ok(lease) => assert_eq!(lease.run_id, "r2"),
            Err(e) => panic!("r2 should still hold the lock: {e}"),
        }
        std::mem::forget(thief);
    }

    #[tokio::test]
    async fn the_fence_finds_a_broken_lease_before_the_next_renewal() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_secs(3600);
        let guard = lock::acquire(dir.path(), "qcp1", &holder("r1"), ttl).unwrap();
        let cancel = Cancel::new();
        // The periodic renewal is an hour away: only the fence can notice in time.
        let keeper = Hold::start(Box::new(guard), ttl, ttl, cancel.clone());
        let fence = keeper.fence();
        assert!(fence.confirm().await, "still ours");
        let renewed = lock::current(dir.path(), "qcp1").unwrap().unwrap();
        assert!(renewed.renewed_at.is_some(), "{renewed:?}");
        assert!(!cancel.is_cancelled());

        // Broken with `unlock --force`, nobody else holding it yet.
        lock::force_unlock(dir.path(), "qcp1", "r1").unwrap();
        assert!(!fence.confirm().await);
        assert!(cancel.lock_lost() && cancel.is_cancelled());
        let reason = cancel.lock_lost_reason().unwrap_or_default();
        assert!(
            reason.contains("was broken: its lease was deleted"),
            "{reason}"
        );
        assert_eq!(keeper.lost(), Some(reason));
        // Asked again, it stays lost and touches nothing.
        let thief = lock::acquire(dir.path(), "qcp1", &holder("r2"), ttl).unwrap();
        assert!(!fence.confirm().await);
        keeper.release().await.unwrap();
        assert_eq!(thief.lease().run_id, "r2");
        assert!(dir.path().join("locks/qcp1.json").exists());
    }
}
