//! CloudWatch GetMetricData: many series in few calls (500 queries per call).
use aws_sdk_cloudwatch::Client;
use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat, ScanBy};

use super::error::AwsError;

/// One series to fetch.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricQuery {
    pub namespace: String,
    pub metric: String,
    pub dimensions: Vec<(String, String)>,
    pub stat: String,
    pub period_s: u32,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricData {
    pub timestamps: Vec<f64>,
    pub values: Vec<f64>,
}

/// What GetMetricData returned, in query order; `synthetic` when the answer said so (the
/// sandbox marks its generated series with a `Synthetic` message).
#[derive(Debug, Clone, Default)]
pub struct MetricAnswer {
    pub series: Vec<MetricData>,
    pub synthetic: bool,
}

const MAX_QUERIES: usize = 500;

pub async fn get_metric_data(
    c: &Client,
    queries: &[MetricQuery],
    start: f64,
    end: f64,
) -> Result<MetricAnswer, AwsError> {
    let mut answer = MetricAnswer {
        series: vec![MetricData::default(); queries.len()],
        synthetic: false,
    };
    for (chunk_index, chunk) in queries.chunks(MAX_QUERIES).enumerate() {
        let base = chunk_index * MAX_QUERIES;
        let sdk_queries: Vec<MetricDataQuery> = chunk
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let metric = Metric::builder()
                    .namespace(&q.namespace)
                    .metric_name(&q.metric)
                    .set_dimensions(Some(
                        q.dimensions
                            .iter()
                            .map(|(n, v)| Dimension::builder().name(n).value(v).build())
                            .collect(),
                    ))
                    .build();
                MetricDataQuery::builder()
                    .id(format!("q{}", base + i))
                    .metric_stat(
                        MetricStat::builder()
                            .metric(metric)
                            .period(q.period_s as i32)
                            .stat(&q.stat)
                            .build(),
                    )
                    .return_data(true)
                    .build()
            })
            .collect();
        let mut token: Option<String> = None;
        loop {
            let out = c
                .get_metric_data()
                .set_metric_data_queries(Some(sdk_queries.clone()))
                .start_time(DateTime::from_secs_f64(start))
                .end_time(DateTime::from_secs_f64(end))
                .scan_by(ScanBy::TimestampAscending)
                .set_next_token(token.clone())
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("GetMetricData", "cloudwatch", e))?;
            if out.messages().iter().any(|m| m.code() == Some("Synthetic")) {
                answer.synthetic = true;
            }
            for r in out.metric_data_results() {
                if r.messages().iter().any(|m| m.code() == Some("Synthetic")) {
                    answer.synthetic = true;
                }
                let Some(index) = r
                    .id()
                    .and_then(|id| id.strip_prefix('q'))
                    .and_then(|n| n.parse::<usize>().ok())
                else {
                    continue;
                };
                if let Some(series) = answer.series.get_mut(index) {
                    series
                        .timestamps
                        .extend(r.timestamps().iter().map(|t| t.as_secs_f64()));
                    series.values.extend_from_slice(r.values());
                }
            }
            token = out.next_token().map(str::to_string);
            if token.is_none() {
                break;
            }
        }
    }
    Ok(answer)
}
