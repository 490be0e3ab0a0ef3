//! ECS standalone tasks: RunTask, Describe/List/StopTask, and a task's lastStatus over
//! virtual time.

use super::*;
use envctl_aws_model::status::TaskStatus;

/// RunTask's client token: at most 64 ASCII characters (33-126), honoured for 24 hours
/// (ECS API Reference, RunTask `clientToken`; "Ensuring idempotency").
const RUN_TASK_TOKEN_MAX: usize = 64;
const RUN_TASK_TOKEN_TTL_S: f64 = 24.0 * 3600.0;

/// What a RunTask with a client token did: the request (without the token) and the tasks
/// it started.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct RunTaskToken {
    request: String,
    tasks: Vec<String>,
    at: f64,
}

/// Fargate's largest `stopTimeout`, seconds.
const FARGATE_MAX_STOP_TIMEOUT_S: i64 = 120;

/// The longest `stopTimeout` of a task definition's containers (0 when none sets one).
fn containers_stop_timeout(td: &Map<String, Value>) -> i64 {
    td.get("containerDefinitions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| opt_i64(c, "stopTimeout"))
        .max()
        .unwrap_or(0)
}

fn request_without_token(input: &Value) -> String {
    let mut request = input.clone();
    if let Some(map) = request.as_object_mut() {
        map.remove("clientToken");
    }
    request.to_string()
}

impl EcsState {
    // ---- tasks -----------------------------------------------------------------------

    pub(super) fn run_task(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
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
        if let Some(tasks) = self.run_task_retried(ctx, &cluster_arn, input)? {
            return Ok(tasks);
        }
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
            // "For tasks that use the Fargate launch type, the max stop timeout value is
            // 120 seconds" (ContainerDefinition `stopTimeout`).
            if containers_stop_timeout(&td.doc) > FARGATE_MAX_STOP_TIMEOUT_S {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Invalid stopTimeout: the maximum for tasks on Fargate is 120 seconds.",
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
        if let Some(token) = opt_str(input, "clientToken") {
            let tasks = out
                .iter()
                .filter_map(|t| opt_str(t, "taskArn").map(str::to_string))
                .collect();
            self.run_task_tokens.insert(
                format!("{cluster_arn} {token}"),
                RunTaskToken {
                    request: request_without_token(input),
                    tasks,
                    at: ctx.now,
                },
            );
        }
        Ok(json!({ "tasks": out, "failures": [] }))
    }

    /// A RunTask whose client token this cluster saw in the last 24 hours: the same request
    /// gets the tasks of the first back, as they are now, and starts nothing; the token with
    /// another request is a ConflictException ("Ensuring idempotency", ECS_Idempotency:
    /// "If you retry a successful request using the same client token, but one or more of
    /// the parameters are different, other than the Region or Availability Zone, the retry
    /// fails with a ConflictException"; the token's time to live is 24 hours).
    fn run_task_retried(
        &self,
        ctx: &Ctx<'_>,
        cluster_arn: &str,
        input: &Value,
    ) -> Result<Option<Value>, ApiError> {
        let Some(token) = opt_str(input, "clientToken") else {
            return Ok(None);
        };
        if token.is_empty()
            || token.len() > RUN_TASK_TOKEN_MAX
            || !token.bytes().all(|b| (33..=126).contains(&b))
        {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "clientToken must be 1 to 64 ASCII characters in the range 33-126.",
            ));
        }
        let key = format!("{cluster_arn} {token}");
        let Some(seen) = self
            .run_task_tokens
            .get(&key)
            .filter(|seen| ctx.now - seen.at < RUN_TASK_TOKEN_TTL_S)
        else {
            return Ok(None);
        };
        if seen.request != request_without_token(input) {
            return Err(ApiError::bad(
                "ConflictException",
                "The request uses the same client token as a previous, but non-identical request. Do not reuse a client token with different requests, unless the requests are identical.",
            ));
        }
        let tasks: Vec<Value> = seen
            .tasks
            .iter()
            .filter_map(|arn| self.tasks.get(arn))
            .map(|t| self.task_json(t, ctx.now, false))
            .collect();
        Ok(Some(json!({ "tasks": tasks, "failures": [] })))
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
                    "exitCode": if status == TaskStatus::Stopped { json!(t.exit_code.unwrap_or(if t.failed { 1 } else { 0 })) } else { Value::Null },
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

    pub(super) fn describe_tasks(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
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

    pub(super) fn list_tasks(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
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
                let stopped = task_status(t, ctx.now) == TaskStatus::Stopped
                    || t.desired_status == TaskStatus::Stopped;
                if desired == TaskStatus::Stopped {
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

    pub(super) fn stop_task(&mut self, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
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

pub(super) fn task_status(t: &Task, now: f64) -> &'static str {
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
