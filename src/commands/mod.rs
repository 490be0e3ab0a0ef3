//! One file per subcommand; each returns the process exit code.
mod render;
pub mod report;
mod schema;
mod validate;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Validate(args) => validate::run(args),
        Command::Render(args) => render::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Report(args) => report::run(args),
    }
}
