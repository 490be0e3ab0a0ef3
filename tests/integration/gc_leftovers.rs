//! gc after an apply that died half way (the services never created: CreateService always
//! failed): it removes everything the env owns, including what costs nothing but outlives
//! it (task-definition revisions, the MSK configuration, the DB parameter and subnet
//! groups), and leaves same-kind resources that are not envctl's untouched, even a revision
//! someone else registered in the env's own family.
use aws_sdk_ecs::types::TaskDefinitionStatus;
use envctl::converge::{ApplyOptions, apply, gc_desired, plan_gc};
use envctl_sandbox::FaultConfig;

use crate::apply::{World, compiled};

async fn create_foreign_leftovers(world: &World) {
    let clients = &world.session.clients;
    clients
        .rds
        .create_db_parameter_group()
        .db_parameter_group_name("foreign-params")
        .db_parameter_group_family("postgres16")
        .description("another team's")
        .send()
        .await
        .expect("foreign parameter group");
    clients
        .rds
        .create_db_subnet_group()
        .db_subnet_group_name("foreign-subnets")
        .db_subnet_group_description("another team's")
        .subnet_ids("subnet-1")
        .subnet_ids("subnet-2")
        .send()
        .await
        .expect("foreign subnet group");
    clients
        .kafka
        .create_configuration()
        .name("foreign-config")
        .description("another team's")
        .kafka_versions("3.6.0")
        .server_properties(aws_smithy_types::Blob::new(
            "auto.create.topics.enable=true\n",
        ))
        .send()
        .await
        .expect("foreign configuration");
    clients
        .ecs
        .register_task_definition()
        .family("pcp1-mod-users")
        .container_definitions(
            aws_sdk_ecs::types::ContainerDefinition::builder()
                .name("app")
                .image("nginx:1")
                .memory(512)
                .build(),
        )
        .send()
        .await
        .expect("foreign revision in the env's family");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_after_a_failed_apply_leaves_nothing_owned_and_every_foreign_leftover() {
    let world = World::new().await;
    let c = compiled("pcp1", &[]);
    world.sandbox().set_faults(
        serde_json::from_value::<FaultConfig>(serde_json::json!({
            "errors": [{"service": "ecs", "operation": "CreateService", "rate": 1.0, "kind": "server_error"}]
        }))
        .expect("faults"),
    );
    let report = world.converge(&c).await;
    assert!(!report.succeeded(), "the services were never created");
    world.sandbox().set_faults(FaultConfig::default());
    create_foreign_leftovers(&world).await;

    let session = &world.session;
    let read = || async {
        envctl::account::leftovers::read(&session.reads())
            .await
            .expect("leftovers")
    };
    let before = read().await;
    assert_eq!(before.task_definitions.len(), 10, "{before:#?}");
    assert_eq!(before.kafka_configurations.len(), 1);
    assert_eq!(before.db_parameter_groups.len(), 1);
    assert!(
        before.db_parameter_groups[0]
            .tags
            .contains_key("envctl:expires"),
        "`gc --expired` can judge the parameter group: {before:#?}"
    );
    assert_eq!(before.db_subnet_groups.len(), 1);
    // What the half-finished apply made beside them: the Managed Instances provider, the
    // writer's master secret, the awslogs groups (the services' and the load engines').
    assert_eq!(before.capacity_providers.len(), 1, "{before:#?}");
    assert_eq!(before.secrets.len(), 1, "{before:#?}");
    assert_eq!(before.log_groups.len(), 2, "{before:#?}");

    let pcp1 = |t: &envctl::model::live::Tags| {
        t.get("envctl:tool").map(String::as_str) == Some("envctl")
            && t.get("envctl:env").map(String::as_str) == Some("pcp1")
    };
    let planned = plan_gc(session, pcp1).await.expect("inventory");
    let report = apply(
        session,
        &gc_desired("us-east-1"),
        planned,
        &ApplyOptions::new("gc", world.state_dir()),
    )
    .await
    .expect("a valid plan");
    assert!(report.succeeded(), "{}", report.render());

    // Nothing owned is left, of any kind.
    let after = read().await;
    assert!(after.task_definitions.is_empty(), "{after:#?}");
    assert!(after.kafka_configurations.is_empty(), "{after:#?}");
    assert!(after.db_parameter_groups.is_empty(), "{after:#?}");
    assert!(after.db_subnet_groups.is_empty(), "{after:#?}");
    assert!(after.capacity_providers.is_empty(), "{after:#?}");
    assert!(after.secrets.is_empty(), "{after:#?}");
    assert!(after.log_groups.is_empty(), "{after:#?}");
    let clients = &session.clients;
    let dbs = envctl::aws::rds::describe_instances(&clients.rds)
        .await
        .expect("DBs");
    assert!(dbs.is_empty(), "{dbs:?}");
    let msk = envctl::aws::kafka::list_clusters(&clients.kafka)
        .await
        .expect("MSK");
    assert!(msk.is_empty());
    assert!(
        plan_gc(session, pcp1)
            .await
            .expect("inventory")
            .plan
            .changes()
            .next()
            .is_none(),
        "a second gc has nothing to do"
    );

    // Everything foreign is still there.
    assert!(
        envctl::aws::rds::parameter_group_tags(&clients.rds, "foreign-params")
            .await
            .expect("read")
            .is_some()
    );
    assert!(
        envctl::aws::rds::subnet_group_tags(&clients.rds, "foreign-subnets")
            .await
            .expect("read")
            .is_some()
    );
    let configurations = envctl::aws::kafka::list_configurations(&clients.kafka)
        .await
        .expect("configurations");
    assert_eq!(
        configurations
            .iter()
            .map(|c| c.0.as_str())
            .collect::<Vec<_>>(),
        vec!["foreign-config"]
    );
    let revisions = envctl::aws::ecs::list_task_definitions(
        &clients.ecs,
        "pcp1-mod-users",
        TaskDefinitionStatus::Active,
    )
    .await
    .expect("revisions");
    assert_eq!(
        revisions.len(),
        1,
        "the foreign revision stays: {revisions:?}"
    );
}
