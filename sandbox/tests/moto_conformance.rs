//! The same scenario against moto (an independent AWS emulator) and the sandbox, comparing
//! the fields envctl reads, for the operations moto implements.
//!
//! Needs `python3 -m moto.server` (moto 5.x: `pip install 'moto[server]'`). Without it the
//! test fails, unless `ENVCTL_SKIP_MOTO=1`.

mod common;

use aws_config::SdkConfig;
use aws_sdk_ecs::types::{
    ContainerDefinition, KeyValuePair, PortMapping, ServiceField, Tag, TaskDefinitionField,
};
use aws_sdk_kafka::types::{BrokerNodeGroupInfo, EbsStorageInfo, ProvisionedRequest, StorageInfo};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

#[path = "../../tests/support/moto.rs"]
mod moto_support;

use moto_support::{require_moto, start_moto};

type Settle<'a> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + 'a>> + 'a>;

/// What envctl reads back, normalised: account-independent, no generated suffixes.
type Observed = BTreeMap<String, String>;

fn put(o: &mut Observed, key: &str, value: impl std::fmt::Debug) {
    o.insert(key.to_string(), format!("{value:?}"));
}

/// Replaces the generated part of an ARN after `prefix/name/` with `*`.
fn arn_shape(arn: &str) -> String {
    let parts: Vec<&str> = arn.splitn(3, '/').collect();
    match parts.as_slice() {
        [a, b, _] => format!("{a}/{b}/*"),
        _ => arn.to_string(),
    }
}

