//! Turns the command line into a command run and an exit code.
use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match crate::commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            let text = format!("{err:#}");
            eprintln!("error: {text}");
            if text.contains("credentials") {
                eprintln!(
                    "hint: envctl uses the AWS default credential chain: set AWS_PROFILE or --profile, run `aws sso login`, or export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; to try envctl without AWS, add --sandbox"
                );
            }
            ExitCode::from(1)
        }
    }
}
