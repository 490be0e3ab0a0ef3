//! S3: the few object calls the remote lock needs, with S3's conditional writes.
//!
//! `If-None-Match: *` on PutObject creates an object only if the key is free, `If-Match:
//! <etag>` on PutObject and DeleteObject replaces or deletes it only if it is still the
//! version we read; a failed condition is HTTP 412 `PreconditionFailed`
//! (docs/aws-behaviour.md, "S3 conditional writes"). These functions turn a 412 into a value,
//! so the lock can tell "someone else holds it" from a failure.
use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use envctl_aws_model::ErrorCode;

use super::error::AwsError;

/// An object's content and the ETag that names this version of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub body: Vec<u8>,
    pub etag: String,
}

/// The result of a conditional write or delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conditional {
    /// Written (with the new version's ETag) or deleted (empty ETag).
    Done { etag: String },
    /// The condition did not hold: the key exists (`If-None-Match: *`) or holds another
    /// version (`If-Match`).
    PreconditionFailed,
    /// `If-Match` named an object that does not exist (404 `NoSuchKey`).
    Missing,
}

/// 412 is the documented answer to a failed condition. 409 `ConditionalRequestConflict` is
/// what S3 answers when a concurrent conditional write to the same key won the race; for a
/// lock that is the same outcome.
fn is_precondition_failure(e: &AwsError) -> bool {
    e.is_code(ErrorCode::PreconditionFailed) || e.is_code(ErrorCode::ConditionalRequestConflict)
}

fn resource(bucket: &str, key: &str) -> String {
    format!("s3://{bucket}/{key}")
}

/// PutObject with `If-None-Match: *`: creates the object only if the key is free.
pub async fn put_if_absent(
    c: &Client,
    bucket: &str,
    key: &str,
    body: Vec<u8>,
) -> Result<Conditional, AwsError> {
    let sent = c
        .put_object()
        .bucket(bucket)
        .key(key)
        .if_none_match("*")
        .content_type("application/json")
        .body(ByteStream::from(body))
        .send()
        .await;
    written(
        sent.map(|o| o.e_tag)
            .map_err(|e| AwsError::from_sdk("PutObject", &resource(bucket, key), e)),
        bucket,
        key,
    )
}

/// PutObject with `If-Match: <etag>`: replaces the object only if it is still that version.
pub async fn put_if_match(
    c: &Client,
    bucket: &str,
    key: &str,
    etag: &str,
    body: Vec<u8>,
) -> Result<Conditional, AwsError> {
    let sent = c
        .put_object()
        .bucket(bucket)
        .key(key)
        .if_match(etag)
        .content_type("application/json")
        .body(ByteStream::from(body))
        .send()
        .await;
    written(
        sent.map(|o| o.e_tag)
            .map_err(|e| AwsError::from_sdk("PutObject", &resource(bucket, key), e)),
        bucket,
        key,
    )
}

fn written(
    sent: Result<Option<String>, AwsError>,
    bucket: &str,
    key: &str,
) -> Result<Conditional, AwsError> {
    match sent {
        Ok(Some(etag)) => Ok(Conditional::Done { etag }),
        Ok(None) => Err(AwsError::missing(
            "PutObject",
            &resource(bucket, key),
            "ETag",
        )),
        Err(e) if is_precondition_failure(&e) => Ok(Conditional::PreconditionFailed),
        Err(e) if e.is_code(ErrorCode::NoSuchKey) => Ok(Conditional::Missing),
        Err(e) => Err(e),
    }
}

/// GetObject; `None` if the key does not exist.
pub async fn get(c: &Client, bucket: &str, key: &str) -> Result<Option<Object>, AwsError> {
    let name = resource(bucket, key);
    let out = match c.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => out,
        Err(e) => {
            let e = AwsError::from_sdk("GetObject", &name, e);
            return if e.is_code(ErrorCode::NoSuchKey) {
                Ok(None)
            } else {
                Err(e)
            };
        }
    };
    let etag = out
        .e_tag
        .clone()
        .ok_or_else(|| AwsError::missing("GetObject", &name, "ETag"))?;
    let body = out.body.collect().await.map_err(|e| AwsError {
        operation: "GetObject",
        resource: name.clone(),
        code: None,
        message: format!("reading the object: {e}"),
        retryable: true,
        credentials: false,
    })?;
    Ok(Some(Object {
        body: body.into_bytes().to_vec(),
        etag,
    }))
}

/// HeadObject: the current version's ETag; `None` if the key does not exist.
pub async fn head(c: &Client, bucket: &str, key: &str) -> Result<Option<String>, AwsError> {
    match c.head_object().bucket(bucket).key(key).send().await {
        Ok(out) => Ok(out.e_tag),
        Err(e) => {
            let e = AwsError::from_sdk("HeadObject", &resource(bucket, key), e);
            // HEAD responses have no body, so the 404 carries no S3 error code of its own.
            if e.is_code(ErrorCode::NotFound) || e.is_code(ErrorCode::NoSuchKey) {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// DeleteObject with `If-Match: <etag>`: deletes the object only if it is still that version;
/// a key that does not exist is `Missing` (S3 answers 404 when `If-Match` is sent).
pub async fn delete_if_match(
    c: &Client,
    bucket: &str,
    key: &str,
    etag: &str,
) -> Result<Conditional, AwsError> {
    match c
        .delete_object()
        .bucket(bucket)
        .key(key)
        .if_match(etag)
        .send()
        .await
    {
        Ok(_) => Ok(Conditional::Done {
            etag: String::new(),
        }),
        Err(e) => {
            let e = AwsError::from_sdk("DeleteObject", &resource(bucket, key), e);
            if is_precondition_failure(&e) {
                Ok(Conditional::PreconditionFailed)
            } else if e.is_code(ErrorCode::NoSuchKey) {
                Ok(Conditional::Missing)
            } else {
                Err(e)
            }
        }
    }
}

/// The Region a bucket lives in, asked once with HeadBucket: S3 names it in the
/// `x-amz-bucket-region` header, on a 200 from the bucket's Region and on the 301
/// PermanentRedirect any other Region answers (which the Rust SDK does not follow:
/// awslabs/aws-sdk-rust#183, #1052). `None` when there is no such bucket (the calls that
/// follow report it as `NoSuchBucket`).
pub async fn bucket_region(c: &Client, bucket: &str) -> Result<Option<String>, AwsError> {
    match c.head_bucket().bucket(bucket).send().await {
        Ok(out) => Ok(out.bucket_region().map(str::to_string)),
        Err(e) => {
            let redirected = e
                .raw_response()
                .and_then(|r| r.headers().get(BUCKET_REGION_HEADER))
                .map(str::to_string);
            if redirected.is_some() {
                return Ok(redirected);
            }
            let e = AwsError::from_sdk("HeadBucket", &format!("s3://{bucket}"), e);
            if e.is_code(ErrorCode::NotFound) || e.is_code(ErrorCode::NoSuchBucket) {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// The header S3 names a bucket's Region in.
pub const BUCKET_REGION_HEADER: &str = "x-amz-bucket-region";

/// The same client (credentials, endpoint, settings) for another Region.
pub fn client_in_region(c: &Client, region: &str) -> Client {
    let config = c
        .config()
        .to_builder()
        .region(aws_sdk_s3::config::Region::new(region.to_string()))
        .build();
    Client::from_conf(config)
}
