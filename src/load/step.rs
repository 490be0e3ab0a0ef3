//! One `load:` step, end to end: render and register the engine task definition, upload
//! the plan and its files, run the engines (see `engines`), download every engine's JTL,
//! `jmeter.log` and `engine.json` into `<point>/engines/<step>/`, merge the JTLs into
//! `<point>/<step>.jtl`, and record it all in the step's record.
use envctl_aws_model::status::TaskStatus;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use envctl_aws_model::engine::{
    ENV_BARRIER, ENV_BARRIER_TIMEOUT, ENV_BUCKET_REGION, ENV_FILES, ENV_PLAN, ENV_PROPERTIES,
    ENV_RESULTS, JTL_NAME, LOG_NAME, SUMMARY_NAME, task_id,
};
use sha2::{Digest, Sha256};

use super::LoadError;
use super::artifacts::{self, Artifacts};
use super::engine_def::{self, EngineVars};
use super::engines::{Ending, EngineOutcome, EngineRun};
use super::merge::merge_csv_jtls;
use crate::aws::engines::EngineCapacity;
use crate::exec::{Cancel, private_file};
use crate::results::tail::tail_lines;
use crate::results::{EngineRecord, EnginesRecord, Status, StepRecord};
use crate::session::Session;
use crate::spec::playbook::{LoadStep, expand_vars};

/// What a load step needs from the environment and the run.
pub struct LoadEnv<'a> {
    pub session: &'a Session,
    pub env: String,
    pub region: String,
    pub cluster: String,
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
    pub tags: Vec<(String, String)>,
    pub execution_role: Option<String>,
    pub task_role: Option<String>,
    /// The env's `lock:` (its bucket holds the run's load artifacts).
    pub lock: Option<String>,
    pub run_id: String,
    pub sandbox: bool,
    pub capacity: EngineCapacity,
    /// Where the step's details go (the run's log, `--verbose`), prefixed as its lines are.
    pub detail: std::sync::Arc<dyn Fn(&str) + Send + Sync>,
}

/// Where the step's files are.
pub struct LoadPaths<'a> {
    pub point_dir: &'a Path,
    /// The playbook's directory (plans are relative to it).
    pub workdir: &'a Path,
    /// The project (engine templates are in its `task-defs/`).
    pub project: &'a Path,
}

/// Lines of a failed engine's log shown in the failure.
const LOG_TAIL_LINES: usize = 5;

/// Runs the step; never fails as a Rust error: what went wrong is the record's failure.
pub async fn run(
    step: &LoadStep,
    name: &str,
    vars: &BTreeMap<String, String>,
    env: &LoadEnv<'_>,
    paths: &LoadPaths<'_>,
    cancel: &Cancel,
    say: &(dyn Fn(&str) + Send + Sync),
) -> StepRecord {
    let clock = env.session.clock.clone();
    let started_at = clock.now();
    let load = &step.load;
    let mut record = StepRecord::not_run(
        name,
        "load",
        format!(
            "{} {} on {} engine(s)",
            load.tool.value, load.plan.value, load.engines.value
        ),
        started_at,
    );
    let mut engines = EnginesRecord {
        tool: load.tool.value.clone(),
        requested: load.engines.value,
        synthetic: env.sandbox,
        ..EnginesRecord::default()
    };
    match run_engines(step, name, vars, env, paths, cancel, say, &mut engines).await {
        Ok((outcome, failure)) => {
            record.exit_code = match &outcome.ending {
                Ending::Finished => Some(0),
                Ending::EngineFailed(_) => outcome
                    .engines
                    .iter()
                    .find_map(|e| e.task.exit_code.filter(|c| *c != 0)),
                _ => None,
            };
            record.timed_out = outcome.ending == Ending::TimedOut;
            record.status = match (&outcome.ending, &failure) {
                (Ending::Interrupted, _) => Status::Interrupted,
                (Ending::Finished, None) => Status::Passed,
                _ => Status::Failed,
            };
            record.failure = failure;
            if engines.samples > 0 {
                record.jtl_file = Some(format!("{}.jtl", safe(name)));
            }
        }
        Err(e) => record.failure = Some(format!("load step {name}: {e}")),
    }
    record.finished_at = clock.now();
    record.duration_s = record.finished_at - started_at;
    record.engines = Some(engines);
    say(&format!(
        "{name}: {} in {}{}",
        if record.status == Status::Passed {
            "ok"
        } else {
            "FAILED"
        },
        crate::exec::progress::took(clock.as_ref(), record.duration_s),
        record
            .failure
            .as_deref()
            .map(|f| format!(": {f}"))
            .unwrap_or_default()
    ));
    record
}

