//! Secrets in plan output: a value envctl did not write (here a revision registered in the
//! env's family outside envctl, carrying a password and a URL with userinfo) shows in the
//! plan's diff when it goes away. The text, `--json` and a saved plan show it masked, and a
//! saved plan still applies (its fingerprint is computed over the same masked values).
use envctl::converge::plan_saved;
use envctl::plan::{SavedPlan, desired_hash, render::render};
use envctl::spec::deferred::Deferred;

use crate::apply::{World, compiled};

const PASSWORD: &str = "hunter2-plaintext";
const URL_PASSWORD: &str = "userinfo-plaintext";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_removing_a_password_shows_it_masked_in_text_json_and_the_saved_file() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    assert!(world.converge(&c).await.succeeded());
    let ecs = &world.session.clients.ecs;
    let running = envctl::aws::ecs::describe_services(ecs, "pcp1-pvt", &["mod-users".into()])
        .await
        .expect("describe")
        .remove(0)
        .task_definition;
    let (mut td, tags) = envctl::aws::ecs::describe_task_definition_tagged(ecs, &running)
        .await
        .expect("the running revision");
    let env = &mut td.container_definitions[0].environment;
    env.insert("DB_PASSWD".into(), Deferred::literal(PASSWORD));
    env.insert(
        "DATABASE_URL".into(),
        Deferred::literal(format!("postgres://folio:{URL_PASSWORD}@db:5432/folio")),
    );
    let arn = envctl::aws::ecs::register_task_definition(ecs, &td, &tags)
        .await
        .expect("register");
    envctl::aws::ecs::update_service(ecs, "pcp1-pvt", "mod-users", Some(&arn), None)
        .await
        .expect("update");

    let planned = world.plan(&c.desired).await;
    let action = planned
        .plan
        .action("ecs/service/mod-users")
        .expect("mod-users changes");
    assert!(
        action
            .changes
            .iter()
            .any(|ch| ch.field.contains("DB_PASSWD")),
        "the diff removes the password: {:?}",
        action.changes
    );
    let text = render(&planned.plan);
    let json = serde_json::to_string_pretty(&planned.plan).expect("json");
    let saved = SavedPlan {
        envctl_saved_plan: envctl::plan::saved::SAVED_PLAN_VERSION,
        env_path: "envs/pcp1.yaml".into(),
        set: vec![],
        adopt: false,
        copy: None,
        desired_hash: desired_hash(&c.desired),
        plan: planned.plan.clone(),
    };
    let file = serde_json::to_string_pretty(&saved).expect("saved plan");
    for (what, out) in [("text", &text), ("json", &json), ("saved plan", &file)] {
        assert!(!out.contains(PASSWORD), "{what}: {out}");
        assert!(!out.contains(URL_PASSWORD), "{what}: {out}");
        assert!(
            out.contains(&envctl::redact::mask(PASSWORD)),
            "{what} shows the masked value: {out}"
        );
    }

    // Read back, the masked plan is the plan a fresh one would be.
    let read: SavedPlan = serde_json::from_str(&file).expect("read back");
    let again = plan_saved(&world.session, &c.desired, read, &world.state_dir()).await;
    assert!(
        again.is_ok(),
        "a saved plan with masked values still applies"
    );
}
