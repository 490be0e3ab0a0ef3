//! MSK operations. One operation per cluster at a time: each update presents the cluster's
//! current `CurrentVersion`, re-read after every operation, and is polled to completion
//! (the SDK has no MSK waiters).
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::KafkaOp;
use std::time::Duration;

use super::conform;
use super::context::Context;
use super::error::ActionError;
use super::existing;
use super::outcome::Outcome;
use crate::aws::kafka::{self, UpdateRequest};
use crate::exec::Operation;
use crate::exec::{PollInterval, Probe};
use crate::model::live::LiveKafka;
use crate::model::requests;
use crate::plan::placeholder::ConfigurationRevision;
use crate::plan::{ClusterUpdate, Planned, ResourceId};

type Step = Result<Outcome, ActionError>;

fn written(ctx: &Context, id: &ResourceId, arn: String, revision: i64) -> Step {
    if let Ok(mut map) = ctx.kafka_configurations.lock() {
        map.insert(id.name().to_string(), (arn, revision));
    }
    Ok(Outcome::Applied {
        detail: format!("revision {revision}"),
    })
}

/// CreateConfiguration as planned; `description` carries the ownership mark (MSK
/// configurations take no tags).
pub async fn create_configuration(
    ctx: &Context,
    id: &ResourceId,
    planned: &requests::CreateConfiguration,
    desc: &str,
) -> Step {
    let resource = id.to_string();
    let req = conform::filled(&resource, planned, |_| {})?;
    let props = &req.server_properties;
    let created = ctx
        .mutate(
            &resource,
            Operation::Kafka(KafkaOp::CreateConfiguration),
            || {
                kafka::create_configuration(
                    &ctx.clients.kafka,
                    &req.name,
                    &req.kafka_versions,
                    props,
                    desc,
                )
            },
        )
        .await;
    match created {
        Ok(created) => written(ctx, id, created.arn, created.latest_revision),
        // MSK configurations take no client token: an earlier attempt's (lost answer) is
        // found by name, and its description says whether it is this env's.
        Err(e) if e.is_code(ErrorCode::ConflictException) => {
            let (arn, revision) = existing::kafka_configuration(ctx, &resource, &req.name).await?;
            written(ctx, id, arn, revision)
        }
        Err(e) => Err(e),
    }
}

/// UpdateConfiguration (a new revision) with the planned server properties.
pub async fn update_configuration(
    ctx: &Context,
    id: &ResourceId,
    arn: &str,
    planned: &requests::CreateConfiguration,
    desc: &str,
) -> Step {
    let resource = id.to_string();
    let req = conform::filled(&resource, planned, |_| {})?;
    let props = &req.server_properties;
    let revision = ctx
        .mutate(
            &resource,
            Operation::Kafka(KafkaOp::UpdateConfiguration),
            || kafka::update_configuration(&ctx.clients.kafka, arn, props, desc),
        )
        .await?;
    written(ctx, id, arn.to_string(), revision)
}

pub async fn delete_configuration(ctx: &Context, id: &ResourceId, arn: &str) -> Step {
    match ctx
        .mutate(
            &id.to_string(),
            Operation::Kafka(KafkaOp::DeleteConfiguration),
            || kafka::delete_configuration(&ctx.clients.kafka, arn),
        )
        .await
    {
        Ok(()) => Ok(Outcome::Applied {
            detail: "deleted".into(),
        }),
        Err(e) if e.is_code(ErrorCode::NotFoundException) => Ok(Outcome::Unchanged {
            detail: "already gone".into(),
        }),
        Err(e) => Err(e),
    }
}

/// The configuration the cluster should run: as planned, or written earlier in this run.
fn target_configuration(
    ctx: &Context,
    key: &str,
    planned: Option<&Planned<ConfigurationRevision>>,
) -> Option<(String, i64)> {
    let c = match planned? {
        Planned::Known(c) => c.clone(),
        Planned::AfterApply { .. } => written_configuration(ctx, key)?,
    };
    Some((c.arn, c.revision))
}

