//! RDS through the real aws-sdk-rds client.

mod common;

use aws_sdk_rds::Client;
use aws_sdk_rds::error::ProvideErrorMetadata;
use aws_sdk_rds::operation::create_db_instance::CreateDBInstanceError;
use aws_sdk_rds::operation::create_db_instance_read_replica::CreateDBInstanceReadReplicaError;
use aws_sdk_rds::operation::delete_db_parameter_group::DeleteDBParameterGroupError;
use aws_sdk_rds::operation::describe_db_instances::DescribeDBInstancesError;
use aws_sdk_rds::operation::modify_db_instance::ModifyDBInstanceError;
use aws_sdk_rds::types::{ApplyMethod, DbInstance, Filter, Parameter, Tag};
use common::secs;
use envctl_sandbox::{FaultConfig, StuckFault};

async fn create(rds: &Client, id: &str) -> DbInstance {
    rds.create_db_instance()
        .db_instance_identifier(id)
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(500)
        .master_username("folio")
        .master_user_password("secret123")
        .tags(Tag::builder().key("env").value("qcp1").build())
        .send()
        .await
        .expect("create")
        .db_instance()
        .expect("instance")
        .clone()
}

async fn describe(rds: &Client, id: &str) -> DbInstance {
    rds.describe_db_instances()
        .db_instance_identifier(id)
        .send()
        .await
        .expect("describe")
        .db_instances()[0]
        .clone()
}

