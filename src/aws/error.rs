//! One error type for every AWS call: which operation on which resource, AWS's error code
//! and message, and whether retrying can help.
use std::fmt;

use aws_credential_types::provider::error::CredentialsError;
use aws_sdk_ecs::config::http::HttpResponse;
use aws_sdk_ecs::error::{ProvideErrorMetadata, SdkError};
use envctl_aws_model::ErrorCode;

#[derive(Debug, Clone, PartialEq)]
pub struct AwsError {
    pub operation: &'static str,
    pub resource: String,
    /// AWS's error code (`ThrottlingException`, `ServiceNotFoundException`...), if it sent one.
    pub code: Option<String>,
    pub message: String,
    /// True when trying again can help: throttling, a 5xx, a dropped connection, a timeout.
    pub retryable: bool,
    /// The default credential chain found no usable credentials: the call was never sent.
    pub credentials: bool,
}

impl AwsError {
    /// `operation` is the typed name (`EcsOp::CreateCluster`) or, for APIs without one
    /// (S3, CloudWatch), the action's name.
    pub fn from_sdk<E>(
        operation: impl Into<&'static str>,
        resource: &str,
        err: SdkError<E, HttpResponse>,
    ) -> AwsError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let code = err.code().map(str::to_string);
        let retryable = match &err {
            SdkError::ServiceError(e) => {
                e.raw().status().is_server_error()
                    || code
                        .as_deref()
                        .and_then(ErrorCode::parse)
                        .is_some_and(ErrorCode::is_throttling)
            }
            // A dropped connection or a timeout may pass; a failure to load credentials or to
            // build the request will not.
            // A connection closed before the answer was complete is reported as "other"
            // with the transient kind: the call may have taken effect (creates then meet
            // "already exists", which they handle), so it is retried like a dropped one.
            SdkError::DispatchFailure(e) => {
                e.is_io()
                    || e.is_timeout()
                    || e.as_other() == Some(aws_smithy_types::retry::ErrorKind::TransientError)
            }
            SdkError::TimeoutError(_) | SdkError::ResponseError(_) => true,
            _ => false,
        };
        let message = match err.message() {
            Some(m) => m.to_string(),
            None => chain(&err),
        };
        let credentials = caused_by_credentials(&err);
        AwsError {
            operation: operation.into(),
            resource: resource.to_string(),
            code,
            message,
            retryable: retryable && !credentials,
            credentials,
        }
    }

    /// An answer AWS should have contained but did not.
    pub fn missing(operation: impl Into<&'static str>, resource: &str, what: &str) -> AwsError {
        AwsError {
            operation: operation.into(),
            resource: resource.to_string(),
            code: None,
            message: format!("the response has no {what}"),
            retryable: false,
            credentials: false,
        }
    }

    /// An error of envctl's own making (never sent, or refused before sending).
    pub fn local(operation: &'static str, resource: &str, message: impl Into<String>) -> AwsError {
        AwsError {
            operation,
            resource: resource.to_string(),
            code: None,
            message: message.into(),
            retryable: false,
            credentials: false,
        }
    }

    /// AWS answered with this error code.
    pub fn is_code(&self, code: ErrorCode) -> bool {
        self.code.as_deref() == Some(code.as_str())
    }
}

/// The SDK reports a failed credential chain as a dispatch failure whose cause, somewhere
/// down the chain, is a `CredentialsError`: found by type, not by the words of its text.
fn caused_by_credentials(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = next {
        if e.is::<CredentialsError>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// An error and its causes as one readable line ("dispatch failure: an error occurred while
/// loading credentials: ..."), without the debug dump of the whole response.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = next {
        let text = e.to_string();
        if !text.is_empty() && !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    let line = parts.join(": ");
    if line.chars().count() > 400 {
        line.chars().take(400).collect::<String>() + "..."
    } else {
        line
    }
}

impl fmt::Display for AwsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            Some(code) => write!(
                f,
                "{} {}: {code}: {}",
                self.operation, self.resource, self.message
            ),
            None => write!(f, "{} {}: {}", self.operation, self.resource, self.message),
        }
    }
}

impl std::error::Error for AwsError {}
