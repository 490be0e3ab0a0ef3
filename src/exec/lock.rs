//! An apply lock per environment, so two `envctl apply` runs cannot converge the same
//! environment at once and undo each other's changes halfway.
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
//! see their own `.envctl/`. For those, the lock lives in S3 ([`super::lock_backend`]), with
//! the same [`Lease`] content. Whether a pid is alive is only known on Linux (via `/proc`)
//! and only for leases written on this host; elsewhere a lease ends by its expiry. Renewal
//! checks then replaces the file, so an already expired lease can in principle be taken over
//! between the two steps; keep the TTL well above the renewal period (the keeper renews
//! every third of it).
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Who asks for the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// `user@host`, shown to whoever finds the environment locked.
    pub owner: String,
    pub host: String,
    pub pid: u32,
    pub run_id: String,
}

impl Holder {
    /// This process, as seen from the environment variables and `/etc/hostname`.
    pub fn current(run_id: impl Into<String>) -> Self {
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("USERNAME"))
            .unwrap_or_else(|_| "unknown".into());
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| fs::read_to_string("/etc/hostname").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        Self {
            owner: format!("{user}@{host}"),
            host,
            pid: std::process::id(),
            run_id: run_id.into(),
        }
    }
}

/// The content of a lease file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    pub env: String,
    pub owner: String,
    pub host: String,
    pub pid: u32,
    pub run_id: String,
    /// Seconds since the Unix epoch.
    pub acquired_at: f64,
    pub expires_at: f64,
}

impl Lease {
    fn is_same_claim(&self, other: &Lease) -> bool {
        self.run_id == other.run_id && self.pid == other.pid && self.host == other.host
    }
}

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
    #[error("lock {location}: {source}")]
    Remote {
        location: String,
        source: crate::aws::AwsError,
    },
    #[error("lock file {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
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
    super::private_file::create_dir_all(&dir).map_err(|source| io_error(&dir, source))?;
    let lease = Lease {
        env: env.to_string(),
        owner: holder.owner.clone(),
        host: holder.host.clone(),
        pid: holder.pid,
        run_id: holder.run_id.clone(),
        acquired_at: now,
        expires_at: now + ttl.as_secs_f64(),
    };
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
            None => {
                return Err(io_error(
                    &self.path,
                    io::Error::new(io::ErrorKind::NotFound, "the lock file was removed"),
                ));
            }
        }
        let mut renewed = self.lease.clone();
        renewed.expires_at = now + ttl.as_secs_f64();
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

pub(crate) fn wall_clock_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

pub(crate) fn is_stale(lease: &Lease, our_host: &str, now: f64) -> bool {
    lease.expires_at <= now || (lease.host == our_host && !pid_alive(lease.pid))
}

/// Only Linux answers this cheaply without libc; elsewhere assume alive and rely on expiry.
fn pid_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return true;
    }
    proc.join(pid.to_string()).exists()
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
    let mut file = super::private_file::create(&tmp).map_err(|source| io_error(&tmp, source))?;
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

/// A coarse human duration: `45s`, `12m`, `3h05m`; negative spans (clock skew) read as `0s`.
pub(crate) fn ago(secs: f64) -> String {
    let secs = secs.max(0.0).round() as u64;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
