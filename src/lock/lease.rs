//! The lease itself: who holds an environment ([`Holder`]), until when ([`Lease`]), and the
//! rules every store applies alike: when a lease is stale (expired, or its process dead on
//! this host), when it still counts as renewed, and when `envctl unlock` may break it.
//!
//! Pure data and arithmetic on wall-clock seconds: no file, no network. The stores
//! ([`super::file_store`], [`super::s3_store`]) write the same [`Lease`] as JSON.
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::LockError;

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
    /// When the holder last renewed the lease (seconds since the Unix epoch); absent in
    /// leases written before envctl recorded it, and until the first renewal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewed_at: Option<f64>,
    /// How often the holder renews it, in seconds; absent in leases of older envctl versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_every_s: Option<f64>,
}

/// How many renewals a lease's TTL holds: the keeper renews every third of it, so two
/// renewals may fail before the lease expires.
pub const RENEWALS_PER_TTL: u32 = 3;

/// How often a run renews a lease of `ttl`.
pub fn renew_period(ttl: Duration) -> Duration {
    ttl / RENEWALS_PER_TTL
}

impl Lease {
    /// A fresh lease for `holder`, from `now` for `ttl`.
    pub fn new(env: &str, holder: &Holder, ttl: Duration, now: f64) -> Self {
        Lease {
            env: env.to_string(),
            owner: holder.owner.clone(),
            host: holder.host.clone(),
            pid: holder.pid,
            run_id: holder.run_id.clone(),
            acquired_at: now,
            expires_at: now + ttl.as_secs_f64(),
            renewed_at: None,
            renew_every_s: Some(renew_period(ttl).as_secs_f64()),
        }
    }

    /// The same lease, renewed at `now` for `ttl`.
    pub fn renewed(&self, ttl: Duration, now: f64) -> Self {
        Lease {
            expires_at: now + ttl.as_secs_f64(),
            renewed_at: Some(now),
            ..self.clone()
        }
    }

    pub(crate) fn is_same_claim(&self, other: &Lease) -> bool {
        self.run_id == other.run_id && self.pid == other.pid && self.host == other.host
    }

    /// When the holder last showed it was alive: its last renewal, else its acquisition.
    pub fn last_renewed(&self) -> f64 {
        self.renewed_at.unwrap_or(self.acquired_at)
    }

    /// Whether the run holding this lease still looks alive from `our_host` at `now`: the
    /// lease has not expired, its process is not known dead, and it was renewed within two
    /// renewal periods (one renewal may fail and be retried). A lease from an older envctl,
    /// which does not say how often it is renewed, counts as alive until it expires.
    pub fn is_being_renewed(&self, our_host: &str, now: f64) -> bool {
        if is_stale(self, our_host, now) {
            return false;
        }
        match self.renew_every_s {
            Some(every) => now - self.last_renewed() <= 2.0 * every,
            None => true,
        }
    }

    /// Whose run this is, where it runs and when it last renewed: what someone breaking the
    /// lease must know.
    pub fn describe_holder(&self, now: f64) -> String {
        let every = self
            .renew_every_s
            .map(|e| format!(" (it renews every {})", ago(e)))
            .unwrap_or_default();
        format!(
            "run {} of {}, running on host {} as pid {}, last renewed its lease {} ago{every}; \
             the lease expires in {}",
            self.run_id,
            self.owner,
            self.host,
            self.pid,
            ago(now - self.last_renewed()),
            ago(self.expires_at - now)
        )
    }
}

/// Whether `envctl unlock --run RUN_ID` may break `lease` (read from `location`): a lease
/// that is still being renewed belongs to a live run and needs `force`.
pub fn check_unlock(
    lease: &Lease,
    our_host: &str,
    now: f64,
    force: bool,
    location: &str,
) -> Result<(), LockError> {
    if force || !lease.is_being_renewed(our_host, now) {
        return Ok(());
    }
    Err(LockError::StillRenewed {
        env: lease.env.clone(),
        holder: Box::new(lease.clone()),
        now,
        location: location.to_string(),
    })
}

/// Seconds until a live lease stops counting as renewed (two missed renewals) or expires.
pub(crate) fn stale_in(lease: &Lease, now: f64) -> f64 {
    let missed = lease
        .renew_every_s
        .map_or(f64::INFINITY, |every| lease.last_renewed() + 2.0 * every);
    missed.min(lease.expires_at) - now
}

/// Seconds since the Unix epoch: leases are compared across machines by wall-clock time.
pub fn wall_clock_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Whether a lease may be taken over by a run on `our_host` at `now`: it expired, or its
/// process is known dead on this host.
pub fn is_stale(lease: &Lease, our_host: &str, now: f64) -> bool {
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

/// A coarse human duration: `45s`, `12m`, `3h05m`; negative spans (clock skew) read as `0s`.
pub fn ago(secs: f64) -> String {
    let secs = secs.max(0.0).round() as u64;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}
