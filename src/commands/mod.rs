//! One file per subcommand.
pub mod report;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Report(args) => report::run(args),
    }
}
