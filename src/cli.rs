//! Command-line types only (clap); each subcommand runs in `commands/<verb>.rs`.
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `envctl --version`: the release and the commit it was built from (build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("ENVCTL_COMMIT"), ")");

#[derive(Debug, Parser)]
#[command(
    name = "envctl",
    version = VERSION,
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
    /// The comparison report of a matrix run (md, html, json, csv), or of JMeter JTL files.
    Report(ReportArgs),
    /// Read-only checks against the account: versions, classes and limits offered, ARNs.
    Preflight(PreflightArgs),
    /// Show what apply would change: create, update in place, rolling update, replace, delete.
    Plan(PlanArgs),
    /// Converge AWS to an env (or execute a saved plan).
    Apply(ApplyArgs),
    /// Delete everything an env owns, in reverse order.
    Destroy(DestroyArgs),
    /// Services, deployments, MSK and RDS as they are now, with drift marked.
    Status(StatusArgs),
    /// The embedded AWS emulator.
    Sandbox(SandboxArgs),
    /// Test matrices: plan the order of a playbook's points, or run them.
    Matrix(MatrixArgs),
    /// The demo workload for sandbox runs: drives the sandbox's API and writes a real JTL.
    Workload(WorkloadArgs),
    /// Delete resources envctl owns across the account: leaks of killed CI jobs.
    Gc(GcArgs),
    /// Write an env file (and templates) from an ECS cluster, MSK clusters and DB instances
    /// that exist already. Reads only.
    Import(ImportArgs),
    /// Scale an env's services to 0 and stop its DB instances between test runs.
    Park(ParkArgs),
    /// Undo `park`: start the DB instances, restore the service counts, wait until healthy.
    Unpark(ParkArgs),
    /// Break an environment's lock on purpose (the run holding it must be gone).
    Unlock(UnlockArgs),
    /// Print the completion script for a shell (bash, zsh, fish, powershell, elvish).
    Completions(CompletionsArgs),
    /// Print the man page (roff): `envctl man > envctl.1`; `--out-dir` writes one per command.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct UnlockArgs {
    /// The env file.
    pub env: PathBuf,
    /// The run whose lease to break, as the lock error names it; another run's is refused.
    #[arg(long = "run", value_name = "RUN_ID")]
    pub run_id: String,
    /// Break the lease even though its run still renews it (the run looks alive): says whose
    /// run it is, where it runs and when it last renewed, and asks first.
    #[arg(long)]
    pub force: bool,
    /// With --force: do not ask for confirmation.
    #[arg(long, requires = "force")]
    pub yes: bool,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write envctl.1 and a page per subcommand (envctl-plan.1, ...) here instead.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Only this environment's resources (`envctl:env`).
    #[arg(long)]
    pub env: Option<String>,
    /// Only resources past their `envctl:expires` time.
    #[arg(long)]
    pub expired: bool,
    /// Delete without asking (otherwise: list, and ask on a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct MatrixArgs {
    #[command(subcommand)]
    pub command: MatrixCommand,
}

#[derive(Debug, Subcommand)]
pub enum MatrixCommand {
    /// The points, the order envctl runs them in, each transition's changes and estimate,
    /// and the totals against the declared order and a rebuild per point.
    Plan(Box<MatrixPlanArgs>),
    /// Run the matrix: switch, run the workload, collect, write results/<run-id>/, tear down.
    Run(Box<MatrixRunArgs>),
}

