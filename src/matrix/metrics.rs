//! The CloudWatch series of a point's window: ECS CPU and memory per service, RDS CPU and
//! connections for the writer and readers, MSK broker CPU.
use std::collections::BTreeMap;

use crate::aws::cloudwatch::{MetricQuery, get_metric_data};
use crate::aws::{AwsError, Clients};
use crate::model::DesiredState;
use crate::results::{MetricSeries, MetricsRecord};
use crate::spec::playbook::{Collect, EcsCollect};

struct Wanted {
    query: MetricQuery,
    source: &'static str,
    resource: String,
    role: Option<String>,
    unit: &'static str,
}

fn wanted(desired: &DesiredState, collect: &Collect) -> Vec<Wanted> {
    let period = collect.period.secs().clamp(1, u64::from(u32::MAX)) as u32;
    let q = |namespace: &str, metric: &str, dims: Vec<(&str, String)>| MetricQuery {
        namespace: namespace.into(),
        metric: metric.into(),
        dimensions: dims.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        stat: "Average".into(),
        period_s: period,
    };
    let mut out = Vec::new();
    let services: Vec<&String> = match &collect.ecs {
        EcsCollect::All => desired.services.keys().collect(),
        EcsCollect::None => Vec::new(),
        EcsCollect::Services(names) => desired
            .services
            .keys()
            .filter(|k| names.iter().any(|n| &n.value == *k))
            .collect(),
    };
    for s in services {
        for metric in ["CPUUtilization", "MemoryUtilization"] {
            out.push(Wanted {
                query: q(
                    "AWS/ECS",
                    metric,
                    vec![
                        ("ClusterName", desired.cluster.name.clone()),
                        ("ServiceName", s.clone()),
                    ],
                ),
                source: "ecs",
                resource: s.clone(),
                role: None,
                unit: "Percent",
            });
        }
    }
    if collect.rds
        && let Some(db) = &desired.db
    {
        for (role, inst) in
            std::iter::once(("writer", &db.writer)).chain(db.readers.iter().map(|r| ("reader", r)))
        {
            for (metric, unit) in [
                ("CPUUtilization", "Percent"),
                ("DatabaseConnections", "Count"),
            ] {
                out.push(Wanted {
                    query: q(
                        "AWS/RDS",
                        metric,
                        vec![("DBInstanceIdentifier", inst.identifier.clone())],
                    ),
                    source: "rds",
                    resource: inst.identifier.clone(),
                    role: Some(role.into()),
                    unit,
                });
            }
        }
    }
    if collect.kafka {
        for k in desired.kafka.values() {
            for broker in 1..=k.brokers {
                // The dimension names of AWS/Kafka contain spaces.
                out.push(Wanted {
                    query: q(
                        "AWS/Kafka",
                        "CpuUser",
                        vec![
                            ("Cluster Name", k.name.clone()),
                            ("Broker ID", broker.to_string()),
                        ],
                    ),
                    source: "kafka",
                    resource: format!("{} broker {broker}", k.name),
                    role: None,
                    unit: "Percent",
                });
            }
        }
    }
    out
}

/// Reads the metrics of `[start, end]` (seconds since the epoch).
pub async fn collect(
    clients: &Clients,
    desired: &DesiredState,
    collect: &Collect,
    start: f64,
    end: f64,
) -> Result<MetricsRecord, AwsError> {
    let wanted = wanted(desired, collect);
    let queries: Vec<MetricQuery> = wanted.iter().map(|w| w.query.clone()).collect();
    let answer = if queries.is_empty() {
        Default::default()
    } else {
        get_metric_data(&clients.cloudwatch, &queries, start, end).await?
    };
    let series = wanted
        .into_iter()
        .zip(answer.series)
        .map(|(w, data)| MetricSeries {
            source: w.source.into(),
            resource: w.resource,
            role: w.role,
            namespace: w.query.namespace,
            metric: w.query.metric,
            dimensions: w.query.dimensions.into_iter().collect::<BTreeMap<_, _>>(),
            stat: w.query.stat,
            unit: w.unit.into(),
            timestamps: data.timestamps,
            values: data.values,
        })
        .collect();
    Ok(MetricsRecord {
        start,
        end,
        period_s: collect.period.secs().clamp(1, u64::from(u32::MAX)) as u32,
        synthetic: answer.synthetic,
        series,
    })
}
