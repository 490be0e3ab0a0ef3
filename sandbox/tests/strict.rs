//! The sandbox refuses what AWS refuses (docs/aws-behaviour.md lists each rule and its
//! source). Each test sends the request envctl once got wrong and checks AWS's error code.

mod common;

use aws_sdk_ecs::types::{ContainerDefinition, LogConfiguration, LogDriver, NetworkMode, Secret};
use aws_sdk_kafka::types::{
    BrokerNodeGroupInfo, ClientBroker, EbsStorageInfo, EncryptionInTransit, EncryptionInfo,
    ProvisionedRequest, StorageInfo,
};
use aws_sdk_rds::error::ProvideErrorMetadata;
use common::secs;

fn container(secrets: bool, log_group: Option<(&str, bool)>) -> ContainerDefinition {
    let mut c = ContainerDefinition::builder()
        .name("app")
        .image("nginx")
        .memory(512);
    if secrets {
        c = c.secrets(
            Secret::builder()
                .name("DB_PASSWORD")
                .value_from("arn:aws:secretsmanager:us-east-1:123456789012:secret:x")
                .build()
                .expect("secret"),
        );
    }
    if let Some((group, create)) = log_group {
        let mut log = LogConfiguration::builder()
            .log_driver(LogDriver::Awslogs)
            .options("awslogs-group", group)
            .options("awslogs-region", "us-east-1");
        if create {
            log = log.options("awslogs-create-group", "true");
        }
        c = c.log_configuration(log.build().expect("log configuration"));
    }
    c.build()
}

#[tokio::test]
async fn ecs_secrets_need_an_execution_role() {
    let (_sandbox, sdk) = common::manual().await;
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    let err = ecs
        .register_task_definition()
        .family("f")
        .container_definitions(container(true, None))
        .send()
        .await
        .expect_err("secrets without executionRoleArn");
    assert_eq!(err.code(), Some("ClientException"));
    assert!(format!("{:?}", err.message()).contains("executionRoleArn"));
    ecs.register_task_definition()
        .family("f")
        .execution_role_arn("arn:aws:iam::123456789012:role/ecsTaskExecutionRole")
        .container_definitions(container(true, None))
        .send()
        .await
        .expect("with an execution role");
}

async fn cluster_and_td(
    ecs: &aws_sdk_ecs::Client,
    mode: NetworkMode,
    log: Option<(&str, bool)>,
) -> String {
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    ecs.register_task_definition()
        .family("f")
        .network_mode(mode)
        .container_definitions(container(false, log))
        .send()
        .await
        .expect("register")
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .expect("arn")
        .to_string()
}

#[tokio::test]
async fn ecs_client_tokens_are_bounded_and_make_create_service_idempotent() {
    let (_sandbox, sdk) = common::manual().await;
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    let td = cluster_and_td(&ecs, NetworkMode::Bridge, None).await;
    let create = |token: String| {
        ecs.create_service()
            .cluster("c")
            .service_name("s")
            .task_definition(&td)
            .desired_count(1)
            .client_token(token)
            .send()
    };
    // envctl's old token for a 27-character service at revision 10: 44 characters.
    let err = create("envctl-mod-circulation-storage-ab-10-0000000".into())
        .await
        .expect_err("token over 36 characters");
    assert_eq!(err.code(), Some("InvalidParameterException"));
    let token = "0123456789abcdef0123456789abcdef".to_string();
    let first = create(token.clone()).await.expect("create");
    let retry = create(token).await.expect("the same token again succeeds");
    assert_eq!(
        first.service().and_then(|s| s.service_arn()),
        retry.service().and_then(|s| s.service_arn())
    );
    let err = create("another-token".into())
        .await
        .expect_err("a new token");
    assert_eq!(err.code(), Some("InvalidParameterException"));
}

