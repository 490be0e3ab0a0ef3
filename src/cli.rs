//! Command-line types only (clap); each subcommand runs in `commands/<verb>.rs`.
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "envctl",
    version,
    about = "Declarative performance-test environments on AWS"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Summarize performance-test results
    Report(ReportArgs),
}

/// `envctl report ...`: a struct around the subcommand so that `report RUN_DIR` can be
/// added later as an optional positional next to it.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Per-label statistics (samples, errors, average, percentiles, throughput) of JMeter
    /// result files; several files are merged into one table, as for distributed load
    /// generators
    Jtl(ReportJtlArgs),
}

#[derive(Debug, Args)]
pub struct ReportJtlArgs {
    /// JTL files (CSV with or without header, or XML)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t)]
    pub format: crate::report::ReportFormat,
}
