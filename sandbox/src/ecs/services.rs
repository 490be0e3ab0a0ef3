//! ECS services: Create/Update/Describe/List/DeleteService, the deployment each change
//! starts, the awslogs log-group check, and the DescribeServices view.

use super::deployments::deployment_counts;
use super::task_definitions::arn_part;
use super::*;
use envctl_aws_model::status::{
    ClusterStatus, DeploymentStatus, RolloutState, ServiceStatus, TaskDefinitionStatus,
};

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

    pub(super) fn create_service(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        self.check_cluster_visible(ctx, &cluster_name)?;
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
            Some(td) if td.status() == TaskDefinitionStatus::Active => td.arn().to_string(),
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
            match ServiceStatus::parse(&existing.status) {
                // A retry with the first attempt's token gets the service it created.
                ServiceStatus::Active
                    if client_token.is_some() && existing.client_token == client_token =>
                {
                    let existing = existing.clone();
                    return Ok(json!({ "service": self.service_json(&existing, ctx, false) }));
                }
                ServiceStatus::Active => {
                    return Err(ApiError::bad(
                        "InvalidParameterException",
                        "Creation of service was not idempotent.",
                    ));
                }
                ServiceStatus::Draining => {
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

    pub(super) fn update_service(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let td_arn = match opt_str(input, "taskDefinition") {
            None => None,
            Some(r) => match self.find_task_definition(r) {
                Some(td) if td.status() == TaskDefinitionStatus::Active => {
                    Some(td.arn().to_string())
                }
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
            if s.status != ServiceStatus::Active {
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
                    if old.status == DeploymentStatus::Primary {
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
                if let Some(primary) = s
                    .deployments
                    .iter_mut()
                    .find(|d| d.status == DeploymentStatus::Primary)
                {
                    // A rescale of a COMPLETED deployment: the rollout state stays, the tasks
                    // start (or stop) over time, so running lags desired for a while.
                    if primary.rollout_state == RolloutState::Completed
                        && primary.desired_count != desired
                    {
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

    pub(super) fn describe_services(
        &self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Vec<u8>, ApiError> {
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

    pub(super) fn list_services(&mut self, input: &Value) -> Result<Value, ApiError> {
        let cluster_name = Self::cluster_name(input);
        let launch_type = opt_str(input, "launchType");
        let strategy = opt_str(input, "schedulingStrategy");
        let cluster = self.active_cluster(&cluster_name)?;
        let arns: Vec<String> = cluster
            .services
            .values()
            .filter(|s| s.status != ServiceStatus::Inactive)
            .filter(|s| launch_type.is_none_or(|l| l == s.launch_type))
            .filter(|s| strategy.is_none_or(|l| l == s.scheduling_strategy))
            .map(|s| s.arn.clone())
            .collect();
        let (items, next) = page(&arns, input, 10)?;
        Ok(json!({ "serviceArns": items, "nextToken": next }))
    }

    pub(super) fn delete_service(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let force = input.get("force").and_then(Value::as_bool).unwrap_or(false);
        let drain = ctx.profile.ecs_service_drain.as_secs_f64();
        let eid = self.next();
        let s = self.service_mut(input)?;
        if s.status != ServiceStatus::Active {
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
}

impl EcsState {
    /// (cluster name, service name) of every ACTIVE service, for synthetic metrics.
    pub fn active_services(&self) -> Vec<(String, String)> {
        self.clusters
            .values()
            .filter(|c| c.status == ClusterStatus::Active)
            .flat_map(|c| {
                c.services
                    .values()
                    .filter(|s| s.status == ServiceStatus::Active)
                    .map(move |s| (c.name.clone(), s.name.clone()))
            })
            .collect()
    }

    pub fn service_exists(&self, cluster: &str, service: &str) -> bool {
        self.clusters
            .get(cluster)
            .and_then(|c| c.services.get(service))
            .is_some_and(|s| s.status == ServiceStatus::Active)
    }

    /// Whether an ACTIVE service's task definition sets an environment variable whose value
    /// contains `needle` (a Kafka cluster's broker host): which clusters are in use, for the
    /// synthetic metrics.
    pub fn any_service_environment_contains(&self, needle: &str) -> bool {
        self.clusters
            .values()
            .flat_map(|cluster| cluster.services.values())
            .filter(|service| service.status == ServiceStatus::Active)
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

pub(super) fn deployment_id(n: u64) -> String {
    format!("ecs-svc/{}", 1_000_000_000_000_000_000u64 + n * 7_919)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_ids_look_like_aws() {
        let id = deployment_id(42);
        assert!(id.starts_with("ecs-svc/"));
        assert_eq!(id.len(), "ecs-svc/".len() + 19);
        assert!(id[8..].chars().all(|c| c.is_ascii_digit()));
    }
}
