//! ECS through the real aws-sdk-ecs client.

mod common;

use aws_sdk_ecs::Client;
use aws_sdk_ecs::operation::delete_cluster::DeleteClusterError;
use aws_sdk_ecs::operation::delete_service::DeleteServiceError;
use aws_sdk_ecs::operation::describe_services::DescribeServicesError;
use aws_sdk_ecs::types::{
    ContainerDefinition, DeploymentCircuitBreaker, DeploymentConfiguration, KeyValuePair,
    ServiceField, Tag, TaskDefinitionField,
};
use common::secs;
use envctl_sandbox::FaultConfig;

fn container(image: &str) -> ContainerDefinition {
    ContainerDefinition::builder()
        .name("app")
        .image(image)
        .memory(4096)
        .memory_reservation(3690)
        .cpu(2048)
        .environment(
            KeyValuePair::builder()
                .name("JAVA_OPTIONS")
                .value("-Xmx3076m")
                .build(),
        )
        .build()
}

async fn register(ecs: &Client, family: &str, image: &str) -> String {
    let out = ecs
        .register_task_definition()
        .family(family)
        .container_definitions(container(image))
        .tags(Tag::builder().key("env").value("qcp1").build())
        .send()
        .await
        .expect("register");
    out.task_definition()
        .and_then(|t| t.task_definition_arn())
        .expect("arn")
        .to_string()
}

