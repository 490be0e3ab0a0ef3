//! `envctl import` round trips: a sandbox world built by applying a shipped env is imported
//! back; the written file validates and its plan against the same world is empty. Import
//! makes no mutating call.
use std::path::Path;

use envctl::account::import::{ImportRequest, read};
use envctl::compile::{Compiled, compile_env};
use envctl::import::{ImportOptions, Imported, import};
use envctl::model::DesiredState;
use envctl::plan::DiffOptions;
use envctl::plan::render::render;
use envctl::spec::Loader;

use crate::apply::{World, compiled};

struct RoundTrip {
    imported: Imported,
    /// API calls (retries of throttled ones not counted) and simulated seconds of the reads.
    calls: u64,
    secs: f64,
}

fn request(desired: &DesiredState) -> ImportRequest {
    ImportRequest {
        region: desired.region.clone(),
        cluster: desired.cluster.name.clone(),
        msk: desired.kafka.values().map(|k| k.name.clone()).collect(),
        rds: desired
            .db
            .iter()
            .map(|d| d.writer.identifier.clone())
            .collect(),
    }
}

/// Imports what `desired` built and compiles the written files (kept in the returned dir).
fn compile_imported(
    env: &str,
    desired: &DesiredState,
    live: &envctl::import::ImportedWorld,
    owner: Option<&str>,
) -> (Imported, Compiled, tempfile::TempDir) {
    let imported = import(
        live,
        &ImportOptions {
            env: env.to_string(),
            owner: owner.map(str::to_string),
            capacity: Some((
                desired.cluster.instance_type.clone(),
                desired.cluster.instances,
            )),
            template_dir: "../task-defs".into(),
        },
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(dir.path(), env, &imported);
    let mut loader = Loader::new();
    let Some(reimported) = compile_env(&mut loader, &path, &[]) else {
        panic!(
            "{}\n{}",
            loader.diagnostics.render(&loader.sources),
            imported.env_yaml
        );
    };
    assert!(
        !loader.diagnostics.has_errors(),
        "{}",
        loader.diagnostics.render(&loader.sources)
    );
    (imported, reimported, dir)
}

async fn round_trip(env: &str) -> RoundTrip {
    round_trip_with(env, &[]).await
}

async fn round_trip_with(env: &str, sets: &[&str]) -> RoundTrip {
    let world = World::new().await;
    let original = compiled(env, sets);
    world.register_fleet(&original.desired);
    let report = world.converge(&original).await;
    assert!(report.succeeded(), "{}", report.render());

    let desired = &original.desired;
    // A minute after the apply: ECS's token buckets are full again, as for any new command.
    world
        .session
        .clock
        .sleep(std::time::Duration::from_secs(60))
        .await;
    let stats_before = world.sandbox().stats();
    let started = world.session.clock.now();
    let live = read(&world.session.reads(), &request(desired))
        .await
        .expect("import reads");
    let secs = world.session.clock.now() - started;
    let stats_after = world.sandbox().stats();
    assert_eq!(
        stats_after.mutating_calls(),
        stats_before.mutating_calls(),
        "import must not change anything"
    );
    // Paced by the client's token buckets; the sandbox's own may disagree by a rounding at
    // a bucket's edge, which costs one retry.
    let throttled = stats_after.throttled() - stats_before.throttled();
    assert!(
        throttled <= 2,
        "import is paced below ECS's limits: {throttled} throttled"
    );
    let calls = stats_after.total() - stats_before.total() - throttled;

    let (imported, reimported, _dir) = compile_imported(env, desired, &live, None);
    let planned = world.plan(&reimported.desired).await;
    assert!(
        !planned.plan.has_changes(),
        "the imported {env} plans changes:\n{}\n{}",
        render(&planned.plan),
        imported.env_yaml
    );
    assert_eq!(reimported.desired.services.len(), desired.services.len());
    RoundTrip {
        imported,
        calls,
        secs,
    }
}

fn write(dir: &Path, env: &str, imported: &Imported) -> std::path::PathBuf {
    let envs = dir.join("envs");
    let task_defs = dir.join("task-defs");
    std::fs::create_dir_all(&envs).expect("envs dir");
    std::fs::create_dir_all(&task_defs).expect("task-defs dir");
    for (name, text) in &imported.templates {
        std::fs::write(task_defs.join(name), text).expect("template written");
    }
    let path = envs.join(format!("{env}.yaml"));
    std::fs::write(&path, &imported.env_yaml).expect("env written");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_pcp1_plans_no_changes() {
    let rt = round_trip("pcp1").await;
    let yaml = &rt.imported.env_yaml;
    // The idiom, not a dump: one shared template, sizes as fields, R/W split as a switch.
    assert_eq!(rt.imported.templates.len(), 1, "{yaml}");
    assert!(yaml.contains("  defaults:\n"), "{yaml}");
    assert!(
        yaml.contains("jvm: {xmx: 3076, metaspace: 384, max_metaspace: 512}"),
        "{yaml}"
    );
    assert!(yaml.contains("rw_split: true"), "{yaml}");
    assert!(
        !yaml.contains("rds.amazonaws.com"),
        "endpoints are references: {yaml}"
    );
    // The writer's managed secret is written as the reference, which follows a new writer.
    assert!(
        yaml.contains("DB_PASSWORD: \"${rds.writer.master_secret_arn}:password::\""),
        "{yaml}"
    );
    let template = &rt.imported.templates[0].1;
    assert!(
        template.contains("{{ db.reader.host | tojson }}"),
        "{template}"
    );
    assert!(template.contains("{{ kafka.host | tojson }}"), "{template}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_qcp1_plans_no_changes() {
    let rt = round_trip("qcp1").await;
    assert!(rt.imported.env_yaml.contains("metadata: kraft"));
    // Its Managed Instances provider (envctl's own, envctl-qcp1-pvt) is expressed as
    // `managed_instances` from DescribeCapacityProviders: plan manages it, destroy deletes it.
    assert!(
        rt.imported
            .env_yaml
            .contains("capacity: {managed_instances: {instance_types: [m6i.2xlarge], instances: {min: 0, max: 20}"),
        "{}",
        rt.imported.env_yaml
    );
    assert!(
        !rt.imported
            .notes
            .iter()
            .any(|n| n.contains("capacity provider envctl-qcp1-pvt")),
        "{:#?}",
        rt.imported.notes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_kafka_omb_plans_no_changes() {
    let rt = round_trip("kafka-omb").await;
    assert!(
        rt.imported.env_yaml.contains("jvm: {xmx: 8192"),
        "{}",
        rt.imported.env_yaml
    );
}

/// MSK's default client encryption is TLS only: no plaintext bootstrap string. Import
/// takes the TLS one, recognises it in the task definitions, and keeps `client_broker`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_tls_only_cluster_keeps_its_tls_bootstrap_string() {
    let rt = round_trip_with("kafka-omb", &["kafka.main.client_broker=TLS"]).await;
    assert!(
        rt.imported.env_yaml.contains("client_broker: TLS\n"),
        "{}",
        rt.imported.env_yaml
    );
    let templates: String = rt
        .imported
        .templates
        .iter()
        .map(|(_, t)| t.as_str())
        .collect();
    assert!(templates.contains("{{ kafka."), "{templates}");
    assert!(!templates.contains(":9094"), "{templates}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_perf_144_plans_no_changes_with_paginated_reads() {
    let rt = round_trip("perf-144").await;
    // 144 services: two ListServices pages, 15 DescribeServices batches, one
    // DescribeTaskDefinition per service, and the data stores' few reads.
    eprintln!(
        "perf-144 import: {} API calls, {:.1} simulated s",
        rt.calls, rt.secs
    );
    // Plus DescribeClusters; MSK: ListClustersV2, ListConfigurations, GetBootstrapBrokers,
    // DescribeConfigurationRevision, DescribeClusterV2; RDS: two DescribeDBInstances and one
    // DescribeDBParameters page; DescribeCapacityProviders (what import cannot express) and
    // DescribeSecret (the writer's master secret).
    assert_eq!(rt.calls, 1 + 2 + 15 + 144 + 5 + 3 + 2, "{}", rt.calls);
    // DescribeTaskDefinition at ECS's 50 burst and 20/s: (144 - 50) / 20 = 4.7 s at least.
    assert!(rt.secs >= 4.7, "{}", rt.secs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_env_that_envctl_did_not_create_is_adopted_then_in_sync() {
    let world = World::new().await;
    let original = compiled("pcp1", &[]);
    assert!(world.converge(&original).await.succeeded());
    let d = &original.desired;
    // Strip envctl's tags: the resources now look like a team's hand-made environment.
    strip_ownership(&world, d).await;
    let live = read(&world.session.reads(), &request(d))
        .await
        .expect("read");
    let (imported, reimported, _dir) = compile_imported("pcp1", d, &live, Some("ptf"));
    assert!(imported.env_yaml.contains("owner: ptf"));
    let planned = world.plan_observed(&reimported.desired).await;
    assert!(!planned.plan.conflicts.is_empty(), "nothing is owned yet");
    let planned = world
        .plan_with(&reimported.desired, DiffOptions { adopt: true })
        .await;
    let changed: Vec<&str> = planned
        .plan
        .changes()
        .flat_map(|a| a.changes.iter().map(|c| c.field.as_str()))
        .filter(|f| *f != envctl::plan::diff::ADOPT_FIELD)
        .collect();
    assert!(changed.is_empty(), "adopting only tags: {changed:?}");
    let report = world.apply(&reimported.desired, planned, "adopt").await;
    assert!(report.succeeded(), "{}", report.render());
    let planned = world.plan(&reimported.desired).await;
    assert!(
        planned.plan.conflicts.is_empty() && !planned.plan.has_changes(),
        "{}",
        render(&planned.plan)
    );
}

/// Removes envctl's ownership tags from everything `desired` built that import reports as a
/// conflict when it is not the env's: the cluster and its services, its Managed Instances
/// provider, the MSK clusters, the DB instances and their parameter group. What is left is
/// an environment envctl did not create.
async fn strip_ownership(world: &World, desired: &DesiredState) {
    let clients = &world.session.clients;
    let keys = ["envctl:tool", "envctl:env", "envctl:owner"];
    let live = read(&world.session.reads(), &request(desired))
        .await
        .expect("read");
    let mut arns = vec![live.cluster.arn.clone()];
    arns.extend(live.services.iter().map(|s| s.arn.clone()));
    let providers = envctl::aws::ecs::cluster_capacity_providers(&clients.ecs, &live.cluster.name)
        .await
        .expect("providers");
    arns.extend(providers.iter().map(|p| p.arn.clone()));
    for arn in &arns {
        envctl::aws::ecs::untag_resource(&clients.ecs, arn, &keys)
            .await
            .expect("untag ecs");
    }
    for k in &live.kafka {
        clients
            .kafka
            .untag_resource()
            .resource_arn(&k.live.arn)
            .set_tag_keys(Some(keys.map(String::from).to_vec()))
            .send()
            .await
            .expect("untag msk");
    }
    if let Some(db) = &live.db {
        let mut rds_arns: Vec<String> = std::iter::once(&db.writer)
            .chain(&db.readers)
            .map(|i| i.arn.clone())
            .collect();
        if let Some(group) = &db.writer.parameter_group
            && let Some((arn, _)) = envctl::aws::rds::describe_parameter_group(&clients.rds, group)
                .await
                .expect("group")
        {
            rds_arns.push(arn);
        }
        for arn in rds_arns {
            clients
                .rds
                .remove_tags_from_resource()
                .resource_name(&arn)
                .set_tag_keys(Some(keys.map(String::from).to_vec()))
                .send()
                .await
                .expect("untag rds");
        }
    }
}

/// Issue 31 item 2, for each shipped env: apply, take envctl's ownership tags away, import
/// without `--capacity` (the capacity comes from the cluster's providers, Managed Instances
/// included), `plan --adopt` changes nothing but ownership tags, `apply --adopt` takes over
/// everything import reported as a conflict (the DB parameter group and the Managed
/// Instances provider included), and the next plan is empty: no conflict, no change, no new
/// task-definition revision.
async fn adopted_round_trip(env: &str) {
    let world = World::new().await;
    let original = compiled(env, &[]);
    world.register_fleet(&original.desired);
    let report = world.converge(&original).await;
    assert!(report.succeeded(), "{}", report.render());
    strip_ownership(&world, &original.desired).await;
    let live = read(&world.session.reads(), &request(&original.desired))
        .await
        .expect("read");
    let imported = import(
        &live,
        &ImportOptions {
            env: env.to_string(),
            owner: Some("ptf".into()),
            capacity: None,
            template_dir: "../task-defs".into(),
        },
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(dir.path(), env, &imported);
    let mut loader = Loader::new();
    let Some(reimported) = compile_env(&mut loader, &path, &[]) else {
        panic!(
            "{}\n{}",
            loader.diagnostics.render(&loader.sources),
            imported.env_yaml
        );
    };
    let registered = || {
        world
            .sandbox()
            .stats()
            .get("ecs", "RegisterTaskDefinition")
            .count
    };
    let before = registered();
    let planned = world
        .plan_with(&reimported.desired, DiffOptions { adopt: true })
        .await;
    let changed: Vec<String> = planned
        .plan
        .changes()
        .flat_map(|a| {
            a.changes
                .iter()
                .filter(|c| c.field != envctl::plan::diff::ADOPT_FIELD)
                .map(move |c| format!("{}: {}", a.id, c.field))
        })
        .collect();
    assert!(
        changed.is_empty(),
        "{env}: adopting changes only tags: {changed:?}\n{}",
        imported.env_yaml
    );
    let report = world.apply(&reimported.desired, planned, "adopt").await;
    assert!(report.succeeded(), "{env}: {}", report.render());
    let planned = world.plan_observed(&reimported.desired).await;
    assert!(
        planned.plan.conflicts.is_empty() && !planned.plan.has_changes(),
        "{env}: {}\n{}",
        render(&planned.plan),
        imported.env_yaml
    );
    assert_eq!(
        registered(),
        before,
        "{env}: no new task-definition revision"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qcp1_round_trips_through_import_and_adopt() {
    adopted_round_trip("qcp1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pcp1_round_trips_through_import_and_adopt() {
    adopted_round_trip("pcp1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_export_round_trips_through_import_and_adopt() {
    adopted_round_trip("data-export").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_omb_round_trips_through_import_and_adopt() {
    adopted_round_trip("kafka-omb").await;
}
