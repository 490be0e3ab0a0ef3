//! awsQuery (RDS): a form-encoded POST (`Action=...&Version=2014-10-31`), answered with XML
//! `<OpResponse><OpResult>...</OpResult><ResponseMetadata/></OpResponse>`. Lists in the
//! request are flattened as `Name.Member.N` (`Tags.Tag.1.Key`, `Filters.Filter.1.Values.Value.1`).
//! Errors are `<ErrorResponse><Error><Type/><Code/><Message/></Error></ErrorResponse>`.

use super::{ApiError, response};
use axum::body::Body;
use axum::http::{Response, StatusCode};
use std::collections::HashMap;
use std::fmt::Write;

const XMLNS: &str = "http://rds.amazonaws.com/doc/2014-10-31/";

/// The decoded form parameters of one request.
#[derive(Debug, Default)]
pub struct Params(HashMap<String, String>);

impl Params {
    pub fn parse(body: &[u8]) -> Params {
        Params(form_urlencoded::parse(body).into_owned().collect())
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    pub fn required(&self, key: &str) -> Result<&str, ApiError> {
        self.get(key).filter(|v| !v.is_empty()).ok_or_else(|| {
            ApiError::bad(
                "MissingParameter",
                format!("The request must contain the parameter {key}"),
            )
        })
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).map(|v| v.eq_ignore_ascii_case("true"))
    }

    pub fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad(
                    "InvalidParameterValue",
                    format!("Invalid value {v} for parameter {key}"),
                )
            }),
        }
    }

    /// The members `prefix.member.1`, `prefix.member.2`, ... as sub-prefixes, in order.
    /// A struct member's fields are then read with `get(&format!("{p}.Field"))`.
    pub fn list_prefixes(&self, prefix: &str, member: &str) -> Vec<String> {
        let mut out = Vec::new();
        for i in 1.. {
            let p = format!("{prefix}.{member}.{i}");
            let exists = self.0.contains_key(&p)
                || self
                    .0
                    .keys()
                    .any(|k| k.starts_with(&p) && k[p.len()..].starts_with('.'));
            if !exists {
                break;
            }
            out.push(p);
        }
        out
    }

    /// A list of strings `prefix.member.N`.
    pub fn strings(&self, prefix: &str, member: &str) -> Vec<String> {
        self.list_prefixes(prefix, member)
            .iter()
            .filter_map(|p| self.get(p).map(str::to_string))
            .collect()
    }

    /// `Tags.Tag.N.Key` / `.Value` pairs.
    pub fn tags(&self) -> Vec<(String, String)> {
        self.list_prefixes("Tags", "Tag")
            .iter()
            .filter_map(|p| {
                let key = self.get(&format!("{p}.Key"))?;
                let value = self.get(&format!("{p}.Value")).unwrap_or("");
                Some((key.to_string(), value.to_string()))
            })
            .collect()
    }
}

/// A tiny XML writer; text is escaped, element names are trusted (they are literals).
#[derive(Debug, Default)]
pub struct Xml(String);

impl Xml {
    pub fn new() -> Xml {
        Xml(String::with_capacity(1024))
    }

    pub fn open(&mut self, name: &str) -> &mut Xml {
        let _ = write!(self.0, "<{name}>");
        self
    }

    pub fn close(&mut self, name: &str) -> &mut Xml {
        let _ = write!(self.0, "</{name}>");
        self
    }

    pub fn el(&mut self, name: &str, text: impl std::fmt::Display) -> &mut Xml {
        let text = text.to_string();
        let _ = write!(self.0, "<{name}>{}</{name}>", escape(&text));
        self
    }

    pub fn opt(&mut self, name: &str, text: Option<impl std::fmt::Display>) -> &mut Xml {
        if let Some(t) = text {
            self.el(name, t);
        }
        self
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Wraps the inner XML of `<OpResult>` into the full response.
pub fn ok(action: &str, result: &str, request_id: &str) -> Response<Body> {
    let body = format!(
        "<{action}Response xmlns=\"{XMLNS}\"><{action}Result>{result}</{action}Result>\
         <ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata></{action}Response>"
    );
    response(
        StatusCode::OK,
        &[("content-type", "text/xml".to_string())],
        body,
    )
}

pub fn error(err: &ApiError, request_id: &str) -> Response<Body> {
    let body = format!(
        "<ErrorResponse xmlns=\"{XMLNS}\"><Error><Type>{}</Type><Code>{}</Code><Message>{}</Message></Error>\
         <RequestId>{request_id}</RequestId></ErrorResponse>",
        err.fault_type(),
        escape(&err.code),
        escape(&err.message)
    );
    response(
        err.status_code(),
        &[("content-type", "text/xml".to_string())],
        body,
    )
}

/// RFC 3339 with milliseconds, as RDS writes timestamps.
pub fn timestamp(secs: f64) -> String {
    crate::util::rfc3339(secs)
}
