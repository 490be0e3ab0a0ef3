//! Where an environment's apply lock lives: a file under the state dir (one machine, the
//! default), or an S3 object that every CI runner of the account sees.
//!
//! # The S3 lease
//!
//! `s3://bucket/prefix/` holds one object per environment, `<prefix><env>.lock.json`, whose
//! content is the same [`Lease`] as the file's. S3's conditional writes make each step
//! atomic, as Terraform's S3 backend (`use_lockfile`) relies on (docs/aws-behaviour.md):
//!
//! - acquire: PutObject `If-None-Match: *`. A 412 means someone holds it: read it, and fail
//!   naming the holder, unless its expiry passed; then take it over with PutObject
//!   `If-Match: <its ETag>`, so of two runs racing for one stale lease exactly one wins.
//! - renew: PutObject `If-Match: <our ETag>` with a later expiry; a 412 (or 404) means the
//!   lease was taken over (or broken by `envctl unlock`): the run has lost it.
//! - release: DeleteObject `If-Match: <our ETag>`; a 412 means it is not ours any more, and
//!   then there is nothing to delete.
//!
//! Whether a process is alive cannot be known across machines, so an S3 lease ends by its
//! expiry (or by `envctl unlock`); a run renews it in the background ([`super::lease_keeper`]).
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::lock::{self, Holder, Lease, LockError, LockGuard};
use crate::aws::s3::{self, Conditional};

/// Where the lock lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockLocation {
    /// `<state dir>/locks/<env>.json`.
    Local(PathBuf),
    S3 {
        bucket: String,
        prefix: String,
    },
}

impl LockLocation {
    /// `s3://bucket/prefix/` (the prefix may be empty, and gets a trailing `/`). Pure, so the
    /// spec decoder can check an env's `lock:` as it reads it.
    pub fn parse_url(url: &str) -> Result<LockLocation, String> {
        let Some(rest) = url.strip_prefix("s3://") else {
            return Err(format!(
                "`{url}` is not a lock location: only `s3://bucket/prefix/` is supported"
            ));
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let valid_bucket = (3..=63).contains(&bucket.len())
            && bucket
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        if !valid_bucket {
            return Err(format!("`{bucket}` in `{url}` is not an S3 bucket name"));
        }
        let prefix = prefix.trim_start_matches('/');
        let prefix = if prefix.is_empty() || prefix.ends_with('/') {
            prefix.to_string()
        } else {
            format!("{prefix}/")
        };
        Ok(LockLocation::S3 {
            bucket: bucket.to_string(),
            prefix,
        })
    }

    /// The command line's `--lock`/`ENVCTL_LOCK` wins over the env's `lock:`; neither means
    /// the lock file under `state_dir`.
    pub fn choose(
        command_line: Option<&str>,
        env_file: Option<&str>,
        state_dir: &Path,
    ) -> Result<LockLocation, String> {
        match command_line.or(env_file) {
            Some(url) => Self::parse_url(url),
            None => Ok(LockLocation::Local(state_dir.to_path_buf())),
        }
    }

    /// What a person reads: the lock file's path or the object's URL.
    pub fn describe(&self, env: &str) -> String {
        match self {
            LockLocation::Local(dir) => dir
                .join("locks")
                .join(format!("{env}.json"))
                .display()
                .to_string(),
            LockLocation::S3 { bucket, prefix } => {
                format!("s3://{bucket}/{}", object_key(prefix, env))
            }
        }
    }
}

fn object_key(prefix: &str, env: &str) -> String {
    format!("{prefix}{env}.lock.json")
}

/// A lease this run holds, wherever it lives.
#[derive(Debug)]
pub enum HeldLock {
    Local(LockGuard),
    S3(S3Lease),
}

/// A lease held as an S3 object, with the ETag of the version we wrote.
#[derive(Debug)]
pub struct S3Lease {
    client: aws_sdk_s3::Client,
    bucket: String,
    key: String,
    etag: String,
    lease: Lease,
    took_over: Option<Lease>,
}

impl HeldLock {
    pub fn lease(&self) -> &Lease {
        match self {
            HeldLock::Local(g) => g.lease(),
            HeldLock::S3(l) => &l.lease,
        }
    }

    /// The stale lease this one replaced, if any.
    pub fn took_over(&self) -> Option<&Lease> {
        match self {
            HeldLock::Local(g) => g.took_over(),
            HeldLock::S3(l) => l.took_over.as_ref(),
        }
    }

    /// Extends the lease to `ttl` from now; `Lost` if it is no longer ours.
    pub async fn renew(&mut self, ttl: Duration) -> Result<(), LockError> {
        match self {
            HeldLock::Local(g) => g.renew(ttl),
            HeldLock::S3(l) => l.renew(ttl, lock::wall_clock_now()).await,
        }
    }

