//! Running a point's workload: shell commands with a timeout and the point's variables,
//! waits on the run's clock, and parallel groups whose members are timed on their own.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::exec::{Clock, private_file};
use crate::load::step::{self as load_step, LoadEnv, LoadPaths};
use crate::results::tail::tail_lines;
use crate::results::{Status, StepRecord};
use crate::spec::playbook::{LoadStep, RunStep, Step, expand_vars};
use crate::spec::source::is_inside;

pub struct StepContext<'a> {
    /// The point's results directory (`RESULTS_DIR`).
    pub point_dir: PathBuf,
    /// Where commands run: the playbook's directory.
    pub workdir: PathBuf,
    /// The project (see `spec::source::project_root`): a step's JTL outside it and outside
    /// the point directory is not copied.
    pub project: PathBuf,
    /// Variables for `${name}` and the process environment.
    pub vars: BTreeMap<String, String>,
    /// Run `demo:` instead of `run:` (the sandbox).
    pub demo: bool,
    pub clock: Arc<dyn Clock>,
    pub cancel: crate::exec::Cancel,
    /// What `load:` steps need to start engines.
    pub load: LoadEnv<'a>,
}

fn step_name(step: &RunStep, index: usize) -> String {
    step.name
        .clone()
        .unwrap_or_else(|| format!("step-{}", index + 1))
}

fn load_name(step: &LoadStep, index: usize) -> String {
    step.name
        .clone()
        .unwrap_or_else(|| format!("step-{}", index + 1))
}

/// A `load:` step: its engines on ECS (see `crate::load::step`).
async fn run_load(
    step: &LoadStep,
    name: &str,
    group: Option<&str>,
    ctx: &StepContext<'_>,
    on_event: &(dyn Fn(&str) + Send + Sync),
) -> StepRecord {
    on_event(&format!(
        "{name}: {} {} on {}",
        step.load.tool.value,
        step.load.plan.value,
        crate::plan::estimate::plural(step.load.engines.value as usize, "engine", "engines")
    ));
    let paths = LoadPaths {
        point_dir: &ctx.point_dir,
        workdir: &ctx.workdir,
        project: &ctx.project,
    };
    let mut record = load_step::run(
        step,
        name,
        &ctx.vars,
        &ctx.load,
        &paths,
        &ctx.cancel,
        on_event,
    )
    .await;
    record.group = group.map(str::to_string);
    record
}

/// Runs the steps in order; a failing step ends the point (the rest are not run).
pub async fn run_steps(
    steps: &[Step],
    ctx: &StepContext<'_>,
    on_event: &(dyn Fn(&str) + Send + Sync),
) -> Vec<StepRecord> {
    let mut records = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if ctx.cancel.load(Ordering::SeqCst) {
            break;
        }
        let batch = match step {
            Step::Run(run) => vec![run_command(run, &step_name(run, i), None, ctx, on_event).await],
            Step::Load(load) => {
                vec![run_load(load, &load_name(load, i), None, ctx, on_event).await]
            }
            Step::Wait(w) => vec![wait(w.wait.value.0, i, ctx, on_event).await],
            Step::Parallel(group) => {
                let name = format!("parallel-{}", i + 1);
                let futures = group.parallel.iter().enumerate().map(|(j, s)| {
                    let name = name.clone();
                    async move {
                        match s {
                            Step::Run(run) => {
                                run_command(
                                    run,
                                    &step_name(run, j).replace("step-", &format!("{name}-")),
                                    Some(name.as_str()),
                                    ctx,
                                    on_event,
                                )
                                .await
                            }
                            Step::Load(load) => {
                                run_load(
                                    load,
                                    &load_name(load, j).replace("step-", &format!("{name}-")),
                                    Some(name.as_str()),
                                    ctx,
                                    on_event,
                                )
                                .await
                            }
                            Step::Wait(w) => wait(w.wait.value.0, j, ctx, on_event).await,
                            Step::Parallel(_) => failed_record(
                                &name,
                                "parallel groups cannot be nested",
                                ctx.clock.now(),
                            ),
                        }
                    }
                });
                join_all(futures).await
            }
        };
        let failed = batch.iter().any(|r| r.status != Status::Passed);
        records.extend(batch);
        if failed {
            break;
        }
    }
    records
}

