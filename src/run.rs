//! Turns the command line into a command run and an exit code.
use std::process::ExitCode;

use clap::Parser;

use crate::apply::ActionError;
use crate::aws::AwsError;
use crate::cli::Cli;
use crate::converge::ConvergeError;

/// A command line clap cannot parse (an unknown flag, a missing argument): EX_USAGE of
/// sysexits(3). clap's own 2 would read as "changes pending" to a CI job that runs
/// `plan --detailed-exitcode`, so a typo'd flag would pass for a plan with changes.
pub const EXIT_USAGE: u8 = 64;

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors: clap prints them to stdout, exit 0.
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            // Nothing better to do if the terminal is gone.
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
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