/// The configuration revision written earlier in this run for Kafka cluster `key`.
fn written_configuration(ctx: &Context, key: &str) -> Option<ConfigurationRevision> {
    ctx.kafka_configurations
        .lock()
        .ok()
        .and_then(|m| m.get(key).cloned())
        .map(|(arn, revision)| ConfigurationRevision { arn, revision })
}

/// What CreateClusterV2 sends: the planned request on the configuration revision (a
/// placeholder until written earlier in the run), compared with the plan as one value.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClusterCreate<'a> {
    pub request: &'a requests::CreateClusterV2,
    pub configuration: Planned<ConfigurationRevision>,
}

pub async fn create(
    ctx: &Context,
    id: &ResourceId,
    planned: ClusterCreate<'_>,
    protocol: &str,
) -> Step {
    let resource = id.to_string();
    let written = match planned.configuration.known() {
        Some(c) => Some(c.clone()),
        None => written_configuration(ctx, id.name()),
    };
    let Some(written) = written else {
        return Err(ActionError::Failed(
            "its configuration was not written".into(),
        ));
    };
    let sending = conform::filled(&resource, &planned, |c| {
        c.configuration = Planned::Known(written.clone())
    })?;
    let req = sending.request;
    let (conf_arn, revision) = (written.arn, written.revision);
    let tags = ctx.creation_tags();
    let arn = match ctx
        .mutate(
            &resource,
            Operation::Kafka(KafkaOp::CreateClusterV2),
            || kafka::create_cluster(&ctx.clients.kafka, req, (&conf_arn, revision), &tags),
        )
        .await
    {
        Ok(arn) => arn,
        // CreateClusterV2 takes no client token: a cluster an earlier attempt created (its
        // answer lost) is found by name and followed if it carries this env's tags.
        Err(e) if e.is_code(ErrorCode::ConflictException) => {
            existing::kafka_cluster(ctx, &resource, &req.cluster_name).await?
        }
        Err(e) => return Err(e),
    };
    ctx.events.status(&resource, "CREATING");
    let live = wait_active(ctx, id, &arn, ctx.deadlines.msk_create).await?;
    publish_bootstrap(ctx, id, &live, Some(protocol)).await?;
    Ok(Outcome::Applied {
        detail: format!("created ({})", live.kafka_version),
    })
}

async fn publish_bootstrap(
    ctx: &Context,
    id: &ResourceId,
    live: &LiveKafka,
    protocol: Option<&str>,
) -> Result<(), ActionError> {
    let key = id.name();
    // The string matching the clients' protocol: a `client_broker: TLS` cluster has no
    // plaintext string at all (docs/aws-behaviour.md, MSK client encryption). Without one
    // (a restore, which only puts a revision back), the cluster's preferred string.
    let strings = ctx
        .read(
            &id.to_string(),
            Operation::Kafka(KafkaOp::GetBootstrapBrokers),
            || kafka::bootstrap_strings(&ctx.clients.kafka, &live.arn),
        )
        .await?;
    let brokers = match protocol {
        Some(protocol) => strings.for_protocol(protocol),
        None => strings.preferred().map(str::to_string),
    }
    .ok_or_else(|| {
        ActionError::Failed(format!(
            "MSK reported no bootstrap brokers for {}",
            protocol.unwrap_or("any protocol")
        ))
    })?;
    let first = brokers.split(',').next().unwrap_or_default().to_string();
    let (host, port) = first
        .rsplit_once(':')
        .map(|(h, p)| (h.to_string(), p.to_string()))
        .unwrap_or((first.clone(), "9092".into()));
    ctx.set_outputs([
        (format!("kafka.{key}.bootstrap_brokers"), brokers.clone()),
        (format!("kafka.{key}.host"), host),
        (format!("kafka.{key}.port"), port),
    ]);
    if let Ok(mut cache) = ctx.cache.lock() {
        cache.bootstrap_brokers.insert(live.arn.clone(), brokers);
    }
    Ok(())
}

