//! Everything the report needs from one point's directory: step durations, per-label
//! transaction figures from its JTL files, metric averages and maxima over the workload
//! window, memory trends, and its effective configuration flattened to `path = value`.
use std::collections::BTreeMap;
use std::path::Path;

use crate::report::jtl::time_buckets::{BucketPercentiles, bucket_width_ms};
use crate::report::jtl::{Convention, summarize_jtl_files_over_time};
use crate::report::run::figure::{FigureKey, Provenance, Section, metric_title, unit_symbol};
use crate::report::run::memory_trend::Trend;
use crate::results::{EffectiveConfig, MetricSeries, MetricsRecord, PointRecord, Status};

/// One line of a chart: a metric of one resource over the point's whole metrics window.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub section: Section,
    pub subject: String,
    pub metric: String,
    pub unit: String,
    /// Minutes since the workload started (negative in the padding before it), value.
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct PointMeasurement {
    pub id: String,
    pub axes: BTreeMap<String, String>,
    pub repeat: u32,
    pub status: Status,
    pub failure: Option<String>,
    /// Why its figures are not those of a whole, passing workload (see [`super::shortfall`]).
    pub shortfall: Option<String>,
    /// The workload window (seconds since the epoch): first step start to last step end.
    pub window: (f64, f64),
    /// In the order measured: steps, labels, then metric series as listed in metrics.json.
    pub figures: Vec<(FigureKey, f64)>,
    /// Per ECS service with a `MemoryUtilization` series.
    pub memory_trends: Vec<(String, Trend)>,
    pub configuration: BTreeMap<String, String>,
    pub timelines: Vec<Timeline>,
    /// Whether CloudWatch answered with the sandbox's synthetic series.
    pub synthetic_metrics: bool,
    /// Whether the point ran against the sandbox (`--sandbox`), where steps run their
    /// demo workload and time passes on a simulated clock.
    pub sandbox: bool,
    /// Problems that left figures out (a JTL file that could not be read, ...).
    pub warnings: Vec<String>,
    /// Why the point's `metrics.json` could not be read, if it could not.
    pub metrics_missing: Option<String>,
    /// Per `load:` step: how many engines produced its samples and their start skew.
    pub load_engines: Vec<String>,
}

impl PointMeasurement {
    /// Measures a point read by [`crate::results::RunDir::read`]; `point_dir` is its directory.
    pub fn measure(
        point_dir: &Path,
        record: &PointRecord,
        effective: &EffectiveConfig,
        metrics: Option<&MetricsRecord>,
        convention: Convention,
        sandbox: bool,
    ) -> Self {
        let window = workload_window(record, metrics);
        let mut measurement = Self {
            id: record.id.clone(),
            axes: record.axes.clone(),
            repeat: record.repeat,
            status: record.status.clone(),
            failure: record.failure.clone(),
            shortfall: super::shortfall::of(record),
            window,
            figures: Vec::new(),
            memory_trends: Vec::new(),
            configuration: flatten_configuration(effective),
            timelines: Vec::new(),
            synthetic_metrics: metrics.is_some_and(|m| m.synthetic),
            sandbox,
            warnings: Vec::new(),
            metrics_missing: None,
            load_engines: Vec::new(),
        };
        measurement.add_step_durations(record);
        measurement.add_transactions(point_dir, record, convention);
        if let Some(metrics) = metrics {
            for series in &metrics.series {
                measurement.add_series(series);
            }
        }
        measurement
    }

    /// Where this point's figures of `section` come from.
    pub fn provenance(&self, section: Section) -> Provenance {
        Provenance::of(section, self.sandbox, self.synthetic_metrics)
    }

    fn add_step_durations(&mut self, record: &PointRecord) {
        for step in &record.steps {
            self.figures.push((
                FigureKey {
                    section: Section::Duration,
                    subject: step.name.clone(),
                    metric: "Duration".to_owned(),
                    statistic: "Value".to_owned(),
                    unit: "s".to_owned(),
                },
                step.duration_s,
            ));
            if let Some(engines) = &step.engines {
                self.add_engines(&step.name, engines);
            }
        }
    }

