//! Shared test setup: a sandbox and SDK clients pointed at it.
#![allow(dead_code)]

use aws_config::BehaviorVersion;
use aws_config::SdkConfig;
use aws_sdk_ecs::config::Credentials;
use envctl_sandbox::{Sandbox, SandboxConfig};
use std::time::Duration;

pub async fn sdk_config(endpoint: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region("us-east-1")
        .credentials_provider(Credentials::new("test", "test", None, None, "sandbox"))
        .load()
        .await
}

/// A sandbox on a manual clock (time moves only by `advance`) and its SDK config.
pub async fn manual() -> (Sandbox, SdkConfig) {
    start(SandboxConfig {
        manual_clock: true,
        ..SandboxConfig::default()
    })
    .await
}

pub async fn start(config: SandboxConfig) -> (Sandbox, SdkConfig) {
    let sandbox = Sandbox::start(config).await.expect("sandbox starts");
    let sdk = sdk_config(&sandbox.endpoint_url()).await;
    (sandbox, sdk)
}

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// A minimal HTTP/1.1 request to the control API (the only hand-built HTTP in the tests).
pub async fn control(endpoint: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = endpoint.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A fresh, empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("envctl-sandbox-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

pub async fn declare(sandbox: &Sandbox, cluster: &str, instances: &[(&str, u32, u32)]) -> String {
    let list: Vec<String> = instances
        .iter()
        .map(|(zone, cpu, mem)| format!(r#"{{"zone":"{zone}","cpu":{cpu},"memory":{mem}}}"#))
        .collect();
    let body = format!(
        r#"{{"cluster":"{cluster}","instances":[{}]}}"#,
        list.join(",")
    );
    let (status, out) = control(
        &sandbox.endpoint_url(),
        "POST",
        "/_sandbox/ecs/container-instances",
        &body,
    )
    .await;
    assert_eq!(status, 200, "{out}");
    out
}

/// Two roomy instances (16 vCPU, 64 GiB each) in `cluster`: ECS places tasks only on
/// registered container instances, so a test about something else gives its cluster some.
pub async fn roomy(sandbox: &Sandbox, cluster: &str) {
    declare(
        sandbox,
        cluster,
        &[("us-east-1a", 16384, 65536), ("us-east-1b", 16384, 65536)],
    )
    .await;
}
