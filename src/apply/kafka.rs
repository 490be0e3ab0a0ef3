//! MSK actions. One operation per cluster at a time: each update presents the cluster's
//! current `CurrentVersion`, re-read after every operation, and is polled to completion
//! (the SDK has no MSK waiters).
use super::context::Context;
use super::outcome::Outcome;
use crate::aws::kafka::{self, ClusterUpdate};
use crate::exec::{PollInterval, Probe, await_condition};
use crate::model::KafkaCluster;
use crate::model::live::LiveKafka;
use crate::model::requests;
use crate::plan::{Action, ActionKind};

fn description(ctx: &Context) -> String {
    // Configurations take no tags: the description carries the ownership mark.
    format!("envctl:env={} managed by envctl", ctx.desired.env)
}

pub async fn configuration(ctx: &Context, action: &Action) -> Outcome {
    let (_, key) = crate::plan::key::split(&action.resource);
    let Some(cluster) = ctx.desired.kafka.get(key) else {
        return Outcome::Failed {
            reason: format!("no Kafka cluster `{key}` in the spec"),
        };
    };
    let props = &cluster.configuration.server_properties;
    let live = ctx
        .live
        .kafka_configurations
        .get(&cluster.configuration.name);
    if action.kind == ActionKind::Delete {
        let Some(live) = live else {
            return Outcome::Unchanged {
                detail: "already gone".into(),
            };
        };
        return match ctx
            .mutate(&action.resource, "DeleteConfiguration", || {
                kafka::delete_configuration(&ctx.clients.kafka, &live.arn)
            })
            .await
        {
            Ok(()) => Outcome::Applied {
                detail: "deleted".into(),
            },
            Err(e) if e.is_code("NotFoundException") => Outcome::Unchanged {
                detail: "already gone".into(),
            },
            Err(e) => Outcome::Failed {
                reason: e.to_string(),
            },
        };
    }
    let result = match (action.kind, live) {
        (ActionKind::Create, _) | (_, None) => {
            let req = requests::create_configuration(cluster);
            let desc = description(ctx);
            ctx.mutate(&action.resource, "CreateConfiguration", || {
                kafka::create_configuration(
                    &ctx.clients.kafka,
                    &req.name,
                    &req.kafka_versions,
                    props,
                    &desc,
                )
            })
            .await
            .map(|c| (c.arn, c.latest_revision))
        }
        (_, Some(live)) => {
            let desc = description(ctx);
            ctx.mutate(&action.resource, "UpdateConfiguration", || {
                kafka::update_configuration(&ctx.clients.kafka, &live.arn, props, &desc)
            })
            .await
            .map(|rev| (live.arn.clone(), rev))
        }
    };
    match result {
        Ok((arn, revision)) => {
            if let Ok(mut map) = ctx.kafka_configurations.lock() {
                map.insert(key.to_string(), (arn, revision));
            }
            Outcome::Applied {
                detail: format!("revision {revision}"),
            }
        }
        Err(e) => Outcome::Failed {
            reason: e.to_string(),
        },
    }
}

/// The configuration the cluster should run: written in this run, or the live latest.
fn target_configuration(ctx: &Context, key: &str, cluster: &KafkaCluster) -> Option<(String, i64)> {
    let written = ctx
        .kafka_configurations
        .lock()
        .ok()
        .and_then(|m| m.get(key).cloned());
    written.or_else(|| {
        ctx.live
            .kafka_configurations
            .get(&cluster.configuration.name)
            .map(|c| (c.arn.clone(), c.latest_revision))
    })
}

pub async fn cluster(ctx: &Context, action: &Action) -> Outcome {
    let (_, key) = crate::plan::key::split(&action.resource);
    let Some(cluster) = ctx.desired.kafka.get(key) else {
        // A cluster no longer in the spec: the plan only deletes.
        return delete_by_name(ctx, action, key).await;
    };
    let result = match action.kind {
        ActionKind::Create => create(ctx, action, key, cluster).await,
        ActionKind::Replace => match ctx.live.kafka.get(&cluster.name) {
            Some(old) => match delete(ctx, action, old).await {
                Ok(()) => create(ctx, action, key, cluster).await,
                Err(e) => Err(e),
            },
            None => create(ctx, action, key, cluster).await,
        },
        ActionKind::Delete => return delete_by_name(ctx, action, &cluster.name).await,
        _ => update(ctx, action, key, cluster).await,
    };
    match result {
        Ok(detail) => Outcome::Applied { detail },
        Err(reason) => Outcome::Failed { reason },
    }
}