async fn describe(ctx: &Context, id: &ResourceId, arn: &str) -> Result<LiveKafka, ActionError> {
    ctx.read(
        &id.to_string(),
        Operation::Kafka(KafkaOp::DescribeClusterV2),
        || kafka::describe_cluster(&ctx.clients.kafka, arn),
    )
    .await
}

async fn wait_active(
    ctx: &Context,
    id: &ResourceId,
    arn: &str,
    deadline: Duration,
) -> Result<LiveKafka, ActionError> {
    let (initial, max) = ctx.poll.msk;
    let resource = id.to_string();
    ctx.wait(
        &resource,
        "cluster ACTIVE",
        ctx.clock.now(),
        deadline,
        PollInterval::growing(initial, max),
        || async {
            let k = describe(ctx, id, arn).await?;
            Ok(
                match envctl_aws_model::status::KafkaClusterState::parse(&k.state) {
                    envctl_aws_model::status::KafkaClusterState::Active => Probe::Done(k),
                    envctl_aws_model::status::KafkaClusterState::Failed => Probe::Failed {
                        reason: "the cluster is FAILED".into(),
                    },
                    _ => {
                        ctx.events.status(&resource, &k.state);
                        Probe::Pending { status: k.state }
                    }
                },
            )
        },
    )
    .await
}

/// Waits for a change already in progress, then publishes the endpoints.
pub async fn await_active(ctx: &Context, id: &ResourceId, arn: &str, protocol: &str) -> Step {
    let live = wait_active(ctx, id, arn, ctx.deadlines.msk_operation).await?;
    publish_bootstrap(ctx, id, &live, Some(protocol)).await?;
    Ok(Outcome::Applied {
        detail: format!("ACTIVE ({})", live.kafka_version),
    })
}

/// A `KafkaUpdate` as the plan decided it.
pub struct ClusterUpdates<'a> {
    pub updates: &'a [ClusterUpdate],
    pub adopt: bool,
    pub configuration: Option<&'a Planned<ConfigurationRevision>>,
    pub security_protocol: Option<&'a str>,
}

/// The planned operations, one at a time, with the configuration revision resolved now.
pub async fn update(
    ctx: &Context,
    id: &ResourceId,
    arn: &str,
    planned: ClusterUpdates<'_>,
) -> Step {
    let ClusterUpdates {
        updates,
        adopt,
        configuration: planned_configuration,
        security_protocol,
    } = planned;
    let resource = id.to_string();
    let mut done = Vec::new();
    if adopt {
        let tags = ctx.adoption_tags();
        ctx.mutate(&resource, Operation::Kafka(KafkaOp::TagResource), || {
            kafka::tag_resource(&ctx.clients.kafka, arn, &tags)
        })
        .await?;
        done.push("TagResource");
    }
    let configuration = || target_configuration(ctx, id.name(), planned_configuration);
    for update in updates {
        let request = match update {
            ClusterUpdate::KafkaVersion {
                target,
                with_configuration,
            } => UpdateRequest::KafkaVersion {
                target: target.clone(),
                configuration: configuration().filter(|_| *with_configuration),
            },
            ClusterUpdate::BrokerType(t) => UpdateRequest::BrokerType(t.clone()),
            ClusterUpdate::BrokerStorage(gb) => UpdateRequest::BrokerStorage(*gb),
            ClusterUpdate::BrokerCount(n) => UpdateRequest::BrokerCount(*n),
            ClusterUpdate::Configuration => {
                let Some((arn, revision)) = configuration() else {
                    return Err(ActionError::Failed(
                        "its configuration was not written".into(),
                    ));
                };
                UpdateRequest::Configuration { arn, revision }
            }
            ClusterUpdate::ConfigurationRevision { arn, revision } => {
                UpdateRequest::Configuration {
                    arn: arn.clone(),
                    revision: *revision,
                }
            }
        };
        let operation = request.operation();
        // Re-read the cluster: it must be ACTIVE, and each operation changes CurrentVersion.
        let current = wait_active(ctx, id, arn, ctx.deadlines.msk_operation).await?;
        ctx.events.status(&resource, operation.as_str());
        let op_arn = ctx
            .mutate(&resource, Operation::Kafka(operation), || {
                kafka::update_cluster(&ctx.clients.kafka, arn, &current.current_version, &request)
            })
            .await?;
        wait_operation(ctx, id, &op_arn, operation.as_str()).await?;
        done.push(operation.as_str());
    }
    let live = wait_active(ctx, id, arn, ctx.deadlines.msk_operation).await?;
    publish_bootstrap(ctx, id, &live, security_protocol).await?;
    Ok(Outcome::Applied {
        detail: if done.is_empty() {
            "nothing to change".into()
        } else {
            done.join(", ")
        },
    })
}