#[derive(Debug, Args)]
pub struct MatrixPlanArgs {
    pub playbook: PathBuf,
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Plan for a copy of the playbook's env (its AWS names get the suffix `-NAME`; see
    /// `plan --copy`).
    #[arg(long, value_name = "NAME", env = "ENVCTL_COPY")]
    pub copy: Option<crate::spec::copy::CopyName>,
    /// Only points with this variant (repeatable): --only kafka=kraft-m7g
    #[arg(long, value_name = "AXIS=VARIANT")]
    pub only: Vec<String>,
    /// Start from what the account runs now (AWS, or the sandbox with --sandbox), as a run
    /// would, instead of an empty account; implied by --sandbox and --endpoint-url. With
    /// --sandbox the steps are also checked for the sandbox (`demo:` commands, its engines)
    /// instead of AWS, where every plan, file and program must be there.
    #[arg(long)]
    pub live: bool,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct MatrixRunArgs {
    pub playbook: PathBuf,
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Run on a copy of the playbook's env (its AWS names get the suffix `-NAME`; see
    /// `plan --copy`).
    #[arg(long, value_name = "NAME", env = "ENVCTL_COPY")]
    pub copy: Option<crate::spec::copy::CopyName>,
    #[arg(long, value_name = "AXIS=VARIANT")]
    pub only: Vec<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Continue an interrupted run: finished points are skipped, the current one re-applied.
    #[arg(long, value_name = "RUN_ID")]
    pub resume: Option<String>,
    /// Override the playbook's teardown policy.
    #[arg(long, value_parser = ["always", "on-success", "never", "keep-on-failure"])]
    pub teardown: Option<String>,
    /// Record what the environment runs before the first point (results/<run>/baseline.json)
    /// and put it back exactly afterwards, also after a failure or an interrupt, then verify.
    /// The default for an environment envctl adopted.
    #[arg(long, conflicts_with_all = ["teardown", "no_restore"])]
    pub restore: bool,
    /// Do not restore an adopted environment: its teardown policy applies.
    #[arg(long)]
    pub no_restore: bool,
    /// Where results/<run-id>/ is written.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Print the run record as JSON at the end.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// Transaction labels, used in turn (e.g. "Check-in,Check-out").
    #[arg(long, default_value = "Request", value_delimiter = ',')]
    pub label: Vec<String>,
    /// Concurrent virtual users.
    #[arg(long, default_value_t = 1)]
    pub users: u32,
    /// How long to run, in real seconds.
    #[arg(long, default_value_t = 2.0)]
    pub duration: f64,
    /// Pause between a user's requests, milliseconds.
    #[arg(long, default_value_t = 20)]
    pub think_ms: u64,
    /// The JMeter CSV results file to write.
    #[arg(long)]
    pub jtl: PathBuf,
    /// A memory model of an export job (report 004): fail like an out-of-memory kill when
    /// `base + records / 1e6 * mib-per-million` exceeds this service's hard limit, read from
    /// its running task definition.
    #[arg(long)]
    pub oom_service: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub records: u64,
    #[arg(long, default_value_t = 80.0)]
    pub mib_per_million: f64,
    #[arg(long, default_value_t = 280.0)]
    pub base_mib: f64,
}

/// Where AWS calls go, shared by every command that talks to AWS.
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    /// Use the embedded AWS sandbox (state under --state-dir/sandbox) instead of AWS.
    #[arg(long)]
    pub sandbox: bool,
    /// Sandbox virtual seconds per real second (default 120).
    #[arg(long, requires = "sandbox")]
    pub time_scale: Option<f64>,
    /// AWS Region (default: the env's `region`).
    #[arg(long)]
    pub region: Option<String>,
    /// AWS profile from ~/.aws/config.
    #[arg(long)]
    pub profile: Option<String>,
    /// Send every AWS call to this endpoint (AWS_ENDPOINT_URL works too).
    #[arg(long)]
    pub endpoint_url: Option<String>,
    /// Where envctl keeps its cache, journal, locks and sandbox world.
    #[arg(long, default_value = ".envctl", env = "ENVCTL_STATE_DIR")]
    pub state_dir: PathBuf,
    /// Where apply, destroy and matrix run take the environment's lock: s3://bucket/prefix/
    /// for several machines (CI runners). Default: the env's `lock:`, else a file under
    /// --state-dir.
    #[arg(long, env = "ENVCTL_LOCK", value_name = "URL")]
    pub lock: Option<String>,
    /// How long the lock's lease lasts, in seconds; a run renews it every third of that, and
    /// a killed run's lease ends after it.
    #[arg(
        long,
        env = "ENVCTL_LOCK_TTL",
        default_value_t = 900,
        value_name = "SECS"
    )]
    pub lock_ttl: u64,
    /// Show the details on the console too: every poll, deployment count and retry (the run's
    /// log file has them either way).
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The env file.
    pub env: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print the plan as JSON (docs/plan-schema.md).
    #[arg(long)]
    pub json: bool,
    /// Exit 0 when there are no changes, 2 when there are, 1 on error (64: a usage error).
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Save the plan; `envctl apply FILE` executes it if nothing changed meanwhile.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Take over resources with matching names that envctl does not own.
    #[arg(long)]
    pub adopt: bool,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The env file, or a plan saved by `plan --out`.
    pub env: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Take over resources with matching names that envctl does not own.
    #[arg(long)]
    pub adopt: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// The longest any single wait may take (a deployment, a cluster becoming ACTIVE, a
    /// deletion), e.g. `45m`; wins over the env's `waits:` (docs/spec.md).
    #[arg(long, value_parser = parse_wait_timeout)]
    pub wait_timeout: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
