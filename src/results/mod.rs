//! The results of a matrix run, as files: `results/<run-id>/run.json` and one directory per
//! point. The schema is versioned and documented in docs/results-schema.md (JSON Schema:
//! `envctl schema results`); `report` reads only these files.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub mod engines;
pub mod resume;
pub mod tail;

pub use engines::{EngineRecord, EnginesRecord};

/// Version of the results layout; readers refuse newer major versions.
pub const RESULTS_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Pending,
    Running,
    Passed,
    Failed,
    /// Not run: fail_fast stopped the matrix, the ramp ended, or the deadline passed.
    Skipped,
    Interrupted,
}

/// `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    pub schema_version: u32,
    pub run_id: String,
    pub envctl_version: String,
    pub playbook: FileRef,
    pub env: FileRef,
    /// `sandbox` or `aws`.
    pub target: String,
    /// True when every metric came from the sandbox's synthetic series.
    pub synthetic_metrics: bool,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Axis names in declared order, each with its variant names in declared order.
    pub axes: Vec<AxisRecord>,
    /// Baseline variant per axis, for deltas.
    pub baseline: BTreeMap<String, String>,
    /// Point ids in the order they ran (or will run).
    pub order: Vec<String>,
    pub estimates: OrderEstimates,
    /// Seconds since the Unix epoch (virtual time for sandbox runs).
    pub started_at: f64,
    pub finished_at: Option<f64>,
    pub status: Status,
    pub points: Vec<PointSummary>,
    /// For a ramp axis: the last variant that passed, in declared order.
    pub ramp: Option<RampRecord>,
    pub teardown: TeardownRecord,
    /// With `--restore`: putting the environment back to `baseline.json`, and the check
    /// that it is (absent for runs without restore, and in results written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<RestoreRecord>,
    /// Why the run stopped changing the environment: its lease was broken (`envctl unlock
    /// --force`) or taken over by another run, which holds the environment now. The run
    /// made no switch and no teardown after it found out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_lost: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FileRef {
    pub name: String,
    pub path: String,
    /// sha256 of the file's content (first 16 bytes, hex).
    pub content_hash: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AxisRecord {
    pub name: String,
    pub variants: Vec<String>,
}

/// Estimated transition seconds of three orders of the same points.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct OrderEstimates {
    pub envctl_order_s: f64,
    pub declared_order_s: f64,
    pub rebuild_per_point_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PointSummary {
    pub id: String,
    /// Axis name -> variant name.
    pub axes: BTreeMap<String, String>,
    /// 1-based repeat number.
    pub repeat: u32,
    pub status: Status,
    pub started_at: Option<f64>,
    pub finished_at: Option<f64>,
    /// Relative to the run directory: `points/<id>`.
    pub dir: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RampRecord {
    pub axis: String,
    /// Last passing variant per combination of the other axes (`"log_level=info"` -> `r2m`).
    pub limits: BTreeMap<String, Option<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TeardownRecord {
    pub policy: String,
    pub performed: bool,
    pub status: Option<Status>,
    pub detail: Option<String>,
}

/// What `--restore` did at the end of the run, and what the observe after it found.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RestoreRecord {
    /// Relative to the run directory: `baseline.json`.
    pub baseline_file: String,
    /// Whether the restore plan was executed (not when the lock was lost to another run).
    pub performed: bool,
    /// Passed when every resource matches the baseline after the restore.
    pub status: Option<Status>,
    pub detail: Option<String>,
    /// The restore plan's estimate and the time it took (virtual seconds in the sandbox).
    pub estimated_s: f64,
    pub actual_s: f64,
    pub mutating_calls: u64,
    /// Per resource of the baseline: equal to it after the restore, or what differs.
    pub verification: Vec<ResourceVerification>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceVerification {
    /// `ecs/service/mod-users`, `kafka/cluster/main`, `rds/instance/pcp1-db`, ...
    pub resource: String,
    pub ok: bool,
    /// `desired_count: 3, baseline 2`; empty when ok.
    pub differences: Vec<String>,
}

/// `points/<id>/point.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PointRecord {
    pub id: String,
    pub axes: BTreeMap<String, String>,
    pub repeat: u32,
    /// The variant vars the steps saw.
    pub vars: BTreeMap<String, String>,
    pub status: Status,
    pub started_at: f64,
    pub finished_at: Option<f64>,
    pub transition: TransitionRecord,
    pub steps: Vec<StepRecord>,
    /// `effective.json`: configuration read back from AWS when the point ran.
    pub effective_file: String,
    /// `metrics.json`.
    pub metrics_file: Option<String>,
    pub failure: Option<String>,
    /// MSK operations (an automatic version upgrade, patching, anyone's update) that
    /// overlapped the point's workload window: its measurement may show them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub msk_operations: Vec<MskOperationNote>,
}

/// An MSK cluster operation that overlapped a point's workload window, as
/// ListClusterOperationsV2 lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MskOperationNote {
    /// The MSK cluster's name.
    pub cluster: String,
    /// `UPDATE_CLUSTER_KAFKA_VERSION`, `UPDATE_BROKER_STORAGE`, ...
    pub operation_type: String,
    /// Its state when the window ended.
    pub state: String,
    pub started_at: Option<f64>,
    /// None while it was still running.
    pub ended_at: Option<f64>,
}

