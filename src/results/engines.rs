//! `engines` of a load step's record: how many engines produced the step's samples, how
//! they started (RunTask calls, time to the barrier, start skew) and how each ended.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnginesRecord {
    /// `jmeter`.
    pub tool: String,
    /// Engines asked for, and started by RunTask.
    pub requested: u32,
    pub started: u32,
    pub run_task_calls: u32,
    pub stop_task_calls: u32,
    /// Seconds from the step's start (the first RunTask) to the barrier's opening (every
    /// engine RUNNING); `None` when it never opened.
    pub start_s: Option<f64>,
    /// Seconds between the engines' first samples (the latest minus the earliest).
    pub start_skew_s: Option<f64>,
    /// Samples in the merged JTL (all engines).
    pub samples: u64,
    /// The engines ran the sandbox's demo workload: the samples measure nothing real.
    pub synthetic: bool,
    /// Whether an engine's CPU was above 80% of its vCPU for a minute or more: the
    /// latencies then measure the generator, not the system.
    pub saturated: bool,
    pub engines: Vec<EngineRecord>,
    /// Engines still not STOPPED when envctl gave up waiting (should be empty).
    pub left_running: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EngineRecord {
    pub name: String,
    pub task_arn: String,
    pub last_status: String,
    pub exit_code: Option<i32>,
    pub stopped_reason: Option<String>,
    /// Relative to the point directory.
    pub jtl_file: Option<String>,
    pub log_file: Option<String>,
    /// `timeStamp` of its first sample, ms since the epoch.
    pub first_sample_ms: Option<i64>,
    /// Highest one-minute average CPU, percent of the engine's vCPU, when collected.
    pub max_cpu_percent: Option<f64>,
}
