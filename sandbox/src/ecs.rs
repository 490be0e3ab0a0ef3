//! Amazon ECS (awsJson1.1): clusters, task definitions, services with rolling deployments
//! and the deployment circuit breaker, standalone tasks, tags.
//!
//! Service tasks are not materialised one by one: a deployment's running/pending counts are
//! a function of virtual time (a linear ramp over `ecs_task_start`). Only tasks started by
//! RunTask and the stopped tasks of a failed deployment exist as task records.

use crate::json_input::{opt_i64, opt_str, req_str, str_list};
use crate::paging::{decode_token, encode_token};
use crate::protocol::ApiError;
use crate::state::{Ctx, World};
use crate::tags::merge_tags;
use envctl_aws_model::placement::{
    self, AGENT_RESERVED_PORTS, ContainerInstance, ContainerNeeds, HostPort, PortMode, Protocol,
    TaskNeeds,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Services per DescribeServices call (AWS limit).
const DESCRIBE_SERVICES_MAX: usize = 10;
/// Events kept per service (AWS shows the most recent 100).
const EVENTS_MAX: usize = 100;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EcsState {
    seq: u64,
    clusters: BTreeMap<String, Cluster>,
    /// Family -> revisions in order (revision n at index n-1).
    task_definitions: BTreeMap<String, Vec<TaskDefinition>>,
    /// Task ARN -> task.
    tasks: BTreeMap<String, Task>,
    /// Resource ARN -> tags (clusters, services, task definitions, tasks).
    tags: BTreeMap<String, Vec<(String, String)>>,
    /// CloudWatch Logs groups of the account, for the awslogs driver: created by tasks
    /// whose options say `awslogs-create-group: "true"`, or by tests (control API).
    log_groups: std::collections::BTreeSet<String>,
    /// Whether task execution roles hold logs:CreateLogGroup (a test grants it; by default
    /// they have AmazonECSTaskExecutionRolePolicy, which does not).
    #[serde(default)]
    execution_role_creates_log_groups: bool,
    /// Capacity providers by name.
    #[serde(default)]
    capacity_providers: BTreeMap<String, CapacityProvider>,
    /// Container instances declared (control API) for a cluster that does not exist yet,
    /// by cluster name: instances whose agent names that cluster (`ECS_CLUSTER`) fail to
    /// register ("Cluster not found") and are restarted until it exists; they register
    /// `ecs_instance_launch` after CreateCluster.
    awaiting_cluster: BTreeMap<String, Vec<RegisteredInstance>>,
    /// Earliest virtual time at which some transition is due; 0 forces a full pass.
    #[serde(skip)]
    next_due: f64,
    /// Fargate's task launch bucket: (tokens, at).
    #[serde(skip)]
    fargate_launches: Option<(f64, f64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cluster {
    name: String,
    arn: String,
    status: String,
    created_at: f64,
    services: BTreeMap<String, Service>,
    /// Registered container instances (declared by tests through the control API).
    #[serde(default)]
    container_instances: Vec<RegisteredInstance>,
    /// Names attached with PutClusterCapacityProviders.
    #[serde(default)]
    capacity_providers: Vec<String>,
    #[serde(default)]
    default_strategy: Vec<Value>,
    /// Instances a Managed Instances provider launched for provisioning tasks, registering
    /// at their `registered_at`.
    #[serde(default)]
    launching: Vec<RegisteredInstance>,
}

/// A capacity provider (CreateCapacityProvider): an Auto Scaling group provider or an ECS
/// Managed Instances provider, kept as given.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CapacityProvider {
    name: String,
    arn: String,
    status: String,
    /// MANAGED_INSTANCES or EC2_AUTOSCALING.
    kind: String,
    /// The cluster a Managed Instances provider belongs to.
    cluster: Option<String>,
    /// `managedInstancesProvider` or `autoScalingGroupProvider` as sent.
    config: Value,
    /// When a Managed Instances provider leaves PROVISIONING for ACTIVE (terraform-provider-
    /// aws#45693: it is not usable before).
    #[serde(default)]
    active_at: f64,
    /// When a DEPROVISIONING provider (DeleteCapacityProvider) is INACTIVE, its instances
    /// terminated.
    #[serde(default)]
    gone_at: Option<f64>,
}

/// A Managed Instances provider is cluster-scoped: it serves the cluster named in
/// CreateCapacityProvider without PutClusterCapacityProviders (which refuses it).
fn serves(cp: &CapacityProvider, cluster: &Cluster) -> bool {
    cp.cluster.as_deref() == Some(cluster.name.as_str())
        || cluster.capacity_providers.contains(&cp.name)
}

/// ECS's refusal of a provider that is not ACTIVE yet (or any more), as
/// PutClusterCapacityProviders, CreateService and UpdateService answer it
/// (terraform-provider-aws#45693).
fn not_active(name: &str) -> ApiError {
    ApiError::bad(
        "InvalidParameterException",
        format!(
            "The specified capacity provider '{name}' is not in an ACTIVE state. Specify a valid capacity provider and try again."
        ),
    )
}

/// A container instance registered in a cluster; what its tasks reserve is derived from the
/// services' deployments each time (placement::place), so it never drifts.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RegisteredInstance {
    arn: String,
    id: String,
    zone: String,
    cpu: u32,
    memory_mib: u32,
    registered_at: f64,
    /// The Managed Instances provider that launched it (none: declared by a test).
    #[serde(default)]
    provider: Option<String>,
    /// How many `awsvpc` tasks it holds (one network interface each); `None`: not limited
    /// (declared instances, whose account may use ENI trunking).
    #[serde(default)]
    task_interfaces: Option<u32>,
}

/// What a Managed Instances provider launches for waiting tasks.
struct Launch {
    provider: String,
    /// CPU units and memory of one instance of its first allowed type.
    cpu: u32,
    memory: u32,
    /// `awsvpc` tasks one such instance holds.
    task_interfaces: Option<u32>,
    /// Subnets to spread launches over.
    subnets: Vec<String>,
}

impl RegisteredInstance {
    /// The instance in the placement model, with nothing placed on it yet.
    fn as_placed(&self) -> ContainerInstance {
        ContainerInstance::new(
            self.id.clone(),
            self.zone.clone(),
            self.cpu,
            self.memory_mib,
        )
        .with_task_interfaces(self.task_interfaces)
    }
}

/// Body of the control endpoint POST /_sandbox/ecs/container-instances.
#[derive(Debug, Clone, Deserialize)]
pub struct DeclaredInstances {
    pub cluster: String,
    pub instances: Vec<DeclaredInstance>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DeclaredInstance {
    pub zone: String,
    /// CPU units (1024 per vCPU).
    pub cpu: u32,
    /// Memory for tasks, MiB.
    pub memory: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Service {
    name: String,
    arn: String,
    cluster_arn: String,
    status: String,
    desired_count: i64,
    task_definition: String,
    launch_type: String,
    scheduling_strategy: String,
    created_at: f64,
    /// `deploymentConfiguration` as given, with AWS's defaults filled in.
    deployment_configuration: Value,
    /// Pass-through fields returned as sent (networkConfiguration, loadBalancers, ...).
    extra: Map<String, Value>,
    deployments: Vec<Deployment>,
    /// Newest first.
    events: Vec<Event>,
    /// When DRAINING ends and the service becomes INACTIVE.
    inactive_at: Option<f64>,
    /// The last deployment that completed: the circuit breaker rolls back to it.
    last_completed: Option<(String, String)>,
    /// The CreateService client token, for idempotent retries.
    #[serde(default)]
    client_token: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Deployment {
    id: String,
    status: String,
    task_definition: String,
    desired_count: i64,
    created_at: f64,
    updated_at: f64,
    rollout_state: String,
    rollout_state_reason: String,
    /// When the ramp ends (COMPLETED, or FAILED for a failing deployment).
    due_at: f64,
    /// Tasks fail to start (fault `failing_deployments`, or a missing log group).
    fails: bool,
    /// Why its tasks stop, when AWS gives a specific reason (the missing log group).
    #[serde(default)]
    stop_reason: Option<String>,
    failed_tasks: i64,
    /// Running tasks when this deployment was replaced: it drains from here.
    running_when_replaced: Option<i64>,
    /// Set while a newer PRIMARY replaces it, to ramp this one down along with it.
    replaced_at: Option<f64>,
    /// ECS's event when its tasks found no container instance: it stays IN_PROGRESS with
    /// nothing running.
    #[serde(default)]
    unplaced: Option<String>,
    /// A count change without a new deployment (running tasks then, from, until): ECS
    /// keeps the deployment COMPLETED and starts or stops tasks over the task start time.
    #[serde(default)]
    rescaled: Option<(i64, f64, f64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Event {
    id: String,
    created_at: f64,
    message: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TaskDefinition {
    /// The registered document as ECS returns it (with taskDefinitionArn, revision, status).
    doc: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Task {
    arn: String,
    cluster_arn: String,
    task_definition: String,
    group: String,
    started_by: Option<String>,
    launch_type: String,
    created_at: f64,
    running_at: f64,
    desired_status: String,
    stopping_at: Option<f64>,
    stopped_at: Option<f64>,
    stopped_reason: Option<String>,
    stop_code: Option<String>,
    containers: Vec<String>,
    /// Never reaches RUNNING (a failed deployment's task).
    failed: bool,
    /// A load engine (the engine protocol in its environment), emulated.
    #[serde(default)]
    engine: Option<crate::engines::Engine>,
    /// The essential container's exit code once stopped, when it is not 0 / 1 by `failed`.
    #[serde(default)]
    exit_code: Option<i64>,
}

/// The resource a request names, for the request log.
pub fn resource_of(input: &Value) -> Option<String> {
    for key in [
        "service",
        "serviceName",
        "family",
        "taskDefinition",
        "task",
        "resourceArn",
    ] {
        if let Some(v) = input.get(key).and_then(Value::as_str) {
            return Some(v.to_string());
        }
    }
    if let Some(arr) = input.get("services").and_then(Value::as_array)
        && arr.len() == 1
    {
        return arr[0].as_str().map(str::to_string);
    }
    input
        .get("clusterName")
        .or_else(|| input.get("cluster"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Runs one ECS operation; the answer is the JSON body.
pub fn handle(
    world: &mut World,
    ctx: &Ctx<'_>,
    op: &str,
    input: &Value,
) -> Result<Vec<u8>, ApiError> {
    let ecs = &mut world.ecs;
    if op == "DescribeServices" {
        return ecs.describe_services(ctx, input);
    }
    let out = match op {
        "CreateCluster" => ecs.create_cluster(ctx, input),
        "DescribeClusters" => ecs.describe_clusters(ctx, input),
        "DeleteCluster" => ecs.delete_cluster(ctx, input),
        "ListClusters" => ecs.list_clusters(input),
        "RegisterTaskDefinition" => ecs.register_task_definition(ctx, input),
        "DescribeTaskDefinition" => ecs.describe_task_definition(input),
        "ListTaskDefinitions" => ecs.list_task_definitions(input),
        "DeregisterTaskDefinition" => ecs.deregister_task_definition(ctx, input),
        "DeleteTaskDefinitions" => ecs.delete_task_definitions(input),
        "CreateService" => ecs.create_service(ctx, input),
        "UpdateService" => ecs.update_service(ctx, input),
        "ListServices" => ecs.list_services(input),
        "DeleteService" => ecs.delete_service(ctx, input),
        "RunTask" => ecs.run_task(ctx, input),
        "DescribeTasks" => ecs.describe_tasks(ctx, input),
        "ListTasks" => ecs.list_tasks(ctx, input),
        "StopTask" => ecs.stop_task(ctx, input),
        "ListContainerInstances" => ecs.list_container_instances(input),
        "CreateCapacityProvider" => ecs.create_capacity_provider(ctx, input),
        "DescribeCapacityProviders" => ecs.describe_capacity_providers(input),
        "UpdateCapacityProvider" => ecs.update_capacity_provider(input),
        "DeleteCapacityProvider" => ecs.delete_capacity_provider(ctx, input),
        "PutClusterCapacityProviders" => ecs.put_cluster_capacity_providers(ctx, input),
        "DescribeContainerInstances" => ecs.describe_container_instances(input),
        "TagResource" => ecs.tag_resource(input),
        "UntagResource" => ecs.untag_resource(input),
        "ListTagsForResource" => ecs.list_tags_for_resource(input),
        _ => Err(ApiError::bad(
            "UnknownOperationException",
            format!("The sandbox does not implement ECS operation {op}"),
        )),
    };
    if envctl_aws_model::is_mutating("ecs", op) {
        ecs.next_due = 0.0;
    }
    out.and_then(|v| {
        serde_json::to_vec(&v).map_err(|e| ApiError::new(500, "ServerException", e.to_string()))
    })
}

/// The members of UpdateManagedInstancesProviderConfiguration and of its
/// InstanceLaunchTemplateUpdate (API reference). Others (`capacityOptionType`, ...) are set at
/// creation only; the sandbox refuses them rather than ignoring them, so a caller that
/// believes it changed one finds out.
const MI_UPDATE_MEMBERS: &[&str] = &[
    "infrastructureRoleArn",
    "instanceLaunchTemplate",
    "propagateTags",
    "infrastructureOptimization",
    "autoRepairConfiguration",
];
const TEMPLATE_UPDATE_MEMBERS: &[&str] = &[
    "ec2InstanceProfileArn",
    "networkConfiguration",
    "storageConfiguration",
    "instanceMetadataTagsPropagation",
    "localStorageConfiguration",
    "monitoring",
    "instanceRequirements",
    "capacityReservations",
];

/// An UpdateCapacityProvider `managedInstancesProvider`: `infrastructureRoleArn` is required,
/// only updatable members, and instance requirements valid as for CreateCapacityProvider.
fn check_managed_update(m: &Value) -> Result<(), ApiError> {
    if m.get("infrastructureRoleArn")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(ApiError::bad(
            "InvalidParameterException",
            "managedInstancesProvider.infrastructureRoleArn must be specified.",
        ));
    }
    let template = m.get("instanceLaunchTemplate");
    let members = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let refused = members(Some(m))
        .into_iter()
        .filter(|k| !MI_UPDATE_MEMBERS.contains(&k.as_str()))
        .chain(
            members(template)
                .into_iter()
                .filter(|k| !TEMPLATE_UPDATE_MEMBERS.contains(&k.as_str()))
                .map(|k| format!("instanceLaunchTemplate.{k}")),
        )
        .next();
    if let Some(member) = refused {
        return Err(ApiError::bad(
            "InvalidParameterException",
            format!(
                "managedInstancesProvider.{member} cannot be updated; it is set when the capacity provider is created."
            ),
        ));
    }
    if template
        .and_then(|t| t.get("ec2InstanceProfileArn"))
        .is_some_and(|p| p.as_str().is_none_or(str::is_empty))
    {
        return Err(ApiError::bad(
            "InvalidParameterException",
            "instanceLaunchTemplate.ec2InstanceProfileArn must be an instance profile ARN.",
        ));
    }
    check_instance_requirements(template)
}

/// `instanceRequirements`, when given, needs `vCpuCount.min` and `memoryMiB.min`
/// (InstanceRequirementsRequest: both required).
fn check_instance_requirements(template: Option<&Value>) -> Result<(), ApiError> {
    let Some(r) = template.and_then(|t| t.get("instanceRequirements")) else {
        return Ok(());
    };
    for range in ["vCpuCount", "memoryMiB"] {
        if r.get(range)
            .and_then(|v| v.get("min"))
            .and_then(Value::as_i64)
            .is_none()
        {
            return Err(ApiError::bad(
                "InvalidParameterException",
                format!("instanceRequirements.{range}.min must be specified."),
            ));
        }
    }
    Ok(())
}

/// Sets each member of `update` on `target`; members named in `nested` are merged one level
/// down instead of replaced (a launch template update keeps the members it does not name).
fn merge_members(target: &mut Value, update: &Value, nested: &[&str]) {
    let (Some(target), Some(update)) = (target.as_object_mut(), update.as_object()) else {
        return;
    };
    for (k, v) in update {
        match target.get_mut(k) {
            Some(old) if nested.contains(&k.as_str()) && old.is_object() => {
                merge_members(old, v, &[]);
            }
            _ => {
                target.insert(k.clone(), v.clone());
            }
        }
    }
}

fn include_tags(input: &Value) -> bool {
    str_list(input, "include").iter().any(|s| s == "TAGS")
}

fn parse_tags(input: &Value) -> Result<Vec<(String, String)>, ApiError> {
    let Some(arr) = input.get("tags").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    arr.iter()
        .map(|t| {
            let key = opt_str(t, "key").ok_or_else(|| {
                ApiError::bad("InvalidParameterException", "Tag key must be specified.")
            })?;
            Ok((
                key.to_string(),
                opt_str(t, "value").unwrap_or("").to_string(),
            ))
        })
        .collect()
}

fn tags_json(tags: &[(String, String)]) -> Value {
    Value::Array(
        tags.iter()
            .map(|(k, v)| json!({"key": k, "value": v}))
            .collect(),
    )
}

/// The last path segment of an ARN, or the string itself for a plain name.
fn short_name(s: &str) -> &str {
    if s.starts_with("arn:") {
        s.rsplit('/').next().unwrap_or(s)
    } else {
        s
    }
}

/// Pagination tokens are opaque to clients; the sandbox encodes an offset.
fn page<T: Clone>(
    items: &[T],
    input: &Value,
    default_max: i64,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let max = opt_i64(input, "maxResults").unwrap_or(default_max);
    if !(1..=100).contains(&max) {
        return Err(ApiError::bad(
            "InvalidParameterException",
            "maxResults must be between 1 and 100.",
        ));
    }
    let start = match opt_str(input, "nextToken") {
        None => 0,
        Some(t) => decode_token(t)
            .ok_or_else(|| ApiError::bad("InvalidParameterException", "Invalid nextToken."))?,
    };
    let end = start.saturating_add(max as usize).min(items.len());
    let slice = items.get(start..end).map(<[T]>::to_vec).unwrap_or_default();
    let next = (end < items.len()).then(|| encode_token(end));
    Ok((slice, next))
}

fn ts(v: f64) -> Value {
    json!(round_ms(v))
}

/// awsJson1.1 timestamps are epoch seconds; keep millisecond precision.
fn round_ms(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[derive(Serialize)]
struct DescribeServicesOutput<'a> {
    services: Vec<ServiceView<'a>>,
    failures: Vec<Value>,
}

/// A launch type ECS leaves out (a service on a capacity provider strategy has none).
fn no_text(s: &&str) -> bool {
    s.is_empty()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServiceView<'a> {
    service_arn: &'a str,
    service_name: &'a str,
    cluster_arn: &'a str,
    status: &'a str,
    desired_count: i64,
    running_count: i64,
    pending_count: i64,
    #[serde(skip_serializing_if = "no_text")]
    launch_type: &'a str,
    task_definition: &'a str,
    deployment_configuration: &'a Value,
    deployments: Vec<DeploymentView<'a>>,
    events: Vec<EventView<'a>>,
    created_at: f64,
    scheduling_strategy: &'a str,
    deployment_controller: DeploymentController,
    created_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tags: Option<Vec<TagView<'a>>>,
    /// Pass-through fields (networkConfiguration, loadBalancers, ...).
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentView<'a> {
    id: &'a str,
    status: &'a str,
    task_definition: &'a str,
    desired_count: i64,
    pending_count: i64,
    running_count: i64,
    failed_tasks: i64,
    created_at: f64,
    updated_at: f64,
    #[serde(skip_serializing_if = "no_text")]
    launch_type: &'a str,
    rollout_state: &'a str,
    rollout_state_reason: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventView<'a> {
    id: &'a str,
    created_at: f64,
    message: &'a str,
}

#[derive(Serialize)]
struct TagView<'a> {
    key: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct DeploymentController {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl EcsState {
    fn next(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn cluster_arn(ctx: &Ctx<'_>, name: &str) -> String {
        ctx.arn("ecs", &format!("cluster/{name}"))
    }

    fn cluster_name(input: &Value) -> String {
        short_name(opt_str(input, "cluster").unwrap_or("default")).to_string()
    }

    fn active_cluster(&mut self, name: &str) -> Result<&mut Cluster, ApiError> {
        match self.clusters.get_mut(name) {
            Some(c) if c.status == "ACTIVE" => Ok(c),
            _ => Err(ApiError::bad(
                "ClusterNotFoundException",
                "Cluster not found.",
            )),
        }
    }

    fn event(service: &mut Service, id: u64, at: f64, message: String) {
        service.events.insert(
            0,
            Event {
                id: crate::util::uuid_like("ecs-event", id),
                created_at: at,
                message,
            },
        );
        service.events.truncate(EVENTS_MAX);
    }

    // ---- capacity providers -----------------------------------------------------------

    fn capacity_provider_json(cp: &CapacityProvider) -> Value {
        let mut v = json!({
            "capacityProviderArn": cp.arn,
            "name": cp.name,
            "status": cp.status,
            "type": cp.kind,
        });
        if let Some(c) = &cp.cluster {
            v["cluster"] = json!(c);
        }
        let key = if cp.kind == "MANAGED_INSTANCES" {
            "managedInstancesProvider"
        } else {
            "autoScalingGroupProvider"
        };
        v[key] = cp.config.clone();
        v
    }

    fn create_capacity_provider(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let name = req_str(input, "name")?.to_string();
        let lower = name.to_ascii_lowercase();
        if ["aws", "ecs", "fargate"]
            .iter()
            .any(|p| lower.starts_with(p))
        {
            // API reference, CreateCapacityProvider `name`: it can't be prefixed with
            // "aws", "ecs", or "fargate".
            return Err(ApiError::bad(
                "ClientException",
                "The capacity provider name cannot be prefixed with 'aws', 'ecs', or 'fargate'.",
            ));
        }
        if self
            .capacity_providers
            .get(&name)
            .is_some_and(|cp| cp.status != "INACTIVE")
        {
            return Err(ApiError::bad(
                "ClientException",
                format!("The specified capacity provider {name} already exists."),
            ));
        }
        let (kind, config, cluster) = match (
            input.get("managedInstancesProvider"),
            input.get("autoScalingGroupProvider"),
        ) {
            (Some(m), None) => {
                let template = m.get("instanceLaunchTemplate");
                let missing = m
                    .get("infrastructureRoleArn")
                    .and_then(Value::as_str)
                    .is_none()
                    || template
                        .and_then(|t| t.get("ec2InstanceProfileArn"))
                        .and_then(Value::as_str)
                        .is_none();
                if missing {
                    return Err(ApiError::bad(
                        "InvalidParameterException",
                        "managedInstancesProvider needs infrastructureRoleArn and instanceLaunchTemplate.ec2InstanceProfileArn.",
                    ));
                }
                check_instance_requirements(template)?;
                let cluster = opt_str(input, "cluster").map(|c| short_name(c).to_string());
                let Some(cluster) = cluster else {
                    return Err(ApiError::bad(
                        "InvalidParameterException",
                        "A Managed Instances capacity provider needs a cluster.",
                    ));
                };
                self.active_cluster(&cluster)?;
                ("MANAGED_INSTANCES", m.clone(), Some(cluster))
            }
            (None, Some(a)) => ("EC2_AUTOSCALING", a.clone(), None),
            _ => {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Exactly one of autoScalingGroupProvider and managedInstancesProvider must be given.",
                ));
            }
        };
        // A Managed Instances provider is PROVISIONING first (terraform-provider-aws#45693,
        // pulumi-aws#6061); an Auto Scaling group provider is ACTIVE at once.
        let managed = kind == "MANAGED_INSTANCES";
        let active_at = if managed {
            ctx.now + ctx.profile.ecs_capacity_provider_provision.as_secs_f64()
        } else {
            ctx.now
        };
        if managed {
            self.next_due = self.next_due.min(active_at);
        }
        let cp = CapacityProvider {
            arn: ctx.arn("ecs", &format!("capacity-provider/{name}")),
            name: name.clone(),
            status: if managed { "PROVISIONING" } else { "ACTIVE" }.into(),
            kind: kind.into(),
            cluster,
            config,
            active_at,
            gone_at: None,
        };
        let tags = parse_tags(input)?;
        self.tags.insert(cp.arn.clone(), tags);
        let v = Self::capacity_provider_json(&cp);
        self.capacity_providers.insert(name, cp);
        Ok(json!({ "capacityProvider": v }))
    }

    /// DescribeCapacityProviders. With `cluster`, only the providers associated with that
    /// cluster, Managed Instances ones included; without it, a cluster-scoped Managed
    /// Instances provider is not among them (API reference, DescribeCapacityProviders
    /// `cluster`: "including Amazon ECS Managed Instances capacity providers" only when it
    /// is given).
    fn describe_capacity_providers(&mut self, input: &Value) -> Result<Value, ApiError> {
        let wanted = str_list(input, "capacityProviders");
        let with_tags = include_tags(input);
        let cluster = match opt_str(input, "cluster") {
            Some(c) => Some(self.active_cluster(short_name(c))?.clone()),
            None => None,
        };
        let visible = |cp: &CapacityProvider| match &cluster {
            Some(c) => serves(cp, c),
            None => cp.cluster.is_none(),
        };
        let mut found: Vec<Value> = Vec::new();
        let mut failures = Vec::new();
        if wanted.is_empty() {
            found.extend(
                self.capacity_providers
                    .values()
                    .filter(|cp| visible(cp))
                    .map(Self::capacity_provider_json),
            );
        }
        for w in &wanted {
            let name = w.rsplit('/').next().unwrap_or(w);
            match self.capacity_providers.get(name).filter(|cp| visible(cp)) {
                Some(cp) => found.push(Self::capacity_provider_json(cp)),
                None => failures.push(json!({ "arn": w, "reason": "MISSING" })),
            }
        }
        if with_tags {
            for v in &mut found {
                let arn = v["capacityProviderArn"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let tags = self.tags.get(&arn).cloned().unwrap_or_default();
                v["tags"] = tags_json(&tags);
            }
        }
        Ok(json!({ "capacityProviders": found, "failures": failures }))
    }

    /// Names of the capacity providers in an ACTIVE service's strategy.
    fn strategy_users(&self, provider: &str) -> Vec<String> {
        let mut out = Vec::new();
        for c in self.clusters.values() {
            for s in c.services.values().filter(|s| s.status != "INACTIVE") {
                let uses = s
                    .extra
                    .get("capacityProviderStrategy")
                    .and_then(Value::as_array)
                    .is_some_and(|l| {
                        l.iter().any(|i| {
                            i.get("capacityProvider").and_then(Value::as_str) == Some(provider)
                        })
                    });
                if uses {
                    out.push(s.name.clone());
                }
            }
        }
        out
    }

    /// A Managed Instances provider is cluster-scoped: DeleteCapacityProvider and
    /// UpdateCapacityProvider name its cluster (API reference, both `cluster`).
    fn check_owner_cluster(&self, name: &str, input: &Value) -> Result<(), ApiError> {
        let given_cluster = opt_str(input, "cluster").map(short_name);
        if let Some(owner) = self
            .capacity_providers
            .get(name)
            .and_then(|cp| cp.cluster.as_deref())
            && given_cluster != Some(owner)
        {
            return Err(ApiError::bad(
                "InvalidParameterException",
                format!(
                    "The Managed Instances capacity provider {name} belongs to cluster {owner}: specify that cluster."
                ),
            ));
        }
        Ok(())
    }

    /// The ACTIVE (or still PROVISIONING) provider a request names (by name or ARN);
    /// ClientException otherwise, as DeleteCapacityProvider answers for a provider that does
    /// not exist (or is already being deleted).
    fn active_provider(&self, reference: &str) -> Result<&CapacityProvider, ApiError> {
        let name = short_name(reference);
        self.capacity_providers
            .get(name)
            .filter(|cp| cp.status == "ACTIVE" || cp.status == "PROVISIONING")
            .ok_or_else(|| {
                ApiError::bad(
                    "ClientException",
                    format!("The specified capacity provider {name} does not exist."),
                )
            })
    }

    /// UpdateCapacityProvider: the members given replace the stored ones (inside
    /// `instanceLaunchTemplate`, member by member); instances already launched keep the old
    /// settings, later launches (`managed_provider`) read the new ones. A provider's type
    /// cannot change, and a member the update configuration does not have is refused.
    fn update_capacity_provider(&mut self, input: &Value) -> Result<Value, ApiError> {
        let cp = self.active_provider(req_str(input, "name")?)?;
        let (name, kind) = (cp.name.clone(), cp.kind.clone());
        let (key, update) = match (
            input.get("managedInstancesProvider"),
            input.get("autoScalingGroupProvider"),
        ) {
            (Some(m), None) => ("managedInstancesProvider", m),
            (None, Some(a)) => ("autoScalingGroupProvider", a),
            _ => {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Exactly one of autoScalingGroupProvider and managedInstancesProvider must be given.",
                ));
            }
        };
        let managed = kind == "MANAGED_INSTANCES";
        if managed != (key == "managedInstancesProvider") {
            return Err(ApiError::bad(
                "InvalidParameterException",
                format!("The capacity provider {name} is of type {kind}: {key} cannot update it."),
            ));
        }
        if managed {
            self.check_owner_cluster(&name, input)?;
            check_managed_update(update)?;
        }
        let Some(cp) = self.capacity_providers.get_mut(&name) else {
            return Err(ApiError::bad(
                "ClientException",
                "capacity provider vanished",
            ));
        };
        merge_members(&mut cp.config, update, &["instanceLaunchTemplate"]);
        Ok(json!({ "capacityProvider": Self::capacity_provider_json(cp) }))
    }

    fn delete_capacity_provider(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let name = self
            .active_provider(req_str(input, "capacityProvider")?)?
            .name
            .clone();
        // API reference, DeleteCapacityProvider: the provider must first be removed from the
        // capacity provider strategy of every service, only a provider associated with no
        // cluster can be deleted, and a Managed Instances provider (cluster-scoped) is deleted
        // from its cluster.
        let users = self.strategy_users(&name);
        if !users.is_empty() {
            return Err(ApiError::bad(
                "ClientException",
                format!(
                    "The capacity provider {name} is in use by services ({}) and cannot be deleted.",
                    users.join(", ")
                ),
            ));
        }
        let attached: Vec<String> = self
            .clusters
            .values()
            .filter(|c| c.status == "ACTIVE" && c.capacity_providers.contains(&name))
            .map(|c| c.name.clone())
            .collect();
        if !attached.is_empty() {
            return Err(ApiError::bad(
                "ClientException",
                format!(
                    "The capacity provider {name} is associated with cluster {} and cannot be deleted. Remove it with PutClusterCapacityProviders first.",
                    attached.join(", ")
                ),
            ));
        }
        self.check_owner_cluster(&name, input)?;
        let Some(cp) = self.capacity_providers.get_mut(&name) else {
            return Err(ApiError::bad(
                "ClientException",
                "capacity provider vanished",
            ));
        };
        if cp.kind == "MANAGED_INSTANCES" {
            // DEPROVISIONING while ECS terminates its instances; INACTIVE (and its cluster
            // deletable) only then (API reference, CapacityProvider `status`; DeleteCluster
            // ClusterContainsCapacityProviderException).
            let gone_at = ctx.now + ctx.profile.ecs_capacity_provider_deprovision.as_secs_f64();
            cp.status = "DEPROVISIONING".into();
            cp.gone_at = Some(gone_at);
            let cp = cp.clone();
            self.next_due = self.next_due.min(gone_at);
            return Ok(json!({ "capacityProvider": Self::capacity_provider_json(&cp) }));
        }
        cp.status = "INACTIVE".into();
        let cp = cp.clone();
        for c in self.clusters.values_mut() {
            c.capacity_providers.retain(|n| *n != name);
        }
        Ok(json!({ "capacityProvider": Self::capacity_provider_json(&cp) }))
    }

    fn put_cluster_capacity_providers(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let cluster_name = short_name(req_str(input, "cluster")?).to_string();
        let names = str_list(input, "capacityProviders");
        for n in &names {
            let cp = self.capacity_providers.get(short_name(n));
            if cp.is_some_and(|cp| cp.kind == "MANAGED_INSTANCES") {
                // hashicorp/terraform-provider-aws#44783; aws/aws-cdk#35699 (fixed in #35783
                // by no longer generating the association).
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Cannot associate Managed Instances capacity provider to clusters using this API. Managed Instances capacity providers are already associated with the cluster named when they were created.",
                ));
            }
            if cp.is_some_and(|cp| cp.status == "PROVISIONING") {
                return Err(not_active(n));
            }
            let known =
                n == "FARGATE" || n == "FARGATE_SPOT" || cp.is_some_and(|cp| cp.status == "ACTIVE");
            if !known {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    format!("The specified capacity provider {n} does not exist."),
                ));
            }
        }
        let current = self
            .active_cluster(&cluster_name)?
            .capacity_providers
            .clone();
        for removed in current.iter().filter(|n| !names.contains(n)) {
            if !self.strategy_users(removed).is_empty() {
                return Err(ApiError::bad(
                    "ResourceInUseException",
                    format!(
                        "The specified capacity provider {removed} is in use and cannot be removed."
                    ),
                ));
            }
        }
        let strategy: Vec<Value> = input
            .get("defaultCapacityProviderStrategy")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let cluster = self.active_cluster(&cluster_name)?;
        cluster.capacity_providers = names;
        cluster.default_strategy = strategy;
        let c = cluster.clone();
        Ok(json!({ "cluster": self.cluster_json(&c, ctx, false) }))
    }

    // ---- capacity ----------------------------------------------------------------------

    /// The Managed Instances provider attached to `cluster` that a service's strategy names,
    /// and what it launches.
    fn managed_provider(&self, cluster: &Cluster, strategy: Option<&Value>) -> Option<Launch> {
        let names: Vec<&str> = strategy?
            .as_array()?
            .iter()
            .filter_map(|i| i.get("capacityProvider").and_then(Value::as_str))
            .collect();
        names.iter().find_map(|n| {
            let cp = self.capacity_providers.get(*n)?;
            if cp.kind != "MANAGED_INSTANCES" || cp.status != "ACTIVE" || !serves(cp, cluster) {
                return None;
            }
            let template = cp.config.get("instanceLaunchTemplate")?;
            let instance_type = template
                .get("instanceRequirements")
                .and_then(|r| r.get("allowedInstanceTypes"))
                .and_then(Value::as_array)
                .and_then(|l| l.first())
                .and_then(Value::as_str)?;
            let (cpu, memory) = crate::catalogue::ec2_container_resources(instance_type)?;
            let subnets = str_list(template.get("networkConfiguration")?, "subnets");
            Some(Launch {
                provider: cp.name.clone(),
                cpu,
                memory,
                // Managed Instances count each awsvpc task's network interface (Developer
                // Guide, "Amazon ECS Managed Instances auto scaling and task placement").
                task_interfaces: envctl_aws_model::awsvpc_task_slots(instance_type),
                subnets,
            })
        })
    }

    /// Managed Instances capacity, once per settle: launched instances register; a PRIMARY
    /// deployment whose tasks found no instance is placed when it now fits, else its
    /// provider launches the fewest instances that make it fit (they register after
    /// `ecs_instance_launch`); instances of a provider that no task uses leave (scale in).
    fn settle_capacity(&mut self, ctx: &Ctx<'_>, next_due: &mut f64) {
        let now = ctx.now;
        self.settle_providers(now, next_due);
        let names: Vec<String> = self
            .clusters
            .iter()
            .filter(|(_, c)| c.status == "ACTIVE")
            .map(|(n, _)| n.clone())
            .collect();
        for name in names {
            let Some(cluster) = self.clusters.get_mut(&name) else {
                continue;
            };
            let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut cluster.launching)
                .into_iter()
                .partition(|ci| ci.registered_at <= now);
            cluster.container_instances.extend(ready);
            for ci in &waiting {
                *next_due = next_due.min(ci.registered_at);
            }
            cluster.launching = waiting;
            let Some(cluster) = self.clusters.get(&name) else {
                continue;
            };
            let pending: Vec<(String, String, i64, Option<Value>)> = cluster
                .services
                .values()
                .filter(|s| s.status == "ACTIVE")
                .flat_map(|s| {
                    s.deployments
                        .iter()
                        .filter(|d| {
                            d.status == "PRIMARY"
                                && d.rollout_state == "IN_PROGRESS"
                                && d.unplaced.is_some()
                        })
                        .map(|d| {
                            (
                                s.name.clone(),
                                d.task_definition.clone(),
                                d.desired_count,
                                s.extra.get("capacityProviderStrategy").cloned(),
                            )
                        })
                })
                .collect();
            let mut launches: Vec<RegisteredInstance> = Vec::new();
            let mut placed: Vec<String> = Vec::new();
            // Deployments given room earlier in this pass (placed now, or waiting for
            // instances being launched): the next ones are placed beside them, so two
            // services never count on the same free room.
            let mut ahead: Vec<(String, i64)> = Vec::new();
            for (service, td, desired, strategy) in &pending {
                let launching: Vec<ContainerInstance> = cluster
                    .launching
                    .iter()
                    .chain(&launches)
                    .map(RegisteredInstance::as_placed)
                    .collect();
                let registered_fit = launching.is_empty()
                    && self
                        .try_place(cluster, service, td, *desired, Vec::new(), &ahead)
                        .is_none();
                if registered_fit {
                    placed.push(service.clone());
                    ahead.push((td.clone(), *desired));
                    continue;
                }
                let Some(launch) = self.managed_provider(cluster, strategy.as_ref()) else {
                    continue;
                };
                if self
                    .try_place(cluster, service, td, *desired, launching.clone(), &ahead)
                    .is_none()
                {
                    // What is launching already makes room: wait for it.
                    ahead.push((td.clone(), *desired));
                    continue;
                }
                let total = cluster.container_instances.len() + launching.len();
                let candidate = |k: usize| -> Vec<ContainerInstance> {
                    (0..k)
                        .map(|i| {
                            let zone = managed_zone(ctx, &launch.subnets, total + i);
                            ContainerInstance::new(
                                format!("new-{i}"),
                                zone,
                                launch.cpu,
                                launch.memory,
                            )
                            .with_task_interfaces(launch.task_interfaces)
                        })
                        .collect()
                };
                let need = (1..=MANAGED_INSTANCES_MAX).find(|k| {
                    let mut extra = launching.clone();
                    extra.extend(candidate(*k));
                    self.try_place(cluster, service, td, *desired, extra, &ahead)
                        .is_none()
                });
                // A task no instance of the type can hold stays unplaced with its event.
                let Some(need) = need else {
                    continue;
                };
                ahead.push((td.clone(), *desired));
                for i in 0..need {
                    let n = self.seq + 1 + launches.len() as u64;
                    let id = format!("{n:032x}");
                    launches.push(RegisteredInstance {
                        arn: ctx.arn("ecs", &format!("container-instance/{name}/{id}")),
                        id,
                        zone: managed_zone(ctx, &launch.subnets, total + i),
                        cpu: launch.cpu,
                        memory_mib: launch.memory,
                        registered_at: now + ctx.profile.ecs_instance_launch.as_secs_f64(),
                        provider: Some(launch.provider.clone()),
                        task_interfaces: launch.task_interfaces,
                    });
                }
            }
            self.seq += launches.len() as u64;
            let start = ctx.profile.ecs_task_start.as_secs_f64();
            let Some(cluster) = self.clusters.get_mut(&name) else {
                continue;
            };
            for ci in &launches {
                *next_due = next_due.min(ci.registered_at);
            }
            cluster.launching.extend(launches);
            for s in cluster
                .services
                .values_mut()
                .filter(|s| placed.contains(&s.name))
            {
                let mut started = 0;
                for d in s
                    .deployments
                    .iter_mut()
                    .filter(|d| d.status == "PRIMARY" && d.unplaced.is_some())
                {
                    // The tasks leave PROVISIONING now and start as a new deployment's do.
                    d.unplaced = None;
                    d.due_at = now + start;
                    d.updated_at = now;
                    started += d.desired_count;
                    *next_due = next_due.min(d.due_at);
                }
                self.seq += 1;
                let message = format!("(service {}) has started {started} tasks.", s.name);
                Self::event(s, self.seq, now, message);
            }
            // Scale in: a provider's instance that holds no task, while nothing waits for
            // capacity, is terminated and deregisters.
            let Some(cluster) = self.clusters.get(&name) else {
                continue;
            };
            let waiting_for_capacity = cluster.services.values().any(|s| {
                s.status == "ACTIVE" && s.deployments.iter().any(|d| d.unplaced.is_some())
            });
            if waiting_for_capacity || !cluster.launching.is_empty() {
                continue;
            }
            let idle: Vec<String> = cluster
                .container_instances
                .iter()
                .zip(self.occupied(cluster, None))
                .filter(|(ci, used)| {
                    ci.provider.is_some() && used.used_cpu == 0 && used.used_memory_mib == 0
                })
                .map(|(ci, _)| ci.id.clone())
                .collect();
            if let Some(cluster) = self.clusters.get_mut(&name) {
                cluster
                    .container_instances
                    .retain(|ci| !idle.contains(&ci.id));
            }
        }
    }

    /// Provider states: PROVISIONING becomes ACTIVE at `active_at`; DEPROVISIONING becomes
    /// INACTIVE at `gone_at`, when the instances it launched are terminated and deregister.
    fn settle_providers(&mut self, now: f64, next_due: &mut f64) {
        let mut gone = Vec::new();
        for cp in self.capacity_providers.values_mut() {
            match (cp.status.as_str(), cp.gone_at) {
                ("PROVISIONING", _) if cp.active_at <= now => cp.status = "ACTIVE".into(),
                ("PROVISIONING", _) => *next_due = next_due.min(cp.active_at),
                ("DEPROVISIONING", Some(at)) if at <= now => {
                    cp.status = "INACTIVE".into();
                    gone.push(cp.name.clone());
                }
                ("DEPROVISIONING", Some(at)) => *next_due = next_due.min(at),
                _ => {}
            }
        }
        for name in gone {
            for c in self.clusters.values_mut() {
                c.capacity_providers.retain(|n| *n != name);
                c.container_instances
                    .retain(|ci| ci.provider.as_deref() != Some(name.as_str()));
                c.launching
                    .retain(|ci| ci.provider.as_deref() != Some(name.as_str()));
            }
        }
    }

    /// Whether a Managed Instances provider in `strategy` can launch an instance that holds
    /// one task of `task_definition` (its tasks then wait for it instead of failing).
    fn provider_fits(
        &self,
        cluster_name: &str,
        strategy: Option<&Value>,
        task_definition: &str,
    ) -> bool {
        let Some(cluster) = self.clusters.get(cluster_name) else {
            return false;
        };
        let Some(launch) = self.managed_provider(cluster, strategy) else {
            return false;
        };
        ContainerInstance::new("new", "zone", launch.cpu, launch.memory)
            .with_task_interfaces(launch.task_interfaces)
            .misses(&self.task_needs(task_definition))
            .is_empty()
    }

    /// Whether a capacity provider strategy names a Managed Instances provider.
    fn names_managed(&self, strategy: Option<&Value>) -> bool {
        strategy
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|i| opt_str(i, "capacityProvider"))
            .filter_map(|n| self.capacity_providers.get(n))
            .any(|cp| cp.kind == "MANAGED_INSTANCES")
    }

    /// A task definition placed on a Managed Instances provider must have been validated for
    /// it: `MANAGED_INSTANCES` in `requiresCompatibilities` (Developer Guide, "Amazon ECS
    /// task definition parameters for Amazon ECS Managed Instances"; aws/aws-cdk#36098). The
    /// wording is ECS's for a task definition not validated for a launch type (its FARGATE
    /// form is the well-known one).
    fn check_managed_compatibility(&self, task_definition: &str) -> Result<(), ApiError> {
        let ok = self
            .find_task_definition(task_definition)
            .is_some_and(|td| requires(td.doc.get("requiresCompatibilities"), "MANAGED_INSTANCES"));
        if ok {
            return Ok(());
        }
        Err(ApiError::bad(
            "InvalidParameterException",
            "Task definition does not support launch_type MANAGED_INSTANCES.",
        ))
    }

    /// CreateService/UpdateService refuse a launch type together with a capacity provider
    /// strategy, and a strategy naming a provider the cluster does not have (API
    /// reference, CreateService `capacityProviderStrategy`).
    fn check_strategy(&self, cluster_name: &str, input: &Value) -> Result<(), ApiError> {
        let Some(strategy) = input
            .get("capacityProviderStrategy")
            .and_then(Value::as_array)
        else {
            return Ok(());
        };
        if input.get("launchType").is_some() {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.",
            ));
        }
        let Some(cluster) = self.clusters.get(cluster_name) else {
            return Ok(());
        };
        for item in strategy {
            let name = item
                .get("capacityProvider")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let provider = self.capacity_providers.get(name);
            let associated = match provider {
                Some(cp) => serves(cp, cluster),
                None => cluster.capacity_providers.iter().any(|a| a == name),
            };
            if associated && provider.is_some_and(|cp| cp.status != "ACTIVE") {
                return Err(not_active(name));
            }
            if !associated {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "The specified capacity provider strategy cannot contain a capacity provider that is not associated with the cluster. Associate the capacity provider with the cluster or specify a valid capacity provider and try again.",
                ));
            }
        }
        Ok(())
    }

    /// Registers container instances in a cluster (control API); returns their ARNs. For a
    /// cluster that does not exist (yet) they register once it is created, as the agents of
    /// an Auto Scaling group naming it would.
    pub fn declare_instances(
        &mut self,
        d: &DeclaredInstances,
        arn: impl Fn(&str) -> String,
    ) -> Vec<String> {
        let start = self.seq;
        let instances: Vec<RegisteredInstance> = d
            .instances
            .iter()
            .enumerate()
            .map(|(i, ci)| {
                let id = format!("{:032x}", start + 1 + i as u64);
                RegisteredInstance {
                    arn: arn(&format!("container-instance/{}/{id}", d.cluster)),
                    id,
                    zone: ci.zone.clone(),
                    cpu: ci.cpu,
                    memory_mib: ci.memory,
                    registered_at: 0.0,
                    provider: None,
                    task_interfaces: None,
                }
            })
            .collect();
        self.seq = start + d.instances.len() as u64;
        self.next_due = 0.0;
        let out = instances.iter().map(|ci| ci.arn.clone()).collect();
        match self
            .clusters
            .get_mut(&d.cluster)
            .filter(|c| c.status == "ACTIVE")
        {
            Some(cluster) => cluster.container_instances.extend(instances),
            None => self
                .awaiting_cluster
                .entry(d.cluster.clone())
                .or_default()
                .extend(instances),
        }
        out
    }

    /// Stops the container instances that no capacity provider launched in `cluster` (and
    /// those still waiting for it), as scaling the Auto Scaling group that registered them to
    /// zero does (control API); returns how many left. Their agents deregister them, so the
    /// cluster can then be deleted.
    pub fn retire_instances(&mut self, cluster: &str) -> usize {
        let waiting = self.awaiting_cluster.remove(cluster).map_or(0, |v| v.len());
        let registered = self.clusters.get_mut(cluster).map_or(0, |c| {
            let before = c.container_instances.len();
            c.container_instances.retain(|ci| ci.provider.is_some());
            before - c.container_instances.len()
        });
        waiting + registered
    }

    /// What one task of a registered task definition reserves.
    fn task_needs(&self, task_definition: &str) -> TaskNeeds {
        let Some(td) = self.find_task_definition(task_definition) else {
            return TaskNeeds::default();
        };
        let num = |v: Option<&Value>| -> Option<u32> {
            match v? {
                Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
                Value::String(s) => s.parse().ok(),
                _ => None,
            }
        };
        let containers: Vec<ContainerNeeds> = td
            .doc
            .get("containerDefinitions")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|c| ContainerNeeds {
                        cpu: num(c.get("cpu")).unwrap_or(0),
                        memory: num(c.get("memory")),
                        memory_reservation: num(c.get("memoryReservation")),
                        ports: c
                            .get("portMappings")
                            .and_then(Value::as_array)
                            .map(|ports| {
                                ports
                                    .iter()
                                    .filter_map(|p| {
                                        let container = num(p.get("containerPort"))?;
                                        let host = num(p.get("hostPort"));
                                        Some((
                                            u16::try_from(container).ok()?,
                                            host.and_then(|h| u16::try_from(h).ok()),
                                            Protocol::from_mapping(
                                                p.get("protocol").and_then(Value::as_str),
                                            ),
                                        ))
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mode = PortMode::from_network_mode(td.doc.get("networkMode").and_then(Value::as_str));
        TaskNeeds::of_task(
            &containers,
            mode,
            num(td.doc.get("cpu")),
            num(td.doc.get("memory")),
        )
    }

    /// The cluster's instances with what the placed tasks of its services reserve, services
    /// in creation order (a deployment being replaced still holds its tasks), leaving out
    /// `except`.
    fn occupied(&self, cluster: &Cluster, except: Option<&str>) -> Vec<ContainerInstance> {
        let mut fleet: Vec<ContainerInstance> = cluster
            .container_instances
            .iter()
            .map(RegisteredInstance::as_placed)
            .collect();
        let mut services: Vec<&Service> = cluster
            .services
            .values()
            .filter(|s| s.status == "ACTIVE" && Some(s.name.as_str()) != except)
            .collect();
        services.sort_by(|a, b| {
            a.created_at
                .total_cmp(&b.created_at)
                .then(a.name.cmp(&b.name))
        });
        for s in services {
            let mut spread = BTreeMap::new();
            for d in s.deployments.iter().filter(|d| d.unplaced.is_none()) {
                let count = u32::try_from(d.desired_count.max(0)).unwrap_or(0);
                placement::place(
                    &mut fleet,
                    &self.task_needs(&d.task_definition),
                    count,
                    &mut spread,
                );
            }
        }
        fleet
    }

    /// Places a new deployment's tasks beside everything else in the cluster (the service's
    /// own older deployments included, as during a rolling update); ECS's event for the
    /// first task that finds no instance, if any.
    fn placement_event(
        &self,
        cluster_name: &str,
        service: &str,
        task_definition: &str,
        desired: i64,
    ) -> Option<String> {
        let cluster = self.clusters.get(cluster_name)?;
        self.try_place(cluster, service, task_definition, desired, Vec::new(), &[])
    }

    /// Places a deployment of `desired` tasks beside everything else in the cluster, on its
    /// instances plus `extra` ones, after `ahead` (deployments of other services already
    /// given room in this settle pass: (task definition, tasks)); ECS's event for the first
    /// task that found no instance.
    fn try_place(
        &self,
        cluster: &Cluster,
        service: &str,
        task_definition: &str,
        desired: i64,
        extra: Vec<ContainerInstance>,
        ahead: &[(String, i64)],
    ) -> Option<String> {
        let mut fleet = self.occupied(cluster, Some(service));
        fleet.extend(extra);
        for (td, count) in ahead {
            let count = u32::try_from((*count).max(0)).unwrap_or(0);
            let mut spread = BTreeMap::new();
            placement::place(&mut fleet, &self.task_needs(td), count, &mut spread);
        }
        let mut spread = BTreeMap::new();
        if let Some(s) = cluster
            .services
            .get(service)
            .filter(|s| s.status == "ACTIVE")
        {
            // With maximumPercent 100 ECS stops old tasks before it starts new ones (and
            // frees their ports and memory): the new tasks do not need room beside them.
            // Above 100 the old tasks are counted as running while the new ones start.
            let stop_first = s
                .deployment_configuration
                .get("maximumPercent")
                .and_then(Value::as_i64)
                .is_some_and(|m| m <= 100);
            for d in s
                .deployments
                .iter()
                .filter(|d| d.unplaced.is_none() && !stop_first)
            {
                let count = u32::try_from(d.desired_count.max(0)).unwrap_or(0);
                placement::place(
                    &mut fleet,
                    &self.task_needs(&d.task_definition),
                    count,
                    &mut spread,
                );
            }
        }
        let count = u32::try_from(desired.max(0)).unwrap_or(0);
        let p = placement::place(
            &mut fleet,
            &self.task_needs(task_definition),
            count,
            &mut spread,
        );
        p.unplaced.first().map(|u| u.event(service))
    }

    fn list_container_instances(&mut self, input: &Value) -> Result<Value, ApiError> {
        let cluster = self.active_cluster(&Self::cluster_name(input))?;
        let arns: Vec<String> = cluster
            .container_instances
            .iter()
            .map(|ci| ci.arn.clone())
            .collect();
        let (items, next) = page(&arns, input, 100)?;
        let mut out = json!({ "containerInstanceArns": items });
        if let Some(t) = next {
            out["nextToken"] = json!(t);
        }
        Ok(out)
    }

    fn describe_container_instances(&mut self, input: &Value) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        self.active_cluster(&cluster_name)?;
        let Some(cluster) = self.clusters.get(&cluster_name) else {
            return Ok(json!({ "containerInstances": [], "failures": [] }));
        };
        let fleet = self.occupied(cluster, None);
        let wanted: Vec<String> = input
            .get("containerInstances")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut found = Vec::new();
        let mut failures = Vec::new();
        for w in &wanted {
            let hit = cluster
                .container_instances
                .iter()
                .zip(&fleet)
                .find(|(ci, _)| ci.arn == *w || ci.id == short_name(w));
            let Some((ci, used)) = hit else {
                failures.push(json!({ "arn": w, "reason": "MISSING" }));
                continue;
            };
            // Ports are listed as they are in use: in registeredResources the agent's
            // reserved ones, in remainingResources those and every placed task's.
            let resources = |cpu: u32, mem: u32, ports: &[HostPort]| {
                let of = |protocol: Protocol| -> Value {
                    json!({
                        "name": protocol.resource_name(),
                        "type": "STRINGSET",
                        "stringSetValue": ports
                            .iter()
                            .filter(|p| p.protocol == protocol)
                            .map(|p| p.port.to_string())
                            .collect::<Vec<_>>(),
                    })
                };
                json!([
                    {"name": "CPU", "type": "INTEGER", "integerValue": cpu},
                    {"name": "MEMORY", "type": "INTEGER", "integerValue": mem},
                    of(Protocol::Tcp),
                    of(Protocol::Udp),
                ])
            };
            let agent: Vec<HostPort> = AGENT_RESERVED_PORTS.map(HostPort::tcp).to_vec();
            let in_use: Vec<HostPort> = used.used_ports.iter().copied().collect();
            found.push(json!({
                "containerInstanceArn": ci.arn,
                "ec2InstanceId": format!("i-{}", &ci.id[15..]),
                "status": "ACTIVE",
                "agentConnected": true,
                "registeredAt": ts(ci.registered_at),
                "attributes": [{"name": "ecs.availability-zone", "value": ci.zone}],
                "registeredResources": resources(ci.cpu, ci.memory_mib, &agent),
                "remainingResources": resources(
                    used.remaining_cpu(),
                    used.remaining_memory_mib(),
                    &in_use,
                ),
            }));
        }
        Ok(json!({ "containerInstances": found, "failures": failures }))
    }

    // ---- state machines --------------------------------------------------------------

    /// Applies every due transition: deployments completing or failing (with rollback),
    /// DRAINING services becoming INACTIVE, tasks stopping.
    pub fn settle(&mut self, ctx: &Ctx<'_>) {
        let now = ctx.now;
        if self.next_due != 0.0 && now < self.next_due {
            return;
        }
        let mut next_due = f64::INFINITY;
        self.settle_capacity(ctx, &mut next_due);
        let mut seq = self.seq;
        let mut new_tasks: Vec<Task> = Vec::new();
        for cluster in self.clusters.values_mut() {
            for service in cluster.services.values_mut() {
                settle_service(ctx, service, &mut seq, &mut new_tasks, &mut next_due);
            }
        }
        for task in new_tasks {
            self.tasks.insert(task.arn.clone(), task);
        }
        // A stopped task drains (DEACTIVATING) for `ecs_task_stop` before it is STOPPED.
        let stop = ctx.profile.ecs_task_stop.as_secs_f64();
        for task in self.tasks.values_mut() {
            if let (Some(at), None) = (task.stopping_at, task.stopped_at) {
                if at + stop <= now {
                    task.stopped_at = Some(at + stop);
                } else {
                    next_due = next_due.min(at + stop);
                }
            }
        }
        self.seq = seq;
        // A stuck resource re-checks on every request until the fault is removed.
        self.next_due = if ctx.faults.stuck.is_empty() {
            next_due
        } else {
            0.0
        };
    }

    // ---- clusters --------------------------------------------------------------------

    fn cluster_json(&self, c: &Cluster, ctx: &Ctx<'_>, with_tags: bool) -> Value {
        let (mut running, mut pending) = (0, 0);
        let mut active_services = 0;
        for s in c.services.values() {
            if s.status == "ACTIVE" || s.status == "DRAINING" {
                if s.status == "ACTIVE" {
                    active_services += 1;
                }
                for d in &s.deployments {
                    let (r, p) = deployment_counts(d, ctx.now);
                    running += r;
                    pending += p;
                }
            }
        }
        for t in self.tasks.values() {
            if t.cluster_arn == c.arn {
                match task_status(t, ctx.now) {
                    "RUNNING" => running += 1,
                    "PROVISIONING" | "PENDING" => pending += 1,
                    _ => {}
                }
            }
        }
        let mut v = json!({
            "clusterArn": c.arn,
            "clusterName": c.name,
            "status": c.status,
            "registeredContainerInstancesCount": c.container_instances.len(),
            "runningTasksCount": running,
            "pendingTasksCount": pending,
            "activeServicesCount": active_services,
            "statistics": [],
            "settings": [{"name": "containerInsights", "value": "disabled"}],
            "capacityProviders": c.capacity_providers,
            "defaultCapacityProviderStrategy": c.default_strategy,
        });
        if with_tags {
            v["tags"] = tags_json(self.tags.get(&c.arn).map(Vec::as_slice).unwrap_or(&[]));
        }
        v
    }

    fn create_cluster(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let name = opt_str(input, "clusterName")
            .unwrap_or("default")
            .to_string();
        if !valid_name(&name) {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Cluster name can have up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens.",
            ));
        }
        let tags = parse_tags(input)?;
        let arn = Self::cluster_arn(ctx, &name);
        // CreateCluster is idempotent on an ACTIVE cluster and revives an INACTIVE one.
        let cluster = self
            .clusters
            .entry(name.clone())
            .or_insert_with(|| Cluster {
                name: name.clone(),
                arn: arn.clone(),
                status: "ACTIVE".into(),
                created_at: ctx.now,
                services: BTreeMap::new(),
                container_instances: Vec::new(),
                capacity_providers: Vec::new(),
                launching: Vec::new(),
                default_strategy: Vec::new(),
            });
        cluster.status = "ACTIVE".into();
        // Instances whose agents were waiting for this cluster register after their
        // restart interval (settle_capacity moves them in when due).
        let due = ctx.now + ctx.profile.ecs_instance_launch.as_secs_f64();
        for mut ci in self.awaiting_cluster.remove(&name).unwrap_or_default() {
            ci.registered_at = due;
            cluster.launching.push(ci);
            self.next_due = 0.0;
        }
        merge_tags(self.tags.entry(arn.clone()).or_default(), tags);
        let c = self.clusters.get(&name).cloned();
        let v = c
            .map(|c| self.cluster_json(&c, ctx, true))
            .unwrap_or(Value::Null);
        Ok(json!({ "cluster": v }))
    }

    fn describe_clusters(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let mut names = str_list(input, "clusters");
        if names.is_empty() {
            names.push("default".into());
        }
        let with_tags = include_tags(input);
        let mut clusters = Vec::new();
        let mut failures = Vec::new();
        for n in &names {
            match self.clusters.get(short_name(n)) {
                Some(c) => clusters.push(self.cluster_json(c, ctx, with_tags)),
                None => failures.push(json!({
                    "arn": if n.starts_with("arn:") { n.clone() } else { Self::cluster_arn(ctx, n) },
                    "reason": "MISSING"
                })),
            }
        }
        Ok(json!({ "clusters": clusters, "failures": failures }))
    }

    fn list_clusters(&mut self, input: &Value) -> Result<Value, ApiError> {
        let arns: Vec<String> = self
            .clusters
            .values()
            .filter(|c| c.status == "ACTIVE")
            .map(|c| c.arn.clone())
            .collect();
        let (items, next) = page(&arns, input, 100)?;
        Ok(json!({ "clusterArns": items, "nextToken": next }))
    }

    fn delete_cluster(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let name = short_name(req_str(input, "cluster")?).to_string();
        let arn = Self::cluster_arn(ctx, &name);
        let running_tasks = self
            .tasks
            .values()
            .any(|t| t.cluster_arn == arn && t.stopped_at.is_none());
        let cluster = self.active_cluster(&name)?;
        if cluster
            .services
            .values()
            .any(|s| s.status == "ACTIVE" || s.status == "DRAINING")
        {
            return Err(ApiError::bad(
                "ClusterContainsServicesException",
                "The Cluster cannot be deleted while Services are active.",
            ));
        }
        if running_tasks {
            return Err(ApiError::bad(
                "ClusterContainsTasksException",
                "The Cluster cannot be deleted while Tasks are active.",
            ));
        }
        if !cluster.container_instances.is_empty() {
            return Err(ApiError::bad(
                "ClusterContainsContainerInstancesException",
                "The Cluster cannot be deleted while Container Instances are active or draining.",
            ));
        }
        // API reference, DeleteCluster: a cluster-scoped (Managed Instances) provider that
        // is not yet INACTIVE (still DEPROVISIONING, or never deleted) keeps the cluster.
        if let Some(cp) = self
            .capacity_providers
            .values()
            .find(|cp| cp.cluster.as_deref() == Some(name.as_str()) && cp.status != "INACTIVE")
        {
            return Err(ApiError::bad(
                "ClusterContainsCapacityProviderException",
                format!(
                    "The Cluster cannot be deleted while capacity provider {} ({}) is associated with it. Delete the capacity provider and wait until it is INACTIVE.",
                    cp.name, cp.status
                ),
            ));
        }
        let Some(cluster) = self.clusters.get_mut(&name) else {
            return Err(ApiError::bad(
                "ClusterNotFoundException",
                "Cluster not found.",
            ));
        };
        cluster.status = "INACTIVE".into();
        let c = cluster.clone();
        Ok(json!({ "cluster": self.cluster_json(&c, ctx, false) }))
    }

    // ---- task definitions ------------------------------------------------------------

    /// Resolves `family`, `family:revision` or a task definition ARN.
    fn find_task_definition(&self, reference: &str) -> Option<&TaskDefinition> {
        let tail = match reference.split_once(":task-definition/") {
            Some((_, t)) => t,
            None => reference,
        };
        match tail.rsplit_once(':') {
            Some((family, rev)) => {
                let rev: usize = rev.parse().ok()?;
                self.task_definitions.get(family)?.get(rev.checked_sub(1)?)
            }
            None => self
                .task_definitions
                .get(tail)?
                .iter()
                .rev()
                .find(|td| td.status() == "ACTIVE"),
        }
    }

    fn find_task_definition_mut(&mut self, reference: &str) -> Option<&mut TaskDefinition> {
        let tail = match reference.split_once(":task-definition/") {
            Some((_, t)) => t,
            None => reference,
        };
        let (family, rev) = tail.rsplit_once(':')?;
        let rev: usize = rev.parse().ok()?;
        self.task_definitions
            .get_mut(family)?
            .get_mut(rev.checked_sub(1)?)
    }

    fn register_task_definition(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let family = req_str(input, "family")?.to_string();
        if !valid_name(&family) {
            return Err(ApiError::bad(
                "ClientException",
                "Family contains invalid characters.",
            ));
        }
        let containers = input
            .get("containerDefinitions")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| ApiError::bad("ClientException", "Container list cannot be empty."))?;
        for c in containers {
            if opt_str(c, "name").is_none_or(str::is_empty) {
                return Err(ApiError::bad(
                    "ClientException",
                    "Container.name should not be null or empty.",
                ));
            }
            if opt_str(c, "image").is_none_or(str::is_empty) {
                return Err(ApiError::bad(
                    "ClientException",
                    "Container.image should not be null or empty.",
                ));
            }
        }
        check_port_mappings(input, containers)?;
        // RegisterTaskDefinition refuses secrets without an execution role (the message
        // quoted in fabfuel/ecs-deploy#87 and terraform-provider-aws#6503).
        let has_secrets = containers.iter().any(|c| {
            c.get("secrets")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        });
        if has_secrets && opt_str(input, "executionRoleArn").is_none_or(str::is_empty) {
            return Err(ApiError::bad(
                "ClientException",
                "When you are specifying container secrets, you must also specify a value for 'executionRoleArn'.",
            ));
        }
        let tags = parse_tags(input)?;
        let Value::Object(mut doc) = input.clone() else {
            return Err(ApiError::bad("ClientException", "Expected an object."));
        };
        doc.remove("tags");
        normalise_task_definition(&mut doc);
        let revisions = self.task_definitions.entry(family.clone()).or_default();
        let revision = revisions.len() + 1;
        let arn = ctx.arn("ecs", &format!("task-definition/{family}:{revision}"));
        doc.insert("taskDefinitionArn".into(), json!(arn));
        doc.insert("revision".into(), json!(revision));
        doc.insert("status".into(), json!("ACTIVE"));
        doc.insert("registeredAt".into(), ts(ctx.now));
        doc.insert(
            "registeredBy".into(),
            json!(format!("arn:aws:iam::{}:root", ctx.account)),
        );
        revisions.push(TaskDefinition { doc: doc.clone() });
        self.tags.insert(arn, tags.clone());
        Ok(json!({ "taskDefinition": doc, "tags": tags_json(&tags) }))
    }

    fn describe_task_definition(&mut self, input: &Value) -> Result<Value, ApiError> {
        let reference = req_str(input, "taskDefinition")?;
        let td = self.find_task_definition(reference).ok_or_else(|| {
            ApiError::bad("ClientException", "Unable to describe task definition.")
        })?;
        let mut out = json!({ "taskDefinition": td.doc });
        if include_tags(input) {
            let tags = self.tags.get(td.arn()).map(Vec::as_slice).unwrap_or(&[]);
            out["tags"] = tags_json(tags);
        }
        Ok(out)
    }

    fn list_task_definitions(&mut self, input: &Value) -> Result<Value, ApiError> {
        // AWS quirk: despite its name, familyPrefix is matched as the full family name.
        let family = opt_str(input, "familyPrefix");
        let status = opt_str(input, "status").unwrap_or("ACTIVE");
        let mut arns: Vec<String> = self
            .task_definitions
            .iter()
            .filter(|(f, _)| family.is_none_or(|want| want == f.as_str()))
            .flat_map(|(_, revs)| revs.iter())
            .filter(|td| td.status() == status)
            .map(|td| td.arn().to_string())
            .collect();
        if opt_str(input, "sort") == Some("DESC") {
            arns.reverse();
        }
        let (items, next) = page(&arns, input, 100)?;
        Ok(json!({ "taskDefinitionArns": items, "nextToken": next }))
    }

    fn deregister_task_definition(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let reference = req_str(input, "taskDefinition")?;
        let td = self.find_task_definition_mut(reference).ok_or_else(|| {
            ApiError::bad(
                "ClientException",
                "The specified task definition does not exist.",
            )
        })?;
        if td.status() == "ACTIVE" {
            td.doc.insert("status".into(), json!("INACTIVE"));
            td.doc.insert("deregisteredAt".into(), ts(ctx.now));
        }
        Ok(json!({ "taskDefinition": td.doc }))
    }

    fn delete_task_definitions(&mut self, input: &Value) -> Result<Value, ApiError> {
        let refs = str_list(input, "taskDefinitions");
        if refs.is_empty() || refs.len() > 10 {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "taskDefinitions must contain between 1 and 10 task definitions.",
            ));
        }
        let mut done = Vec::new();
        let mut failures = Vec::new();
        for r in refs {
            match self.find_task_definition_mut(&r) {
                None => failures.push(json!({"arn": r, "reason": "The specified task definition does not exist."})),
                Some(td) if td.status() == "ACTIVE" => failures.push(json!({
                    "arn": td.arn(),
                    "reason": "The specified task definition is still in ACTIVE status. Please deregister the target and try again."
                })),
                Some(td) => {
                    td.doc.insert("status".into(), json!("DELETE_IN_PROGRESS"));
                    done.push(Value::Object(td.doc.clone()));
                }
            }
        }
        Ok(json!({ "taskDefinitions": done, "failures": failures }))
    }

    // ---- services --------------------------------------------------------------------

    fn new_deployment(
        &mut self,
        ctx: &Ctx<'_>,
        service_name: &str,
        task_definition: &str,
        desired: i64,
    ) -> Deployment {
        let n = self.next();
        let stop_reason = self.missing_log_group(task_definition);
        let fails = ctx.faults.deployment_fails(service_name) || stop_reason.is_some();
        Deployment {
            id: deployment_id(n),
            status: "PRIMARY".into(),
            task_definition: task_definition.to_string(),
            desired_count: desired,
            created_at: ctx.now,
            updated_at: ctx.now,
            rollout_state: "IN_PROGRESS".into(),
            rollout_state_reason: "ECS deployment ecs-svc/".to_string()
                + &deployment_id(n)[8..]
                + " in progress.",
            due_at: ctx.now + ctx.profile.ecs_task_start.as_secs_f64(),
            fails,
            stop_reason,
            failed_tasks: 0,
            running_when_replaced: None,
            replaced_at: None,
            unplaced: None,
            rescaled: None,
        }
    }

    /// The awslogs driver needs its group: with `awslogs-create-group: "true"` ECS creates
    /// it (the execution role needs logs:CreateLogGroup); without it a missing group stops
    /// every task before its container starts. Returns that stop reason, if any.
    fn missing_log_group(&mut self, task_definition: &str) -> Option<String> {
        let td = self.find_task_definition(task_definition)?;
        let mut create = Vec::new();
        let mut missing = None;
        for c in td.doc.get("containerDefinitions")?.as_array()? {
            let Some(log) = c.get("logConfiguration") else {
                continue;
            };
            if opt_str(log, "logDriver") != Some("awslogs") {
                continue;
            }
            let options = log.get("options");
            let Some(group) = options.and_then(|o| opt_str(o, "awslogs-group")) else {
                continue;
            };
            if self.log_groups.contains(group) {
                continue;
            }
            if options.and_then(|o| opt_str(o, "awslogs-create-group")) == Some("true") {
                // The driver creates a missing group only with the execution role's
                // logs:CreateLogGroup, which AmazonECSTaskExecutionRolePolicy does not grant
                // (terraform-aws-modules/terraform-aws-ecs#112): the sandbox's roles are
                // that policy unless a test grants the permission (control API).
                if self.execution_role_creates_log_groups {
                    create.push(group.to_string());
                } else {
                    missing = Some(format!(
                        "ResourceInitializationError: failed to validate logger args: create stream has been retried 1 times: failed to create Cloudwatch log group: AccessDeniedException: User: {role} is not authorized to perform: logs:CreateLogGroup on resource: arn:aws:logs:{region}:{account}:log-group:{group}:log-stream: because no identity-based policy allows the logs:CreateLogGroup action : exit status 1",
                        role = td
                            .doc
                            .get("executionRoleArn")
                            .and_then(Value::as_str)
                            .unwrap_or("(no execution role)"),
                        region = arn_part(&td.doc, 3),
                        account = arn_part(&td.doc, 4),
                    ));
                }
            } else {
                missing = Some(format!(
                    "ResourceInitializationError: failed to validate logger args: create stream has been retried 1 times: failed to create Cloudwatch log stream: ResourceNotFoundException: The specified log group does not exist. : exit status 1 (group {group})"
                ));
            }
        }
        self.log_groups.extend(create);
        missing
    }

    /// Control API and CloudWatch Logs' CreateLogGroup: a log group that exists in the account.
    pub fn create_log_group(&mut self, name: &str) {
        self.log_groups.insert(name.to_string());
    }

    pub(crate) fn has_log_group(&self, name: &str) -> bool {
        self.log_groups.contains(name)
    }

    /// CloudWatch Logs' DeleteLogGroup; false when there was no such group.
    pub(crate) fn delete_log_group(&mut self, name: &str) -> bool {
        self.log_groups.remove(name)
    }

    pub(crate) fn log_group_names(&self) -> impl Iterator<Item = String> + '_ {
        self.log_groups.iter().cloned()
    }

    /// Control API: whether task execution roles may create log groups (logs:CreateLogGroup).
    pub fn set_execution_role_creates_log_groups(&mut self, allowed: bool) {
        self.execution_role_creates_log_groups = allowed;
    }

    fn create_service(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        let name = req_str(input, "serviceName")?.to_string();
        if !valid_name(&name) {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Service name can have up to 255 letters, numbers, underscores, and hyphens.",
            ));
        }
        let client_token = opt_str(input, "clientToken").map(str::to_string);
        if let Some(t) = &client_token
            && (t.is_empty() || t.len() > 36 || !t.bytes().all(|b| (33..=126).contains(&b)))
        {
            // ECS API reference, "Ensuring idempotency": up to 36 ASCII characters 33-126.
            return Err(ApiError::bad(
                "InvalidParameterException",
                "The client token must be 1 to 36 ASCII characters in the range 33-126.",
            ));
        }
        let td_ref = req_str(input, "taskDefinition")?;
        if let Some(td) = self.find_task_definition(td_ref)
            && td.doc.get("networkMode").and_then(Value::as_str) == Some("awsvpc")
            && input.get("networkConfiguration").is_none()
        {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Network Configuration must be provided when networkMode 'awsvpc' is specified.",
            ));
        }
        let td_arn = match self.find_task_definition(td_ref) {
            Some(td) if td.status() == "ACTIVE" => td.arn().to_string(),
            Some(_) => {
                return Err(ApiError::bad(
                    "ClientException",
                    "TaskDefinition is inactive",
                ));
            }
            None => {
                return Err(ApiError::bad(
                    "ClientException",
                    "TaskDefinition not found.",
                ));
            }
        };
        let desired = opt_i64(input, "desiredCount").unwrap_or(0);
        if desired < 0 {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "desiredCount must be at least 0.",
            ));
        }
        let tags = parse_tags(input)?;
        let cluster_arn = self.active_cluster(&cluster_name)?.arn.clone();
        if let Some(existing) = self
            .clusters
            .get(&cluster_name)
            .and_then(|c| c.services.get(&name))
        {
            match existing.status.as_str() {
                // A retry with the first attempt's token gets the service it created.
                "ACTIVE" if client_token.is_some() && existing.client_token == client_token => {
                    let existing = existing.clone();
                    return Ok(json!({ "service": self.service_json(&existing, ctx, false) }));
                }
                "ACTIVE" => {
                    return Err(ApiError::bad(
                        "InvalidParameterException",
                        "Creation of service was not idempotent.",
                    ));
                }
                "DRAINING" => {
                    return Err(ApiError::bad(
                        "InvalidParameterException",
                        "Unable to Start a service that is still Draining.",
                    ));
                }
                _ => {}
            }
        }
        self.check_strategy(&cluster_name, input)?;
        if self.names_managed(input.get("capacityProviderStrategy")) {
            let mode = self
                .find_task_definition(&td_arn)
                .and_then(|td| td.doc.get("networkMode").and_then(Value::as_str))
                .unwrap_or("bridge");
            if mode != "awsvpc" && mode != "host" {
                // Developer Guide, "Amazon ECS Managed Instances": awsvpc and host only.
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    format!(
                        "The network mode {mode} of the task definition is not supported by Amazon ECS Managed Instances. Use awsvpc or host."
                    ),
                ));
            }
            self.check_managed_compatibility(&td_arn)?;
        }
        let mut deployment = self.new_deployment(ctx, &name, &td_arn, desired);
        deployment.unplaced = self.placement_event(&cluster_name, &name, &td_arn, desired);
        let provisioning = deployment.unplaced.is_some()
            && self.provider_fits(
                &cluster_name,
                input.get("capacityProviderStrategy"),
                &td_arn,
            );
        let arn = ctx.arn("ecs", &format!("service/{cluster_name}/{name}"));
        let mut extra = Map::new();
        for key in [
            "networkConfiguration",
            "loadBalancers",
            "serviceRegistries",
            "placementConstraints",
            "placementStrategy",
            "capacityProviderStrategy",
            "platformVersion",
            "healthCheckGracePeriodSeconds",
            "enableECSManagedTags",
            "propagateTags",
            "enableExecuteCommand",
            "role",
        ] {
            if let Some(v) = input.get(key) {
                extra.insert(key.to_string(), v.clone());
            }
        }
        let mut service = Service {
            name: name.clone(),
            arn: arn.clone(),
            cluster_arn,
            status: "ACTIVE".into(),
            desired_count: desired,
            task_definition: td_arn,
            // With a capacity provider strategy the service has no launch type (it is not
            // in DescribeServices); with neither, ECS's default is EC2.
            launch_type: match opt_str(input, "launchType") {
                Some(l) => l.to_string(),
                None if input.get("capacityProviderStrategy").is_some() => String::new(),
                None => "EC2".to_string(),
            },
            scheduling_strategy: opt_str(input, "schedulingStrategy")
                .unwrap_or("REPLICA")
                .to_string(),
            created_at: ctx.now,
            deployment_configuration: deployment_configuration(
                input.get("deploymentConfiguration"),
            ),
            extra,
            deployments: vec![deployment],
            events: Vec::new(),
            inactive_at: None,
            last_completed: None,
            client_token,
        };
        let eid = self.next();
        Self::event(
            &mut service,
            eid,
            ctx.now,
            format!("(service {name}) has started a deployment."),
        );
        // Tasks a capacity provider will launch instances for wait in PROVISIONING without
        // a placement event (Developer Guide, "Amazon ECS managed scaling behavior").
        if let Some(event) = service.deployments[0]
            .unplaced
            .clone()
            .filter(|_| !provisioning)
        {
            let eid = self.next();
            Self::event(&mut service, eid, ctx.now, event);
        }
        self.tags.insert(arn, tags);
        let cluster = self.active_cluster(&cluster_name)?;
        cluster.services.insert(name.clone(), service.clone());
        Ok(json!({ "service": self.service_json(&service, ctx, false) }))
    }

    fn service_mut(&mut self, input: &Value) -> Result<&mut Service, ApiError> {
        let cluster_name = Self::cluster_name(input);
        let name = short_name(req_str(input, "service")?).to_string();
        let cluster = self.active_cluster(&cluster_name)?;
        cluster
            .services
            .get_mut(&name)
            .ok_or_else(|| ApiError::bad("ServiceNotFoundException", "Service not found."))
    }

    fn update_service(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let td_arn = match opt_str(input, "taskDefinition") {
            None => None,
            Some(r) => match self.find_task_definition(r) {
                Some(td) if td.status() == "ACTIVE" => Some(td.arn().to_string()),
                Some(_) => {
                    return Err(ApiError::bad(
                        "ClientException",
                        "TaskDefinition is inactive",
                    ));
                }
                None => {
                    return Err(ApiError::bad(
                        "ClientException",
                        "TaskDefinition not found.",
                    ));
                }
            },
        };
        let force = input
            .get("forceNewDeployment")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let desired = opt_i64(input, "desiredCount");
        if desired.is_some_and(|d| d < 0) {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "desiredCount must be at least 0.",
            ));
        }
        let (name, current_td, current_desired) = {
            let s = self.service_mut(input)?;
            if s.status != "ACTIVE" {
                return Err(ApiError::bad(
                    "ServiceNotActiveException",
                    "Service was not ACTIVE.",
                ));
            }
            // The new deployment rolls with the configuration sent along with it.
            if let Some(dc) = input.get("deploymentConfiguration") {
                s.deployment_configuration = deployment_configuration(Some(dc));
            }
            (s.name.clone(), s.task_definition.clone(), s.desired_count)
        };
        let desired = desired.unwrap_or(current_desired);
        let new_td = td_arn.clone().unwrap_or(current_td.clone());
        // Same task definition and no force: ECS only rescales, no new deployment.
        let cluster_name = Self::cluster_name(input);
        self.check_strategy(&cluster_name, input)?;
        let current_strategy = self
            .clusters
            .get(&cluster_name)
            .and_then(|c| c.services.get(&name))
            .and_then(|s| s.extra.get("capacityProviderStrategy").cloned());
        if let Some(new) = input.get("capacityProviderStrategy")
            && strategy_items(current_strategy.as_ref()) != strategy_items(Some(new))
            && !force
        {
            // pipe-cd/pipecd#6385, kayac/ecspresso#481, reproio/ecs_deploy#75.
            return Err(ApiError::bad(
                "InvalidParameterException",
                "When switching from launch type to capacity provider strategy on an existing service, or making a change to a capacity provider strategy on a service that is already using one, you must force a new deployment.",
            ));
        }
        let strategy = input
            .get("capacityProviderStrategy")
            .cloned()
            .or(current_strategy);
        if (new_td != current_td || force) && self.names_managed(strategy.as_ref()) {
            self.check_managed_compatibility(&new_td)?;
        }
        let mut provisioning = false;
        let deployment = if new_td != current_td || force {
            let mut d = self.new_deployment(ctx, &name, &new_td, desired);
            d.unplaced = self.placement_event(&cluster_name, &name, &new_td, desired);
            provisioning = d.unplaced.is_some()
                && self.provider_fits(&cluster_name, strategy.as_ref(), &new_td);
            Some(d)
        } else {
            None
        };
        let eid = self.next();
        let s = self.service_mut(input)?;
        if let Some(dc) = input.get("deploymentConfiguration") {
            s.deployment_configuration = deployment_configuration(Some(dc));
        }
        for key in ["capacityProviderStrategy", "networkConfiguration"] {
            if let Some(v) = input.get(key) {
                s.extra.insert(key.to_string(), v.clone());
            }
        }
        // A service on a capacity provider strategy has no launch type.
        if input
            .get("capacityProviderStrategy")
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
        {
            s.launch_type = String::new();
        }
        s.desired_count = desired;
        s.task_definition = new_td;
        match deployment {
            Some(d) => {
                for old in &mut s.deployments {
                    if old.status == "PRIMARY" {
                        old.status = "ACTIVE".into();
                        old.updated_at = ctx.now;
                    }
                    if old.replaced_at.is_none() {
                        old.running_when_replaced = Some(deployment_counts(old, ctx.now).0);
                        old.replaced_at = Some(ctx.now);
                    }
                }
                let unplaced = d.unplaced.clone();
                s.deployments.insert(0, d);
                Self::event(
                    s,
                    eid,
                    ctx.now,
                    format!("(service {name}) has started a deployment."),
                );
                if let Some(event) = unplaced.filter(|_| !provisioning) {
                    // Event ids only need to be unique within the service.
                    Self::event(s, eid + 1_000_000, ctx.now, event);
                }
            }
            None => {
                if let Some(primary) = s.deployments.iter_mut().find(|d| d.status == "PRIMARY") {
                    // A rescale of a COMPLETED deployment: the rollout state stays, the tasks
                    // start (or stop) over time, so running lags desired for a while.
                    if primary.rollout_state == "COMPLETED" && primary.desired_count != desired {
                        let running = deployment_counts(primary, ctx.now).0;
                        primary.rescaled = Some((
                            running,
                            ctx.now,
                            ctx.now + ctx.profile.ecs_task_start.as_secs_f64(),
                        ));
                    }
                    primary.desired_count = desired;
                    primary.updated_at = ctx.now;
                }
            }
        }
        let s = s.clone();
        Ok(json!({ "service": self.service_json(&s, ctx, false) }))
    }

    fn describe_services(&self, ctx: &Ctx<'_>, input: &Value) -> Result<Vec<u8>, ApiError> {
        let names = str_list(input, "services");
        if names.is_empty() {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Services cannot be empty.",
            ));
        }
        if names.len() > DESCRIBE_SERVICES_MAX {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "service names can have at most 10 items.",
            ));
        }
        let cluster_name = Self::cluster_name(input);
        let with_tags = include_tags(input);
        let Some(cluster) = self.clusters.get(&cluster_name) else {
            return Err(ApiError::bad(
                "ClusterNotFoundException",
                "Cluster not found.",
            ));
        };
        let mut services = Vec::with_capacity(names.len());
        let mut failures = Vec::new();
        for n in &names {
            match cluster.services.get(short_name(n)) {
                Some(s) => services.push(self.service_view(s, ctx, with_tags)),
                None => failures.push(json!({
                    "arn": if n.starts_with("arn:") { n.clone() } else {
                        ctx.arn("ecs", &format!("service/{cluster_name}/{n}"))
                    },
                    "reason": "MISSING"
                })),
            }
        }
        let out = DescribeServicesOutput { services, failures };
        serde_json::to_vec(&out).map_err(|e| ApiError::new(500, "ServerException", e.to_string()))
    }

    fn list_services(&mut self, input: &Value) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        let launch_type = opt_str(input, "launchType");
        let strategy = opt_str(input, "schedulingStrategy");
        let cluster = self.active_cluster(&cluster_name)?;
        let arns: Vec<String> = cluster
            .services
            .values()
            .filter(|s| s.status != "INACTIVE")
            .filter(|s| launch_type.is_none_or(|l| l == s.launch_type))
            .filter(|s| strategy.is_none_or(|l| l == s.scheduling_strategy))
            .map(|s| s.arn.clone())
            .collect();
        let (items, next) = page(&arns, input, 10)?;
        Ok(json!({ "serviceArns": items, "nextToken": next }))
    }

    fn delete_service(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let force = input.get("force").and_then(Value::as_bool).unwrap_or(false);
        let drain = ctx.profile.ecs_service_drain.as_secs_f64();
        let eid = self.next();
        let s = self.service_mut(input)?;
        if s.status != "ACTIVE" {
            return Err(ApiError::bad(
                "ServiceNotActiveException",
                "Service was not ACTIVE.",
            ));
        }
        if s.desired_count > 0 && !force {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "The service cannot be stopped while it is scaled above 0.",
            ));
        }
        s.status = "DRAINING".into();
        s.desired_count = 0;
        s.inactive_at = Some(ctx.now + drain);
        for d in &mut s.deployments {
            if d.replaced_at.is_none() {
                d.running_when_replaced = Some(deployment_counts(d, ctx.now).0);
                d.replaced_at = Some(ctx.now);
            }
            d.desired_count = 0;
        }
        let name = s.name.clone();
        Self::event(
            s,
            eid,
            ctx.now,
            format!("(service {name}) has begun draining connections on 0 tasks."),
        );
        let s = s.clone();
        Ok(json!({ "service": self.service_json(&s, ctx, false) }))
    }

    fn service_json(&self, s: &Service, ctx: &Ctx<'_>, with_tags: bool) -> Value {
        serde_json::to_value(self.service_view(s, ctx, with_tags)).unwrap_or(Value::Null)
    }

    /// A borrowed view of a service in the DescribeServices shape. DescribeServices is the
    /// hottest read (envctl polls deployments through it), so it serialises straight from
    /// this view instead of building a `serde_json::Value` tree.
    fn service_view<'a>(
        &'a self,
        s: &'a Service,
        ctx: &Ctx<'_>,
        with_tags: bool,
    ) -> ServiceView<'a> {
        let now = ctx.now;
        let (mut running, mut pending) = (0, 0);
        let deployments = s
            .deployments
            .iter()
            .map(|d| {
                let (r, p) = deployment_counts(d, now);
                running += r;
                pending += p;
                DeploymentView {
                    id: &d.id,
                    status: &d.status,
                    task_definition: &d.task_definition,
                    desired_count: d.desired_count,
                    pending_count: p,
                    running_count: r,
                    failed_tasks: d.failed_tasks,
                    created_at: round_ms(d.created_at),
                    updated_at: round_ms(d.updated_at),
                    launch_type: &s.launch_type,
                    rollout_state: &d.rollout_state,
                    rollout_state_reason: &d.rollout_state_reason,
                }
            })
            .collect();
        let events = s
            .events
            .iter()
            .map(|e| EventView {
                id: &e.id,
                created_at: round_ms(e.created_at),
                message: &e.message,
            })
            .collect();
        let tags = with_tags.then(|| {
            self.tags
                .get(&s.arn)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .map(|(k, v)| TagView { key: k, value: v })
                .collect()
        });
        ServiceView {
            service_arn: &s.arn,
            service_name: &s.name,
            cluster_arn: &s.cluster_arn,
            status: &s.status,
            desired_count: s.desired_count,
            running_count: running,
            pending_count: pending,
            launch_type: &s.launch_type,
            task_definition: &s.task_definition,
            deployment_configuration: &s.deployment_configuration,
            deployments,
            events,
            created_at: round_ms(s.created_at),
            scheduling_strategy: &s.scheduling_strategy,
            deployment_controller: DeploymentController { kind: "ECS" },
            created_by: format!("arn:aws:iam::{}:root", ctx.account),
            tags,
            extra: &s.extra,
        }
    }

    // ---- tasks -----------------------------------------------------------------------

    fn run_task(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        let cluster_arn = self.active_cluster(&cluster_name)?.arn.clone();
        let td_ref = req_str(input, "taskDefinition")?;
        let td = self
            .find_task_definition(td_ref)
            .ok_or_else(|| ApiError::bad("ClientException", "TaskDefinition not found."))?;
        let td_arn = td.arn().to_string();
        let family = td
            .doc
            .get("family")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let containers: Vec<String> = td
            .doc
            .get("containerDefinitions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| opt_str(c, "name"))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let count = opt_i64(input, "count").unwrap_or(1);
        if !(1..=10).contains(&count) {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "count must be between 1 and 10.",
            ));
        }
        let launch_type = opt_str(input, "launchType").unwrap_or("EC2");
        if launch_type == "FARGATE" {
            let compatible = td
                .doc
                .get("requiresCompatibilities")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|c| c.as_str() == Some("FARGATE")));
            if !compatible {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Task definition does not support launch_type FARGATE.",
                ));
            }
        }
        if td.doc.get("networkMode").and_then(Value::as_str) == Some("awsvpc")
            && input
                .pointer("/networkConfiguration/awsvpcConfiguration/subnets")
                .and_then(Value::as_array)
                .is_none_or(|a| a.is_empty())
        {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Network Configuration must be provided when networkMode 'awsvpc' is specified.",
            ));
        }
        let environment = engine_environment(&td.doc, input);
        if launch_type == "FARGATE" && !self.take_fargate_launches(ctx.now, count as f64) {
            return Err(ApiError::bad("ThrottlingException", "Rate exceeded"));
        }
        let started_by_group = opt_str(input, "startedBy").map(str::to_string);
        let mut group_size = started_by_group.as_ref().map_or(0, |sb| {
            self.tasks
                .values()
                .filter(|t| t.engine.is_some() && t.started_by.as_ref() == Some(sb))
                .count() as u32
        });
        let tags = parse_tags(input)?;
        let mut out = Vec::new();
        for _ in 0..count {
            let n = self.next();
            let arn = ctx.arn("ecs", &format!("task/{cluster_name}/{n:032x}"));
            let task = Task {
                arn: arn.clone(),
                cluster_arn: cluster_arn.clone(),
                task_definition: td_arn.clone(),
                group: opt_str(input, "group")
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("family:{family}")),
                started_by: opt_str(input, "startedBy").map(str::to_string),
                launch_type: opt_str(input, "launchType").unwrap_or("EC2").to_string(),
                created_at: ctx.now,
                running_at: ctx.now + ctx.profile.ecs_task_start.as_secs_f64(),
                desired_status: "RUNNING".into(),
                stopping_at: None,
                stopped_at: None,
                stopped_reason: None,
                stop_code: None,
                containers: containers.clone(),
                failed: false,
                engine: crate::engines::Engine::from_environment(
                    &environment,
                    ctx.faults.engine_fault(group_size + 1),
                ),
                exit_code: None,
            };
            if task.engine.is_some() {
                group_size += 1;
            }
            self.tags.insert(arn, tags.clone());
            out.push(self.task_json(&task, ctx.now, false));
            self.tasks.insert(task.arn.clone(), task);
        }
        Ok(json!({ "tasks": out, "failures": [] }))
    }

    fn task_json(&self, t: &Task, now: f64, with_tags: bool) -> Value {
        let status = task_status(t, now);
        let containers: Vec<Value> = t
            .containers
            .iter()
            .map(|c| {
                json!({
                    "name": c,
                    "taskArn": t.arn,
                    "lastStatus": status,
                    "exitCode": if status == "STOPPED" { json!(t.exit_code.unwrap_or(if t.failed { 1 } else { 0 })) } else { Value::Null },
                })
            })
            .collect();
        let mut v = json!({
            "taskArn": t.arn,
            "clusterArn": t.cluster_arn,
            "taskDefinitionArn": t.task_definition,
            "group": t.group,
            "lastStatus": status,
            "desiredStatus": t.desired_status,
            "launchType": t.launch_type,
            "createdAt": ts(t.created_at),
            "containers": containers,
        });
        if let Value::Object(o) = &mut v {
            if let Some(sb) = &t.started_by {
                o.insert("startedBy".into(), json!(sb));
            }
            let never_ran = t.engine.as_ref().is_some_and(|e| e.never_starts());
            if !t.failed
                && !never_ran
                && now >= t.running_at
                && t.stopping_at.is_none_or(|s| s > t.running_at)
            {
                o.insert("startedAt".into(), ts(t.running_at));
            }
            if let Some(r) = &t.stopped_reason {
                o.insert("stoppedReason".into(), json!(r));
            }
            if let Some(c) = &t.stop_code {
                o.insert("stopCode".into(), json!(c));
            }
            if let Some(s) = t.stopping_at {
                o.insert("stoppingAt".into(), ts(s));
            }
            if let Some(s) = t.stopped_at {
                o.insert("stoppedAt".into(), ts(s));
            }
            if with_tags {
                o.insert(
                    "tags".into(),
                    tags_json(self.tags.get(&t.arn).map(Vec::as_slice).unwrap_or(&[])),
                );
            }
        }
        v
    }

    fn find_task(&self, cluster: &str, reference: &str) -> Option<&Task> {
        if reference.starts_with("arn:") {
            return self.tasks.get(reference);
        }
        self.tasks
            .values()
            .find(|t| t.arn.ends_with(&format!("/{cluster}/{reference}")))
    }

    fn describe_tasks(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        if !self.clusters.contains_key(&cluster_name) {
            return Err(ApiError::bad(
                "ClusterNotFoundException",
                "Cluster not found.",
            ));
        }
        let refs = str_list(input, "tasks");
        if refs.is_empty() || refs.len() > 100 {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Tasks must contain between 1 and 100 items.",
            ));
        }
        let with_tags = include_tags(input);
        let mut tasks = Vec::new();
        let mut failures = Vec::new();
        for r in &refs {
            match self.find_task(&cluster_name, r) {
                Some(t) => tasks.push(self.task_json(t, ctx.now, with_tags)),
                None => failures.push(json!({"arn": r, "reason": "MISSING"})),
            }
        }
        Ok(json!({ "tasks": tasks, "failures": failures }))
    }

    fn list_tasks(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        let cluster_arn = self.active_cluster(&cluster_name)?.arn.clone();
        let desired = opt_str(input, "desiredStatus").unwrap_or("RUNNING");
        let service = opt_str(input, "serviceName");
        let family = opt_str(input, "family");
        let started_by = opt_str(input, "startedBy");
        let arns: Vec<String> = self
            .tasks
            .values()
            .filter(|t| t.cluster_arn == cluster_arn)
            .filter(|t| {
                let stopped = task_status(t, ctx.now) == "STOPPED" || t.desired_status == "STOPPED";
                if desired == "STOPPED" {
                    stopped
                } else {
                    !stopped
                }
            })
            .filter(|t| service.is_none_or(|s| t.group == format!("service:{s}")))
            .filter(|t| family.is_none_or(|f| t.task_definition.contains(&format!("/{f}:"))))
            .filter(|t| started_by.is_none_or(|s| t.started_by.as_deref() == Some(s)))
            .map(|t| t.arn.clone())
            .collect();
        let (items, next) = page(&arns, input, 100)?;
        Ok(json!({ "taskArns": items, "nextToken": next }))
    }

    fn stop_task(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        self.active_cluster(&cluster_name)?;
        let reference = req_str(input, "task")?;
        let arn = self
            .find_task(&cluster_name, reference)
            .map(|t| t.arn.clone())
            .ok_or_else(|| {
                ApiError::bad(
                    "InvalidParameterException",
                    "The referenced task was not found.",
                )
            })?;
        let reason = opt_str(input, "reason")
            .unwrap_or("Task stopped by user")
            .to_string();
        let Some(task) = self.tasks.get_mut(&arn) else {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "The referenced task was not found.",
            ));
        };
        if task.stopping_at.is_none() {
            task.desired_status = "STOPPED".into();
            task.stopping_at = Some(ctx.now);
            task.stopped_reason = Some(reason);
            task.stop_code = Some("UserInitiated".into());
        }
        let t = task.clone();
        let v = self.task_json(&t, ctx.now, false);
        Ok(json!({ "task": v }))
    }

    // ---- tags ------------------------------------------------------------------------

    fn resource_exists(&self, arn: &str) -> bool {
        if self.tags.contains_key(arn) {
            return true;
        }
        self.clusters.values().any(|c| c.arn == arn)
    }

    fn tag_resource(&mut self, input: &Value) -> Result<Value, ApiError> {
        let arn = req_str(input, "resourceArn")?.to_string();
        if !self.resource_exists(&arn) {
            return Err(ApiError::bad(
                "ResourceNotFoundException",
                "The specified resource could not be found.",
            ));
        }
        let tags = parse_tags(input)?;
        merge_tags(self.tags.entry(arn).or_default(), tags);
        Ok(json!({}))
    }

    fn untag_resource(&mut self, input: &Value) -> Result<Value, ApiError> {
        let arn = req_str(input, "resourceArn")?.to_string();
        if !self.resource_exists(&arn) {
            return Err(ApiError::bad(
                "ResourceNotFoundException",
                "The specified resource could not be found.",
            ));
        }
        let keys = str_list(input, "tagKeys");
        if let Some(tags) = self.tags.get_mut(&arn) {
            tags.retain(|(k, _)| !keys.contains(k));
        }
        Ok(json!({}))
    }

    fn list_tags_for_resource(&mut self, input: &Value) -> Result<Value, ApiError> {
        let arn = req_str(input, "resourceArn")?;
        // ListTagsForResource does not model ResourceNotFoundException (Tag/Untag do).
        if !self.resource_exists(arn) {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "The specified resource could not be found.",
            ));
        }
        let tags = self.tags.get(arn).map(Vec::as_slice).unwrap_or(&[]);
        Ok(json!({ "tags": tags_json(tags) }))
    }

    /// (cluster name, service name) of every ACTIVE service, for synthetic metrics.
    pub fn active_services(&self) -> Vec<(String, String)> {
        self.clusters
            .values()
            .filter(|c| c.status == "ACTIVE")
            .flat_map(|c| {
                c.services
                    .values()
                    .filter(|s| s.status == "ACTIVE")
                    .map(move |s| (c.name.clone(), s.name.clone()))
            })
            .collect()
    }

    pub fn service_exists(&self, cluster: &str, service: &str) -> bool {
        self.clusters
            .get(cluster)
            .and_then(|c| c.services.get(service))
            .is_some_and(|s| s.status == "ACTIVE")
    }

    /// Whether an ACTIVE service's task definition sets an environment variable whose value
    /// contains `needle` (a Kafka cluster's broker host): which clusters are in use, for the
    /// synthetic metrics.
    pub fn any_service_environment_contains(&self, needle: &str) -> bool {
        self.clusters
            .values()
            .flat_map(|cluster| cluster.services.values())
            .filter(|service| service.status == "ACTIVE")
            .filter_map(|service| self.find_task_definition(&service.task_definition))
            .flat_map(|td| {
                td.doc
                    .get("containerDefinitions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .flat_map(|container| {
                container
                    .get("environment")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .filter_map(|variable| variable.get("value").and_then(Value::as_str))
            .any(|value| value.contains(needle))
    }
}

impl TaskDefinition {
    fn status(&self) -> &str {
        self.doc.get("status").and_then(Value::as_str).unwrap_or("")
    }

    fn arn(&self) -> &str {
        self.doc
            .get("taskDefinitionArn")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// `ecs-svc/` followed by 19 digits, as AWS's deployment ids look.
/// The most instances the sandbox lets one Managed Instances provider launch for one
/// deployment (AWS bounds it by the account's EC2 quotas).
const MANAGED_INSTANCES_MAX: usize = 100;

/// The zone of the `n`-th instance a provider launches: round-robin over its subnets, named
/// as the region's zones (a, b, c...), so placement spreads across them as on AWS.
fn managed_zone(ctx: &Ctx<'_>, subnets: &[String], n: usize) -> String {
    let zones = subnets.len().max(1);
    let letter = char::from(b'a' + (n % zones).min(25) as u8);
    format!("{}{letter}", ctx.region)
}

fn deployment_id(n: u64) -> String {
    format!("ecs-svc/{}", 1_000_000_000_000_000_000u64 + n * 7_919)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// RegisterTaskDefinition in `awsvpc` or `host` mode: a `hostPort` other than 0 must equal
/// its `containerPort` (API reference, PortMapping; the wording is the one
/// pulumi/pulumi-awsx#935 and aws/amazon-ecs-cli#1014 quote). 0 is accepted and stored as
/// the container port (`normalise_task_definition`). And `MANAGED_INSTANCES` validates the
/// network mode: awsvpc (its default) or host (Developer Guide, "Amazon ECS task definition
/// parameters for Amazon ECS Managed Instances").
fn check_port_mappings(input: &Value, containers: &[Value]) -> Result<(), ApiError> {
    let mode = opt_str(input, "networkMode");
    if requires(input.get("requiresCompatibilities"), "MANAGED_INSTANCES")
        && mode.is_some_and(|m| m != "awsvpc" && m != "host")
    {
        return Err(ApiError::bad(
            "ClientException",
            format!(
                "Task definition does not support network mode {} with MANAGED_INSTANCES: use awsvpc or host.",
                mode.unwrap_or_default()
            ),
        ));
    }
    let Some(mode) = mode.filter(|m| *m == "awsvpc" || *m == "host") else {
        return Ok(());
    };
    for p in containers
        .iter()
        .filter_map(|c| c.get("portMappings").and_then(Value::as_array))
        .flatten()
    {
        let host = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        let container = p.get("containerPort").and_then(Value::as_i64);
        if host != 0 && Some(host) != container {
            return Err(ApiError::bad(
                "ClientException",
                format!(
                    "When networkMode={mode}, the host ports and container ports in port mappings must match."
                ),
            ));
        }
    }
    Ok(())
}

/// A capacity provider strategy as (provider, weight, base), weight and base defaulting to
/// 0 as ECS stores them: what UpdateService compares to tell a strategy change.
fn strategy_items(strategy: Option<&Value>) -> Vec<(String, i64, i64)> {
    let mut items: Vec<(String, i64, i64)> = strategy
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .map(|i| {
                    (
                        opt_str(i, "capacityProvider")
                            .unwrap_or_default()
                            .to_string(),
                        opt_i64(i, "weight").unwrap_or(0),
                        opt_i64(i, "base").unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    items.sort();
    items
}

/// Whether a task definition's `requiresCompatibilities` names `what`.
fn requires(compatibilities: Option<&Value>, what: &str) -> bool {
    compatibilities
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == what))
}

/// Fills in the defaults ECS adds to a registered task definition, so a client comparing
/// what it sent with what DescribeTaskDefinition returns sees the same differences as on
/// AWS (it must compare a canonical form, not the raw JSON).
fn normalise_task_definition(doc: &mut Map<String, Value>) {
    for key in ["volumes", "placementConstraints"] {
        doc.entry(key).or_insert_with(|| json!([]));
    }
    let network_mode = doc
        .get("networkMode")
        .and_then(Value::as_str)
        .unwrap_or("bridge")
        .to_string();
    doc.entry("networkMode").or_insert_with(|| json!("bridge"));
    let mut compat = vec![json!("EC2")];
    for extra in ["FARGATE", "MANAGED_INSTANCES"] {
        if requires(doc.get("requiresCompatibilities"), extra) {
            compat.push(json!(extra));
        }
    }
    doc.insert("compatibilities".into(), Value::Array(compat));
    doc.entry("requiresAttributes").or_insert_with(|| json!([]));
    if let Some(Value::Array(containers)) = doc.get_mut("containerDefinitions") {
        for c in containers {
            let Value::Object(c) = c else { continue };
            c.entry("cpu").or_insert_with(|| json!(0));
            c.entry("essential").or_insert_with(|| json!(true));
            for key in ["environment", "mountPoints", "volumesFrom", "portMappings"] {
                c.entry(key).or_insert_with(|| json!([]));
            }
            if let Some(Value::Array(ports)) = c.get_mut("portMappings") {
                for p in ports {
                    let Value::Object(p) = p else { continue };
                    p.entry("protocol").or_insert_with(|| json!("tcp"));
                    // In awsvpc and host modes the host port is the container port: absent or
                    // 0, it is stored as such (turnerlabs/terraform-ecs-fargate#11: "ECS
                    // happily makes this transformation"; pulumi/pulumi-awsx#935).
                    if (network_mode == "awsvpc" || network_mode == "host")
                        && let Some(cp) = p.get("containerPort").cloned()
                        && p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                    {
                        p.insert("hostPort".into(), cp);
                    }
                }
            }
        }
    }
}

fn deployment_configuration(given: Option<&Value>) -> Value {
    let mut v = json!({
        "deploymentCircuitBreaker": {"enable": false, "rollback": false},
        "maximumPercent": 200,
        "minimumHealthyPercent": 100,
    });
    if let (Some(Value::Object(given)), Value::Object(out)) = (given, &mut v) {
        for (k, val) in given {
            out.insert(k.clone(), val.clone());
        }
    }
    v
}

fn circuit_breaker(s: &Service) -> (bool, bool) {
    let cb = s.deployment_configuration.get("deploymentCircuitBreaker");
    let get = |k: &str| {
        cb.and_then(|c| c.get(k))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    (get("enable"), get("rollback"))
}

/// (running, pending) of a deployment at `now`: a linear ramp over the task start time
/// for the new one, and the mirror image for the one it replaces.
fn deployment_counts(d: &Deployment, now: f64) -> (i64, i64) {
    if let (Some(from), Some(at)) = (d.running_when_replaced, d.replaced_at) {
        // Draining: ramps down over the same time the replacement ramps up.
        let span = (d.due_at - d.created_at).max(1.0);
        let progress = ((now - at) / span).clamp(0.0, 1.0);
        let running = (from as f64 * (1.0 - progress)).ceil() as i64;
        return (running.min(from), 0);
    }
    if d.fails || d.rollout_state == "FAILED" {
        return (
            0,
            if d.rollout_state == "FAILED" {
                0
            } else {
                d.desired_count
            },
        );
    }
    if d.rollout_state == "COMPLETED" {
        if let Some((from, at, due)) = d.rescaled
            && now < due
        {
            let progress = ((now - at) / (due - at).max(1e-9)).clamp(0.0, 1.0);
            let delta = ((d.desired_count - from) as f64 * progress).trunc() as i64;
            let running = from + delta;
            return (running, (d.desired_count - running).max(0));
        }
        return (d.desired_count, 0);
    }
    if d.unplaced.is_some() {
        return (0, 0);
    }
    let span = (d.due_at - d.created_at).max(1e-9);
    let progress = ((now - d.created_at) / span).clamp(0.0, 1.0);
    let running = (d.desired_count as f64 * progress).floor() as i64;
    (running, d.desired_count - running)
}

/// The container environment a task runs with: the task definition's first container's,
/// overridden by RunTask's `overrides.containerOverrides[0].environment`.
fn engine_environment(td: &Map<String, Value>, input: &Value) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let mut add = |list: Option<&Value>| {
        for item in list.and_then(Value::as_array).into_iter().flatten() {
            if let (Some(k), Some(v)) = (opt_str(item, "name"), opt_str(item, "value")) {
                env.insert(k.to_string(), v.to_string());
            }
        }
    };
    add(td
        .get("containerDefinitions")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("environment")));
    add(input.pointer("/overrides/containerOverrides/0/environment"));
    env
}

impl EcsState {
    /// Fargate's task launch bucket (`envctl_aws_model::engine::FARGATE_TASK_LAUNCHES`):
    /// takes `n` launches at `now`, or none when fewer are left.
    fn take_fargate_launches(&mut self, now: f64, n: f64) -> bool {
        let (burst, rate) = envctl_aws_model::engine::FARGATE_TASK_LAUNCHES;
        let (tokens, at) = self.fargate_launches.unwrap_or((burst, now));
        let tokens = (tokens + (now - at).max(0.0) * rate).min(burst);
        if tokens + 1e-9 >= n {
            self.fargate_launches = Some((tokens - n, now.max(at)));
            true
        } else {
            self.fargate_launches = Some((tokens, now.max(at)));
            false
        }
    }

    /// Advances the emulated load engines to `now`; returns the objects they put into S3.
    pub fn settle_engines(
        &mut self,
        ctx: &Ctx<'_>,
        store: &dyn crate::engines::ObjectStore,
    ) -> Vec<(String, String, Vec<u8>)> {
        let mut objects = Vec::new();
        for task in self.tasks.values_mut() {
            let (arn, running_at, stopping_at) =
                (task.arn.clone(), task.running_at, task.stopping_at);
            let Some(engine) = task.engine.as_mut() else {
                continue;
            };
            let Some(end) = engine.settle(&arn, ctx.now, running_at, stopping_at, store) else {
                continue;
            };
            objects.extend(end.objects);
            task.exit_code = Some(end.exit_code);
            if task.stopping_at.is_none() {
                task.desired_status = "STOPPED".into();
                task.stopping_at = Some(end.at);
                task.stopped_reason = Some("Essential container in task exited".into());
                task.stop_code = Some("EssentialContainerExited".into());
                // The task drains; settle() marks it STOPPED after ecs_task_stop.
                self.next_due = 0.0;
            }
        }
        objects
    }
}

fn task_status(t: &Task, now: f64) -> &'static str {
    if t.stopped_at.is_some() {
        return "STOPPED";
    }
    if t.stopping_at.is_some() {
        return "DEACTIVATING";
    }
    if t.failed {
        return "STOPPED";
    }
    if t.engine.as_ref().is_some_and(|e| e.never_starts()) {
        return "PROVISIONING";
    }
    if now >= t.running_at {
        "RUNNING"
    } else if now >= t.created_at + (t.running_at - t.created_at) / 2.0 {
        "PENDING"
    } else {
        "PROVISIONING"
    }
}

/// Threshold of failed tasks at which the circuit breaker trips: half the desired count, at
/// least 3, at most 200 (ECS developer guide, "How the Amazon ECS deployment circuit breaker
/// detects failures").
fn failure_threshold(desired: i64) -> i64 {
    ((desired as f64 * 0.5).ceil() as i64).clamp(3, 200)
}

fn settle_service(
    ctx: &Ctx<'_>,
    s: &mut Service,
    seq: &mut u64,
    new_tasks: &mut Vec<Task>,
    next_due: &mut f64,
) {
    let now = ctx.now;
    if s.status == "DRAINING" {
        match s.inactive_at {
            Some(at) if at <= now && !ctx.faults.is_stuck("ecs", &s.name, "DRAINING") => {
                s.status = "INACTIVE".into();
                s.deployments.clear();
                s.inactive_at = None;
            }
            Some(at) => *next_due = next_due.min(at),
            None => {}
        }
        return;
    }
    if s.status != "ACTIVE" {
        return;
    }
    // Loop: a failure can start a rollback deployment that is itself due later.
    for _ in 0..4 {
        let Some(idx) = s.deployments.iter().position(|d| d.status == "PRIMARY") else {
            return;
        };
        let d = &s.deployments[idx];
        if d.rollout_state != "IN_PROGRESS" || d.unplaced.is_some() {
            // Unplaced tasks never start: the deployment waits for capacity.
            return;
        }
        if d.due_at > now || ctx.faults.is_stuck("ecs", &s.name, "IN_PROGRESS") {
            *next_due = next_due.min(d.due_at);
            return;
        }
        let primary = d.clone();
        let (cb_enable, cb_rollback) = circuit_breaker(s);
        let at = primary.due_at;
        let name = s.name.clone();
        let short_id = primary.id.trim_start_matches("ecs-svc/").to_string();
        if !primary.fails {
            let d = &mut s.deployments[idx];
            d.rollout_state = "COMPLETED".into();
            d.rollout_state_reason = format!("ECS deployment ecs-svc/{short_id} completed.");
            d.updated_at = at;
            // Drained deployments disappear from `deployments`, as on AWS.
            s.deployments.retain(|d| d.status == "PRIMARY");
            s.last_completed = Some((primary.id.clone(), primary.task_definition.clone()));
            *seq += 1;
            EcsState::event(
                s,
                *seq,
                at,
                format!(
                    "(service {name}) (deployment {}) deployment completed.",
                    primary.id
                ),
            );
            *seq += 1;
            EcsState::event(
                s,
                *seq,
                at,
                format!("(service {name}) has reached a steady state."),
            );
            continue;
        }
        // Tasks fail to start. Record stopped tasks so DescribeTasks shows the reason.
        let threshold = failure_threshold(primary.desired_count);
        for _ in 0..threshold.min(10) {
            *seq += 1;
            let cluster = s
                .cluster_arn
                .rsplit('/')
                .next()
                .unwrap_or("default")
                .to_string();
            new_tasks.push(Task {
                arn: ctx.arn("ecs", &format!("task/{cluster}/{:032x}", *seq)),
                cluster_arn: s.cluster_arn.clone(),
                task_definition: primary.task_definition.clone(),
                group: format!("service:{name}"),
                started_by: Some(primary.id.clone()),
                launch_type: s.launch_type.clone(),
                created_at: primary.created_at,
                running_at: at,
                desired_status: "STOPPED".into(),
                stopping_at: Some(at),
                stopped_at: Some(at),
                stopped_reason: Some(
                    primary
                        .stop_reason
                        .clone()
                        .unwrap_or_else(|| "Essential container in task exited".to_string()),
                ),
                stop_code: Some(
                    if primary.stop_reason.is_some() {
                        "TaskFailedToStart"
                    } else {
                        "EssentialContainerExited"
                    }
                    .into(),
                ),
                containers: vec!["app".into()],
                failed: true,
                engine: None,
                exit_code: None,
            });
        }
        if !cb_enable {
            // Without the circuit breaker ECS keeps launching tasks that keep failing.
            let d = &mut s.deployments[idx];
            d.failed_tasks += threshold;
            d.due_at = at + ctx.profile.ecs_task_start.as_secs_f64();
            d.updated_at = at;
            *seq += 1;
            EcsState::event(
                s,
                *seq,
                at,
                format!("(service {name}) is unable to consistently start tasks successfully."),
            );
            continue;
        }
        {
            let d = &mut s.deployments[idx];
            d.failed_tasks = threshold;
            d.rollout_state = "FAILED".into();
            d.rollout_state_reason =
                "ECS deployment circuit breaker: tasks failed to start.".into();
            d.updated_at = at;
        }
        *seq += 1;
        EcsState::event(
            s,
            *seq,
            at,
            format!(
                "(service {name}) (deployment {}) deployment failed: tasks failed to start.",
                primary.id
            ),
        );
        let target = s.last_completed.clone();
        match (cb_rollback, target) {
            (true, Some((old_id, old_td))) => {
                *seq += 1;
                let n = *seq;
                *seq += 1;
                EcsState::event(
                    s,
                    *seq,
                    at,
                    format!("(service {name}) rolling back to deployment {old_id}."),
                );
                for d in &mut s.deployments {
                    if d.status == "PRIMARY" {
                        d.status = "ACTIVE".into();
                    }
                    if d.replaced_at.is_none() {
                        d.running_when_replaced = Some(0);
                        d.replaced_at = Some(at);
                    }
                }
                let id = deployment_id(n);
                let rollback = Deployment {
                    id: id.clone(),
                    status: "PRIMARY".into(),
                    task_definition: old_td.clone(),
                    desired_count: s.desired_count,
                    created_at: at,
                    updated_at: at,
                    rollout_state: "IN_PROGRESS".into(),
                    rollout_state_reason: format!(
                        "ECS deployment circuit breaker: rolling back to deploymentId {old_id}."
                    ),
                    due_at: at + ctx.profile.ecs_task_start.as_secs_f64(),
                    // The previous revision is known to start.
                    fails: false,
                    stop_reason: None,
                    failed_tasks: 0,
                    running_when_replaced: None,
                    replaced_at: None,
                    unplaced: None,
                    rescaled: None,
                };
                s.task_definition = old_td;
                s.deployments.insert(0, rollback);
            }
            _ => return,
        }
    }
}

/// A field of a task definition's ARN (3: Region, 4: account).
fn arn_part(doc: &Map<String, Value>, n: usize) -> &str {
    doc.get("taskDefinitionArn")
        .and_then(Value::as_str)
        .and_then(|a| a.split(':').nth(n))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_managed_instances_update_refuses_what_only_creation_sets() {
        let role = "arn:aws:iam::1:role/r";
        let ok = json!({"infrastructureRoleArn": role,
            "instanceLaunchTemplate": {"instanceRequirements": {"vCpuCount": {"min": 4}, "memoryMiB": {"min": 16384}}}});
        assert!(check_managed_update(&ok).is_ok());
        let code =
            |v: Value| check_managed_update(&v).map_err(|e| format!("{}: {}", e.code, e.message));
        // Not a member of InstanceLaunchTemplateUpdate.
        let spot = code(json!({"infrastructureRoleArn": role,
            "instanceLaunchTemplate": {"capacityOptionType": "SPOT"}}));
        assert!(spot.is_err_and(|e| e.contains("capacityOptionType")));
        // infrastructureRoleArn is required.
        let no_role = code(json!({"instanceLaunchTemplate": {}}));
        assert!(no_role.is_err_and(|e| e.contains("infrastructureRoleArn")));
        // As for CreateCapacityProvider: requirements need their minimums.
        let no_min = code(json!({"infrastructureRoleArn": role,
            "instanceLaunchTemplate": {"instanceRequirements": {"vCpuCount": {}}}}));
        assert!(no_min.is_err_and(|e| e.contains("vCpuCount.min")));
    }

    #[test]
    fn an_update_merges_the_launch_template_member_by_member() {
        let mut config = json!({"infrastructureRoleArn": "a",
            "instanceLaunchTemplate": {"ec2InstanceProfileArn": "p", "networkConfiguration": {"subnets": ["s1"]}}});
        merge_members(
            &mut config,
            &json!({"infrastructureRoleArn": "b",
                "instanceLaunchTemplate": {"networkConfiguration": {"subnets": ["s2"]}}}),
            &["instanceLaunchTemplate"],
        );
        assert_eq!(
            config,
            json!({"infrastructureRoleArn": "b",
                "instanceLaunchTemplate": {"ec2InstanceProfileArn": "p", "networkConfiguration": {"subnets": ["s2"]}}})
        );
    }

    fn deployment(desired: i64) -> Deployment {
        Deployment {
            id: deployment_id(1),
            status: "PRIMARY".into(),
            task_definition: "td".into(),
            desired_count: desired,
            created_at: 100.0,
            updated_at: 100.0,
            rollout_state: "IN_PROGRESS".into(),
            rollout_state_reason: String::new(),
            due_at: 140.0,
            fails: false,
            stop_reason: None,
            failed_tasks: 0,
            running_when_replaced: None,
            replaced_at: None,
            unplaced: None,
            rescaled: None,
        }
    }

    #[test]
    fn a_deployment_ramps_up_and_its_predecessor_drains() {
        let d = deployment(4);
        assert_eq!(deployment_counts(&d, 100.0), (0, 4));
        assert_eq!(deployment_counts(&d, 120.0), (2, 2));
        assert_eq!(deployment_counts(&d, 200.0), (4, 0));
        let mut old = deployment(4);
        old.running_when_replaced = Some(4);
        old.replaced_at = Some(100.0);
        assert_eq!(deployment_counts(&old, 120.0), (2, 0));
        assert_eq!(deployment_counts(&old, 140.0), (0, 0));
    }

    #[test]
    fn circuit_breaker_threshold_is_half_the_desired_count_within_3_and_200() {
        assert_eq!(failure_threshold(1), 3);
        assert_eq!(failure_threshold(10), 5);
        assert_eq!(failure_threshold(1000), 200);
    }

    #[test]
    fn deployment_ids_look_like_aws() {
        let id = deployment_id(42);
        assert!(id.starts_with("ecs-svc/"));
        assert_eq!(id.len(), "ecs-svc/".len() + 19);
        assert!(id[8..].chars().all(|c| c.is_ascii_digit()));
    }

    #[test]
    fn registered_task_definitions_get_ecs_defaults() {
        let mut doc = json!({
            "family": "f",
            "networkMode": "awsvpc",
            "containerDefinitions": [{"name": "a", "image": "i", "portMappings": [{"containerPort": 8080}]}]
        });
        let Value::Object(map) = &mut doc else {
            unreachable!("literal object")
        };
        normalise_task_definition(map);
        let c = &doc["containerDefinitions"][0];
        assert_eq!(c["essential"], true);
        assert_eq!(c["cpu"], 0);
        assert_eq!(c["environment"], json!([]));
        assert_eq!(c["portMappings"][0]["hostPort"], 8080);
        assert_eq!(c["portMappings"][0]["protocol"], "tcp");
        assert_eq!(doc["compatibilities"], json!(["EC2"]));
    }
}
