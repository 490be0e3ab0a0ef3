//! The load engines' protocol: how envctl tells an engine task (an ECS task of the engine
//! task definition, `task-defs/engine-jmeter.yaml`) what to run, when to start, and where
//! to put its results; and the Fargate launch limits that pace starting them.
//!
//! This is envctl's own contract, not AWS's, kept here because three parties speak it:
//! envctl (`src/load/`), the engine image's entrypoint (`engines/jmeter/entrypoint.py`),
//! and the sandbox, whose emulated engines run the demo workload instead of JMeter.
//!
//! An engine, given these environment variables (the same for every engine of a step:
//! one RunTask call starts up to 10 tasks with one set of overrides):
//! 1. downloads [`ENV_PLAN`] and [`ENV_FILES`] (S3 URIs) into its working directory;
//! 2. polls [`ENV_BARRIER`] every [`BARRIER_POLL_S`] until the object exists (envctl writes
//!    it once every engine is RUNNING) and sleeps until the `start_at` it holds: every
//!    engine starts at the same instant, whatever its start-up time; if no barrier
//!    appears within [`ENV_BARRIER_TIMEOUT`] seconds it exits 1;
//! 3. runs the tool with `-J` for every property of [`ENV_PROPERTIES`] (a JSON object);
//! 4. while the tool runs, puts the JTL's new complete lines every [`ENV_UPLOAD_PERIOD`]
//!    seconds as the next part ([`jtl_part_name`]) under the same prefix as below, so an
//!    engine stopped (StopTask, a step's timeout) or killed before its end leaves what it
//!    measured; envctl joins the parts when [`JTL_NAME`] is missing;
//! 5. puts [`JTL_NAME`] (whole, at a normal end), [`LOG_NAME`] and [`SUMMARY_NAME`] under
//!    [`ENV_RESULTS`] followed by its task id (the last part of its task ARN) and `/`, and
//!    exits with the tool's exit code. Stopped, it puts the last part, the log and the
//!    summary within the task definition's `stopTimeout` and exits 143.

/// S3 URI of the test plan.
pub const ENV_PLAN: &str = "ENVCTL_PLAN_URI";
/// S3 URIs of further files, one per line, downloaded beside the plan by file name.
pub const ENV_FILES: &str = "ENVCTL_FILES_URIS";
/// `-J` properties as a JSON object of strings.
pub const ENV_PROPERTIES: &str = "ENVCTL_PROPERTIES";
/// S3 URI of the barrier object (`{"start_at": <epoch seconds>}`).
pub const ENV_BARRIER: &str = "ENVCTL_BARRIER_URI";
/// Seconds an engine waits for the barrier before it gives up (exit 1).
pub const ENV_BARRIER_TIMEOUT: &str = "ENVCTL_BARRIER_TIMEOUT_S";
/// S3 URI prefix (ending in `/`) under which each engine writes `<task-id>/...`.
pub const ENV_RESULTS: &str = "ENVCTL_RESULTS_URI";
/// The Region of the bucket the URIs name, which the engine signs its S3 requests for and
/// whose endpoint it calls: it may differ from the task's (S3 answers a request for another
/// Region's bucket with 301 PermanentRedirect).
pub const ENV_BUCKET_REGION: &str = "ENVCTL_BUCKET_REGION";

/// Seconds between two parts of the JTL an engine puts while it runs (default 30).
pub const ENV_UPLOAD_PERIOD: &str = "ENVCTL_UPLOAD_PERIOD_S";

/// The engine's JMeter result file (CSV JTL).
pub const JTL_NAME: &str = "result.jtl";

/// The `n`-th part (from 1) of the JTL an engine puts while it runs: `result.jtl.part-000001`;
/// the parts joined in order are the JTL (the first holds the header).
pub fn jtl_part_name(n: u32) -> String {
    format!("{JTL_NAME}.part-{n:06}")
}
/// JMeter's log.
pub const LOG_NAME: &str = "jmeter.log";
/// `{"exit_code": n, "synthetic": bool, "tool": "...", "max_cpu_percent": x}`: how the run
/// ended; `synthetic` is true for the sandbox's emulated engines, whose samples measure
/// nothing real; `max_cpu_percent` is the highest one-minute average CPU of the engine, in
/// percent of its vCPUs (null when it ran less than a minute).
pub const SUMMARY_NAME: &str = "engine.json";

/// How often an engine looks for the barrier object, seconds.
pub const BARRIER_POLL_S: f64 = 1.0;
/// How far in the future envctl sets `start_at` when it opens the barrier: more than one
/// poll, so every engine has seen the object before the instant comes.
pub const BARRIER_LEAD_S: f64 = 5.0;

/// The barrier object's content.
pub fn barrier_body(start_at: f64) -> String {
    format!("{{\"start_at\": {start_at:.3}}}")
}

/// `start_at` from a barrier object; `None` when it is not one.
pub fn parse_barrier(body: &str) -> Option<f64> {
    let rest = body.split("\"start_at\"").nth(1)?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e' || c == 'E'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok().filter(|v: &f64| v.is_finite())
}

/// The task id (last part of an ECS task ARN), which names an engine's results.
pub fn task_id(task_arn: &str) -> &str {
    task_arn.rsplit('/').next().unwrap_or(task_arn)
}

/// Fargate's limits on starting tasks ("AWS Fargate throttling quotas", Amazon ECS
/// Developer Guide): RunTask starts at most [`RUN_TASK_MAX_COUNT`] tasks per call; the
/// RunTask calls themselves are limited to 20 per second (burst and sustained); and
/// launched tasks draw from a bucket of 100 refilled at 20 per second. 200 engines are
/// 20 calls, and at least (200 - 100) / 20 = 5 s of launching.
pub const RUN_TASK_MAX_COUNT: u32 = 10;
/// (burst, per second) of RunTask calls on Fargate.
pub const FARGATE_RUN_TASK_CALLS: (f64, f64) = (20.0, 20.0);
/// (burst, per second) of Fargate task launches (On-Demand and Spot alike).
pub const FARGATE_TASK_LAUNCHES: (f64, f64) = (100.0, 20.0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_barrier_round_trips_and_task_ids_are_the_arns_tail() {
        assert_eq!(
            parse_barrier(&barrier_body(1700000123.25)),
            Some(1700000123.25)
        );
        assert_eq!(parse_barrier("{\"start_at\":12}"), Some(12.0));
        assert_eq!(parse_barrier("{\"go\": 1}"), None);
        assert_eq!(
            task_id("arn:aws:ecs:us-east-1:1:task/c/0123abcd"),
            "0123abcd"
        );
    }
}
