//! The ECS request dispatch: which handler answers each operation, and the resource a
//! request names for the request log.

use super::*;

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
