//! One file per subcommand.
use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {}
}
