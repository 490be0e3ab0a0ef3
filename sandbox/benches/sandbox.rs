//! Throughput of DescribeServices through aws-sdk-ecs on loopback, and the process memory
//! with 1,000 services. Prints numbers; never asserts on timing.
//!
//! Run: `cargo bench -p envctl-sandbox --bench sandbox` (add `--profile dev` to reuse the
//! debug build cache; numbers are then lower).

use aws_config::BehaviorVersion;
use aws_sdk_ecs::Client;
use aws_sdk_ecs::config::Credentials;
use aws_sdk_ecs::types::ContainerDefinition;
use envctl_sandbox::{Sandbox, SandboxConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const SERVICES: usize = 1_000;
/// Concurrent SDK callers; `SANDBOX_BENCH_CONCURRENCY` overrides.
const DEFAULT_CONCURRENCY: usize = 64;
const RUN_FOR: Duration = Duration::from_secs(5);
const RAW_CONNECTIONS: usize = 8;

/// Resident set size of this process in KiB (Linux), if readable.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            return;
        }
    };
    runtime.block_on(run());
}

async fn run() {
    let rss_start = rss_kib();
    let sandbox = match Sandbox::start(SandboxConfig {
        // Throughput of the emulator, not of the ECS token buckets (20 reads/s).
        ecs_throttling: false,
        ..SandboxConfig::default()
    })
    .await
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start the sandbox: {e}");
            return;
        }
    };
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(sandbox.endpoint_url())
        .region("us-east-1")
        .credentials_provider(Credentials::new("test", "test", None, None, "sandbox"))
        .load()
        .await;
    let ecs = Client::new(&sdk);
    let setup = async {
        ecs.create_cluster().cluster_name("bench").send().await?;
        let td = ecs
            .register_task_definition()
            .family("bench")
            .container_definitions(
                ContainerDefinition::builder()
                    .name("app")
                    .image("img")
                    .memory(512)
                    .build(),
            )
            .send()
            .await?;
        let arn = td
            .task_definition()
            .and_then(|t| t.task_definition_arn())
            .unwrap_or("bench:1")
            .to_string();
        for i in 0..SERVICES {
            ecs.create_service()
                .cluster("bench")
                .service_name(format!("svc-{i:04}"))
                .task_definition(&arn)
                .desired_count(2)
                .send()
                .await?;
        }
        Ok::<(), aws_sdk_ecs::Error>(())
    };
    let t0 = Instant::now();
    if let Err(e) = setup.await {
        eprintln!("setup failed: {e}");
        return;
    }
    println!("created {SERVICES} services in {:.2?}", t0.elapsed());
    let rss_loaded = rss_kib();

    let concurrency: usize = std::env::var("SANDBOX_BENCH_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|c| *c > 0)
        .unwrap_or(DEFAULT_CONCURRENCY);
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + RUN_FOR;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..concurrency {
        let ecs = ecs.clone();
        let done = done.clone();
        let errors = errors.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = w * 10;
            while Instant::now() < deadline {
                let mut req = ecs.describe_services().cluster("bench");
                for k in 0..10 {
                    req = req.services(format!("svc-{:04}", (i + k) % SERVICES));
                }
                match req.send().await {
                    Ok(_) => done.fetch_add(1, Ordering::Relaxed),
                    Err(_) => errors.fetch_add(1, Ordering::Relaxed),
                };
                i += 10 * concurrency;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let n = done.load(Ordering::Relaxed);
    println!(
        "DescribeServices (10 services per call, {concurrency} concurrent SDK callers): {n} calls in {elapsed:.2} s = {:.0} req/s ({} errors)",
        n as f64 / elapsed,
        errors.load(Ordering::Relaxed)
    );
    let raw = raw_http_rate(&sandbox.endpoint_url()).await;
    println!(
        "DescribeServices, server side only (same request over {RAW_CONNECTIONS} raw keep-alive HTTP/1.1 connections, no SDK): {raw:.0} req/s"
    );
    match (rss_start, rss_loaded, rss_kib()) {
        (Some(a), Some(b), Some(c)) => println!(
            "process RSS: {:.1} MiB at start, {:.1} MiB with {SERVICES} services, {:.1} MiB after the run (client and server share the process)",
            a as f64 / 1024.0,
            b as f64 / 1024.0,
            c as f64 / 1024.0
        ),
        _ => println!("process RSS: not available on this platform"),
    }
    let _ = sandbox.shutdown().await;
}

/// The sandbox's own cost, without the SDK client (which dominates in debug builds): the
/// request the SDK sends for DescribeServices, written by hand over keep-alive connections.
/// Unsigned: the sandbox does not check signatures.
async fn raw_http_rate(endpoint: &str) -> f64 {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let addr = endpoint.trim_start_matches("http://").to_string();
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + RUN_FOR;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..RAW_CONNECTIONS {
        let addr = addr.clone();
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let Ok(stream) = tokio::net::TcpStream::connect(&addr).await else {
                return;
            };
            let mut stream = BufReader::new(stream);
            let mut i = w * 10;
            while Instant::now() < deadline {
                let names: Vec<String> = (0..10)
                    .map(|k| format!("\"svc-{:04}\"", (i + k) % SERVICES))
                    .collect();
                let body = format!("{{\"cluster\":\"bench\",\"services\":[{}]}}", names.join(","));
                let req = format!(
                    "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-amz-json-1.1\r\nX-Amz-Target: AmazonEC2ContainerServiceV20141113.DescribeServices\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                if stream.get_mut().write_all(req.as_bytes()).await.is_err() {
                    return;
                }
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    match stream.read_line(&mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut buf = vec![0u8; length];
                if stream.read_exact(&mut buf).await.is_err() {
                    return;
                }
                done.fetch_add(1, Ordering::Relaxed);
                i += 10 * RAW_CONNECTIONS;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}
