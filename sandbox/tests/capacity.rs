//! EC2 capacity: container instances declared through the control API, tasks placed on them
//! with the placement model, AWS's event when they do not fit (docs/aws-behaviour.md,
//! "EC2 capacity and placement").

mod common;

use aws_sdk_ecs::Client;
use aws_sdk_ecs::types::{
    Compatibility, ContainerDefinition, NetworkMode, PortMapping, TransportProtocol,
};
use common::secs;
use envctl_sandbox::Sandbox;

/// A task definition reserving `cpu` units and `memory` MiB (soft limit), with a fixed host
/// port in host mode when `port` is set.
async fn register(ecs: &Client, family: &str, cpu: i32, memory: i32, port: Option<i32>) -> String {
    let mut c = ContainerDefinition::builder()
        .name("app")
        .image("img")
        .cpu(cpu)
        .memory(memory * 2)
        .memory_reservation(memory);
    let mut mode = None;
    if let Some(p) = port {
        c = c.port_mappings(
            PortMapping::builder()
                .container_port(p)
                .host_port(p)
                .build(),
        );
        mode = Some(NetworkMode::Host);
    }
    register_container(ecs, family, mode, c.build()).await
}

/// A task definition of one container in `mode` (ECS's default, bridge, when `None`);
/// validated for EC2 and, in host and awsvpc mode, for Managed Instances too (ECS places
/// only such task definitions on a Managed Instances provider).
async fn register_container(
    ecs: &Client,
    family: &str,
    mode: Option<NetworkMode>,
    container: ContainerDefinition,
) -> String {
    let compatibilities = match mode {
        Some(NetworkMode::Host | NetworkMode::Awsvpc) => {
            vec![Compatibility::Ec2, Compatibility::ManagedInstances]
        }
        _ => vec![Compatibility::Ec2],
    };
    let out = ecs
        .register_task_definition()
        .family(family)
        .set_network_mode(mode)
        .set_requires_compatibilities(Some(compatibilities))
        .container_definitions(container)
        .send()
        .await
        .expect("register");
    out.task_definition()
        .and_then(|t| t.task_definition_arn())
        .expect("arn")
        .to_string()
}

/// (rollout state, running count, newest event) of a service.
async fn state(ecs: &Client, service: &str) -> (String, i32, String) {
    let out = ecs
        .describe_services()
        .cluster("c")
        .services(service)
        .send()
        .await
        .expect("describe");
    let s = &out.services()[0];
    let d = &s.deployments()[0];
    let rollout = d
        .rollout_state()
        .map(|r| r.as_str().to_string())
        .unwrap_or_default();
    let event = s
        .events()
        .first()
        .and_then(|e| e.message())
        .unwrap_or_default()
        .to_string();
    (rollout, s.running_count(), event)
}

/// The container instances registered in cluster "c".
async fn instance_arns(ecs: &Client) -> Vec<String> {
    ecs.list_container_instances()
        .cluster("c")
        .send()
        .await
        .expect("list container instances")
        .container_instance_arns()
        .to_vec()
}

async fn create(ecs: &Client, service: &str, td: &str, count: i32) {
    ecs.create_service()
        .cluster("c")
        .service_name(service)
        .task_definition(td)
        .desired_count(count)
        .send()
        .await
        .expect("create service");
}

#[tokio::test]
async fn a_cluster_without_instances_places_nothing_with_aws_wording() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster().cluster_name("c").send().await.unwrap();
    let td = register(&ecs, "a", 256, 512, None).await;
    create(&ecs, "a", &td, 2).await;
    sandbox.clock().advance(secs(600));
    let (rollout, running, event) = state(&ecs, "a").await;
    assert_eq!((rollout.as_str(), running), ("IN_PROGRESS", 0));
    assert_eq!(
        event,
        "service a was unable to place a task because no container instance met all of its requirements. Reason: No Container Instances were found in your cluster."
    );
}