    /// Gives the lease up, if it is still ours.
    pub async fn release(self) -> Result<(), LockError> {
        match self {
            HeldLock::Local(g) => g.release(),
            HeldLock::S3(l) => l.release().await,
        }
    }
}

/// Takes the lock for `env` at `location` for `ttl`; fails fast naming the holder.
pub async fn acquire(
    location: &LockLocation,
    s3_client: &aws_sdk_s3::Client,
    env: &str,
    holder: &Holder,
    ttl: Duration,
) -> Result<HeldLock, LockError> {
    match location {
        LockLocation::Local(dir) => lock::acquire(dir, env, holder, ttl).map(HeldLock::Local),
        LockLocation::S3 { bucket, prefix } => {
            let key = object_key(prefix, env);
            acquire_s3(
                s3_client,
                bucket,
                &key,
                env,
                holder,
                ttl,
                lock::wall_clock_now(),
            )
            .await
            .map(HeldLock::S3)
        }
    }
}

/// The lease on `env` at `location`, if any.
pub async fn current(
    location: &LockLocation,
    s3_client: &aws_sdk_s3::Client,
    env: &str,
) -> Result<Option<Lease>, LockError> {
    match location {
        LockLocation::Local(dir) => lock::current(dir, env),
        LockLocation::S3 { bucket, prefix } => {
            let url = location.describe(env);
            let object = s3::get(s3_client, bucket, &object_key(prefix, env))
                .await
                .map_err(|source| remote_error(&url, source))?;
            object.map(|o| parse(&o.body, &url)).transpose()
        }
    }
}

/// Breaks run `run_id`'s lease on purpose (`envctl unlock`), refusing when another run holds
/// it; returns the lease it removed.
pub async fn force_unlock(
    location: &LockLocation,
    s3_client: &aws_sdk_s3::Client,
    env: &str,
    run_id: &str,
) -> Result<Lease, LockError> {
    let (bucket, prefix) = match location {
        LockLocation::Local(dir) => return lock::force_unlock(dir, env, run_id),
        LockLocation::S3 { bucket, prefix } => (bucket, prefix),
    };
    let key = object_key(prefix, env);
    let url = location.describe(env);
    let remote = |source| remote_error(&url, source);
    let other = |holder: Lease| LockError::OtherRun {
        env: env.to_string(),
        holder: Box::new(holder),
        requested: run_id.to_string(),
        location: url.clone(),
    };
    let Some(mut object) = s3::get(s3_client, bucket, &key).await.map_err(remote)? else {
        return Err(LockError::NotLocked {
            env: env.to_string(),
            location: url,
        });
    };
    // The run being unlocked renews its lease while we look (every ttl/3): a renewal
    // between our read and the conditional delete changes the ETag, not the holder. Read
    // again and retry, a bounded number of times; a different holder is refused.
    for _ in 0..UNLOCK_ATTEMPTS {
        let current = parse(&object.body, &url)?;
        if current.run_id != run_id {
            return Err(other(current));
        }
        match s3::delete_if_match(s3_client, bucket, &key, &object.etag)
            .await
            .map_err(remote)?
        {
            Conditional::Done { .. } | Conditional::Missing => return Ok(current),
            Conditional::PreconditionFailed => {
                match s3::get(s3_client, bucket, &key).await.map_err(remote)? {
                    Some(o) => object = o,
                    None => return Ok(current),
                }
            }
        }
    }
    Err(other(parse(&object.body, &url)?))
}

/// An S3 call on the lock at `url` (`s3://bucket/key`) failed: a missing bucket says what to
/// do about it, anything else is reported as AWS said it.
fn remote_error(url: &str, error: crate::aws::AwsError) -> LockError {
    if error.code.as_deref() == Some(envctl_aws_model::ErrorCode::NoSuchBucket.as_str()) {
        let bucket = url
            .strip_prefix("s3://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_default();
        return LockError::NoBucket {
            bucket: bucket.to_string(),
            location: url.to_string(),
        };
    }
    LockError::Remote {
        location: url.to_string(),
        error,
    }
}

/// Whether the lock at `location` can be used: its bucket exists and the lease key can be
/// read (a lease there or not). Read-only: `envctl preflight` runs it.
pub async fn check(
    location: &LockLocation,
    s3_client: &aws_sdk_s3::Client,
    env: &str,
) -> Result<(), LockError> {
    current(location, s3_client, env).await.map(|_| ())
}

/// How often `unlock` retries a conditional delete that a renewal of the same lease beat.
const UNLOCK_ATTEMPTS: usize = 5;

fn parse(body: &[u8], location: &str) -> Result<Lease, LockError> {
    serde_json::from_slice(body).map_err(|e| LockError::Corrupt {
        path: PathBuf::from(location),
        reason: e.to_string(),
    })
}

fn body(lease: &Lease) -> Vec<u8> {
    // A Lease is plain data: serializing it cannot fail.
    serde_json::to_vec_pretty(lease).unwrap_or_default()
}

async fn acquire_s3(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    env: &str,
    holder: &Holder,
    ttl: Duration,
    now: f64,
) -> Result<S3Lease, LockError> {
    let url = format!("s3://{bucket}/{key}");
    let remote = |source| remote_error(&url, source);
    let lease = Lease::new(env, holder, ttl, now);
    let held = |etag: String, took_over: Option<Lease>| S3Lease {
        client: client.clone(),
        bucket: bucket.to_string(),
        key: key.to_string(),
        etag,
        lease: lease.clone(),
        took_over,
    };
    // Twice at most: once for a free key, once more if the holder released it meanwhile.
    for _ in 0..2 {
        if let Conditional::Done { etag } = s3::put_if_absent(client, bucket, key, body(&lease))
            .await
            .map_err(remote)?
        {
            return Ok(held(etag, None));
        }
        let Some(object) = s3::get(client, bucket, key).await.map_err(remote)? else {
            continue;
        };
        let current = parse(&object.body, &url)?;
        if !lock::is_stale(&current, &holder.host, now) {
            return Err(LockError::Held {
                env: env.to_string(),
                holder: Box::new(current),
                now,
                path: PathBuf::from(&url),
            });
        }
        // Replace exactly the stale version we read: of two runs taking it over, one wins.
        match s3::put_if_match(client, bucket, key, &object.etag, body(&lease))
            .await
            .map_err(remote)?
        {
            Conditional::Done { etag } => return Ok(held(etag, Some(current))),
            Conditional::PreconditionFailed | Conditional::Missing => continue,
        }
    }
    match s3::get(client, bucket, key).await.map_err(remote)? {
        Some(object) => Err(LockError::Held {
            env: env.to_string(),
            holder: Box::new(parse(&object.body, &url)?),
            now,
            path: PathBuf::from(&url),
        }),
        None => Err(remote(crate::aws::AwsError::local(
            "PutObject",
            &url,
            "the lock kept changing while it was being taken",
        ))),
    }
}

impl S3Lease {
    fn url(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }

    async fn renew(&mut self, ttl: Duration, now: f64) -> Result<(), LockError> {
        let renewed = self.lease.renewed(ttl, now);
        let url = self.url();
        let remote = |source| remote_error(&url, source);
        match s3::put_if_match(
            &self.client,
            &self.bucket,
            &self.key,
            &self.etag,
            body(&renewed),
        )
        .await
        .map_err(remote)?
        {
            Conditional::Done { etag } => {
                self.etag = etag;
                self.lease = renewed;
                Ok(())
            }
            Conditional::PreconditionFailed | Conditional::Missing => {
                match s3::get(&self.client, &self.bucket, &self.key)
                    .await
                    .map_err(remote)?
                {
                    Some(o) => Err(LockError::Lost {
                        env: self.lease.env.clone(),
                        holder: Box::new(parse(&o.body, &url)?),
                        path: PathBuf::from(url),
                    }),
                    // Broken on purpose (`envctl unlock`): nobody holds it now.
                    None => Err(LockError::Broken {
                        env: self.lease.env.clone(),
                        location: url,
                    }),
                }
            }
        }
    }

    async fn release(self) -> Result<(), LockError> {
        let url = self.url();
        match s3::delete_if_match(&self.client, &self.bucket, &self.key, &self.etag).await {
            // Deleted, already gone, or someone else's now: nothing of ours is left.
            Ok(_) => Ok(()),
            Err(source) => Err(remote_error(&url, source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_urls_name_a_bucket_and_a_prefix() {
        let s3 = |b: &str, p: &str| LockLocation::S3 {
            bucket: b.into(),
            prefix: p.into(),
        };
        assert_eq!(
            LockLocation::parse_url("s3://ci-locks/envctl/"),
            Ok(s3("ci-locks", "envctl/"))
        );
        assert_eq!(
            LockLocation::parse_url("s3://ci-locks/envctl"),
            Ok(s3("ci-locks", "envctl/"))
        );
        assert_eq!(
            LockLocation::parse_url("s3://ci-locks"),
            Ok(s3("ci-locks", ""))
        );
        assert_eq!(
            LockLocation::parse_url("s3://ci-locks/"),
            Ok(s3("ci-locks", ""))
        );
        for bad in [
            "ci-locks/x",
            "s3://",
            "s3://Upper/x",
            "s3://ab/x",
            "file:///tmp",
        ] {
            assert!(LockLocation::parse_url(bad).is_err(), "{bad}");
        }
        assert_eq!(
            s3("ci-locks", "envctl/").describe("qcp1"),
            "s3://ci-locks/envctl/qcp1.lock.json"
        );
    }

    #[test]
    fn the_command_line_wins_over_the_env_file() {
        let dir = Path::new(".envctl");
        assert_eq!(
            LockLocation::choose(Some("s3://from-cli"), Some("s3://from-env"), dir),
            LockLocation::parse_url("s3://from-cli")
        );
        assert_eq!(
            LockLocation::choose(None, Some("s3://from-env"), dir),
            LockLocation::parse_url("s3://from-env")
        );
        assert_eq!(
            LockLocation::choose(None, None, dir),
            Ok(LockLocation::Local(dir.to_path_buf()))
        );
    }
}
