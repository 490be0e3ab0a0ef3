//! How a matrix run is run: its id, where its results and state go, what cancels it, what
//! it reports to, and whether it puts the environment back. Filled by `envctl matrix` (and
//! by tests), read by the runner, each point and the restore.
use std::path::PathBuf;
use std::sync::Arc;

use crate::exec::progress::Progress;
use crate::lock::Fence;
use crate::spec::playbook::TeardownPolicy;

pub struct MatrixOptions {
    pub run_id: String,
    pub results_root: PathBuf,
    pub state_dir: PathBuf,
    /// Overrides the playbook's teardown policy.
    pub teardown: Option<TeardownPolicy>,
    pub sandbox: bool,
    /// The sandbox endpoint, exported to workload commands as AWS_ENDPOINT_URL.
    pub endpoint_url: Option<String>,
    pub resume: bool,
    /// Put the environment back to what it ran before the first point (`--restore`).
    pub restore: RestoreMode,
    pub cancel: crate::exec::Cancel,
    /// Confirms the run still holds the environment's lease before each change it makes
    /// (a point's switch, the teardown, the restore); `None` when no lock is held (tests).
    pub fence: Option<Fence>,
    pub progress: Arc<dyn Progress>,
    /// Where to say what happens (the CLI prints it; tests discard it).
    pub say: Arc<dyn Fn(&str) + Send + Sync>,
    /// Where the details go: the run's log file, and the console with `--verbose` (a load
    /// step's engines starting, its heartbeats).
    pub detail: Arc<dyn Fn(&str) + Send + Sync>,
    /// `--lock` / `ENVCTL_LOCK`: where the run's lock is, before the env's `lock:`; load
    /// engines keep their plans and results beside it.
    pub lock_url: Option<String>,
}

/// Whether a run records a baseline and converges back to it at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RestoreMode {
    /// Restore when the environment carries envctl's adopted marker (it existed before
    /// envctl took it over), and tear down otherwise.
    #[default]
    Auto,
    /// `--restore`.
    On,
    /// `--no-restore`: the teardown policy applies, even to an adopted environment.
    Off,
}