#[tokio::test]
async fn ecs_awsvpc_needs_a_network_configuration() {
    let (_sandbox, sdk) = common::manual().await;
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    let td = cluster_and_td(&ecs, NetworkMode::Awsvpc, None).await;
    let err = ecs
        .create_service()
        .cluster("c")
        .service_name("s")
        .task_definition(&td)
        .desired_count(1)
        .send()
        .await
        .expect_err("awsvpc without networkConfiguration");
    assert_eq!(err.code(), Some("InvalidParameterException"));
    assert!(format!("{:?}", err.message()).contains("Network Configuration"));
}

async fn deployment_outcome(log: (&str, bool), existing: bool) -> (String, Vec<String>) {
    deployment_outcome_with(log, existing, false).await
}

async fn deployment_outcome_with(
    log: (&str, bool),
    existing: bool,
    role_creates_log_groups: bool,
) -> (String, Vec<String>) {
    let (sandbox, sdk) = common::manual().await;
    if role_creates_log_groups {
        let (status, _) = common::control(
            &sandbox.endpoint_url(),
            "POST",
            "/_sandbox/logs/create-group-permission",
            r#"{"allowed":true}"#,
        )
        .await;
        assert_eq!(status, 200);
    }
    if existing {
        let (status, _) = common::control(
            &sandbox.endpoint_url(),
            "POST",
            "/_sandbox/logs/groups",
            r#"{"name":"/ecs/pcp1"}"#,
        )
        .await;
        assert_eq!(status, 200);
    }
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    let td = cluster_and_td(&ecs, NetworkMode::Bridge, Some(log)).await;
    common::roomy(&sandbox, "c").await;
    ecs.create_service()
        .cluster("c")
        .service_name("s")
        .task_definition(&td)
        .desired_count(2)
        .send()
        .await
        .expect("create service");
    sandbox.clock().advance(secs(3600));
    let s = ecs
        .describe_services()
        .cluster("c")
        .services("s")
        .send()
        .await
        .expect("describe");
    let rollout = s.services()[0].deployments()[0]
        .rollout_state()
        .map(|r| r.as_str().to_string())
        .unwrap_or_default();
    let stopped = ecs
        .list_tasks()
        .cluster("c")
        .desired_status(aws_sdk_ecs::types::DesiredStatus::Stopped)
        .send()
        .await
        .expect("list")
        .task_arns()
        .to_vec();
    let reasons = if stopped.is_empty() {
        Vec::new()
    } else {
        ecs.describe_tasks()
            .cluster("c")
            .set_tasks(Some(stopped))
            .send()
            .await
            .expect("describe tasks")
            .tasks()
            .iter()
            .filter_map(|t| t.stopped_reason().map(str::to_string))
            .collect()
    };
    (rollout, reasons)
}

#[tokio::test]
async fn ecs_tasks_stop_when_their_log_group_does_not_exist() {
    let (rollout, reasons) = deployment_outcome(("/ecs/pcp1", false), false).await;
    assert_ne!(rollout, "COMPLETED");
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("The specified log group does not exist")),
        "{reasons:?}"
    );
    let (rollout, _) = deployment_outcome(("/ecs/pcp1", false), true).await;
    assert_eq!(rollout, "COMPLETED", "an existing group");
}

/// `awslogs-create-group: "true"` on a missing group needs logs:CreateLogGroup, which
/// AmazonECSTaskExecutionRolePolicy does not grant: the tasks stop with AccessDenied
/// (terraform-aws-modules/terraform-aws-ecs#112). Granted, the driver creates the group.
#[tokio::test]
async fn ecs_awslogs_create_group_needs_logs_create_log_group_on_the_execution_role() {
    let (rollout, reasons) = deployment_outcome(("/ecs/pcp1", true), false).await;
    assert_ne!(rollout, "COMPLETED");
    assert!(
        reasons.iter().any(|r| r.contains(
            "AccessDeniedException: User: (no execution role) is not authorized to perform: logs:CreateLogGroup on resource: arn:aws:logs:us-east-1:"
        ) && r.starts_with("ResourceInitializationError: failed to validate logger args")),
        "{reasons:?}"
    );
    let (rollout, _) = deployment_outcome_with(("/ecs/pcp1", true), false, true).await;
    assert_eq!(
        rollout, "COMPLETED",
        "with the permission the driver creates it"
    );
}

