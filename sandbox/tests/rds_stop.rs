//! StopDBInstance / StartDBInstance through the real aws-sdk-rds client: the state machine
//! (stopping, stopped, starting, available), the read-replica rule, and the automatic start
//! after seven days.

mod common;

use aws_sdk_rds::Client;
use common::secs;

async fn status(rds: &Client, id: &str) -> String {
    rds.describe_db_instances()
        .db_instance_identifier(id)
        .send()
        .await
        .expect("describe")
        .db_instances()
        .first()
        .and_then(|d| d.db_instance_status())
        .unwrap_or_default()
        .to_string()
}

async fn create(rds: &Client, id: &str) {
    rds.create_db_instance()
        .db_instance_identifier(id)
        .db_instance_class("db.r6g.xlarge")
        .engine("postgres")
        .allocated_storage(100)
        .master_username("folio")
        .master_user_password("envctl-test-password-1")
        .send()
        .await
        .expect("create");
}

fn code<E: aws_sdk_rds::error::ProvideErrorMetadata>(e: &E) -> String {
    e.code().unwrap_or_default().to_string()
}

#[tokio::test]
async fn stop_start_and_the_seven_day_restart() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = Client::new(&sdk);
    create(&rds, "qcp1-db").await;

    // Only an available instance stops.
    let err = rds
        .stop_db_instance()
        .db_instance_identifier("qcp1-db")
        .send()
        .await
        .expect_err("creating");
    assert_eq!(code(&err), "InvalidDBInstanceState");
    clock.advance(secs(12 * 60));
    assert_eq!(status(&rds, "qcp1-db").await, "available");

    let out = rds
        .stop_db_instance()
        .db_instance_identifier("qcp1-db")
        .send()
        .await
        .expect("stop");
    assert_eq!(
        out.db_instance().and_then(|d| d.db_instance_status()),
        Some("stopping")
    );
    clock.advance(secs(4 * 60));
    assert_eq!(status(&rds, "qcp1-db").await, "stopped");

    // A stopped instance cannot be stopped again; it starts, then becomes available.
    let err = rds
        .stop_db_instance()
        .db_instance_identifier("qcp1-db")
        .send()
        .await
        .expect_err("stopped");
    assert_eq!(code(&err), "InvalidDBInstanceState");
    rds.start_db_instance()
        .db_instance_identifier("qcp1-db")
        .send()
        .await
        .expect("start");
    assert_eq!(status(&rds, "qcp1-db").await, "starting");
    let err = rds
        .start_db_instance()
        .db_instance_identifier("qcp1-db")
        .send()
        .await
        .expect_err("starting");
    assert_eq!(code(&err), "InvalidDBInstanceState");
    clock.advance(secs(6 * 60));
    assert_eq!(status(&rds, "qcp1-db").await, "available");

    // Left stopped, RDS starts it after seven days.
    rds.stop_db_instance()
        .db_instance_identifier("qcp1-db")
        .send()
        .await
        .expect("stop again");
    clock.advance(secs(4 * 60 + 7 * 86_400 - 60));
    assert_eq!(status(&rds, "qcp1-db").await, "stopped");
    clock.advance(secs(60));
    assert_eq!(status(&rds, "qcp1-db").await, "starting");
    clock.advance(secs(6 * 60));
    assert_eq!(status(&rds, "qcp1-db").await, "available");
}

#[tokio::test]
async fn an_instance_with_a_replica_or_a_replica_does_not_stop() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let rds = Client::new(&sdk);
    create(&rds, "pcp1-db").await;
    clock.advance(secs(12 * 60));
    rds.create_db_instance_read_replica()
        .db_instance_identifier("pcp1-db-reader")
        .source_db_instance_identifier("pcp1-db")
        .send()
        .await
        .expect("replica");
    clock.advance(secs(10 * 60));
    for id in ["pcp1-db", "pcp1-db-reader"] {
        assert_eq!(status(&rds, id).await, "available");
        let err = rds
            .stop_db_instance()
            .db_instance_identifier(id)
            .send()
            .await
            .expect_err("replication");
        assert_eq!(code(&err), "InvalidDBInstanceState", "{id}");
        assert_eq!(status(&rds, id).await, "available");
    }
}
