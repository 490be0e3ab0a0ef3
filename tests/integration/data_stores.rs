//! Data stores as a real account has them (issue 23): the writer's credentials in a secret
//! envctl keeps (RDS refuses a replica of a writer with ManageMasterUserPassword), the
//! awslogs groups envctl creates, parameter groups in effect before a measurement.
use envctl::plan::ActionKind;

use crate::apply::{World, compiled, owned_resources};

/// Every file under `dir`, read as bytes.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                out.push((p, bytes));
            }
        }
    }
    out
}

/// pcp1 (a writer and a reader) applies against a sandbox that refuses replicas of
/// managed-password writers, re-plans empty and destroys clean; the password exists only in
/// Secrets Manager: not in the plan, its rendering, the apply report or envctl's files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pcp1_applies_with_its_reader_and_the_password_stays_in_secrets_manager() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    let planned = world.plan(&c.desired).await;
    let plan_json = serde_json::to_string(&planned.plan).expect("plan json");
    let plan_text = envctl::plan::render::render(&planned.plan);
    let report = world.apply(&c.desired, planned, "data-stores").await;
    assert!(report.succeeded(), "{}", report.render());

    let live = world.plan(&c.desired).await;
    assert!(
        !live.plan.has_changes(),
        "{:#?}",
        live.plan.changes().collect::<Vec<_>>()
    );
    let db = c.desired.db.as_ref().expect("db");
    let reader = &db.readers[0].identifier;
    assert_eq!(
        live.live.db_instances[reader].source.as_deref(),
        Some(db.writer.identifier.as_str())
    );
    let secret = &live.live.db_master_secrets[&db.master_secret_name()];
    assert_eq!(
        live.live.db_instances[&db.writer.identifier]
            .master_secret_arn
            .as_deref(),
        Some(secret.arn.as_str())
    );
    // Services read the password by reference.
    let users = &live.live.services["mod-users"].task_definition;
    let td = &live.live.task_definitions[users];
    assert!(
        td.container_definitions[0]
            .secrets
            .iter()
            .any(|s| s.value_from.to_string() == format!("{}:password::", secret.arn)),
        "{:#?}",
        td.container_definitions[0].secrets
    );

    let password = world
        .session
        .clients
        .secrets
        .get_secret_value()
        .secret_id(&secret.arn)
        .send()
        .await
        .expect("the secret")
        .secret_string()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .and_then(|v| v["password"].as_str().map(str::to_string))
        .expect("a password");
    assert!(password.len() >= 32, "{password}");
    for (what, text) in [
        ("plan JSON", plan_json.as_str()),
        ("rendered plan", plan_text.as_str()),
        ("apply report", report.render().as_str()),
    ] {
        assert!(!text.contains(&password), "the password is in the {what}");
    }
    for (path, bytes) in files_under(&world.state_dir()) {
        assert!(
            !bytes
                .windows(password.len())
                .any(|w| w == password.as_bytes()),
            "the password is in {}",
            path.display()
        );
    }

    // Destroy takes the secret and the log group along.
    let owned = owned_resources(&world, &c).await;
    for id in [
        "rds/master-secret/envctl-pcp1-db-master",
        "logs/log-group//ecs/pcp1",
    ] {
        assert!(owned.iter().any(|o| o == id), "{id}: {owned:#?}");
    }
    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("plan");
    let secret_delete = planned
        .plan
        .action("rds/master-secret/envctl-pcp1-db-master")
        .expect("secret");
    assert_eq!(secret_delete.kind, ActionKind::Delete);
    let report = world.apply(&c.desired, planned, "destroy").await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(owned_resources(&world, &c).await, Vec::<String>::new());
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("secretsmanager", "DeleteSecret").count, 1);
    // The services' group and the load engines'.
    assert_eq!(stats.get("logs", "DeleteLogGroup").count, 2);
    // A second apply after destroy creates the secret again at once (it was deleted
    // without a recovery window).
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
}

