//! The lock as a file on this machine, the default store: two `envctl apply` runs of one
//! checkout cannot converge the same environment at once and undo each other's changes
//! halfway.
//!
//! # Mechanism
//!
//! A lease file `<state dir>/locks/<env>.json` holds who has the environment (user@host, pid,
//! run id) and until when. It is written whole to a temporary file and then hard-linked into
//! place: the link fails if the name exists, so creation is atomic and nobody ever reads a
//! half-written lease. A second run fails fast and names the holder, unless the lease has
//! expired or its process is dead on this host; then the lease is taken over and the guard
//! says so ([`LockGuard::took_over`]). Taking over renames the stale file aside first, and
//! puts it back if what was moved turns out to be someone else's fresh lease, so two runs
//! racing for one stale lease do not both win. Long applies call [`LockGuard::renew`]; the
//! guard deletes the file when dropped, but only while the file is still its own lease.
//!
//! # Limits
//!
//! The file is local to one machine and one checkout: two laptops, or two CI runners, each
//! see their own `.envctl/`. For those, the lock lives in S3 ([`super::s3_store`]), with
//! the same [`Lease`] content. Whether a pid is alive is only known on Linux (via `/proc`)
//! and only for leases written on this host; elsewhere a lease ends by its expiry. Renewal
//! checks then replaces the file, so an already expired lease can in principle be taken over
//! between the two steps; keep the TTL well above the renewal period (the keeper renews
//! every third of it).
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::LockError;
use super::lease::{Holder, Lease, is_stale, wall_clock_now};
use super::store::{HeldLease, LeaseStore, StoreFuture};

/// The lock files under a state dir (normally `.envctl/`): `locks/<env>.json`.
#[derive(Debug, Clone)]
pub struct FileStore {
    state_dir: PathBuf,
}

impl FileStore {
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        FileStore {
            state_dir: state_dir.into(),
        }
    }
}

/// Each call is a few small synchronous file operations: done in place, inside the future.
impl LeaseStore for FileStore {
    fn acquire<'a>(
        &'a self,
        env: &'a str,
        holder: &'a Holder,
        ttl: Duration,
    ) -> StoreFuture<'a, Box<dyn HeldLease>> {
        Box::pin(async move {
            acquire(&self.state_dir, env, holder, ttl).map(|g| Box::new(g) as Box<dyn HeldLease>)
        })
    }

    fn current<'a>(&'a self, env: &'a str) -> StoreFuture<'a, Option<Lease>> {
        Box::pin(async move { current(&self.state_dir, env) })
    }

    fn force_unlock<'a>(&'a self, env: &'a str, run_id: &'a str) -> StoreFuture<'a, Lease> {
        Box::pin(async move { force_unlock(&self.state_dir, env, run_id) })
    }
}

impl HeldLease for LockGuard {
    fn lease(&self) -> &Lease {
        &self.lease
    }

    fn took_over(&self) -> Option<&Lease> {
        self.took_over.as_ref()
    }

    fn renew(&mut self, ttl: Duration) -> StoreFuture<'_, ()> {
        Box::pin(async move { LockGuard::renew(self, ttl) })
    }

    fn release(mut self: Box<Self>) -> StoreFuture<'static, ()> {
        Box::pin(async move { self.remove_if_ours() })
    }
}

/// Holds an environment's lease until dropped.
#[derive(Debug)]
pub struct LockGuard {
    path: PathBuf,
    lease: Lease,
    took_over: Option<Lease>,
}

/// Takes the apply lock for `env` under `state_dir` (normally `.envctl/`) for `ttl`.
pub fn acquire(
    state_dir: &Path,
    env: &str,
    holder: &Holder,
    ttl: Duration,
) -> Result<LockGuard, LockError> {
    acquire_at(state_dir, env, holder, ttl, wall_clock_now())
}

