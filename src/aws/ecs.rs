//! ECS: clusters, task definitions and services, translated between the model and the SDK.
use envctl_aws_model::operation::EcsOp;
use envctl_aws_model::{ErrorCode, arn};
use std::collections::BTreeMap;

use aws_sdk_ecs::Client;
use aws_sdk_ecs::types::{
    ClusterField, Compatibility, ContainerDefinition as SdkContainer, DeploymentCircuitBreaker,
    DeploymentConfiguration, InstanceRequirementsRequest, KeyValuePair, LaunchType,
    LogConfiguration as SdkLog, LogDriver, ManagedInstancesNetworkConfiguration, NetworkMode,
    PortMapping as SdkPort, PropagateTags, Secret, ServiceField, Tag, TaskDefinitionField,
    TransportProtocol,
};
use envctl_aws_model::placement::{HostPort, Protocol};

use super::error::AwsError;
use crate::model::live::{LiveCluster, LiveDeployment, LiveService, Placement, Tags};
use crate::model::requests::CreateService;
use crate::model::{
    ContainerDefinition, LogConfiguration, ManagedInstancesSettings, PortMapping, SecretRef,
    TaskDefinition,
};
use crate::spec::deferred::Deferred;

/// DescribeServices takes at most this many services per call.
pub const DESCRIBE_SERVICES_BATCH: usize = 10;

fn tags_of(tags: &[Tag]) -> Tags {
    tags.iter()
        .filter_map(|t| Some((t.key()?.to_string(), t.value()?.to_string())))
        .collect()
}

fn sdk_tags(tags: &Tags) -> Vec<Tag> {
    tags.iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect()
}

pub async fn describe_cluster(c: &Client, name: &str) -> Result<Option<LiveCluster>, AwsError> {
    let out = c
        .describe_clusters()
        .clusters(name)
        .include(ClusterField::Tags)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DescribeClusters, name, e))?;
    Ok(out
        .clusters()
        .iter()
        .find(|cl| cl.cluster_name() == Some(name))
        .map(|cl| LiveCluster {
            name: name.to_string(),
            arn: cl.cluster_arn().unwrap_or_default().to_string(),
            status: cl.status().unwrap_or_default().to_string(),
            tags: tags_of(cl.tags()),
            capacity_providers: cl.capacity_providers().to_vec(),
        }))
}

/// DescribeCapacityProviders for the named providers, with their tags; a name ECS does not
/// know is left out (it answers with a failure, not an error).
///
/// A Managed Instances provider is cluster-scoped and is described only with its `cluster`
/// (API reference, DescribeCapacityProviders `cluster`): `cluster` is given for it.
pub async fn describe_capacity_providers(
    c: &Client,
    names: &[String],
    cluster: Option<&str>,
) -> Result<Vec<crate::model::live::LiveCapacityProvider>, AwsError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let op = "DescribeCapacityProviders";
    let out = c
        .describe_capacity_providers()
        .set_capacity_providers(Some(names.to_vec()))
        .set_cluster(cluster.map(str::to_string))
        .include(aws_sdk_ecs::types::CapacityProviderField::Tags)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(op, &names.join(","), e))?;
    Ok(out.capacity_providers().iter().map(live_provider).collect())
}

/// Every capacity provider associated with `cluster` (DescribeCapacityProviders with
/// `cluster` and no names, paged), Managed Instances ones included, with their tags: what gc
/// reads to find a cluster's leaked provider (the account-wide form does not return a
/// cluster-scoped one).
pub async fn cluster_capacity_providers(
    c: &Client,
    cluster: &str,
) -> Result<Vec<crate::model::live::LiveCapacityProvider>, AwsError> {
    let op = "DescribeCapacityProviders";
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = c
            .describe_capacity_providers()
            .cluster(cluster)
            .include(aws_sdk_ecs::types::CapacityProviderField::Tags)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(op, cluster, e))?;
        out.extend(page.capacity_providers().iter().map(live_provider));
        match page.next_token() {
            Some(t) => token = Some(t.to_string()),
            None => return Ok(out),
        }
    }
}

/// Every capacity provider of the account and Region with its tags (DescribeCapacityProviders
/// without names or cluster, paged): what gc reads to find envctl's providers anywhere.
pub async fn all_capacity_providers(
    c: &Client,
) -> Result<Vec<crate::model::live::LiveCapacityProvider>, AwsError> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = c
            .describe_capacity_providers()
            .include(aws_sdk_ecs::types::CapacityProviderField::Tags)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(EcsOp::DescribeCapacityProviders, "*", e))?;
        out.extend(page.capacity_providers().iter().map(live_provider));
        match page.next_token() {
            Some(t) => token = Some(t.to_string()),
            None => return Ok(out),
        }
    }
}