/// The first apply creates `/ecs/<env>` with the env's tags before any service, so tasks
/// start with an execution role that has no logs:CreateLogGroup (the sandbox's default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_group_exists_before_the_first_task_starts() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    // The services' group and the load engines' (issue 30).
    assert_eq!(stats.get("logs", "CreateLogGroup").count, 2);
    let live = world.plan(&c.desired).await.live;
    let group = &live.log_groups["/ecs/pcp1"];
    assert!(envctl::model::live::owned_by(&group.tags, "pcp1"));
    for (name, s) in &live.services {
        assert_eq!(s.running_count, s.desired_count, "{name}");
    }
}

/// Every group envctl creates gets the env's retention (30 days by default, here 7), the
/// load engines' `/envctl/<env>/load` is created, tagged and destroyed with the env like the
/// services' (the engines' execution role then needs no logs:CreateLogGroup), and the
/// engine template names that group without `awslogs-create-group`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_groups_get_the_env_retention_and_the_engines_group_is_the_envs() {
    let world = World::new().await;
    let c = compiled("pcp1", &["logs.retention_days=7"]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let out = world
        .session
        .clients
        .logs
        .describe_log_groups()
        .send()
        .await
        .expect("DescribeLogGroups");
    let retention: std::collections::BTreeMap<String, Option<i32>> = out
        .log_groups()
        .iter()
        .map(|g| {
            (
                g.log_group_name().unwrap_or_default().to_string(),
                g.retention_in_days(),
            )
        })
        .collect();
    assert_eq!(
        retention,
        [
            ("/ecs/pcp1".to_string(), Some(7)),
            ("/envctl/pcp1/load".to_string(), Some(7)),
        ]
        .into_iter()
        .collect()
    );
    let live = world.plan(&c.desired).await.live;
    assert!(envctl::model::live::owned_by(
        &live.log_groups["/envctl/pcp1/load"].tags,
        "pcp1"
    ));

    // The engine template logs to that group and does not ask ECS to create it.
    let td = envctl::load::engine_def::render(
        &crate::repo().join("task-defs/engine-jmeter.yaml"),
        "jmeter",
        &envctl::load::engine_def::EngineVars {
            env: "pcp1",
            region: "us-east-1",
            cluster: "pcp1-pvt",
            execution_role: None,
            task_role: None,
        },
    )
    .expect("the engine template renders");
    let log = td.container_definitions[0]
        .log_configuration
        .as_ref()
        .expect("awslogs");
    assert_eq!(
        log.options.get("awslogs-group").map(String::as_str),
        Some(envctl::model::load_log_group("pcp1").as_str())
    );
    assert_eq!(log.options.get("awslogs-create-group"), None);

    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("destroy plan");
    let destroyed = world.apply(&c.desired, planned, "destroy").await;
    assert!(destroyed.succeeded(), "{}", destroyed.render());
    let out = world
        .session
        .clients
        .logs
        .describe_log_groups()
        .send()
        .await
        .expect("DescribeLogGroups");
    assert!(out.log_groups().is_empty(), "{:?}", out.log_groups());
}

/// A parameter group created and modified right before its writer: RDS asks to wait five
/// minutes before creating an instance with it, and the sandbox boots such an instance
/// `pending-reboot`. Apply reboots it, so the values are in effect (`in-sync`) before
/// anything measures; a later `max_connections` change is in effect after its apply too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameter_values_are_in_sync_when_apply_returns() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let writer = c.desired.db.as_ref().expect("db").writer.identifier.clone();
    let live = world.plan(&c.desired).await.live;
    assert_eq!(
        live.db_instances[&writer].parameter_apply_status.as_deref(),
        Some("in-sync")
    );
    assert!(world.sandbox().stats().get("rds", "RebootDBInstance").count >= 1);

    let more = compiled("pcp1", &["rds.writer.parameters.max_connections=3000"]);
    world.sandbox().reset_stats();
    let report = world.converge(&more).await;
    assert!(report.succeeded(), "{}", report.render());
    let live = world.plan(&more.desired).await;
    assert!(!live.plan.has_changes());
    for i in live.live.db_instances.values() {
        assert_eq!(
            i.parameter_apply_status.as_deref(),
            Some("in-sync"),
            "{}",
            i.identifier
        );
    }
}

