//! The scoped hold: a lease taken for one run, renewed in the background while the run lasts,
//! and given up when the run ends, however it ends.
//!
//! Modelled on the lease managers of Kubernetes controllers (client-go's `ReleaseOnCancel`,
//! kube-rs's leader-election crates) and on `dynamodb-lease`'s `Lease`: a held lease with a
//! background task that extends it until dropped, an explicit [`Hold::release`] for the
//! normal end (it can report what went wrong), and a release on drop for every other end: an
//! error returned with `?`, a panic, a future that is cancelled. A second SIGINT/SIGTERM
//! exits the process without unwinding; its handler releases through a [`Releaser`] first.
//!
//! A lease that another run took over or broke (`envctl unlock`) is never deleted by the
//! hold: the keeper forgets it when it finds out, and each store deletes only its own
//! version.
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::task::JoinHandle;

use super::LockError;
use super::keeper::{Fence, Releaser, Renewer, keep};
use super::lease::{Holder, Lease};
use super::store::{HeldLease, LeaseStore};
use crate::exec::cancel::Cancel;

/// How long a drop waits for a remote store to delete the lease before leaving it to expire.
const RELEASE_ON_DROP: Duration = Duration::from_secs(5);

/// An environment's lease, held and renewed until released or dropped.
pub struct Hold {
    renewer: Renewer,
    task: JoinHandle<()>,
    lease: Lease,
    took_over: Option<Lease>,
}

impl Hold {
    /// Takes the lock for `env` in `store` for `ttl` (fails fast, naming the holder) and
    /// renews it every third of `ttl`; a lease lost meanwhile cancels `cancel`.
    pub async fn acquire(
        store: &dyn LeaseStore,
        env: &str,
        holder: &Holder,
        ttl: Duration,
        cancel: Cancel,
    ) -> Result<Hold, LockError> {
        let held = store.acquire(env, holder, ttl).await?;
        Ok(Hold::start(held, ttl, super::renew_period(ttl), cancel))
    }

    /// Keeps `held` renewed to `ttl` from now every `every`; on loss, cancels `cancel`.
    pub fn start(held: Box<dyn HeldLease>, ttl: Duration, every: Duration, cancel: Cancel) -> Hold {
        let lease = held.lease().clone();
        let took_over = held.took_over().cloned();
        let renewer = Renewer {
            slot: Arc::new(tokio::sync::Mutex::new(Some(held))),
            ttl,
            every,
            cancel,
            lost: Arc::new(Mutex::new(None)),
        };
        let task = tokio::spawn(keep(renewer.clone()));
        Hold {
            renewer,
            task,
            lease,
            took_over,
        }
    }

    /// The lease as it was taken.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// The stale lease this one replaced, if any: tell the user, the previous run may have
    /// left the environment half-applied.
    pub fn took_over(&self) -> Option<&Lease> {
        self.took_over.as_ref()
    }

    /// Why the lease was lost, once it was.
    pub fn lost(&self) -> Option<String> {
        self.renewer.lost.lock().ok().and_then(|l| l.clone())
    }

    /// What the second signal's handler releases through before it exits.
    pub fn releaser(&self) -> Releaser {
        Releaser(self.renewer.slot.clone())
    }

    /// What the run calls before each change it makes on its own schedule.
    pub fn fence(&self) -> Fence {
        Fence(self.renewer.clone())
    }

    /// Stops renewing and releases the lease (if it is still ours).
    pub async fn release(self) -> Result<(), LockError> {
        self.task.abort();
        Releaser(self.renewer.slot.clone())
            .release()
            .await
            .map(|_| ())
    }
}

/// Whatever ended the run without [`Hold::release`], the lease goes with the hold: the file
/// store deletes its file at once, the S3 store its object (see [`block_here`]).
impl Drop for Hold {
    fn drop(&mut self) {
        self.task.abort();
        let slot = self.renewer.slot.clone();
        // A renewal in flight holds the slot for the length of one store call: wait for it
        // where blocking is allowed, else leave the lease to that renewal's task, which the
        // abort above ends (dropping the lease it holds).
        let taken = slot.try_lock().ok().map(|mut held| held.take());
        let taken = match taken {
            Some(taken) => taken,
            None => block_here(async move { slot.lock().await.take() }).flatten(),
        };
        drop(taken);
    }
}

/// Runs `work` to its end before returning when the current thread may block (a
/// multi-threaded runtime: every command's), bounded by [`RELEASE_ON_DROP`]; spawns it on a
/// single-threaded runtime, whose only thread cannot wait for it; drops it outside any
/// runtime. `None` unless it ran here and finished in time.
pub(crate) fn block_here<F>(work: F) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = Handle::try_current().ok()?;
    match handle.runtime_flavor() {
        RuntimeFlavor::MultiThread => tokio::task::block_in_place(|| {
            handle
                .block_on(tokio::time::timeout(RELEASE_ON_DROP, work))
                .ok()
        }),
        _ => {
            handle.spawn(work);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::FileStore;

    fn holder(run_id: &str) -> Holder {
        // Another host: neither a dead pid nor anything but the expiry could free the lease.
        Holder {
            owner: format!("{run_id}@ci"),
            host: "another-runner".into(),
            pid: std::process::id(),
            run_id: run_id.into(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hold_dropped_without_release_frees_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path());
        let ttl = Duration::from_secs(3600);
        let hold = Hold::acquire(&store, "qcp1", &holder("r1"), ttl, Cancel::new())
            .await
            .unwrap();
        // The keeper shares the lease; a fence renewal puts it through the shared slot once.
        assert!(hold.fence().confirm().await);
        drop(hold);
        let next = Hold::acquire(&store, "qcp1", &holder("r2"), ttl, Cancel::new())
            .await
            .unwrap();
        assert_eq!(
            next.took_over(),
            None,
            "the dropped hold's lease was still there"
        );
        next.release().await.unwrap();
        assert!(store.current("qcp1").await.unwrap().is_none());
    }
}