async fn ecs_scenario(sdk: &SdkConfig, settle: &Settle<'_>, o: &mut Observed) {
    let ecs = aws_sdk_ecs::Client::new(sdk);
    let c = ecs
        .create_cluster()
        .cluster_name("conf")
        .send()
        .await
        .expect("create cluster");
    let c = c.cluster().expect("cluster");
    put(o, "ecs.cluster.arn", c.cluster_arn());
    put(o, "ecs.cluster.status", c.status());

    let container = |image: &str| {
        ContainerDefinition::builder()
            .name("app")
            .image(image)
            .memory(4096)
            .memory_reservation(3690)
            .cpu(2048)
            .essential(true)
            .environment(
                KeyValuePair::builder()
                    .name("DB_HOST")
                    .value("db.local")
                    .build(),
            )
            .port_mappings(
                PortMapping::builder()
                    .container_port(8081)
                    .host_port(0)
                    .build(),
            )
            .build()
    };
    let reg = ecs
        .register_task_definition()
        .family("mod-a")
        .container_definitions(container("folioorg/mod-a:1.0.0"))
        .tags(Tag::builder().key("env").value("conf").build())
        .send()
        .await
        .expect("register");
    let td = reg.task_definition().expect("td");
    put(o, "ecs.td.arn", td.task_definition_arn());
    put(o, "ecs.td.revision", td.revision());
    put(o, "ecs.td.status", td.status());
    let rev2 = ecs
        .register_task_definition()
        .family("mod-a")
        .container_definitions(container("folioorg/mod-a:1.0.1"))
        .send()
        .await
        .expect("register 2");
    let rev2_arn = rev2
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .expect("arn")
        .to_string();
    put(o, "ecs.td2.arn", &rev2_arn);

    let d = ecs
        .describe_task_definition()
        .task_definition("mod-a:1")
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .expect("describe td");
    let c0 = &d.task_definition().expect("td").container_definitions()[0];
    put(
        o,
        "ecs.td.container",
        (
            c0.name(),
            c0.image(),
            c0.memory(),
            c0.memory_reservation(),
            c0.cpu(),
            c0.essential(),
        ),
    );
    put(
        o,
        "ecs.td.environment",
        c0.environment()
            .iter()
            .map(|e| (e.name(), e.value()))
            .collect::<Vec<_>>(),
    );
    put(
        o,
        "ecs.td.ports",
        c0.port_mappings()
            .iter()
            .map(|p| p.container_port())
            .collect::<Vec<_>>(),
    );
    put(
        o,
        "ecs.td.tags",
        d.tags()
            .iter()
            .map(|t| (t.key(), t.value()))
            .collect::<Vec<_>>(),
    );
    let latest = ecs
        .describe_task_definition()
        .task_definition("mod-a")
        .send()
        .await
        .expect("describe latest");
    put(
        o,
        "ecs.td.latest",
        latest.task_definition().map(|t| t.revision()),
    );
    let list = ecs
        .list_task_definitions()
        .family_prefix("mod-a")
        .send()
        .await
        .expect("list td");
    put(o, "ecs.td.list", list.task_definition_arns());

    let created = ecs
        .create_service()
        .cluster("conf")
        .service_name("svc-a")
        .task_definition("mod-a:1")
        .desired_count(2)
        .tags(Tag::builder().key("owner").value("ptf").build())
        .send()
        .await
        .expect("create service");
    let s = created.service().expect("service");
    put(o, "ecs.svc.arn", s.service_arn());
    put(o, "ecs.svc.status", s.status());
    put(o, "ecs.svc.desired", s.desired_count());
    put(o, "ecs.svc.td", s.task_definition());
    put(
        o,
        "ecs.svc.primary",
        s.deployments().first().and_then(|d| d.status()),
    );

    let upd = ecs
        .update_service()
        .cluster("conf")
        .service("svc-a")
        .task_definition(&rev2_arn)
        .send()
        .await
        .expect("update service");
    let s = upd.service().expect("service");
    put(o, "ecs.svc.updated_td", s.task_definition());
    put(
        o,
        "ecs.svc.updated_primary",
        s.deployments()
            .iter()
            .find(|d| d.status() == Some("PRIMARY"))
            .and_then(|d| d.task_definition()),
    );
    settle().await;
    let desc = ecs
        .describe_services()
        .cluster("conf")
        .services("svc-a")
        .services("ghost")
        .include(ServiceField::Tags)
        .send()
        .await
        .expect("describe services");
    put(o, "ecs.describe.count", desc.services().len());
    put(
        o,
        "ecs.describe.tags",
        desc.services()[0]
            .tags()
            .iter()
            .map(|t| (t.key(), t.value()))
            .collect::<Vec<_>>(),
    );
    put(
        o,
        "ecs.describe.failure",
        desc.failures()
            .iter()
            .map(|f| (f.arn(), f.reason()))
            .collect::<Vec<_>>(),
    );
    let listed = ecs
        .list_services()
        .cluster("conf")
        .send()
        .await
        .expect("list services");
    put(o, "ecs.list_services", listed.service_arns());
    let svc_arn = listed.service_arns().first().cloned().unwrap_or_default();
    let tags = ecs
        .list_tags_for_resource()
        .resource_arn(&svc_arn)
        .send()
        .await
        .expect("service tags");
    put(
        o,
        "ecs.svc.tags",
        tags.tags()
            .iter()
            .map(|t| (t.key(), t.value()))
            .collect::<Vec<_>>(),
    );
    let clusters = ecs
        .describe_clusters()
        .clusters("conf")
        .clusters("nope")
        .send()
        .await
        .expect("describe clusters");
    put(
        o,
        "ecs.clusters.found",
        clusters
            .clusters()
            .iter()
            .map(|c| c.cluster_name())
            .collect::<Vec<_>>(),
    );
    put(
        o,
        "ecs.clusters.failures",
        clusters
            .failures()
            .iter()
            .map(|f| (f.arn(), f.reason()))
            .collect::<Vec<_>>(),
    );

    let del = ecs
        .delete_service()
        .cluster("conf")
        .service("svc-a")
        .force(true)
        .send()
        .await
        .expect("delete service");
    put(
        o,
        "ecs.svc.deleted_arn",
        del.service().and_then(|s| s.service_arn()),
    );
    let dereg = ecs
        .deregister_task_definition()
        .task_definition("mod-a:1")
        .send()
        .await
        .expect("deregister");
    put(
        o,
        "ecs.td.deregistered",
        dereg.task_definition().and_then(|t| t.status()),
    );
}

