//! `matrix run --restore` on an adopted pcp1 (created in the sandbox, envctl's tags stripped,
//! then taken over with `--adopt`): after the matrix the observed state equals the baseline
//! exactly (the same revision ARNs, counts, MSK configuration revision and broker type, DB
//! class and parameters), also after an interrupt and after a failed point; what cannot be
//! restored is refused before any change.
use std::collections::BTreeMap;
use std::path::Path;

use envctl::account::observe::{ObserveCache, observe};
use envctl::compile::Compiled;
use envctl::matrix::restore::{BASELINE_FILE, RestoreError};
use envctl::matrix::{self, MatrixError, MatrixOptions, RestoreMode};
use envctl::model::live::LiveState;
use envctl::plan::DiffOptions;
use envctl::results::Status;
use envctl::spec::Loader;
use envctl::spec::playbook::LoadedPlaybook;

use crate::apply::{World, compiled};
use crate::{Test, repo};

/// Log level and count of one service, R/W split of another, an MSK property and broker
/// type, and the writer's class and max_connections: every kind of change a restore undoes.
const PLAYBOOK: &str = "\
name: restore-demo
env: ../envs/pcp1.yaml
matrix:
  level:
    info: {}
    debug: {set: {services.mod-users.log_level: debug, services.mod-users.count: 3}}
  split:
    off: {}
    on:
      set:
        services.mod-fqm-manager.rw_split: true
        kafka.tenant.properties.log.retention.minutes: 960
        kafka.tenant.broker_type: kafka.m5.4xlarge
        rds.writer.class: db.r6g.2xlarge
        rds.writer.parameters.max_connections: 3000
steps:
  - name: load
    run: jmeter -n -t plan.jmx
    demo: test \"${AXIS_split}\" != on || test ! -e fail-on-split
    timeout: 1m
collect: {padding: 1m, period: 60s}
";

fn workspace(playbook: &str) -> Test {
    let env = std::fs::read_to_string(repo().join("envs/pcp1.yaml")).expect("pcp1");
    Test::new()
        .file("envs/pcp1.yaml", &env)
        .file("playbooks/pb.yaml", playbook)
}

fn load(dir: &Path) -> LoadedPlaybook {
    let mut loader = Loader::new();
    match loader.load_playbook(&dir.join("playbooks/pb.yaml")) {
        Some(p) => p,
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    }
}

fn options(world: &World, results: &Path, run_id: &str, restore: RestoreMode) -> MatrixOptions {
    MatrixOptions {
        restore,
        ..world.matrix_options(results, run_id)
    }
}

/// pcp1 as a team's hand-made environment that envctl then adopted.
async fn adopted_pcp1() -> (World, Compiled) {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let d = &c.desired;
    let clients = &world.session.clients;
    let keys: Vec<String> = ["envctl:tool", "envctl:env", "envctl:owner"]
        .map(String::from)
        .to_vec();
    let live = live(&world, &c).await;
    let mut ecs_arns: Vec<&String> = live.services.values().map(|s| &s.arn).collect();
    let cluster = live.cluster.as_ref().expect("cluster");
    ecs_arns.push(&cluster.arn);
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    for arn in ecs_arns {
        envctl::aws::ecs::untag_resource(&clients.ecs, arn, &key_refs)
            .await
            .expect("untag ecs");
    }
    for k in live.kafka.values() {
        clients
            .kafka
            .untag_resource()
            .resource_arn(&k.arn)
            .set_tag_keys(Some(keys.clone()))
            .send()
            .await
            .expect("untag msk");
    }
    for db in live.db_instances.values() {
        clients
            .rds
            .remove_tags_from_resource()
            .resource_name(&db.arn)
            .set_tag_keys(Some(keys.clone()))
            .send()
            .await
            .expect("untag rds");
    }
    let planned = world.plan_with(d, DiffOptions { adopt: true }).await;
    let report = world.apply(d, planned, "adopt").await;
    assert!(report.succeeded(), "{}", report.render());
    // A minute later: the ECS token buckets are full again, as for any new command.
    world
        .session
        .clock
        .sleep(std::time::Duration::from_secs(60))
        .await;
    (world, c)
}

async fn live(world: &World, c: &Compiled) -> LiveState {
    // A fresh cache: what AWS says now, not what an earlier read remembered.
    let mut cache = ObserveCache::default();
    observe(&world.session.reads(), &c.desired, &mut cache)
        .await
        .expect("observe")
}

