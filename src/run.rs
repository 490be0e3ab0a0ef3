//! Turns the command line into a command run and an exit code.
use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match crate::commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}