async fn rds_scenario(sdk: &SdkConfig, settle: &Settle<'_>, o: &mut Observed) {
    let rds = aws_sdk_rds::Client::new(sdk);
    let created = rds
        .create_db_instance()
        .db_instance_identifier("conf-db")
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(500)
        .master_username("folio")
        .master_user_password("secret123")
        .tags(
            aws_sdk_rds::types::Tag::builder()
                .key("env")
                .value("conf")
                .build(),
        )
        .send()
        .await
        .expect("create db");
    let i = created.db_instance().expect("instance");
    put(o, "rds.arn", i.db_instance_arn());
    put(
        o,
        "rds.fields",
        (
            i.db_instance_identifier(),
            i.db_instance_class(),
            i.engine(),
            i.allocated_storage(),
        ),
    );
    settle().await;
    let d = rds
        .describe_db_instances()
        .db_instance_identifier("conf-db")
        .send()
        .await
        .expect("describe");
    let i = &d.db_instances()[0];
    put(o, "rds.status", i.db_instance_status());
    put(o, "rds.port", i.endpoint().and_then(|e| e.port()));
    put(
        o,
        "rds.endpoint_suffix",
        i.endpoint()
            .and_then(|e| e.address())
            .map(|a| a.starts_with("conf-db.") && a.ends_with(".us-east-1.rds.amazonaws.com")),
    );
    put(
        o,
        "rds.tags",
        i.tag_list()
            .iter()
            .map(|t| (t.key(), t.value()))
            .collect::<Vec<_>>(),
    );
    rds.modify_db_instance()
        .db_instance_identifier("conf-db")
        .db_instance_class("db.r6g.2xlarge")
        .apply_immediately(true)
        .send()
        .await
        .expect("modify");
    settle().await;
    let d = rds
        .describe_db_instances()
        .db_instance_identifier("conf-db")
        .send()
        .await
        .expect("describe");
    put(
        o,
        "rds.modified_class",
        d.db_instances()[0].db_instance_class(),
    );
    let replica = rds
        .create_db_instance_read_replica()
        .db_instance_identifier("conf-db-reader")
        .source_db_instance_identifier("conf-db")
        .send()
        .await
        .expect("replica");
    put(
        o,
        "rds.replica.source",
        replica
            .db_instance()
            .and_then(|i| i.read_replica_source_db_instance_identifier()),
    );
    settle().await;
    let d = rds
        .describe_db_instances()
        .db_instance_identifier("conf-db")
        .send()
        .await
        .expect("describe");
    put(
        o,
        "rds.replicas",
        d.db_instances()[0].read_replica_db_instance_identifiers(),
    );
    let pg = rds
        .create_db_parameter_group()
        .db_parameter_group_name("conf-pg")
        .db_parameter_group_family("postgres16")
        .description("conf")
        .send()
        .await
        .expect("create pg");
    put(
        o,
        "rds.pg",
        pg.db_parameter_group().map(|g| {
            (
                g.db_parameter_group_name(),
                g.db_parameter_group_family(),
                g.db_parameter_group_arn(),
            )
        }),
    );
    rds.modify_db_parameter_group()
        .db_parameter_group_name("conf-pg")
        .parameters(
            aws_sdk_rds::types::Parameter::builder()
                .parameter_name("max_connections")
                .parameter_value("2731")
                .apply_method(aws_sdk_rds::types::ApplyMethod::PendingReboot)
                .build(),
        )
        .send()
        .await
        .expect("modify pg");
    let params = rds
        .describe_db_parameters()
        .db_parameter_group_name("conf-pg")
        .source("user")
        .send()
        .await
        .expect("params");
    put(
        o,
        "rds.pg.user_params",
        params
            .parameters()
            .iter()
            .map(|p| (p.parameter_name(), p.parameter_value()))
            .collect::<Vec<_>>(),
    );
    let arn = "arn:aws:rds:us-east-1:123456789012:db:conf-db";
    rds.add_tags_to_resource()
        .resource_name(arn)
        .tags(
            aws_sdk_rds::types::Tag::builder()
                .key("run")
                .value("r1")
                .build(),
        )
        .send()
        .await
        .expect("add tags");
    let tags = rds
        .list_tags_for_resource()
        .resource_name(arn)
        .send()
        .await
        .expect("tags");
    put(
        o,
        "rds.tags.after_add",
        tags.tag_list()
            .iter()
            .map(|t| (t.key(), t.value()))
            .collect::<Vec<_>>(),
    );
    let err = rds
        .describe_db_instances()
        .db_instance_identifier("nope")
        .send()
        .await
        .expect_err("missing");
    put(
        o,
        "rds.missing",
        err.into_service_error().is_db_instance_not_found_fault(),
    );
    let del = rds
        .delete_db_instance()
        .db_instance_identifier("conf-db")
        .skip_final_snapshot(true)
        .send()
        .await
        .expect("delete");
    put(
        o,
        "rds.deleted_id",
        del.db_instance().and_then(|i| i.db_instance_identifier()),
    );
}