#[tokio::test]
async fn task_definitions_revisions_tags_and_pagination() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    let a1 = register(&ecs, "mod-a", "folioorg/mod-a:1").await;
    let a2 = register(&ecs, "mod-a", "folioorg/mod-a:2").await;
    assert_eq!(
        a1,
        "arn:aws:ecs:us-east-1:123456789012:task-definition/mod-a:1"
    );
    assert!(a2.ends_with("task-definition/mod-a:2"));
    for i in 0..5 {
        register(&ecs, &format!("mod-b{i}"), "img").await;
    }

    let d = ecs
        .describe_task_definition()
        .task_definition("mod-a")
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .expect("describe");
    let td = d.task_definition().expect("td");
    assert_eq!(td.revision(), 2);
    let c = &td.container_definitions()[0];
    assert_eq!(c.image(), Some("folioorg/mod-a:2"));
    assert_eq!(c.memory(), Some(4096));
    assert_eq!(c.memory_reservation(), Some(3690));
    assert_eq!(c.environment()[0].value(), Some("-Xmx3076m"));
    // ECS fills in defaults the client did not send.
    assert_eq!(c.essential(), Some(true));
    assert_eq!(d.tags()[0].key(), Some("env"));

    // familyPrefix is the full family name (AWS quirk): "mod-b" matches nothing.
    let none = ecs
        .list_task_definitions()
        .family_prefix("mod-b")
        .send()
        .await
        .expect("list");
    assert!(none.task_definition_arns().is_empty());

    let mut all = Vec::new();
    let mut pages = ecs
        .list_task_definitions()
        .max_results(2)
        .into_paginator()
        .send();
    let mut page_count = 0;
    while let Some(page) = pages.next().await {
        let page = page.expect("page");
        page_count += 1;
        all.extend(page.task_definition_arns().to_vec());
    }
    assert_eq!(all.len(), 7);
    assert_eq!(page_count, 4);

    // Only INACTIVE revisions can be deleted.
    let del = ecs
        .delete_task_definitions()
        .task_definitions(&a1)
        .send()
        .await
        .expect("delete call");
    assert_eq!(del.failures().len(), 1);
    ecs.deregister_task_definition()
        .task_definition(&a1)
        .send()
        .await
        .expect("deregister");
    let inactive = ecs
        .list_task_definitions()
        .status(aws_sdk_ecs::types::TaskDefinitionStatus::Inactive)
        .send()
        .await
        .expect("list inactive");
    assert_eq!(inactive.task_definition_arns(), std::slice::from_ref(&a1));
    let del = ecs
        .delete_task_definitions()
        .task_definitions(&a1)
        .send()
        .await
        .expect("delete");
    assert!(del.failures().is_empty());
    assert_eq!(
        del.task_definitions()[0].status().map(|s| s.as_str()),
        Some("DELETE_IN_PROGRESS")
    );
    let missing = ecs
        .describe_task_definition()
        .task_definition("nope:1")
        .send()
        .await
        .expect_err("missing");
    assert!(missing.into_service_error().is_client_exception());
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn service_deployments_complete_on_the_virtual_clock() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let ecs = Client::new(&sdk);
    let cluster = ecs
        .create_cluster()
        .cluster_name("qcp1")
        .send()
        .await
        .expect("cluster");
    common::roomy(&sandbox, "qcp1").await;
    assert_eq!(
        cluster.cluster().and_then(|c| c.cluster_arn()),
        Some("arn:aws:ecs:us-east-1:123456789012:cluster/qcp1")
    );
    let td1 = register(&ecs, "mod-inv", "inv:1").await;
    let td2 = register(&ecs, "mod-inv", "inv:2").await;
    let created = ecs
        .create_service()
        .cluster("qcp1")
        .service_name("mod-inv")
        .task_definition(&td1)
        .desired_count(4)
        .tags(Tag::builder().key("owner").value("ptf").build())
        .send()
        .await
        .expect("create service");
    let svc = created.service().expect("service");
    assert_eq!(
        svc.service_arn(),
        Some("arn:aws:ecs:us-east-1:123456789012:service/qcp1/mod-inv")
    );
    let first = svc.deployments()[0].id().expect("id").to_string();
    assert!(
        first.starts_with("ecs-svc/") && first.len() == 27,
        "{first}"
    );

    let describe = || async {
        ecs.describe_services()
            .cluster("qcp1")
            .services("mod-inv")
            .include(ServiceField::Tags)
            .send()
            .await
            .expect("describe")
            .services()[0]
            .clone()
    };
    clock.advance(secs(20));
    let s = describe().await;
    assert_eq!(s.running_count(), 2);
    assert_eq!(s.pending_count(), 2);
    assert_eq!(
        s.deployments()[0].rollout_state().map(|r| r.as_str()),
        Some("IN_PROGRESS")
    );
    assert_eq!(s.tags()[0].value(), Some("ptf"));
    clock.advance(secs(21));
    let s = describe().await;
    assert_eq!(s.running_count(), 4);
    assert_eq!(
        s.deployments()[0].rollout_state().map(|r| r.as_str()),
        Some("COMPLETED")
    );

    // Same task definition, no force: only a rescale, no new deployment.
    let same = ecs
        .update_service()
        .cluster("qcp1")
        .service("mod-inv")
        .task_definition(&td1)
        .desired_count(4)
        .send()
        .await
        .expect("update same");
    assert_eq!(same.service().expect("s").deployments().len(), 1);

    let upd = ecs
        .update_service()
        .cluster("qcp1")
        .service("mod-inv")
        .task_definition(&td2)
        .send()
        .await
        .expect("update");
    let deps = upd.service().expect("s").deployments();
    assert_eq!(deps.len(), 2);
    let ours = deps[0].id().expect("id").to_string();
    assert_ne!(ours, first);
    assert_eq!(deps[0].status(), Some("PRIMARY"));
    assert_eq!(deps[1].status(), Some("ACTIVE"));
    clock.advance(secs(20));
    let s = describe().await;
    assert_eq!(s.deployments().len(), 2);
    assert_eq!(s.running_count(), 4, "old drains as new ramps");
    clock.advance(secs(30));
    let s = describe().await;
    assert_eq!(s.deployments().len(), 1);
    assert_eq!(s.deployments()[0].id(), Some(ours.as_str()));
    assert_eq!(
        s.deployments()[0].rollout_state().map(|r| r.as_str()),
        Some("COMPLETED")
    );
    assert_eq!(s.task_definition(), Some(td2.as_str()));

    // forceNewDeployment with the same revision starts a deployment too.
    let forced = ecs
        .update_service()
        .cluster("qcp1")
        .service("mod-inv")
        .force_new_deployment(true)
        .send()
        .await
        .expect("force");
    assert_eq!(forced.service().expect("s").deployments().len(), 2);

    // More than 10 services per DescribeServices is refused.
    let mut too_many = ecs.describe_services().cluster("qcp1");
    for i in 0..11 {
        too_many = too_many.services(format!("s{i}"));
    }
    let err = too_many.send().await.expect_err("11 services");
    assert!(matches!(
        err.into_service_error(),
        DescribeServicesError::InvalidParameterException(_)
    ));
    let missing = ecs
        .describe_services()
        .cluster("qcp1")
        .services("mod-inv")
        .services("ghost")
        .send()
        .await
        .expect("describe");
    assert_eq!(missing.services().len(), 1);
    assert_eq!(missing.failures()[0].reason(), Some("MISSING"));

    // Deleting: refused while scaled above 0, and the cluster refuses while services live.
    let err = ecs
        .delete_service()
        .cluster("qcp1")
        .service("mod-inv")
        .send()
        .await
        .expect_err("scaled above 0");
    assert!(matches!(
        err.into_service_error(),
        DeleteServiceError::InvalidParameterException(_)
    ));
    let deleted = ecs
        .delete_service()
        .cluster("qcp1")
        .service("mod-inv")
        .force(true)
        .send()
        .await
        .expect("force delete");
    assert_eq!(deleted.service().and_then(|s| s.status()), Some("DRAINING"));
    let err = ecs
        .delete_cluster()
        .cluster("qcp1")
        .send()
        .await
        .expect_err("services still draining");
    assert!(matches!(
        err.into_service_error(),
        DeleteClusterError::ClusterContainsServicesException(_)
    ));
    clock.advance(secs(121));
    let s = describe().await;
    assert_eq!(s.status(), Some("INACTIVE"));
    let listed = ecs
        .list_services()
        .cluster("qcp1")
        .send()
        .await
        .expect("list");
    assert!(listed.service_arns().is_empty());
    // The services are gone; the instances the test registered are not.
    let err = ecs
        .delete_cluster()
        .cluster("qcp1")
        .send()
        .await
        .expect_err("instances still registered");
    assert!(matches!(
        err.into_service_error(),
        DeleteClusterError::ClusterContainsContainerInstancesException(_)
    ));
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn circuit_breaker_rolls_back_a_failing_deployment() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let ecs = Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    common::roomy(&sandbox, "c").await;
    let good = register(&ecs, "svc", "good").await;
    let bad = register(&ecs, "svc", "bad").await;
    ecs.create_service()
        .cluster("c")
        .service_name("svc")
        .task_definition(&good)
        .desired_count(2)
        .deployment_configuration(
            DeploymentConfiguration::builder()
                .deployment_circuit_breaker(
                    DeploymentCircuitBreaker::builder()
                        .enable(true)
                        .rollback(true)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("create");
    clock.advance(secs(41));
    sandbox.set_faults(FaultConfig {
        failing_deployments: vec!["svc".into()],
        ..FaultConfig::default()
    });
    let upd = ecs
        .update_service()
        .cluster("c")
        .service("svc")
        .task_definition(&bad)
        .send()
        .await
        .expect("update");
    let ours = upd.service().expect("s").deployments()[0]
        .id()
        .expect("id")
        .to_string();
    clock.advance(secs(41));
    let s = ecs
        .describe_services()
        .cluster("c")
        .services("svc")
        .send()
        .await
        .expect("describe")
        .services()[0]
        .clone();
    let failed = s
        .deployments()
        .iter()
        .find(|d| d.id() == Some(ours.as_str()))
        .expect("our deployment still listed while the rollback runs");
    assert_eq!(failed.rollout_state().map(|r| r.as_str()), Some("FAILED"));
    assert!(failed.failed_tasks() >= 3);
    let primary = &s.deployments()[0];
    assert_eq!(primary.status(), Some("PRIMARY"));
    assert_eq!(primary.task_definition(), Some(good.as_str()));
    assert!(
        s.events()
            .iter()
            .any(|e| e.message().is_some_and(|m| m.contains(&format!(
                "(deployment {ours}) deployment failed: tasks failed to start."
            )))),
        "{:?}",
        s.events()
    );
    // The failed tasks are describable with their stop reason.
    let stopped = ecs
        .list_tasks()
        .cluster("c")
        .service_name("svc")
        .desired_status(aws_sdk_ecs::types::DesiredStatus::Stopped)
        .send()
        .await
        .expect("list tasks");
    let tasks = ecs
        .describe_tasks()
        .cluster("c")
        .set_tasks(Some(stopped.task_arns().to_vec()))
        .send()
        .await
        .expect("describe tasks");
    assert!(!tasks.tasks().is_empty());
    assert_eq!(
        tasks.tasks()[0].stopped_reason(),
        Some("Essential container in task exited")
    );
    clock.advance(secs(41));
    let s = ecs
        .describe_services()
        .cluster("c")
        .services("svc")
        .send()
        .await
        .expect("describe")
        .services()[0]
        .clone();
    assert_eq!(s.deployments().len(), 1);
    assert_eq!(
        s.deployments()[0].rollout_state().map(|r| r.as_str()),
        Some("COMPLETED")
    );
    assert_eq!(s.task_definition(), Some(good.as_str()));
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn run_describe_stop_tasks_and_tags() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let ecs = Client::new(&sdk);
    let c = ecs
        .create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    let cluster_arn = c.cluster().and_then(|c| c.cluster_arn()).expect("arn");
    let td = register(&ecs, "job", "jmeter").await;
    let run = ecs
        .run_task()
        .cluster("c")
        .task_definition(&td)
        .count(2)
        .started_by("envctl")
        .send()
        .await
        .expect("run");
    assert_eq!(run.tasks().len(), 2);
    let arn = run.tasks()[0].task_arn().expect("arn").to_string();
    clock.advance(secs(41));
    let d = ecs
        .describe_tasks()
        .cluster("c")
        .tasks(&arn)
        .tasks("arn:aws:ecs:us-east-1:123456789012:task/c/ffff")
        .send()
        .await
        .expect("describe");
    assert_eq!(d.tasks()[0].last_status(), Some("RUNNING"));
    assert_eq!(d.failures()[0].reason(), Some("MISSING"));
    let err = ecs
        .delete_cluster()
        .cluster("c")
        .send()
        .await
        .expect_err("tasks running");
    assert!(matches!(
        err.into_service_error(),
        DeleteClusterError::ClusterContainsTasksException(_)
    ));
    let stopped = ecs
        .stop_task()
        .cluster("c")
        .task(&arn)
        .reason("done")
        .send()
        .await
        .expect("stop");
    assert_eq!(
        stopped.task().and_then(|t| t.desired_status()),
        Some("STOPPED")
    );
    clock.advance(secs(31));
    let d = ecs
        .describe_tasks()
        .cluster("c")
        .tasks(&arn)
        .send()
        .await
        .expect("describe");
    assert_eq!(d.tasks()[0].last_status(), Some("STOPPED"));
    assert_eq!(d.tasks()[0].stopped_reason(), Some("done"));

    ecs.tag_resource()
        .resource_arn(cluster_arn)
        .tags(Tag::builder().key("env").value("qcp1").build())
        .tags(Tag::builder().key("tool").value("envctl").build())
        .send()
        .await
        .expect("tag");
    ecs.untag_resource()
        .resource_arn(cluster_arn)
        .tag_keys("tool")
        .send()
        .await
        .expect("untag");
    let tags = ecs
        .list_tags_for_resource()
        .resource_arn(cluster_arn)
        .send()
        .await
        .expect("tags");
    assert_eq!(tags.tags().len(), 1);
    assert_eq!(tags.tags()[0].key(), Some("env"));
    let err = ecs
        .list_tags_for_resource()
        .resource_arn("arn:aws:ecs:us-east-1:123456789012:cluster/none")
        .send()
        .await
        .expect_err("missing");
    assert!(err.into_service_error().is_invalid_parameter_exception());
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn throttled_registrations_are_retried_by_the_sdk() {
    // On a manual clock the task-definition bucket (20 burst, 1 per second) refills only
    // when the test advances time, so the throttle is deterministic.
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    for i in 0..20 {
        register(&ecs, &format!("f{i}"), "img").await;
    }
    assert_eq!(
        sandbox
            .stats()
            .get("ecs", "RegisterTaskDefinition")
            .throttled,
        0
    );
    let client = ecs.clone();
    let pending = tokio::spawn(async move { register(&client, "f20", "img").await });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sandbox
        .stats()
        .get("ecs", "RegisterTaskDefinition")
        .throttled
        == 0
    {
        assert!(std::time::Instant::now() < deadline, "never throttled");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // One virtual second refills one token; the SDK's retry then succeeds.
    sandbox.clock().advance(secs(1));
    pending.await.expect("registered after a retry");
    let reg = sandbox.stats().get("ecs", "RegisterTaskDefinition");
    assert_eq!((reg.count, reg.throttled), (22, 1), "{reg:?}");
    assert!(
        sandbox
            .request_log()
            .iter()
            .any(|r| r.outcome == envctl_sandbox::Outcome::Throttled)
    );
    // Task-definition reads have their own bucket and are unaffected.
    ecs.list_task_definitions()
        .send()
        .await
        .expect("reads still pass");
    sandbox.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn list_services_paginates_and_stuck_deployments_hold() {
    let (sandbox, sdk) = common::manual().await;
    let clock = sandbox.clock();
    let ecs = Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    common::roomy(&sandbox, "c").await;
    let td = register(&ecs, "f", "img").await;
    for i in 0..25 {
        ecs.create_service()
            .cluster("c")
            .service_name(format!("s{i:02}"))
            .task_definition(&td)
            .desired_count(1)
            .send()
            .await
            .expect("create");
    }
    let mut pages = ecs.list_services().cluster("c").into_paginator().send();
    let (mut n, mut arns) = (0, Vec::new());
    while let Some(page) = pages.next().await {
        n += 1;
        arns.extend(page.expect("page").service_arns().to_vec());
    }
    assert_eq!((n, arns.len()), (3, 25), "default page size is 10");

    sandbox.set_faults(FaultConfig {
        stuck: vec![envctl_sandbox::StuckFault {
            service: "ecs".into(),
            resource: "s00".into(),
            state: "IN_PROGRESS".into(),
        }],
        ..FaultConfig::default()
    });
    clock.advance(secs(600));
    let rollout = |d: aws_sdk_ecs::operation::describe_services::DescribeServicesOutput| {
        d.services()
            .iter()
            .map(|s| {
                s.deployments()[0]
                    .rollout_state()
                    .map(|r| r.as_str().to_string())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
    };
    let d = ecs
        .describe_services()
        .cluster("c")
        .services("s00")
        .services("s01")
        .send()
        .await
        .expect("describe");
    assert_eq!(rollout(d), ["IN_PROGRESS", "COMPLETED"]);
    sandbox.set_faults(FaultConfig::default());
    let d = ecs
        .describe_services()
        .cluster("c")
        .services("s00")
        .send()
        .await
        .expect("describe");
    assert_eq!(rollout(d), ["COMPLETED"]);
    sandbox.shutdown().await.expect("shutdown");
}

/// docs/aws-behaviour.md, "A new account's first cluster, and a cluster just created": the
/// first CreateCluster of an account is refused until the service-linked role it makes can
/// be assumed, and a cluster just created is not found yet by CreateService (both off by
/// default; set here).
#[tokio::test]
async fn a_first_cluster_waits_for_its_role_and_a_new_cluster_for_visibility() {
    let (sandbox, sdk) = common::start(envctl_sandbox::SandboxConfig {
        manual_clock: true,
        profile: envctl_sandbox::DurationProfile {
            ecs_service_linked_role: secs(20),
            ecs_cluster_propagation: secs(5),
            ..envctl_sandbox::DurationProfile::default()
        },
        ..envctl_sandbox::SandboxConfig::default()
    })
    .await;
    let clock = sandbox.clock();
    let ecs = Client::new(&sdk);
    let err = ecs
        .create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect_err("the role is not there yet");
    let err = err.into_service_error();
    assert!(err.is_invalid_parameter_exception(), "{err:?}");
    assert!(
        err.to_string()
            .contains("Unable to assume the service linked role"),
        "{err}"
    );
    clock.advance(secs(20));
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("the role is assumable now");
    let td = register(&ecs, "web", "nginx").await;
    let create = || {
        ecs.create_service()
            .cluster("c")
            .service_name("web")
            .task_definition(&td)
            .desired_count(0)
            .send()
    };
    let err = create().await.expect_err("not visible yet");
    assert!(
        err.into_service_error().is_cluster_not_found_exception(),
        "ClusterNotFoundException"
    );
    clock.advance(secs(5));
    create().await.expect("visible now");
    drop(sandbox);
}