/// What it took to put the environment into this point's configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TransitionRecord {
    /// Resources changed, with the action kind (`ecs/service/mod-users: rolling update`).
    pub changes: Vec<String>,
    pub estimated_s: f64,
    pub actual_s: f64,
    pub mutating_calls: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StepRecord {
    pub name: String,
    /// `run`, `wait` or a member of a `parallel` group (`group` names it).
    pub kind: String,
    pub group: Option<String>,
    /// The command with variables expanded (no secrets are ever expanded into it).
    pub command: Option<String>,
    pub started_at: f64,
    pub finished_at: f64,
    pub duration_s: f64,
    pub exit_code: Option<i32>,
    pub status: Status,
    /// Relative to the point directory.
    pub stdout_file: Option<String>,
    pub stderr_file: Option<String>,
    /// The JMeter results copied into the point directory, if the step declared one.
    pub jtl_file: Option<String>,
    pub timed_out: bool,
    /// A `load:` step's engines (absent for other steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engines: Option<EnginesRecord>,
    /// Why the step failed, when more can be said than its exit code (a load step names
    /// the engine, its stoppedReason and the end of its log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl StepRecord {
    /// A step that has not run (yet): failed until it says otherwise, started and ended at
    /// `at`, with no output. A step that cannot start keeps it as it is.
    pub fn not_run(name: &str, kind: &str, command: String, at: f64) -> StepRecord {
        StepRecord {
            name: name.to_string(),
            kind: kind.into(),
            group: None,
            command: Some(command),
            started_at: at,
            finished_at: at,
            duration_s: 0.0,
            exit_code: None,
            status: Status::Failed,
            stdout_file: None,
            stderr_file: None,
            jtl_file: None,
            timed_out: false,
            engines: None,
            failure: None,
        }
    }
}