    /// A `load:` step's engines: how many produced its samples and their start skew, and a
    /// warning for an engine whose CPU was saturated (its latencies measure the generator).
    fn add_engines(&mut self, step: &str, engines: &crate::results::EnginesRecord) {
        self.load_engines.push(format!(
            "{step}: {} engine{}{}",
            engines.started,
            if engines.started == 1 { "" } else { "s" },
            engines
                .start_skew_s
                .map(|s| format!(", start skew {s:.3} s"))
                .unwrap_or_default()
        ));
        for e in &engines.engines {
            if let Some(cpu) = e
                .max_cpu_percent
                .filter(|c| *c > crate::load::SATURATED_CPU_PERCENT)
            {
                self.warnings.push(format!(
                    "point {}, step {step}: {} ran at {cpu:.0}% of its vCPU for a minute: its latencies measure the load generator, not the system",
                    self.id, e.name
                ));
            }
        }
    }

    /// All JTL files of the point are merged, as one test: a label measured by two
    /// parallel steps is one transaction.
    fn add_transactions(&mut self, point_dir: &Path, record: &PointRecord, convention: Convention) {
        let files: Vec<_> = record
            .steps
            .iter()
            .filter_map(|step| step.jtl_file.as_ref())
            .map(|file| point_dir.join(file))
            .collect();
        if files.is_empty() {
            return;
        }
        // Percentiles over time too, in about 30 buckets of the workload, for the charts.
        let (start, end) = self.window;
        let origin_ms = (start * 1000.0).round() as i64;
        let width_ms = bucket_width_ms(((end - start) * 1000.0).round() as i64);
        let report = match summarize_jtl_files_over_time(&files, convention, origin_ms, width_ms) {
            Ok((report, warnings)) => {
                self.warnings.extend(
                    warnings
                        .iter()
                        .map(|warning| format!("point {}: {warning}", self.id)),
                );
                report
            }
            Err(error) => {
                self.warnings
                    .push(format!("point {}: transactions left out: {error}", self.id));
                return;
            }
        };
        for timeline in &report.timelines {
            for (metric, percentile) in [
                (
                    "Response time p50",
                    (|b: &BucketPercentiles| b.p50_ms) as fn(&_) -> f64,
                ),
                ("Response time p95", |b: &BucketPercentiles| b.p95_ms),
            ] {
                self.timelines.push(Timeline {
                    section: Section::Transaction,
                    subject: timeline.label.clone(),
                    metric: metric.to_owned(),
                    unit: "ms".to_owned(),
                    // Each bucket at its middle, in minutes from the workload's start.
                    points: timeline
                        .buckets
                        .iter()
                        .map(|bucket| {
                            let middle_ms = bucket.start_ms - origin_ms + timeline.width_ms / 2;
                            (middle_ms as f64 / 60_000.0, percentile(bucket))
                        })
                        .collect(),
                });
            }
        }
        for label in &report.labels {
            let key = |metric: &str, statistic: &str, unit: &str| FigureKey {
                section: Section::Transaction,
                subject: label.label.clone(),
                metric: metric.to_owned(),
                statistic: statistic.to_owned(),
                unit: unit.to_owned(),
            };
            // Seconds, as the published reports give "Check-in avg 0.736 sec".
            self.figures
                .push((key("Response time", "Average", "s"), label.mean_ms / 1000.0));
            self.figures
                .push((key("Errors", "Value", "%"), label.error_percent));
            for (statistic, ms) in [
                ("p90", label.p90_ms),
                ("p95", label.p95_ms),
                ("p99", label.p99_ms),
            ] {
                self.figures
                    .push((key("Response time", statistic, "s"), ms / 1000.0));
            }
        }
    }