/// MSK upgrades a cluster past end of support by itself, without notice: the next plan is
/// empty but for a note, and applying it sends nothing (it planned a delete and recreate
/// before: "MSK cannot downgrade Kafka").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_msk_upgraded_is_converged_not_replaced() {
    let world = World::new().await;
    // A cluster on 3.6.0, past MSK's end of support (the shipped pcp1 pins 3.8.x).
    let c = compiled("pcp1", &["kafka.tenant.version=\"3.6.0\""]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let name = c.desired.kafka["tenant"].name.clone();
    let (status, body) = crate::control_post(
        &world.sandbox().endpoint_url(),
        "/_sandbox/kafka/auto-upgrade",
        &format!(r#"{{"name":"{name}","version":"3.8.x"}}"#),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let planned = world.plan(&c.desired).await;
    assert!(
        !planned.plan.has_changes(),
        "{:#?}",
        planned.plan.changes().collect::<Vec<_>>()
    );
    assert_eq!(planned.live.kafka[&name].kafka_version, "3.8.x");
    let text = envctl::plan::render::render(&planned.plan);
    assert!(
        text.contains("note: kafka/cluster/tenant: MSK upgraded Kafka 3.6.0 -> 3.8.x"),
        "{text}"
    );
    let before = world.mutating_calls();
    let report = world.apply(&c.desired, planned, "after-auto-upgrade").await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(world.mutating_calls() - before, 0);
}

/// `validate` warns ahead of a version's MSK end of support and after it (dates from MSK's
/// "Supported Apache Kafka versions"); far from it, nothing.
#[test]
fn validate_warns_before_and_after_a_kafka_versions_end_of_support() {
    let run = |today: &str| {
        let out = crate::Test::new()
            .file("env.yaml", crate::BASE_ENV)
            .env("ENVCTL_TODAY", Some(today))
            .args(["validate", "env.yaml"])
            .run();
        assert_eq!(out.code, 0, "a warning: {}", out.stderr);
        out.stderr
    };
    assert!(!run("2025-11-01").contains("kafka-version-support-ends"));
    let before = run("2026-05-02");
    assert!(
        before.contains("warning[kafka-version-support-ends]")
            && before.contains("MSK's support for Kafka 3.6.0 ends on 2026-06-01, in 30 days"),
        "{before}"
    );
    let after = run("2026-12-01");
    assert!(
        after.contains("MSK's support for Kafka 3.6.0 ended on 2026-06-01"),
        "{after}"
    );
}

/// Postgres 16 -> 17 end to end: the plan creates `<writer>-params-postgres17`, upgrades the
/// writer with AllowMajorVersionUpgrade and that group in one ModifyDBInstance (the sandbox
/// refuses the upgrade from a custom group otherwise, as RDS does: aws/aws-cli#5939), RDS
/// upgrades the reader with its writer, envctl moves the reader to the new group, deletes
/// the postgres16 group once nothing uses it, and the next plan is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_major_upgrade_moves_the_instances_to_a_parameter_group_of_the_new_family() {
    let world = World::new().await;
    let on16 = compiled("pcp1", &["rds.writer.engine_version=\"16\""]);
    let report = world.converge(&on16).await;
    assert!(report.succeeded(), "{}", report.render());
    let on17 = compiled("pcp1", &["rds.writer.engine_version=\"17\""]);
    let report = world.converge(&on17).await;
    assert!(report.succeeded(), "{}", report.render());
    let planned = world.plan(&on17.desired).await;
    assert!(
        !planned.plan.has_changes(),
        "{}",
        envctl::plan::render::render(&planned.plan)
    );
    for id in ["pcp1-db", "pcp1-db-reader"] {
        let i = &planned.live.db_instances[id];
        assert!(
            i.engine_version.starts_with("17."),
            "{id}: {}",
            i.engine_version
        );
        assert_eq!(
            i.parameter_group.as_deref(),
            Some("pcp1-db-params-postgres17"),
            "{id}"
        );
    }
    let rds = &world.session.clients.rds;
    assert_eq!(
        envctl::aws::rds::describe_parameter_group(rds, "pcp1-db-params-postgres17")
            .await
            .expect("describe")
            .map(|(_, family)| family),
        Some("postgres17".to_string())
    );
    assert!(
        envctl::aws::rds::describe_parameter_group(rds, "pcp1-db-params-postgres16")
            .await
            .expect("describe")
            .is_none(),
        "the old family's group is deleted"
    );
}

/// Observe reads a group's own family (DescribeDBParameterGroups): a group of the spec's
/// name made with another family is refused in the plan, before any call, instead of being
/// taken for the spec's and failing at ModifyDBInstance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_parameter_groups_family_is_read_not_assumed() {
    let world = World::new().await;
    let on16 = compiled("pcp1", &["rds.writer.engine_version=\"16\""]);
    let report = world.converge(&on16).await;
    assert!(report.succeeded(), "{}", report.render());
    world
        .session
        .clients
        .rds
        .create_db_parameter_group()
        .db_parameter_group_name("pcp1-db-params-postgres17")
        .db_parameter_group_family("postgres16")
        .description("made by hand, of the wrong family")
        .tags(
            aws_sdk_rds::types::Tag::builder()
                .key("envctl:env")
                .value("pcp1")
                .build(),
        )
        .tags(
            aws_sdk_rds::types::Tag::builder()
                .key("envctl:tool")
                .value("envctl")
                .build(),
        )
        .send()
        .await
        .expect("group");
    let on17 = compiled("pcp1", &["rds.writer.engine_version=\"17\""]);
    let planned = world.plan_observed(&on17.desired).await;
    assert_eq!(
        planned.live.db_parameter_groups["pcp1-db-params-postgres17"].family,
        "postgres16"
    );
    let refusal: Vec<&str> = planned
        .plan
        .conflicts
        .iter()
        .map(|c| c.message.as_str())
        .collect();
    assert!(
        refusal
            .iter()
            .any(|m| m.contains("is of family postgres16, not postgres17")),
        "{refusal:?}"
    );
}

