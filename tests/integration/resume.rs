//! `matrix run --resume RUN_ID`: only an existing run of the same playbook is continued, and a
//! refused resume creates nothing.
use std::collections::BTreeMap;

use envctl::results::{
    FileRef, OrderEstimates, RESULTS_SCHEMA_VERSION, RunRecord, Status, TeardownRecord, write_json,
};

use crate::{BASE_ENV, Output, Test};

const PLAYBOOK: &str = "\
name: demo
env: env.yaml
matrix:
  users:
    u1: {vars: {users: 1}}
steps:
  - wait: 1s
";

fn run_record(run_id: &str, playbook_hash: &str) -> RunRecord {
    let file = |name: &str, hash: &str| FileRef {
        name: name.into(),
        path: format!("{name}.yaml"),
        content_hash: hash.into(),
    };
    RunRecord {
        schema_version: RESULTS_SCHEMA_VERSION,
        run_id: run_id.into(),
        envctl_version: "test".into(),
        playbook: file("pb", playbook_hash),
        env: file("env", "0"),
        target: "sandbox".into(),
        synthetic_metrics: true,
        title: None,
        description: None,
        axes: Vec::new(),
        baseline: BTreeMap::new(),
        order: Vec::new(),
        estimates: OrderEstimates::default(),
        started_at: 0.0,
        finished_at: None,
        status: Status::Interrupted,
        points: Vec::new(),
        ramp: None,
        restore: None,
        lock_lost: None,
        teardown: TeardownRecord {
            policy: "always".into(),
            performed: false,
            status: None,
            detail: None,
        },
    }
}

fn workspace() -> Test {
    Test::new()
        .file("env.yaml", BASE_ENV)
        .file("pb.yaml", PLAYBOOK)
}

fn resume(test: Test, id: &str) -> Output {
    test.args(["matrix", "run", "pb.yaml", "--sandbox", "--resume", id])
        .run()
}

#[test]
fn a_nonexistent_run_is_refused_and_no_results_directory_is_created() {
    let test = workspace();
    let dir = test.path().to_path_buf();
    let out = resume(test, "demo-20261130000000-1");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("no run `demo-20261130000000-1`"),
        "{}",
        out.stderr
    );
    assert!(
        !dir.join("results").exists(),
        "an empty results dir was created"
    );
}

#[test]
fn a_path_instead_of_a_run_id_is_refused() {
    for id in ["../escape", "/tmp/escape", "results/../escape", ".."] {
        let test = workspace();
        let dir = test.path().to_path_buf();
        let out = resume(test, id);
        assert_eq!(out.code, 1, "{id}: {}", out.stderr);
        assert!(
            out.stderr.contains("is not a run id"),
            "{id}: {}",
            out.stderr
        );
        assert!(!dir.join("escape").exists(), "{id}");
        assert!(!dir.join("results").exists(), "{id}");
    }
}

#[test]
fn another_playbooks_run_is_refused() {
    let test = workspace();
    let id = "demo-20261130000000-2";
    let other = envctl::results::content_hash(b"name: other\n");
    write_json(
        &test.path().join("results").join(id).join("run.json"),
        &run_record(id, &other),
    )
    .expect("run.json");
    let out = resume(test, id);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains(&other), "{}", out.stderr);
    assert!(out.stderr.contains("start a new run"), "{}", out.stderr);
}