async fn kafka_scenario(sdk: &SdkConfig, settle: &Settle<'_>, o: &mut Observed) {
    let kafka = aws_sdk_kafka::Client::new(sdk);
    let created = kafka
        .create_cluster_v2()
        .cluster_name("conf-kafka")
        .tags("env", "conf")
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
                .kafka_version("3.6.0")
                .number_of_broker_nodes(2)
                .build(),
        )
        .send()
        .await
        .expect("create kafka");
    let arn = created.cluster_arn().expect("arn").to_string();
    put(o, "kafka.arn_shape", arn_shape(&arn));
    put(o, "kafka.name", created.cluster_name());
    settle().await;
    match kafka.describe_cluster_v2().cluster_arn(&arn).send().await {
        Ok(d) => {
            let info = d.cluster_info().expect("info");
            put(o, "kafka.describe.name", info.cluster_name());
            put(o, "kafka.describe.type", info.cluster_type());
            let p = info.provisioned().expect("provisioned");
            put(o, "kafka.describe.brokers", p.number_of_broker_nodes());
            put(
                o,
                "kafka.describe.instance_type",
                p.broker_node_group_info().and_then(|b| b.instance_type()),
            );
            put(
                o,
                "kafka.describe.version",
                p.current_broker_software_info()
                    .and_then(|s| s.kafka_version()),
            );
            put(
                o,
                "kafka.describe.tags",
                info.tags().map(|t| t.iter().collect::<BTreeMap<_, _>>()),
            );
        }
        Err(e) => put(
            o,
            "kafka.describe.error",
            format!("{e:?}").chars().take(200).collect::<String>(),
        ),
    }
    match kafka.list_clusters_v2().send().await {
        Ok(listed) => put(
            o,
            "kafka.listed",
            listed
                .cluster_info_list()
                .iter()
                .map(|c| c.cluster_arn() == Some(arn.as_str()))
                .collect::<Vec<_>>(),
        ),
        Err(e) => put(
            o,
            "kafka.listed.error",
            format!("{e:?}").chars().take(200).collect::<String>(),
        ),
    }
    let del = kafka
        .delete_cluster()
        .cluster_arn(&arn)
        .send()
        .await
        .expect("delete");
    put(
        o,
        "kafka.deleted_arn",
        del.cluster_arn() == Some(arn.as_str()),
    );
    let err = kafka
        .describe_cluster_v2()
        .cluster_arn("arn:aws:kafka:us-east-1:123456789012:cluster/none/x")
        .send()
        .await
        .expect_err("missing");
    put(
        o,
        "kafka.missing",
        err.into_service_error().is_not_found_exception(),
    );
}