/// The lease on `env` under `state_dir`, if any.
pub fn current(state_dir: &Path, env: &str) -> Result<Option<Lease>, LockError> {
    read_lease(&lock_path(state_dir, env)?)
}

/// Breaks the lease of run `run_id` on purpose (`envctl unlock`); refuses when another run
/// holds it, and returns the lease it removed.
pub fn force_unlock(state_dir: &Path, env: &str, run_id: &str) -> Result<Lease, LockError> {
    let path = lock_path(state_dir, env)?;
    let location = path.display().to_string();
    let Some(current) = read_lease(&path)? else {
        return Err(LockError::NotLocked {
            env: env.to_string(),
            location,
        });
    };
    // The run being unlocked may renew its lease between our read and the removal: that
    // changes the file, not the holder, so look again (bounded); another holder is refused.
    let mut current = current;
    for _ in 0..5 {
        if current.run_id != run_id {
            break;
        }
        match remove_if_unchanged(&path, &current, &format!("unlock-{run_id}"))? {
            Removal::Removed | Removal::Vanished => return Ok(current),
            Removal::Replaced(fresh) => current = fresh,
        }
    }
    Err(LockError::OtherRun {
        env: env.to_string(),
        holder: Box::new(current),
        requested: run_id.to_string(),
        location,
    })
}

fn lock_path(state_dir: &Path, env: &str) -> Result<PathBuf, LockError> {
    if env.is_empty() || env.starts_with('.') || env.contains(['/', '\\']) {
        return Err(LockError::InvalidEnv(env.to_string()));
    }
    Ok(state_dir.join("locks").join(format!("{env}.json")))
}

fn acquire_at(
    state_dir: &Path,
    env: &str,
    holder: &Holder,
    ttl: Duration,
    now: f64,
) -> Result<LockGuard, LockError> {
    let path = lock_path(state_dir, env)?;
    let dir = state_dir.join("locks");
    crate::exec::private_file::create_dir_all(&dir).map_err(|source| io_error(&dir, source))?;
    let lease = Lease::new(env, holder, ttl, now);
    let mut took_over = None;
    // One takeover at most: if the name is taken again right after, someone else won.
    for _ in 0..2 {
        if create_whole(&path, &lease)? {
            return Ok(LockGuard {
                path,
                lease,
                took_over,
            });
        }
        let Some(current) = read_lease(&path)? else {
            continue; // released between our attempt and our read
        };
        if !is_stale(&current, &holder.host, now) {
            return Err(LockError::Held {
                env: env.to_string(),
                holder: Box::new(current),
                now,
                path,
            });
        }
        match remove_if_unchanged(&path, &current, &lease.run_id)? {
            Removal::Removed => took_over = Some(current),
            Removal::Vanished => {}
            Removal::Replaced(fresh) => {
                return Err(LockError::Held {
                    env: env.to_string(),
                    holder: Box::new(fresh),
                    now,
                    path,
                });
            }
        }
    }
    match read_lease(&path)? {
        Some(holder) => Err(LockError::Held {
            env: env.to_string(),
            holder: Box::new(holder),
            now,
            path,
        }),
        None => Err(io_error(
            &path,
            io::Error::other("the lock file kept changing while it was being taken"),
        )),
    }
}