fn live_provider(
    cp: &aws_sdk_ecs::types::CapacityProvider,
) -> crate::model::live::LiveCapacityProvider {
    crate::model::live::LiveCapacityProvider {
        name: cp.name().unwrap_or_default().to_string(),
        arn: cp.capacity_provider_arn().unwrap_or_default().to_string(),
        status: cp
            .status()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        kind: cp
            .r#type()
            .map(|t| t.as_str().to_string())
            .unwrap_or_default(),
        tags: tags_of(cp.tags()),
        cluster: cp.cluster().map(str::to_string),
        managed: cp.managed_instances_provider().map(managed_settings),
    }
}

/// A Managed Instances provider's settings as DescribeCapacityProviders returns them; a
/// member ECS leaves out reads as empty, which differs from any desired value and so shows
/// as a change rather than passing unnoticed.
fn managed_settings(m: &aws_sdk_ecs::types::ManagedInstancesProvider) -> ManagedInstancesSettings {
    let template = m.instance_launch_template();
    let network = template.and_then(|t| t.network_configuration());
    let requirements = template.and_then(|t| t.instance_requirements());
    ManagedInstancesSettings {
        infrastructure_role: m.infrastructure_role_arn().unwrap_or_default().to_string(),
        instance_profile: template
            .map(|t| t.ec2_instance_profile_arn().to_string())
            .unwrap_or_default(),
        subnets: network.map(|n| n.subnets().to_vec()).unwrap_or_default(),
        security_groups: network
            .map(|n| n.security_groups().to_vec())
            .unwrap_or_default(),
        instance_types: requirements
            .map(|r| r.allowed_instance_types().to_vec())
            .unwrap_or_default(),
        min_vcpus: requirements
            .and_then(|r| r.v_cpu_count())
            .map(|v| v.min())
            .unwrap_or_default(),
        min_memory_mib: requirements
            .and_then(|r| r.memory_mib())
            .map(|v| v.min())
            .unwrap_or_default(),
    }
}

pub async fn create_cluster(c: &Client, name: &str, tags: &Tags) -> Result<(), AwsError> {
    c.create_cluster()
        .cluster_name(name)
        .set_tags(Some(sdk_tags(tags)))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::CreateCluster, name, e))?;
    Ok(())
}

pub async fn delete_cluster(c: &Client, name: &str) -> Result<(), AwsError> {
    c.delete_cluster()
        .cluster(name)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DeleteCluster, name, e))?;
    Ok(())
}

/// Names of the services in a cluster (every page).
pub async fn list_services(c: &Client, cluster: &str) -> Result<Vec<String>, AwsError> {
    let mut names = Vec::new();
    let mut token = None;
    loop {
        let out = c
            .list_services()
            .cluster(cluster)
            .max_results(100)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(EcsOp::ListServices, cluster, e))?;
        names.extend(
            out.service_arns()
                .iter()
                .map(|arn| arn::resource_name(arn).to_string()),
        );
        token = out.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(names);
        }
    }
}

/// Describes up to ten services with their tags; missing ones are left out.
pub async fn describe_services(
    c: &Client,
    cluster: &str,
    names: &[String],
) -> Result<Vec<LiveService>, AwsError> {
    let out = c
        .describe_services()
        .cluster(cluster)
        .set_services(Some(names.to_vec()))
        .include(ServiceField::Tags)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DescribeServices, &names.join(","), e))?;
    Ok(out.services().iter().map(service_from).collect())
}

/// The latest service events (newest first), for explaining a failed deployment.
pub async fn service_events(
    c: &Client,
    cluster: &str,
    name: &str,
    limit: usize,
) -> Result<Vec<String>, AwsError> {
    let out = c
        .describe_services()
        .cluster(cluster)
        .services(name)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DescribeServices, name, e))?;
    Ok(out
        .services()
        .iter()
        .flat_map(|s| s.events().iter().take(limit))
        .filter_map(|e| e.message().map(str::to_string))
        .collect())
}

/// A revision's tags (DescribeTaskDefinition with `include: [TAGS]`): which env, if any,
/// registered it. `None` when the revision no longer exists.
pub async fn task_definition_tags(c: &Client, arn: &str) -> Result<Option<Tags>, AwsError> {
    let out = match c
        .describe_task_definition()
        .task_definition(arn)
        .include(TaskDefinitionField::Tags)
        .send()
        .await
    {
        Ok(out) => out,
        Err(e) => {
            let e = AwsError::from_sdk(EcsOp::DescribeTaskDefinition, arn, e);
            // A deleted revision answers ClientException "Unable to describe task definition".
            if e.is_code(ErrorCode::ClientException) {
                return Ok(None);
            }
            return Err(e);
        }
    };
    Ok(Some(tags_of(out.tags())))
}

/// A revision's content in the model's canonical form (for comparing with the spec).
pub async fn describe_task_definition(c: &Client, arn: &str) -> Result<TaskDefinition, AwsError> {
    Ok(describe_task_definition_tagged(c, arn).await?.0)
}

