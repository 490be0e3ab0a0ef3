//! Wire protocols: how a request is decoded and how a reply or an AWS error is encoded.
//!
//! The shapes follow what the Rust SDK's deserializers read (see `protocol_serde/` and
//! `json_errors.rs` / `cbor_errors.rs` / `rest_xml_wrapped_errors.rs` in the SDK crates), so
//! `into_service_error()` yields the typed variant and the standard retry classifier
//! (aws-runtime `THROTTLING_ERRORS`, HTTP 500/502/503/504) treats injected faults as AWS's.

pub mod cbor;
pub mod json;
pub mod query;
pub mod rest;

use axum::body::Body;
use axum::http::{Response, StatusCode};

/// An AWS error as the emulated service returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    /// The modeled error code, e.g. `ServiceNotFoundException` or `DBInstanceNotFound`.
    pub code: String,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// A client error (HTTP 400).
    pub fn bad(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(400, code, message)
    }

    pub(crate) fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST)
    }

    /// "Sender" for 4xx, "Receiver" for 5xx, as awsQuery error bodies say.
    pub(crate) fn fault_type(&self) -> &'static str {
        if self.status >= 500 {
            "Receiver"
        } else {
            "Sender"
        }
    }
}

/// Builds a response; the builder only fails on invalid header values, which the callers
/// never pass (all are static ASCII), so fall back to a bare 500 rather than panic.
pub(crate) fn response(
    status: StatusCode,
    headers: &[(&str, String)],
    body: impl Into<Body>,
) -> Response<Body> {
    let mut builder = Response::builder().status(status);
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    builder.body(body.into()).unwrap_or_else(|_| {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}
