//! MSK through the real aws-sdk-kafka client.

mod common;

use aws_sdk_kafka::Client;
use aws_sdk_kafka::types::{
    BrokerEbsVolumeInfo, BrokerNodeGroupInfo, ConfigurationInfo, EbsStorageInfo,
    ProvisionedRequest, StorageInfo,
};
use aws_smithy_types::Blob;
use common::secs;
use envctl_sandbox::{FaultConfig, MskOperationFault};

async fn create(kafka: &Client, name: &str, version: &str, brokers: i32) -> String {
    kafka
        .create_cluster_v2()
        .cluster_name(name)
        .tags("env", "qcp1")
        .provisioned(
            ProvisionedRequest::builder()
                .broker_node_group_info(
                    BrokerNodeGroupInfo::builder()
                        .instance_type("kafka.m5.2xlarge")
                        .client_subnets("subnet-a")
                        .client_subnets("subnet-b")
                        .security_groups("sg-1")
                        .storage_info(
                            StorageInfo::builder()
                                .ebs_storage_info(
                                    EbsStorageInfo::builder().volume_size(300).build(),
                                )
                                .build(),
                        )
                        .build(),
                )
                .kafka_version(version)
                .number_of_broker_nodes(brokers)
                .build(),
        )
        .send()
        .await
        .expect("create cluster")
        .cluster_arn()
        .expect("arn")
        .to_string()
}

async fn version(kafka: &Client, arn: &str) -> (String, String) {
    let info = kafka
        .describe_cluster_v2()
        .cluster_arn(arn)
        .send()
        .await
        .expect("describe")
        .cluster_info()
        .expect("info")
        .clone();
    (
        info.state()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        info.current_version().unwrap_or_default().to_string(),
    )
}

