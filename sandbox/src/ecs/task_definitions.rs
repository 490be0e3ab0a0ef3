//! ECS task definitions: Register/Describe/List/Deregister/DeleteTaskDefinitions, the
//! defaults ECS fills in and the port-mapping rules it enforces.

use super::*;
use envctl_aws_model::status::TaskDefinitionStatus;

impl EcsState {
    // ---- task definitions ------------------------------------------------------------

    /// Resolves `family`, `family:revision` or a task definition ARN.
    pub(super) fn find_task_definition(&self, reference: &str) -> Option<&TaskDefinition> {
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
                .find(|td| td.status() == TaskDefinitionStatus::Active),
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

    pub(super) fn register_task_definition(
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

    pub(super) fn describe_task_definition(&mut self, input: &Value) -> Result<Value, ApiError> {
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

    pub(super) fn list_task_definitions(&mut self, input: &Value) -> Result<Value, ApiError> {
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

    pub(super) fn deregister_task_definition(
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
        if td.status() == TaskDefinitionStatus::Active {
            td.doc.insert("status".into(), json!("INACTIVE"));
            td.doc.insert("deregisteredAt".into(), ts(ctx.now));
        }
        Ok(json!({ "taskDefinition": td.doc }))
    }

    pub(super) fn delete_task_definitions(&mut self, input: &Value) -> Result<Value, ApiError> {
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
                Some(td) if td.status() == TaskDefinitionStatus::Active => failures.push(json!({
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
}

impl TaskDefinition {
    pub(super) fn status(&self) -> &str {
        self.doc.get("status").and_then(Value::as_str).unwrap_or("")
    }

    pub(super) fn arn(&self) -> &str {
        self.doc
            .get("taskDefinitionArn")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
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

/// Whether a task definition's `requiresCompatibilities` names `what`.
pub(super) fn requires(compatibilities: Option<&Value>, what: &str) -> bool {
    compatibilities
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == what))
}

/// Fills in the defaults ECS adds to a registered task definition, so a client comparing
/// what it sent with what DescribeTaskDefinition returns sees the same differences as on
/// AWS (it must compare a canonical form, not the raw JSON).
pub(super) fn normalise_task_definition(doc: &mut Map<String, Value>) {
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

/// A field of a task definition's ARN (3: Region, 4: account).
pub(super) fn arn_part(doc: &Map<String, Value>, n: usize) -> &str {
    doc.get("taskDefinitionArn")
        .and_then(Value::as_str)
        .and_then(|a| a.split(':').nth(n))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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
