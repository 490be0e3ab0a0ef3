//! Smithy rpc-v2-cbor (CloudWatch): `POST /service/GraniteServiceVersion20100801/operation/<Op>`
//! with `smithy-protocol: rpc-v2-cbor`. Bodies are CBOR maps; timestamps are tag 1 (epoch
//! seconds). CloudWatch is awsQuery-compatible, so errors also carry
//! `x-amzn-query-error: <Code>;<Sender|Receiver>`, which the SDK prefers over `__type`.

use super::{ApiError, response};
use axum::body::Body;
use axum::http::{Response, StatusCode};
use ciborium::Value;

const SHAPE_PREFIX: &str = "com.amazonaws.cloudwatch#";

fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    // Writing into a Vec cannot fail for a Value tree; an empty map is the safe fallback.
    if ciborium::into_writer(value, &mut out).is_err() {
        out = vec![0xa0];
    }
    out
}

fn headers() -> Vec<(&'static str, String)> {
    vec![
        ("content-type", "application/cbor".to_string()),
        ("smithy-protocol", "rpc-v2-cbor".to_string()),
    ]
}

pub fn ok(value: &Value) -> Response<Body> {
    response(StatusCode::OK, &headers(), encode(value))
}

pub fn error(err: &ApiError) -> Response<Body> {
    let body = map(vec![
        ("__type", text(&format!("{SHAPE_PREFIX}{}", err.code))),
        ("message", text(&err.message)),
    ]);
    let mut h = headers();
    h.push((
        "x-amzn-query-error",
        format!("{};{}", err.code, err.fault_type()),
    ));
    response(err.status_code(), &h, encode(&body))
}

pub fn parse(body: &[u8]) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Ok(Value::Map(Vec::new()));
    }
    ciborium::from_reader(body)
        .map_err(|e| ApiError::bad("InvalidParameterValue", format!("malformed CBOR body: {e}")))
}

// Small constructors and accessors over `ciborium::Value`.

pub fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

pub fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (text(k), v)).collect())
}

pub fn timestamp(secs: f64) -> Value {
    Value::Tag(1, Box::new(Value::Float(secs)))
}

pub fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| matches!(k, Value::Text(t) if t == key))
            .map(|(_, v)| v),
        _ => None,
    }
}

pub fn get_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    match get(v, key) {
        Some(Value::Text(t)) => Some(t.as_str()),
        _ => None,
    }
}

pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Float(f) => Some(*f),
        Value::Integer(i) => i64::try_from(*i).ok().map(|i| i as f64),
        Value::Tag(1, inner) => as_f64(inner),
        _ => None,
    }
}

pub fn get_f64(v: &Value, key: &str) -> Option<f64> {
    get(v, key).and_then(as_f64)
}

pub fn get_array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    match get(v, key) {
        Some(Value::Array(a)) => a.as_slice(),
        _ => &[],
    }
}