/// A revision's content and its tags, from one DescribeTaskDefinition (`include: [TAGS]`).
pub async fn describe_task_definition_tagged(
    c: &Client,
    arn: &str,
) -> Result<(TaskDefinition, Tags), AwsError> {
    let out = c
        .describe_task_definition()
        .task_definition(arn)
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DescribeTaskDefinition, arn, e))?;
    let td = out
        .task_definition()
        .ok_or_else(|| AwsError::missing(EcsOp::DescribeTaskDefinition, arn, "taskDefinition"))?;
    Ok((model_of(td), tags_of(out.tags())))
}

fn model_of(td: &aws_sdk_ecs::types::TaskDefinition) -> TaskDefinition {
    TaskDefinition {
        family: td.family().unwrap_or_default().to_string(),
        network_mode: td
            .network_mode()
            .map(|m| m.as_str().to_string())
            .unwrap_or_else(|| "bridge".into()),
        requires_compatibilities: td
            .requires_compatibilities()
            .iter()
            .map(|c| c.as_str().to_string())
            .collect(),
        task_role_arn: td.task_role_arn().map(str::to_string),
        execution_role_arn: td.execution_role_arn().map(str::to_string),
        container_definitions: td
            .container_definitions()
            .iter()
            .map(container_from_sdk)
            .collect(),
    }
}

fn container_from_sdk(c: &SdkContainer) -> ContainerDefinition {
    ContainerDefinition {
        name: c.name().unwrap_or_default().to_string(),
        image: c.image().unwrap_or_default().to_string(),
        cpu: c.cpu().max(0) as u32,
        memory: c.memory().unwrap_or(0).max(0) as u32,
        memory_reservation: c.memory_reservation().map(|m| m.max(0) as u32),
        essential: c.essential().unwrap_or(true),
        port_mappings: c
            .port_mappings()
            .iter()
            .map(|p| PortMapping {
                container_port: p.container_port().unwrap_or(0).clamp(0, 65535) as u16,
                host_port: p.host_port().unwrap_or(0).clamp(0, 65535) as u16,
                protocol: p
                    .protocol()
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_else(|| "tcp".into()),
            })
            .collect(),
        environment: c
            .environment()
            .iter()
            .filter_map(|kv| {
                Some((
                    kv.name()?.to_string(),
                    Deferred::literal(kv.value().unwrap_or_default()),
                ))
            })
            .collect(),
        secrets: {
            let mut s: Vec<SecretRef> = c
                .secrets()
                .iter()
                .map(|s| SecretRef {
                    name: s.name().to_string(),
                    value_from: Deferred::literal(s.value_from()),
                })
                .collect();
            s.sort_by(|a, b| a.name.cmp(&b.name));
            s
        },
        log_configuration: c.log_configuration().map(|l| LogConfiguration {
            log_driver: l.log_driver().as_str().to_string(),
            options: l
                .options()
                .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
        }),
    }
}