/// Destroy deletes the writer's secret with ForceDeleteWithoutRecovery, which Secrets
/// Manager completes in the background: an apply right after meets the name still held
/// (`InvalidRequestException`) and must wait for it rather than fail halfway, after the
/// subnet and parameter groups were made (docs/aws-behaviour.md, "A forced secret deletion
/// holds the name for a moment"). The sandbox holds it for 90 s here so the apply surely
/// meets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_right_after_destroy_waits_for_the_secret_name() {
    let world = World::with(envctl_sandbox::SandboxConfig {
        profile: envctl_sandbox::DurationProfile {
            secret_force_delete: std::time::Duration::from_secs(90),
            ..envctl_sandbox::DurationProfile::default()
        },
        ..envctl_sandbox::SandboxConfig::default()
    })
    .await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("plan");
    let report = world.apply(&c.desired, planned, "destroy").await;
    assert!(report.succeeded(), "{}", report.render());
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    let creates = stats.get("secretsmanager", "CreateSecret");
    assert!(
        creates.count >= 3 && creates.errors >= 1,
        "the second apply met the held name and retried: {creates:?}"
    );
}

/// With `skip_final_snapshot: false` every destroy takes a final snapshot, and a snapshot
/// identifier is used once: the second destroy of a re-created env used to fail with
/// `DBSnapshotAlreadyExists` (the fixed `<id>-final`) and leave the writer running
/// (docs/aws-behaviour.md, "Final snapshots have a new name each time").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_destroy_takes_a_final_snapshot_of_its_own_name() {
    let world = World::new().await;
    let c = compiled("pcp1", &["rds.writer.skip_final_snapshot=false"]);
    for round in 0..2 {
        assert!(world.converge(&c).await.succeeded(), "apply {round}");
        let planned =
            envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
                .await
                .expect("plan");
        let report = world.apply(&c.desired, planned, "destroy").await;
        assert!(report.succeeded(), "destroy {round}: {}", report.render());
        assert_eq!(owned_resources(&world, &c).await, Vec::<String>::new());
    }
    let stats = world.sandbox().stats();
    let deletes = stats.get("rds", "DeleteDBInstance");
    assert_eq!((deletes.count, deletes.errors), (4, 0), "{deletes:?}");
}

