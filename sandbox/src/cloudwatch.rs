//! Amazon CloudWatch (rpc-v2-cbor): GetMetricData, PutMetricData, ListMetrics.
//!
//! Values sent with PutMetricData are served as sent. For the AWS metrics envctl collects,
//! on resources that exist in the sandbox, the answer is a synthetic series: deterministic
//! (seeded by namespace, metric name and dimensions), one sample per minute, with a daily
//! wave and noise in a plausible range. Every result built from synthetic samples carries a
//! message `{Code: "Synthetic"}` so reports can label the numbers as synthetic.
//!
//! Deviation from AWS: PutMetricData accepts `AWS/` namespaces, so tests can pin the values
//! of the metrics envctl reads.

use crate::faults::{hash_str, unit};
use crate::protocol::ApiError;
use crate::protocol::cbor::{self, as_f64, get, get_array, get_f64, get_str, map, text};
use crate::state::{Ctx, World};
use ciborium::Value;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Queries per GetMetricData call (AWS limit).
const MAX_QUERIES: usize = 500;
/// Datapoints one GetMetricData page may cover (AWS's limit). Beyond it the answer carries a
/// NextToken; the sandbox splits pages between queries, never inside one.
const MAX_DATAPOINTS: f64 = 100_800.0;
/// Metrics per ListMetrics page (AWS returns up to 500).
const LIST_PAGE: usize = 500;
/// The message code that marks a synthetic result.
pub const SYNTHETIC_CODE: &str = "Synthetic";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CloudWatchState {
    /// Series key -> series with the data points sent by PutMetricData.
    series: BTreeMap<String, Series>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Series {
    namespace: String,
    metric: String,
    dimensions: Vec<(String, String)>,
    /// (timestamp, sum, count, min, max): a statistic set per datum.
    points: Vec<(f64, f64, f64, f64, f64)>,
}

/// A metric identity.
#[derive(Debug, Clone, PartialEq)]
struct MetricId {
    namespace: String,
    metric: String,
    /// Sorted by name.
    dimensions: Vec<(String, String)>,
}

impl MetricId {
    fn key(&self) -> String {
        let dims: Vec<String> = self
            .dimensions
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        format!(
            "{}\u{1f}{}\u{1f}{}",
            self.namespace,
            self.metric,
            dims.join("\u{1e}")
        )
    }

    fn dim(&self, name: &str) -> Option<&str> {
        self.dimensions
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn has_exactly(&self, names: &[&str]) -> bool {
        self.dimensions.len() == names.len() && names.iter().all(|n| self.dim(n).is_some())
    }
}

/// Shape of a synthetic metric: base range, daily amplitude, noise, clamp, integer.
struct Shape {
    base: (f64, f64),
    amplitude: f64,
    noise: f64,
    range: (f64, f64),
    integer: bool,
}

const fn shape(
    base: (f64, f64),
    amplitude: f64,
    noise: f64,
    range: (f64, f64),
    integer: bool,
) -> Shape {
    Shape {
        base,
        amplitude,
        noise,
        range,
        integer,
    }
}

const PERCENT: (f64, f64) = (0.0, 100.0);

/// The synthetic metrics: (namespace, metric, dimension names, shape).
const SYNTHETIC: &[(&str, &str, &[&str], Shape)] = &[
    (
        "AWS/ECS",
        "CPUUtilization",
        &["ClusterName", "ServiceName"],
        shape((15.0, 55.0), 10.0, 8.0, PERCENT, false),
    ),
    (
        "AWS/ECS",
        "MemoryUtilization",
        &["ClusterName", "ServiceName"],
        shape((40.0, 75.0), 3.0, 2.0, PERCENT, false),
    ),
    (
        "AWS/RDS",
        "CPUUtilization",
        &["DBInstanceIdentifier"],
        shape((10.0, 50.0), 12.0, 6.0, PERCENT, false),
    ),
    (
        "AWS/RDS",
        "DatabaseConnections",
        &["DBInstanceIdentifier"],
        shape((50.0, 400.0), 40.0, 15.0, (0.0, 5000.0), true),
    ),
    (
        "AWS/RDS",
        "FreeableMemory",
        &["DBInstanceIdentifier"],
        shape((8.0e9, 24.0e9), 1.0e9, 2.0e8, (0.0, 1.0e12), false),
    ),
    (
        "AWS/RDS",
        "ReadIOPS",
        &["DBInstanceIdentifier"],
        shape((100.0, 2000.0), 150.0, 80.0, (0.0, 1.0e6), false),
    ),
    (
        "AWS/RDS",
        "WriteIOPS",
        &["DBInstanceIdentifier"],
        shape((100.0, 1500.0), 120.0, 60.0, (0.0, 1.0e6), false),
    ),
    (
        "AWS/Kafka",
        "CpuUser",
        &["Cluster Name", "Broker ID"],
        shape((5.0, 35.0), 6.0, 4.0, PERCENT, false),
    ),
    (
        "AWS/Kafka",
        "CpuSystem",
        &["Cluster Name", "Broker ID"],
        shape((2.0, 10.0), 2.0, 1.5, PERCENT, false),
    ),
    (
        "AWS/Kafka",
        "BytesInPerSec",
        &["Cluster Name", "Broker ID"],
        shape((1.0e5, 5.0e6), 5.0e5, 2.0e5, (0.0, 1.0e10), false),
    ),
    (
        "AWS/Kafka",
        "BytesOutPerSec",
        &["Cluster Name", "Broker ID"],
        shape((1.0e5, 8.0e6), 8.0e5, 3.0e5, (0.0, 1.0e10), false),
    ),
];

pub fn handle(
    world: &mut World,
    ctx: &Ctx<'_>,
    op: &str,
    input: &Value,
) -> Result<Value, ApiError> {
    match op {
        "GetMetricData" => get_metric_data(world, ctx, input),
        "PutMetricData" => put_metric_data(&mut world.cloudwatch, ctx, input),
        "ListMetrics" => list_metrics(world, input),
        _ => Err(ApiError::bad(
            "InvalidAction",
            format!("The sandbox does not implement CloudWatch operation {op}"),
        )),
    }
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad("InvalidParameterValue", message)
}

fn metric_id(metric: &Value) -> Result<MetricId, ApiError> {
    let namespace = get_str(metric, "Namespace")
        .ok_or_else(|| invalid("Metric.Namespace is required"))?
        .to_string();
    let name = get_str(metric, "MetricName")
        .ok_or_else(|| invalid("Metric.MetricName is required"))?
        .to_string();
    let mut dimensions: Vec<(String, String)> = get_array(metric, "Dimensions")
        .iter()
        .filter_map(|d| {
            Some((
                get_str(d, "Name")?.to_string(),
                get_str(d, "Value")?.to_string(),
            ))
        })
        .collect();
    dimensions.sort();
    Ok(MetricId {
        namespace,
        metric: name,
        dimensions,
    })
}

/// An MSK cluster no service uses: its brokers idle (a few % CPU, little traffic), so that
/// a report of a matrix that switches services between two clusters shows the unused one
/// idle instead of as busy as the one in use.
const IDLE_KAFKA: &[(&str, Shape)] = &[
    ("CpuUser", shape((1.0, 3.0), 0.5, 0.3, PERCENT, false)),
    ("CpuSystem", shape((0.5, 1.5), 0.2, 0.2, PERCENT, false)),
    (
        "BytesInPerSec",
        shape((5.0e2, 3.0e3), 2.0e2, 1.0e2, (0.0, 1.0e10), false),
    ),
    (
        "BytesOutPerSec",
        shape((5.0e2, 3.0e3), 2.0e2, 1.0e2, (0.0, 1.0e10), false),
    ),
];

/// Whether services use the MSK cluster `name`: some ACTIVE service's environment holds
/// its broker host (`b-1.<name>.…`, as GetBootstrapBrokers gives it). When no service
/// names any cluster (their Kafka settings live elsewhere) every cluster counts as used.
fn kafka_cluster_in_use(world: &World, name: &str) -> bool {
    let clusters = world.kafka.active_clusters();
    let used = |cluster: &str| {
        world
            .ecs
            .any_service_environment_contains(&format!("b-1.{cluster}."))
    };
    used(name) || !clusters.iter().any(|(cluster, _)| used(cluster))
}

/// The synthetic shape for a metric, if it is one the sandbox synthesises and its
/// resource exists now.
fn synthetic_shape(world: &World, id: &MetricId) -> Option<&'static Shape> {
    let (_, _, dims, shape) = SYNTHETIC
        .iter()
        .find(|(ns, m, _, _)| *ns == id.namespace && *m == id.metric)?;
    if !id.has_exactly(dims) {
        return None;
    }
    let exists = match id.namespace.as_str() {
        "AWS/ECS" => world
            .ecs
            .service_exists(id.dim("ClusterName")?, id.dim("ServiceName")?),
        "AWS/RDS" => world.rds.instance_exists(id.dim("DBInstanceIdentifier")?),
        "AWS/Kafka" => {
            let cluster = id.dim("Cluster Name")?;
            let broker: i64 = id.dim("Broker ID")?.parse().ok()?;
            let exists = world
                .kafka
                .active_clusters()
                .iter()
                .any(|(name, count)| name == cluster && (1..=*count).contains(&broker));
            if exists && !kafka_cluster_in_use(world, cluster) {
                return IDLE_KAFKA
                    .iter()
                    .find(|(metric, _)| *metric == id.metric)
                    .map(|(_, idle)| idle);
            }
            exists
        }
        _ => false,
    };
    exists.then_some(shape)
}

/// One synthetic sample for the minute starting at `t`.
fn sample(shape: &Shape, seed: u64, t: f64) -> f64 {
    let minute = (t / 60.0).floor();
    let base = shape.base.0 + (shape.base.1 - shape.base.0) * unit(seed);
    let phase = unit(seed.rotate_left(17)) * std::f64::consts::TAU;
    let wave = (minute / 1440.0 * std::f64::consts::TAU + phase).sin() * shape.amplitude;
    let noise = (unit(crate::faults::mix(seed ^ minute.to_bits())) - 0.5) * 2.0 * shape.noise;
    let v = (base + wave + noise).clamp(shape.range.0, shape.range.1);
    if shape.integer { v.round() } else { v }
}

/// Aggregates statistic sets with a statistic name.
fn statistic(stat: &str, points: &[(f64, f64, f64, f64)]) -> Result<Option<f64>, ApiError> {
    if points.is_empty() {
        return Ok(None);
    }
    let sum: f64 = points.iter().map(|p| p.0).sum();
    let count: f64 = points.iter().map(|p| p.1).sum();
    Ok(Some(match stat {
        "Average" => {
            if count == 0.0 {
                return Ok(None);
            }
            sum / count
        }
        "Sum" => sum,
        "SampleCount" => count,
        "Minimum" => points.iter().map(|p| p.2).fold(f64::INFINITY, f64::min),
        "Maximum" => points.iter().map(|p| p.3).fold(f64::NEG_INFINITY, f64::max),
        s if s.starts_with('p') => {
            // Percentiles over the per-datum means (the sandbox keeps no raw distribution).
            let q: f64 = s[1..]
                .parse()
                .ok()
                .filter(|q| (0.0..=100.0).contains(q))
                .ok_or_else(|| invalid(format!("Invalid statistic {s}")))?;
            let mut means: Vec<f64> = points
                .iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| p.0 / p.1)
                .collect();
            if means.is_empty() {
                return Ok(None);
            }
            means.sort_by(f64::total_cmp);
            let idx = ((q / 100.0) * (means.len() - 1) as f64).round() as usize;
            means[idx.min(means.len() - 1)]
        }
        other => return Err(invalid(format!("Invalid statistic {other}"))),
    }))
}

