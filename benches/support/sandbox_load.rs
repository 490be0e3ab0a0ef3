//! DescribeServices load on the sandbox, shared by `sandbox/benches/sandbox.rs` and the perf table
//! (1,000 services, 10 per call, many concurrent SDK callers; and the same request over raw
//! keep-alive HTTP/1.1 connections to see the server without the SDK client), as functions
//! the perf table can call several times.
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_ecs::Client;
use aws_sdk_ecs::types::ContainerDefinition;

pub const SERVICES: usize = 1_000;
pub const CLUSTER: &str = "bench";

/// Creates the cluster and [`SERVICES`] services on one task definition.
pub async fn create_services(ecs: &Client) -> Result<(), aws_sdk_ecs::Error> {
    ecs.create_cluster().cluster_name(CLUSTER).send().await?;
    let td = ecs
        .register_task_definition()
        .family(CLUSTER)
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
            .cluster(CLUSTER)
            .service_name(format!("svc-{i:04}"))
            .task_definition(&arn)
            .desired_count(2)
            .send()
            .await?;
    }
    Ok(())
}

/// Completed DescribeServices calls per second (10 services each) from `concurrency` SDK
/// callers during `run_for`, and the number of errors.
pub async fn sdk_rate(ecs: &Client, concurrency: usize, run_for: Duration) -> (f64, u64) {
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + run_for;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..concurrency {
        let (ecs, done, errors) = (ecs.clone(), done.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = w * 10;
            while Instant::now() < deadline {
                let mut req = ecs.describe_services().cluster(CLUSTER);
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
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    (rate, errors.load(Ordering::Relaxed))
}

/// The sandbox's own cost, without the SDK client: the request the SDK sends for
/// DescribeServices, written by hand over `connections` keep-alive connections. Unsigned:
/// the sandbox does not check signatures.
pub async fn raw_http_rate(endpoint: &str, connections: usize, run_for: Duration) -> f64 {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let addr = endpoint.trim_start_matches("http://").to_string();
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + run_for;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..connections {
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
                let body = format!(
                    "{{\"cluster\":\"{CLUSTER}\",\"services\":[{}]}}",
                    names.join(",")
                );
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
                i += 10 * connections;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}
