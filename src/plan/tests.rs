//! Planner tests on the real example environments, with live state built by hand.
use std::path::PathBuf;

use super::*;
use crate::compile::{Compiled, compile_env};
use crate::model::DesiredState;
use crate::model::live::*;
use crate::spec::Loader;

pub(super) fn compiled(env: &str, sets: &[&str]) -> Compiled {
    let mut loader = Loader::new();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("envs")
        .join(format!("{env}.yaml"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match compile_env(&mut loader, &path, &sets) {
        Some(c) => c,
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    }
}

use crate::model::live::converged;

/// An action's dependencies as their keys.
fn deps(a: &Action) -> Vec<String> {
    a.deps.iter().map(ToString::to_string).collect()
}

pub(super) fn plan(desired: &DesiredState, live: &LiveState) -> Plan {
    diff(
        desired,
        live,
        &Estimates::default(),
        &DiffOptions::default(),
    )
}

#[test]
fn an_empty_account_plans_creates_in_dependency_order() {
    let c = compiled("pcp1", &[]);
    let p = plan(&c.desired, &LiveState::default());
    assert!(
        p.actions.iter().all(|a| a.kind == ActionKind::Create),
        "{:#?}",
        p.actions
    );
    let fqm = p.action("ecs/service/mod-fqm-manager").unwrap();
    assert_eq!(
        deps(fqm),
        vec![
            "ecs/capacity-provider/envctl-pcp1-pvt",
            "ecs/cluster/pcp1-pvt",
            "kafka/cluster/tenant",
            "rds/instance/pcp1-db",
            "rds/instance/pcp1-db-reader",
            "logs/log-group//ecs/pcp1"
        ]
    );
    let reader = p.action("rds/instance/pcp1-db-reader").unwrap();
    assert_eq!(
        deps(reader),
        vec![
            "rds/instance/pcp1-db",
            "rds/parameter-group/pcp1-db-params-postgres16"
        ]
    );
    assert_eq!(
        deps(p.action("kafka/cluster/tenant").unwrap()),
        vec!["kafka/configuration/tenant"]
    );
    // The critical path: MSK configuration (5 s), cluster creation (25 min), an instance
    // launched by the new Managed Instances provider (90 s), a task start.
    assert_eq!(p.estimate_secs, 5.0 + 25.0 * 60.0 + 90.0 + 40.0);
}

#[test]
fn a_converged_environment_plans_no_changes() {
    for env in ["pcp1", "qcp1", "data-export", "perf-144"] {
        let c = compiled(env, &[]);
        let live = converged(&c.desired);
        let p = plan(&c.desired, &live);
        let changes: Vec<&Action> = p.changes().collect();
        assert!(changes.is_empty(), "{env}: {changes:#?}");
        assert!(render::render(&p).contains("No changes"));
    }
}

#[test]
fn a_log_level_change_is_one_rolling_update_with_one_field() {
    let before = compiled("pcp1", &[]);
    let live = converged(&before.desired);
    let after = compiled("pcp1", &["services.mod-users.log_level=warn"]);
    let p = plan(&after.desired, &live);
    let changes: Vec<&Action> = p.changes().collect();
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(changes[0].id, "ecs/service/mod-users");
    assert_eq!(changes[0].kind, ActionKind::RollingUpdate);
    assert_eq!(
        changes[0].changes,
        vec![Change::new(
            "LOG_LEVEL",
            Some("INFO".into()),
            Some("WARN".into())
        )]
    );
    assert!(
        changes[0].deps.is_empty(),
        "nothing else changes, so nothing to wait for"
    );
}

#[test]
fn the_same_change_on_many_services_is_grouped() {
    let before = compiled("qcp1", &[]);
    let live = converged(&before.desired);
    let after = compiled("qcp1", &["services.*.log_level=warn"]);
    let p = plan(&after.desired, &live);
    assert_eq!(p.changes().count(), 26);
    let text = render::render(&p);
    assert!(text.contains("~ 26 services: "), "{text}");
    assert!(
        text.contains("LOG_LEVEL: INFO -> WARN on 26 services"),
        "{text}"
    );
}

#[test]
fn zookeeper_to_kraft_is_a_replacement_with_a_reason_and_services_wait() {
    let before = compiled("pcp1", &[]);
    let live = converged(&before.desired);
    let after = compiled(
        "pcp1",
        &[
            "kafka.tenant.metadata=kraft",
            "kafka.tenant.version=\"3.7.x\"",
        ],
    );
    let p = plan(&after.desired, &live);
    let k = p.action("kafka/cluster/tenant").unwrap();
    assert_eq!(k.kind, ActionKind::Replace);
    assert!(
        k.reason_text().unwrap().contains("ZooKeeper -> KRaft"),
        "{k:?}"
    );
    let svc = p.action("ecs/service/mod-users").unwrap();
    assert_eq!(svc.kind, ActionKind::RollingUpdate);
    assert!(
        svc.changes
            .iter()
            .any(|c| c.field == "KAFKA_HOST" && c.new.as_deref() == Some(KNOWN_AFTER_APPLY)),
        "{svc:?}"
    );
    assert!(deps(svc).contains(&"kafka/cluster/tenant".to_string()));
}

#[test]
fn broker_type_change_is_rolling_and_estimated_per_broker() {
    let before = compiled("pcp1", &[]);
    let live = converged(&before.desired);
    let after = compiled("pcp1", &["kafka.tenant.broker_type=kafka.m7g.2xlarge"]);
    let p = plan(&after.desired, &live);
    let k = p.action("kafka/cluster/tenant").unwrap();
    assert_eq!(k.kind, ActionKind::RollingUpdate);
    assert_eq!(
        k.changes,
        vec![Change::new(
            "broker_type",
            Some("kafka.m5.2xlarge".into()),
            Some("kafka.m7g.2xlarge".into())
        )]
    );
    assert_eq!(k.estimate_secs, 4.0 * 6.0 * 60.0);
    assert_eq!(p.changes().count(), 1, "services keep their endpoints");
}

#[test]
fn property_change_is_a_new_configuration_revision_applied_to_the_cluster() {
    let before = compiled("pcp1", &[]);
    let live = converged(&before.desired);
    let after = compiled(
        "pcp1",
        &["kafka.tenant.properties.log.retention.minutes=960"],
    );
    let p = plan(&after.desired, &live);
    let config = p.action("kafka/configuration/tenant").unwrap();
    assert_eq!(config.kind, ActionKind::UpdateInPlace);
    assert_eq!(
        config.changes,
        vec![Change::new(
            "log.retention.minutes",
            Some("480".into()),
            Some("960".into())
        )]
    );
    let cluster = p.action("kafka/cluster/tenant").unwrap();
    assert_eq!(cluster.kind, ActionKind::RollingUpdate);
    assert_eq!(deps(cluster), vec!["kafka/configuration/tenant"]);
}

#[test]
fn rds_class_change_is_in_place_and_storage_shrink_is_a_replacement() {
    let before = compiled("pcp1", &[]);
    let live = converged(&before.desired);
    let p = plan(
        &compiled("pcp1", &["rds.writer.class=db.r6g.2xlarge"]).desired,
        &live,
    );
    let w = p.action("rds/instance/pcp1-db").unwrap();
    assert_eq!(w.kind, ActionKind::UpdateInPlace);
    assert!(w.reason_text().unwrap().contains("ApplyImmediately"));
    let p = plan(
        &compiled("pcp1", &["rds.writer.storage_gb=200"]).desired,
        &live,
    );
    assert_eq!(
        p.action("rds/instance/pcp1-db").unwrap().kind,
        ActionKind::Replace
    );
}

/// Services name the writer's master secret (envctl's, which outlives a replaced writer);
/// while the writer is replaced its outputs are known only after apply, and services wait.
#[test]
fn the_managed_master_secret_is_known_after_apply_while_the_writer_is_replaced() {
    let before = compiled("pcp1", &[]);
    let live = converged(&before.desired);
    let p = plan(&before.desired, &live);
    assert!(!p.has_changes(), "{:#?}", p.actions);
    let after = compiled("pcp1", &["rds.writer.storage_gb=200"]);
    let p = plan(&after.desired, &live);
    let users = p.action("ecs/service/mod-users").unwrap();
    let secret = users
        .changes
        .iter()
        .find(|c| c.field == "secret DB_PASSWORD")
        .unwrap_or_else(|| panic!("{:#?}", users.changes));
    assert_eq!(
        secret.old.as_deref(),
        Some("arn:aws:secretsmanager:us-east-1:1:secret:envctl-pcp1-db-master-AbCdEf:password::")
    );
    assert_eq!(secret.new.as_deref(), Some(KNOWN_AFTER_APPLY));
    assert!(deps(users).contains(&"rds/instance/pcp1-db".to_string()));
}

#[test]
fn resources_envctl_does_not_own_are_conflicts_never_actions() {
    let c = compiled("pcp1", &[]);
    let mut live = converged(&c.desired);
    if let Some(s) = live.services.get_mut("mod-users") {
        s.tags.clear();
    }
    let p = plan(
        &compiled("pcp1", &["services.mod-users.count=3"]).desired,
        &live,
    );
    assert!(p.action("ecs/service/mod-users").is_none());
    assert_eq!(p.conflicts.len(), 1);
    assert_eq!(p.conflicts[0].resource, "ecs/service/mod-users");
    let adopted = diff(
        &c.desired,
        &live,
        &Estimates::default(),
        &DiffOptions { adopt: true },
    );
    assert!(adopted.conflicts.is_empty());
}

#[test]
fn owned_services_missing_from_the_spec_are_deleted_foreign_ones_ignored() {
    let c = compiled("pcp1", &[]);
    let mut live = converged(&c.desired);
    let mut extra = live.services["mod-users"].clone();
    extra.name = "mod-old".into();
    live.services.insert("mod-old".into(), extra.clone());
    extra.name = "someone-elses".into();
    extra.tags.clear();
    live.services.insert("someone-elses".into(), extra);
    let p = plan(&c.desired, &live);
    let deletes: Vec<String> = p.changes().map(|a| a.id.to_string()).collect();
    assert_eq!(deletes, vec!["ecs/service/mod-old"]);
}

#[test]
fn the_fingerprint_changes_with_the_plan_only() {
    let c = compiled("pcp1", &[]);
    let live = converged(&c.desired);
    let a = plan(&c.desired, &live);
    let b = plan(&c.desired, &live);
    assert_eq!(a.fingerprint, b.fingerprint);
    let other = plan(
        &compiled("pcp1", &["services.mod-users.count=3"]).desired,
        &live,
    );
    assert_ne!(a.fingerprint, other.fingerprint);
}

#[test]
fn a_plan_with_two_actions_on_one_resource_is_refused() {
    let c = compiled("pcp1", &[]);
    let mut p = plan(&c.desired, &LiveState::default());
    assert_eq!(p.check(), Ok(()));
    let twin = p.action("kafka/cluster/tenant").unwrap().clone();
    p.actions.push(twin);
    assert_eq!(
        p.check(),
        Err(PlanError::DuplicateId(ResourceId::kafka_cluster("tenant")))
    );
}

#[test]
fn a_dependency_outside_the_plan_is_refused() {
    let c = compiled("pcp1", &[]);
    let mut p = plan(&c.desired, &LiveState::default());
    let last = p.actions.len() - 1;
    p.actions[last].deps.push(ResourceId::service("nowhere"));
    assert!(matches!(
        p.check(),
        Err(PlanError::UnknownDependency { .. })
    ));
}

/// The MSK rename: the old cluster (named like the spec key) and the new one are one
/// replacement under the key, whose operation deletes the old cluster by its ARN.
#[test]
fn renaming_a_cluster_named_like_its_key_is_one_replacement() {
    let before = compiled("pcp1", &["kafka.tenant.name=tenant"]);
    let live = converged(&before.desired);
    let after = compiled("pcp1", &[]);
    let p = plan(&after.desired, &live);
    assert_eq!(p.check(), Ok(()));
    let k = p.action("kafka/cluster/tenant").unwrap();
    assert_eq!(k.kind, ActionKind::Replace);
    match &k.op {
        Op::Replace {
            delete: Delete::KafkaCluster { name, .. },
            create: Create::KafkaCluster { name: new, .. },
        } => {
            assert_eq!(name, "tenant");
            assert_eq!(new, "pcp1-msk-tenant");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_plan_round_trips_through_json_with_its_operations() {
    let c = compiled("pcp1", &[]);
    let live = converged(&c.desired);
    let p = plan(
        &compiled(
            "pcp1",
            &[
                "services.mod-users.count=3",
                "kafka.tenant.broker_type=kafka.m7g.2xlarge",
                "rds.writer.class=db.r6g.2xlarge",
            ],
        )
        .desired,
        &live,
    );
    let text = serde_json::to_string(&p).unwrap();
    let back: Plan = serde_json::from_str(&text).unwrap();
    assert_eq!(back, p);
    assert_eq!(back.computed_fingerprint(), p.fingerprint);
    let users = back.action("ecs/service/mod-users").unwrap();
    assert_eq!(
        service_update(&users.op),
        Some(ServiceUpdate {
            new_revision: false,
            count: Some(3),
            adopt: None,
            force: false,
            placement: false,
        })
    );
}

#[test]
fn data_stores_in_a_broken_state_are_drift_never_no_changes() {
    let c = compiled("pcp1", &[]);
    let mut live = converged(&c.desired);
    assert!(!plan(&c.desired, &live).has_changes());
    if let Some(db) = live.db_instances.get_mut("pcp1-db") {
        db.status = "storage-full".into();
    }
    if let Some(k) = live.kafka.get_mut("pcp1-msk-tenant") {
        k.state = "FAILED".into();
    }
    let p = plan(&c.desired, &live);
    let changed: Vec<String> = p.changes().map(|a| a.id.to_string()).collect();
    assert_eq!(
        changed,
        vec!["rds/instance/pcp1-db", "kafka/cluster/tenant"]
    );
    assert_eq!(
        p.action("rds/instance/pcp1-db").unwrap().op,
        Op::Unhealthy {
            state: "storage-full".into()
        }
    );
    assert_eq!(
        p.action("kafka/cluster/tenant").unwrap().changes[0].field,
        HEALTH_FIELD
    );
}

#[test]
fn a_live_engine_version_is_compared_numerically() {
    let c = compiled("pcp1", &["rds.writer.engine_version=\"16.6\""]);
    let mut live = converged(&c.desired);
    // An automatic minor upgrade (16.8) and 16.10 (numerically above 16.6) are converged;
    // only a live version below the desired one is a change.
    for (version, converged_to) in [("16.8", true), ("16.10", true), ("16.5", false)] {
        if let Some(w) = live.db_instances.get_mut("pcp1-db") {
            w.engine_version = version.into();
        }
        let p = plan(&c.desired, &live);
        let w = p.action("rds/instance/pcp1-db").unwrap();
        assert_eq!(
            w.kind == ActionKind::NoOp,
            converged_to,
            "{version}: {w:#?}"
        );
    }
}

#[test]
fn storage_optimization_is_settled_and_a_refused_growth_is_shown_before_any_call() {
    let c = compiled("pcp1", &[]);
    let mut live = converged(&c.desired);
    if let Some(w) = live.db_instances.get_mut("pcp1-db") {
        w.status = "storage-optimization".into();
    }
    let p = plan(&c.desired, &live);
    assert_eq!(p.changes().count(), 0, "{:#?}", p.actions);
    // A second change while the first is optimizing, and a growth under 10%: refusals,
    // with no ModifyDBInstance planned for the storage.
    for (sets, status) in [
        ("rds.writer.storage_gb=600", "storage-optimization"),
        ("rds.writer.storage_gb=520", "available"),
    ] {
        if let Some(w) = live.db_instances.get_mut("pcp1-db") {
            w.status = status.into();
        }
        let p = plan(&compiled("pcp1", &[sets]).desired, &live);
        assert_eq!(p.changes().count(), 0, "{sets}: {:#?}", p.actions);
        assert_eq!(p.conflicts.len(), 1, "{sets}");
        assert_eq!(p.conflicts[0].resource.to_string(), "rds/instance/pcp1-db");
        assert!(p.conflicts[0].message.contains("refused"), "{sets}");
        // A refusal stops plan and apply before any call, and is not called a foreign
        // resource (the ownership error's advice, rename or --adopt, would be wrong here).
        assert_eq!(p.conflicts[0].kind, crate::plan::ConflictKind::Refused);
        assert!(matches!(
            p.refuse_conflicts(),
            Err(crate::plan::PlanError::Refused(_))
        ));
    }
}

#[test]
fn a_replaced_writer_replaces_its_readers_after_it() {
    let before = compiled("pcp1", &[]);
    let live = converged(&before.desired);
    // Storage cannot shrink: the writer is replaced; the reader's own spec is unchanged.
    let p = plan(
        &compiled("pcp1", &["rds.writer.storage_gb=200"]).desired,
        &live,
    );
    assert_eq!(
        p.action("rds/instance/pcp1-db").unwrap().kind,
        ActionKind::Replace
    );
    let reader = p.action("rds/instance/pcp1-db-reader").unwrap();
    assert_eq!(reader.kind, ActionKind::Replace, "{reader:#?}");
    assert!(matches!(reader.op, Op::Replace { .. }));
    assert!(deps(reader).contains(&"rds/instance/pcp1-db".to_string()));
}

/// A configuration of an earlier Kafka version that no spec cluster runs: deleted after the
/// cluster left it in a plan, and by destroy; one a cluster outside the plan still runs is
/// left alone (MSK refuses to delete a configuration in use).
#[test]
fn superseded_kafka_configurations_are_deleted_after_their_clusters_left_them() {
    let c = compiled("kafka-omb", &[]);
    let mut live = converged(&c.desired);
    let old = LiveKafkaConfiguration {
        name: "kafka-omb-config-3-6-0".into(),
        arn: "arn:aws:kafka:us-east-1:1:configuration/kafka-omb-config-3-6-0/x".into(),
        latest_revision: 2,
        server_properties: String::new(),
    };
    live.kafka_configurations
        .insert(old.name.clone(), old.clone());
    let old_id = "kafka/configuration/kafka-omb-config-3-6-0";

    // No cluster uses it: deleted, nothing to wait for.
    let p = plan(&c.desired, &live);
    let delete = p.action(old_id).unwrap();
    assert_eq!(delete.kind, ActionKind::Delete);
    assert!(deps(delete).is_empty(), "{:?}", delete.deps);

    // The spec's cluster still runs it: deleted after the cluster moved to its own.
    let cluster = live.kafka.values_mut().next().unwrap();
    cluster.configuration_arn = Some(old.arn.clone());
    let p = plan(&c.desired, &live);
    assert_eq!(
        p.action("kafka/cluster/main").unwrap().kind,
        ActionKind::RollingUpdate
    );
    assert_eq!(deps(p.action(old_id).unwrap()), vec!["kafka/cluster/main"]);

    // Destroy deletes it after the env's clusters.
    let destroy = |live: &LiveState| {
        destroy_plan(
            &c.desired,
            live,
            &Default::default(),
            &Default::default(),
            &Estimates::default(),
        )
    };
    let d = destroy(&live);
    assert_eq!(d.action(old_id).unwrap().kind, ActionKind::Delete);
    assert_eq!(deps(d.action(old_id).unwrap()), vec!["kafka/cluster/main"]);

    // A cluster outside the plan runs it: left alone by both.
    let mut foreign = live.kafka.values().next().unwrap().clone();
    foreign.name = "someone-elses".into();
    foreign.tags.clear();
    live.kafka.insert(foreign.name.clone(), foreign);
    assert!(plan(&c.desired, &live).action(old_id).is_none());
    assert!(destroy(&live).action(old_id).is_none());
}

#[test]
fn an_existing_provider_that_does_not_exist_refuses_the_plan() {
    let c = compiled(
        "pcp1",
        &[
            "ecs.capacity.managed_instances=null",
            "ecs.capacity.instance_type=m6i.2xlarge",
            "ecs.capacity.instances=10",
            "ecs.capacity.provider=shared-asg",
        ],
    );
    let mut live = converged(&c.desired);
    assert!(plan(&c.desired, &live).conflicts.is_empty());
    live.capacity_providers.clear();
    let p = plan(&c.desired, &live);
    assert_eq!(p.conflicts.len(), 1, "{:#?}", p.conflicts);
    assert_eq!(p.conflicts[0].resource, "ecs/capacity-provider/shared-asg");
    assert_eq!(p.conflicts[0].kind, crate::plan::ConflictKind::Refused);
    assert!(matches!(
        p.refuse_conflicts(),
        Err(crate::plan::PlanError::Refused(_))
    ));
    // Never created, changed or deleted by envctl.
    assert!(p.action("ecs/capacity-provider/shared-asg").is_none());
}

#[test]
fn a_managed_provider_goes_between_the_cluster_and_the_services_and_before_the_cluster_on_destroy()
{
    let c = compiled("qcp1", &[]);
    let p = plan(&c.desired, &LiveState::default());
    let provider = p.action(PROVIDER).expect("provider");
    assert_eq!(provider.kind, ActionKind::Create);
    assert_eq!(deps(provider), vec!["ecs/cluster/qcp1-pvt"]);
    let service = p.action("ecs/service/mod-users-b").expect("service");
    assert!(deps(service).contains(&PROVIDER.to_string()));
    // The first tasks wait for an instance to launch.
    let est = Estimates::default();
    assert_eq!(
        service.estimate_secs,
        est.ecs_task_start + est.ecs_instance_launch
    );
    // Converged (provider owned and ACTIVE): nothing to do.
    let live = converged(&c.desired);
    assert!(!plan(&c.desired, &live).has_changes());
    // Owned but still PROVISIONING (an interrupted run): waited for, not created again.
    let mut provisioning = live.clone();
    qcp1_provider(&mut provisioning).status = "PROVISIONING".into();
    let p = plan(&c.desired, &provisioning);
    let wait = p.action(PROVIDER).expect("provider");
    assert_eq!(wait.kind, ActionKind::UpdateInPlace);
    // The create it carries only waits: the provider exists.
    assert!(
        matches!(&wait.op, Op::Create(Create::CapacityProvider(c)) if c.wait_only),
        "{:?}",
        wait.op
    );
    assert_eq!(
        change_list(wait),
        vec![(
            "status".to_string(),
            Some("PROVISIONING".to_string()),
            Some("ACTIVE".to_string())
        )]
    );
    let d = destroy::destroy_plan(
        &c.desired,
        &live,
        &Default::default(),
        &Default::default(),
        &est,
    );
    let provider = d.action(PROVIDER).expect("provider deleted");
    assert!(deps(provider).contains(&"ecs/service/mod-users-b".to_string()));
    let cluster = d.action("ecs/cluster/qcp1-pvt").expect("cluster deleted");
    assert!(deps(cluster).contains(&PROVIDER.to_string()));
}

/// qcp1 as shipped: on an ECS Managed Instances provider envctl owns.
/// qcp1's owned Managed Instances provider in a live state, to edit.
fn qcp1_provider(live: &mut LiveState) -> &mut LiveCapacityProvider {
    live.capacity_providers
        .get_mut("envctl-qcp1-pvt")
        .expect("provider")
}

fn qcp1_managed(sets: &[&str]) -> Compiled {
    compiled("qcp1", sets)
}

const PROVIDER: &str = "ecs/capacity-provider/envctl-qcp1-pvt";

/// The provider's change lines as `field: old -> new`.
fn change_lines(a: &Action) -> Vec<String> {
    a.changes
        .iter()
        .map(|c| {
            format!(
                "{}: {} -> {}",
                c.field,
                c.old.as_deref().unwrap_or("-"),
                c.new.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

#[test]
fn edited_instance_types_update_the_managed_provider_in_place() {
    let applied = qcp1_managed(&[]);
    let live = converged(&applied.desired);
    let c =
        qcp1_managed(&["ecs.capacity.managed_instances.instance_types=[m6i.xlarge, m6i.2xlarge]"]);
    let p = plan(&c.desired, &live);
    let a = p.action(PROVIDER).expect("provider");
    assert_eq!(a.kind, ActionKind::UpdateInPlace);
    assert_eq!(
        change_lines(a),
        vec![
            "instance_types: m6i.2xlarge -> m6i.2xlarge,m6i.xlarge",
            "min_vcpus: 8 -> 4",
            "min_memory_mib: 32768 -> 16384",
        ]
    );
    // The plan is the program: the op carries what UpdateCapacityProvider sends.
    let Op::CapacityProviderUpdate {
        cluster,
        name,
        settings,
    } = &a.op
    else {
        panic!("{:?}", a.op);
    };
    assert_eq!(
        (cluster.as_str(), name.as_str()),
        ("qcp1-pvt", "envctl-qcp1-pvt")
    );
    assert_eq!(settings.instance_types, vec!["m6i.xlarge", "m6i.2xlarge"]);
    assert_eq!((settings.min_vcpus, settings.min_memory_mib), (4, 16384));
    // Only the provider changes: the services keep running where they are.
    assert_eq!(p.changes().count(), 1, "{:#?}", p.actions);
}

#[test]
fn network_and_role_edits_name_each_field() {
    let c = qcp1_managed(&[]);
    let mut live = converged(&c.desired);
    let old = qcp1_provider(&mut live).managed.as_mut().expect("settings");
    old.infrastructure_role = "arn:aws:iam::123456789012:role/old".into();
    old.instance_profile = "arn:aws:iam::123456789012:instance-profile/old".into();
    old.subnets = vec!["subnet-old".into()];
    old.security_groups.push("sg-old".into());
    let p = plan(&c.desired, &live);
    let a = p.action(PROVIDER).expect("provider");
    let fields: Vec<&str> = a.changes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "infrastructure_role",
            "instance_profile",
            "subnets",
            "security_groups",
        ]
    );
    assert_eq!(
        a.changes[0].new.as_deref(),
        Some("arn:aws:iam::123456789012:role/ecsInfrastructureRole")
    );
    assert!(matches!(a.op, Op::CapacityProviderUpdate { .. }));
}

#[test]
fn managed_provider_settings_in_another_order_are_no_change() {
    let c =
        qcp1_managed(&["ecs.capacity.managed_instances.instance_types=[m6i.xlarge, m6i.2xlarge]"]);
    let mut live = converged(&c.desired);
    let old = qcp1_provider(&mut live).managed.as_mut().expect("settings");
    old.instance_types.reverse();
    old.subnets.reverse();
    old.security_groups.reverse();
    assert!(
        c.desired.subnets.len() > 1,
        "the fixture's subnets must be reordered"
    );
    let p = plan(&c.desired, &live);
    assert_eq!(p.action(PROVIDER).expect("provider").kind, ActionKind::NoOp);
    assert!(!p.has_changes(), "{:#?}", p.actions);
}

#[test]
fn an_owned_provider_of_another_type_is_refused_not_replaced() {
    let c = qcp1_managed(&[]);
    let mut live = converged(&c.desired);
    let cp = qcp1_provider(&mut live);
    cp.kind = "EC2_AUTOSCALING".into();
    cp.managed = None;
    let p = plan(&c.desired, &live);
    assert!(p.action(PROVIDER).is_none(), "{:#?}", p.actions);
    assert_eq!(p.conflicts.len(), 1, "{:#?}", p.conflicts);
    assert_eq!(p.conflicts[0].kind, crate::plan::ConflictKind::Refused);
    assert!(p.conflicts[0].message.contains("EC2_AUTOSCALING"));
    assert!(p.conflicts[0].message.contains("envctl destroy"));
}

/// `instances: N` (kafka-omb: 5 c6i.4xlarge registered by something else): a plan that
/// creates services waits for the instances first, every created service after that wait,
/// the wait after the cluster; a new cluster's wait is estimated at an instance launch.
/// Once the services exist, or on the other capacity forms, there is nothing to wait for.
#[test]
fn services_on_instances_registered_elsewhere_wait_for_them_before_they_are_created() {
    let c = compiled("kafka-omb", &[]);
    let p = plan(&c.desired, &LiveState::default());
    let wait = p
        .action("ecs/container-instances/kafka-omb")
        .expect("the capacity wait");
    let Op::EcsCapacityAwait {
        instances,
        services,
        ..
    } = &wait.op
    else {
        panic!("{:?}", wait.op)
    };
    assert_eq!(*instances, 5);
    assert_eq!(
        services,
        &std::collections::BTreeMap::from([("omb-worker".to_string(), 5)])
    );
    assert_eq!(deps(wait), vec!["ecs/cluster/kafka-omb"]);
    assert_eq!(wait.estimate_secs, Estimates::default().ecs_instance_launch);
    let worker = p.action("ecs/service/omb-worker").expect("service");
    assert!(
        deps(worker).contains(&"ecs/container-instances/kafka-omb".to_string()),
        "{:?}",
        deps(worker)
    );
    // An existing cluster: its instances may already be there.
    let live = LiveState {
        cluster: converged(&c.desired).cluster,
        ..LiveState::default()
    };
    let p = plan(&c.desired, &live);
    let wait = p.action("ecs/container-instances/kafka-omb").expect("wait");
    assert_eq!(wait.estimate_secs, 0.0);

    assert!(
        plan(&c.desired, &converged(&c.desired))
            .action("ecs/container-instances/kafka-omb")
            .is_none(),
        "the services exist"
    );
    let zero = compiled("kafka-omb", &["services.omb-worker.count=0"]);
    assert!(
        plan(&zero.desired, &LiveState::default())
            .action("ecs/container-instances/kafka-omb")
            .is_none(),
        "no task to place"
    );
    let managed = compiled("pcp1", &[]);
    assert!(
        !plan(&managed.desired, &LiveState::default())
            .actions
            .iter()
            .any(|a| matches!(a.op, Op::EcsCapacityAwait { .. })),
        "Managed Instances launch for the services"
    );
}

/// The fields, old and new values of an action's changes.
fn change_list(a: &Action) -> Vec<(String, Option<String>, Option<String>)> {
    a.changes
        .iter()
        .map(|c| (c.field.clone(), c.old.clone(), c.new.clone()))
        .collect()
}

/// Issue 23 item 7: a service on a launch type moving to the env's capacity provider is
/// its own visible change, a new deployment that UpdateService sends with
/// forceNewDeployment (ECS refuses the switch without it).
#[test]
fn a_launch_type_service_moving_to_the_provider_is_a_forced_new_deployment() {
    let c = compiled("qcp1", &[]);
    let mut live = converged(&c.desired);
    assert!(!plan(&c.desired, &live).has_changes());
    if let Some(p) = live
        .services
        .get_mut("mod-users-b")
        .and_then(|s| s.placement.as_mut())
    {
        p.strategy.clear();
        p.launch_type = Some("EC2".into());
    }
    let p = plan(&c.desired, &live);
    let a = p.action("ecs/service/mod-users-b").unwrap();
    assert_eq!(a.kind, ActionKind::RollingUpdate);
    assert_eq!(
        change_list(a),
        vec![(
            "capacityProviderStrategy".to_string(),
            Some("launchType EC2".to_string()),
            Some("strategy envctl-qcp1-pvt:1".to_string())
        )]
    );
    assert!(
        a.reasons.iter().any(|r| r.contains("forceNewDeployment")),
        "{:?}",
        a.reasons
    );
    assert_eq!(
        service_update(&a.op),
        Some(ServiceUpdate {
            new_revision: false,
            count: None,
            adopt: None,
            force: true,
            placement: true,
        })
    );
    assert_eq!(p.changes().count(), 1);
}

/// A strategy naming another provider is a strategy change (forced new deployment too);
/// deployment percentages alone are an in-place update that starts no deployment.
#[test]
fn strategy_and_deployment_percentages_are_diffed() {
    let c = compiled("qcp1", &[]);
    let mut live = converged(&c.desired);
    if let Some(p) = live
        .services
        .get_mut("okapi-b")
        .and_then(|s| s.placement.as_mut())
    {
        p.strategy = vec![("other".into(), 1)];
    }
    if let Some(p) = live
        .services
        .get_mut("nginx-okapi")
        .and_then(|s| s.placement.as_mut())
    {
        p.maximum_percent += 50;
    }
    let p = plan(&c.desired, &live);
    let okapi = p.action("ecs/service/okapi-b").unwrap();
    assert_eq!(okapi.kind, ActionKind::RollingUpdate);
    assert!(matches!(okapi.op, Op::EcsServiceUpdate { force: true, .. }));
    let nginx = p.action("ecs/service/nginx-okapi").unwrap();
    assert_eq!(nginx.kind, ActionKind::UpdateInPlace);
    assert_eq!(
        change_list(nginx)
            .iter()
            .map(|c| c.0.as_str())
            .collect::<Vec<_>>(),
        vec!["deploymentConfiguration.maximumPercent"]
    );
    assert!(matches!(
        nginx.op,
        Op::EcsServiceUpdate {
            force: false,
            placement: true,
            ..
        }
    ));
}

/// Back from a strategy to a launch type UpdateService cannot do (it has no `launchType`):
/// the service is replaced, with the reason.
#[test]
fn a_strategy_service_going_back_to_a_launch_type_is_replaced() {
    let mut loader = Loader::new();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pcp1-instances.yaml");
    let Some(c) = compile_env(&mut loader, &path, &[]) else {
        panic!("{}", loader.diagnostics.render(&loader.sources));
    };
    let mut live = converged(&c.desired);
    assert!(!plan(&c.desired, &live).has_changes());
    if let Some(p) = live
        .services
        .get_mut("mod-users")
        .and_then(|s| s.placement.as_mut())
    {
        p.launch_type = None;
        p.strategy = vec![("envctl-pcp1-pvt".into(), 1)];
    }
    let p = plan(&c.desired, &live);
    let a = p.action("ecs/service/mod-users").unwrap();
    assert_eq!(a.kind, ActionKind::Replace);
    assert!(matches!(a.op, Op::Replace { .. }));
    assert!(
        a.reasons
            .iter()
            .any(|r| r.contains("deleted and created again")),
        "{:?}",
        a.reasons
    );
}

/// What an `EcsServiceUpdate` decides, without the requests it carries.
#[derive(Debug, PartialEq)]
pub(crate) struct ServiceUpdate {
    pub new_revision: bool,
    pub count: Option<u32>,
    pub adopt: Option<String>,
    pub force: bool,
    pub placement: bool,
}

pub(crate) fn service_update(op: &Op) -> Option<ServiceUpdate> {
    match op {
        Op::EcsServiceUpdate {
            revision,
            count,
            adopt,
            force,
            placement,
            ..
        } => Some(ServiceUpdate {
            new_revision: revision.is_new(),
            count: *count,
            adopt: adopt.clone(),
            force: *force,
            placement: *placement,
        }),
        _ => None,
    }
}
