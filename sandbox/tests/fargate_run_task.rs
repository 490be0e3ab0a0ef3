//! RunTask on Fargate as strict as AWS: a FARGATE-compatible task definition, a network
//! configuration for awsvpc, and Fargate's task launch bucket (100, then 20 per second).

mod common;

use aws_sdk_ecs::Client;
use aws_sdk_ecs::types::{
    AwsVpcConfiguration, Compatibility, ContainerDefinition, LaunchType, NetworkConfiguration,
    NetworkMode,
};

async fn register(ecs: &Client, family: &str, fargate: bool) -> String {
    let mut call = ecs
        .register_task_definition()
        .family(family)
        .network_mode(NetworkMode::Awsvpc)
        .cpu("1024")
        .memory("2048")
        .container_definitions(
            ContainerDefinition::builder()
                .name("engine")
                .image("engine:1")
                .build(),
        );
    if fargate {
        call = call.requires_compatibilities(Compatibility::Fargate);
    }
    call.send()
        .await
        .expect("register")
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .expect("arn")
        .to_string()
}

fn network() -> NetworkConfiguration {
    NetworkConfiguration::builder()
        .awsvpc_configuration(
            AwsVpcConfiguration::builder()
                .subnets("subnet-1")
                .build()
                .expect("vpc"),
        )
        .build()
}

fn message<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

#[tokio::test]
async fn run_task_on_fargate_checks_compatibility_network_and_the_launch_bucket() {
    let (_sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    let ec2_only = register(&ecs, "ec2-only", false).await;
    let err = ecs
        .run_task()
        .cluster("c")
        .task_definition(&ec2_only)
        .launch_type(LaunchType::Fargate)
        .network_configuration(network())
        .send()
        .await
        .expect_err("not FARGATE-compatible");
    assert!(
        message(&err).contains("Task definition does not support launch_type FARGATE."),
        "{err:?}"
    );
    let engine = register(&ecs, "engine", true).await;
    let err = ecs
        .run_task()
        .cluster("c")
        .task_definition(&engine)
        .launch_type(LaunchType::Fargate)
        .send()
        .await
        .expect_err("awsvpc without a network configuration");
    assert!(
        message(&err).contains(
            "Network Configuration must be provided when networkMode 'awsvpc' is specified."
        ),
        "{err:?}"
    );
    // The launch bucket holds 100: ten calls of ten at one instant, then the eleventh is
    // throttled (the clock is manual: no refill).
    for _ in 0..10 {
        let out = ecs
            .run_task()
            .cluster("c")
            .task_definition(&engine)
            .launch_type(LaunchType::Fargate)
            .network_configuration(network())
            .count(10)
            .send()
            .await
            .expect("within the bucket");
        assert_eq!(out.tasks().len(), 10);
    }
    let err = ecs
        .run_task()
        .cluster("c")
        .task_definition(&engine)
        .launch_type(LaunchType::Fargate)
        .network_configuration(network())
        .count(1)
        .send()
        .await
        .expect_err("past Fargate's launch bucket");
    assert!(message(&err).contains("ThrottlingException"), "{err:?}");
}

/// RunTask's client token as ECS honours it (ECS API Reference, "Ensuring idempotency"):
/// the same token with the same request returns the tasks of the first call and starts
/// none; the same token with another request is a ConflictException; a token longer than
/// 64 characters is refused.
#[tokio::test]
async fn run_task_honours_its_client_token() {
    let (_sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    let engine = register(&ecs, "engine", true).await;
    let run = |count: i32, token: &str| {
        ecs.run_task()
            .cluster("c")
            .task_definition(&engine)
            .launch_type(LaunchType::Fargate)
            .network_configuration(network())
            .count(count)
            .started_by("step-1")
            .client_token(token)
            .send()
    };
    let arns = |out: &aws_sdk_ecs::operation::run_task::RunTaskOutput| -> Vec<String> {
        out.tasks()
            .iter()
            .filter_map(|t| t.task_arn().map(str::to_string))
            .collect()
    };
    let first = arns(&run(3, "envctl-token-000").await.expect("first"));
    assert_eq!(first.len(), 3);
    let again = arns(&run(3, "envctl-token-000").await.expect("retried"));
    assert_eq!(again, first, "the same tasks back");
    let listed = ecs
        .list_tasks()
        .cluster("c")
        .send()
        .await
        .expect("list")
        .task_arns()
        .len();
    assert_eq!(listed, 3, "nothing more started");
    let err = run(4, "envctl-token-000")
        .await
        .expect_err("same token, another request")
        .into_service_error();
    assert!(err.is_conflict_exception(), "{err:?}");
    let err = run(1, &"x".repeat(65))
        .await
        .expect_err("too long")
        .into_service_error();
    assert!(err.is_invalid_parameter_exception(), "{err:?}");
    let other = arns(&run(3, "envctl-token-001").await.expect("another token"));
    assert!(other.iter().all(|a| !first.contains(a)));
}

/// A container's `stopTimeout` on Fargate is at most 120 s (ContainerDefinition
/// `stopTimeout`): the engine template's 120 starts, 121 is refused.
#[tokio::test]
async fn run_task_on_fargate_takes_a_stop_timeout_up_to_120_seconds() {
    let (_sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster()
        .cluster_name("c")
        .send()
        .await
        .expect("cluster");
    for (timeout, ok) in [(120, true), (121, false)] {
        let arn = ecs
            .register_task_definition()
            .family(format!("engine-{timeout}"))
            .network_mode(NetworkMode::Awsvpc)
            .requires_compatibilities(Compatibility::Fargate)
            .cpu("1024")
            .memory("2048")
            .container_definitions(
                ContainerDefinition::builder()
                    .name("engine")
                    .image("engine:1")
                    .stop_timeout(timeout)
                    .build(),
            )
            .send()
            .await
            .expect("register")
            .task_definition()
            .and_then(|t| t.task_definition_arn())
            .expect("arn")
            .to_string();
        let run = ecs
            .run_task()
            .cluster("c")
            .task_definition(&arn)
            .launch_type(LaunchType::Fargate)
            .network_configuration(network())
            .send()
            .await;
        assert_eq!(run.is_ok(), ok, "stopTimeout {timeout}: {run:?}");
    }
}
