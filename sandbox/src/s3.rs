//! S3, as much as a lock needs: CreateBucket, and PutObject, GetObject, HeadObject and
//! DeleteObject with S3's conditional requests, over REST-XML with path-style addressing
//! (`/bucket/key`: a loopback endpoint has no bucket subdomains).
//!
//! Conditions, as S3 evaluates them:
//! - PutObject `If-None-Match: *`: 412 `PreconditionFailed` if the key exists.
//! - PutObject `If-Match: <etag>`: 412 if the object's ETag differs, 404 `NoSuchKey` if there
//!   is no object.
//! - DeleteObject `If-Match: <etag>`: the same; without the header a delete of a missing key
//!   succeeds (204).
//!
//! ETags are quoted hex digests of the content, so identical content has the identical ETag
//! as with S3's MD5 ETags of single-part uploads (the digest is not MD5: nothing may depend on
//! its value). Objects live in memory only: they are not part of the saved world, so a lock
//! taken against the embedded sandbox ends with the process that took it.
use std::collections::BTreeMap;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Response, StatusCode};

use crate::protocol::query::escape;
use crate::protocol::{ApiError, response};

/// The service name in a SigV4 credential scope (`.../us-east-1/s3/aws4_request`).
pub const SIGNING_NAME: &str = "s3";

#[derive(Debug, Default)]
pub struct Store {
    /// Bucket name -> its Region.
    buckets: BTreeMap<String, String>,
    objects: BTreeMap<(String, String), Object>,
}

#[derive(Debug, Clone)]
struct Object {
    body: Bytes,
    etag: String,
    content_type: String,
    /// Virtual time of the write (emulated engines see a barrier from then on).
    written_at: f64,
}

/// A decoded S3 request.
#[derive(Debug)]
pub struct Request {
    pub operation: &'static str,
    bucket: String,
    key: Option<String>,
    if_match: Option<String>,
    if_none_match: Option<String>,
    content_type: Option<String>,
    body: Bytes,
    /// The Region the request is signed for (its SigV4 credential scope).
    region: Option<String>,
}

impl Request {
    /// `bucket/key` for the request log.
    pub fn resource(&self) -> String {
        match &self.key {
            Some(key) => format!("{}/{key}", self.bucket),
            None => self.bucket.clone(),
        }
    }
}

/// True if a request is signed for S3: the only way to tell S3's REST calls from the other
/// services' on one endpoint.
pub fn is_s3(headers: &HeaderMap) -> bool {
    scope_part(headers, 3).as_deref() == Some(SIGNING_NAME)
}

/// A part of the SigV4 credential scope (`KEY/date/region/service/aws4_request`).
fn scope_part(headers: &HeaderMap, n: usize) -> Option<String> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|auth| auth.split("Credential=").nth(1))
        .and_then(|cred| cred.split([',', ' ']).next())
        .and_then(|scope| scope.split('/').nth(n))
        .map(str::to_string)
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