fn container_to_sdk(c: &ContainerDefinition) -> Result<SdkContainer, String> {
    let mut env = Vec::new();
    for (name, value) in &c.environment {
        // resolve() with no outputs fails on any reference left: a placeholder never leaves.
        let value = value
            .resolve(&BTreeMap::new())
            .map_err(|r| format!("{name} still refers to {r}"))?;
        env.push(KeyValuePair::builder().name(name).value(value).build());
    }
    let mut secrets = Vec::new();
    for s in &c.secrets {
        // As for the environment: an unresolved managed-secret reference never leaves.
        let value_from = s
            .value_from
            .resolve(&BTreeMap::new())
            .map_err(|r| format!("secret {} still refers to {r}", s.name))?;
        secrets.push(
            Secret::builder()
                .name(&s.name)
                .value_from(value_from)
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    let log = match &c.log_configuration {
        Some(l) => Some(
            SdkLog::builder()
                .log_driver(LogDriver::from(l.log_driver.as_str()))
                .set_options(Some(
                    l.options
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ))
                .build()
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    Ok(SdkContainer::builder()
        .name(&c.name)
        .image(&c.image)
        .cpu(c.cpu as i32)
        .memory(c.memory as i32)
        .set_memory_reservation(c.memory_reservation.map(|m| m as i32))
        .essential(c.essential)
        .set_port_mappings(Some(
            c.port_mappings
                .iter()
                .map(|p| {
                    SdkPort::builder()
                        .container_port(i32::from(p.container_port))
                        .host_port(i32::from(p.host_port))
                        .protocol(TransportProtocol::from(p.protocol.as_str()))
                        .build()
                })
                .collect(),
        ))
        .set_environment(Some(env))
        .set_secrets(Some(secrets))
        .set_log_configuration(log)
        .build())
}

/// Registers a resolved task definition; returns the new revision's ARN.
pub async fn register_task_definition(
    c: &Client,
    td: &TaskDefinition,
    tags: &Tags,
) -> Result<String, AwsError> {
    let containers = td
        .container_definitions
        .iter()
        .map(container_to_sdk)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|m| AwsError::local("RegisterTaskDefinition", &td.family, m))?;
    let out = c
        .register_task_definition()
        .family(&td.family)
        .network_mode(NetworkMode::from(td.network_mode.as_str()))
        .set_requires_compatibilities(Some(
            td.requires_compatibilities
                .iter()
                .map(|c| Compatibility::from(c.as_str()))
                .collect(),
        ))
        .set_task_role_arn(td.task_role_arn.clone())
        .set_execution_role_arn(td.execution_role_arn.clone())
        .set_container_definitions(Some(containers))
        .set_tags(Some(sdk_tags(tags)))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::RegisterTaskDefinition, &td.family, e))?;
    out.task_definition()
        .and_then(|t| t.task_definition_arn())
        .map(str::to_string)
        .ok_or_else(|| {
            AwsError::missing(
                EcsOp::RegisterTaskDefinition,
                &td.family,
                "taskDefinitionArn",
            )
        })
}

fn deployment_configuration(req: &CreateService) -> DeploymentConfiguration {
    let cb = &req.deployment_configuration.deployment_circuit_breaker;
    let breaker = DeploymentCircuitBreaker::builder()
        .enable(cb.enable)
        .rollback(cb.rollback)
        .build();
    DeploymentConfiguration::builder()
        .minimum_healthy_percent(req.deployment_configuration.minimum_healthy_percent as i32)
        .maximum_percent(req.deployment_configuration.maximum_percent as i32)
        .deployment_circuit_breaker(breaker)
        .build()
}

fn strategy(
    items: &[crate::model::requests::StrategyItem],
    name: &str,
) -> Result<Option<Vec<aws_sdk_ecs::types::CapacityProviderStrategyItem>>, AwsError> {
    if items.is_empty() {
        return Ok(None);
    }
    items
        .iter()
        .map(|i| {
            aws_sdk_ecs::types::CapacityProviderStrategyItem::builder()
                .capacity_provider(&i.capacity_provider)
                .weight(i.weight as i32)
                .build()
                .map_err(|e| AwsError::local("CreateService", name, e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn network_configuration(
    n: Option<&crate::model::requests::NetworkConfiguration>,
    name: &str,
) -> Result<Option<aws_sdk_ecs::types::NetworkConfiguration>, AwsError> {
    use aws_sdk_ecs::types::{AssignPublicIp, AwsVpcConfiguration, NetworkConfiguration};
    let Some(n) = n else {
        return Ok(None);
    };
    let a = &n.awsvpc_configuration;
    let vpc = AwsVpcConfiguration::builder()
        .set_subnets(Some(a.subnets.clone()))
        .set_security_groups(Some(a.security_groups.clone()))
        .assign_public_ip(AssignPublicIp::from(a.assign_public_ip.as_str()))
        .build()
        .map_err(|e| AwsError::local("CreateService", name, e.to_string()))?;
    Ok(Some(
        NetworkConfiguration::builder()
            .awsvpc_configuration(vpc)
            .build(),
    ))
}

/// Creates a service on a registered revision; returns it with its first deployment.
pub async fn create_service(
    c: &Client,
    req: &CreateService,
    task_definition_arn: &str,
    tags: &Tags,
) -> Result<LiveService, AwsError> {
    let out = c
        .create_service()
        .cluster(&req.cluster)
        .service_name(&req.service_name)
        .task_definition(task_definition_arn)
        .desired_count(req.desired_count as i32)
        .set_launch_type(req.launch_type.as_deref().map(LaunchType::from))
        .set_capacity_provider_strategy(strategy(
            &req.capacity_provider_strategy,
            &req.service_name,
        )?)
        .set_network_configuration(network_configuration(
            req.network_configuration.as_ref(),
            &req.service_name,
        )?)
        .deployment_configuration(deployment_configuration(req))
        .enable_ecs_managed_tags(req.enable_ecs_managed_tags)
        .propagate_tags(PropagateTags::from(req.propagate_tags.as_str()))
        .set_tags(Some(sdk_tags(tags)))
        // Idempotency: a retried CreateService after a lost response returns the service
        // the first attempt created. At most 36 characters (ECS API reference, "Ensuring
        // idempotency"), unique per cluster, service, revision and run.
        .client_token(crate::model::requests::client_token(
            &req.cluster,
            &req.service_name,
            task_definition_arn,
            tags.get(crate::model::tag::RUN_ID)
                .map(String::as_str)
                .unwrap_or_default(),
        ))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::CreateService, &req.service_name, e))?;
    let s = out
        .service()
        .ok_or_else(|| AwsError::missing(EcsOp::CreateService, &req.service_name, "service"))?;
    Ok(service_from(s))
}

fn service_from(s: &aws_sdk_ecs::types::Service) -> LiveService {
    LiveService {
        name: s.service_name().unwrap_or_default().to_string(),
        arn: s.service_arn().unwrap_or_default().to_string(),
        status: s.status().unwrap_or_default().to_string(),
        desired_count: s.desired_count().max(0) as u32,
        running_count: s.running_count().max(0) as u32,
        task_definition: s.task_definition().unwrap_or_default().to_string(),
        deployments: s
            .deployments()
            .iter()
            .map(|d| LiveDeployment {
                id: d.id().unwrap_or_default().to_string(),
                status: d.status().unwrap_or_default().to_string(),
                rollout_state: d
                    .rollout_state()
                    .map(|r| r.as_str().to_string())
                    .unwrap_or_default(),
                task_definition: d.task_definition().unwrap_or_default().to_string(),
                running_count: d.running_count().max(0) as u32,
                desired_count: d.desired_count().max(0) as u32,
                failed_tasks: d.failed_tasks().max(0) as u32,
            })
            .collect(),
        tags: tags_of(s.tags()),
        problems: Vec::new(),
        placement: Some(placement_of(s)),
        events: s
            .events()
            .iter()
            .filter_map(|e| e.message().map(str::to_string))
            .collect(),
    }
}

/// Where and how the service runs, as DescribeServices has it: what the planner compares
/// with the request apply would send.
fn placement_of(s: &aws_sdk_ecs::types::Service) -> Placement {
    let vpc = s
        .network_configuration()
        .and_then(|n| n.awsvpc_configuration());
    let deployment = s.deployment_configuration();
    Placement::new(
        s.launch_type().map(|l| l.as_str().to_string()),
        s.capacity_provider_strategy()
            .iter()
            .map(|i| {
                (
                    i.capacity_provider().to_string(),
                    u32::try_from(i.weight()).unwrap_or(0),
                )
            })
            .collect(),
        vpc.map(|v| crate::model::requests::AwsvpcConfiguration {
            subnets: v.subnets().to_vec(),
            security_groups: v.security_groups().to_vec(),
            assign_public_ip: v
                .assign_public_ip()
                .map(|a| a.as_str().to_string())
                // ECS's default when the request leaves it out.
                .unwrap_or_else(|| "DISABLED".to_string()),
        }),
        deployment
            .and_then(|d| d.minimum_healthy_percent())
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(100),
        deployment
            .and_then(|d| d.maximum_percent())
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(200),
    )
}

/// Starts a new deployment of the revision the service runs (`forceNewDeployment`): what
/// repairs a service whose deployment failed or whose tasks died, once the cause is gone.
pub async fn force_new_deployment(
    c: &Client,
    cluster: &str,
    name: &str,
) -> Result<LiveService, AwsError> {
    let out = c
        .update_service()
        .cluster(cluster)
        .service(name)
        .force_new_deployment(true)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::UpdateService, name, e))?;
    out.service()
        .map(service_from)
        .ok_or_else(|| AwsError::missing(EcsOp::UpdateService, name, "service"))
}

/// Points a service at a revision and/or a task count; returns it with its deployments.
pub async fn update_service(
    c: &Client,
    cluster: &str,
    name: &str,
    task_definition_arn: Option<&str>,
    desired_count: Option<u32>,
) -> Result<LiveService, AwsError> {
    let out = c
        .update_service()
        .cluster(cluster)
        .service(name)
        .set_task_definition(task_definition_arn.map(str::to_string))
        .set_desired_count(desired_count.map(|n| n as i32))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::UpdateService, name, e))?;
    let s = out
        .service()
        .ok_or_else(|| AwsError::missing(EcsOp::UpdateService, name, "service"))?;
    Ok(service_from(s))
}

