//! One file per subcommand; each returns the process exit code.
mod apply;
mod common;
mod completions;
mod destroy;
mod gc;
mod import;
mod man;
mod matrix;
mod park;
mod plan;
mod preflight;
mod render;
pub mod report;
mod sandbox;
pub(crate) mod schema;
mod schema_rules;
mod status;
mod unlock;
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
        Command::Preflight(args) => preflight::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Apply(args) => apply::run(args),
        Command::Destroy(args) => destroy::run(args),
        Command::Status(args) => status::run(args),
        Command::Sandbox(args) => sandbox::run(args),
        Command::Matrix(args) => matrix::run(args),
        Command::Workload(args) => workload::run(args),
        Command::Gc(args) => gc::run(args),
        Command::Import(args) => import::run(args),
        Command::Park(args) => park::run(args, park::Direction::Park),
        Command::Unpark(args) => park::run(args, park::Direction::Unpark),
        Command::Unlock(args) => unlock::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
    }
}