/// Two 4096 MiB instances hold two 3000 MiB tasks; the third service task of another service
/// finds no room and the event names the closest instance and memory, while the first
/// service completes.
#[tokio::test]
async fn a_service_that_does_not_fit_stays_at_zero_with_the_reason_while_others_complete() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster().cluster_name("c").send().await.unwrap();
    common::declare(
        &sandbox,
        "c",
        &[("us-east-1a", 4096, 4096), ("us-east-1b", 4096, 4096)],
    )
    .await;
    let big = register(&ecs, "big", 512, 3000, None).await;
    create(&ecs, "big", &big, 2).await;
    let more = register(&ecs, "more", 512, 2000, None).await;
    create(&ecs, "more", &more, 1).await;
    sandbox.clock().advance(secs(600));
    let (rollout, running, _) = state(&ecs, "big").await;
    assert_eq!((rollout.as_str(), running), ("COMPLETED", 2));
    let (rollout, running, event) = state(&ecs, "more").await;
    assert_eq!((rollout.as_str(), running), ("IN_PROGRESS", 0));
    assert!(
        event.starts_with(
            "service more was unable to place a task because no container instance met all of its requirements. The closest matching container-instance "
        ) && event.ends_with(" has insufficient memory available."),
        "{event}"
    );
}

#[tokio::test]
async fn cpu_shortfall_is_reported_as_cpu() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster().cluster_name("c").send().await.unwrap();
    common::declare(&sandbox, "c", &[("us-east-1a", 1024, 16384)]).await;
    let td = register(&ecs, "a", 768, 512, None).await;
    create(&ecs, "a", &td, 2).await;
    let (_, _, event) = state(&ecs, "a").await;
    assert!(
        event.ends_with("has insufficient CPU units available."),
        "{event}"
    );
}

/// Host mode with a fixed port: one task per instance, and a rolling update at ECS's default
/// maximumPercent 200 has no free port for the new task while the old ones run.
#[tokio::test]
async fn fixed_host_ports_allow_one_task_per_instance() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster().cluster_name("c").send().await.unwrap();
    common::declare(
        &sandbox,
        "c",
        &[("us-east-1a", 8192, 16384), ("us-east-1b", 8192, 16384)],
    )
    .await;
    let v1 = register(&ecs, "omb", 1024, 1024, Some(8080)).await;
    create(&ecs, "omb", &v1, 2).await;
    sandbox.clock().advance(secs(41));
    assert_eq!(state(&ecs, "omb").await.1, 2);
    let v2 = register(&ecs, "omb", 1024, 1024, Some(8080)).await;
    ecs.update_service()
        .cluster("c")
        .service("omb")
        .task_definition(&v2)
        .send()
        .await
        .unwrap();
    sandbox.clock().advance(secs(600));
    let (rollout, _, event) = state(&ecs, "omb").await;
    assert_eq!(rollout, "IN_PROGRESS");
    assert!(
        event.ends_with("is already using a port required by your task."),
        "{event}"
    );
}

/// DescribeContainerInstances reports registered and remaining CPU and memory, and the ports
/// in use as AWS lists them: registered PORTS are the agent's reserved ones, remaining PORTS
/// those and every placed task's TCP host port, PORTS_UDP the UDP ones.
#[tokio::test]
async fn container_instances_show_registered_and_remaining_resources() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster().cluster_name("c").send().await.unwrap();
    common::declare(&sandbox, "c", &[("us-east-1a", 8192, 31744)]).await;
    let td = register(&ecs, "a", 1024, 3000, Some(9000)).await;
    create(&ecs, "a", &td, 1).await;
    // A bridge task with a fixed UDP host port (a StatsD agent, say) and 128 MiB.
    let udp = PortMapping::builder()
        .container_port(8125)
        .host_port(8125)
        .protocol(TransportProtocol::Udp)
        .build();
    let statsd = ContainerDefinition::builder()
        .name("statsd")
        .image("img")
        .memory(128)
        .port_mappings(udp)
        .build();
    let statsd = register_container(&ecs, "statsd", None, statsd).await;
    create(&ecs, "statsd", &statsd, 1).await;
    let arns = instance_arns(&ecs).await;
    assert_eq!(arns.len(), 1);
    let out = ecs
        .describe_container_instances()
        .cluster("c")
        .set_container_instances(Some(arns))
        .send()
        .await
        .unwrap();
    let ci = &out.container_instances()[0];
    let value = |list: &[aws_sdk_ecs::types::Resource], name: &str| {
        list.iter()
            .find(|r| r.name() == Some(name))
            .map(|r| r.integer_value())
            .unwrap_or(-1)
    };
    assert_eq!(value(ci.registered_resources(), "CPU"), 8192);
    assert_eq!(value(ci.registered_resources(), "MEMORY"), 31744);
    assert_eq!(value(ci.remaining_resources(), "CPU"), 7168);
    assert_eq!(value(ci.remaining_resources(), "MEMORY"), 28744 - 128);
    let ports = |list: &[aws_sdk_ecs::types::Resource], name: &str| {
        list.iter()
            .find(|r| r.name() == Some(name) && r.r#type() == Some("STRINGSET"))
            .map(|r| r.string_set_value().to_vec())
            .expect(name)
    };
    let agent = ["22", "2375", "2376", "51678", "51679"];
    assert_eq!(ports(ci.registered_resources(), "PORTS"), agent);
    assert!(ports(ci.registered_resources(), "PORTS_UDP").is_empty());
    assert_eq!(
        ports(ci.remaining_resources(), "PORTS"),
        ["22", "2375", "2376", "9000", "51678", "51679"]
    );
    assert_eq!(ports(ci.remaining_resources(), "PORTS_UDP"), ["8125"]);
}

