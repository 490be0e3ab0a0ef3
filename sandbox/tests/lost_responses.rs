//! The lost-response fault: the call takes effect, then its answer is dropped. What a
//! client's retry then meets is AWS's "already exists" answer, and the resource can be read
//! back with its tags (DescribeDB*Groups carry none: ListTagsForResource on the ARN).

mod common;

use aws_sdk_rds::types::Tag;
use envctl_sandbox::{ErrorKind, FaultConfig, LostResponseFault};

fn lose(service: &str, operation: &str) -> FaultConfig {
    FaultConfig {
        lost_responses: vec![LostResponseFault {
            service: service.into(),
            operation: operation.into(),
            times: 1,
            kind: ErrorKind::ServerError,
        }],
        ..FaultConfig::default()
    }
}

fn owner_tag() -> Tag {
    Tag::builder().key("envctl:env").value("pcp1").build()
}

#[tokio::test]
async fn a_lost_parameter_group_answer_leaves_the_group_and_the_retry_meets_it() {
    let (sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    sandbox.set_faults(lose("rds", "CreateDBParameterGroup"));
    let err = rds
        .create_db_parameter_group()
        .db_parameter_group_name("pcp1-db-params")
        .db_parameter_group_family("postgres16")
        .description("d")
        .tags(owner_tag())
        .send()
        .await
        .expect_err("the SDK's retry meets the group the lost call made");
    assert_eq!(
        aws_sdk_rds::error::ProvideErrorMetadata::code(&err),
        Some("DBParameterGroupAlreadyExists")
    );
    let stats = sandbox.stats().get("rds", "CreateDBParameterGroup");
    assert_eq!((stats.count, stats.faulted, stats.errors), (2, 1, 1));

    let described = rds
        .describe_db_parameter_groups()
        .db_parameter_group_name("pcp1-db-params")
        .send()
        .await
        .expect("described");
    let group = &described.db_parameter_groups()[0];
    assert_eq!(group.db_parameter_group_family(), Some("postgres16"));
    let arn = group.db_parameter_group_arn().expect("an ARN");
    let tags = rds
        .list_tags_for_resource()
        .resource_name(arn)
        .send()
        .await
        .expect("tags");
    assert_eq!(tags.tag_list().len(), 1);
    assert_eq!(tags.tag_list()[0].value(), Some("pcp1"));
}

#[tokio::test]
async fn subnet_group_tags_are_read_by_arn() {
    let (_sandbox, sdk) = common::manual().await;
    let rds = aws_sdk_rds::Client::new(&sdk);
    rds.create_db_subnet_group()
        .db_subnet_group_name("pcp1-db-subnets")
        .db_subnet_group_description("d")
        .subnet_ids("subnet-1")
        .subnet_ids("subnet-2")
        .tags(owner_tag())
        .send()
        .await
        .expect("created");
    let err = rds
        .create_db_subnet_group()
        .db_subnet_group_name("pcp1-db-subnets")
        .db_subnet_group_description("d")
        .subnet_ids("subnet-1")
        .subnet_ids("subnet-2")
        .send()
        .await
        .expect_err("a second create is refused");
    assert_eq!(
        aws_sdk_rds::error::ProvideErrorMetadata::code(&err),
        Some("DBSubnetGroupAlreadyExists")
    );
    let listed = rds
        .describe_db_subnet_groups()
        .send()
        .await
        .expect("listed");
    let arn = listed.db_subnet_groups()[0]
        .db_subnet_group_arn()
        .expect("an ARN");
    assert!(arn.contains(":subgrp:pcp1-db-subnets"), "{arn}");
    let tags = rds
        .list_tags_for_resource()
        .resource_name(arn)
        .send()
        .await
        .expect("tags");
    assert_eq!(tags.tag_list()[0].value(), Some("pcp1"));
}

#[tokio::test]
async fn a_lost_msk_configuration_answer_leaves_it_and_the_retry_conflicts() {
    let (sandbox, sdk) = common::manual().await;
    let kafka = aws_sdk_kafka::Client::new(&sdk);
    sandbox.set_faults(lose("kafka", "CreateConfiguration"));
    let err = kafka
        .create_configuration()
        .name("pcp1-msk-tenant-config")
        .description("envctl:env=pcp1 managed by envctl")
        .kafka_versions("3.6.0")
        .server_properties(aws_smithy_types::Blob::new(
            "auto.create.topics.enable=true\n",
        ))
        .send()
        .await
        .expect_err("the SDK's retry meets the configuration the lost call made");
    assert_eq!(
        aws_sdk_kafka::error::ProvideErrorMetadata::code(&err),
        Some("ConflictException")
    );
    let listed = kafka.list_configurations().send().await.expect("listed");
    assert_eq!(listed.configurations().len(), 1);
    assert_eq!(
        listed.configurations()[0].description(),
        Some("envctl:env=pcp1 managed by envctl")
    );
}
