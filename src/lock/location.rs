//! Where an environment's lock lives: a file under the state dir (one machine, the default),
//! or an S3 bucket and prefix that every CI runner of the account sees. Choosing it reaches no
//! store; the URL's syntax is the spec's ([`crate::spec::lock_url`]).
use std::path::{Path, PathBuf};

use crate::spec::lock_url::{self, S3Url};

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
    /// `s3://bucket/prefix/` (the prefix may be empty, and gets a trailing `/`), as the spec
    /// reads an env's `lock:` ([`crate::spec::lock_url`]).
    pub fn parse_url(url: &str) -> Result<LockLocation, String> {
        lock_url::parse(url).map(|S3Url { bucket, prefix }| LockLocation::S3 { bucket, prefix })
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

/// The S3 key of `env`'s lease under `prefix`.
pub(crate) fn object_key(prefix: &str, env: &str) -> String {
    format!("{prefix}{env}.lock.json")
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