/// A strategy placing everything on the capacity provider `name`.
fn strategy_on(name: &str) -> aws_sdk_ecs::types::CapacityProviderStrategyItem {
    aws_sdk_ecs::types::CapacityProviderStrategyItem::builder()
        .capacity_provider(name)
        .weight(1)
        .build()
        .expect("provider and weight set")
}

async fn create_managed_provider(
    ecs: &Client,
    name: &str,
    cluster: &str,
) -> Result<String, String> {
    use aws_sdk_ecs::types::{
        CreateManagedInstancesProviderConfiguration, InstanceLaunchTemplate,
        ManagedInstancesNetworkConfiguration,
    };
    let template = InstanceLaunchTemplate::builder()
        .ec2_instance_profile_arn("arn:aws:iam::123456789012:instance-profile/ecsInstance")
        .network_configuration(
            ManagedInstancesNetworkConfiguration::builder()
                .subnets("subnet-1")
                .security_groups("sg-1")
                .build(),
        )
        .build()
        .map_err(|e| e.to_string())?;
    let config = CreateManagedInstancesProviderConfiguration::builder()
        .infrastructure_role_arn("arn:aws:iam::123456789012:role/ecsInfrastructure")
        .instance_launch_template(template)
        .build()
        .map_err(|e| e.to_string())?;
    let out = ecs
        .create_capacity_provider()
        .name(name)
        .cluster(cluster)
        .managed_instances_provider(config)
        .send()
        .await
        .map_err(|e| format!("{}", aws_sdk_ecs::error::DisplayErrorContext(&e)))?;
    Ok(out
        .capacity_provider()
        .and_then(|c| c.capacity_provider_arn())
        .unwrap_or_default()
        .to_string())
}

/// The text of an SDK error, code and message.
fn text<E: std::error::Error>(e: &E) -> String {
    format!("{}", aws_sdk_ecs::error::DisplayErrorContext(e))
}

/// DescribeCapacityProviders of `name`, with `cluster` or without: its status, if described.
async fn provider_status(ecs: &Client, name: &str, cluster: Option<&str>) -> Option<String> {
    let out = ecs
        .describe_capacity_providers()
        .capacity_providers(name)
        .set_cluster(cluster.map(str::to_string))
        .send()
        .await
        .expect("describe");
    out.capacity_providers()
        .first()
        .and_then(|cp| cp.status())
        .map(|s| s.as_str().to_string())
}

