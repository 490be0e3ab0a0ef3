//! Planning what AWS does to data stores by itself or refuses (issue 23): the writer's
//! master secret, MSK's own version upgrades, parameter groups not yet in effect, the
//! awslogs groups.
use super::tests::{compiled, plan};
use super::*;
use crate::model::live::converged;
use crate::model::requests::DbModification;

/// A writer is created with its password read from envctl's secret; the request shows the
/// reference, never a value. Destroy deletes the secret after the writer.
#[test]
fn the_writer_takes_its_password_from_envctls_secret_and_destroy_deletes_it_last() {
    let c = compiled("pcp1", &[]);
    let db = c.desired.db.as_ref().expect("db");
    let req = crate::model::requests::create_db_instance(&c.desired, &db.writer, &[]);
    let json = serde_json::to_value(&req).expect("json");
    assert_eq!(
        json["MasterUserPassword"],
        "{{resolve:secretsmanager:envctl-pcp1-db-master:SecretString:password}}"
    );
    assert!(json.get("ManageMasterUserPassword").is_none(), "{json}");
    let reader = crate::model::requests::create_db_instance(&c.desired, &db.readers[0], &[]);
    let json = serde_json::to_value(&reader).expect("json");
    assert!(json.get("MasterUserPassword").is_none(), "{json}");

    let live = converged(&c.desired);
    let d = destroy_plan(
        &c.desired,
        &live,
        &Default::default(),
        &Default::default(),
        &Estimates::default(),
    );
    let secret = d
        .action("rds/master-secret/envctl-pcp1-db-master")
        .expect("secret deleted");
    let after: Vec<String> = secret.deps.iter().map(ToString::to_string).collect();
    assert!(
        after.contains(&"rds/instance/pcp1-db".to_string()),
        "{after:?}"
    );
    assert!(
        matches!(&secret.op, Op::Delete(Delete::DbMasterSecret { arn }) if arn.contains(":secret:envctl-pcp1-db-master-"))
    );
    // Someone else's secret of that name is left alone.
    let mut foreign = live.clone();
    if let Some(s) = foreign.db_master_secrets.values_mut().next() {
        s.tags.clear();
    }
    let d = destroy_plan(
        &c.desired,
        &foreign,
        &Default::default(),
        &Default::default(),
        &Estimates::default(),
    );
    assert!(
        d.action("rds/master-secret/envctl-pcp1-db-master")
            .is_none()
    );
}

/// MSK moves a cluster past its version's end of support by itself: a live version above
/// the pinned one is converged with a note, never a delete and recreate; a lower one is
/// still a replacement (MSK cannot downgrade).
#[test]
fn a_kafka_version_msk_moved_up_is_converged_with_a_note() {
    let c = compiled("pcp1", &["kafka.tenant.version=\"3.6.0\""]);
    let name = c.desired.kafka["tenant"].name.clone();
    for (live_version, noop) in [("3.7.x", true), ("3.8.x", true), ("3.6.0", true)] {
        let mut live = converged(&c.desired);
        if let Some(k) = live.kafka.get_mut(&name) {
            k.kafka_version = live_version.into();
        }
        let p = plan(&c.desired, &live);
        let a = p.action("kafka/cluster/tenant").expect("cluster");
        assert_eq!(a.kind == ActionKind::NoOp, noop, "{live_version}: {a:#?}");
        if live_version != "3.6.0" {
            assert!(
                a.reasons[0].starts_with(&format!("MSK upgraded Kafka 3.6.0 -> {live_version}")),
                "{:?}",
                a.reasons
            );
            assert!(render::render(&p).contains("note: kafka/cluster/tenant: MSK upgraded"));
        }
    }
    let newer = compiled("pcp1", &["kafka.tenant.version=\"3.8.x\""]);
    let live = converged(&c.desired);
    let up = plan(&newer.desired, &live);
    assert_eq!(
        up.action("kafka/cluster/tenant").expect("cluster").kind,
        ActionKind::RollingUpdate
    );
    let mut above = converged(&newer.desired);
    if let Some(k) = above.kafka.get_mut(&name) {
        k.kafka_version = "3.9.x".into();
    }
    assert!(!plan(&newer.desired, &above).has_changes());
}