    fn add_series(&mut self, series: &MetricSeries) {
        let section = Section::of_source(&series.source);
        let subject = match &series.role {
            Some(role) => format!("{role} {}", series.resource),
            None => series.resource.clone(),
        };
        // Usually the collector asks CloudWatch for the per-period Average; a series of
        // per-period Maxima is another figure (its average is an average of peaks), so it
        // must neither be labelled as the plain metric nor collide with it.
        let per_period_average = series.stat.is_empty() || series.stat == "Average";
        let metric = if per_period_average {
            metric_title(&series.metric)
        } else {
            format!(
                "{} (per-period {})",
                metric_title(&series.metric),
                series.stat
            )
        };
        let unit = unit_symbol(&series.unit);
        let (start, end) = self.window;
        let inside: Vec<(f64, f64)> = series
            .timestamps
            .iter()
            .zip(&series.values)
            .filter(|(t, v)| **t >= start && **t <= end && v.is_finite())
            .map(|(t, v)| (*t, *v))
            .collect();
        self.timelines.push(Timeline {
            section,
            subject: subject.clone(),
            metric: metric.clone(),
            unit: unit.clone(),
            points: series
                .timestamps
                .iter()
                .zip(&series.values)
                .filter(|(t, v)| t.is_finite() && v.is_finite())
                .map(|(t, v)| ((t - start) / 60.0, *v))
                .collect(),
        });
        if inside.is_empty() {
            self.warnings.push(format!(
                "point {}: no {} samples of {subject} inside the workload window",
                self.id, series.metric
            ));
            return;
        }
        let values: Vec<f64> = inside.iter().map(|(_, v)| *v).collect();
        let average = values.iter().sum::<f64>() / values.len() as f64;
        let maximum = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        for (statistic, value) in [("Average", average), ("Maximum", maximum)] {
            self.figures.push((
                FigureKey {
                    section,
                    subject: subject.clone(),
                    metric: metric.clone(),
                    statistic: statistic.to_owned(),
                    unit: unit.clone(),
                },
                value,
            ));
        }
        if section == Section::Service && series.metric == "MemoryUtilization" && per_period_average
        {
            let times: Vec<f64> = inside.iter().map(|(t, _)| t - start).collect();
            if let Some(trend) = Trend::fit(&times, &values) {
                self.memory_trends.push((subject, trend));
            }
        }
    }
}

/// First step start to last step end: the load, without the transition before it or
/// the collection padding around it. Without steps, the metrics window.
fn workload_window(record: &PointRecord, metrics: Option<&MetricsRecord>) -> (f64, f64) {
    let start = record
        .steps
        .iter()
        .map(|s| s.started_at)
        .fold(f64::INFINITY, f64::min);
    let end = record
        .steps
        .iter()
        .map(|s| s.finished_at)
        .fold(f64::NEG_INFINITY, f64::max);
    if start.is_finite() && end.is_finite() && end >= start {
        return (start, end);
    }
    match metrics {
        Some(metrics) => (metrics.start, metrics.end),
        None => (
            record.started_at,
            record.finished_at.unwrap_or(record.started_at),
        ),
    }
}

/// `services.mod-users.environment.KAFKA_HOST = b-1...`: every leaf of the effective
/// configuration under a dotted path, so that variants compare key by key.
pub fn flatten_configuration(effective: &EffectiveConfig) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    // Plain structs of strings, numbers and maps serialize without failing; an empty map
    // (nothing to compare) is the harmless fallback.
    if let Ok(value) = serde_json::to_value(effective) {
        flatten_value("", &value, &mut out);
    }
    out
}