/// A Managed Instances provider's life as a real account has it: PROVISIONING after
/// CreateCapacityProvider (refused in a strategy until ACTIVE, terraform-provider-aws#45693),
/// never attached with PutClusterCapacityProviders (terraform-provider-aws#44783), described
/// only with its cluster, refused for a task definition not validated for Managed
/// Instances, not deleted while a service's strategy names it, DEPROVISIONING after
/// DeleteCapacityProvider, and holding its cluster (ClusterContainsCapacityProviderException)
/// until INACTIVE.
#[tokio::test]
async fn managed_instances_capacity_provider_lifecycle() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster().cluster_name("c").send().await.unwrap();
    let arn = create_managed_provider(&ecs, "c-mi", "c").await.unwrap();
    assert_eq!(
        arn,
        "arn:aws:ecs:us-east-1:123456789012:capacity-provider/c-mi"
    );
    let refused = create_managed_provider(&ecs, "ecs-mine", "c")
        .await
        .unwrap_err();
    assert!(refused.contains("ClientException"), "{refused}");
    assert_eq!(
        provider_status(&ecs, "c-mi", Some("c")).await.as_deref(),
        Some("PROVISIONING")
    );
    // Cluster-scoped: not described without its cluster.
    assert_eq!(provider_status(&ecs, "c-mi", None).await, None);
    let strategy = strategy_on("c-mi");
    let attach = ecs
        .put_cluster_capacity_providers()
        .cluster("c")
        .capacity_providers("c-mi")
        .default_capacity_provider_strategy(strategy.clone())
        .send()
        .await
        .unwrap_err();
    assert!(
        text(&attach).contains("InvalidParameterException")
            && text(&attach).contains(
                "Cannot associate Managed Instances capacity provider to clusters using this API."
            ),
        "{attach:?}"
    );
    let td = register(&ecs, "a", 256, 512, Some(8080)).await;
    let create = |ecs: Client, td: String| async move {
        ecs.create_service()
            .cluster("c")
            .service_name("a")
            .task_definition(td)
            .desired_count(1)
            .capacity_provider_strategy(strategy_on("c-mi"))
            .send()
            .await
    };
    let early = create(ecs.clone(), td.clone()).await.unwrap_err();
    assert!(
        text(&early).contains(
            "The specified capacity provider 'c-mi' is not in an ACTIVE state. Specify a valid capacity provider and try again."
        ),
        "{early:?}"
    );
    sandbox.clock().advance(secs(30));
    assert_eq!(
        provider_status(&ecs, "c-mi", Some("c")).await.as_deref(),
        Some("ACTIVE")
    );
    // A task definition validated for EC2 only is not placed on Managed Instances.
    let ec2_only = ecs
        .register_task_definition()
        .family("ec2-only")
        .network_mode(NetworkMode::Host)
        .requires_compatibilities(Compatibility::Ec2)
        .container_definitions(
            ContainerDefinition::builder()
                .name("app")
                .image("img")
                .memory(512)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let ec2_arn = ec2_only
        .task_definition()
        .and_then(|t| t.task_definition_arn())
        .unwrap_or_default()
        .to_string();
    let wrong = create(ecs.clone(), ec2_arn).await.unwrap_err();
    assert!(
        text(&wrong).contains("Task definition does not support launch_type MANAGED_INSTANCES."),
        "{wrong:?}"
    );
    create(ecs.clone(), td)
        .await
        .expect("placed on the provider");
    let in_use = ecs
        .delete_capacity_provider()
        .capacity_provider("c-mi")
        .cluster("c")
        .send()
        .await
        .unwrap_err();
    assert!(text(&in_use).contains("in use"), "{in_use:?}");
    ecs.delete_service()
        .cluster("c")
        .service("a")
        .force(true)
        .send()
        .await
        .unwrap();
    // A DRAINING service still holds its strategy; INACTIVE after the drain.
    sandbox.clock().advance(secs(121));
    // A Managed Instances provider is deleted from its cluster.
    let no_cluster = ecs
        .delete_capacity_provider()
        .capacity_provider("c-mi")
        .send()
        .await
        .unwrap_err();
    assert!(
        text(&no_cluster).contains("specify that cluster"),
        "{no_cluster:?}"
    );
    let deleted = ecs
        .delete_capacity_provider()
        .capacity_provider("c-mi")
        .cluster("c")
        .send()
        .await
        .unwrap();
    assert_eq!(
        deleted
            .capacity_provider()
            .and_then(|c| c.status())
            .map(|s| s.as_str()),
        Some("DEPROVISIONING")
    );
    let held = ecs.delete_cluster().cluster("c").send().await.unwrap_err();
    assert!(
        text(&held).contains("ClusterContainsCapacityProviderException"),
        "{held:?}"
    );
    sandbox.clock().advance(secs(120));
    assert_eq!(
        provider_status(&ecs, "c-mi", Some("c")).await.as_deref(),
        Some("INACTIVE")
    );
    ecs.delete_cluster()
        .cluster("c")
        .send()
        .await
        .expect("deleted once the provider is INACTIVE");
}

