//! Why an action did not finish: causes as values, so the executor decides (cancelled or
//! failed) by variant, and the outcome table prints them as one line.
use crate::aws::AwsError;
use envctl_aws_model::ErrorCode;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActionError {
    /// An AWS call failed (after retries, if retrying could help).
    #[error(transparent)]
    Aws(#[from] AwsError),
    /// The run was interrupted: the call was not sent, or the wait ended early.
    #[error("interrupted{}", .during.as_ref().map(|d| format!(" while waiting for {d}")).unwrap_or_default())]
    Interrupted { during: Option<String> },
    /// AWS reports a state the resource cannot leave by waiting (a failed deployment, a
    /// cluster in FAILED, a failed operation).
    #[error("{0}")]
    Failed(String),
    /// The deadline passed; `elapsed_secs` is measured from the start of the wait.
    #[error(
        "{what}: not done after {elapsed_secs:.0}s (deadline {deadline_secs:.0}s; last: {last_status})"
    )]
    TimedOut {
        what: String,
        elapsed_secs: f64,
        deadline_secs: f64,
        last_status: String,
    },
    /// A value another resource provides (an endpoint) is still unknown.
    #[error("{0} is still unknown: the resource that provides it did not report it")]
    Unresolved(String),
    /// A create was answered "already exists" and the resource there does not carry this
    /// env's tags: someone else's, never to be used or changed.
    #[error(
        "{what} {name} already exists and is not envctl's (no envctl:env={env} tag): rename it in the env file, or pass --adopt to take it over on purpose"
    )]
    NotOurs {
        what: &'static str,
        name: String,
        env: String,
    },
    /// The request about to be sent differs from the planned one outside its placeholders
    /// (`apply::conform`): a bug in envctl, never sent. Names the fields, not their values.
    #[error(
        "{resource}: envctl produced an inconsistent final request (it differs from the plan in {}); nothing was sent. This is a bug in envctl: please report it with this message",
        .fields.join(", ")
    )]
    Inconsistent {
        resource: String,
        fields: Vec<String>,
    },
    /// The executor itself failed (a panicking action).
    #[error("internal error: {0}")]
    Internal(String),
}

impl ActionError {
    /// AWS answered with this error code.
    pub fn is_code(&self, code: ErrorCode) -> bool {
        matches!(self, ActionError::Aws(e) if e.is_code(code))
    }

    pub fn is_interruption(&self) -> bool {
        matches!(self, ActionError::Interrupted { .. })
    }
}