/// UpdateService that starts a deployment (a new revision, or `force`) with the service's
/// placement settings as the desired state has them now: capacity provider strategy,
/// network configuration and deployment configuration go along, so a service created
/// before the env moved to a capacity provider (or to awsvpc) follows it.
pub async fn update_service_placed(
    c: &Client,
    req: &CreateService,
    task_definition_arn: Option<&str>,
    desired_count: Option<u32>,
    force: bool,
) -> Result<LiveService, AwsError> {
    let name = &req.service_name;
    let out = c
        .update_service()
        .cluster(&req.cluster)
        .service(name)
        .set_task_definition(task_definition_arn.map(str::to_string))
        .set_desired_count(desired_count.map(|n| n as i32))
        .set_capacity_provider_strategy(strategy(&req.capacity_provider_strategy, name)?)
        .set_network_configuration(network_configuration(
            req.network_configuration.as_ref(),
            name,
        )?)
        .deployment_configuration(deployment_configuration(req))
        .set_force_new_deployment(force.then_some(true))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::UpdateService, name, e))?;
    out.service()
        .map(service_from)
        .ok_or_else(|| AwsError::missing(EcsOp::UpdateService, name, "service"))
}

pub async fn delete_service(c: &Client, cluster: &str, name: &str) -> Result<(), AwsError> {
    // force: ECS refuses to delete a service scaled above zero otherwise; the tasks stop
    // as the service drains.
    c.delete_service()
        .cluster(cluster)
        .service(name)
        .force(true)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DeleteService, name, e))?;
    Ok(())
}