async fn operation_state(kafka: &Client, op: &str) -> String {
    kafka
        .describe_cluster_operation_v2()
        .cluster_operation_arn(op)
        .send()
        .await
        .expect("describe op")
        .cluster_operation_info()
        .and_then(|i| i.operation_state())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn cluster_lifecycle_updates_and_versions() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let kafka = Client::new(&sdk);
    let arn = create(&kafka, "ptf-main", "3.6.0", 2).await;
    assert!(arn.starts_with("arn:aws:kafka:us-east-1:123456789012:cluster/ptf-main/"));
    let (state, v0) = version(&kafka, &arn).await;
    assert_eq!(state, "CREATING");
    let err = kafka
        .get_bootstrap_brokers()
        .cluster_arn(&arn)
        .send()
        .await
        .expect_err("no brokers while creating");
    assert!(err.into_service_error().is_bad_request_exception());

    clock.advance(secs(25 * 60));
    let info = kafka
        .describe_cluster_v2()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("describe")
        .cluster_info()
        .expect("info")
        .clone();
    assert_eq!(info.state().map(|s| s.as_str()), Some("ACTIVE"));
    let prov = info.provisioned().expect("provisioned");
    assert!(
        prov.zookeeper_connect_string()
            .is_some_and(|z| z.contains(":2181"))
    );
    assert_eq!(prov.number_of_broker_nodes(), Some(2));
    assert_eq!(
        info.tags().and_then(|t| t.get("env")).map(String::as_str),
        Some("qcp1")
    );
    let brokers = kafka
        .get_bootstrap_brokers()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("brokers");
    assert_eq!(
        brokers
            .bootstrap_broker_string_tls()
            .map(|s| s.split(',').count()),
        Some(2)
    );

    // A stale version token is refused.
    let err = kafka
        .update_broker_type()
        .cluster_arn(&arn)
        .current_version("KSTALE")
        .target_instance_type("kafka.m7g.2xlarge")
        .send()
        .await
        .expect_err("stale");
    assert!(err.into_service_error().is_bad_request_exception());

    let op = kafka
        .update_broker_type()
        .cluster_arn(&arn)
        .current_version(&v0)
        .target_instance_type("kafka.m7g.2xlarge")
        .send()
        .await
        .expect("update type")
        .cluster_operation_arn()
        .expect("op")
        .to_string();
    assert_eq!(operation_state(&kafka, &op).await, "PENDING");
    let (state, _) = version(&kafka, &arn).await;
    assert_eq!(state, "UPDATING");
    // Not ACTIVE: another update is refused.
    let err = kafka
        .update_broker_storage()
        .cluster_arn(&arn)
        .current_version(&v0)
        .target_broker_ebs_volume_info(
            BrokerEbsVolumeInfo::builder()
                .kafka_broker_node_id("All")
                .volume_size_gb(400)
                .build(),
        )
        .send()
        .await
        .expect_err("updating");
    assert!(err.into_service_error().is_bad_request_exception());
    clock.advance(secs(60));
    assert_eq!(operation_state(&kafka, &op).await, "UPDATE_IN_PROGRESS");
    // 6 minutes per broker, 2 brokers.
    clock.advance(secs(12 * 60));
    assert_eq!(operation_state(&kafka, &op).await, "UPDATE_COMPLETE");
    let (state, v1) = version(&kafka, &arn).await;
    assert_eq!(state, "ACTIVE");
    assert_ne!(v1, v0);

    // Broker count: increase by a multiple of the zone count (2 subnets).
    let err = kafka
        .update_broker_count()
        .cluster_arn(&arn)
        .current_version(&v1)
        .target_number_of_broker_nodes(3)
        .send()
        .await
        .expect_err("not a multiple");
    assert!(err.into_service_error().is_bad_request_exception());
    kafka
        .update_broker_count()
        .cluster_arn(&arn)
        .current_version(&v1)
        .target_number_of_broker_nodes(4)
        .send()
        .await
        .expect("count");
    clock.advance(secs(21 * 60));
    let info = kafka
        .describe_cluster_v2()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("describe")
        .cluster_info()
        .expect("info")
        .clone();
    let prov = info.provisioned().expect("p");
    assert_eq!(prov.number_of_broker_nodes(), Some(4));
    assert_eq!(
        prov.broker_node_group_info()
            .and_then(|b| b.instance_type()),
        Some("kafka.m7g.2xlarge")
    );

    // ZooKeeper -> KRaft in place is refused.
    let v2 = info.current_version().expect("v").to_string();
    let err = kafka
        .update_cluster_kafka_version()
        .cluster_arn(&arn)
        .current_version(&v2)
        .target_kafka_version("3.7.x.kraft")
        .send()
        .await
        .expect_err("kraft switch");
    assert!(err.into_service_error().is_bad_request_exception());

    // A failing operation ends UPDATE_FAILED and leaves the cluster unchanged.
    sandbox.set_faults(FaultConfig {
        failing_msk_operations: vec![MskOperationFault {
            cluster: "ptf-main".into(),
            operation: "UPDATE_BROKER_STORAGE".into(),
        }],
        ..FaultConfig::default()
    });
    let op = kafka
        .update_broker_storage()
        .cluster_arn(&arn)
        .current_version(&v2)
        .target_broker_ebs_volume_info(
            BrokerEbsVolumeInfo::builder()
                .kafka_broker_node_id("All")
                .volume_size_gb(500)
                .build(),
        )
        .send()
        .await
        .expect("storage")
        .cluster_operation_arn()
        .expect("op")
        .to_string();
    clock.advance(secs(10 * 60));
    assert_eq!(operation_state(&kafka, &op).await, "UPDATE_FAILED");
    let (state, _) = version(&kafka, &arn).await;
    assert_eq!(state, "ACTIVE");

    let del = kafka
        .delete_cluster()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("delete");
    assert_eq!(del.state().map(|s| s.as_str()), Some("DELETING"));
    clock.advance(secs(10 * 60 + 1));
    let err = kafka
        .describe_cluster_v2()
        .cluster_arn(&arn)
        .send()
        .await
        .expect_err("gone");
    assert!(err.into_service_error().is_not_found_exception());
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn kraft_clusters_have_no_zookeeper() {
    let (sandbox, sdk) = common::manual().await;
    let kafka = Client::new(&sdk);
    let arn = create(&kafka, "kraft", "3.7.x.kraft", 2).await;
    sandbox.clock().advance(secs(25 * 60));
    let info = kafka
        .describe_cluster_v2()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("describe")
        .cluster_info()
        .expect("info")
        .clone();
    assert!(
        info.provisioned()
            .expect("p")
            .zookeeper_connect_string()
            .is_none()
    );
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn configurations_revisions_and_cluster_configuration() {
    let (sandbox, sdk) = common::manual().await;
    let kafka = Client::new(&sdk);
    let props = "auto.create.topics.enable=true\nlog.retention.minutes=480\n";
    let cfg = kafka
        .create_configuration()
        .name("qcp1-kafka")
        .kafka_versions("3.6.0")
        .server_properties(Blob::new(props))
        .send()
        .await
        .expect("create configuration");
    let cfg_arn = cfg.arn().expect("arn").to_string();
    assert_eq!(cfg.latest_revision().and_then(|r| r.revision()), Some(1));
    let upd = kafka
        .update_configuration()
        .arn(&cfg_arn)
        .server_properties(Blob::new("default.replication.factor=2\n"))
        .send()
        .await
        .expect("update configuration");
    assert_eq!(upd.latest_revision().and_then(|r| r.revision()), Some(2));
    let rev1 = kafka
        .describe_configuration_revision()
        .arn(&cfg_arn)
        .revision(1)
        .send()
        .await
        .expect("revision");
    assert_eq!(
        rev1.server_properties().map(|b| b.as_ref().to_vec()),
        Some(props.as_bytes().to_vec())
    );
    let d = kafka
        .describe_configuration()
        .arn(&cfg_arn)
        .send()
        .await
        .expect("describe configuration");
    assert_eq!(d.latest_revision().and_then(|r| r.revision()), Some(2));
    let err = kafka
        .describe_configuration_revision()
        .arn(&cfg_arn)
        .revision(9)
        .send()
        .await
        .expect_err("missing revision");
    assert!(err.into_service_error().is_not_found_exception());

    let arn = create(&kafka, "c1", "3.6.0", 2).await;
    sandbox.clock().advance(secs(25 * 60));
    let (_, v) = version(&kafka, &arn).await;
    let op = kafka
        .update_cluster_configuration()
        .cluster_arn(&arn)
        .current_version(&v)
        .configuration_info(
            ConfigurationInfo::builder()
                .arn(&cfg_arn)
                .revision(2)
                .build(),
        )
        .send()
        .await
        .expect("update cluster configuration")
        .cluster_operation_arn()
        .expect("op")
        .to_string();
    sandbox.clock().advance(secs(7 * 60));
    assert_eq!(operation_state(&kafka, &op).await, "UPDATE_COMPLETE");
    let info = kafka
        .describe_cluster_v2()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("describe")
        .cluster_info()
        .expect("info")
        .clone();
    let sw = info
        .provisioned()
        .and_then(|p| p.current_broker_software_info())
        .expect("software");
    assert_eq!(sw.configuration_arn(), Some(cfg_arn.as_str()));
    assert_eq!(sw.configuration_revision(), Some(2));
    let err = kafka
        .delete_configuration()
        .arn(&cfg_arn)
        .send()
        .await
        .expect_err("in use");
    assert!(err.into_service_error().is_bad_request_exception());

    kafka
        .tag_resource()
        .resource_arn(&arn)
        .tags("expires", "tomorrow")
        .send()
        .await
        .expect("tag");
    kafka
        .untag_resource()
        .resource_arn(&arn)
        .tag_keys("env")
        .send()
        .await
        .expect("untag");
    let tags = kafka
        .list_tags_for_resource()
        .resource_arn(&arn)
        .send()
        .await
        .expect("tags");
    let tags = tags.tags().expect("tags");
    assert_eq!(tags.len(), 1);
    assert_eq!(tags.get("expires").map(String::as_str), Some("tomorrow"));
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn list_clusters_filters_and_paginates() {
    let (sandbox, sdk) = common::manual().await;
    let kafka = Client::new(&sdk);
    for i in 0..5 {
        create(&kafka, &format!("ptf-{i}"), "3.6.0", 2).await;
    }
    create(&kafka, "other", "3.6.0", 2).await;
    let mut names = Vec::new();
    let mut pages = kafka
        .list_clusters_v2()
        .cluster_name_filter("ptf-")
        .max_results(2)
        .into_paginator()
        .send();
    let mut n = 0;
    while let Some(page) = pages.next().await {
        n += 1;
        for c in page.expect("page").cluster_info_list() {
            names.push(c.cluster_name().unwrap_or_default().to_string());
        }
    }
    assert_eq!(n, 3);
    assert_eq!(names, ["ptf-0", "ptf-1", "ptf-2", "ptf-3", "ptf-4"]);
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn executor_style_wait_on_a_scaled_clock() {
    // 25 virtual minutes in about half a real second: the way envctl paces its waits.
    let (sandbox, sdk) = common::start(envctl_sandbox::SandboxConfig {
        time_scale: 3000.0,
        ..envctl_sandbox::SandboxConfig::default()
    })
    .await;
    let clock = sandbox.clock();
    let kafka = Client::new(&sdk);
    // Read before the create: at 3000x a few real milliseconds of a loaded machine between
    // the create's timestamp and a later read are whole virtual minutes, and the wait below
    // would look shorter than the create took.
    let started = clock.now();
    let arn = create(&kafka, "scaled", "3.7.x.kraft", 2).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (state, _) = version(&kafka, &arn).await;
        if state == "ACTIVE" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "cluster never became ACTIVE"
        );
        clock.sleep(secs(60)).await;
    }
    let waited = clock.now() - started;
    assert!(
        waited >= 25.0 * 60.0,
        "ACTIVE only after the create duration ({waited} s)"
    );
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn kafka_version_upgrade_and_configuration_cleanup() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let kafka = Client::new(&sdk);
    let cfg = kafka
        .create_configuration()
        .name("unused")
        .server_properties(Blob::new("log.retention.minutes=480\n"))
        .send()
        .await
        .expect("configuration");
    let cfg_arn = cfg.arn().expect("arn").to_string();
    let listed = kafka.list_configurations().send().await.expect("list");
    assert_eq!(listed.configurations().len(), 1);
    let del = kafka
        .delete_configuration()
        .arn(&cfg_arn)
        .send()
        .await
        .expect("delete configuration");
    assert_eq!(del.state().map(|s| s.as_str()), Some("DELETING"));
    assert!(
        kafka
            .list_configurations()
            .send()
            .await
            .expect("list")
            .configurations()
            .is_empty()
    );

    let arn = create(&kafka, "upgrade", "3.6.0", 2).await;
    clock.advance(secs(25 * 60));
    let (_, v) = version(&kafka, &arn).await;
    let op = kafka
        .update_cluster_kafka_version()
        .cluster_arn(&arn)
        .current_version(&v)
        .target_kafka_version("3.7.x")
        .send()
        .await
        .expect("upgrade")
        .cluster_operation_arn()
        .expect("op")
        .to_string();
    // 8 minutes per broker, 2 brokers, after 15 s pending.
    clock.advance(secs(16 * 60));
    assert_eq!(operation_state(&kafka, &op).await, "UPDATE_IN_PROGRESS");
    clock.advance(secs(60));
    assert_eq!(operation_state(&kafka, &op).await, "UPDATE_COMPLETE");
    let info = kafka
        .describe_cluster_v2()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("describe")
        .cluster_info()
        .expect("info")
        .clone();
    assert_eq!(
        info.provisioned()
            .and_then(|p| p.current_broker_software_info())
            .and_then(|s| s.kafka_version()),
        Some("3.7.x")
    );
    let op_info = kafka
        .describe_cluster_operation_v2()
        .cluster_operation_arn(&op)
        .send()
        .await
        .expect("op")
        .cluster_operation_info()
        .expect("info")
        .clone();
    assert_eq!(
        op_info.operation_type(),
        Some("UPDATE_CLUSTER_KAFKA_VERSION")
    );
    let p = op_info.provisioned().expect("provisioned");
    assert_eq!(
        p.source_cluster_info().and_then(|s| s.kafka_version()),
        Some("3.6.0")
    );
    assert_eq!(
        p.target_cluster_info().and_then(|s| s.kafka_version()),
        Some("3.7.x")
    );
    sandbox.shutdown().await.expect("shutdown");
}

async fn current_version(kafka: &Client, arn: &str) -> String {
    version(kafka, arn).await.1
}

async fn grow_storage(
    kafka: &Client,
    arn: &str,
    gb: i32,
) -> Result<
    String,
    aws_sdk_kafka::error::SdkError<
        aws_sdk_kafka::operation::update_broker_storage::UpdateBrokerStorageError,
    >,
> {
    let v = current_version(kafka, arn).await;
    kafka
        .update_broker_storage()
        .cluster_arn(arn)
        .current_version(&v)
        .target_broker_ebs_volume_info(
            BrokerEbsVolumeInfo::builder()
                .kafka_broker_node_id("All")
                .volume_size_gb(gb)
                .build(),
        )
        .send()
        .await
        .map(|o| o.cluster_operation_arn().unwrap_or_default().to_string())
}

/// UpdateBrokerType follows MSK's migration paths (nothing down to T3, no Standard <->
/// Express); a storage scaling starts a cool-down of at least six hours, within which the
/// next one is refused saying when; ListClusterOperationsV2 lists what happened, newest
/// first (MSK Developer Guide, msk-update-broker-type and msk-update-storage).
#[tokio::test]
async fn broker_types_follow_msks_paths_and_storage_scaling_has_a_cool_down() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let kafka = Client::new(&sdk);
    let arn = create(&kafka, "paths", "3.8.x", 2).await;
    clock.advance(secs(25 * 60));
    for target in ["kafka.t3.small", "express.m7g.2xlarge"] {
        let v = current_version(&kafka, &arn).await;
        let err = kafka
            .update_broker_type()
            .cluster_arn(&arn)
            .current_version(&v)
            .target_instance_type(target)
            .send()
            .await
            .expect_err(target)
            .into_service_error();
        assert!(err.is_bad_request_exception(), "{err:?}");
        assert!(
            err.to_string().contains("cannot be updated to"),
            "{target}: {err}"
        );
    }
    let first = grow_storage(&kafka, &arn, 400).await.expect("first growth");
    clock.advance(secs(60 * 60));
    assert_eq!(operation_state(&kafka, &first).await, "UPDATE_COMPLETE");
    let err = grow_storage(&kafka, &arn, 500)
        .await
        .expect_err("within the cool-down")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");
    assert!(
        err.to_string().contains("cool-down") && err.to_string().contains("after 20"),
        "{err}"
    );
    clock.advance(secs(6 * 3600));
    let second = grow_storage(&kafka, &arn, 500)
        .await
        .expect("after the cool-down");
    let listed = kafka
        .list_cluster_operations_v2()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("list operations");
    let ops: Vec<(&str, &str)> = listed
        .cluster_operation_info_list()
        .iter()
        .map(|o| {
            (
                o.operation_arn().unwrap_or_default(),
                o.operation_type().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        vec![
            (second.as_str(), "UPDATE_BROKER_STORAGE"),
            (first.as_str(), "UPDATE_BROKER_STORAGE")
        ]
    );
    assert!(listed.cluster_operation_info_list()[1].end_time().is_some());
    assert!(listed.cluster_operation_info_list()[0].end_time().is_none());
}