fn msk_request(version: &str, client_broker: Option<ClientBroker>) -> ProvisionedRequest {
    let mut p = ProvisionedRequest::builder()
        .broker_node_group_info(
            BrokerNodeGroupInfo::builder()
                .instance_type("kafka.m5.large")
                .client_subnets("subnet-a")
                .client_subnets("subnet-b")
                .storage_info(
                    StorageInfo::builder()
                        .ebs_storage_info(EbsStorageInfo::builder().volume_size(100).build())
                        .build(),
                )
                .build(),
        )
        .kafka_version(version)
        .number_of_broker_nodes(2);
    if let Some(b) = client_broker {
        p = p.encryption_info(
            EncryptionInfo::builder()
                .encryption_in_transit(EncryptionInTransit::builder().client_broker(b).build())
                .build(),
        );
    }
    p.build()
}

#[tokio::test]
async fn msk_refuses_versions_past_end_of_support_and_follows_the_catalogue() {
    let (sandbox, sdk) = common::manual().await;
    let kafka = aws_sdk_kafka::Client::new(&sdk);
    let err = kafka
        .create_cluster_v2()
        .cluster_name("old")
        .provisioned(msk_request("2.8.0", None))
        .send()
        .await
        .expect_err("2.8.0 is past end of support");
    assert_eq!(err.code(), Some("BadRequestException"));
    let active: Vec<String> = kafka
        .list_kafka_versions()
        .send()
        .await
        .expect("list versions")
        .kafka_versions()
        .iter()
        .filter(|v| v.status().is_some_and(|s| s.as_str() == "ACTIVE"))
        .filter_map(|v| v.version().map(str::to_string))
        .collect();
    assert!(active.contains(&"3.6.0".to_string()) && !active.contains(&"2.8.0".to_string()));
    // Tests change what the account offers.
    let endpoint = sandbox.endpoint_url();
    let (_, catalogue) = common::control(&endpoint, "GET", "/_sandbox/catalogue", "").await;
    let mut catalogue: serde_json::Value = serde_json::from_str(&catalogue).expect("json");
    for v in catalogue["kafka_versions"]
        .as_array_mut()
        .expect("versions")
    {
        if v["version"] == "3.6.0" {
            v["status"] = "DEPRECATED".into();
        }
    }
    let (status, _) = common::control(
        &endpoint,
        "POST",
        "/_sandbox/catalogue",
        &catalogue.to_string(),
    )
    .await;
    assert_eq!(status, 200);
    let err = kafka
        .create_cluster_v2()
        .cluster_name("now-old")
        .provisioned(msk_request("3.6.0", None))
        .send()
        .await
        .expect_err("deprecated through the catalogue");
    assert_eq!(err.code(), Some("BadRequestException"));
}

#[tokio::test]
async fn msk_client_broker_defaults_to_tls_without_a_plaintext_bootstrap_string() {
    let (sandbox, sdk) = common::manual().await;
    let kafka = aws_sdk_kafka::Client::new(&sdk);
    let mut arns = Vec::new();
    for (name, b) in [
        ("default", None),
        ("both", Some(ClientBroker::TlsPlaintext)),
        ("plain", Some(ClientBroker::Plaintext)),
    ] {
        let out = kafka
            .create_cluster_v2()
            .cluster_name(name)
            .provisioned(msk_request("3.6.0", b))
            .send()
            .await
            .expect("create");
        arns.push(out.cluster_arn().expect("arn").to_string());
    }
    sandbox.clock().advance(secs(7200));
    let mut seen = Vec::new();
    for arn in &arns {
        let b = kafka
            .get_bootstrap_brokers()
            .cluster_arn(arn)
            .send()
            .await
            .expect("bootstrap");
        seen.push((
            b.bootstrap_broker_string().is_some(),
            b.bootstrap_broker_string_tls().is_some(),
        ));
    }
    assert_eq!(seen, vec![(false, true), (true, true), (true, false)]);
}