/// Everything a restore promises to put back, as plain values.
#[derive(Debug, PartialEq)]
struct Restorable {
    services: BTreeMap<String, (String, u32)>,
    kafka: BTreeMap<String, (Option<String>, Option<i64>, String, String)>,
    dbs: BTreeMap<String, (String, Option<String>)>,
    parameters: BTreeMap<String, BTreeMap<String, String>>,
}

fn restorable(live: &LiveState) -> Restorable {
    Restorable {
        services: live
            .services
            .iter()
            .map(|(n, s)| (n.clone(), (s.task_definition.clone(), s.desired_count)))
            .collect(),
        kafka: live
            .kafka
            .iter()
            .map(|(n, k)| {
                (
                    n.clone(),
                    (
                        k.configuration_arn.clone(),
                        k.configuration_revision,
                        k.broker_type.clone(),
                        k.kafka_version.clone(),
                    ),
                )
            })
            .collect(),
        dbs: live
            .db_instances
            .iter()
            .map(|(n, d)| (n.clone(), (d.class.clone(), d.parameter_group.clone())))
            .collect(),
        parameters: live
            .db_parameter_groups
            .iter()
            .map(|(n, g)| (n.clone(), g.parameters.clone()))
            .collect(),
    }
}

fn assert_restored(record: &envctl::results::RunRecord) {
    let restore = record.restore.as_ref().expect("a restore record");
    assert_eq!(restore.status, Some(Status::Passed), "{restore:#?}");
    assert!(restore.performed);
    assert!(!restore.verification.is_empty());
    assert!(
        restore.verification.iter().all(|v| v.ok),
        "{:#?}",
        restore.verification
    );
    assert!(!record.teardown.performed, "a restore run deletes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matrix_on_an_adopted_pcp1_puts_back_exactly_what_ran_before() {
    let (world, c) = adopted_pcp1().await;
    let before = restorable(&live(&world, &c).await);
    let test = workspace(PLAYBOOK);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).expect("matrix plan");
    let results = tempfile::tempdir().unwrap();
    // Auto: the adopted marker makes it a restore run without --restore.
    let record = matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "r1", RestoreMode::Auto),
    )
    .await
    .expect("run");
    assert_eq!(record.status, Status::Passed, "{:#?}", record.points);
    assert_restored(&record);
    let after = restorable(&live(&world, &c).await);
    assert_eq!(after, before);
    // The points did change what the restore put back.
    let restore = record.restore.as_ref().unwrap();
    assert!(restore.mutating_calls > 0);
    eprintln!(
        "restore after the 2x2 matrix: estimate {:.0} s, took {:.0} simulated s, {} mutating calls",
        restore.estimated_s, restore.actual_s, restore.mutating_calls
    );

    // A run that ends on the point where everything is switched: the restore puts back
    // mod-users' revision and count, the MSK configuration revision and broker type, the
    // writer's class and max_connections, with no registration.
    let only = [
        ("level".to_string(), "debug".to_string()),
        ("split".to_string(), "on".to_string()),
    ];
    let plan = matrix::plan_matrix(&loaded, &only).unwrap();
    let record = matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "r2", RestoreMode::On),
    )
    .await
    .expect("run");
    assert_eq!(record.status, Status::Passed, "{:#?}", record.points);
    assert_restored(&record);
    assert_eq!(restorable(&live(&world, &c).await), before);
    let restore = record.restore.as_ref().unwrap();
    eprintln!(
        "restore after everything switched: estimate {:.0} s, took {:.0} simulated s, {} mutating calls",
        restore.estimated_s, restore.actual_s, restore.mutating_calls
    );
    // Exactly: UpdateService (mod-users: revision and count; mod-fqm-manager's R/W split was
    // already on), UpdateBrokerType, UpdateClusterConfiguration, ModifyDBInstance (the
    // writer's class), ModifyDBParameterGroup and a reboot of each instance using the group
    // (writer and reader). No RegisterTaskDefinition: a re-registration would be an eighth.
    assert_eq!(restore.mutating_calls, 7, "{restore:#?}");

    // baseline.json: private, and what the run started from.
    let file = results.path().join("r1").join(BASELINE_FILE);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let baseline: envctl::matrix::restore::Baseline =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    for (name, (arn, count)) in &before.services {
        assert_eq!(&baseline.services[name].task_definition, arn);
        assert_eq!(baseline.services[name].desired_count, *count);
    }
    assert_eq!(
        baseline.parameter_groups.values().next().unwrap()["max_connections"],
        "2731"
    );
    let run_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(results.path().join("r1").join("run.json")).unwrap())
            .unwrap();
    assert_eq!(run_json["restore"]["status"], "passed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_point_and_an_interrupt_still_end_on_the_baseline() {
    let (world, c) = adopted_pcp1().await;
    let before = restorable(&live(&world, &c).await);

    // A failed point: the switched configuration's workload fails (the step runs in the
    // playbook's directory, where this file exists).
    let test = workspace(PLAYBOOK).file("playbooks/fail-on-split", "");
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).unwrap();
    let results = tempfile::tempdir().unwrap();
    let record = matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "failed", RestoreMode::On),
    )
    .await
    .unwrap();
    assert_eq!(record.status, Status::Failed, "{:#?}", record.points);
    assert!(record.points.iter().any(|p| p.status == Status::Failed));
    assert_restored(&record);
    assert_eq!(restorable(&live(&world, &c).await), before);

    // An interrupt during the run: as soon as the first point's record exists.
    let slow = PLAYBOOK.replace(
        "    timeout: 1m\n",
        "    timeout: 1m\n  - name: slow\n    run: sleep 2\n    timeout: 1m\n",
    );
    let test = workspace(&slow);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).unwrap();
    let first = options(&world, results.path(), "cut", RestoreMode::On);
    let cancel = first.cancel.clone();
    let points = results.path().join("cut").join("points");
    let flag = tokio::spawn(async move {
        let first_done = || {
            std::fs::read_dir(&points).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.path().join("point.json").is_file())
            })
        };
        // Bounded: a run that never finishes a point is cancelled after two minutes.
        for _ in 0..2400 {
            if first_done() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        cancel.cancel();
    });
    let record = matrix::run(&loaded, &plan, &world.session, &first)
        .await
        .unwrap();
    flag.await.unwrap();
    assert_eq!(record.status, Status::Interrupted, "{:#?}", record.points);
    assert_restored(&record);
    assert_eq!(restorable(&live(&world, &c).await), before);

    // The resumed run restores to the first run's baseline, read from baseline.json.
    let mut again = options(&world, results.path(), "cut", RestoreMode::On);
    again.resume = true;
    let record = matrix::run(&loaded, &plan, &world.session, &again)
        .await
        .unwrap();
    assert_eq!(record.status, Status::Passed, "{:#?}", record.points);
    assert_restored(&record);
    assert_eq!(restorable(&live(&world, &c).await), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teardown_and_restore_are_exclusive_and_a_replacing_axis_is_refused_before_any_change() {
    let (world, _c) = adopted_pcp1().await;
    let results = tempfile::tempdir().unwrap();
    world.sandbox().reset_stats();

    // `teardown:` in the playbook of an adopted env: refused, pointing at the line.
    let with_teardown = format!("{PLAYBOOK}teardown: always\n");
    let test = workspace(&with_teardown);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).unwrap();
    let err = matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "t", RestoreMode::Auto),
    )
    .await
    .expect_err("refused");
    let text = err.to_string();
    let line = with_teardown.lines().count();
    assert!(
        text.contains(&format!("pb.yaml:{line}:")) && text.contains("exclusive"),
        "{text}"
    );
    assert!(matches!(
        err,
        MatrixError::Restore(RestoreError::TeardownExclusive { .. })
    ));
    // --teardown with --restore, too.
    let mut flag = options(&world, results.path(), "t", RestoreMode::On);
    flag.teardown = Some(envctl::spec::playbook::TeardownPolicy::Always);
    let test = workspace(PLAYBOOK);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).unwrap();
    let err = matrix::run(&loaded, &plan, &world.session, &flag)
        .await
        .expect_err("refused");
    assert!(matches!(
        err,
        MatrixError::Restore(RestoreError::TeardownFlagExclusive { .. })
    ));

    // ZooKeeper to KRaft replaces the MSK cluster: refused, naming the point and the reason.
    let kraft = PLAYBOOK.replace(
        "        kafka.tenant.broker_type: kafka.m5.4xlarge\n",
        "        kafka.tenant.metadata: kraft\n        kafka.tenant.version: 3.7.x\n",
    );
    let test = workspace(&kraft);
    let loaded = load(test.path());
    let plan = matrix::plan_matrix(&loaded, &[]).unwrap();
    let err = matrix::run(
        &loaded,
        &plan,
        &world.session,
        &options(&world, results.path(), "k", RestoreMode::On),
    )
    .await
    .expect_err("refused");
    let text = err.to_string();
    assert!(
        matches!(err, MatrixError::Restore(RestoreError::Irreversible { .. })),
        "{text}"
    );
    assert!(
        text.contains("split=on")
            && text.contains("kafka/cluster/tenant")
            && text.contains("replaced")
            && text.contains("KRaft"),
        "{text}"
    );
    assert_eq!(world.mutating_calls(), 0, "refused before any change");
    assert!(!results.path().join("k").exists(), "and before any file");
    assert!(!results.path().join("t").exists());
}

