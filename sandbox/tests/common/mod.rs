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
