//! What `gc` reads besides clusters, services and instances: the resources an environment
//! leaves behind when its run died or its destroy was cut short, found by their ownership
//! marks across the account and Region. Each list call carries no tags, so each candidate's
//! tags are read one by one (paced like every call).
use super::Reads;
use crate::aws::{AwsError, Clients, ecs, kafka, paced, rds};
use crate::exec::{Clock, Operation, RateLimits};
use crate::model::live::Tags;
use crate::model::tag;
use crate::plan::gc::{Leftover, Leftovers};
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::{EcsOp, KafkaOp, LogsOp, RdsOp, SecretsManagerOp};
use envctl_aws_model::status::CapacityProviderStatus;

/// Only resources marked `envctl:tool=envctl` are kept: gc's filter then decides by env
/// and expiry.
fn envctls(tags: &Tags) -> bool {
    tags.get(tag::TOOL).map(String::as_str) == Some(tag::TOOL_VALUE)
}

/// The env an MSK configuration's description names (`envctl:env=<env> ...`): its only
/// ownership mark, since configurations take no tags.
fn configuration_env(description: &str) -> Option<&str> {
    description
        .strip_prefix("envctl:env=")?
        .split_whitespace()
        .next()
}

pub async fn read(reads: &Reads) -> Result<Leftovers, AwsError> {
    let (clients, clock, limits) = (&reads.clients, reads.clock.as_ref(), reads.limits.as_ref());
    let mut out = Leftovers::default();
    // Task-definition revisions, registered (ACTIVE) or only deregistered (INACTIVE: a
    // destroy cut short between DeregisterTaskDefinition and DeleteTaskDefinitions).
    for status in [
        aws_sdk_ecs::types::TaskDefinitionStatus::Active,
        aws_sdk_ecs::types::TaskDefinitionStatus::Inactive,
    ] {
        let arns = paced::call(
            clock,
            limits,
            "*",
            Operation::Ecs(EcsOp::ListTaskDefinitions),
            || ecs::list_all_task_definitions(&clients.ecs, status.clone()),
        )
        .await?;
        for arn in arns {
            let described = paced::call(
                clock,
                limits,
                &arn,
                Operation::Ecs(EcsOp::DescribeTaskDefinition),
                || ecs::describe_task_definition_tagged(&clients.ecs, &arn),
            )
            .await;
            let (td, tags) = match described {
                Ok(found) => found,
                // Deleted since it was listed.
                Err(e) if e.is_code(ErrorCode::ClientException) => continue,
                Err(e) => return Err(e),
            };
            if envctls(&tags) {
                out.task_definitions.push(Leftover {
                    name: td.family,
                    arn,
                    tags,
                });
            }
        }
    }
    let configurations = paced::call(
        clock,
        limits,
        "kafka",
        Operation::Kafka(KafkaOp::ListConfigurations),
        || kafka::list_configurations(&clients.kafka),
    )
    .await?;
    for (name, arn, _, description) in configurations {
        if let Some(env) = configuration_env(&description) {
            let tags = Tags::from([
                (tag::TOOL.to_string(), tag::TOOL_VALUE.to_string()),
                (tag::ENV.to_string(), env.to_string()),
            ]);
            out.kafka_configurations.push(Leftover { name, arn, tags });
        }
    }
    let groups = paced::call(
        clock,
        limits,
        "rds",
        Operation::Rds(RdsOp::DescribeDBParameterGroups),
        || rds::list_parameter_groups(&clients.rds),
    )
    .await?;
    // RDS's own `default.*` groups cannot be tagged as envctl's; skip their reads.
    let groups = groups
        .into_iter()
        .filter(|(n, _)| !n.starts_with("default."));
    out.db_parameter_groups = owned_by_tags(clients, clock, limits, groups).await?;
    let groups = paced::call(
        clock,
        limits,
        "rds",
        Operation::Rds(RdsOp::DescribeDBSubnetGroups),
        || rds::list_subnet_groups(&clients.rds),
    )
    .await?;
    let groups = groups.into_iter().filter(|(n, _)| n != "default");
    out.db_subnet_groups = owned_by_tags(clients, clock, limits, groups).await?;
    out.secrets = paced::call(
        clock,
        limits,
        "secretsmanager",
        Operation::SecretsManager(SecretsManagerOp::ListSecrets),
        || crate::aws::secrets::list_envctls(&clients.secrets),
    )
    .await?
    .into_iter()
    .filter(|s| !s.deleting)
    .map(|s| Leftover {
        name: s.name,
        arn: s.arn,
        tags: s.tags,
    })
    .collect();
    let groups = paced::call(
        clock,
        limits,
        "logs",
        Operation::Logs(LogsOp::DescribeLogGroups),
        || crate::aws::logs::list_all(&clients.logs),
    )
    .await?;
    for g in groups {
        let tags = paced::call(
            clock,
            limits,
            &g.name,
            Operation::Logs(LogsOp::ListTagsForResource),
            || crate::aws::logs::tags(&clients.logs, &g.arn),
        )
        .await?;
        if envctls(&tags) {
            out.log_groups.push(Leftover {
                name: g.name,
                arn: g.arn,
                tags,
            });
        }
    }
    out.capacity_providers = paced::call(
        clock,
        limits,
        "ecs",
        Operation::Ecs(EcsOp::DescribeCapacityProviders),
        || capacity_providers(&clients.ecs),
    )
    .await?;
    // A Managed Instances provider is scoped to its cluster, and DescribeCapacityProviders
    // returns it only when asked with that cluster (docs/aws-behaviour.md): each cluster of
    // the account is asked too.
    let clusters = paced::call(
        clock,
        limits,
        "ecs",
        Operation::Ecs(EcsOp::ListClusters),
        || ecs::list_clusters(&clients.ecs),
    )
    .await?;
    for arn in clusters {
        let cluster = envctl_aws_model::arn::resource_name(&arn).to_string();
        let scoped = paced::call(
            clock,
            limits,
            &cluster,
            Operation::Ecs(EcsOp::DescribeCapacityProviders),
            || ecs::cluster_capacity_providers(&clients.ecs, &cluster),
        )
        .await?;
        for cp in scoped {
            let known = out
                .capacity_providers
                .iter()
                .any(|l| l.provider.name == cp.name);
            if known || cp.status == CapacityProviderStatus::Inactive || !envctls(&cp.tags) {
                continue;
            }
            out.capacity_providers
                .push(crate::plan::gc::LeftoverProvider {
                    provider: Leftover {
                        name: cp.name,
                        arn: cp.arn,
                        tags: cp.tags,
                    },
                    cluster: Some(cluster.clone()),
                });
        }
    }
    Ok(out)
}

