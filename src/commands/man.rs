//! `envctl man`: the man page, generated from the clap types like `--help`, so both say the same.
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, ManArgs};

pub fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    let cmd = Cli::command();
    match args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write man pages to {}", dir.display()))?;
            println!("man pages written to {}", dir.display());
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
