//! Turns the command line into a command run and an exit code.
use std::process::ExitCode;

use clap::Parser;

use crate::apply::ActionError;
use crate::aws::AwsError;
use crate::cli::Cli;
use crate::converge::ConvergeError;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match crate::commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            if lacks_credentials(&err) {
                eprintln!(
                    "hint: envctl uses the AWS default credential chain: set AWS_PROFILE or --profile, run `aws sso login`, or export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; to try envctl without AWS, add --sandbox"
                );
            }
            ExitCode::from(1)
        }
    }
}

/// Whether an AWS call in the error's chain failed for want of credentials (by the error's
/// type, whatever its text says).
fn lacks_credentials(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        let aws = e
            .downcast_ref::<AwsError>()
            .or_else(|| match e.downcast_ref::<ConvergeError>() {
                Some(ConvergeError::Observe(a)) => Some(a),
                _ => None,
            })
            .or_else(|| match e.downcast_ref::<ActionError>() {
                Some(ActionError::Aws(a)) => Some(a),
                _ => None,
            });
        aws.is_some_and(|a| a.credentials)
    })
}