pub async fn tag_resource(c: &Client, arn: &str, tags: &Tags) -> Result<(), AwsError> {
    c.tag_resource()
        .resource_arn(arn)
        .set_tags(Some(sdk_tags(tags)))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::TagResource, arn, e))?;
    Ok(())
}

pub async fn untag_resource(c: &Client, arn: &str, keys: &[&str]) -> Result<(), AwsError> {
    c.untag_resource()
        .resource_arn(arn)
        .set_tag_keys(Some(keys.iter().map(|k| k.to_string()).collect()))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::UntagResource, arn, e))?;
    Ok(())
}

/// Task-definition ARNs of a family (ACTIVE or INACTIVE), every page.
pub async fn list_task_definitions(
    c: &Client,
    family: &str,
    status: aws_sdk_ecs::types::TaskDefinitionStatus,
) -> Result<Vec<String>, AwsError> {
    let mut arns = Vec::new();
    let mut token = None;
    loop {
        let out = c
            .list_task_definitions()
            .family_prefix(family)
            .status(status.clone())
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(EcsOp::ListTaskDefinitions, family, e))?;
        // familyPrefix matches by prefix: keep only this family's revisions.
        arns.extend(
            out.task_definition_arns()
                .iter()
                .filter(|a| in_family(a, family))
                .cloned(),
        );
        token = out.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(arns);
        }
    }
}

/// The newest ACTIVE revisions of a family, newest first: one ListTaskDefinitions page
/// (`sort: DESC`, `maxResults: limit`), enough to find what a run that lost its answer
/// registered moments ago.
pub async fn latest_task_definitions(
    c: &Client,
    family: &str,
    limit: i32,
) -> Result<Vec<String>, AwsError> {
    let out = c
        .list_task_definitions()
        .family_prefix(family)
        .status(aws_sdk_ecs::types::TaskDefinitionStatus::Active)
        .sort(aws_sdk_ecs::types::SortOrder::Desc)
        .max_results(limit)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::ListTaskDefinitions, family, e))?;
    // familyPrefix matches by prefix: keep only this family's revisions.
    Ok(out
        .task_definition_arns()
        .iter()
        .filter(|a| in_family(a, family))
        .cloned()
        .collect())
}

/// Every revision ARN of the account and Region with this status, all families, every
/// page (what gc reads to find revisions whose services are long gone).
pub async fn list_all_task_definitions(
    c: &Client,
    status: aws_sdk_ecs::types::TaskDefinitionStatus,
) -> Result<Vec<String>, AwsError> {
    let mut arns = Vec::new();
    let mut token = None;
    loop {
        let out = c
            .list_task_definitions()
            .status(status.clone())
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(EcsOp::ListTaskDefinitions, "*", e))?;
        arns.extend(out.task_definition_arns().iter().cloned());
        token = out.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(arns);
        }
    }
}

pub async fn deregister_task_definition(c: &Client, arn: &str) -> Result<(), AwsError> {
    c.deregister_task_definition()
        .task_definition(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DeregisterTaskDefinition, arn, e))?;
    Ok(())
}

/// Deletes up to ten INACTIVE revisions. The call succeeds even when some revisions were
/// not deleted: those come back in `failures` (ARN, reason), and are an error here.
pub async fn delete_task_definitions(c: &Client, arns: &[String]) -> Result<(), AwsError> {
    let out = c
        .delete_task_definitions()
        .set_task_definitions(Some(arns.to_vec()))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DeleteTaskDefinitions, &arns.join(","), e))?;
    let failures: Vec<String> = out
        .failures()
        .iter()
        .map(|f| {
            format!(
                "{}: {}{}",
                f.arn().unwrap_or("?"),
                f.reason().unwrap_or("no reason given"),
                f.detail().map(|d| format!(" ({d})")).unwrap_or_default()
            )
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(AwsError::local(
            "DeleteTaskDefinitions",
            &arns.join(","),
            format!("not deleted: {}", failures.join("; ")),
        ))
    }
}

/// Every cluster ARN of the account and Region (every page).
pub async fn list_clusters(c: &Client) -> Result<Vec<String>, AwsError> {
    let mut arns = Vec::new();
    let mut token = None;
    loop {
        let out = c
            .list_clusters()
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(EcsOp::ListClusters, "*", e))?;
        arns.extend(out.cluster_arns().iter().cloned());
        token = out.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(arns);
        }
    }
}

