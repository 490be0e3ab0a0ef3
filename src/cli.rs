//! Command-line types only (clap); each subcommand runs in `commands/<verb>.rs`.
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "envctl",
    version,
    about = "Declarative performance-test environments on AWS, and test matrices over them",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check env and playbook files; report every problem with file:line:col.
    Validate(ValidateArgs),
    /// Print exactly what would be sent to AWS for an env (task definitions, MSK, RDS).
    Render(RenderArgs),
    /// Print the JSON Schema of env or playbook files (for editors).
    Schema(SchemaArgs),
    /// Summarize performance-test results (JMeter JTL files).
    Report(ReportArgs),
}

/// `--set path=value` overrides, shared by every command that reads an env.
#[derive(Debug, Args, Clone, Default)]
pub struct Overrides {
    /// Override a field: services.mod-users.log_level=warn, kafka.main.brokers=4,
    /// services.*.rw_split=true (repeatable; values are YAML).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Env or playbook files (a playbook is recognised by its `matrix:`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Fail on warnings too.
    #[arg(long)]
    pub strict: bool,
    #[arg(long, value_enum, default_value_t = DiagnosticFormat::Text)]
    pub format: DiagnosticFormat,
    #[command(flatten)]
    pub overrides: Overrides,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DiagnosticFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The env file.
    pub env: PathBuf,
    /// Only this service's task definition.
    #[arg(long)]
    pub service: Option<String>,
    #[arg(long, value_enum, default_value_t = DataFormat::Yaml)]
    pub format: DataFormat,
    #[command(flatten)]
    pub overrides: Overrides,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DataFormat {
    Json,
    Yaml,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which file kind.
    #[arg(value_enum, default_value_t = SchemaKind::Env)]
    pub kind: SchemaKind,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    Env,
    Playbook,
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
