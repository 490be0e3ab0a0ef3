//! awsJson1.1 (ECS): `POST /` with `X-Amz-Target: AmazonEC2ContainerServiceV20141113.<Op>`.
//! Errors are `{"__type": code, "message": ...}`; timestamps are epoch seconds.

use super::{ApiError, response};
use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::Value;

const CONTENT_TYPE: &str = "application/x-amz-json-1.1";

pub fn ok(body: Vec<u8>) -> Response<Body> {
    response(
        StatusCode::OK,
        &[("content-type", CONTENT_TYPE.to_string())],
        body,
    )
}

pub fn error(err: &ApiError) -> Response<Body> {
    let body = serde_json::json!({"__type": err.code, "message": err.message});
    response(
        err.status_code(),
        &[
            ("content-type", CONTENT_TYPE.to_string()),
            ("x-amzn-errortype", err.code.clone()),
        ],
        body.to_string(),
    )
}

/// Reads the request body; an empty body is an empty object, as the SDK sends for no input.
pub fn parse(body: &[u8]) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad("SerializationException", format!("invalid JSON body: {e}")))
}