fn get_metric_data(world: &mut World, ctx: &Ctx<'_>, input: &Value) -> Result<Value, ApiError> {
    let queries = get_array(input, "MetricDataQueries");
    if queries.is_empty() || queries.len() > MAX_QUERIES {
        return Err(invalid(format!(
            "The collection MetricDataQueries must contain between 1 and {MAX_QUERIES} items."
        )));
    }
    let start = get_f64(input, "StartTime").ok_or_else(|| invalid("StartTime is required"))?;
    let end = get_f64(input, "EndTime").ok_or_else(|| invalid("EndTime is required"))?;
    if !start.is_finite() || !end.is_finite() {
        return Err(invalid("StartTime and EndTime must be valid timestamps."));
    }
    if start >= end {
        return Err(invalid(
            "The parameter StartTime must be less than the parameter EndTime.",
        ));
    }
    let ascending = get_str(input, "ScanBy") == Some("TimestampAscending");
    let first_query = match get_str(input, "NextToken") {
        None => 0,
        Some(t) => crate::paging::decode_token(t)
            .filter(|i| *i < queries.len())
            .ok_or_else(|| ApiError::bad("InvalidNextToken", "The NextToken is invalid."))?,
    };
    let mut datapoints = 0.0;
    let mut next_token = None;
    let mut results = Vec::new();
    for (index, q) in queries.iter().enumerate().skip(first_query) {
        let id = get_str(q, "Id").ok_or_else(|| invalid("MetricDataQuery.Id is required"))?;
        if get(q, "ReturnData").is_some_and(|v| matches!(v, Value::Bool(false))) {
            continue;
        }
        let Some(stat) = get(q, "MetricStat") else {
            // Metric math is not evaluated by the sandbox; say so in the result.
            results.push(map(vec![
                ("Id", text(id)),
                ("Label", text(get_str(q, "Label").unwrap_or(id))),
                ("Timestamps", Value::Array(Vec::new())),
                ("Values", Value::Array(Vec::new())),
                ("StatusCode", text("InternalError")),
                (
                    "Messages",
                    Value::Array(vec![map(vec![
                        ("Code", text("Unsupported")),
                        (
                            "Value",
                            text("The sandbox evaluates MetricStat queries only, not expressions."),
                        ),
                    ])]),
                ),
            ]));
            continue;
        };
        let metric = metric_id(
            get(stat, "Metric").ok_or_else(|| invalid("MetricStat.Metric is required"))?,
        )?;
        let period =
            get_f64(stat, "Period").ok_or_else(|| invalid("MetricStat.Period is required"))?;
        if !(period >= 1.0 && (period % 60.0 == 0.0 || [1.0, 5.0, 10.0, 30.0].contains(&period))) {
            return Err(invalid(format!(
                "The parameter Period must be 1, 5, 10, 30 or a multiple of 60; got {period}."
            )));
        }
        let stat_name =
            get_str(stat, "Stat").ok_or_else(|| invalid("MetricStat.Stat is required"))?;
        let covered = ((end - start) / period).ceil() + 1.0;
        if covered > MAX_DATAPOINTS {
            return Err(invalid(format!(
                "Query {id} covers more than {MAX_DATAPOINTS} datapoints; use a longer period or a shorter window."
            )));
        }
        if datapoints + covered > MAX_DATAPOINTS {
            next_token = Some(crate::paging::encode_token(index));
            break;
        }
        datapoints += covered;
        let (timestamps, values, synthetic) =
            series(world, ctx, &metric, stat_name, period, start, end)?;
        let (mut timestamps, mut values) = (timestamps, values);
        if !ascending {
            timestamps.reverse();
            values.reverse();
        }
        let mut messages = Vec::new();
        if synthetic {
            messages.push(map(vec![
                ("Code", text(SYNTHETIC_CODE)),
                (
                    "Value",
                    text("Generated by envctl-sandbox; not a measurement."),
                ),
            ]));
        }
        results.push(map(vec![
            ("Id", text(id)),
            ("Label", text(get_str(q, "Label").unwrap_or(&metric.metric))),
            (
                "Timestamps",
                Value::Array(timestamps.into_iter().map(cbor::timestamp).collect()),
            ),
            (
                "Values",
                Value::Array(values.into_iter().map(Value::Float).collect()),
            ),
            ("StatusCode", text("Complete")),
            ("Messages", Value::Array(messages)),
        ]));
    }
    let mut out = vec![
        ("MetricDataResults", Value::Array(results)),
        ("Messages", Value::Array(Vec::new())),
    ];
    if let Some(t) = next_token {
        out.push(("NextToken", text(&t)));
    }
    Ok(map(out))
}