/// A parameter one variant sets and the next does not goes back to the engine default:
/// the plan shows it (`parameters.checkpoint_timeout: 900 -> (none)`), apply resets it with
/// ResetDBParameterGroup and reboots the instances, and the group then holds only what the
/// spec sets. Left set, the value would have shaped every later measurement unseen
/// (docs/aws-behaviour.md, "Parameters the spec no longer sets go back to the engine
/// default").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_the_spec_no_longer_sets_is_reset() {
    let world = World::new().await;
    let with = compiled("pcp1", &["rds.writer.parameters.checkpoint_timeout=900"]);
    assert!(world.converge(&with).await.succeeded());
    let group = with
        .desired
        .db
        .as_ref()
        .expect("db")
        .parameter_group
        .clone();
    let group = group.expect("group").name;
    let without = compiled("pcp1", &[]);
    let planned = world.plan(&without.desired).await;
    let action = planned
        .plan
        .action(&format!("rds/parameter-group/{group}"))
        .expect("the group's action");
    assert_eq!(action.kind, ActionKind::UpdateInPlace, "{action:?}");
    assert!(
        action
            .changes
            .iter()
            .any(|c| c.field == "parameters.checkpoint_timeout" && c.new.is_none()),
        "{:?}",
        action.changes
    );
    world.sandbox().reset_stats();
    let report = world.converge(&without).await;
    assert!(report.succeeded(), "{}", report.render());
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("rds", "ResetDBParameterGroup").count, 1);
    let after = world.plan(&without.desired).await;
    assert!(
        !after.plan.has_changes(),
        "{}",
        envctl::plan::render::render(&after.plan)
    );
    let live = &after.live.db_parameter_groups[&group];
    assert_eq!(
        live.parameters.keys().collect::<Vec<_>>(),
        vec!["max_connections"]
    );
    for i in after.live.db_instances.values() {
        assert_eq!(i.parameter_apply_status.as_deref(), Some("in-sync"));
    }
}

/// Issue 35: a refusal envctl sends through again (here RDS still counting a just-deleted
/// instance in its parameter group, held 120 s) is said once on the console, at its first
/// retry; the later retries are details (the run's log, `--verbose`), not a line each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_refusal_is_one_console_line_and_later_retries_are_details() {
    let world = World::with(envctl_sandbox::SandboxConfig {
        profile: envctl_sandbox::DurationProfile {
            rds_parameter_group_release: std::time::Duration::from_secs(120),
            ..envctl_sandbox::DurationProfile::default()
        },
        ..envctl_sandbox::SandboxConfig::default()
    })
    .await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("plan");
    let mut options = envctl::converge::ApplyOptions::new("destroy", world.state_dir());
    let events = std::sync::Arc::new(envctl::exec::RecordingProgress::new());
    options.events = events.clone();
    let report = envctl::converge::apply(&world.session, &c.desired, planned, &options)
        .await
        .expect("a valid plan");
    assert!(report.succeeded(), "{}", report.render());
    let retries = |detail: bool| {
        events
            .events()
            .into_iter()
            .filter(|e| match e {
                envctl::exec::Event::Status { text, .. } => {
                    !detail && text.contains("trying again")
                }
                envctl::exec::Event::Detail { text, .. } => detail && text.contains("trying again"),
                _ => false,
            })
            .count()
    };
    assert_eq!(retries(false), 1, "{:#?}", events.events());
    assert!(retries(true) >= 1, "{:#?}", events.events());
}