/// Converged means the group's values are in effect (ParameterApplyStatus `in-sync`):
/// `pending-reboot` plans a visible reboot, `applying` a wait.
#[test]
fn parameters_not_in_effect_plan_a_reboot_or_a_wait() {
    let c = compiled("pcp1", &[]);
    let mut live = converged(&c.desired);
    assert!(!plan(&c.desired, &live).has_changes());
    if let Some(w) = live.db_instances.get_mut("pcp1-db") {
        w.parameter_apply_status = Some("pending-reboot".into());
    }
    let p = plan(&c.desired, &live);
    let w = p.action("rds/instance/pcp1-db").expect("writer");
    assert_eq!(w.kind, ActionKind::UpdateInPlace);
    assert!(w.changes.iter().any(|ch| {
        ch.field == "parameter_apply_status"
            && ch
                .old
                .as_deref()
                .is_some_and(|s| s == envctl_aws_model::status::ParameterApplyStatus::PendingReboot)
    }));
    match &w.op {
        Op::RdsModify { modification, .. } => {
            assert!(modification.reboot);
            assert_eq!(
                DbModification {
                    reboot: false,
                    ..modification.clone()
                },
                DbModification::default()
            );
        }
        other => panic!("{other:?}"),
    }
    // A parameter change reboots the group's users itself: no second reboot.
    let changed = compiled("pcp1", &["rds.writer.parameters.max_connections=1000"]);
    let p = plan(&changed.desired, &live);
    assert!(matches!(
        p.action("rds/instance/pcp1-db").expect("writer").op,
        Op::NoOp
    ));
    if let Some(w) = live.db_instances.get_mut("pcp1-db") {
        w.parameter_apply_status = Some("applying".into());
    }
    let p = plan(&c.desired, &live);
    assert!(matches!(
        p.action("rds/instance/pcp1-db").expect("writer").op,
        Op::RdsAwait { .. }
    ));
}

/// The awslogs group is created before the services that log to it, deleted by destroy.
#[test]
fn the_awslogs_group_is_created_first_and_destroyed_with_the_env() {
    let c = compiled("pcp1", &[]);
    let mut live = converged(&c.desired);
    live.log_groups.clear();
    let p = plan(&c.desired, &live);
    let group = p.action("logs/log-group//ecs/pcp1").expect("group");
    assert_eq!(group.kind, ActionKind::Create);
    let users = p.action("ecs/service/mod-users").expect("service");
    assert!(
        users
            .deps
            .iter()
            .any(|d| *d == ResourceId::log_group("/ecs/pcp1")),
        "{users:#?}"
    );
    let d = destroy_plan(
        &c.desired,
        &converged(&c.desired),
        &Default::default(),
        &Default::default(),
        &Estimates::default(),
    );
    let delete = d.action("logs/log-group//ecs/pcp1").expect("deleted");
    assert!(delete.deps.iter().any(|d| d.is_service()));
    assert_eq!(
        "logs/log-group//ecs/pcp1".parse::<ResourceId>().ok(),
        Some(ResourceId::log_group("/ecs/pcp1"))
    );
}

/// UpdateBrokerType follows MSK's migration paths only: M5 -> M7g is a rolling update, a
/// move down to T3 (pcp1's m5.2xlarge -> t3.small) is a new cluster, with MSK's reason
/// (MSK Developer Guide, msk-update-broker-type).
#[test]
fn msk_broker_types_change_in_place_only_along_msks_paths() {
    let c = compiled("pcp1", &[]);
    let live = converged(&c.desired);
    let m7g = compiled("pcp1", &["kafka.tenant.broker_type=kafka.m7g.2xlarge"]);
    let up = plan(&m7g.desired, &live);
    let a = up.action("kafka/cluster/tenant").expect("cluster");
    assert_eq!(a.kind, ActionKind::RollingUpdate, "{a:#?}");
    assert!(matches!(&a.op, Op::KafkaUpdate { updates, .. }
        if updates.contains(&ClusterUpdate::BrokerType("kafka.m7g.2xlarge".into()))));
    // (Express brokers are not in envctl's broker catalogue: the lint refuses them first;
    // envctl_aws_model::msk's own tests cover that path.)
    let t3 = compiled("pcp1", &["kafka.tenant.broker_type=kafka.t3.small"]);
    let p = plan(&t3.desired, &live);
    let a = p.action("kafka/cluster/tenant").expect("cluster");
    assert_eq!(a.kind, ActionKind::Replace, "{a:#?}");
    assert!(
        a.reasons
            .iter()
            .any(|r| r.contains("from a larger broker size to a smaller one")),
        "{:?}",
        a.reasons
    );
    assert!(matches!(a.op, Op::Replace { .. }));
}

