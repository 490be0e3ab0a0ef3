//! `--copy NAME` (issue 34 item 1): two copies of one env on one account, each with its own
//! AWS names, tags, lock and teardown; a destroy or a gc of one never touches the other.
use envctl::compile::{Compiled, compile_env};
use envctl::spec::Loader;
use envctl::spec::copy::CopyName;

use crate::apply::{World, owned_resources};
use crate::{Test, repo};

/// `envs/<env>.yaml` as copy `copy` (`None`: the env itself).
pub fn compiled_copy(env: &str, copy: Option<&str>) -> Compiled {
    let copy = copy.map(|c| CopyName::parse(c).expect("a valid copy name"));
    let mut loader = Loader::new().with_copy(copy);
    match compile_env(
        &mut loader,
        &repo().join("envs").join(format!("{env}.yaml")),
        &[],
    ) {
        Some(c) => c,
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    }
}

#[test]
fn a_copy_suffixes_every_name_the_env_derives_and_tags_the_copy() {
    let c = compiled_copy("pcp1", Some("s1"));
    let d = &c.desired;
    assert_eq!(d.env, "pcp1-s1");
    assert_eq!(d.cluster.name, "pcp1-pvt-s1");
    assert_eq!(
        d.cluster.capacity.strategy_provider(),
        Some("envctl-pcp1-pvt-s1")
    );
    let tenant = &d.kafka["tenant"];
    assert_eq!(tenant.name, "pcp1-msk-tenant-s1");
    assert!(
        tenant
            .configuration
            .name
            .starts_with("pcp1-msk-tenant-s1-config-"),
        "{}",
        tenant.configuration.name
    );
    let db = d.db.as_ref().expect("pcp1 has RDS");
    assert_eq!(db.writer.identifier, "pcp1-db-s1");
    assert_eq!(db.readers[0].identifier, "pcp1-db-reader-s1");
    assert_eq!(db.master_secret_name(), "envctl-pcp1-db-s1-master");
    assert_eq!(db.subnet_group.name, "pcp1-db-s1-subnets");
    assert!(
        db.parameter_group
            .as_ref()
            .is_some_and(|g| g.name.starts_with("pcp1-db-s1-params-")),
        "{:?}",
        db.parameter_group
    );
    for s in d.services.values() {
        assert!(
            s.task_definition.family.starts_with("pcp1-s1-"),
            "{}",
            s.task_definition.family
        );
    }
    // The services' group and the load engines' (issue 30), both the copy's.
    assert_eq!(
        d.log_groups().keys().cloned().collect::<Vec<_>>(),
        ["/ecs/pcp1-s1", "/envctl/pcp1-s1/load"]
    );
    assert_eq!(
        d.tags.get("envctl:env").map(String::as_str),
        Some("pcp1-s1")
    );
    assert_eq!(d.tags.get("envctl:copy").map(String::as_str), Some("s1"));
    // The env itself carries no copy tag.
    let base = compiled_copy("pcp1", None);
    assert_eq!(base.desired.tags.get("envctl:copy"), None);
}