impl LockGuard {
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// The stale lease this guard replaced, if any: tell the user, the previous run may have
    /// left the environment half-applied.
    pub fn took_over(&self) -> Option<&Lease> {
        self.took_over.as_ref()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Extends the lease to `ttl` from now; fails with `Lost` if it is no longer ours.
    pub fn renew(&mut self, ttl: Duration) -> Result<(), LockError> {
        self.renew_at(ttl, wall_clock_now())
    }

    fn renew_at(&mut self, ttl: Duration, now: f64) -> Result<(), LockError> {
        match read_lease(&self.path)? {
            Some(current) if current.is_same_claim(&self.lease) => {}
            Some(holder) => {
                return Err(LockError::Lost {
                    env: self.lease.env.clone(),
                    holder: Box::new(holder),
                    path: self.path.clone(),
                });
            }
            // Broken on purpose (`envctl unlock`): the run has lost it as surely as to a
            // takeover, and must not wait for the expiry to find out.
            None => {
                return Err(LockError::Broken {
                    env: self.lease.env.clone(),
                    location: self.path.display().to_string(),
                });
            }
        }
        let renewed = self.lease.renewed(ttl, now);
        let tmp = write_temp(&self.path, &renewed)?;
        fs::rename(&tmp, &self.path).map_err(|source| io_error(&self.path, source))?;
        self.lease = renewed;
        Ok(())
    }

    /// Releases the lock now, reporting what `drop` would have to ignore.
    pub fn release(mut self) -> Result<(), LockError> {
        self.remove_if_ours()
    }

    fn remove_if_ours(&mut self) -> Result<(), LockError> {
        match read_lease(&self.path) {
            Ok(Some(current)) if current.is_same_claim(&self.lease) => {
                let result = fs::remove_file(&self.path);
                // Mark released so drop does not try again.
                self.lease.run_id.clear();
                match result {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error(&self.path, e)),
                    _ => Ok(()),
                }
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Nothing can be reported from drop; a leftover lease expires by its TTL.
        let _ = self.remove_if_ours();
    }
}

/// Creates `path` holding `lease`, whole; false if it already exists.
fn create_whole(path: &Path, lease: &Lease) -> Result<bool, LockError> {
    let tmp = write_temp(path, lease)?;
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_error(path, e)),
    }
}

/// Writes `lease` to a fresh temporary file next to `path` and syncs it.
fn write_temp(path: &Path, lease: &Lease) -> Result<PathBuf, LockError> {
    let tmp = sibling(
        path,
        &format!("{}.{}.tmp", lease.pid, file_safe(&lease.run_id)),
    );
    let text =
        serde_json::to_string_pretty(lease).map_err(|e| io_error(path, io::Error::other(e)))?;
    let mut file =
        crate::exec::private_file::create(&tmp).map_err(|source| io_error(&tmp, source))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|source| io_error(&tmp, source))?;
    Ok(tmp)
}

/// What happened to a stale lease we tried to remove.
#[derive(Debug, PartialEq)]
enum Removal {
    Removed,
    /// Gone before we got to it (its holder released it).
    Vanished,
    /// Someone else's fresh lease had replaced it; it is back in place.
    Replaced(Lease),
}

/// Removes a stale lease unless it changed since it was read.
fn remove_if_unchanged(path: &Path, stale: &Lease, run_id: &str) -> Result<Removal, LockError> {
    let aside = sibling(path, &format!("{}.stale", file_safe(run_id)));
    match fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Removal::Vanished),
        Err(e) => return Err(io_error(path, e)),
    }
    match read_lease(&aside) {
        Ok(Some(moved)) if moved == *stale => {
            let _ = fs::remove_file(&aside);
            Ok(Removal::Removed)
        }
        other => {
            // We moved something else (a fresh lease, or a file being written): put it back
            // unless a third run already took the name, and report what is there.
            let _ = fs::hard_link(&aside, path);
            let _ = fs::remove_file(&aside);
            match other? {
                Some(fresh) => Ok(Removal::Replaced(fresh)),
                None => Ok(Removal::Vanished),
            }
        }
    }
}

/// Reads a lease; `None` if the file does not exist.
fn read_lease(path: &Path) -> Result<Option<Lease>, LockError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| LockError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(suffix);
    path.with_file_name(name)
}