fn flatten_value(path: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    let child = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                flatten_value(&child(key), value, out);
            }
        }
        serde_json::Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                flatten_value(&child(&index.to_string()), value, out);
            }
        }
        serde_json::Value::Null => {}
        serde_json::Value::String(text) => {
            out.insert(path.to_owned(), text.clone());
        }
        other => {
            out.insert(path.to_owned(), other.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{EffectiveKafka, MetricSeries, StepRecord, TransitionRecord};

    fn step(started_at: f64, finished_at: f64) -> StepRecord {
        StepRecord {
            name: "load".into(),
            kind: "run".into(),
            group: None,
            command: None,
            started_at,
            finished_at,
            duration_s: finished_at - started_at,
            exit_code: Some(0),
            status: Status::Passed,
            stdout_file: None,
            stderr_file: None,
            jtl_file: None,
            timed_out: false,
            engines: None,
            failure: None,
        }
    }

    fn series(stat: &str, values: &[f64]) -> MetricSeries {
        MetricSeries {
            source: "ecs".into(),
            resource: "okapi-b".into(),
            metric: "CPUUtilization".into(),
            stat: stat.into(),
            unit: "Percent".into(),
            timestamps: (0..values.len()).map(|k| 60.0 * k as f64).collect(),
            values: values.to_vec(),
            ..MetricSeries::default()
        }
    }

    fn figure(m: &PointMeasurement, metric: &str, statistic: &str) -> Option<f64> {
        m.figures
            .iter()
            .find(|(k, _)| k.metric == metric && k.statistic == statistic)
            .map(|(_, v)| *v)
    }

    /// Samples at 0, 60, ..., 300 s; the steps run from 60 to 240 s, so the idle samples
    /// at 0 and 300 s are left out: average (10 + 20 + 30 + 40) / 4 = 25, maximum 40.
    #[test]
    fn metrics_count_only_inside_the_workload_and_per_period_maxima_stay_apart() {
        let record = PointRecord {
            id: "p".into(),
            axes: BTreeMap::new(),
            repeat: 1,
            vars: BTreeMap::new(),
            status: Status::Passed,
            started_at: 0.0,
            finished_at: Some(300.0),
            transition: TransitionRecord::default(),
            steps: vec![step(60.0, 200.0), step(90.0, 240.0)],
            effective_file: "effective.json".into(),
            metrics_file: Some("metrics.json".into()),
            failure: None,
            msk_operations: Vec::new(),
        };
        let metrics = MetricsRecord {
            start: 0.0,
            end: 300.0,
            period_s: 60,
            synthetic: true,
            series: vec![
                series("Average", &[1.0, 10.0, 20.0, 30.0, 40.0, 1.0]),
                series("Maximum", &[2.0, 50.0, 60.0, 70.0, 80.0, 2.0]),
            ],
        };
        let m = PointMeasurement::measure(
            Path::new("."),
            &record,
            &EffectiveConfig::default(),
            Some(&metrics),
            Convention::Aggregate,
            true,
        );
        assert_eq!(m.window, (60.0, 240.0));
        assert_eq!(figure(&m, "CPU", "Average"), Some(25.0));
        assert_eq!(figure(&m, "CPU", "Maximum"), Some(40.0));
        assert_eq!(
            figure(&m, "CPU (per-period Maximum)", "Average"),
            Some(65.0)
        );
        assert!(m.synthetic_metrics);
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        // The chart keeps the idle samples, in minutes from the workload's start.
        assert_eq!(m.timelines[0].points.first(), Some(&(-1.0, 1.0)));
    }

    #[test]
    fn configuration_flattens_to_dotted_paths() {
        let mut effective = EffectiveConfig::default();
        effective.kafka.insert(
            "main".to_owned(),
            EffectiveKafka {
                broker_type: "kafka.m7g.2xlarge".to_owned(),
                brokers: 2,
                server_properties: BTreeMap::from([(
                    "default.replication.factor".to_owned(),
                    "3".to_owned(),
                )]),
                ..EffectiveKafka::default()
            },
        );
        let flat = flatten_configuration(&effective);
        assert_eq!(flat["kafka.main.broker_type"], "kafka.m7g.2xlarge");
        assert_eq!(flat["kafka.main.brokers"], "2");
        assert_eq!(
            flat["kafka.main.server_properties.default.replication.factor"],
            "3"
        );
    }
}
