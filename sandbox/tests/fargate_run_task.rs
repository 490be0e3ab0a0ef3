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
