//! Command-line types only (clap); each subcommand runs in `commands/<verb>.rs`.
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "envctl", version, about = "Declarative performance-test environments on AWS")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {}