/// The datapoints of one metric and statistic: (timestamps, values, synthetic?).
fn series(
    world: &World,
    ctx: &Ctx<'_>,
    metric: &MetricId,
    stat: &str,
    period: f64,
    start: f64,
    end: f64,
) -> Result<(Vec<f64>, Vec<f64>, bool), ApiError> {
    let end = end.min(ctx.now);
    let first = (start / period).floor() * period;
    let mut timestamps = Vec::new();
    let mut values = Vec::new();
    if let Some(s) = world.cloudwatch.series.get(&metric.key()) {
        let mut buckets: BTreeMap<i64, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
        for &(t, sum, count, min, max) in &s.points {
            if t >= start && t < end {
                let b = ((t - first) / period).floor() as i64;
                buckets.entry(b).or_default().push((sum, count, min, max));
            }
        }
        for (b, pts) in buckets {
            if let Some(v) = statistic(stat, &pts)? {
                timestamps.push(first + b as f64 * period);
                values.push(v);
            }
        }
        return Ok((timestamps, values, false));
    }
    let Some(shape) = synthetic_shape(world, metric) else {
        return Ok((timestamps, values, false));
    };
    let dims: Vec<String> = metric
        .dimensions
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    let mut parts: Vec<&str> = vec![&metric.namespace, &metric.metric];
    parts.extend(dims.iter().map(String::as_str));
    let seed = hash_str(0, &parts);
    // One sample per minute; for long periods sample coarser to bound the work per query.
    let step = ((period / 3600.0).floor() * 60.0).clamp(60.0, 3600.0);
    let mut bucket = first;
    while bucket < end {
        let mut pts = Vec::new();
        let mut t = bucket;
        while t < bucket + period && t < end {
            if t >= start {
                let v = sample(shape, seed, t);
                pts.push((v, 1.0, v, v));
            }
            t += if period < 60.0 { period } else { step };
        }
        if let Some(v) = statistic(stat, &pts)? {
            timestamps.push(bucket);
            values.push(v);
        }
        bucket += period;
    }
    Ok((timestamps, values, true))
}

