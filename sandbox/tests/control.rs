//! Faults, the control API and the state directory.

mod common;

use aws_sdk_ecs::types::ContainerDefinition;
use common::secs;
use envctl_sandbox::{ErrorFault, ErrorKind, FaultConfig, LatencyFault, SandboxConfig};
use std::time::{Duration, Instant};

fn error_fault(service: &str, operation: &str, rate: f64, kind: ErrorKind) -> FaultConfig {
    FaultConfig {
        seed: 42,
        errors: vec![ErrorFault {
            service: service.into(),
            operation: operation.into(),
            rate,
            kind,
        }],
        ..FaultConfig::default()
    }
}

#[tokio::test]
async fn injected_errors_are_retried_by_the_sdk_as_aws_errors() {
    let (sandbox, _) = common::manual().await;
    // The standard retry strategy (classifiers included), with a short first backoff so the
    // test does not sleep for seconds of real time.
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(sandbox.endpoint_url())
        .region("us-east-1")
        .credentials_provider(aws_sdk_ecs::config::Credentials::new(
            "test", "test", None, None, "sandbox",
        ))
        .retry_config(
            aws_config::retry::RetryConfig::standard()
                .with_initial_backoff(Duration::from_millis(20)),
        )
        .load()
        .await;
    let ecs = aws_sdk_ecs::Client::new(&sdk);

    // A 500 on every call: the SDK tries 3 times (standard mode), then gives up with the
    // typed ServerException.
    sandbox.set_faults(error_fault(
        "ecs",
        "ListClusters",
        1.0,
        ErrorKind::ServerError,
    ));
    let err = ecs.list_clusters().send().await.expect_err("500s");
    assert!(err.into_service_error().is_server_exception());
    let s = sandbox.stats().get("ecs", "ListClusters");
    assert_eq!((s.count, s.faulted), (3, 3));

    // Throttling on some calls: retried as throttling until it passes.
    sandbox.set_faults(error_fault(
        "ecs",
        "DescribeClusters",
        0.3,
        ErrorKind::Throttling,
    ));
    let conf = aws_sdk_ecs::config::Builder::from(&sdk)
        .retry_config(
            aws_sdk_ecs::config::retry::RetryConfig::standard()
                .with_max_attempts(10)
                .with_initial_backoff(Duration::from_millis(20)),
        )
        .build();
    let patient = aws_sdk_ecs::Client::from_conf(conf);
    for _ in 0..10 {
        patient
            .describe_clusters()
            .send()
            .await
            .expect("eventually");
    }
    let s = sandbox.stats().get("ecs", "DescribeClusters");
    assert!(s.throttled > 0, "{s:?}");
    assert_eq!(s.count - s.throttled, 10);

    // A dropped connection is a transient error for the SDK: retried, then surfaced.
    sandbox.set_faults(error_fault("kafka", "*", 1.0, ErrorKind::ConnectionReset));
    let kafka = aws_sdk_kafka::Client::new(&sdk);
    kafka.list_clusters_v2().send().await.expect_err("reset");
    let s = sandbox.stats().get("kafka", "ListClustersV2");
    assert_eq!((s.count, s.faulted), (3, 3));

    // RDS and CloudWatch throttling use their own codes and are retried too.
    sandbox.set_faults(error_fault("*", "*", 1.0, ErrorKind::Throttling));
    let rds = aws_sdk_rds::Client::new(&sdk);
    let err = rds
        .describe_db_instances()
        .send()
        .await
        .expect_err("throttled");
    assert_eq!(err.into_service_error().meta().code(), Some("Throttling"));
    assert_eq!(sandbox.stats().get("rds", "DescribeDBInstances").count, 3);
    let cw = aws_sdk_cloudwatch::Client::new(&sdk);
    let err = cw.list_metrics().send().await.expect_err("throttled");
    assert_eq!(err.into_service_error().meta().code(), Some("Throttling"));
    assert_eq!(sandbox.stats().get("cloudwatch", "ListMetrics").count, 3);

    sandbox.set_faults(FaultConfig::default());
    ecs.list_clusters().send().await.expect("healthy again");
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn latency_fault_delays_matching_requests() {
    let (sandbox, sdk) = common::manual().await;
    sandbox.set_faults(FaultConfig {
        latency: vec![LatencyFault {
            service: "rds".into(),
            operation: "DescribeDBInstances".into(),
            millis: 300,
        }],
        ..FaultConfig::default()
    });
    let rds = aws_sdk_rds::Client::new(&sdk);
    let t0 = Instant::now();
    rds.describe_db_instances().send().await.expect("describe");
    assert!(t0.elapsed() >= Duration::from_millis(300));
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn control_api_stats_log_faults_clock_and_reset() {
    let (sandbox, sdk) = common::manual().await;
    let url = sandbox.endpoint_url();
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    ecs.describe_clusters()
        .clusters("c")
        .send()
        .await
        .expect("describe");

    let (status, body) = common::control(&url, "GET", "/_sandbox/stats", "").await;
    assert_eq!(status, 200);
    let stats: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(stats["mutating"], 1);
    assert_eq!(stats["reads"], 1);
    assert_eq!(stats["operations"]["ecs:CreateCluster"]["count"], 1);
    assert_eq!(sandbox.stats().mutating_calls(), 1);

    let (_, body) = common::control(&url, "GET", "/_sandbox/log", "").await;
    let log: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(log[0]["operation"], "CreateCluster");
    assert_eq!(log[0]["resource"], "c");
    assert_eq!(log[0]["outcome"]["kind"], "ok");

    let before = sandbox.clock().now();
    let (status, _) = common::control(
        &url,
        "POST",
        "/_sandbox/clock/advance",
        r#"{"seconds": 90}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(sandbox.clock().now(), before + 90.0);

    let faults = r#"{"seed": 1, "errors": [{"service": "ecs", "operation": "DescribeClusters", "rate": 1.0, "kind": "server_error"}]}"#;
    let (status, _) = common::control(&url, "POST", "/_sandbox/faults", faults).await;
    assert_eq!(status, 200);
    ecs.describe_clusters()
        .clusters("c")
        .send()
        .await
        .expect_err("fault");
    let (status, _) = common::control(&url, "POST", "/_sandbox/faults", r#"{"nope": 1}"#).await;
    assert_eq!(status, 400);

    let (status, _) = common::control(&url, "POST", "/_sandbox/reset", "").await;
    assert_eq!(status, 200);
    assert_eq!(sandbox.stats().total(), 0);
    assert!(sandbox.request_log().is_empty());
    let (status, _) = common::control(&url, "POST", "/_sandbox/reset?world=true", "").await;
    assert_eq!(status, 200);
    common::control(&url, "POST", "/_sandbox/faults", "{}").await;
    let d = ecs
        .describe_clusters()
        .clusters("c")
        .send()
        .await
        .expect("describe");
    assert_eq!(d.failures()[0].reason(), Some("MISSING"));
    sandbox.shutdown().await.expect("shutdown");
}

/// Issue 26 item 11: a scaled clock resumes at the later of its saved time and the wall
/// clock. Saved a day behind (a sandbox left overnight), it comes back at the wall clock,
/// not a day in the past; saved ahead (simulated waits), it never goes back.
#[tokio::test]
async fn a_saved_clock_never_resumes_behind_the_wall_clock_or_before_itself() {
    let dir = common::temp_dir("resume");
    let config = || SandboxConfig {
        state_dir: Some(dir.clone()),
        ..SandboxConfig::default()
    };
    let wall = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    };
    let (sandbox, _sdk) = common::start(config()).await;
    sandbox.shutdown().await.expect("shutdown saves");
    let rewrite_now = |now: f64| {
        let path = dir.join("world.json");
        let mut saved: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("world.json")).expect("JSON");
        saved["now"] = serde_json::json!(now);
        std::fs::write(&path, serde_json::to_vec(&saved).expect("JSON")).expect("write");
    };

    rewrite_now(wall() - 86_400.0);
    let before = wall();
    let (sandbox, _sdk) = common::start(config()).await;
    let resumed = sandbox.clock().now();
    assert!(
        resumed >= before - 1e-3,
        "resumed at {resumed}, a day behind {before}"
    );
    sandbox.shutdown().await.expect("shutdown");

    let ahead = wall() + 6.0 * 3600.0;
    rewrite_now(ahead);
    let (sandbox, _sdk) = common::start(config()).await;
    let resumed = sandbox.clock().now();
    assert!(
        resumed >= ahead - 1e-3,
        "resumed at {resumed}, before its saved {ahead}"
    );
    sandbox.shutdown().await.expect("shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn state_dir_persists_world_and_virtual_time() {
    let dir = common::temp_dir("state");
    let config = || SandboxConfig {
        manual_clock: true,
        state_dir: Some(dir.clone()),
        ..SandboxConfig::default()
    };
    let (sandbox, sdk) = common::start(config()).await;
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    ecs.register_task_definition()
        .family("f")
        .container_definitions(ContainerDefinition::builder().name("a").image("i").build())
        .send()
        .await
        .expect("td");
    sandbox.clock().advance(secs(3600));
    let saved_now = sandbox.clock().now();
    sandbox.shutdown().await.expect("shutdown saves");
    assert!(dir.join("world.json").exists());

    let (sandbox, sdk) = common::start(config()).await;
    // Within a microsecond: the clock keeps its start as a Duration, and an f64 epoch time
    // near 1.8e9 s loses its last bit (~0.24 us) on the way through.
    let restored = sandbox.clock().now();
    assert!(
        restored >= saved_now - 1e-6,
        "restored {restored} < saved {saved_now}"
    );
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    let d = ecs
        .describe_clusters()
        .clusters("c")
        .send()
        .await
        .expect("describe");
    assert_eq!(d.clusters().len(), 1);
    let td = ecs
        .register_task_definition()
        .family("f")
        .container_definitions(ContainerDefinition::builder().name("a").image("i").build())
        .send()
        .await
        .expect("td");
    assert_eq!(td.task_definition().map(|t| t.revision()), Some(2));
    sandbox.shutdown().await.expect("shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}
