//! `envctl park ENV` / `envctl unpark ENV`.
use std::process::ExitCode;

use crate::cli::ParkArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Park,
    Unpark,
}

pub fn run(_args: ParkArgs, _direction: Direction) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not yet")
}