/// MSK needs a cool-down of at least six hours after every storage scaling: a growth within
/// it is a refusal in the plan that says from when MSK accepts it, and nothing is sent for
/// the storage; after it the growth is an in-place update (msk-update-storage).
#[test]
fn an_msk_storage_growth_within_the_cool_down_is_refused_saying_when() {
    let c = compiled("pcp1", &["kafka.tenant.storage_gb=400"]);
    let before = compiled("pcp1", &[]);
    let mut live = converged(&before.desired);
    let free = plan(&c.desired, &live);
    let a = free.action("kafka/cluster/tenant").expect("cluster");
    assert!(matches!(&a.op, Op::KafkaUpdate { updates, .. }
        if updates.contains(&ClusterUpdate::BrokerStorage(400))));
    assert!(free.conflicts.is_empty());
    let until = 1_800_000_000.0;
    for k in live.kafka.values_mut() {
        k.storage_cool_down_until = Some(until);
    }
    let p = plan(&c.desired, &live);
    let refusal = p
        .conflicts
        .iter()
        .find(|c| c.resource == ResourceId::kafka_cluster("tenant"))
        .expect("refused");
    assert_eq!(refusal.kind, ConflictKind::Refused);
    assert!(
        refusal.message.contains("storage_gb 300 -> 400 refused")
            && refusal.message.contains(&crate::time::rfc3339(until)),
        "{}",
        refusal.message
    );
    let a = p.action("kafka/cluster/tenant").expect("cluster");
    assert!(!matches!(&a.op, Op::KafkaUpdate { updates, .. }
        if updates.iter().any(|u| matches!(u, ClusterUpdate::BrokerStorage(_)))));
    assert!(p.refuse_conflicts().is_err());
}

/// Postgres 16 -> 17: a group's family is fixed, so the plan creates a group of the new
/// family, moves the writer to it in the ModifyDBInstance that upgrades it (RDS refuses the
/// upgrade from a custom group otherwise: aws/aws-cli#5939), and deletes the old group after
/// the instances moved off it.
#[test]
fn a_major_upgrade_brings_a_parameter_group_of_the_new_family() {
    let on16 = compiled("pcp1", &["rds.writer.engine_version=\"16\""]);
    let mut live = converged(&on16.desired);
    for i in live.db_instances.values_mut() {
        i.engine_version = "16.8".into();
    }
    let on17 = compiled("pcp1", &["rds.writer.engine_version=\"17\""]);
    let p = plan(&on17.desired, &live);
    let new = p
        .action("rds/parameter-group/pcp1-db-params-postgres17")
        .expect("a group of the new family");
    assert_eq!(new.kind, ActionKind::Create);
    assert!(
        matches!(&new.op, Op::Create(Create::DbParameterGroup { request })
        if request.db_parameter_group_family == "postgres17")
    );
    let writer = p.action("rds/instance/pcp1-db").expect("writer");
    let Op::RdsModify { modification, .. } = &writer.op else {
        panic!("{writer:#?}");
    };
    assert_eq!(modification.engine_version.as_deref(), Some("17"));
    assert_eq!(
        modification.parameter_group.as_deref(),
        Some("pcp1-db-params-postgres17"),
        "the new family's group goes with the version"
    );
    assert!(
        writer
            .reasons
            .iter()
            .any(|r| r.contains("major version upgrade (16 -> 17)")),
        "{:?}",
        writer.reasons
    );
    assert!(
        writer
            .deps
            .contains(&ResourceId::db_parameter_group("pcp1-db-params-postgres17"))
    );
    let old = p
        .action("rds/parameter-group/pcp1-db-params-postgres16")
        .expect("the old group is deleted");
    assert!(matches!(
        old.op,
        Op::Delete(Delete::DbParameterGroup { .. })
    ));
    assert!(old.deps.contains(&ResourceId::db_instance("pcp1-db")));
    assert!(
        old.deps
            .contains(&ResourceId::db_instance("pcp1-db-reader"))
    );
}

/// A group of the spec's name but another family (made by hand) cannot be used and cannot
/// become the spec's: the plan refuses it before any call, naming both families.
#[test]
fn a_parameter_group_of_another_family_is_refused() {
    let c = compiled("pcp1", &[]);
    let mut live = converged(&c.desired);
    for g in live.db_parameter_groups.values_mut() {
        g.family = "postgres15".into();
    }
    let p = plan(&c.desired, &live);
    let refusal = p
        .conflicts
        .iter()
        .find(|c| c.kind == ConflictKind::Refused)
        .expect("refused");
    assert!(
        refusal
            .message
            .contains("is of family postgres15, not postgres16"),
        "{}",
        refusal.message
    );
}
