//! Load generation: the checks a workload passes before anything is spent (`preflight`,
//! with what a JMeter plan and a command line name: `jmx`, `command`), and `load:` steps
//! run as engines on ECS (`step`): the engine task definition (`engine_def`), the plan
//! uploaded to S3 (`artifacts`), the engines started behind a barrier and watched
//! (`engines`), and their results merged from raw samples (`merge`).
pub mod artifacts;
pub mod checks;
pub mod command;
pub mod engine_def;
pub mod engines;
pub mod jmx;
pub mod merge;
pub mod step;

use crate::aws::AwsError;

/// An engine above this share of its vCPU for a minute is saturated: the latencies it
/// records include its own queueing.
pub const SATURATED_CPU_PERCENT: f64 = 80.0;

/// Why a load step could not run its engines.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Template { path: String, message: String },
    #[error("{0}")]
    Location(String),
    #[error(transparent)]
    Aws(#[from] AwsError),
    #[error(transparent)]
    Merge(#[from] merge::MergeError),
}