async fn create(
    ctx: &Context,
    action: &Action,
    key: &str,
    cluster: &KafkaCluster,
) -> Result<String, String> {
    let Some((conf_arn, revision)) = target_configuration(ctx, key, cluster) else {
        return Err("its configuration was not written".into());
    };
    let req = requests::create_cluster(&ctx.desired, cluster);
    let tags = ctx.creation_tags();
    let arn = ctx
        .mutate(&action.resource, "CreateClusterV2", || {
            kafka::create_cluster(&ctx.clients.kafka, &req, (&conf_arn, revision), &tags)
        })
        .await
        .map_err(|e| e.to_string())?;
    ctx.events.status(&action.resource, "CREATING");
    let live = wait_active(ctx, action, &arn, ctx.deadlines.msk_create).await?;
    publish_bootstrap(ctx, action, key, &live).await?;
    Ok(format!("created ({})", live.kafka_version))
}

async fn publish_bootstrap(
    ctx: &Context,
    action: &Action,
    key: &str,
    live: &LiveKafka,
) -> Result<(), String> {
    let brokers = ctx
        .read(&action.resource, "GetBootstrapBrokers", || {
            kafka::bootstrap_brokers(&ctx.clients.kafka, &live.arn)
        })
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "MSK reported no bootstrap brokers".to_string())?;
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

async fn describe(ctx: &Context, action: &Action, arn: &str) -> Result<LiveKafka, String> {
    ctx.read(&action.resource, "DescribeClusterV2", || {
        kafka::describe_cluster(&ctx.clients.kafka, arn)
    })
    .await
    .map_err(|e| e.to_string())
}

async fn wait_active(
    ctx: &Context,
    action: &Action,
    arn: &str,
    deadline: std::time::Duration,
) -> Result<LiveKafka, String> {
    let (initial, max) = ctx.poll.msk;
    let outcome = await_condition(
        ctx.clock.as_ref(),
        deadline,
        PollInterval::growing(initial, max),
        || async {
            if ctx.cancelled() {
                return Probe::Failed {
                    reason: "interrupted while waiting for the cluster".into(),
                };
            }
            match describe(ctx, action, arn).await {
                Ok(k) if k.state == "ACTIVE" => Probe::Done(k),
                Ok(k) if k.state == "FAILED" => Probe::Failed {
                    reason: "the cluster is FAILED".into(),
                },
                Ok(k) => {
                    ctx.events.status(&action.resource, &k.state);
                    Probe::Pending { status: k.state }
                }
                Err(e) => Probe::Failed { reason: e },
            }
        },
    )
    .await;
    outcome.into_result("cluster ACTIVE")
}

/// The in-place operations a plan asks for, in the order MSK can take them.
fn operations(
    ctx: &Context,
    key: &str,
    cluster: &KafkaCluster,
    live: &LiveKafka,
) -> Vec<ClusterUpdate> {
    let mut ops = Vec::new();
    let target = target_configuration(ctx, key, cluster);
    let config_differs = match (
        &target,
        &live.configuration_arn,
        live.configuration_revision,
    ) {
        (Some((arn, rev)), Some(la), Some(lr)) => arn != la || *rev != lr,
        (Some(_), _, _) => true,
        (None, _, _) => false,
    };
    let mut config_done = false;
    if live.kafka_version != cluster.kafka_version {
        ops.push(ClusterUpdate::KafkaVersion {
            target: cluster.kafka_version.clone(),
            configuration: target.clone().filter(|_| config_differs),
        });
        config_done = config_differs;
    }
    if live.broker_type != cluster.broker_type {
        ops.push(ClusterUpdate::BrokerType(cluster.broker_type.clone()));
    }
    if live.storage_gb < cluster.storage_gb {
        ops.push(ClusterUpdate::BrokerStorage(cluster.storage_gb));
    }
    if live.brokers < cluster.brokers {
        ops.push(ClusterUpdate::BrokerCount(cluster.brokers));
    }
    if config_differs
        && !config_done
        && let Some((arn, revision)) = target
    {
        ops.push(ClusterUpdate::Configuration { arn, revision });
    }
    ops
}