pub fn decode(
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Request, ApiError> {
    let trimmed = path.trim_start_matches('/');
    let (bucket, key) = match trimmed.split_once('/') {
        Some((bucket, key)) if !key.is_empty() => (bucket, Some(percent_decode(key))),
        Some((bucket, _)) => (bucket, None),
        None => (trimmed, None),
    };
    if bucket.is_empty() {
        return Err(ApiError::new(
            501,
            "NotImplemented",
            "ListBuckets is not served by the sandbox",
        ));
    }
    let operation = match (method, key.is_some()) {
        (&Method::PUT, false) => "CreateBucket",
        (&Method::HEAD, false) => "HeadBucket",
        (&Method::PUT, true) => "PutObject",
        (&Method::GET, true) => "GetObject",
        (&Method::HEAD, true) => "HeadObject",
        (&Method::DELETE, true) => "DeleteObject",
        _ => {
            return Err(ApiError::new(
                501,
                "NotImplemented",
                format!("{method} /{trimmed} is not served by the sandbox"),
            ));
        }
    };
    Ok(Request {
        operation,
        bucket: bucket.to_string(),
        key,
        if_match: header(headers, "if-match"),
        if_none_match: header(headers, "if-none-match"),
        content_type: header(headers, "content-type"),
        body: body.clone(),
        region: scope_part(headers, 2),
    })
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn precondition_failed(condition: &str) -> ApiError {
    ApiError::new(
        412,
        "PreconditionFailed",
        format!("At least one of the pre-conditions you specified did not hold ({condition})"),
    )
}

fn no_such_key() -> ApiError {
    ApiError::new(404, "NoSuchKey", "The specified key does not exist.")
}

/// ETags compare without their quotes: clients send them either way.
fn same_etag(a: &str, b: &str) -> bool {
    a.trim_matches('"') == b.trim_matches('"')
}

/// Two 64-bit FNV-1a digests with different offsets, as 32 hex digits (the width of MD5).
fn etag_of(body: &[u8]) -> String {
    let fnv = |offset: u64| {
        body.iter().fold(offset, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "\"{:016x}{:016x}\"",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x8422_2325_cbf2_9ce4)
    )
}

impl crate::engines::ObjectStore for Store {
    fn object(&self, bucket: &str, key: &str) -> Option<(Vec<u8>, f64)> {
        self.objects
            .get(&(bucket.to_string(), key.to_string()))
            .map(|o| (o.body.to_vec(), o.written_at))
    }
}

impl Store {
    /// Puts an object as an emulated engine's upload does; false when the bucket does not
    /// exist (the upload fails, as it would on S3).
    pub fn put(&mut self, bucket: &str, key: &str, body: Vec<u8>, now: f64) -> bool {
        if !self.buckets.contains_key(bucket) {
            return false;
        }
        let body = Bytes::from(body);
        let etag = etag_of(&body);
        self.objects.insert(
            (bucket.to_string(), key.to_string()),
            Object {
                body,
                etag,
                content_type: "binary/octet-stream".into(),
                written_at: now,
            },
        );
        true
    }
}

pub fn handle(store: &mut Store, req: Request, now: f64) -> Result<Response<Body>, ApiError> {
    if req.operation == "CreateBucket" {
        // The Region of `CreateBucketConfiguration.LocationConstraint`, else the one the
        // request is signed for (S3 refuses a constraint that differs from the endpoint's;
        // the sandbox, one endpoint for every Region, takes the signature's), else us-east-1.
        let region = location_constraint(&req.body)
            .or(req.region.clone())
            .unwrap_or_else(|| "us-east-1".into());
        // Created again by its owner: it stays where it is (us-east-1's answer to its owner).
        store.buckets.entry(req.bucket.clone()).or_insert(region);
        return Ok(response(
            StatusCode::OK,
            &[("location", format!("/{}", req.bucket))],
            Body::empty(),
        ));
    }
    let Some(region) = store.buckets.get(&req.bucket).cloned() else {
        return Err(ApiError::new(
            404,
            "NoSuchBucket",
            "The specified bucket does not exist",
        ));
    };
    let region_header = [(BUCKET_REGION_HEADER, region.clone())];
    // A request signed for another Region is answered 301 PermanentRedirect, naming the
    // bucket's Region in `x-amz-bucket-region` (S3 API Reference, "Error responses":
    // PermanentRedirect; HeadBucket); the Rust SDK does not follow it
    // (awslabs/aws-sdk-rust#183, #1052).
    if req.region.as_ref().is_some_and(|r| *r != region) {
        return Ok(permanent_redirect(&req.bucket, &region));
    }
    if req.operation == "HeadBucket" {
        return Ok(response(StatusCode::OK, &region_header, Body::empty()));
    }
    let id = (req.bucket.clone(), req.key.clone().unwrap_or_default());
    let current = store.objects.get(&id);
    match req.operation {
        "PutObject" => {
            if req.if_none_match.as_deref() == Some("*") && current.is_some() {
                return Err(precondition_failed("If-None-Match"));
            }
            if let Some(expected) = &req.if_match {
                match current {
                    None => return Err(no_such_key()),
                    Some(o) if !same_etag(&o.etag, expected) => {
                        return Err(precondition_failed("If-Match"));
                    }
                    Some(_) => {}
                }
            }
            let etag = etag_of(&req.body);
            store.objects.insert(
                id,
                Object {
                    body: req.body,
                    etag: etag.clone(),
                    content_type: req
                        .content_type
                        .unwrap_or_else(|| "binary/octet-stream".into()),
                    written_at: now,
                },
            );
            Ok(response(StatusCode::OK, &[("etag", etag)], Body::empty()))
        }
        "GetObject" | "HeadObject" => {
            let Some(o) = current else {
                return Err(no_such_key());
            };
            let headers = [
                ("etag", o.etag.clone()),
                ("content-type", o.content_type.clone()),
                ("content-length", o.body.len().to_string()),
            ];
            let body = if req.operation == "GetObject" {
                Body::from(o.body.clone())
            } else {
                Body::empty()
            };
            Ok(response(StatusCode::OK, &headers, body))
        }
        "DeleteObject" => {
            if let Some(expected) = &req.if_match {
                match current {
                    None => return Err(no_such_key()),
                    Some(o) if !same_etag(&o.etag, expected) => {
                        return Err(precondition_failed("If-Match"));
                    }
                    Some(_) => {}
                }
            }
            store.objects.remove(&id);
            Ok(response(StatusCode::NO_CONTENT, &[], Body::empty()))
        }
        other => Err(ApiError::new(
            501,
            "NotImplemented",
            format!("{other} is not served by the sandbox"),
        )),
    }
}

/// The header S3 names a bucket's Region in.
pub const BUCKET_REGION_HEADER: &str = "x-amz-bucket-region";

/// `<LocationConstraint>` of a CreateBucket body, if any.
fn location_constraint(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let start = text.find("<LocationConstraint>")? + "<LocationConstraint>".len();
    let end = start + text[start..].find("</LocationConstraint>")?;
    Some(text[start..end].trim().to_string()).filter(|r| !r.is_empty())
}

/// S3's answer to a request for a bucket of another Region.
fn permanent_redirect(bucket: &str, region: &str) -> Response<Body> {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint. Please send all future requests to this endpoint.</Message><Endpoint>{}.s3.{}.amazonaws.com</Endpoint><Bucket>{}</Bucket></Error>",
        escape(bucket),
        escape(region),
        escape(bucket)
    );
    response(
        StatusCode::MOVED_PERMANENTLY,
        &[
            (BUCKET_REGION_HEADER, region.to_string()),
            ("content-type", "application/xml".to_string()),
        ],
        body,
    )
}

/// S3's error document (REST-XML, unwrapped `<Error>`). HEAD responses lose the body on the
/// way (HTTP): the SDK then names the error by its status (404 is `NotFound`), as with S3.
pub fn error(err: &ApiError, request_id: &str) -> Response<Body> {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message><RequestId>{}</RequestId></Error>",
        escape(&err.code),
        escape(&err.message),
        escape(request_id)
    );
    response(
        err.status_code(),
        &[
            ("content-type", "application/xml".to_string()),
            ("x-amz-request-id", request_id.to_string()),
        ],
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, path: &str, headers: &[(&str, &str)], body: &str) -> Request {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        decode(&method, path, &map, &Bytes::from(body.to_string())).unwrap()
    }

    fn etag(r: &Response<Body>) -> String {
        r.headers()["etag"].to_str().unwrap().to_string()
    }

    fn code(result: Result<Response<Body>, ApiError>) -> (u16, String) {
        match result {
            Ok(r) => (r.status().as_u16(), String::new()),
            Err(e) => (e.status, e.code),
        }
    }

    #[test]
    fn conditional_writes_answer_as_s3_does() {
        let mut store = Store::default();
        let put = |h: &[(&str, &str)], body: &str| request(Method::PUT, "/b/locks/e.json", h, body);
        assert_eq!(
            code(handle(&mut store, put(&[("if-none-match", "*")], "a"), 0.0)),
            (404, "NoSuchBucket".into())
        );
        handle(&mut store, request(Method::PUT, "/b", &[], ""), 0.0).unwrap();
        let first = handle(&mut store, put(&[("if-none-match", "*")], "a"), 0.0).unwrap();
        let first_etag = etag(&first);
        assert_eq!(
            code(handle(&mut store, put(&[("if-none-match", "*")], "b"), 0.0)),
            (412, "PreconditionFailed".into())
        );
        let second = handle(&mut store, put(&[("if-match", &first_etag)], "b"), 0.0).unwrap();
        assert_ne!(etag(&second), first_etag);
        // The old version's ETag no longer matches, for a write or a delete.
        assert_eq!(
            code(handle(
                &mut store,
                put(&[("if-match", &first_etag)], "c"),
                0.0
            )),
            (412, "PreconditionFailed".into())
        );
        let delete = |h: &[(&str, &str)]| request(Method::DELETE, "/b/locks/e.json", h, "");
        assert_eq!(
            code(handle(
                &mut store,
                delete(&[("if-match", &first_etag)]),
                0.0
            )),
            (412, "PreconditionFailed".into())
        );
        // Unquoted ETags match too.
        let unquoted = etag(&second).trim_matches('"').to_string();
        assert_eq!(
            code(handle(&mut store, delete(&[("if-match", &unquoted)]), 0.0)),
            (204, String::new())
        );
        assert_eq!(
            code(handle(&mut store, delete(&[("if-match", &unquoted)]), 0.0)),
            (404, "NoSuchKey".into())
        );
        assert_eq!(
            code(handle(&mut store, delete(&[]), 0.0)),
            (204, String::new())
        );
        assert_eq!(
            code(handle(
                &mut store,
                put(&[("if-match", &unquoted)], "d"),
                0.0
            )),
            (404, "NoSuchKey".into())
        );
    }

    #[test]
    fn get_and_head_return_the_current_version() {
        let mut store = Store::default();
        handle(&mut store, request(Method::PUT, "/b", &[], ""), 0.0).unwrap();
        let put = handle(
            &mut store,
            request(
                Method::PUT,
                "/b/k%3Aey",
                &[("content-type", "application/json")],
                "{}",
            ),
            0.0,
        )
        .unwrap();
        let get = handle(&mut store, request(Method::GET, "/b/k:ey", &[], ""), 0.0).unwrap();
        assert_eq!(etag(&get), etag(&put));
        assert_eq!(get.headers()["content-type"], "application/json");
        let head = handle(&mut store, request(Method::HEAD, "/b/k:ey", &[], ""), 0.0).unwrap();
        assert_eq!(head.headers()["content-length"], "2");
        assert_eq!(
            code(handle(
                &mut store,
                request(Method::GET, "/b/other", &[], ""),
                0.0
            )),
            (404, "NoSuchKey".into())
        );
    }

    #[test]
    fn requests_are_recognised_by_their_signing_scope() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=sandbox/20261130/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"
                .parse()
                .unwrap(),
        );
        assert!(is_s3(&headers));
        headers.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=sandbox/20261130/us-east-1/ecs/aws4_request, SignedHeaders=host, Signature=0"
                .parse()
                .unwrap(),
        );
        assert!(!is_s3(&headers));
        assert!(!is_s3(&HeaderMap::new()));
    }
}
