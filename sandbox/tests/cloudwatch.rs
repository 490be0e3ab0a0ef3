//! CloudWatch (rpc-v2-cbor) through the real aws-sdk-cloudwatch client.

mod common;

use aws_sdk_cloudwatch::Client;
use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{
    Dimension, DimensionFilter, Metric, MetricDataQuery, MetricDatum, MetricStat, ScanBy,
};
use aws_sdk_ecs::types::ContainerDefinition;

fn query(
    id: &str,
    namespace: &str,
    metric: &str,
    dims: &[(&str, &str)],
    stat: &str,
    period: i32,
) -> MetricDataQuery {
    let mut m = Metric::builder().namespace(namespace).metric_name(metric);
    for (n, v) in dims {
        m = m.dimensions(Dimension::builder().name(*n).value(*v).build());
    }
    MetricDataQuery::builder()
        .id(id)
        .metric_stat(
            MetricStat::builder()
                .metric(m.build())
                .period(period)
                .stat(stat)
                .build(),
        )
        .build()
}

#[tokio::test]
async fn synthetic_series_for_existing_resources_are_deterministic_and_labelled() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("qcp1")
        .send()
        .await
        .expect("cluster");
    let td = ecs
        .register_task_definition()
        .family("mod-a")
        .container_definitions(ContainerDefinition::builder().name("a").image("i").build())
        .send()
        .await
        .expect("td");
    ecs.create_service()
        .cluster("qcp1")
        .service_name("mod-a")
        .task_definition(
            td.task_definition()
                .and_then(|t| t.task_definition_arn())
                .expect("arn"),
        )
        .desired_count(1)
        .send()
        .await
        .expect("service");
    let cw = Client::new(&sdk);
    let now = sandbox.clock().now().floor();
    let start = DateTime::from_secs_f64(now - 3600.0);
    let end = DateTime::from_secs_f64(now);
    let call = || {
        cw.get_metric_data()
            .metric_data_queries(query(
                "cpu",
                "AWS/ECS",
                "CPUUtilization",
                &[("ClusterName", "qcp1"), ("ServiceName", "mod-a")],
                "Average",
                300,
            ))
            .metric_data_queries(query(
                "max",
                "AWS/ECS",
                "CPUUtilization",
                &[("ClusterName", "qcp1"), ("ServiceName", "mod-a")],
                "Maximum",
                300,
            ))
            .metric_data_queries(query(
                "n",
                "AWS/ECS",
                "CPUUtilization",
                &[("ClusterName", "qcp1"), ("ServiceName", "mod-a")],
                "SampleCount",
                300,
            ))
            .metric_data_queries(query(
                "ghost",
                "AWS/ECS",
                "CPUUtilization",
                &[("ClusterName", "qcp1"), ("ServiceName", "ghost")],
                "Average",
                300,
            ))
            .start_time(start)
            .end_time(end)
            .scan_by(ScanBy::TimestampAscending)
            .send()
    };
    let a = call().await.expect("get metric data");
    let b = call().await.expect("again");
    let r = a.metric_data_results();
    assert_eq!(r.len(), 4);
    let cpu = &r[0];
    assert_eq!(cpu.id(), Some("cpu"));
    assert!(
        (11..=13).contains(&cpu.values().len()),
        "{}",
        cpu.values().len()
    );
    assert_eq!(cpu.values().len(), cpu.timestamps().len());
    assert!(cpu.values().iter().all(|v| (0.0..=100.0).contains(v)));
    assert_eq!(
        cpu.values(),
        b.metric_data_results()[0].values(),
        "deterministic"
    );
    assert!(
        cpu.timestamps()
            .windows(2)
            .all(|w| w[0].secs() < w[1].secs())
    );
    assert_eq!(cpu.messages()[0].code(), Some("Synthetic"));
    // Maximum >= Average in every bucket, and 5 one-minute samples per full bucket.
    for (avg, max) in cpu.values().iter().zip(r[1].values()) {
        assert!(max >= avg);
    }
    assert!(r[2].values().iter().all(|n| *n <= 5.0));
    assert!(r[2].values().contains(&5.0));
    // No resource, no data (and no synthetic label).
    assert!(r[3].values().is_empty());
    assert!(r[3].messages().is_empty());
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn put_values_take_precedence_and_are_listed() {
    let (sandbox, sdk) = common::manual().await;
    let cw = Client::new(&sdk);
    let now = sandbox.clock().now().floor();
    let t0 = (now / 60.0).floor() * 60.0 - 600.0;
    for (i, v) in [10.0, 20.0, 30.0].iter().enumerate() {
        cw.put_metric_data()
            .namespace("AWS/Kafka")
            .metric_data(
                MetricDatum::builder()
                    .metric_name("CpuUser")
                    .dimensions(
                        Dimension::builder()
                            .name("Cluster Name")
                            .value("ptf")
                            .build(),
                    )
                    .dimensions(Dimension::builder().name("Broker ID").value("1").build())
                    .timestamp(DateTime::from_secs_f64(t0 + 10.0 * i as f64))
                    .value(*v)
                    .build(),
            )
            .send()
            .await
            .expect("put");
    }
    let out = cw
        .get_metric_data()
        .metric_data_queries(query(
            "avg",
            "AWS/Kafka",
            "CpuUser",
            &[("Broker ID", "1"), ("Cluster Name", "ptf")],
            "Average",
            60,
        ))
        .metric_data_queries(query(
            "sum",
            "AWS/Kafka",
            "CpuUser",
            &[("Cluster Name", "ptf"), ("Broker ID", "1")],
            "Sum",
            60,
        ))
        .metric_data_queries(query(
            "min",
            "AWS/Kafka",
            "CpuUser",
            &[("Cluster Name", "ptf"), ("Broker ID", "1")],
            "Minimum",
            60,
        ))
        .start_time(DateTime::from_secs_f64(t0 - 60.0))
        .end_time(DateTime::from_secs_f64(now))
        .send()
        .await
        .expect("get");
    let r = out.metric_data_results();
    assert_eq!(r[0].values(), [20.0]);
    assert_eq!(r[0].timestamps()[0].secs() as f64, t0);
    assert_eq!(r[1].values(), [60.0]);
    assert_eq!(r[2].values(), [10.0]);
    assert!(r[0].messages().is_empty(), "sent values are not synthetic");

    let listed = cw
        .list_metrics()
        .namespace("AWS/Kafka")
        .dimensions(
            DimensionFilter::builder()
                .name("Cluster Name")
                .value("ptf")
                .build(),
        )
        .send()
        .await
        .expect("list");
    assert_eq!(listed.metrics().len(), 1);
    assert_eq!(listed.metrics()[0].metric_name(), Some("CpuUser"));

    let err = cw
        .get_metric_data()
        .metric_data_queries(query("x", "AWS/Kafka", "CpuUser", &[], "Average", 60))
        .start_time(DateTime::from_secs_f64(now))
        .end_time(DateTime::from_secs_f64(now - 60.0))
        .send()
        .await
        .expect_err("start after end");
    assert_eq!(
        err.into_service_error().meta().code(),
        Some("InvalidParameterValue")
    );
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn up_to_500_queries_per_call() {
    let (sandbox, sdk) = common::manual().await;
    let cw = Client::new(&sdk);
    let now = sandbox.clock().now();
    let mut ok = cw
        .get_metric_data()
        .start_time(DateTime::from_secs_f64(now - 600.0))
        .end_time(DateTime::from_secs_f64(now));
    for i in 0..500 {
        ok = ok.metric_data_queries(query(&format!("q{i}"), "Custom", "M", &[], "Average", 60));
    }
    assert_eq!(
        ok.send().await.expect("500").metric_data_results().len(),
        500
    );
    let mut too_many = cw
        .get_metric_data()
        .start_time(DateTime::from_secs_f64(now - 600.0))
        .end_time(DateTime::from_secs_f64(now));
    for i in 0..501 {
        too_many = too_many.metric_data_queries(query(
            &format!("q{i}"),
            "Custom",
            "M",
            &[],
            "Average",
            60,
        ));
    }
    too_many.send().await.expect_err("501");
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn large_requests_are_paged_between_queries() {
    let (sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    rds.create_db_instance()
        .db_instance_identifier("db")
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(100)
        .master_username("u")
        .master_user_password("secret123")
        .send()
        .await
        .expect("db");
    let cw = Client::new(&sdk);
    let now = (sandbox.clock().now() / 60.0).floor() * 60.0;
    // 30 days at 1 hour = 721 datapoints per query; 200 queries need two pages.
    let mut req = cw
        .get_metric_data()
        .start_time(DateTime::from_secs_f64(now - 30.0 * 86_400.0))
        .end_time(DateTime::from_secs_f64(now));
    for i in 0..200 {
        req = req.metric_data_queries(query(
            &format!("q{i}"),
            "AWS/RDS",
            "CPUUtilization",
            &[("DBInstanceIdentifier", "db")],
            "Average",
            3600,
        ));
    }
    let mut pages = req.into_paginator().send();
    let (mut n, mut ids) = (0, Vec::new());
    while let Some(page) = pages.next().await {
        n += 1;
        for r in page.expect("page").metric_data_results() {
            assert!(r.values().len() >= 720, "{}", r.values().len());
            ids.push(r.id().unwrap_or_default().to_string());
        }
    }
    assert_eq!(n, 2);
    assert_eq!(ids.len(), 200);
    assert_eq!(ids[199], "q199");
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_fixed_start_time_makes_synthetic_metrics_reproducible() {
    let start = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
    let run = || async move {
        let (sandbox, sdk) = common::start(envctl_sandbox::SandboxConfig {
            manual_clock: true,
            start_time: Some(start),
            ..envctl_sandbox::SandboxConfig::default()
        })
        .await;
        assert_eq!(sandbox.clock().now(), 1_800_000_000.0);
        let rds = aws_sdk_rds::Client::new(&sdk);
        rds.create_db_instance()
            .db_instance_identifier("db")
            .db_instance_class("db.r6g.xlarge")
            .engine("postgres")
            .allocated_storage(100)
            .master_username("u")
            .master_user_password("secret123")
            .send()
            .await
            .expect("db");
        let out = Client::new(&sdk)
            .get_metric_data()
            .metric_data_queries(query(
                "c",
                "AWS/RDS",
                "DatabaseConnections",
                &[("DBInstanceIdentifier", "db")],
                "Maximum",
                60,
            ))
            .start_time(DateTime::from_secs(1_800_000_000 - 3600))
            .end_time(DateTime::from_secs(1_800_000_000))
            .send()
            .await
            .expect("metrics");
        sandbox.shutdown().await.expect("shutdown");
        out.metric_data_results()[0].values().to_vec()
    };
    let a = run().await;
    assert_eq!(a.len(), 60);
    assert!(
        a.iter().all(|v| v.fract() == 0.0),
        "connections are whole numbers"
    );
    assert_eq!(a, run().await);
}

/// CpuUser of broker 1 of an MSK cluster over the last hour, per minute.
async fn broker_cpu(cw: &Client, cluster: &str, now: f64) -> Vec<f64> {
    let out = cw
        .get_metric_data()
        .metric_data_queries(query(
            "cpu",
            "AWS/Kafka",
            "CpuUser",
            &[("Cluster Name", cluster), ("Broker ID", "1")],
            "Average",
            60,
        ))
        .start_time(DateTime::from_secs_f64(now - 3600.0))
        .end_time(DateTime::from_secs_f64(now))
        .send()
        .await
        .expect("get metric data");
    out.metric_data_results()[0].values().to_vec()
}

/// Report 000's matrix switches every service between two MSK clusters; the one no
/// service points at must look idle in the synthetic series, not as busy as the one in
/// use. A service "uses" a cluster when its environment holds the cluster's broker host.
#[tokio::test]
async fn the_msk_cluster_no_service_uses_is_idle() {
    use aws_sdk_ecs::types::KeyValuePair;
    use aws_sdk_kafka::types::{
        BrokerNodeGroupInfo, EbsStorageInfo, ProvisionedRequest, StorageInfo,
    };
    let (sandbox, sdk) = common::manual().await;
    let kafka = aws_sdk_kafka::Client::new(&sdk);
    let mut arns = Vec::new();
    for name in ["ptf-mobius-testing2", "ptf-KRaft-mode"] {
        let created = kafka
            .create_cluster_v2()
            .cluster_name(name)
            .provisioned(
                ProvisionedRequest::builder()
                    .broker_node_group_info(
                        BrokerNodeGroupInfo::builder()
                            .instance_type("kafka.m5.2xlarge")
                            .client_subnets("subnet-a")
                            .client_subnets("subnet-b")
                            .storage_info(
                                StorageInfo::builder()
                                    .ebs_storage_info(
                                        EbsStorageInfo::builder().volume_size(300).build(),
                                    )
                                    .build(),
                            )
                            .build(),
                    )
                    .kafka_version("3.7.x")
                    .number_of_broker_nodes(2)
                    .build(),
            )
            .send()
            .await
            .expect("create cluster");
        arns.push(created.cluster_arn().expect("arn").to_owned());
    }
    sandbox.clock().advance(common::secs(25 * 60));
    let cw = Client::new(&sdk);
    let idle_ceiling = 3.0 + 0.5 + 0.3;
    let now = sandbox.clock().now().floor();
    // No service names either cluster: both count as in use.
    for cluster in ["ptf-mobius-testing2", "ptf-KRaft-mode"] {
        let values = broker_cpu(&cw, cluster, now).await;
        assert!(
            values.iter().any(|v| *v > idle_ceiling),
            "{cluster}: {values:?}"
        );
    }
    let brokers = kafka
        .get_bootstrap_brokers()
        .cluster_arn(&arns[0])
        .send()
        .await
        .expect("bootstrap");
    // TLS by default (client-broker encryption), as envctl creates clusters.
    let bootstrap = brokers
        .bootstrap_broker_string()
        .or(brokers.bootstrap_broker_string_tls())
        .expect("a bootstrap string")
        .to_owned();
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("qcp1")
        .send()
        .await
        .expect("cluster");
    let td = ecs
        .register_task_definition()
        .family("mod-users")
        .container_definitions(
            ContainerDefinition::builder()
                .name("app")
                .image("i")
                .environment(
                    KeyValuePair::builder()
                        .name("KAFKA_HOST")
                        .value(&bootstrap)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("td");
    ecs.create_service()
        .cluster("qcp1")
        .service_name("mod-users")
        .task_definition(
            td.task_definition()
                .and_then(|t| t.task_definition_arn())
                .expect("arn"),
        )
        .desired_count(1)
        .send()
        .await
        .expect("service");
    let used = broker_cpu(&cw, "ptf-mobius-testing2", now).await;
    let unused = broker_cpu(&cw, "ptf-KRaft-mode", now).await;
    assert_eq!(unused.len(), 60);
    assert!(unused.iter().all(|v| *v <= idle_ceiling), "{unused:?}");
    assert!(used.iter().any(|v| *v > idle_ceiling), "{used:?}");
    sandbox.shutdown().await.expect("shutdown");
}
