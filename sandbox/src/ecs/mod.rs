//! Amazon ECS (awsJson1.1): clusters, task definitions, services with rolling deployments
//! and the deployment circuit breaker, standalone tasks, tags.
//!
//! Service tasks are not materialised one by one: a deployment's running/pending counts are
//! a function of virtual time (a linear ramp over `ecs_task_start`). Only tasks started by
//! RunTask and the stopped tasks of a failed deployment exist as task records.
//!
//! This module holds the state (`EcsState` and its records) and the helpers every part uses;
//! each sub-domain lives in a file of its own, as methods on `EcsState`:
//! [`dispatch`] (which handler answers an operation), [`clusters`], [`capacity_providers`],
//! [`instances`] (container instances and placement), [`task_definitions`], [`services`],
//! [`deployments`], [`tasks`], [`tags`] and [`time`] (the pass that applies due transitions).

mod capacity_providers;
mod clusters;
mod deployments;
mod dispatch;
mod instances;
mod services;
mod tags;
mod task_definitions;
mod tasks;
mod time;

pub use dispatch::{handle, resource_of};

use crate::json_input::{opt_i64, opt_str, req_str, str_list};
use crate::paging::{decode_token, encode_token};
use crate::protocol::ApiError;
use crate::state::{Ctx, World};
use crate::tags::merge_tags;
use envctl_aws_model::placement::{
    self, AGENT_RESERVED_PORTS, ContainerInstance, ContainerNeeds, HostPort, PortMode, Protocol,
    TaskNeeds,
};
use envctl_aws_model::status::ClusterStatus;
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
    /// RunTask's client tokens, by `<cluster ARN> <token>` (`tasks::RunTaskToken`): a retry
    /// with the same token and request gets the same tasks back (ECS_Idempotency).
    #[serde(default)]
    run_task_tokens: BTreeMap<String, tasks::RunTaskToken>,
    /// When the service-linked role became assumable, once the first CreateCluster made it
    /// (only with `ecs_service_linked_role` set in the duration profile).
    #[serde(default)]
    service_linked_role_at: Option<f64>,
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

    /// ECS's eventual consistency right after CreateCluster: a cluster younger than
    /// `ecs_cluster_propagation` is not found yet by calls that name it.
    fn check_cluster_visible(&self, ctx: &Ctx<'_>, name: &str) -> Result<(), ApiError> {
        let young = self.clusters.get(name).is_some_and(|c| {
            ctx.now < c.created_at + ctx.profile.ecs_cluster_propagation.as_secs_f64()
        });
        if young {
            return Err(ApiError::bad(
                "ClusterNotFoundException",
                "Cluster not found.",
            ));
        }
        Ok(())
    }

    fn active_cluster(&mut self, name: &str) -> Result<&mut Cluster, ApiError> {
        match self.clusters.get_mut(name) {
            Some(c) if c.status == ClusterStatus::Active => Ok(c),
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
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