/// awsvpc port mappings as ECS stores them: `hostPort` 0 (or absent) becomes the container
/// port; any other value must equal it (API reference, PortMapping; the wording of
/// pulumi/pulumi-awsx#935).
#[tokio::test]
async fn awsvpc_host_ports_are_the_container_ports() {
    let (_sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    let container = |host: i32| {
        ContainerDefinition::builder()
            .name("app")
            .image("img")
            .memory(512)
            .port_mappings(
                PortMapping::builder()
                    .container_port(8081)
                    .host_port(host)
                    .build(),
            )
            .build()
    };
    let arn = register_container(&ecs, "zero", Some(NetworkMode::Awsvpc), container(0)).await;
    let td = ecs
        .describe_task_definition()
        .task_definition(arn)
        .send()
        .await
        .unwrap();
    let ports: Vec<(Option<i32>, Option<i32>)> = td
        .task_definition()
        .map(|t| t.container_definitions()[0].port_mappings().to_vec())
        .unwrap_or_default()
        .iter()
        .map(|p| (p.container_port(), p.host_port()))
        .collect();
    assert_eq!(ports, vec![(Some(8081), Some(8081))]);
    let refused = ecs
        .register_task_definition()
        .family("other")
        .network_mode(NetworkMode::Awsvpc)
        .container_definitions(container(9090))
        .send()
        .await
        .unwrap_err();
    assert!(
        text(&refused).contains("ClientException")
            && text(&refused).contains(
                "When networkMode=awsvpc, the host ports and container ports in port mappings must match."
            ),
        "{refused:?}"
    );
}

/// Changing a service's capacity provider strategy without forceNewDeployment is refused
/// with ECS's message (pipe-cd/pipecd#6385, kayac/ecspresso#481); with it, the service
/// moves and a new deployment starts.
#[tokio::test]
async fn a_strategy_change_needs_a_new_deployment() {
    let (sandbox, ecs) = managed_cluster().await;
    provider_of_type(&ecs, "c-mi2", "c", "m6i.xlarge").await;
    sandbox.clock().advance(secs(30));
    let td = register(&ecs, "one", 1024, 4000, Some(8080)).await;
    create_on(&ecs, "one", &td, "c-mi").await;
    let update = |force: bool| {
        ecs.update_service()
            .cluster("c")
            .service("one")
            .capacity_provider_strategy(strategy_on("c-mi2"))
            .set_force_new_deployment(force.then_some(true))
            .send()
    };
    let refused = update(false).await.unwrap_err();
    assert!(
        text(&refused).contains(
            "When switching from launch type to capacity provider strategy on an existing service, or making a change to a capacity provider strategy on a service that is already using one, you must force a new deployment."
        ),
        "{refused:?}"
    );
    let moved = update(true).await.expect("with forceNewDeployment");
    let s = moved.service().expect("service");
    assert_eq!(
        s.capacity_provider_strategy()
            .iter()
            .map(|i| i.capacity_provider())
            .collect::<Vec<_>>(),
        vec!["c-mi2"]
    );
    assert_eq!(s.deployments().len(), 2);
    assert_eq!(s.launch_type(), None);
}

/// A cluster with container instances is not deleted (destroy must drain them first).
#[tokio::test]
async fn a_cluster_with_container_instances_is_not_deleted() {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster().cluster_name("c").send().await.unwrap();
    common::declare(&sandbox, "c", &[("us-east-1a", 1024, 2048)]).await;
    let err = ecs.delete_cluster().cluster("c").send().await.unwrap_err();
    assert!(
        format!("{}", aws_sdk_ecs::error::DisplayErrorContext(&err))
            .contains("ClusterContainsContainerInstancesException"),
        "{err:?}"
    );
}

/// A Managed Instances provider allowed one instance type (`instanceRequirements`), on two
/// subnets.
async fn provider_of_type(ecs: &Client, name: &str, cluster: &str, instance_type: &str) {
    use aws_sdk_ecs::types::{
        CreateManagedInstancesProviderConfiguration, InstanceLaunchTemplate,
        InstanceRequirementsRequest, ManagedInstancesNetworkConfiguration, MemoryMiBRequest,
        VCpuCountRangeRequest,
    };
    let requirements = InstanceRequirementsRequest::builder()
        .v_cpu_count(VCpuCountRangeRequest::builder().min(8).build().unwrap())
        .memory_mib(MemoryMiBRequest::builder().min(32768).build().unwrap())
        .allowed_instance_types(instance_type)
        .build();
    let template = InstanceLaunchTemplate::builder()
        .ec2_instance_profile_arn("arn:aws:iam::123456789012:instance-profile/ecsInstance")
        .network_configuration(
            ManagedInstancesNetworkConfiguration::builder()
                .subnets("subnet-1")
                .subnets("subnet-2")
                .security_groups("sg-1")
                .build(),
        )
        .instance_requirements(requirements)
        .build()
        .unwrap();
    let config = CreateManagedInstancesProviderConfiguration::builder()
        .infrastructure_role_arn("arn:aws:iam::123456789012:role/ecsInfrastructure")
        .instance_launch_template(template)
        .build()
        .unwrap();
    ecs.create_capacity_provider()
        .name(name)
        .cluster(cluster)
        .managed_instances_provider(config)
        .send()
        .await
        .unwrap();
}

/// Creates `service` of one task of `td` on the provider `provider`.
async fn create_on(ecs: &Client, service: &str, td: &str, provider: &str) {
    ecs.create_service()
        .cluster("c")
        .service_name(service)
        .task_definition(td)
        .desired_count(1)
        .capacity_provider_strategy(strategy_on(provider))
        .send()
        .await
        .expect("create service");
}

/// A sandbox on a manual clock with cluster "c" and its Managed Instances provider "c-mi"
/// of m6i.2xlarge, ACTIVE (past its PROVISIONING).
async fn managed_cluster() -> (Sandbox, Client) {
    let (sandbox, sdk) = common::manual().await;
    let ecs = Client::new(&sdk);
    ecs.create_cluster().cluster_name("c").send().await.unwrap();
    provider_of_type(&ecs, "c-mi", "c", "m6i.2xlarge").await;
    sandbox.clock().advance(secs(30));
    (sandbox, ecs)
}

/// Tasks on a Managed Instances strategy wait (no placement event) while the provider
/// launches the fewest instances that hold them; the instances register after the launch
/// delay with the type's resources, the deployment then completes, and the instances leave
/// once no task uses them and when the provider is deleted.
#[tokio::test]
async fn a_managed_instances_provider_launches_instances_for_waiting_tasks_and_scales_in() {
    let (sandbox, ecs) = managed_cluster().await;
    let strategy = strategy_on("c-mi");
    // Managed Instances take awsvpc and host tasks, not bridge.
    let bridge = register(&ecs, "bridged", 256, 512, None).await;
    let refused = ecs
        .create_service()
        .cluster("c")
        .service_name("bridged")
        .task_definition(&bridge)
        .desired_count(1)
        .capacity_provider_strategy(strategy.clone())
        .send()
        .await
        .unwrap_err();
    assert!(
        format!("{}", aws_sdk_ecs::error::DisplayErrorContext(&refused))
            .contains("not supported by Amazon ECS Managed Instances"),
        "{refused:?}"
    );
    // 20,000 MiB each (host mode): one task per m6i.2xlarge (32,256 MiB for tasks).
    let td = register(&ecs, "big", 1024, 20000, Some(8080)).await;
    ecs.create_service()
        .cluster("c")
        .service_name("big")
        .task_definition(&td)
        .desired_count(2)
        .capacity_provider_strategy(strategy.clone())
        .send()
        .await
        .unwrap();
    let instances = |ecs: Client| async move {
        let arns = instance_arns(&ecs).await;
        if arns.is_empty() {
            return Vec::new();
        }
        let out = ecs
            .describe_container_instances()
            .cluster("c")
            .set_container_instances(Some(arns))
            .send()
            .await
            .unwrap();
        out.container_instances().to_vec()
    };
    let describe = |ecs: Client| async move {
        ecs.describe_services()
            .cluster("c")
            .services("big")
            .send()
            .await
            .unwrap()
            .services()[0]
            .clone()
    };
    let s = describe(ecs.clone()).await;
    assert!(
        s.events()
            .iter()
            .all(|e| !e.message().unwrap_or_default().contains("unable to place")),
        "{:?}",
        s.events()
    );
    assert!(instances(ecs.clone()).await.is_empty());
    sandbox.clock().advance(secs(89));
    assert!(instances(ecs.clone()).await.is_empty());
    sandbox.clock().advance(secs(1));
    let registered = instances(ecs.clone()).await;
    assert_eq!(registered.len(), 2);
    for ci in &registered {
        let cpu = ci
            .registered_resources()
            .iter()
            .find(|r| r.name() == Some("CPU"))
            .map(|r| r.integer_value());
        let memory = ci
            .registered_resources()
            .iter()
            .find(|r| r.name() == Some("MEMORY"))
            .map(|r| r.integer_value());
        assert_eq!((cpu, memory), (Some(8192), Some(32256)));
    }
    // Spread over the provider's two subnets' zones.
    let zones: std::collections::BTreeSet<String> = registered
        .iter()
        .flat_map(|ci| ci.attributes().to_vec())
        .filter(|a| a.name() == "ecs.availability-zone")
        .filter_map(|a| a.value().map(str::to_string))
        .collect();
    assert_eq!(zones.len(), 2, "{zones:?}");
    sandbox.clock().advance(secs(40));
    let s = describe(ecs.clone()).await;
    assert_eq!(s.running_count(), 2);
    assert_eq!(
        s.deployments()[0].rollout_state().map(|r| r.as_str()),
        Some("COMPLETED")
    );
    // No task left: the instances scale in.
    ecs.update_service()
        .cluster("c")
        .service("big")
        .desired_count(0)
        .send()
        .await
        .unwrap();
    sandbox.clock().advance(secs(1));
    assert!(instances(ecs.clone()).await.is_empty());
}

/// UpdateCapacityProvider with `managedInstancesProvider`, as envctl sends it.
async fn update_managed_provider(
    ecs: &Client,
    name: &str,
    cluster: Option<&str>,
    instance_type: &str,
    (vcpus, memory): (i32, i32),
) -> Result<(), String> {
    use aws_sdk_ecs::types::{
        InstanceLaunchTemplateUpdate, InstanceRequirementsRequest,
        ManagedInstancesNetworkConfiguration, MemoryMiBRequest,
        UpdateManagedInstancesProviderConfiguration, VCpuCountRangeRequest,
    };
    let requirements = InstanceRequirementsRequest::builder()
        .v_cpu_count(VCpuCountRangeRequest::builder().min(vcpus).build().unwrap())
        .memory_mib(MemoryMiBRequest::builder().min(memory).build().unwrap())
        .allowed_instance_types(instance_type)
        .build();
    let template = InstanceLaunchTemplateUpdate::builder()
        .ec2_instance_profile_arn("arn:aws:iam::123456789012:instance-profile/other")
        .network_configuration(
            ManagedInstancesNetworkConfiguration::builder()
                .subnets("subnet-3")
                .security_groups("sg-2")
                .build(),
        )
        .instance_requirements(requirements)
        .build();
    let config = UpdateManagedInstancesProviderConfiguration::builder()
        .infrastructure_role_arn("arn:aws:iam::123456789012:role/other")
        .instance_launch_template(template)
        .build()
        .unwrap();
    ecs.update_capacity_provider()
        .name(name)
        .set_cluster(cluster.map(str::to_string))
        .managed_instances_provider(config)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| format!("{}", aws_sdk_ecs::error::DisplayErrorContext(&e)))
}