/// Why a service's recently stopped tasks stopped (at most `limit`, newest first as ECS
/// lists them): what explains a failed deployment.
pub async fn stopped_task_reasons(
    c: &Client,
    cluster: &str,
    service: &str,
    limit: usize,
) -> Result<Vec<String>, AwsError> {
    let listed = c
        .list_tasks()
        .cluster(cluster)
        .service_name(service)
        .desired_status(aws_sdk_ecs::types::DesiredStatus::Stopped)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::ListTasks, service, e))?;
    let arns: Vec<String> = listed.task_arns().iter().take(limit).cloned().collect();
    if arns.is_empty() {
        return Ok(Vec::new());
    }
    let described = c
        .describe_tasks()
        .cluster(cluster)
        .set_tasks(Some(arns))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DescribeTasks, service, e))?;
    let mut reasons: Vec<String> = described
        .tasks()
        .iter()
        .filter_map(|t| t.stopped_reason().map(str::to_string))
        .collect();
    reasons.dedup();
    Ok(reasons)
}

// ---- EC2 capacity (issue 13) -----------------------------------------------------------

/// What an ECS Managed Instances capacity provider is created with (`ecs.capacity.
/// managed_instances` plus the env's network).
#[derive(Debug, Clone)]
pub struct ManagedInstancesProvider<'a> {
    pub name: &'a str,
    pub cluster: &'a str,
    pub settings: &'a ManagedInstancesSettings,
    pub tags: &'a Tags,
}

/// The launch template's parts that CreateCapacityProvider and UpdateCapacityProvider take
/// alike (their template types differ, their members do not): the network and
/// `instanceRequirements` with `allowedInstanceTypes` and the required vCPU and memory
/// minimums.
fn launch_template_parts(
    op: &'static str,
    name: &str,
    s: &ManagedInstancesSettings,
) -> Result<
    (
        ManagedInstancesNetworkConfiguration,
        InstanceRequirementsRequest,
    ),
    AwsError,
> {
    use aws_sdk_ecs::types::{MemoryMiBRequest, VCpuCountRangeRequest};
    let local = |e: aws_sdk_ecs::error::BuildError| AwsError::local(op, name, e.to_string());
    let network = ManagedInstancesNetworkConfiguration::builder()
        .set_subnets(Some(s.subnets.clone()))
        .set_security_groups(Some(s.security_groups.clone()))
        .build();
    let requirements = InstanceRequirementsRequest::builder()
        .v_cpu_count(
            VCpuCountRangeRequest::builder()
                .min(s.min_vcpus)
                .build()
                .map_err(local)?,
        )
        .memory_mib(
            MemoryMiBRequest::builder()
                .min(s.min_memory_mib)
                .build()
                .map_err(local)?,
        )
        .set_allowed_instance_types(Some(s.instance_types.clone()))
        .build();
    Ok((network, requirements))
}

/// CreateCapacityProvider with `managedInstancesProvider`; returns the provider's ARN.
pub async fn create_managed_instances_provider(
    c: &Client,
    p: &ManagedInstancesProvider<'_>,
) -> Result<String, AwsError> {
    use aws_sdk_ecs::types::{CreateManagedInstancesProviderConfiguration, InstanceLaunchTemplate};
    let op = "CreateCapacityProvider";
    let local = |e: aws_sdk_ecs::error::BuildError| AwsError::local(op, p.name, e.to_string());
    let (network, requirements) = launch_template_parts(op, p.name, p.settings)?;
    let template = InstanceLaunchTemplate::builder()
        .ec2_instance_profile_arn(&p.settings.instance_profile)
        .network_configuration(network)
        .instance_requirements(requirements)
        .build()
        .map_err(local)?;
    let config = CreateManagedInstancesProviderConfiguration::builder()
        .infrastructure_role_arn(&p.settings.infrastructure_role)
        .instance_launch_template(template)
        .build()
        .map_err(local)?;
    let out = c
        .create_capacity_provider()
        .name(p.name)
        .cluster(p.cluster)
        .managed_instances_provider(config)
        .set_tags(Some(sdk_tags(p.tags)))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(op, p.name, e))?;
    out.capacity_provider()
        .and_then(|cp| cp.capacity_provider_arn())
        .map(str::to_string)
        .ok_or_else(|| AwsError::missing(op, p.name, "capacityProvider.capacityProviderArn"))
}

/// UpdateCapacityProvider with `managedInstancesProvider`: every setting envctl decides, so
/// nothing depends on how ECS merges a partial update (`infrastructureRoleArn` is required
/// anyway). ECS applies it to instances launched afterwards; running ones keep theirs (API
/// reference, UpdateCapacityProvider).
pub async fn update_managed_instances_provider(
    c: &Client,
    name: &str,
    cluster: &str,
    settings: &ManagedInstancesSettings,
) -> Result<(), AwsError> {
    use aws_sdk_ecs::types::{
        InstanceLaunchTemplateUpdate, UpdateManagedInstancesProviderConfiguration,
    };
    let op = "UpdateCapacityProvider";
    let (network, requirements) = launch_template_parts(op, name, settings)?;
    let template = InstanceLaunchTemplateUpdate::builder()
        .ec2_instance_profile_arn(&settings.instance_profile)
        .network_configuration(network)
        .instance_requirements(requirements)
        .build();
    let config = UpdateManagedInstancesProviderConfiguration::builder()
        .infrastructure_role_arn(&settings.infrastructure_role)
        .instance_launch_template(template)
        .build()
        .map_err(|e| AwsError::local(op, name, e.to_string()))?;
    c.update_capacity_provider()
        .name(name)
        .cluster(cluster)
        .managed_instances_provider(config)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(op, name, e))?;
    Ok(())
}

