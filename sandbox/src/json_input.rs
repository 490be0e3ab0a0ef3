//! Reading awsJson1.1 request bodies (ECS): typed field access with AWS's error for a
//! missing required field.

use crate::protocol::ApiError;
use serde_json::Value;

pub(crate) fn opt_str<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

pub(crate) fn req_str<'a>(input: &'a Value, key: &str) -> Result<&'a str, ApiError> {
    opt_str(input, key)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::bad(
                "InvalidParameterException",
                format!("{key} must be specified."),
            )
        })
}

pub(crate) fn opt_i64(input: &Value, key: &str) -> Option<i64> {
    input.get(key).and_then(Value::as_i64)
}

pub(crate) fn str_list(input: &Value, key: &str) -> Vec<String> {
    input
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