/// UpdateCapacityProvider replaces a Managed Instances provider's settings: Describe returns
/// the new ones, the instance already running keeps its type, and the next one launched is
/// of the new type. A provider that does not exist is a ClientException; the provider's
/// cluster must be named.
#[tokio::test]
async fn update_capacity_provider_applies_to_instances_launched_afterwards() {
    let (sandbox, ecs) = managed_cluster().await;
    let strategy = strategy_on("c-mi");
    // A fixed host port: one task per instance, whatever its size.
    let td = register(&ecs, "one", 1024, 8000, Some(8080)).await;
    ecs.create_service()
        .cluster("c")
        .service_name("one")
        .task_definition(&td)
        .desired_count(1)
        .capacity_provider_strategy(strategy)
        .send()
        .await
        .unwrap();
    sandbox.clock().advance(secs(90));
    let unknown = update_managed_provider(&ecs, "nope", Some("c"), "m6i.xlarge", (4, 16384))
        .await
        .unwrap_err();
    assert!(unknown.contains("ClientException"), "{unknown}");
    assert!(unknown.contains("does not exist"), "{unknown}");
    let no_cluster = update_managed_provider(&ecs, "c-mi", None, "m6i.xlarge", (4, 16384))
        .await
        .unwrap_err();
    assert!(no_cluster.contains("specify that cluster"), "{no_cluster}");
    update_managed_provider(&ecs, "c-mi", Some("c"), "m6i.xlarge", (4, 16384))
        .await
        .expect("update");
    let described = ecs
        .describe_capacity_providers()
        .capacity_providers("c-mi")
        .cluster("c")
        .send()
        .await
        .unwrap();
    let m = described.capacity_providers()[0]
        .managed_instances_provider()
        .expect("managed");
    assert_eq!(
        m.infrastructure_role_arn(),
        Some("arn:aws:iam::123456789012:role/other")
    );
    let template = m.instance_launch_template().expect("template");
    let requirements = template.instance_requirements().expect("requirements");
    assert_eq!(requirements.allowed_instance_types(), ["m6i.xlarge"]);
    assert_eq!(requirements.v_cpu_count().map(|v| v.min()), Some(4));
    assert_eq!(
        template.network_configuration().map(|n| n.subnets()),
        Some(&["subnet-3".to_string()][..])
    );
    ecs.update_service()
        .cluster("c")
        .service("one")
        .desired_count(2)
        .send()
        .await
        .unwrap();
    // The sandbox settles on the next request: the launch starts now, registers 90 s later.
    state(&ecs, "one").await;
    sandbox.clock().advance(secs(90));
    let arns = instance_arns(&ecs).await;
    let out = ecs
        .describe_container_instances()
        .cluster("c")
        .set_container_instances(Some(arns))
        .send()
        .await
        .unwrap();
    let mut cpus: Vec<i32> = out
        .container_instances()
        .iter()
        .filter_map(|ci| {
            ci.registered_resources()
                .iter()
                .find(|r| r.name() == Some("CPU"))
                .map(|r| r.integer_value())
        })
        .collect();
    cpus.sort();
    // The m6i.2xlarge launched before the update stays; the new one is an m6i.xlarge.
    assert_eq!(cpus, vec![4096, 8192]);
}