/// `points/<id>/effective.json`: what AWS ran, read back (not the spec).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct EffectiveConfig {
    pub services: BTreeMap<String, EffectiveService>,
    pub kafka: BTreeMap<String, EffectiveKafka>,
    pub rds: BTreeMap<String, EffectiveDb>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EffectiveService {
    pub task_definition: String,
    pub image: String,
    pub cpu: u32,
    pub memory: u32,
    pub memory_reservation: Option<u32>,
    pub desired_count: u32,
    pub running_count: u32,
    /// Environment variables, sorted; secrets are ARNs in `secrets`, never values.
    pub environment: BTreeMap<String, String>,
    pub secrets: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EffectiveKafka {
    pub state: String,
    pub broker_type: String,
    pub brokers: u32,
    pub kafka_version: String,
    pub storage_gb: u32,
    pub server_properties: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EffectiveDb {
    /// `writer` or `reader`.
    pub role: String,
    pub class: String,
    pub status: String,
    pub engine_version: String,
}

/// `points/<id>/metrics.json`: CloudWatch series of the point's window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct MetricsRecord {
    pub start: f64,
    pub end: f64,
    pub period_s: u32,
    /// True when CloudWatch answered with synthetic (sandbox) data.
    pub synthetic: bool,
    pub series: Vec<MetricSeries>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricSeries {
    /// What the series is about: `ecs`, `rds` or `kafka`.
    pub source: String,
    /// Service name, DB instance id or `<cluster> broker <n>`.
    pub resource: String,
    /// For RDS: `writer` or `reader`.
    pub role: Option<String>,
    pub namespace: String,
    pub metric: String,
    pub dimensions: BTreeMap<String, String>,
    /// Average or Maximum.
    pub stat: String,
    pub unit: String,
    /// Seconds since the Unix epoch, ascending.
    pub timestamps: Vec<f64>,
    pub values: Vec<f64>,
}

/// The `content_hash` of a file's bytes: sha256, its first 16 bytes in hex.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..16])
}

/// A point id that is safe as a directory name: `kafka=zookeeper-m5,job=create-25k#2`
/// becomes `kafka-zookeeper-m5_job-create-25k_r2`.
pub fn point_dir_name(axes: &[(String, String)], repeat: u32, repeats: u32) -> String {
    let mut name: String = axes
        .iter()
        .map(|(a, v)| format!("{a}-{v}"))
        .collect::<Vec<_>>()
        .join("_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if repeats > 1 {
        name.push_str(&format!("_r{repeat}"));
    }
    name
}

/// A results directory, read.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
    pub run: RunRecord,
    pub points: Vec<(PointRecord, EffectiveConfig, Option<MetricsRecord>)>,
    /// Files a point names that could not be read (a missing or invalid `metrics.json`):
    /// the point is kept without them, so one lost file does not hide the other points.
    pub unreadable: Vec<UnreadableFile>,
}

/// A point's file that [`RunDir::read`] skipped, and why.
#[derive(Debug, Clone)]
pub struct UnreadableFile {
    /// The point's id.
    pub point: String,
    pub error: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not valid results JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error(
        "{path}: results schema version {found} is newer than this envctl reads ({RESULTS_SCHEMA_VERSION})"
    )]
    Version { path: String, found: u32 },
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ResultsError> {
    let bytes = std::fs::read(path).map_err(|source| ResultsError::Io {
        path: path.display().to_string(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| ResultsError::Json {
        path: path.display().to_string(),
        source,
    })
}

/// Writes JSON atomically (temp file and rename), so a killed run never leaves half a file;
/// private (0600, directories 0700), with secrets masked (`crate::redact`): results hold
/// configuration read back from AWS and the variables steps saw.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let mut doc = serde_json::to_value(value).map_err(std::io::Error::other)?;
    let bytes = if crate::redact::json_has_secret(&doc) {
        crate::redact::json(&mut doc);
        // A `Value` orders keys alphabetically; readers look fields up by name.
        serde_json::to_vec_pretty(&doc)
    } else {
        // Nothing to mask: the fields in their declared order, as people read them.
        serde_json::to_vec_pretty(value)
    }
    .map_err(std::io::Error::other)?;
    crate::exec::private_file::write_atomic(path, &bytes)
}

impl RunDir {
    pub fn read(path: &Path) -> Result<RunDir, ResultsError> {
        let run: RunRecord = read_json(&path.join("run.json"))?;
        if run.schema_version > RESULTS_SCHEMA_VERSION {
            return Err(ResultsError::Version {
                path: path.display().to_string(),
                found: run.schema_version,
            });
        }
        let mut points = Vec::new();
        let mut unreadable = Vec::new();
        for p in &run.points {
            let dir = path.join(&p.dir);
            let point_file = dir.join("point.json");
            if !point_file.exists() {
                continue; // not run (skipped or pending)
            }
            let record: PointRecord = read_json(&point_file)?;
            let effective: EffectiveConfig =
                read_json(&dir.join(&record.effective_file)).unwrap_or_default();
            let metrics = match &record.metrics_file {
                Some(f) => match read_json::<MetricsRecord>(&dir.join(f)) {
                    Ok(metrics) => Some(metrics),
                    Err(error) => {
                        unreadable.push(UnreadableFile {
                            point: record.id.clone(),
                            error: error.to_string(),
                        });
                        None
                    }
                },
                None => None,
            };
            points.push((record, effective, metrics));
        }
        Ok(RunDir {
            path: path.to_path_buf(),
            run,
            points,
            unreadable,
        })
    }
}
