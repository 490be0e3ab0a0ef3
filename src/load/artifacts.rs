//! Where a run's load artifacts live in S3, and the content-addressed upload of plans and
//! their files: `<prefix>runs/<run>/load/<sha256>/<file name>`, so a plan used by every
//! point of a run (or unchanged on a resumed run) is uploaded once: a HeadObject finds it.
use std::path::Path;

use envctl_aws_model::engine::{JTL_NAME, jtl_part_name};
use sha2::{Digest, Sha256};

use super::LoadError;
use crate::aws::engines as api;
use crate::aws::s3;
use crate::session::Session;
use crate::spec::lock_url::{self, S3Url};

/// The S3 location of a run's load artifacts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifacts {
    pub bucket: String,
    /// `<prefix>runs/<run-id>/` (ends with `/`).
    pub run_prefix: String,
}

/// The sandbox's bucket for load artifacts (created on first use).
pub const SANDBOX_BUCKET: &str = "envctl-sandbox-artifacts";

impl Artifacts {
    /// Under the env's `lock: s3://bucket/prefix/` (the bucket envctl already writes to);
    /// the sandbox's own bucket when there is none and the run is on the sandbox.
    pub fn for_run(
        lock: Option<&str>,
        run_id: &str,
        sandbox: bool,
    ) -> Result<Artifacts, LoadError> {
        let (bucket, prefix) = match lock.map(lock_url::parse) {
            Some(Ok(S3Url { bucket, prefix })) => (bucket, prefix),
            Some(Err(message)) => return Err(LoadError::Location(message)),
            _ if sandbox => (SANDBOX_BUCKET.to_string(), String::new()),
            _ => {
                return Err(LoadError::Location(
                    "load engines need an S3 location for plans and results: set the env's `lock: s3://bucket/prefix/`".into(),
                ));
            }
        };
        Ok(Artifacts {
            bucket,
            run_prefix: format!("{prefix}runs/{run_id}/"),
        })
    }

    pub fn uri(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

/// Uploads a file unless the same content is already there; returns its key and whether
/// it was sent.
pub async fn upload(
    session: &Session,
    artifacts: &Artifacts,
    path: &Path,
) -> Result<(String, bool), LoadError> {
    let body = std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let digest = hex::encode(Sha256::digest(&body));
    let key = format!("{}load/{digest}/{name}", artifacts.run_prefix);
    let s3c = &session.s3_for(&artifacts.bucket).await?.client;
    let clock = session.clock.as_ref();
    if crate::aws::paced::retry(clock, &key, || s3::head(s3c, &artifacts.bucket, &key))
        .await?
        .is_some()
    {
        return Ok((key, false));
    }
    crate::aws::paced::retry(clock, &key, || {
        api::put(s3c, &artifacts.bucket, &key, body.clone())
    })
    .await?;
    Ok((key, true))
}

/// GetObject into a file; false when the object does not exist.
pub async fn download(
    session: &Session,
    bucket: &str,
    key: &str,
    to: &Path,
) -> Result<bool, LoadError> {
    let s3c = &session.s3_for(bucket).await?.client;
    let object =
        crate::aws::paced::retry(session.clock.as_ref(), key, || s3::get(s3c, bucket, key)).await?;
    let Some(object) = object else {
        return Ok(false);
    };
    std::fs::write(to, &object.body).map_err(|source| LoadError::Io {
        path: to.display().to_string(),
        source,
    })?;
    Ok(true)
}

/// An engine's JTL into a file (see [`read_jtl`]); false when there is none.
pub async fn download_jtl(
    session: &Session,
    bucket: &str,
    prefix: &str,
    to: &Path,
) -> Result<bool, LoadError> {
    let s3c = session.s3_for(bucket).await?.client;
    let Some(jtl) = read_jtl(&s3c, session.clock.as_ref(), bucket, prefix).await? else {
        return Ok(false);
    };
    std::fs::write(to, &jtl).map_err(|source| LoadError::Io {
        path: to.display().to_string(),
        source,
    })?;
    Ok(true)
}

/// An engine's JTL under `prefix`: `result.jtl` when the engine put it whole (a normal end),
/// else its parts (`result.jtl.part-000001`, ...) joined in order up to the first missing
/// one: what an engine stopped or killed before its end had put while it ran
/// (`envctl_aws_model::engine::jtl_part_name`). `None` when there is neither.
pub async fn read_jtl(
    s3c: &aws_sdk_s3::Client,
    clock: &dyn crate::exec::Clock,
    bucket: &str,
    prefix: &str,
) -> Result<Option<Vec<u8>>, LoadError> {
    let get = |key: String| async move {
        crate::aws::paced::retry(clock, &key, || s3::get(s3c, bucket, &key)).await
    };
    if let Some(whole) = get(format!("{prefix}{JTL_NAME}")).await? {
        return Ok(Some(whole.body));
    }
    let mut joined: Option<Vec<u8>> = None;
    let mut n = 1;
    while let Some(part) = get(format!("{prefix}{}", jtl_part_name(n))).await? {
        joined
            .get_or_insert_with(Vec::new)
            .extend_from_slice(&part.body);
        n += 1;
    }
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_live_under_the_lock_prefix_or_the_sandbox_bucket() {
        let a = Artifacts::for_run(Some("s3://team-locks/perf"), "r1", false).expect("lock");
        assert_eq!(a.bucket, "team-locks");
        assert_eq!(a.run_prefix, "perf/runs/r1/");
        let s = Artifacts::for_run(None, "r2", true).expect("sandbox");
        assert_eq!(
            (s.bucket.as_str(), s.run_prefix.as_str()),
            (SANDBOX_BUCKET, "runs/r2/")
        );
        let err = Artifacts::for_run(None, "r3", false).expect_err("AWS needs a location");
        assert!(err.to_string().contains("lock: s3://"), "{err}");
    }
}
