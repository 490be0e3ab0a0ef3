//! `envctl completions SHELL`: the completion script, generated from the same clap types that
//! parse the command line, so it cannot fall behind a new flag.
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};

pub fn run(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    let name = cmd.get_name().to_string();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, name, &mut out);
    // Written at once so a closed pipe is an error we report, not a panic inside the generator.
    std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
    Ok(ExitCode::SUCCESS)
}