pub struct DestroyArgs {
    /// The env file.
    pub env: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
    /// The longest any single wait may take (a deployment, a cluster becoming ACTIVE, a
    /// deletion), e.g. `45m`; wins over the env's `waits:` (docs/spec.md).
    #[arg(long, value_parser = parse_wait_timeout)]
    pub wait_timeout: Option<std::time::Duration>,
}

/// `--wait-timeout`: a duration like the spec's (`90s`, `45m`, `1h30m`), above zero.
fn parse_wait_timeout(text: &str) -> Result<std::time::Duration, String> {
    match crate::spec::decode::Duration::parse(text) {
        Some(d) if d.secs() > 0 => Ok(std::time::Duration::from_secs(d.secs())),
        _ => Err(format!(
            "`{text}` is not a duration above zero (e.g. 90s, 45m, 1h30m)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct PreflightArgs {
    /// The env file.
    pub env: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Findings as JSON records (file, line, column, code, message, hint).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The env file.
    pub env: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SandboxArgs {
    #[command(subcommand)]
    pub command: SandboxCommand,
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Serve the sandbox on loopback for any AWS client (AWS_ENDPOINT_URL=http://127.0.0.1:PORT).
    Serve(SandboxServeArgs),
}

#[derive(Debug, Args)]
pub struct SandboxServeArgs {
    #[arg(long, default_value_t = 4566)]
    pub port: u16,
    /// Virtual seconds per real second.
    #[arg(long)]
    pub time_scale: Option<f64>,
    /// Keep the world here between runs.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Fault injection file (JSON, see sandbox/README.md).
    #[arg(long)]
    pub faults: Option<PathBuf>,
}

/// `--set path=value` overrides, shared by every command that reads an env.
#[derive(Debug, Args, Clone, Default)]
pub struct Overrides {
    /// Override a field: services.mod-users.log_level=warn, kafka.main.brokers=4,
    /// services.*.rw_split=true (repeatable; values are YAML).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Work on a copy of the env: every AWS name envctl derives from it (cluster, capacity
    /// provider, task families, log groups, MSK clusters, DB instances, the lock) gets the
    /// suffix `-NAME`, so copies of one env coexist on one account (docs/ownership.md).
    #[arg(long, value_name = "NAME", env = "ENVCTL_COPY")]
    pub copy: Option<crate::spec::copy::CopyName>,
    #[command(flatten)]
    pub project: ProjectArgs,
}

/// Where the files an env or playbook names (`extends:`, `template:`, `env:`) may be.
#[derive(Debug, Args, Clone, Default)]
pub struct ProjectArgs {
    /// The project directory: files named inside envs and playbooks must lie under it
    /// (default: the current directory when it holds the file, else the file's directory).
    #[arg(long, value_name = "DIR", env = "ENVCTL_ROOT")]
    pub root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Env or playbook files (a playbook is recognised by its `matrix:`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Fail on warnings too.
    #[arg(long)]
    pub strict: bool,
    /// A warning code that --strict tolerates (repeatable): it is still printed, but does not
    /// fail. For a known, accepted finding, e.g. an env reproducing a measured configuration.
    #[arg(long, value_name = "CODE")]
    pub allow: Vec<String>,
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
    /// Write the schema to FILE, creating its directory (`.envctl/` in a fresh clone),
    /// instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    Env,
    Playbook,
    /// `run.json` of a results directory, with the point files under `$defs`.
    Results,
}

/// `envctl report RUN_DIR`, `envctl report compare RUN_A RUN_B` or `envctl report jtl FILE...`.
/// The run directory is an optional positional next to the subcommands, so the common
/// case reads `envctl report results/<run-id>`; a directory literally named `jtl` or
/// `compare` needs a path prefix (`./jtl`).
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    arg_required_else_help = true
)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: Option<ReportCommand>,
    /// A matrix run's results directory (`results/<run-id>`, with `run.json`)
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: ReportOutputArgs,
}

/// How a run report is compared and written.
#[derive(Debug, Args, Clone, Default)]
pub struct ReportOutputArgs {
    /// Compare against this variant of an axis (repeatable; replaces the default).
    /// Default: the playbook's `report.baseline`, else the first variant of the first
    /// axis; for `compare`, `run=<RUN_A's id>`
    #[arg(long = "baseline", value_name = "AXIS=VARIANT")]
    pub baseline: Vec<String>,
    /// Output format; default: from the --out extension, else md
    #[arg(long, value_enum)]
    pub format: Option<crate::report::RunReportFormat>,
    /// Write the report to FILE instead of stdout
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Which JMeter table the transaction figures match
    #[arg(long, value_enum, default_value_t)]
    pub convention: crate::report::jtl::Convention,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Per-label statistics (samples, errors, average, percentiles, throughput) of JMeter
    /// result files; several files are merged into one table, as for distributed load
    /// generators
    Jtl(ReportJtlArgs),
    /// The same points of two runs side by side (e.g. two releases); RUN_A is the baseline
    Compare(ReportCompareArgs),
}

#[derive(Debug, Args)]
pub struct ReportJtlArgs {
    /// JTL files (CSV with or without header, or XML)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t)]
    pub format: crate::report::ReportFormat,
    /// Which JMeter table the figures match
    #[arg(long, value_enum, default_value_t)]
    pub convention: crate::report::jtl::Convention,
    /// One table per file or per matrix run instead of one table over all files
    #[arg(long, value_enum, value_name = "file|run")]
    pub by: Option<crate::report::jtl::Grouping>,
}

#[derive(Debug, Args)]
pub struct ReportCompareArgs {
    /// The baseline run's results directory
    #[arg(value_name = "RUN_A")]
    pub run_a: PathBuf,
    /// The run compared with it
    #[arg(value_name = "RUN_B")]
    pub run_b: PathBuf,
    #[command(flatten)]
    pub output: ReportOutputArgs,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The ECS cluster whose services are imported.
    #[arg(long)]
    pub cluster: String,
    /// An MSK cluster by name (repeatable).
    #[arg(long, value_name = "NAME")]
    pub msk: Vec<String>,
    /// A DB instance identifier (repeatable); its writer's replicas come along.
    #[arg(long, value_name = "ID")]
    pub rds: Vec<String>,
    /// The env file to write, e.g. envs/pcp1.yaml.
    #[arg(long)]
    pub out: PathBuf,
    /// The env's name (default: the file name of --out without .yaml).
    #[arg(long)]
    pub env: Option<String>,
    /// The env's owner (default: the cluster's envctl:owner tag).
    #[arg(long)]
    pub owner: Option<String>,
    /// ECS capacity as TYPE:COUNT, e.g. m6i.2xlarge:10: an override of what the cluster's
    /// capacity providers say, and needed for a cluster of registered instances (envctl does
    /// not read container instances).
    #[arg(long, value_name = "TYPE:COUNT")]
    pub capacity: Option<String>,
    /// Where the templates go (default: task-defs/ next to the env file's directory).
    #[arg(long, value_name = "DIR")]
    pub task_defs: Option<PathBuf>,
    /// Overwrite existing files.
    #[arg(long)]
    pub force: bool,
    /// Exit 1 when something read is not expressed in the env (a capacity provider, a
    /// non-postgres engine...): the files are still written, the notes say what is missing.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct ParkArgs {
    /// The env file.
    pub env: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
}
