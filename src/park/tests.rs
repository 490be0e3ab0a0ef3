use super::*;
use crate::model::live::converged;

fn desired(env: &str) -> DesiredState {
    let mut loader = crate::spec::Loader::new();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("envs")
        .join(format!("{env}.yaml"));
    crate::compile::compile_env(&mut loader, &path, &[])
        .map(|c| c.desired)
        .unwrap_or_else(|| panic!("{}", loader.diagnostics.render(&loader.sources)))
}

#[test]
fn park_scales_owned_services_and_stops_a_writer_without_replicas() {
    let d = desired("qcp1");
    let live = converged(&d);
    let plan = park_plan(&d, &live);
    assert_eq!(plan.services.len(), d.services.len());
    assert!(
        plan.services
            .iter()
            .all(|s| s.count == d.services[&s.name].desired_count)
    );
    assert_eq!(plan.databases, vec!["qcp1-db".to_string()]);
    assert_eq!(plan.kafka.len(), 2);
    assert!(plan.kept.is_empty(), "{:?}", plan.kept);
}

#[test]
fn rds_with_a_read_replica_is_kept_running_with_the_reason() {
    let d = desired("pcp1");
    let live = converged(&d);
    let plan = park_plan(&d, &live);
    assert!(plan.databases.is_empty());
    let reasons: Vec<&str> = plan.kept.iter().map(|k| k.resource.as_str()).collect();
    assert_eq!(
        reasons,
        ["rds/instance/pcp1-db", "rds/instance/pcp1-db-reader"]
    );
    assert!(plan.kept[0].reason.contains("read replica"));
}

#[test]
fn services_without_envctl_tags_are_left_alone() {
    let d = desired("qcp1");
    let mut live = converged(&d);
    if let Some(s) = live.services.get_mut("pub-edge") {
        s.tags.clear();
    }
    let plan = park_plan(&d, &live);
    assert!(!plan.services.iter().any(|s| s.name == "pub-edge"));
    assert!(
        plan.kept
            .iter()
            .any(|k| k.resource == "ecs/service/pub-edge")
    );
}

#[test]
fn a_parked_env_unparks_to_the_remembered_counts_and_status_explains_it() {
    let d = desired("qcp1");
    let mut live = converged(&d);
    for s in live.services.values_mut() {
        s.tags
            .insert(PARKED_COUNT_TAG.into(), s.desired_count.to_string());
        s.desired_count = 0;
        s.running_count = 0;
    }
    if let Some(db) = live.db_instances.get_mut("qcp1-db") {
        db.status = "stopped".into();
    }
    // Parking again changes nothing.
    let again = park_plan(&d, &live);
    assert!(again.services.is_empty() && again.databases.is_empty());

    let plan = unpark_plan(&d, &live);
    assert_eq!(plan.databases, vec!["qcp1-db".to_string()]);
    assert_eq!(plan.services.len(), d.services.len());
    assert!(
        plan.services
            .iter()
            .all(|s| s.count == d.services[&s.name].desired_count)
    );

    let diff = crate::plan::diff(&d, &live, &Default::default(), &Default::default());
    let changes: Vec<&Action> = diff.changes().collect();
    assert!(!changes.is_empty());
    assert!(
        changes.iter().all(|a| explained_by_parking(&live, a)),
        "{changes:?}"
    );
    let summary = status_summary(&d, &live).unwrap_or_default();
    let n = d.services.len();
    assert!(
        summary.starts_with(&format!("PARKED: {n} of {n} services at 0")),
        "{summary}"
    );
    assert!(summary.contains("after 7 days"), "{summary}");
    assert!(
        summary.contains("parking saves about $177/day"),
        "{summary}"
    );
}

fn line<'a>(cost: &'a cost::ParkCost, what: &str) -> &'a cost::CostLine {
    cost.lines
        .iter()
        .find(|l| l.what == what)
        .unwrap_or_else(|| panic!("no line {what}: {cost:?}"))
}

/// Issue 26 item 3: the Managed Instances fleet envctl created scales in while parked, so
/// it is part of what parking saves (it was left out: "saves $11/day").
#[test]
fn parking_qcp1_saves_its_db_and_the_managed_instances_fleet() {
    let d = desired("qcp1");
    let live = converged(&d);
    let cost = cost::park_cost(&d, &live, &["qcp1-db".to_string()]);
    let db = line(&cost, "rds/instance/qcp1-db");
    assert_eq!(db.while_parked, cost::WhileParked::Saved);
    assert_eq!(db.per_day(), Some(0.449 * 24.0));
    // 53 awsvpc tasks, three network interfaces per m6i.2xlarge: 18 instances.
    assert_eq!(cost::managed_fleet(&d, "m6i.2xlarge", 20), Some((18, 53)));
    let fleet = line(&cost, "ecs/capacity-provider/envctl-qcp1-pvt");
    assert_eq!(
        (fleet.count, fleet.while_parked),
        (18, cost::WhileParked::Saved)
    );
    let saved = 0.449 * 24.0 + 18.0 * 0.384 * 24.0;
    assert!((cost.saved() - saved).abs() < 1e-9, "{cost:?}");
    // Two MSK clusters of two brokers keep running.
    let running = (0.84 * 2.0 + 0.816 * 2.0) * 24.0;
    assert!((cost.parked() - running).abs() < 1e-9, "{cost:?}");
    assert!((cost.running() - saved - running).abs() < 1e-9, "{cost:?}");
    let text = cost.render();
    assert!(
        text.contains(
            "Running: about $256/day; parked: about $79/day; parking saves about $177/day."
        ),
        "{text}"
    );
    // Each price names its page.
    for page in [prices::RDS_SOURCE, prices::EC2_SOURCE, prices::MSK_SOURCE] {
        assert!(text.contains(page), "{page}: {text}");
    }
    let step = cost::capacity_step(&d);
    assert!(
        step.contains("envctl-qcp1-pvt (envctl's)") && step.contains("18 x m6i.2xlarge"),
        "{step}"
    );
}

