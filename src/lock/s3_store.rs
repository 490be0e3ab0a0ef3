//! The lock as an S3 object that every CI runner of the account sees: the only part of the
//! lock that talks to AWS.
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
//! expiry (or by `envctl unlock`); a run renews it in the background ([`super::keeper`]); a
//! held lease dropped without [`HeldLease::release`] deletes itself on the way out (see
//! [`S3Lease`]'s `Drop`)..
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use super::LockError;
use super::hold::block_here;
use super::lease::{self, Holder, Lease};
use super::location::object_key;
use super::store::{HeldLease, LeaseStore, StoreFuture};
use crate::aws::s3::{self, Conditional};

/// The leases under `s3://bucket/prefix/`.
#[derive(Debug, Clone)]
pub struct S3Store {
    client: aws_sdk_s3::Client,
    bucket: String,
    prefix: String,
}

impl S3Store {
    pub fn new(client: aws_sdk_s3::Client, bucket: &str, prefix: &str) -> Self {
        S3Store {
            client,
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        }
    }

    fn url(&self, env: &str) -> String {
        format!("s3://{}/{}", self.bucket, object_key(&self.prefix, env))
    }
}

impl LeaseStore for S3Store {
    fn acquire<'a>(
        &'a self,
        env: &'a str,
        holder: &'a Holder,
        ttl: Duration,
    ) -> StoreFuture<'a, Box<dyn HeldLease>> {
        Box::pin(async move {
            let key = object_key(&self.prefix, env);
            let now = lease::wall_clock_now();
            acquire_s3(&self.client, &self.bucket, &key, env, holder, ttl, now)
                .await
                .map(|l| Box::new(l) as Box<dyn HeldLease>)
        })
    }

    fn current<'a>(&'a self, env: &'a str) -> StoreFuture<'a, Option<Lease>> {
        Box::pin(async move {
            let url = self.url(env);
            let object = s3::get(&self.client, &self.bucket, &object_key(&self.prefix, env))
                .await
                .map_err(|source| remote_error(&url, source))?;
            object.map(|o| parse(&o.body, &url)).transpose()
        })
    }

    fn force_unlock<'a>(&'a self, env: &'a str, run_id: &'a str) -> StoreFuture<'a, Lease> {
        Box::pin(force_unlock(self, env, run_id))
    }
}

/// Breaks run `run_id`'s lease on purpose (`envctl unlock`), refusing when another run holds
/// it; returns the lease it removed.
async fn force_unlock(store: &S3Store, env: &str, run_id: &str) -> Result<Lease, LockError> {
    let (s3_client, bucket, prefix) = (&store.client, &store.bucket, &store.prefix);
    let key = object_key(prefix, env);
    let url = store.url(env);
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
        error: Box::new(error),
    }
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
    /// Set once the lease was given up (or found lost): nothing left for `drop` to delete.
    released: bool,
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

/// Whether a lease found under the key is this holder's: the same run on the same host and
/// process.
fn is_ours(lease: &Lease, holder: &Holder) -> bool {
    lease.run_id == holder.run_id
        && lease.host == holder.host
        && lease.pid == holder.pid
        && lease.owner == holder.owner
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
        released: false,
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
        // Our own write: the PutObject took effect and its answer was lost, and the retry
        // (the SDK's, with the same body) met it. It is this run's lease, not another's.
        if is_ours(&current, holder) {
            return Ok(held(object.etag, None));
        }
        if !lease::is_stale(&current, &holder.host, now) {
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

    async fn renew_at(&mut self, ttl: Duration, now: f64) -> Result<(), LockError> {
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
                // Not ours any more, whoever holds it now: nothing for a drop to delete.
                self.released = true;
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

    /// The conditional delete, as a future that owns what it needs (a drop hands it on).
    fn delete(&self) -> impl Future<Output = Result<(), LockError>> + Send + 'static {
        let (client, bucket, key, etag) = (
            self.client.clone(),
            self.bucket.clone(),
            self.key.clone(),
            self.etag.clone(),
        );
        let url = self.url();
        async move {
            match s3::delete_if_match(&client, &bucket, &key, &etag).await {
                // Deleted, already gone, or someone else's now: nothing of ours is left.
                Ok(_) => Ok(()),
                Err(source) => Err(remote_error(&url, source)),
            }
        }
    }
}

impl HeldLease for S3Lease {
    fn lease(&self) -> &Lease {
        &self.lease
    }

    fn took_over(&self) -> Option<&Lease> {
        self.took_over.as_ref()
    }

    fn renew(&mut self, ttl: Duration) -> StoreFuture<'_, ()> {
        Box::pin(self.renew_at(ttl, lease::wall_clock_now()))
    }

    fn release(mut self: Box<Self>) -> StoreFuture<'static, ()> {
        self.released = true;
        Box::pin(self.delete())
    }
}

/// A lease dropped while still held (an error path, a panic) is deleted before the drop
/// returns when the runtime allows blocking, so a process that exits right after does not
/// leave it to expire; otherwise the delete is spawned. Nothing can be reported from here:
/// a lease that could not be deleted ends by its expiry.
impl Drop for S3Lease {
    fn drop(&mut self) {
        if !self.released {
            self.released = true;
            let _ = block_here(self.delete());
        }
    }
}
