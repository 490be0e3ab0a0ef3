//! plan and apply against the in-process sandbox on a simulated clock: deterministic
//! simulated seconds and exact call counts.
use std::path::PathBuf;

use envctl::compile::{Compiled, compile_env};
use envctl::converge::{ApplyOptions, apply, plan};
use envctl::plan::{ActionKind, DiffOptions};
use envctl::session::Session;
use envctl::spec::Loader;
use envctl_sandbox::SandboxConfig;

use crate::repo;

pub fn compiled(env: &str, sets: &[&str]) -> Compiled {
    let mut loader = Loader::new();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match compile_env(
        &mut loader,
        &repo().join("envs").join(format!("{env}.yaml")),
        &sets,
    ) {
        Some(c) => c,
        None => panic!("{}", loader.diagnostics.render(&loader.sources)),
    }
}

pub struct World {
    pub session: Session,
    pub state: tempfile::TempDir,
}

impl World {
    pub async fn new() -> World {
        World::with(SandboxConfig::default()).await
    }

    pub async fn with(config: SandboxConfig) -> World {
        World {
            session: Session::simulated(config).await.expect("sandbox starts"),
            state: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.state.path().to_path_buf()
    }

    pub fn sandbox(&self) -> &envctl_sandbox::Sandbox {
        self.session.sandbox.as_ref().expect("a sandbox session")
    }

    pub fn mutating_calls(&self) -> u64 {
        self.sandbox().stats().mutating_calls()
    }

    /// Plans and applies; returns the report.
    pub async fn converge(&self, c: &Compiled) -> envctl::apply::ApplyReport {
        let planned = plan(
            &self.session,
            &c.desired,
            &self.state_dir(),
            &DiffOptions::default(),
        )
        .await
        .expect("plan");
        apply(
            &self.session,
            &c.desired,
            planned,
            &ApplyOptions::new("test-run", self.state_dir()),
        )
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_apply_then_reapply_makes_no_mutating_calls() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    let report = world.converge(&c).await;
    assert!(report.succeeded(), "{}", report.render());
    let created = report
        .results
        .iter()
        .filter(|r| r.action == ActionKind::Create)
        .count();
    assert_eq!(created, report.results.len());
    // MSK creation (25 min) is the critical path; services start after it.
    assert!(
        report.elapsed_secs >= 25.0 * 60.0,
        "{}",
        report.elapsed_secs
    );

    let planned = plan(
        &world.session,
        &c.desired,
        &world.state_dir(),
        &DiffOptions::default(),
    )
    .await
    .expect("plan");
    let changes: Vec<_> = planned
        .plan
        .changes()
        .map(|a| (a.resource.clone(), a.changes.clone()))
        .collect();
    assert!(
        changes.is_empty(),
        "no phantom diffs after apply: {changes:#?}"
    );

    let before = world.mutating_calls();
    let report = world.converge(&c).await;
    assert!(report.succeeded());
    assert_eq!(
        world.mutating_calls() - before,
        0,
        "a converged env re-applied makes no mutating calls"
    );
}

/// Every resource in the sandbox that carries the environment's tag.
pub async fn owned_resources(world: &World, c: &Compiled) -> Vec<String> {
    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("observe");
    planned
        .plan
        .actions
        .iter()
        .filter(|a| !a.resource.starts_with("ecs/task-definitions/"))
        .map(|a| a.resource.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_leaves_nothing_owned() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    assert_eq!(owned_resources(&world, &c).await.len(), 16);
    let planned = envctl::converge::plan_destroy(&world.session, &c.desired, &world.state_dir())
        .await
        .expect("plan");
    let report = apply(
        &world.session,
        &c.desired,
        planned,
        &ApplyOptions::new("destroy", world.state_dir()),
    )
    .await;
    assert!(report.succeeded(), "{}", report.render());
    assert_eq!(owned_resources(&world, &c).await, Vec::<String>::new());
    // Task definitions are deregistered and deleted too.
    let stats = world.sandbox().stats();
    assert_eq!(stats.get("ecs", "DeregisterTaskDefinition").count, 10);
    assert_eq!(stats.get("ecs", "DeleteTaskDefinitions").count, 10);
}