/// Fields where moto is known to differ from AWS itself (so the sandbox follows AWS), by key
/// prefix, with the reason.
const MOTO_GAPS: &[(&str, &str)] = &[
    (
        "ecs.describe.failure",
        "moto writes the pre-2021 short service ARN (service/NAME) in failures; AWS's long \
         ARN format includes the cluster. envctl should match failures by the trailing name.",
    ),
    (
        "ecs.svc.updated_primary",
        "moto keeps the old task definition on the PRIMARY deployment after UpdateService; \
         ECS starts a new PRIMARY deployment with the new revision.",
    ),
    (
        "kafka.arn_shape",
        "moto's MSK cluster ARN lacks the cluster name (cluster/UUID); AWS's is \
         cluster/NAME/UUID-N.",
    ),
    (
        "kafka.describe.",
        "moto 5.1 writes creationTime without a UTC offset, which the SDK refuses to parse, \
         so DescribeClusterV2 against moto fails.",
    ),
    (
        "kafka.listed",
        "same unparseable creationTime in ListClustersV2.",
    ),
    (
        "kafka.missing",
        "moto does not answer NotFoundException for an unknown cluster ARN.",
    ),
];

/// The writer's master secret and the awslogs group, as envctl uses them: the error codes
/// it decides on and the shape of what it reads.
async fn secrets_and_logs_scenario(sdk: &SdkConfig, o: &mut Observed) {
    use aws_sdk_secretsmanager::error::ProvideErrorMetadata as _;
    let sm = aws_sdk_secretsmanager::Client::new(sdk);
    let code = |e: Option<&str>| e.unwrap_or("<none>").to_string();
    let pw = sm
        .get_random_password()
        .password_length(32)
        .exclude_characters("/'\"@ \\`")
        .send()
        .await
        .expect("random password");
    let pw = pw.random_password().unwrap_or_default();
    put(o, "secrets.random.len", pw.len());
    put(
        o,
        "secrets.random.excluded",
        pw.chars().any(|c| "/'\"@ \\`".contains(c)),
    );
    let created = sm
        .create_secret()
        .name("envctl-conf-db-master")
        .secret_string(r#"{"username":"u","password":"p"}"#)
        .tags(
            aws_sdk_secretsmanager::types::Tag::builder()
                .key("envctl:env")
                .value("conf")
                .build(),
        )
        .send()
        .await
        .expect("create secret");
    let arn = created.arn().unwrap_or_default().to_string();
    let suffix = arn
        .rsplit_once("envctl-conf-db-master-")
        .map(|(_, s)| s.len());
    put(o, "secrets.arn.suffix_len", suffix);
    let dup = sm
        .create_secret()
        .name("envctl-conf-db-master")
        .secret_string("{}")
        .send()
        .await;
    put(
        o,
        "secrets.create.duplicate",
        code(dup.err().as_ref().and_then(|e| e.code())),
    );
    let described = sm
        .describe_secret()
        .secret_id("envctl-conf-db-master")
        .send()
        .await
        .expect("describe");
    put(
        o,
        "secrets.describe.arn_matches",
        described.arn() == Some(arn.as_str()),
    );
    put(o, "secrets.describe.tags", described.tags().len());
    let value = sm
        .get_secret_value()
        .secret_id(&arn)
        .send()
        .await
        .expect("value");
    put(o, "secrets.value", value.secret_string());
    let missing = sm
        .describe_secret()
        .secret_id("envctl-nothing")
        .send()
        .await;
    put(
        o,
        "secrets.describe.missing",
        code(missing.err().as_ref().and_then(|e| e.code())),
    );
    let both = sm
        .delete_secret()
        .secret_id(&arn)
        .force_delete_without_recovery(true)
        .recovery_window_in_days(7)
        .send()
        .await;
    put(
        o,
        "secrets.delete.both",
        code(both.err().as_ref().and_then(|e| e.code())),
    );
    sm.delete_secret()
        .secret_id(&arn)
        .force_delete_without_recovery(true)
        .send()
        .await
        .expect("forced delete");
    let gone = sm.describe_secret().secret_id(&arn).send().await;
    put(
        o,
        "secrets.after_delete",
        code(gone.err().as_ref().and_then(|e| e.code())),
    );

    let logs = aws_sdk_cloudwatchlogs::Client::new(sdk);
    logs.create_log_group()
        .log_group_name("/ecs/conf")
        .tags("envctl:env", "conf")
        .send()
        .await
        .expect("create log group");
    let dup = logs
        .create_log_group()
        .log_group_name("/ecs/conf")
        .send()
        .await;
    put(
        o,
        "logs.create.duplicate",
        code(dup.err().as_ref().and_then(|e| e.code())),
    );
    let groups = logs
        .describe_log_groups()
        .log_group_name_prefix("/ecs/conf")
        .send()
        .await
        .expect("describe log groups");
    let g = groups.log_groups().first();
    put(o, "logs.describe.name", g.and_then(|g| g.log_group_name()));
    let group_arn = g.and_then(|g| g.arn()).unwrap_or_default().to_string();
    put(
        o,
        "logs.describe.arn_ends_with_star",
        group_arn.ends_with(":*"),
    );
    let tags = logs
        .list_tags_for_resource()
        .resource_arn(group_arn.trim_end_matches(":*"))
        .send()
        .await
        .expect("log group tags");
    put(o, "logs.tags", tags.tags().map(|t| t.len()));
    logs.delete_log_group()
        .log_group_name("/ecs/conf")
        .send()
        .await
        .expect("delete log group");
    let again = logs
        .delete_log_group()
        .log_group_name("/ecs/conf")
        .send()
        .await;
    put(
        o,
        "logs.delete.missing",
        code(again.err().as_ref().and_then(|e| e.code())),
    );
}

#[tokio::test]
async fn sandbox_agrees_with_moto_on_what_envctl_reads() {
    if require_moto().is_none() {
        return;
    }
    let moto = start_moto().await;
    let moto_sdk = common::sdk_config(&moto.endpoint).await;
    let noop: Settle<'_> = Box::new(|| Box::pin(async {}));
    let mut from_moto = Observed::new();
    ecs_scenario(&moto_sdk, &noop, &mut from_moto).await;
    rds_scenario(&moto_sdk, &noop, &mut from_moto).await;
    kafka_scenario(&moto_sdk, &noop, &mut from_moto).await;
    secrets_and_logs_scenario(&moto_sdk, &mut from_moto).await;

    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    // moto applies every change at once; on the sandbox, let the state machines finish.
    let settle: Settle<'_> = Box::new(move || {
        let clock = clock.clone();
        Box::pin(async move { clock.advance(Duration::from_secs(2 * 3600)) })
    });
    let mut from_sandbox = Observed::new();
    ecs_scenario(&sdk, &settle, &mut from_sandbox).await;
    rds_scenario(&sdk, &settle, &mut from_sandbox).await;
    kafka_scenario(&sdk, &settle, &mut from_sandbox).await;
    secrets_and_logs_scenario(&sdk, &mut from_sandbox).await;
    sandbox.shutdown().await.expect("shutdown");

    let mut differences = Vec::new();
    for (key, sandbox_value) in &from_sandbox {
        if MOTO_GAPS.iter().any(|(prefix, _)| key.starts_with(prefix)) {
            continue;
        }
        let moto_value = from_moto.get(key).map(String::as_str).unwrap_or("<absent>");
        if moto_value != sandbox_value {
            differences.push(format!(
                "{key}:\n    moto:    {moto_value}\n    sandbox: {sandbox_value}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} field(s) differ:\n{}",
        differences.len(),
        differences.join("\n")
    );
    drop(moto);
}
