//! Throughput of DescribeServices through aws-sdk-ecs on loopback, and the process memory
//! with 1,000 services. Prints numbers; never asserts on timing. The load itself is shared
//! with envctl's performance table (`benches/support/sandbox_load.rs`).
//!
//! Run: `cargo bench -p envctl-sandbox --bench sandbox` (add `--profile dev` to reuse the
//! debug build cache; numbers are then lower).

#[path = "../../benches/support/sandbox_load.rs"]
mod sandbox_load;

use aws_config::BehaviorVersion;
use aws_sdk_ecs::Client;
use aws_sdk_ecs::config::Credentials;
use envctl_sandbox::{Sandbox, SandboxConfig};
use std::time::{Duration, Instant};

use sandbox_load::{SERVICES, create_services, raw_http_rate, sdk_rate};

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
    let t0 = Instant::now();
    if let Err(e) = create_services(&ecs).await {
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
    let (rate, errors) = sdk_rate(&ecs, concurrency, RUN_FOR).await;
    println!(
        "DescribeServices (10 services per call, {concurrency} concurrent SDK callers): {rate:.0} req/s ({errors} errors)"
    );
    let raw = raw_http_rate(&sandbox.endpoint_url(), RAW_CONNECTIONS, RUN_FOR).await;
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