/// Creates an awsvpc service of `count` small tasks (128 CPU units, 256 MiB) on the
/// Managed Instances provider "c-mi".
async fn awsvpc_service(ecs: &Client, name: &str, count: i32) {
    use aws_sdk_ecs::types::{AwsVpcConfiguration, NetworkConfiguration};
    let small = ContainerDefinition::builder()
        .name("app")
        .image("img")
        .cpu(128)
        .memory(512)
        .memory_reservation(256)
        .build();
    let td = register_container(ecs, name, Some(NetworkMode::Awsvpc), small).await;
    ecs.create_service()
        .cluster("c")
        .service_name(name)
        .task_definition(&td)
        .desired_count(count)
        .capacity_provider_strategy(strategy_on("c-mi"))
        .network_configuration(
            NetworkConfiguration::builder()
                .awsvpc_configuration(
                    AwsVpcConfiguration::builder()
                        .subnets("subnet-1")
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
}

/// Managed Instances count each awsvpc task's network interface: seven small awsvpc tasks
/// fit one m6i.2xlarge by CPU and memory, but it takes three (four interfaces, the primary
/// one the instance's), so the provider launches three instances, and the deployment
/// completes on them (docs/aws-behaviour.md, "An awsvpc task takes a network interface").
#[tokio::test]
async fn managed_instances_launch_for_network_interfaces_not_only_memory() {
    let (sandbox, ecs) = managed_cluster().await;
    awsvpc_service(&ecs, "small", 7).await;
    // The sandbox settles on the next request: the launch starts now, registers 90 s later.
    let (_, _, event) = state(&ecs, "small").await;
    sandbox.clock().advance(secs(90));
    let arns = instance_arns(&ecs).await;
    assert_eq!(arns.len(), 3, "7 awsvpc tasks at 3 per instance; {event}");
    sandbox.clock().advance(secs(40));
    let (rollout, running, _) = state(&ecs, "small").await;
    assert_eq!((rollout.as_str(), running), ("COMPLETED", 7));
}

/// Services waiting together never count on the same room: two services of two awsvpc
/// tasks each need four interfaces, one m6i.2xlarge has three, so two instances launch (one
/// would have been enough for either alone), and both deployments complete.
#[tokio::test]
async fn services_waiting_together_get_room_of_their_own() {
    let (sandbox, ecs) = managed_cluster().await;
    awsvpc_service(&ecs, "a", 2).await;
    awsvpc_service(&ecs, "b", 2).await;
    state(&ecs, "a").await;
    sandbox.clock().advance(secs(90));
    assert_eq!(instance_arns(&ecs).await.len(), 2);
    sandbox.clock().advance(secs(40));
    for service in ["a", "b"] {
        let (rollout, running, event) = state(&ecs, service).await;
        assert_eq!(
            (rollout.as_str(), running),
            ("COMPLETED", 2),
            "{service}: {event}"
        );
    }
}