async fn update(
    ctx: &Context,
    action: &Action,
    key: &str,
    cluster: &KafkaCluster,
) -> Result<String, String> {
    let Some(live) = ctx.live.kafka.get(&cluster.name) else {
        return Err("the cluster is gone".into());
    };
    let arn = live.arn.clone();
    let mut done = Vec::new();
    if action
        .changes
        .iter()
        .any(|c| c.field == crate::plan::diff::ADOPT_FIELD)
    {
        let tags = ctx.creation_tags();
        ctx.mutate(&action.resource, "TagResource", || {
            kafka::tag_resource(&ctx.clients.kafka, &arn, &tags)
        })
        .await
        .map_err(|e| e.to_string())?;
        done.push("TagResource");
    }
    for op in operations(ctx, key, cluster, live) {
        // Re-read the cluster: it must be ACTIVE, and each operation changes CurrentVersion.
        let current = wait_active(ctx, action, &arn, ctx.deadlines.msk_operation).await?;
        ctx.events.status(&action.resource, op.operation());
        let op_arn = ctx
            .mutate(&action.resource, op.operation(), || {
                kafka::update_cluster(&ctx.clients.kafka, &arn, &current.current_version, &op)
            })
            .await
            .map_err(|e| e.to_string())?;
        wait_operation(ctx, action, &op_arn, op.operation()).await?;
        done.push(op.operation());
    }
    let live = wait_active(ctx, action, &arn, ctx.deadlines.msk_operation).await?;
    publish_bootstrap(ctx, action, key, &live).await?;
    Ok(if done.is_empty() {
        "nothing to change".into()
    } else {
        done.join(", ")
    })
}

async fn wait_operation(
    ctx: &Context,
    action: &Action,
    op_arn: &str,
    operation: &str,
) -> Result<(), String> {
    let (initial, max) = ctx.poll.msk;
    let outcome = await_condition(
        ctx.clock.as_ref(),
        ctx.deadlines.msk_operation,
        PollInterval::growing(initial, max),
        || async {
            match ctx
                .read(&action.resource, "DescribeClusterOperationV2", || {
                    kafka::operation_state(&ctx.clients.kafka, op_arn)
                })
                .await
            {
                Ok((state, _)) if state == "UPDATE_COMPLETE" => Probe::Done(()),
                Ok((state, error)) if state == "UPDATE_FAILED" => Probe::Failed {
                    reason: format!(
                        "{operation} failed: {}",
                        error.unwrap_or_else(|| "no reason given".into())
                    ),
                },
                Ok((state, _)) => {
                    ctx.events
                        .status(&action.resource, &format!("{operation} {state}"));
                    Probe::Pending { status: state }
                }
                Err(e) => Probe::Failed {
                    reason: e.to_string(),
                },
            }
        },
    )
    .await;
    outcome.into_result(operation)
}

pub async fn delete(ctx: &Context, action: &Action, live: &LiveKafka) -> Result<(), String> {
    let current = describe(ctx, action, &live.arn).await?;
    if current.state != "DELETING" {
        ctx.mutate(&action.resource, "DeleteCluster", || {
            kafka::delete_cluster(&ctx.clients.kafka, &live.arn, &current.current_version)
        })
        .await
        .map_err(|e| e.to_string())?;
    }
    let (initial, max) = ctx.poll.msk;
    let outcome = await_condition(
        ctx.clock.as_ref(),
        ctx.deadlines.msk_delete,
        PollInterval::growing(initial, max),
        || async {
            match ctx
                .read(&action.resource, "DescribeClusterV2", || {
                    kafka::describe_cluster(&ctx.clients.kafka, &live.arn)
                })
                .await
            {
                Ok(k) => Probe::Pending { status: k.state },
                Err(e) if e.is_code("NotFoundException") => Probe::Done(()),
                Err(e) => Probe::Failed {
                    reason: e.to_string(),
                },
            }
        },
    )
    .await;
    outcome.into_result("cluster deletion")
}

async fn delete_by_name(ctx: &Context, action: &Action, name: &str) -> Outcome {
    match ctx.live.kafka.get(name) {
        Some(live) => match delete(ctx, action, live).await {
            Ok(()) => Outcome::Applied {
                detail: "deleted".into(),
            },
            Err(reason) => Outcome::Failed { reason },
        },
        None => Outcome::Unchanged {
            detail: "already gone".into(),
        },
    }
}
