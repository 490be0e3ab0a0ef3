//! One file per subcommand; each returns the process exit code.
mod apply;
mod common;
mod completions;
mod destroy;
mod gc;
mod man;
mod matrix;
mod plan;
mod render;
pub mod report;
mod sandbox;
mod schema;
mod status;
mod validate;
mod workload;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Validate(args) => validate::run(args),
        Command::Render(args) => render::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Report(args) => report::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Apply(args) => apply::run(args),
        Command::Destroy(args) => destroy::run(args),
        Command::Status(args) => status::run(args),
        Command::Sandbox(args) => sandbox::run(args),
        Command::Matrix(args) => matrix::run(args),
        Command::Workload(args) => workload::run(args),
        Command::Gc(args) => gc::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
    }
}