/// Every capacity provider of the account and Region with envctl's tags, not yet INACTIVE.
async fn capacity_providers(
    c: &aws_sdk_ecs::Client,
) -> Result<Vec<crate::plan::gc::LeftoverProvider>, AwsError> {
    Ok(ecs::all_capacity_providers(c)
        .await?
        .into_iter()
        .filter(|cp| cp.status != CapacityProviderStatus::Inactive && envctls(&cp.tags))
        .map(|cp| crate::plan::gc::LeftoverProvider {
            cluster: cp
                .cluster
                .as_deref()
                .map(|c| envctl_aws_model::arn::resource_name(c).to_string()),
            provider: Leftover {
                name: cp.name,
                arn: cp.arn,
                tags: cp.tags,
            },
        })
        .collect())
}

/// The RDS groups (name, ARN) that carry envctl's tags. Their Describe calls return no tags,
/// so each group costs one ListTagsForResource.
async fn owned_by_tags(
    clients: &Clients,
    clock: &dyn Clock,
    limits: &RateLimits,
    groups: impl Iterator<Item = (String, String)>,
) -> Result<Vec<Leftover>, AwsError> {
    let mut owned = Vec::new();
    for (name, arn) in groups {
        let tags = paced::call(
            clock,
            limits,
            &name,
            Operation::Rds(RdsOp::ListTagsForResource),
            || rds::list_tags(&clients.rds, &arn),
        )
        .await?;
        if envctls(&tags) {
            owned.push(Leftover { name, arn, tags });
        }
    }
    Ok(owned)
}

#[cfg(test)]
mod tests {
    use super::configuration_env;

    #[test]
    fn a_configuration_names_its_env_in_its_description_only_at_the_start() {
        assert_eq!(
            configuration_env("envctl:env=pcp1 managed by envctl"),
            Some("pcp1")
        );
        assert_eq!(configuration_env("team config, envctl:env=pcp1"), None);
        assert_eq!(configuration_env(""), None);
    }
}