#[test]
fn the_restore_and_teardown_flags_are_exclusive_on_the_command_line() {
    let out = workspace(PLAYBOOK)
        .args([
            "matrix",
            "run",
            "playbooks/pb.yaml",
            "--sandbox",
            "--restore",
            "--teardown",
            "always",
        ])
        .run();
    // A usage error (64), not 2 (changes pending).
    assert_eq!(out.code, 64, "{}", out.stderr);
    assert!(out.stderr.contains("--teardown"), "{}", out.stderr);
}

/// The number for the closing note: restoring pcp1 after the listapp-rw-split playbook,
/// against the restore plan's estimate (the workload replaced by a quick demo step, and
/// `teardown: always` removed, which a restore run refuses). pcp1 runs mod-fqm-manager with
/// R/W split enabled: the full matrix, in envctl's order (disabled, enabled), ends on what
/// pcp1 ran and its restore has nothing to do; the run with `--only rw_split=disabled` ends
/// switched, and its restore is one UpdateService back to the original revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_after_listapp_rw_split_takes_what_its_plan_estimates() {
    let (world, c) = adopted_pcp1().await;
    let before = restorable(&live(&world, &c).await);
    let original = std::fs::read_to_string(repo().join("playbooks/listapp-rw-split.yaml")).unwrap();
    let steps_at = original.find("steps:").unwrap();
    let collect_at = original.find("collect:").unwrap();
    let playbook = format!(
        "{}steps:\n  - name: listapp\n    run: jmeter\n    demo: \"true\"\n    timeout: 1m\n{}",
        &original[..steps_at],
        &original[collect_at..]
    )
    .replace("teardown: always\n", "");
    let test = workspace(&playbook);
    let loaded = load(test.path());
    let results = tempfile::tempdir().unwrap();
    for (run, only) in [
        ("rw", vec![]),
        (
            "rw-off",
            vec![("rw_split".to_string(), "disabled".to_string())],
        ),
    ] {
        let plan = matrix::plan_matrix(&loaded, &only).unwrap();
        let record = matrix::run(
            &loaded,
            &plan,
            &world.session,
            &options(&world, results.path(), run, RestoreMode::On),
        )
        .await
        .unwrap();
        assert_eq!(record.status, Status::Passed, "{:#?}", record.points);
        assert_restored(&record);
        assert_eq!(restorable(&live(&world, &c).await), before);
        let restore = record.restore.as_ref().unwrap();
        eprintln!(
            "restore after listapp-rw-split (order {:?}): estimate {:.0} s, took {:.0} simulated s, {} mutating calls",
            record.order, restore.estimated_s, restore.actual_s, restore.mutating_calls
        );
        let ends_switched = record
            .order
            .last()
            .is_some_and(|id| id.contains("rw_split=disabled"));
        assert_eq!(ends_switched, run == "rw-off", "{:?}", record.order);
        if ends_switched {
            // One service back on its revision: one UpdateService, no registration.
            assert_eq!(restore.mutating_calls, 1);
            assert!(restore.estimated_s > 0.0);
            assert!(
                restore.actual_s <= restore.estimated_s * 1.5,
                "{} vs {}",
                restore.actual_s,
                restore.estimated_s
            );
        } else {
            assert_eq!(
                restore.mutating_calls, 0,
                "the last point left it as it was"
            );
        }
    }
}