#[tokio::test]
async fn instance_lifecycle_replica_and_modify_quirk() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = Client::new(&sdk);
    let created = create(&rds, "qcp1-db").await;
    assert_eq!(created.db_instance_status(), Some("creating"));
    assert_eq!(
        created.db_instance_arn(),
        Some("arn:aws:rds:us-east-1:123456789012:db:qcp1-db")
    );
    assert!(created.endpoint().is_none());

    let err = rds
        .create_db_instance()
        .db_instance_identifier("qcp1-db")
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(500)
        .master_username("folio")
        .master_user_password("secret123")
        .send()
        .await
        .expect_err("duplicate");
    assert!(matches!(
        err.into_service_error(),
        CreateDBInstanceError::DbInstanceAlreadyExistsFault(_)
    ));

    // A replica needs an available source.
    let err = rds
        .create_db_instance_read_replica()
        .db_instance_identifier("qcp1-db-reader")
        .source_db_instance_identifier("qcp1-db")
        .send()
        .await
        .expect_err("source creating");
    assert!(matches!(
        err.into_service_error(),
        CreateDBInstanceReadReplicaError::InvalidDbInstanceStateFault(_)
    ));

    clock.advance(secs(11 * 60));
    assert_eq!(
        describe(&rds, "qcp1-db").await.db_instance_status(),
        Some("backing-up")
    );
    clock.advance(secs(60));
    let writer = describe(&rds, "qcp1-db").await;
    assert_eq!(writer.db_instance_status(), Some("available"));
    let endpoint = writer
        .endpoint()
        .and_then(|e| e.address())
        .expect("address");
    assert!(
        endpoint.starts_with("qcp1-db.c") && endpoint.ends_with(".us-east-1.rds.amazonaws.com")
    );
    assert_eq!(writer.endpoint().and_then(|e| e.port()), Some(5432));
    assert_eq!(writer.tag_list()[0].key(), Some("env"));

    let replica = rds
        .create_db_instance_read_replica()
        .db_instance_identifier("qcp1-db-reader")
        .source_db_instance_identifier("qcp1-db")
        .send()
        .await
        .expect("replica")
        .db_instance()
        .expect("instance")
        .clone();
    assert_eq!(
        replica.read_replica_source_db_instance_identifier(),
        Some("qcp1-db")
    );
    assert_eq!(
        describe(&rds, "qcp1-db")
            .await
            .read_replica_db_instance_identifiers(),
        ["qcp1-db-reader".to_string()]
    );
    clock.advance(secs(10 * 60));
    let reader = describe(&rds, "qcp1-db-reader").await;
    assert_eq!(reader.db_instance_status(), Some("available"));
    let reader_host = reader.endpoint().and_then(|e| e.address()).expect("addr");
    assert_ne!(reader_host, endpoint);

    // Class change: still "available" right after the call, then modifying, then the new class.
    let modified = rds
        .modify_db_instance()
        .db_instance_identifier("qcp1-db")
        .db_instance_class("db.r6g.2xlarge")
        .apply_immediately(true)
        .send()
        .await
        .expect("modify")
        .db_instance()
        .expect("instance")
        .clone();
    assert_eq!(modified.db_instance_status(), Some("available"));
    assert_eq!(
        modified
            .pending_modified_values()
            .and_then(|p| p.db_instance_class()),
        Some("db.r6g.2xlarge")
    );
    clock.advance(secs(2));
    assert_eq!(
        describe(&rds, "qcp1-db").await.db_instance_status(),
        Some("available")
    );
    clock.advance(secs(4));
    assert_eq!(
        describe(&rds, "qcp1-db").await.db_instance_status(),
        Some("modifying")
    );
    let err = rds
        .modify_db_instance()
        .db_instance_identifier("qcp1-db")
        .allocated_storage(600)
        .apply_immediately(true)
        .send()
        .await
        .expect_err("modifying");
    assert!(matches!(
        err.into_service_error(),
        ModifyDBInstanceError::InvalidDbInstanceStateFault(_)
    ));
    clock.advance(secs(10 * 60));
    let w = describe(&rds, "qcp1-db").await;
    assert_eq!(w.db_instance_status(), Some("available"));
    assert_eq!(w.db_instance_class(), Some("db.r6g.2xlarge"));
    assert!(
        w.pending_modified_values()
            .and_then(|p| p.db_instance_class())
            .is_none()
    );

    // Delete: deleting, then gone.
    let deleted = rds
        .delete_db_instance()
        .db_instance_identifier("qcp1-db-reader")
        .skip_final_snapshot(true)
        .send()
        .await
        .expect("delete");
    assert_eq!(
        deleted.db_instance().and_then(|d| d.db_instance_status()),
        Some("deleting")
    );
    clock.advance(secs(5 * 60 + 1));
    let err = rds
        .describe_db_instances()
        .db_instance_identifier("qcp1-db-reader")
        .send()
        .await
        .expect_err("gone");
    assert!(matches!(
        err.into_service_error(),
        DescribeDBInstancesError::DbInstanceNotFoundFault(_)
    ));
    assert!(
        describe(&rds, "qcp1-db")
            .await
            .read_replica_db_instance_identifiers()
            .is_empty()
    );
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn describe_filters_and_pagination() {
    let (sandbox, sdk) = common::manual().await;
    let rds = Client::new(&sdk);
    for i in 0..25 {
        create(&rds, &format!("db-{i:02}")).await;
    }
    let mut ids = Vec::new();
    let mut pages = rds
        .describe_db_instances()
        .max_records(20)
        .into_paginator()
        .send();
    let mut n = 0;
    while let Some(page) = pages.next().await {
        n += 1;
        for d in page.expect("page").db_instances() {
            ids.push(d.db_instance_identifier().unwrap_or_default().to_string());
        }
    }
    assert_eq!(n, 2);
    assert_eq!(ids.len(), 25);
    let filtered = rds
        .describe_db_instances()
        .filters(
            Filter::builder()
                .name("db-instance-id")
                .values("db-03")
                .values("arn:aws:rds:us-east-1:123456789012:db:db-07")
                .build(),
        )
        .send()
        .await
        .expect("filtered");
    let got: Vec<_> = filtered
        .db_instances()
        .iter()
        .filter_map(|d| d.db_instance_identifier())
        .collect();
    assert_eq!(got, ["db-03", "db-07"]);
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn parameter_groups_and_tags() {
    let (sandbox, sdk) = common::manual().await;
    let rds = Client::new(&sdk);
    let pg = rds
        .create_db_parameter_group()
        .db_parameter_group_name("qcp1-pg")
        .db_parameter_group_family("postgres16")
        .description("qcp1")
        .send()
        .await
        .expect("create pg");
    assert_eq!(
        pg.db_parameter_group()
            .and_then(|g| g.db_parameter_group_arn()),
        Some("arn:aws:rds:us-east-1:123456789012:pg:qcp1-pg")
    );
    // max_connections is static: immediate apply is refused, pending-reboot accepted.
    let err = rds
        .modify_db_parameter_group()
        .db_parameter_group_name("qcp1-pg")
        .parameters(
            Parameter::builder()
                .parameter_name("max_connections")
                .parameter_value("2731")
                .apply_method(ApplyMethod::Immediate)
                .build(),
        )
        .send()
        .await
        .expect_err("static");
    assert_eq!(
        err.into_service_error().meta().code(),
        Some("InvalidParameterCombination")
    );
    rds.modify_db_parameter_group()
        .db_parameter_group_name("qcp1-pg")
        .parameters(
            Parameter::builder()
                .parameter_name("max_connections")
                .parameter_value("2731")
                .apply_method(ApplyMethod::PendingReboot)
                .build(),
        )
        .send()
        .await
        .expect("modify pg");
    let user = rds
        .describe_db_parameters()
        .db_parameter_group_name("qcp1-pg")
        .source("user")
        .send()
        .await
        .expect("params");
    assert_eq!(user.parameters().len(), 1);
    assert_eq!(user.parameters()[0].parameter_value(), Some("2731"));
    let mut all = 0;
    let mut pages = rds
        .describe_db_parameters()
        .db_parameter_group_name("qcp1-pg")
        .max_records(20)
        .into_paginator()
        .items()
        .send();
    while let Some(p) = pages.next().await {
        p.expect("param");
        all += 1;
    }
    assert!(all > 10);

    let inst = rds
        .create_db_instance()
        .db_instance_identifier("db")
        .db_instance_class("db.t3.micro")
        .engine("postgres")
        .engine_version("16")
        .allocated_storage(20)
        .master_username("u")
        .master_user_password("secret123")
        .db_parameter_group_name("qcp1-pg")
        .send()
        .await
        .expect("create");
    let arn = inst
        .db_instance()
        .and_then(|d| d.db_instance_arn())
        .expect("arn")
        .to_string();
    let err = rds
        .delete_db_parameter_group()
        .db_parameter_group_name("qcp1-pg")
        .send()
        .await
        .expect_err("in use");
    assert!(matches!(
        err.into_service_error(),
        DeleteDBParameterGroupError::InvalidDbParameterGroupStateFault(_)
    ));
    let err = rds
        .delete_db_parameter_group()
        .db_parameter_group_name("nope")
        .send()
        .await
        .expect_err("missing");
    assert!(matches!(
        err.into_service_error(),
        DeleteDBParameterGroupError::DbParameterGroupNotFoundFault(_)
    ));

    rds.add_tags_to_resource()
        .resource_name(&arn)
        .tags(Tag::builder().key("expires").value("2026-12-01").build())
        .send()
        .await
        .expect("tag");
    let tags = rds
        .list_tags_for_resource()
        .resource_name(&arn)
        .send()
        .await
        .expect("list tags");
    assert_eq!(tags.tag_list()[0].value(), Some("2026-12-01"));
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn stuck_fault_holds_the_state() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = Client::new(&sdk);
    create(&rds, "db").await;
    sandbox.set_faults(FaultConfig {
        stuck: vec![StuckFault {
            service: "rds".into(),
            resource: "db".into(),
            state: "creating".into(),
        }],
        ..FaultConfig::default()
    });
    clock.advance(secs(3600));
    assert_eq!(
        describe(&rds, "db").await.db_instance_status(),
        Some("creating")
    );
    sandbox.set_faults(FaultConfig::default());
    assert_eq!(
        describe(&rds, "db").await.db_instance_status(),
        Some("available")
    );
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn static_parameter_change_waits_for_a_reboot() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = Client::new(&sdk);
    group_and_instance(&rds, &clock).await;
    let apply_status = |i: &DbInstance| {
        i.db_parameter_groups()[0]
            .parameter_apply_status()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(apply_status(&describe(&rds, "db").await), "in-sync");
    set_max_connections(&rds).await;
    assert_eq!(apply_status(&describe(&rds, "db").await), "pending-reboot");
    let rebooting = rds
        .reboot_db_instance()
        .db_instance_identifier("db")
        .send()
        .await
        .expect("reboot");
    assert_eq!(
        rebooting.db_instance().and_then(|i| i.db_instance_status()),
        Some("rebooting")
    );
    clock.advance(secs(91));
    let i = describe(&rds, "db").await;
    assert_eq!(i.db_instance_status(), Some("available"));
    assert_eq!(apply_status(&i), "in-sync");
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn remove_tags_and_delete_an_unused_parameter_group() {
    let (sandbox, sdk) = common::manual().await;
    let rds = Client::new(&sdk);
    let pg = rds
        .create_db_parameter_group()
        .db_parameter_group_name("pg")
        .db_parameter_group_family("postgres16")
        .description("d")
        .tags(Tag::builder().key("env").value("qcp1").build())
        .tags(Tag::builder().key("run").value("r1").build())
        .send()
        .await
        .expect("pg");
    let arn = pg
        .db_parameter_group()
        .and_then(|g| g.db_parameter_group_arn())
        .expect("arn")
        .to_string();
    rds.remove_tags_from_resource()
        .resource_name(&arn)
        .tag_keys("run")
        .send()
        .await
        .expect("remove tags");
    let tags = rds
        .list_tags_for_resource()
        .resource_name(&arn)
        .send()
        .await
        .expect("tags");
    assert_eq!(tags.tag_list().len(), 1);
    assert_eq!(tags.tag_list()[0].key(), Some("env"));
    rds.delete_db_parameter_group()
        .db_parameter_group_name("pg")
        .send()
        .await
        .expect("delete");
    let err = rds
        .describe_db_parameters()
        .db_parameter_group_name("pg")
        .send()
        .await
        .expect_err("gone");
    assert!(
        err.into_service_error()
            .is_db_parameter_group_not_found_fault()
    );
    sandbox.shutdown().await.expect("shutdown");
}

/// A parameter group `pg` (postgres16) and an instance `db` using it, available.
async fn group_and_instance(rds: &Client, clock: &envctl_sandbox::Clock) {
    rds.create_db_parameter_group()
        .db_parameter_group_name("pg")
        .db_parameter_group_family("postgres16")
        .description("d")
        .send()
        .await
        .expect("pg");
    rds.create_db_instance()
        .db_instance_identifier("db")
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .engine_version("16")
        .allocated_storage(100)
        .master_username("u")
        .master_user_password("secret123")
        .db_parameter_group_name("pg")
        .send()
        .await
        .expect("create");
    clock.advance(secs(12 * 60));
}

/// `group_and_instance`, with max_connections set in the group.
async fn instance_with_group(rds: &Client, clock: &envctl_sandbox::Clock) {
    group_and_instance(rds, clock).await;
    set_max_connections(rds).await;
}

/// ModifyDBParameterGroup of `pg`: max_connections 2731, at the next reboot.
async fn set_max_connections(rds: &Client) {
    rds.modify_db_parameter_group()
        .db_parameter_group_name("pg")
        .parameters(
            Parameter::builder()
                .parameter_name("max_connections")
                .parameter_value("2731")
                .apply_method(ApplyMethod::PendingReboot)
                .build(),
        )
        .send()
        .await
        .expect("modify pg");
}

/// docs/aws-behaviour.md, "Parameters the spec no longer sets go back to the engine
/// default": ResetDBParameterGroup takes the parameter out of the user-set ones, and the
/// instances need a reboot to run the default again.
#[tokio::test]
async fn reset_parameters_return_to_the_engine_default() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = Client::new(&sdk);
    instance_with_group(&rds, &clock).await;
    let user_set = |rds: Client| async move {
        rds.describe_db_parameters()
            .db_parameter_group_name("pg")
            .source("user")
            .send()
            .await
            .expect("parameters")
            .parameters()
            .iter()
            .filter_map(|p| p.parameter_name().map(str::to_string))
            .collect::<Vec<_>>()
    };
    assert_eq!(user_set(rds.clone()).await, vec!["max_connections"]);
    let err = rds
        .reset_db_parameter_group()
        .db_parameter_group_name("pg")
        .reset_all_parameters(false)
        .send()
        .await
        .expect_err("no parameter named");
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    rds.reset_db_parameter_group()
        .db_parameter_group_name("pg")
        .reset_all_parameters(false)
        .parameters(
            Parameter::builder()
                .parameter_name("max_connections")
                .apply_method(ApplyMethod::PendingReboot)
                .build(),
        )
        .send()
        .await
        .expect("reset");
    assert!(user_set(rds.clone()).await.is_empty());
    let status = describe(&rds, "db").await.db_parameter_groups()[0]
        .parameter_apply_status()
        .map(str::to_string);
    assert_eq!(status.as_deref(), Some("pending-reboot"));
    sandbox.shutdown().await.expect("shutdown");
}

/// docs/aws-behaviour.md, "A parameter group counts a deleted instance for a moment": the
/// delete right after the last instance is gone is refused, the same delete later passes.
#[tokio::test]
async fn a_parameter_group_is_in_use_for_a_moment_after_its_last_instance() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = Client::new(&sdk);
    instance_with_group(&rds, &clock).await;
    rds.delete_db_instance()
        .db_instance_identifier("db")
        .skip_final_snapshot(true)
        .send()
        .await
        .expect("delete");
    clock.advance(secs(5 * 60));
    let err = rds
        .describe_db_instances()
        .db_instance_identifier("db")
        .send()
        .await
        .expect_err("gone");
    assert_eq!(err.code(), Some("DBInstanceNotFound"));
    let err = rds
        .delete_db_parameter_group()
        .db_parameter_group_name("pg")
        .send()
        .await
        .expect_err("still counted");
    assert!(matches!(
        err.into_service_error(),
        DeleteDBParameterGroupError::InvalidDbParameterGroupStateFault(_)
    ));
    clock.advance(secs(60));
    rds.delete_db_parameter_group()
        .db_parameter_group_name("pg")
        .send()
        .await
        .expect("released");
    sandbox.shutdown().await.expect("shutdown");
}

/// docs/aws-behaviour.md, "Final snapshots have a new name each time": a final snapshot's
/// identifier is taken once, and a replica takes none.
#[tokio::test]
async fn a_final_snapshot_identifier_is_used_once_and_never_by_a_replica() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = Client::new(&sdk);
    for id in ["a", "b"] {
        create(&rds, id).await;
    }
    clock.advance(secs(12 * 60));
    rds.create_db_instance_read_replica()
        .db_instance_identifier("a-reader")
        .source_db_instance_identifier("a")
        .send()
        .await
        .expect("replica");
    clock.advance(secs(10 * 60));
    let err = rds
        .delete_db_instance()
        .db_instance_identifier("a-reader")
        .skip_final_snapshot(false)
        .final_db_snapshot_identifier("a-reader-final")
        .send()
        .await
        .expect_err("a replica has no final snapshot");
    assert_eq!(err.code(), Some("InvalidParameterCombination"));
    rds.delete_db_instance()
        .db_instance_identifier("a")
        .skip_final_snapshot(false)
        .final_db_snapshot_identifier("db-final")
        .send()
        .await
        .expect("first final snapshot");
    let err = rds
        .delete_db_instance()
        .db_instance_identifier("b")
        .skip_final_snapshot(false)
        .final_db_snapshot_identifier("db-final")
        .send()
        .await
        .expect_err("the identifier is taken");
    assert_eq!(err.code(), Some("DBSnapshotAlreadyExists"));
    assert_eq!(
        describe(&rds, "b").await.db_instance_status(),
        Some("available")
    );
    sandbox.shutdown().await.expect("shutdown");
}