/// Runs futures concurrently on the current task (no spawning: they borrow the context).
async fn join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let futures: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    let mut pending = futures;
    let mut slots: Vec<usize> = (0..pending.len()).collect();
    std::future::poll_fn(|cx| {
        let mut i = 0;
        while i < pending.len() {
            if let std::task::Poll::Ready(out) = pending[i].as_mut().poll(cx) {
                outputs[slots[i]] = Some(out);
                pending.swap_remove(i);
                slots.swap_remove(i);
            } else {
                i += 1;
            }
        }
        if pending.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

fn failed_record(name: &str, reason: &str, now: f64) -> StepRecord {
    StepRecord::not_run(name, "run", reason.to_string(), now)
}

async fn wait(
    d: Duration,
    index: usize,
    ctx: &StepContext<'_>,
    on_event: &(dyn Fn(&str) + Send + Sync),
) -> StepRecord {
    let start = ctx.clock.now();
    on_event(&format!(
        "wait {}",
        crate::plan::estimate::human(d.as_secs_f64())
    ));
    let mut left = d;
    let mut status = Status::Passed;
    // In slices, so an interrupt is noticed within seconds (of the run's clock).
    while !left.is_zero() {
        if ctx.cancel.load(Ordering::SeqCst) {
            status = Status::Interrupted;
            break;
        }
        let slice = left.min(Duration::from_secs(5));
        ctx.clock.sleep(slice).await;
        left -= slice;
    }
    let end = ctx.clock.now();
    StepRecord {
        name: format!("wait-{}", index + 1),
        kind: "wait".into(),
        group: None,
        command: None,
        started_at: start,
        finished_at: end,
        duration_s: end - start,
        exit_code: None,
        status,
        stdout_file: None,
        stderr_file: None,
        jtl_file: None,
        timed_out: false,
        engines: None,
        failure: None,
    }
}

fn safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

async fn run_command(
    step: &RunStep,
    name: &str,
    group: Option<&str>,
    ctx: &StepContext<'_>,
    on_event: &(dyn Fn(&str) + Send + Sync),
) -> StepRecord {
    let template = match (&step.demo, ctx.demo) {
        (Some(demo), true) => demo.value.clone(),
        _ => step.run.value.clone(),
    };
    let command = expand_vars(&template, &ctx.vars);
    let file = safe(name);
    let steps_dir = ctx.point_dir.join("steps");
    let started_at = ctx.clock.now();
    let mut record = failed_record(name, "", started_at);
    record.group = group.map(str::to_string);
    record.command = Some(command.clone());
    if let Err(e) = private_file::create_dir_all(&steps_dir) {
        record.command = Some(format!(
            "{command} (cannot create {}: {e})",
            steps_dir.display()
        ));
        return record;
    }
    let stdout_path = steps_dir.join(format!("{file}.stdout"));
    let stderr_path = steps_dir.join(format!("{file}.stderr"));
    let (Ok(stdout), Ok(stderr)) = (
        private_file::create(&stdout_path),
        private_file::create(&stderr_path),
    ) else {
        return record;
    };
    record.stdout_file = Some(format!("steps/{file}.stdout"));
    record.stderr_file = Some(format!("steps/{file}.stderr"));
    on_event(&format!("{name}: {command}"));
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&command)
        .current_dir(&ctx.workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true);
    cmd.envs(&ctx.vars);
    if let Some(env) = &step.env {
        cmd.envs(
            env.iter()
                .map(|(k, v)| (k.clone(), expand_vars(&v.0, &ctx.vars))),
        );
    }
    // Its own process group, so a timeout stops the command and everything it started.
    cmd.process_group(0);
    let real_start = std::time::Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            record.command = Some(format!("{command} (cannot start: {e})"));
            return record;
        }
    };
    let timeout = step.timeout.value.0;
    let (exit, timed_out, interrupted) = loop {
        match tokio::time::timeout(Duration::from_millis(200), child.wait()).await {
            Ok(result) => break (result.ok().and_then(|s| s.code()), false, false),
            Err(_) => {
                let over = real_start.elapsed() >= timeout;
                let cancelled = ctx.cancel.load(Ordering::SeqCst);
                if over || cancelled {
                    if let Some(pid) = child.id() {
                        kill_group(pid);
                    }
                    let _ = child.kill().await;
                    break (None, over, cancelled);
                }
            }
        }
    };
    let finished_at = ctx.clock.now();
    record.finished_at = finished_at;
    // On the run's clock, like `started_at`, `finished_at`, the wait steps and the workload
    // window they add up to: a report never mixes two clocks (issue 26 item 11). On the
    // sandbox that clock is simulated; the process's real seconds are only said on the
    // console, labelled. (Its `timeout` is real: it bounds a real process.)
    record.duration_s = finished_at - started_at;
    let real_s = real_start.elapsed().as_secs_f64();
    record.exit_code = exit;
    record.timed_out = timed_out;
    record.status = match (exit, interrupted) {
        (_, true) => Status::Interrupted,
        (Some(0), _) => Status::Passed,
        _ => Status::Failed,
    };
    if let Some(jtl) = &step.jtl {
        record.jtl_file = collect_jtl(
            &expand_vars(&jtl.value, &ctx.vars),
            &ctx.point_dir,
            &ctx.project,
            &file,
        );
    }
    let clock = if ctx.demo {
        format!(" (simulated; {real_s:.1}s real)")
    } else {
        String::new()
    };
    let mut summary = format!(
        "{name}: {} in {:.1}s{clock}{}",
        if record.status == Status::Passed {
            "ok"
        } else {
            "FAILED"
        },
        record.duration_s,
        if timed_out { " (timed out)" } else { "" }
    );
    // A failure says why on the console, not only in steps/*.stderr: the exit code (127:
    // the program was not found) and the end of what the command printed on stderr.
    if record.status == Status::Failed && !timed_out {
        summary.push_str(&match exit {
            Some(code) => format!(" (exit {code})"),
            None => " (killed by a signal)".to_string(),
        });
        let tail = tail_lines(&stderr_path, STDERR_TAIL_LINES);
        if !tail.is_empty() {
            summary.push_str(&format!("; stderr ends with:\n    {}", tail.join("\n    ")));
        }
    }
    on_event(&summary);
    record
}