/// Done-when of issue 34: "A destroy of one copy while the other runs leaves the other
/// untouched". Two copies applied side by side on one account; a destroy of `a` deletes
/// all of `a` and nothing of `b`; neither the env itself nor `b` claims `a`'s resources.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_copies_coexist_and_a_destroy_of_one_leaves_the_other_untouched() {
    let world = World::new().await;
    let a = compiled_copy("pcp1", Some("a"));
    let b = compiled_copy("pcp1", Some("b"));
    let report = world.converge(&a).await;
    assert!(report.succeeded(), "{}", report.render());
    // b is created whole beside a: none of a's resources is b's, nor in b's way.
    let planned = world.plan(&b.desired).await;
    assert!(
        planned.plan.conflicts.is_empty(),
        "{:#?}",
        planned.plan.conflicts
    );
    let report = world.apply(&b.desired, planned, "test-run-b").await;
    assert!(report.succeeded(), "{}", report.render());

    let owned_a = owned_resources(&world, &a).await;
    let owned_b = owned_resources(&world, &b).await;
    // As `apply::destroy_leaves_nothing_owned` counts pcp1's: 21.
    assert_eq!(owned_a.len(), 21, "{owned_a:#?}");
    assert_eq!(owned_b.len(), 21, "{owned_b:#?}");
    // Services (scoped by their cluster) and MSK clusters are keyed by their spec names;
    // every other id is the AWS name, and no two are the same.
    let named = |ids: &[String]| -> Vec<String> {
        ids.iter()
            .filter(|id| !id.starts_with("ecs/service/") && !id.starts_with("kafka/"))
            .cloned()
            .collect()
    };
    assert_eq!(named(&owned_a).len(), 9, "{owned_a:#?}");
    assert!(
        named(&owned_a).iter().all(|id| !owned_b.contains(id)),
        "distinct names: {owned_a:#?} {owned_b:#?}"
    );
    // Everything b owns, its task-definition revisions included.
    let all_of = async |c: &Compiled| -> Vec<String> {
        envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
            .await
            .expect("observe")
            .plan
            .actions
            .iter()
            .map(|a| a.id.to_string())
            .collect()
    };
    let all_of_b = all_of(&b).await;
    assert!(
        all_of_b
            .iter()
            .any(|id| id.starts_with("ecs/task-definitions/")),
        "{all_of_b:#?}"
    );
    // The env itself owns nothing of its copies.
    let base = compiled_copy("pcp1", None);
    assert_eq!(owned_resources(&world, &base).await, Vec::<String>::new());

    let planned = envctl::converge::plan_destroy(&world.session, &a.desired, &world.state_dir())
        .await
        .expect("plan");
    let report = world.apply(&a.desired, planned, "destroy-a").await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(owned_resources(&world, &a).await, Vec::<String>::new());
    assert_eq!(owned_resources(&world, &b).await, owned_b);
    assert_eq!(all_of(&b).await, all_of_b);
    // b still runs as applied: its plan has nothing to change (its task definitions, its
    // services and data stores are all there).
    let planned = world.plan(&b.desired).await;
    let changes: Vec<String> = planned.plan.changes().map(|a| a.id.to_string()).collect();
    assert!(changes.is_empty(), "b was touched: {changes:#?}");

    // gc of one copy's instance name selects only that copy.
    let gc = envctl::converge::plan_gc(&world.session, |tags| {
        tags.get("envctl:env").map(String::as_str) == Some("pcp1-a")
    })
    .await
    .expect("gc plan");
    assert!(gc.plan.actions.is_empty(), "{:#?}", gc.plan.actions);
}

#[test]
fn copy_names_are_checked_with_a_clear_error() {
    let out = Test::new()
        .in_repo()
        .args(["plan", "envs/pcp1.yaml", "--copy", "Shard_1"])
        .run();
    assert_eq!(out.code, 64, "a usage error: {}", out.stderr);
    assert!(
        out.stderr
            .contains("`Shard_1` is not a valid copy name: `S` is not allowed"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("lowercase letters, digits and dashes"),
        "{}",
        out.stderr
    );
}

#[test]
fn render_shows_the_copy_names_and_a_name_too_long_for_the_copy_is_an_error_at_its_line() {
    let out = Test::new()
        .in_repo()
        .args([
            "render",
            "envs/pcp1.yaml",
            "--copy",
            "s1",
            "--service",
            "mod-users",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("pcp1-s1-mod-users"), "{}", out.stdout);
    assert!(out.stdout.contains("/ecs/pcp1-s1"), "{}", out.stdout);

    // 60 characters: valid alone, over MSK's 64 with `-shard-1`.
    let long = format!("m{}", "x".repeat(59));
    let env = std::fs::read_to_string(repo().join("envs/pcp1.yaml"))
        .expect("pcp1")
        .replace("name: pcp1-msk-tenant", &format!("name: {long}"));
    let line = env
        .lines()
        .position(|l| l.contains(&long))
        .expect("the name's line")
        + 1;
    let t = Test::new().file("envs/long.yaml", &env);
    let out = t.args(["validate", "envs/long.yaml"]).run();
    assert_eq!(out.code, 0, "valid without a copy: {}", out.stderr);
    let out = Test::new()
        .file("envs/long.yaml", &env)
        .args(["validate", "envs/long.yaml", "--copy", "shard-1"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("error[name-too-long]"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!("envs/long.yaml:{line}:")),
        "at the name's line {line}: {}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(&format!("MSK cluster `{long}-shard-1` has 68 characters; AWS allows at most 64 (with the suffix `-shard-1` of copy `shard-1`)")),
        "{}",
        out.stderr
    );
}
