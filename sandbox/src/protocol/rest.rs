//! restJson1 (Kafka): the operation is the method plus the path; path labels are
//! percent-encoded ARNs. Errors carry `x-amzn-errortype` and `{"message": ...}`; timestamps
//! are RFC 3339 strings.

use super::{ApiError, response};
use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::Value;
use std::collections::HashMap;

/// A success; `Value::Null` means no body (e.g. 204 for TagResource).
pub fn ok(status: u16, value: &Value) -> Response<Body> {
    let body = if value.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec())
    };
    response(
        StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        &[("content-type", "application/json".to_string())],
        body,
    )
}

pub fn error(err: &ApiError) -> Response<Body> {
    let body = serde_json::json!({"message": err.message});
    response(
        err.status_code(),
        &[
            ("content-type", "application/json".to_string()),
            ("x-amzn-errortype", err.code.clone()),
        ],
        body.to_string(),
    )
}

/// Splits a raw path into percent-decoded segments.
pub fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

/// Decodes a query string into a map (last value wins).
pub fn query(raw: Option<&str>) -> HashMap<String, String> {
    raw.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

pub fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    super::json::parse(body).map_err(|e| ApiError::bad("BadRequestException", e.message))
}