async fn rds_writer(
    rds: &aws_sdk_rds::Client,
    id: &str,
    version: Option<&str>,
) -> Result<String, String> {
    rds.create_db_instance()
        .db_instance_identifier(id)
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .set_engine_version(version.map(str::to_string))
        .allocated_storage(100)
        .master_username("folio")
        .master_user_password("envctl-test-password-1")
        .send()
        .await
        .map(|o| {
            o.db_instance()
                .and_then(|d| d.engine_version())
                .unwrap_or_default()
                .to_string()
        })
        .map_err(|e| e.code().unwrap_or_default().to_string())
}

#[tokio::test]
async fn rds_engine_versions_come_from_the_catalogue() {
    let (_sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    assert_eq!(
        rds_writer(&rds, "deprecated", Some("16.3")).await,
        Err("InvalidParameterCombination".to_string())
    );
    assert_eq!(
        rds_writer(&rds, "major", Some("16")).await,
        Ok("16.8".to_string())
    );
    assert_eq!(
        rds_writer(&rds, "minor", Some("16.6")).await,
        Ok("16.6".to_string())
    );
}

#[tokio::test]
async fn rds_postgres_replica_refuses_a_parameter_group_and_minor_upgrades_move_versions() {
    let (sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    rds_writer(&rds, "w", Some("16.6")).await.expect("writer");
    sandbox.clock().advance(secs(3600));
    let err = rds
        .create_db_instance_read_replica()
        .db_instance_identifier("r")
        .source_db_instance_identifier("w")
        .db_parameter_group_name("default.postgres16")
        .send()
        .await
        .expect_err("a parameter group on a postgres replica");
    assert_eq!(err.code(), Some("InvalidParameterCombination"));
    rds.create_db_instance_read_replica()
        .db_instance_identifier("r")
        .source_db_instance_identifier("w")
        .send()
        .await
        .expect("replica without one");
    let (status, body) = common::control(
        &sandbox.endpoint_url(),
        "POST",
        "/_sandbox/rds/minor-upgrade",
        r#"{"id":"w"}"#,
    )
    .await;
    assert_eq!((status, body.contains("16.8")), (200, true), "{body}");
    let versions: Vec<String> = rds
        .describe_db_instances()
        .send()
        .await
        .expect("describe")
        .db_instances()
        .iter()
        .filter_map(|d| d.engine_version().map(str::to_string))
        .collect();
    assert_eq!(versions, vec!["16.8", "16.8"]);
}

#[tokio::test]
async fn rds_storage_growth_is_usable_while_optimizing_and_limited_in_size_and_rate() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = aws_sdk_rds::Client::new(&sdk);
    rds_writer(&rds, "w", Some("16")).await.expect("writer");
    clock.advance(secs(3600));
    let modify = |gb: i32| {
        rds.modify_db_instance()
            .db_instance_identifier("w")
            .allocated_storage(gb)
            .apply_immediately(true)
            .send()
    };
    let err = modify(105).await.expect_err("less than 10% growth");
    assert_eq!(err.code(), Some("InvalidParameterCombination"));
    modify(200).await.expect("grow");
    clock.advance(secs(1800));
    let status = |rds: aws_sdk_rds::Client| async move {
        rds.describe_db_instances()
            .db_instance_identifier("w")
            .send()
            .await
            .expect("describe")
            .db_instances()[0]
            .db_instance_status()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(status(rds.clone()).await, "storage-optimization");
    let err = modify(400)
        .await
        .expect_err("a second change within six hours");
    assert_eq!(err.code(), Some("InvalidParameterCombination"));
    clock.advance(secs(6 * 3600));
    assert_eq!(status(rds.clone()).await, "available");
    modify(400)
        .await
        .expect("after six hours and the optimization");
}

#[tokio::test]
async fn rds_subnet_groups_must_exist_and_outlive_their_instances() {
    let (_sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    let err = rds
        .create_db_instance()
        .db_instance_identifier("w")
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(100)
        .master_username("folio")
        .master_user_password("envctl-test-password-1")
        .db_subnet_group_name("missing")
        .send()
        .await
        .expect_err("unknown subnet group");
    assert_eq!(err.code(), Some("DBSubnetGroupNotFoundFault"));
    rds.create_db_subnet_group()
        .db_subnet_group_name("g")
        .db_subnet_group_description("d")
        .subnet_ids("subnet-a")
        .subnet_ids("subnet-b")
        .send()
        .await
        .expect("subnet group");
    let created = rds
        .create_db_instance()
        .db_instance_identifier("w")
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(100)
        .master_username("folio")
        .master_user_password("envctl-test-password-1")
        .db_subnet_group_name("g")
        .send()
        .await
        .expect("in the group");
    assert_eq!(
        created.db_instance().and_then(|d| d.publicly_accessible()),
        Some(false)
    );
    let err = rds
        .delete_db_subnet_group()
        .db_subnet_group_name("g")
        .send()
        .await
        .expect_err("in use");
    assert_eq!(err.code(), Some("InvalidDBSubnetGroupStateFault"));
}

#[tokio::test]
async fn rds_refuses_a_parameter_group_of_another_family() {
    let (_sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    rds.create_db_parameter_group()
        .db_parameter_group_name("p16")
        .db_parameter_group_family("postgres16")
        .description("d")
        .send()
        .await
        .expect("parameter group");
    let create = |version: &'static str| {
        rds.create_db_instance()
            .db_instance_identifier(format!("w{}", version.replace('.', "-")))
            .db_instance_class("db.r6g.xlarge")
            .engine("postgres")
            .engine_version(version)
            .allocated_storage(100)
            .master_username("folio")
            .master_user_password("envctl-test-password-1")
            .db_parameter_group_name("p16")
            .send()
    };
    let err = create("17")
        .await
        .expect_err("a postgres16 group on postgres 17");
    assert_eq!(err.code(), Some("InvalidParameterCombination"));
    create("16").await.expect("the group's own family");
}

/// RDS User Guide, "Password management with Amazon RDS and AWS Secrets Manager",
/// Limitations: no read replica of a source whose master password Secrets Manager manages;
/// the error as terraform-aws-modules/terraform-aws-rds#532 quotes it (for mysql).
#[tokio::test]
async fn rds_refuses_a_replica_of_a_writer_whose_password_secrets_manager_manages() {
    let (sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    rds.create_db_instance()
        .db_instance_identifier("managed")
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(100)
        .master_username("folio")
        .manage_master_user_password(true)
        .send()
        .await
        .expect("writer with a managed password");
    rds_writer(&rds, "own", None)
        .await
        .expect("writer with a password");
    sandbox.clock().advance(secs(3600));
    let err = rds
        .create_db_instance_read_replica()
        .db_instance_identifier("managed-r")
        .source_db_instance_identifier("managed")
        .send()
        .await
        .expect_err("a replica of a managed-password writer");
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    assert_eq!(
        err.message(),
        Some(
            "Creating read replicas for source instance with engine postgres where ManageMasterUserPassword is enabled is not supported."
        )
    );
    rds.create_db_instance_read_replica()
        .db_instance_identifier("own-r")
        .source_db_instance_identifier("own")
        .send()
        .await
        .expect("a replica of a writer with its own password");
}

/// CreateDBInstance's MasterUserPassword constraints (RDS API Reference): required unless
/// ManageMasterUserPassword, refused with it, 8+ printable ASCII characters without
/// `/`, `"`, `@` or space.
#[tokio::test]
async fn rds_master_passwords_follow_the_api_constraints() {
    let (_sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    let code = async |id: &str, password: Option<&str>, managed: Option<bool>| match rds
        .create_db_instance()
        .db_instance_identifier(id)
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(100)
        .master_username("folio")
        .set_master_user_password(password.map(str::to_string))
        .set_manage_master_user_password(managed)
        .send()
        .await
    {
        Ok(_) => "ok".to_string(),
        Err(e) => e.code().unwrap_or_default().to_string(),
    };
    assert_eq!(code("a", None, None).await, "InvalidParameterValue");
    assert_eq!(
        code("b", Some("short"), None).await,
        "InvalidParameterValue"
    );
    assert_eq!(
        code("c", Some("has/slash-inside"), None).await,
        "InvalidParameterValue"
    );
    assert_eq!(
        code("d", Some("long-enough-1"), Some(true)).await,
        "InvalidParameterCombination"
    );
    assert_eq!(code("e", Some("long-enough-1"), None).await, "ok");
    assert_eq!(code("f", None, Some(true)).await, "ok");
}

/// A major version upgrade (postgres 16 -> 17) needs AllowMajorVersionUpgrade and, from a
/// custom parameter group, a group of the new family in the same ModifyDBInstance:
/// `InvalidParameterCombination: The current DB instance parameter group X is custom. You
/// must explicitly specify a new DB instance parameter group, either default or custom, for
/// the engine version upgrade.` (aws/aws-cli#5939, cloudposse/terraform-aws-rds-cluster#134).
/// A minor change needs neither; with both the instance ends on the new major.
#[tokio::test]
async fn rds_major_upgrades_need_a_parameter_group_of_the_new_family() {
    let (sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    for (name, family) in [("p16", "postgres16"), ("p17", "postgres17")] {
        rds.create_db_parameter_group()
            .db_parameter_group_name(name)
            .db_parameter_group_family(family)
            .description("d")
            .send()
            .await
            .expect("parameter group");
    }
    rds.create_db_instance()
        .db_instance_identifier("w")
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .engine_version("16")
        .allocated_storage(100)
        .master_username("folio")
        .master_user_password("envctl-test-password-1")
        .db_parameter_group_name("p16")
        .send()
        .await
        .expect("writer on 16");
    sandbox.clock().advance(secs(3600));
    let modify = |group: Option<&'static str>, allow: bool| {
        rds.modify_db_instance()
            .db_instance_identifier("w")
            .engine_version("17")
            .set_allow_major_version_upgrade(allow.then_some(true))
            .set_db_parameter_group_name(group.map(str::to_string))
            .apply_immediately(true)
            .send()
    };
    let err = modify(Some("p17"), false).await.expect_err("no flag");
    assert_eq!(err.code(), Some("InvalidParameterCombination"));
    let err = modify(None, true)
        .await
        .expect_err("the old family's group");
    assert_eq!(err.code(), Some("InvalidParameterCombination"));
    assert_eq!(
        err.message(),
        Some(
            "The current DB instance parameter group p16 is custom. You must explicitly specify a new DB instance parameter group, either default or custom, for the engine version upgrade."
        )
    );
    let err = modify(Some("p16"), true)
        .await
        .expect_err("p16 is postgres16");
    assert_eq!(err.code(), Some("InvalidParameterCombination"));
    modify(Some("p17"), true)
        .await
        .expect("a group of the new family");
    sandbox.clock().advance(secs(3600));
    let w = rds
        .describe_db_instances()
        .db_instance_identifier("w")
        .send()
        .await
        .expect("describe")
        .db_instances()[0]
        .clone();
    assert!(
        w.engine_version().is_some_and(|v| v.starts_with("17.")),
        "{w:?}"
    );
    assert_eq!(
        w.db_parameter_groups()[0].db_parameter_group_name(),
        Some("p17")
    );
}