fn put_metric_data(
    state: &mut CloudWatchState,
    ctx: &Ctx<'_>,
    input: &Value,
) -> Result<Value, ApiError> {
    let namespace = get_str(input, "Namespace")
        .filter(|n| !n.is_empty())
        .ok_or_else(|| invalid("The parameter Namespace is required."))?
        .to_string();
    let data = get_array(input, "MetricData");
    if data.is_empty() || data.len() > 1000 {
        return Err(invalid(
            "The collection MetricData must contain between 1 and 1000 items.",
        ));
    }
    let mut staged = Vec::new();
    for d in data {
        let mut id = metric_id(&map(vec![
            ("Namespace", text(&namespace)),
            (
                "MetricName",
                get(d, "MetricName").cloned().unwrap_or(Value::Null),
            ),
            (
                "Dimensions",
                get(d, "Dimensions")
                    .cloned()
                    .unwrap_or(Value::Array(Vec::new())),
            ),
        ]))?;
        id.dimensions.dedup();
        let t = get_f64(d, "Timestamp").unwrap_or(ctx.now);
        let mut points = Vec::new();
        if let Some(v) = get_f64(d, "Value") {
            points.push((t, v, 1.0, v, v));
        }
        let counts = get_array(d, "Counts");
        for (i, v) in get_array(d, "Values").iter().enumerate() {
            let v = as_f64(v).ok_or_else(|| invalid("Values must be numbers"))?;
            let c = counts.get(i).and_then(as_f64).unwrap_or(1.0);
            points.push((t, v * c, c, v, v));
        }
        if let Some(s) = get(d, "StatisticValues") {
            let f = |k: &str| {
                get_f64(s, k).ok_or_else(|| invalid(format!("StatisticValues.{k} is required")))
            };
            points.push((
                t,
                f("Sum")?,
                f("SampleCount")?,
                f("Minimum")?,
                f("Maximum")?,
            ));
        }
        if points.is_empty() {
            return Err(invalid(format!(
                "The parameter MetricData.member.Value is required for metric {}.",
                id.metric
            )));
        }
        staged.push((id, points));
    }
    for (id, points) in staged {
        let entry = state.series.entry(id.key()).or_insert_with(|| Series {
            namespace: id.namespace.clone(),
            metric: id.metric.clone(),
            dimensions: id.dimensions.clone(),
            points: Vec::new(),
        });
        entry.points.extend(points);
    }
    Ok(map(Vec::new()))
}