async fn wait_operation(
    ctx: &Context,
    id: &ResourceId,
    op_arn: &str,
    operation: &str,
) -> Result<(), ActionError> {
    let (initial, max) = ctx.poll.msk;
    let resource = id.to_string();
    ctx.wait(
        &resource,
        operation,
        ctx.clock.now(),
        ctx.deadlines.msk_operation,
        PollInterval::growing(initial, max),
        || async {
            let (state, error) = ctx
                .read(
                    &resource,
                    Operation::Kafka(KafkaOp::DescribeClusterOperationV2),
                    || kafka::operation_state(&ctx.clients.kafka, op_arn),
                )
                .await?;
            Ok(
                match envctl_aws_model::status::KafkaOperationState::parse(&state) {
                    envctl_aws_model::status::KafkaOperationState::UpdateComplete => {
                        Probe::Done(())
                    }
                    envctl_aws_model::status::KafkaOperationState::UpdateFailed => Probe::Failed {
                        reason: format!(
                            "{operation} failed: {}",
                            error.unwrap_or_else(|| "no reason given".into())
                        ),
                    },
                    _ => {
                        ctx.events
                            .status(&resource, &format!("{operation} {state}"));
                        Probe::Pending { status: state }
                    }
                },
            )
        },
    )
    .await
}

/// Deletes a cluster by ARN and waits until MSK no longer knows it.
pub async fn delete(ctx: &Context, id: &ResourceId, arn: &str) -> Step {
    let current = match describe(ctx, id, arn).await {
        Ok(c) => c,
        Err(e) if e.is_code(ErrorCode::NotFoundException) => {
            return Ok(Outcome::Unchanged {
                detail: "already gone".into(),
            });
        }
        Err(e) => return Err(e),
    };
    let resource = id.to_string();
    if current.state != envctl_aws_model::status::KafkaClusterState::Deleting {
        ctx.mutate(&resource, Operation::Kafka(KafkaOp::DeleteCluster), || {
            kafka::delete_cluster(&ctx.clients.kafka, arn, &current.current_version)
        })
        .await?;
    }
    let (initial, max) = ctx.poll.msk;
    let since = ctx.clock.now();
    ctx.pause(
        &resource,
        "the cluster deletion",
        ctx.poll.delete_first.msk_cluster,
    )
    .await;
    ctx.wait(
        &resource,
        "cluster deletion",
        since,
        ctx.deadlines.msk_delete,
        PollInterval::growing(initial, max),
        || async {
            match ctx
                .read(
                    &resource,
                    Operation::Kafka(KafkaOp::DescribeClusterV2),
                    || kafka::describe_cluster(&ctx.clients.kafka, arn),
                )
                .await
            {
                Ok(k) => Ok(Probe::Pending { status: k.state }),
                Err(e) if e.is_code(ErrorCode::NotFoundException) => Ok(Probe::Done(())),
                Err(e) => Err(e),
            }
        },
    )
    .await?;
    Ok(Outcome::Applied {
        detail: format!("deleted {}", current.name),
    })
}