/// Container instances registered by something else (`ecs.capacity: {instances: N}`) keep
/// running, and are said to be someone else's.
#[test]
fn registered_instances_keep_billing_while_parked() {
    let d = desired("kafka-omb");
    let live = converged(&d);
    let cost = cost::park_cost(&d, &live, &[]);
    let fleet = line(&cost, "ecs/cluster/kafka-omb instances");
    assert_eq!(
        (fleet.count, fleet.kind.as_str(), fleet.while_parked),
        (5, "c6i.4xlarge", cost::WhileParked::Running)
    );
    assert!(
        fleet.why.contains("registered by something else"),
        "{fleet:?}"
    );
    assert!(
        cost::capacity_step(&d).contains("registered by something else"),
        "{}",
        cost::capacity_step(&d)
    );
}

/// A DB instance RDS cannot stop (a replica or its source) keeps billing, with the reason.
#[test]
fn unstoppable_db_instances_are_counted_as_running() {
    let d = desired("pcp1");
    let live = converged(&d);
    let cost = cost::park_cost(&d, &live, &[]);
    for id in ["pcp1-db", "pcp1-db-reader"] {
        let db = line(&cost, &format!("rds/instance/{id}"));
        assert_eq!(db.while_parked, cost::WhileParked::Running, "{db:?}");
        assert!(db.why.contains("RDS cannot stop it"), "{db:?}");
    }
}

/// A capacity provider that is not envctl's is not priced, and the lines say so.
#[test]
fn a_provider_envctl_does_not_own_is_named_not_priced() {
    let mut d = desired("kafka-omb");
    d.cluster.capacity = crate::model::ClusterCapacity::Provider {
        name: "team-asg".into(),
    };
    let cost = cost::park_cost(&d, &converged(&d), &[]);
    assert!(
        cost.lines.iter().all(|l| !l.what.starts_with("ecs/")),
        "{cost:?}"
    );
    assert!(
        cost.render()
            .contains("not counted: capacity provider team-asg")
    );
    assert!(cost::capacity_step(&d).contains("team-asg: not envctl's"));
}

#[test]
fn real_drift_on_a_parked_service_is_not_hidden() {
    let d = desired("qcp1");
    let mut live = converged(&d);
    let name = "pub-edge";
    if let Some(s) = live.services.get_mut(name) {
        s.tags.insert(PARKED_COUNT_TAG.into(), "2".into());
        s.desired_count = 0;
    }
    let mut changed = d.clone();
    if let Some(s) = changed.services.get_mut(name)
        && let Some(c) = s.task_definition.container_definitions.first_mut()
    {
        c.cpu += 1;
    }
    let diff = crate::plan::diff(&changed, &live, &Default::default(), &Default::default());
    let action = diff.action(&ResourceId::service(name).to_string()).cloned();
    let action = action.unwrap_or_else(|| panic!("no action for {name}"));
    assert!(!explained_by_parking(&live, &action), "{action:?}");
}

#[test]
fn an_unpark_interrupted_after_scaling_only_removes_the_tag() {
    let d = desired("qcp1");
    let mut live = converged(&d);
    if let Some(s) = live.services.get_mut("pub-edge") {
        s.tags.insert(PARKED_COUNT_TAG.into(), "2".into());
    }
    let plan = unpark_plan(&d, &live);
    assert_eq!(
        plan.services,
        [ServiceStep {
            name: "pub-edge".into(),
            arn: live.services["pub-edge"].arn.clone(),
            count: live.services["pub-edge"].desired_count,
        }]
    );
    assert!(plan.databases.is_empty());
}

#[test]
fn unpark_right_after_park_waits_for_a_stopping_db_instead_of_skipping_it() {
    let d = desired("qcp1");
    let mut live = converged(&d);
    for s in live.services.values_mut() {
        s.tags
            .insert(PARKED_COUNT_TAG.into(), s.desired_count.to_string());
        s.desired_count = 0;
    }
    if let Some(db) = live.db_instances.get_mut("qcp1-db") {
        db.status = "stopping".into();
    }
    let plan = unpark_plan(&d, &live);
    assert_eq!(plan.databases, ["qcp1-db"]);
    assert!(plan.kept.is_empty(), "{:?}", plan.kept);
}

#[test]
fn a_stopped_db_of_an_env_that_is_not_parked_is_drift() {
    let d = desired("qcp1");
    let mut live = converged(&d);
    // Services at their counts (no parked tag), the DB stopped: an unpark that did not
    // bring it back, or someone stopping it by hand.
    for status in ["stopped", "stopping"] {
        if let Some(db) = live.db_instances.get_mut("qcp1-db") {
            db.status = status.into();
        }
        let diff = crate::plan::diff(&d, &live, &Default::default(), &Default::default());
        let action = diff
            .action("rds/instance/qcp1-db")
            .cloned()
            .unwrap_or_else(|| panic!("a {status} DB is a change"));
        assert!(!is_parked(&live));
        assert!(
            !explained_by_parking(&live, &action),
            "{status}: {action:?}"
        );
        assert_eq!(status_summary(&d, &live), None, "{status}");
    }
}