/// Run ids end up in temporary file names; keep them to one path component.
fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn io_error(path: &Path, source: io::Error) -> LockError {
    LockError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::lease::{ago, check_unlock};

    const NOW: f64 = 1_800_000_000.0;
    const HOUR: Duration = Duration::from_secs(3600);
    /// Above any Linux pid_max (2^22), so no process has it.
    const DEAD_PID: u32 = 4_000_000_000;

    fn holder(run_id: &str, pid: u32) -> Holder {
        Holder {
            owner: format!("{run_id}-user@box"),
            host: "box".into(),
            pid,
            run_id: run_id.into(),
        }
    }

    fn me(run_id: &str) -> Holder {
        holder(run_id, std::process::id())
    }

    fn held(result: Result<LockGuard, LockError>) -> (Lease, String) {
        match result {
            Err(e) => {
                let message = e.to_string();
                match e {
                    LockError::Held { holder, .. } => (*holder, message),
                    other => panic!("expected Held, got {other}"),
                }
            }
            Ok(g) => panic!("expected Held, got a guard for {:?}", g.lease()),
        }
    }

    fn guard(result: Result<LockGuard, LockError>) -> LockGuard {
        match result {
            Ok(g) => g,
            Err(e) => panic!("expected the lock: {e}"),
        }
    }

    #[test]
    fn a_second_run_fails_fast_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = guard(acquire_at(dir.path(), "qcp1", &me("r1"), HOUR, NOW));
        assert!(first.took_over().is_none());
        assert_eq!(first.path(), dir.path().join("locks/qcp1.json"));
        assert_eq!(
            read_lease(first.path()).unwrap().as_ref(),
            Some(first.lease())
        );

        let (lease, message) = held(acquire_at(dir.path(), "qcp1", &me("r2"), HOUR, NOW + 720.0));
        assert_eq!(lease.run_id, "r1");
        assert_eq!(
            message,
            format!(
                "environment `qcp1` is being applied by r1-user@box (pid {}, run r1), acquired \
                 12m ago, lease expires in 48m; lock file {}",
                std::process::id(),
                first.path().display()
            )
        );
        // Other environments are independent.
        guard(acquire_at(dir.path(), "qcp2", &me("r2"), HOUR, NOW));
    }

    #[test]
    fn dropping_the_guard_frees_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let first = guard(acquire_at(dir.path(), "qcp1", &me("r1"), HOUR, NOW));
        let path = first.path().to_path_buf();
        drop(first);
        assert!(!path.exists());
        let second = guard(acquire_at(dir.path(), "qcp1", &me("r2"), HOUR, NOW));
        assert!(second.took_over().is_none());
        second.release().unwrap();
        assert!(!path.exists());
        // No temporary files are left behind.
        assert_eq!(fs::read_dir(dir.path().join("locks")).unwrap().count(), 0);
    }

    #[test]
    fn an_expired_lease_is_taken_over_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let old = guard(acquire_at(dir.path(), "qcp1", &me("r1"), HOUR, NOW));
        let old_lease = old.lease().clone();
        std::mem::forget(old); // the old run was killed: nothing removed the file
        let new = guard(acquire_at(
            dir.path(),
            "qcp1",
            &me("r2"),
            HOUR,
            NOW + 3601.0,
        ));
        assert_eq!(new.took_over(), Some(&old_lease));
        assert_eq!(read_lease(new.path()).unwrap().unwrap().run_id, "r2");
    }

    #[test]
    fn a_dead_process_on_this_host_loses_its_lease_before_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let dead = guard(acquire_at(
            dir.path(),
            "qcp1",
            &holder("r1", DEAD_PID),
            HOUR,
            NOW,
        ));
        std::mem::forget(dead);
        let new = guard(acquire_at(dir.path(), "qcp1", &me("r2"), HOUR, NOW + 1.0));
        assert_eq!(new.took_over().map(|l| l.pid), Some(DEAD_PID));
    }

    #[test]
    fn a_process_on_another_host_is_trusted_until_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let mut remote = holder("r1", DEAD_PID);
        remote.host = "other-box".into();
        let kept = guard(acquire_at(dir.path(), "qcp1", &remote, HOUR, NOW));
        let (lease, _) = held(acquire_at(dir.path(), "qcp1", &me("r2"), HOUR, NOW + 1.0));
        assert_eq!(lease.host, "other-box");
        drop(kept);
    }

    #[test]
    fn renewal_extends_the_lease_and_detects_a_takeover() {
        let dir = tempfile::tempdir().unwrap();
        // On another host, so only the expiry time can end the lease.
        let mut remote = holder("r1", std::process::id());
        remote.host = "other-box".into();
        let mut first = guard(acquire_at(dir.path(), "qcp1", &remote, HOUR, NOW));
        first.renew_at(HOUR, NOW + 3000.0).unwrap();
        assert_eq!(first.lease().expires_at, NOW + 3000.0 + 3600.0);
        assert_eq!(
            read_lease(first.path()).unwrap().as_ref(),
            Some(first.lease())
        );
        // Not expired at the old expiry any more.
        held(acquire_at(
            dir.path(),
            "qcp1",
            &me("r2"),
            HOUR,
            NOW + 3601.0,
        ));

        let second = guard(acquire_at(
            dir.path(),
            "qcp1",
            &me("r2"),
            HOUR,
            NOW + 6601.0,
        ));
        match first.renew_at(HOUR, NOW + 6602.0) {
            Err(LockError::Lost { holder, .. }) => assert_eq!(holder.run_id, "r2"),
            other => panic!("expected Lost, got {other:?}"),
        }
        // The old guard must not delete its successor's lease.
        drop(first);
        assert!(second.path().exists());
    }

    #[test]
    fn a_takeover_that_finds_a_fresh_lease_puts_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let stale = guard(acquire_at(dir.path(), "qcp1", &me("r1"), HOUR, NOW));
        let stale_lease = stale.lease().clone();
        std::mem::forget(stale);
        // Another run took the stale lease over between our read and our rename.
        let winner = guard(acquire_at(
            dir.path(),
            "qcp1",
            &me("r2"),
            HOUR,
            NOW + 3601.0,
        ));
        let found = remove_if_unchanged(winner.path(), &stale_lease, "r3").unwrap();
        assert_eq!(found, Removal::Replaced(winner.lease().clone()));
        assert_eq!(
            read_lease(winner.path()).unwrap().as_ref(),
            Some(winner.lease())
        );
        assert_eq!(fs::read_dir(dir.path().join("locks")).unwrap().count(), 1);
    }

    #[test]
    fn a_corrupt_lock_file_is_reported_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks/qcp1.json");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, "{\"owner\": \"al").unwrap();
        match acquire_at(dir.path(), "qcp1", &me("r1"), HOUR, NOW) {
            Err(LockError::Corrupt { path: p, .. }) => assert_eq!(p, path),
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"owner\": \"al");
    }

    #[test]
    fn environment_names_cannot_escape_the_lock_directory() {
        let dir = tempfile::tempdir().unwrap();
        for env in ["", "../x", "a/b", ".hidden", "a\\b"] {
            assert!(
                matches!(
                    acquire_at(dir.path(), env, &me("r1"), HOUR, NOW),
                    Err(LockError::InvalidEnv(_))
                ),
                "{env:?}"
            );
        }
    }

    #[test]
    fn unlock_removes_only_the_named_runs_lease() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            force_unlock(dir.path(), "qcp1", "r1"),
            Err(LockError::NotLocked { .. })
        ));
        let held = guard(acquire_at(dir.path(), "qcp1", &me("r1"), HOUR, NOW));
        match force_unlock(dir.path(), "qcp1", "r2") {
            Err(e @ LockError::OtherRun { .. }) => {
                let message = e.to_string();
                assert!(
                    message.contains("held by run r1 of r1-user@box"),
                    "{message}"
                );
            }
            other => panic!("expected OtherRun, got {other:?}"),
        }
        assert!(held.path().exists());
        assert_eq!(force_unlock(dir.path(), "qcp1", "r1").unwrap().run_id, "r1");
        assert!(!held.path().exists());
        assert_eq!(fs::read_dir(dir.path().join("locks")).unwrap().count(), 0);
        std::mem::forget(held);
    }

    #[test]
    fn a_lease_still_being_renewed_needs_force_to_break() {
        let dir = tempfile::tempdir().unwrap();
        // On another host: only renewals and the expiry tell whether it is alive.
        let mut remote = holder("r1", DEAD_PID);
        remote.host = "ci-runner-7".into();
        let mut guard = guard(acquire_at(dir.path(), "qcp1", &remote, HOUR, NOW));
        // Renewed every 20 minutes (a third of the hour); renewed at NOW + 1200.
        guard.renew_at(HOUR, NOW + 1200.0).unwrap();
        let lease = read_lease(guard.path()).unwrap().unwrap();
        assert_eq!(lease.renewed_at, Some(NOW + 1200.0));
        assert_eq!(lease.renew_every_s, Some(1200.0));

        let at = NOW + 1260.0;
        assert!(lease.is_being_renewed("box", at));
        let refused = check_unlock(&lease, "box", at, false, "here").unwrap_err();
        assert!(matches!(refused, LockError::StillRenewed { .. }));
        assert_eq!(
            refused.to_string(),
            "environment `qcp1` is held by a run that is still renewing its lease: run r1 of \
             r1-user@box, running on host ci-runner-7 as pid 4000000000, last renewed its lease \
             1m ago (it renews every 20m); the lease expires in 59m; breaking it would let \
             another run change the environment while that one still does (it stops only at \
             its next renewal). If that run is gone, wait 39m until its lease goes stale, or \
             pass --force (here)"
        );
        assert!(check_unlock(&lease, "box", at, true, "here").is_ok());
        // Two renewals missed: the run is gone, unlock needs no --force.
        let missed = NOW + 1200.0 + 2400.5;
        assert!(!lease.is_being_renewed("box", missed));
        assert!(check_unlock(&lease, "box", missed, false, "here").is_ok());
        // On this host, a dead process is gone whatever its lease says.
        let mut local = lease.clone();
        local.host = "box".into();
        assert!(!local.is_being_renewed("box", at));
        // A lease of an older envctl (no renewal period) is alive until it expires.
        let old: Lease = serde_json::from_str(
            r#"{"env":"qcp1","owner":"a@b","host":"b","pid":1,"run_id":"r0",
                "acquired_at":1800000000.0,"expires_at":1800003600.0}"#,
        )
        .unwrap();
        assert!(old.is_being_renewed("box", NOW + 3500.0));
        assert!(!old.is_being_renewed("box", NOW + 3600.0));
        std::mem::forget(guard);
    }

    #[test]
    fn a_deleted_lease_is_lost_at_the_next_renewal() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = guard(acquire_at(dir.path(), "qcp1", &me("r1"), HOUR, NOW));
        force_unlock(dir.path(), "qcp1", "r1").unwrap();
        match first.renew_at(HOUR, NOW + 10.0) {
            Err(e @ LockError::Broken { .. }) => {
                assert!(e.to_string().contains("its lease was deleted"), "{e}")
            }
            other => panic!("expected Broken, got {other:?}"),
        }
        // It does not come back.
        first.release().unwrap();
        assert!(current(dir.path(), "qcp1").unwrap().is_none());
    }

    #[test]
    fn the_current_holder_is_this_process() {
        let holder = Holder::current("r9");
        assert_eq!(holder.pid, std::process::id());
        assert_eq!(holder.run_id, "r9");
        assert!(
            holder.owner.ends_with(&format!("@{}", holder.host)),
            "{holder:?}"
        );
    }

    #[test]
    fn durations_read_coarsely() {
        assert_eq!(ago(-5.0), "0s");
        assert_eq!(ago(59.4), "59s");
        assert_eq!(ago(720.0), "12m");
        assert_eq!(ago(3600.0 * 3.0 + 300.0), "3h05m");
    }
}