fn list_metrics(world: &World, input: &Value) -> Result<Value, ApiError> {
    let namespace = get_str(input, "Namespace");
    let metric_name = get_str(input, "MetricName");
    let filters: Vec<(String, Option<String>)> = get_array(input, "Dimensions")
        .iter()
        .filter_map(|d| {
            Some((
                get_str(d, "Name")?.to_string(),
                get_str(d, "Value").map(str::to_string),
            ))
        })
        .collect();
    let mut all: BTreeMap<String, MetricId> = BTreeMap::new();
    for s in world.cloudwatch.series.values() {
        let id = MetricId {
            namespace: s.namespace.clone(),
            metric: s.metric.clone(),
            dimensions: s.dimensions.clone(),
        };
        all.insert(id.key(), id);
    }
    for (ns, m, dims, _) in SYNTHETIC {
        let instances: Vec<Vec<(String, String)>> = match *ns {
            "AWS/ECS" => world
                .ecs
                .active_services()
                .into_iter()
                .map(|(c, s)| vec![("ClusterName".into(), c), ("ServiceName".into(), s)])
                .collect(),
            "AWS/RDS" => world
                .rds
                .instance_ids()
                .into_iter()
                .map(|i| vec![("DBInstanceIdentifier".into(), i)])
                .collect(),
            "AWS/Kafka" => world
                .kafka
                .active_clusters()
                .into_iter()
                .flat_map(|(c, n)| {
                    (1..=n).map(move |b| {
                        vec![
                            ("Broker ID".into(), b.to_string()),
                            ("Cluster Name".into(), c.clone()),
                        ]
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        for mut d in instances {
            d.sort();
            debug_assert_eq!(d.len(), dims.len());
            let id = MetricId {
                namespace: ns.to_string(),
                metric: m.to_string(),
                dimensions: d,
            };
            all.insert(id.key(), id);
        }
    }
    let matching: Vec<&MetricId> = all
        .values()
        .filter(|id| namespace.is_none_or(|n| n == id.namespace))
        .filter(|id| metric_name.is_none_or(|n| n == id.metric))
        .filter(|id| {
            filters.iter().all(|(n, v)| match v {
                Some(v) => id.dim(n) == Some(v.as_str()),
                None => id.dim(n).is_some(),
            })
        })
        .collect();
    let start = match get_str(input, "NextToken") {
        Some(t) => crate::paging::decode_token(t)
            .ok_or_else(|| ApiError::bad("InvalidNextToken", "Invalid NextToken"))?,
        None => 0,
    };
    let end = start.saturating_add(LIST_PAGE).min(matching.len());
    let metrics: Vec<Value> = matching
        .get(start..end)
        .unwrap_or(&[])
        .iter()
        .map(|id| {
            map(vec![
                ("Namespace", text(&id.namespace)),
                ("MetricName", text(&id.metric)),
                (
                    "Dimensions",
                    Value::Array(
                        id.dimensions
                            .iter()
                            .map(|(n, v)| map(vec![("Name", text(n)), ("Value", text(v))]))
                            .collect(),
                    ),
                ),
            ])
        })
        .collect();
    let mut out = vec![("Metrics", Value::Array(metrics))];
    if end < matching.len() {
        out.push(("NextToken", text(&crate::paging::encode_token(end))));
    }
    Ok(map(out))
}
