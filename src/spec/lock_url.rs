//! An env's `lock:` (and `--lock`, `ENVCTL_LOCK`): `s3://bucket/prefix/`, read as the spec
//! is read, so a bad URL is an error at its line before any command starts. The lock itself
//! (`crate::lock`) and the load engines' artifacts build on the parsed value; the spec knows
//! nothing of either.

/// The bucket and key prefix a lock URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Url {
    pub bucket: String,
    /// Empty, or ending with `/`.
    pub prefix: String,
}

/// `s3://bucket/prefix/` (the prefix may be empty, and gets a trailing `/`); `Err` says why
/// the text is not one, for a diagnostic or an error message.
pub fn parse(url: &str) -> Result<S3Url, String> {
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
    Ok(S3Url {
        bucket: bucket.to_string(),
        prefix,
    })
}