/// Lines of a failed step's stderr shown on the console.
const STDERR_TAIL_LINES: usize = 5;

/// Whether a step failed before doing any work: it could not be started, or the shell
/// could not find or execute its program (126, 127). Such a point has no load to measure,
/// so it does not wait out the metrics padding.
pub fn failed_at_once(step: &StepRecord) -> bool {
    step.status == Status::Failed
        && !step.timed_out
        && match (&step.engines, step.exit_code) {
            // Engines that never got past the barrier generated no load.
            (Some(engines), _) => engines.start_s.is_none(),
            (None, Some(code)) => code == 126 || code == 127,
            (None, None) => step.duration_s == 0.0,
        }
}

/// Stops a process group (SIGTERM, then SIGKILL) with the system's `kill`, which needs no
/// unsafe code.
fn kill_group(pid: u32) {
    for signal in ["-TERM", "-KILL"] {
        let _ = std::process::Command::new("kill")
            .args([signal, "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The JTL as a path relative to the point directory, copied there when it was written
/// elsewhere in the project. Only a regular file is taken (a FIFO would block the copy, a
/// device would never end it), and nothing outside the point directory and the project is
/// copied into the results.
fn collect_jtl(path: &str, point_dir: &Path, project: &Path, file: &str) -> Option<String> {
    let p = Path::new(path);
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        point_dir.join(p)
    };
    if !std::fs::metadata(&full).is_ok_and(|m| m.is_file()) {
        return None;
    }
    match full.strip_prefix(point_dir) {
        Ok(rel) => Some(rel.display().to_string()),
        Err(_) if is_inside(project, &full) => {
            let target = point_dir.join(format!("{file}.jtl"));
            std::fs::copy(&full, &target).ok()?;
            Some(format!("{file}.jtl"))
        }
        Err(_) => None,
    }
}
