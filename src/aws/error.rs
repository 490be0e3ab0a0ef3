//! One error type for every AWS call: which operation on which resource, AWS's error code
//! and message, and whether retrying can help.
use std::fmt;

use aws_sdk_ecs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

#[derive(Debug, Clone, PartialEq)]
pub struct AwsError {
    pub operation: &'static str,
    pub resource: String,
    /// AWS's error code (`ThrottlingException`, `ServiceNotFoundException`...), if it sent one.
    pub code: Option<String>,
    pub message: String,
}

/// Codes AWS uses for rate limiting across ECS, MSK, RDS and CloudWatch.
const THROTTLING: &[&str] = &[
    "ThrottlingException",
    "Throttling",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "RequestThrottled",
];

impl AwsError {
    pub fn from_sdk<E, R>(operation: &'static str, resource: &str, err: SdkError<E, R>) -> AwsError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: fmt::Debug + Send + Sync + 'static,
    {
        let code = err.code().map(str::to_string);
        let message = match err.message() {
            Some(m) => m.to_string(),
            None => DisplayErrorContext(&err).to_string(),
        };
        AwsError {
            operation,
            resource: resource.to_string(),
            code,
            message,
        }
    }

    /// An answer AWS should have contained but did not.
    pub fn missing(operation: &'static str, resource: &str, what: &str) -> AwsError {
        AwsError {
            operation,
            resource: resource.to_string(),
            code: None,
            message: format!("the response has no {what}"),
        }
    }

    pub fn is_throttling(&self) -> bool {
        self.code
            .as_deref()
            .is_some_and(|c| THROTTLING.contains(&c))
    }

    pub fn is_code(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
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