/// PutClusterCapacityProviders: the cluster's providers, the first being the default
/// strategy (weight 1) so services without a strategy use it too.
pub async fn put_cluster_capacity_providers(
    c: &Client,
    cluster: &str,
    providers: &[String],
) -> Result<(), AwsError> {
    use aws_sdk_ecs::types::CapacityProviderStrategyItem;
    let op = "PutClusterCapacityProviders";
    let strategy = match providers.first() {
        Some(p) => vec![
            CapacityProviderStrategyItem::builder()
                .capacity_provider(p)
                .weight(1)
                .build()
                .map_err(|e| AwsError::local(op, cluster, e.to_string()))?,
        ],
        None => Vec::new(),
    };
    c.put_cluster_capacity_providers()
        .cluster(cluster)
        .set_capacity_providers(Some(providers.to_vec()))
        .set_default_capacity_provider_strategy(Some(strategy))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(op, cluster, e))?;
    Ok(())
}

/// DeleteCapacityProvider (after every service using it is gone, and detached from the
/// cluster). A Managed Instances provider is cluster-scoped and is deleted from its cluster
/// (API reference, DeleteCapacityProvider `cluster`).
pub async fn delete_capacity_provider(
    c: &Client,
    name: &str,
    cluster: Option<&str>,
) -> Result<(), AwsError> {
    c.delete_capacity_provider()
        .capacity_provider(name)
        .set_cluster(cluster.map(str::to_string))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DeleteCapacityProvider, name, e))?;
    Ok(())
}

/// What [`list_container_instances`] reads: one registered container instance, as observed.
pub use crate::model::live::InstanceCapacity;

/// The ports of a STRINGSET port resource. Its entries are port numbers as strings; one that
/// is not is skipped rather than guessed at.
fn ports_of(list: &[aws_sdk_ecs::types::Resource], protocol: Protocol) -> Vec<HostPort> {
    list.iter()
        .filter(|r| r.name() == Some(protocol.resource_name()))
        .flat_map(|r| r.string_set_value())
        .filter_map(|p| p.trim().parse().ok())
        .map(|port| HostPort { protocol, port })
        .collect()
}

/// ListContainerInstances then DescribeContainerInstances (100 per call, the API's limit).
pub async fn cluster_capacity(
    c: &Client,
    cluster: &str,
) -> Result<Vec<InstanceCapacity>, AwsError> {
    let mut arns = Vec::new();
    let mut token = None;
    loop {
        let page = c
            .list_container_instances()
            .cluster(cluster)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(EcsOp::ListContainerInstances, cluster, e))?;
        arns.extend(page.container_instance_arns().iter().cloned());
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    let value = |list: &[aws_sdk_ecs::types::Resource], name: &str| {
        list.iter()
            .find(|r| r.name() == Some(name))
            .map(|r| r.integer_value())
            .unwrap_or(0)
    };
    let mut out = Vec::new();
    for chunk in arns.chunks(100) {
        let described = c
            .describe_container_instances()
            .cluster(cluster)
            .set_container_instances(Some(chunk.to_vec()))
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(EcsOp::DescribeContainerInstances, cluster, e))?;
        for ci in described.container_instances() {
            out.push(InstanceCapacity {
                arn: ci.container_instance_arn().unwrap_or_default().to_string(),
                status: ci.status().unwrap_or_default().to_string(),
                zone: ci
                    .attributes()
                    .iter()
                    .find(|a| a.name() == "ecs.availability-zone")
                    .and_then(|a| a.value())
                    .map(str::to_string),
                registered_cpu: value(ci.registered_resources(), "CPU"),
                registered_memory: value(ci.registered_resources(), "MEMORY"),
                remaining_cpu: value(ci.remaining_resources(), "CPU"),
                remaining_memory: value(ci.remaining_resources(), "MEMORY"),
                ports_in_use: [Protocol::Tcp, Protocol::Udp]
                    .into_iter()
                    .flat_map(|p| ports_of(ci.remaining_resources(), p))
                    .collect(),
            });
        }
    }
    Ok(out)
}

/// Whether a revision ARN (`...:task-definition/FAMILY:REV`) is of `family`: ListTaskDefinitions'
/// `familyPrefix` matches by prefix, so `pcp1-mod-users` also lists `pcp1-mod-users-bl`.
fn in_family(arn: &str, family: &str) -> bool {
    arn::task_definition_revision(arn).is_some_and(|(f, _)| f == family)
}