#[allow(clippy::too_many_arguments)] // the step's parts, kept apart for reading
async fn run_engines(
    step: &LoadStep,
    name: &str,
    vars: &BTreeMap<String, String>,
    env: &LoadEnv<'_>,
    paths: &LoadPaths<'_>,
    cancel: &Cancel,
    say: &(dyn Fn(&str) + Send + Sync),
    record: &mut EnginesRecord,
) -> Result<(EngineOutcome, Option<String>), LoadError> {
    let load = &step.load;
    let session = env.session;
    let tool = load.tool.value.as_str();
    let template = engine_def::template_path(paths.project, tool);
    let td = engine_def::render(
        &template,
        tool,
        &EngineVars {
            env: &env.env,
            region: &env.region,
            cluster: &env.cluster,
            execution_role: env.execution_role.as_deref(),
            task_role: env.task_role.as_deref(),
        },
    )?;
    let mut owned = env.tags.clone();
    owned.push(("envctl:role".into(), "load-engine".into()));
    let (td_arn, registered) = engine_def::ensure_registered(session, &td, &owned).await?;
    if registered {
        (env.detail)(&format!("{name}: registered {}", td.family));
    }
    let artifacts = Artifacts::for_run(env.lock.as_deref(), &env.run_id, env.sandbox)?;
    if env.sandbox {
        // On AWS the bucket is the user's; the sandbox's is made on first use.
        crate::aws::engines::create_bucket(&session.clients.s3, &artifacts.bucket).await?;
    }
    let mut uris = Vec::new();
    let mut uploaded = 0;
    for file in std::iter::once(&load.plan).chain(&load.files) {
        let path = paths.workdir.join(expand_vars(&file.value, vars));
        if !path.is_file() && env.sandbox {
            // Preflight warned: the sandbox's engines run the demo workload without it.
            uris.push(artifacts.uri(&format!(
                "{}load/absent/{}",
                artifacts.run_prefix,
                path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
            )));
            continue;
        }
        let (key, sent) = artifacts::upload(session, &artifacts, &path).await?;
        uploaded += usize::from(sent);
        uris.push(artifacts.uri(&key));
    }
    if uploaded > 0 {
        (env.detail)(&format!(
            "{name}: uploaded {uploaded} file(s) to s3://{}/{}",
            artifacts.bucket, artifacts.run_prefix
        ));
    }
    let point = vars.get("POINT").map(String::as_str).unwrap_or("point");
    let step_prefix = format!(
        "{}points/{}/{}/",
        artifacts.run_prefix,
        safe(point),
        safe(name)
    );
    let barrier_key = format!("{step_prefix}barrier.json");
    let results_prefix = format!("{step_prefix}engines/");
    let properties: BTreeMap<String, String> = load
        .properties
        .iter()
        .map(|(k, v)| (k.clone(), expand_vars(&v.value.0, vars)))
        .collect();
    let barrier = load.barrier.value.0;
    let environment: Vec<(String, String)> = vec![
        (ENV_PLAN.into(), uris[0].clone()),
        (ENV_FILES.into(), uris[1..].join("\n")),
        (
            ENV_PROPERTIES.into(),
            serde_json::to_string(&properties).unwrap_or_else(|_| "{}".into()),
        ),
        (ENV_BARRIER.into(), artifacts.uri(&barrier_key)),
        // The engine waits a little longer than envctl, which decides and stops it.
        (
            ENV_BARRIER_TIMEOUT.into(),
            (barrier.as_secs() + 60).to_string(),
        ),
        (ENV_RESULTS.into(), artifacts.uri(&results_prefix)),
        // The engines sign their S3 requests for the bucket's Region, which may not be
        // the task's (S3 answers any other with 301 PermanentRedirect).
        (
            ENV_BUCKET_REGION.into(),
            session.s3_for(&artifacts.bucket).await?.region,
        ),
    ];
    let started_by = started_by(
        &env.run_id,
        point,
        vars.get("REPEAT").map(String::as_str),
        name,
    );
    let token_seed = super::engines::run_task_token_seed(
        &env.run_id,
        point,
        vars.get("REPEAT").map_or("1", String::as_str),
        name,
        session.clock.now(),
    );
    let mut tags = env.tags.clone();
    tags.push(("envctl:run".into(), env.run_id.clone()));
    let container = td.container_definitions[0].name.clone();
    let capacity = match &load.capacity {
        Some(c) if !c.value.eq_ignore_ascii_case("fargate") => {
            EngineCapacity::Provider(c.value.clone())
        }
        Some(_) => EngineCapacity::Fargate,
        None => env.capacity.clone(),
    };
    let say_engines = |text: &str| say(&format!("{name}: {text}"));
    let detail_engines = |text: &str| (env.detail)(&format!("{name}: {text}"));
    let engines = EngineRun {
        session,
        cluster: &env.cluster,
        task_definition: &td_arn,
        container: &container,
        capacity: &capacity,
        subnets: &env.subnets,
        security_groups: &env.security_groups,
        started_by: &started_by,
        token_seed: &token_seed,
        environment: &environment,
        tags: &tags,
        engines: load.engines.value,
        barrier_bucket: &artifacts.bucket,
        barrier_key: &barrier_key,
        barrier_timeout: barrier,
        timeout: load.timeout.value.0,
        cancel,
        detail: &detail_engines,
    };
    let outcome = engines.run(&say_engines).await;
    record.started = outcome.engines.len() as u32;
    record.run_task_calls = outcome.run_task_calls;
    record.stop_task_calls = outcome.stop_task_calls;
    record.start_s = outcome.barrier_opened_at.map(|b| b - outcome.started_at);
    record.left_running = outcome.left_running.clone();
    // Results: whatever each engine put there, also after a failure (its log says why).
    let dir = paths.point_dir.join("engines").join(safe(name));
    private_file::create_dir_all(&dir).map_err(|source| LoadError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut jtls: Vec<PathBuf> = Vec::new();
    for e in &outcome.engines {
        let prefix = format!("{results_prefix}{}/", task_id(&e.task.arn));
        let rel = |file: &str| format!("engines/{}/{}.{file}", safe(name), e.name);
        let jtl = dir.join(format!("{}.{JTL_NAME}", e.name));
        let log = dir.join(format!("{}.{LOG_NAME}", e.name));
        let summary = dir.join(format!("{}.{SUMMARY_NAME}", e.name));
        let has_jtl = artifacts::download_jtl(session, &artifacts.bucket, &prefix, &jtl).await?;
        let has_log = artifacts::download(
            session,
            &artifacts.bucket,
            &format!("{prefix}{LOG_NAME}"),
            &log,
        )
        .await?;
        let mut max_cpu_percent = None;
        if artifacts::download(
            session,
            &artifacts.bucket,
            &format!("{prefix}{SUMMARY_NAME}"),
            &summary,
        )
        .await?
            && let Ok(text) = std::fs::read_to_string(&summary)
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        {
            if v.get("synthetic").and_then(serde_json::Value::as_bool) == Some(true) {
                record.synthetic = true;
            }
            max_cpu_percent = v.get("max_cpu_percent").and_then(serde_json::Value::as_f64);
        }
        if let Some(cpu) = max_cpu_percent.filter(|c| *c > super::SATURATED_CPU_PERCENT) {
            record.saturated = true;
            say(&format!(
                "{name}: {} ran at {cpu:.0}% of its vCPU for a minute: its latencies measure the generator",
                e.name
            ));
        }
        if has_jtl {
            jtls.push(jtl);
        }
        record.engines.push(EngineRecord {
            name: e.name.clone(),
            task_arn: e.task.arn.clone(),
            last_status: e.task.last_status.clone(),
            exit_code: e.task.exit_code,
            stopped_reason: e.task.stopped_reason.clone(),
            jtl_file: has_jtl.then(|| rel(JTL_NAME)),
            log_file: has_log.then(|| rel(LOG_NAME)),
            first_sample_ms: None,
            max_cpu_percent,
        });
    }
    if !jtls.is_empty() {
        let merged_path = paths.point_dir.join(format!("{}.jtl", safe(name)));
        let merged = merge_csv_jtls(&jtls, &merged_path)?;
        record.samples = merged.samples;
        record.start_skew_s = merged.start_skew_s();
        let mut firsts = merged.first_sample_ms.iter();
        for e in record.engines.iter_mut().filter(|e| e.jtl_file.is_some()) {
            e.first_sample_ms = firsts.next().copied().flatten();
        }
    }
    let failure = failure_of(&outcome, record, paths.point_dir);
    Ok((outcome, failure))
}

/// The point's failure for a step whose engines did not all finish: the engine named, its
/// exit code and stoppedReason, and the end of its log.
fn failure_of(outcome: &EngineOutcome, record: &EnginesRecord, point_dir: &Path) -> Option<String> {
    let log_tail = |name: &str| -> String {
        record
            .engines
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.log_file.as_ref())
            .map(|f| tail_lines(&point_dir.join(f), LOG_TAIL_LINES))
            .filter(|t| !t.is_empty())
            .map(|t| format!("; its log ends with:\n    {}", t.join("\n    ")))
            .unwrap_or_default()
    };
    let mut text = match &outcome.ending {
        Ending::Finished => return left_running(record),
        Ending::NotStarted(why) => format!("the engines did not start: {why}"),
        Ending::EngineFailed(why) => {
            let engine = why.split_whitespace().next().unwrap_or_default();
            format!("{why}{}", log_tail(engine))
        }
        Ending::TimedOut => {
            let running: Vec<&str> = outcome
                .engines
                .iter()
                .filter(|e| {
                    e.task.last_status != TaskStatus::Stopped
                        || e.task
                            .stopped_reason
                            .as_deref()
                            .is_some_and(|r| r.starts_with("envctl:"))
                })
                .map(|e| e.name.as_str())
                .collect();
            format!(
                "timed out with {} still running: stopped",
                running.join(", ")
            )
        }
        Ending::Interrupted => "interrupted: every engine stopped".into(),
    };
    if let Some(left) = left_running(record) {
        text.push_str(&format!("; {left}"));
    }
    Some(text)
}

fn left_running(record: &EnginesRecord) -> Option<String> {
    (!record.left_running.is_empty()).then(|| {
        format!(
            "{} still not STOPPED after StopTask",
            record.left_running.join(", ")
        )
    })
}

/// `startedBy` for the step's engines: unique per run, point, repeat and step, within
/// ECS's 36 characters.
fn started_by(run_id: &str, point: &str, repeat: Option<&str>, step: &str) -> String {
    let digest = Sha256::digest(format!(
        "{run_id}\n{point}\n{}\n{step}",
        repeat.unwrap_or("1")
    ));
    format!("envctl-load-{}", &hex::encode(digest)[..16])
}

fn safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}
