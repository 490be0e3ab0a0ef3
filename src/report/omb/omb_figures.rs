//! What a report shows of one OMB result, computed as OMB computes it.
//!
//! - Throughput: OMB's `WorkloadGenerator` records, every ~10 seconds, messages sent (and
//!   received) divided by the measured elapsed seconds; its log line prints the bytes too,
//!   as bytes / elapsed / 1024 / 1024 "MB/s". The result file keeps only the message rates,
//!   so MB/s here is msg/s x message size / 2^20, OMB's own unit. The mean is the mean of
//!   the windows, every window weighing the same, as OMB's `ResultsToCsv` computes its
//!   `prod-rate-avg` and `con-rate-avg` (it truncates each rate to a whole msg/s first);
//!   windows where nothing was published count, as there.
//! - Latency: the `aggregated*` fields as OMB wrote them (HdrHistogram percentiles over the
//!   whole test, ms); nothing is recomputed from the per-window values, which cannot be
//!   combined into percentiles.
//! - Publish errors: `publishErrorRate` (failed sends per second, per window), when the
//!   file has it.
//! - Backlog: messages sent and not yet received at the end of each window.
use super::omb_result::OmbResult;

/// The length of one of OMB's windows: the driver sleeps 10 s between two samples
/// (`Thread.sleep(10000)` in `WorkloadGenerator.printAndCollectStats`) and divides by the
/// elapsed time it measures, so a window is 10 s and a little more.
pub const OMB_WINDOW_SECS: f64 = 10.0;

const MIB: f64 = 1024.0 * 1024.0;

/// A rate per window and its mean.
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    /// Messages per second, one value per window, as OMB wrote them.
    pub series_msg_s: Vec<f64>,
    pub mean_msg_s: f64,
    /// The mean in MB/s (2^20 bytes, OMB's unit), when the message size is known.
    pub mean_mb_s: Option<f64>,
}

impl Throughput {
    fn of(series: &[f64], message_size: Option<u64>) -> Throughput {
        let mean_msg_s = mean(series);
        Throughput {
            series_msg_s: series.to_vec(),
            mean_msg_s,
            mean_mb_s: message_size.map(|bytes| mean_msg_s * bytes as f64 / MIB),
        }
    }
}

/// Latency percentiles over the whole test, milliseconds, as OMB aggregated them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencyFigures {
    pub avg: Option<f64>,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub p9999: Option<f64>,
    pub max: Option<f64>,
}

impl LatencyFigures {
    /// The percentiles a report's table shows, with their column names.
    pub fn columns(&self) -> [(&'static str, Option<f64>); 6] {
        [
            ("p50", self.p50),
            ("p75", self.p75),
            ("p95", self.p95),
            ("p99", self.p99),
            ("p99.9", self.p999),
            ("max", self.max),
        ]
    }
}

/// Failed sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorFigures {
    /// Mean of the windows' error rates, errors per second.
    pub mean_err_s: f64,
    pub max_err_s: f64,
    pub windows_with_errors: usize,
}

/// Messages sent and not yet received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogFigures {
    pub max: i64,
    /// At the end of the last window.
    pub last: i64,
}

/// One OMB result as a report shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct OmbFigures {
    pub workload: String,
    pub driver: String,
    /// From the result, else from the workload envctl wrote.
    pub message_size: Option<u64>,
    pub windows: usize,
    pub publish: Throughput,
    pub consume: Throughput,
    pub publish_errors: Option<ErrorFigures>,
    pub backlog: Option<BacklogFigures>,
    pub publish_latency: LatencyFigures,
    pub end_to_end_latency: LatencyFigures,
}

impl OmbFigures {
    /// The figures of `result`; `workload_message_size` is the workload's `messageSize`,
    /// used when the result does not carry it (OMB before it wrote `messageSize`).
    pub fn of(result: &OmbResult, workload_message_size: Option<u64>) -> OmbFigures {
        let message_size = result
            .message_size
            .filter(|&s| s > 0)
            .or(workload_message_size);
        let publish_errors = result.publish_error_rate.as_deref().map(|e| ErrorFigures {
            mean_err_s: mean(e),
            max_err_s: e.iter().copied().fold(0.0, f64::max),
            windows_with_errors: e.iter().filter(|&&v| v > 0.0).count(),
        });
        let backlog = match (result.backlog.iter().max(), result.backlog.last()) {
            (Some(&max), Some(&last)) => Some(BacklogFigures { max, last }),
            _ => None,
        };
        OmbFigures {
            workload: result.workload.clone(),
            driver: result.driver.clone(),
            message_size,
            windows: result.publish_rate.len(),
            publish: Throughput::of(&result.publish_rate, message_size),
            consume: Throughput::of(&result.consume_rate, message_size),
            publish_errors,
            backlog,
            publish_latency: LatencyFigures {
                avg: finite(result.aggregated_publish_latency_avg),
                p50: finite(result.aggregated_publish_latency_50pct),
                p75: finite(result.aggregated_publish_latency_75pct),
                p95: finite(result.aggregated_publish_latency_95pct),
                p99: finite(result.aggregated_publish_latency_99pct),
                p999: finite(result.aggregated_publish_latency_999pct),
                p9999: finite(result.aggregated_publish_latency_9999pct),
                max: finite(result.aggregated_publish_latency_max),
            },
            end_to_end_latency: LatencyFigures {
                avg: finite(result.aggregated_end_to_end_latency_avg),
                p50: finite(result.aggregated_end_to_end_latency_50pct),
                p75: finite(result.aggregated_end_to_end_latency_75pct),
                p95: finite(result.aggregated_end_to_end_latency_95pct),
                p99: finite(result.aggregated_end_to_end_latency_99pct),
                p999: finite(result.aggregated_end_to_end_latency_999pct),
                p9999: finite(result.aggregated_end_to_end_latency_9999pct),
                max: finite(result.aggregated_end_to_end_latency_max),
            },
        }
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// A percentile of an empty histogram is no figure (Jackson writes NaN as "NaN").
fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    //! Our figures against OMB's own, on result files from public repositories
    //! (tests/fixtures/omb/SOURCE.md names each one's repository, path and commit).
    use super::*;
    use serde_json::Value;

    struct Fixture {
        name: &'static str,
        text: &'static str,
        /// The workload's message size, for files older than OMB's `messageSize` field.
        workload_message_size: Option<u64>,
    }

    const FIXTURES: [Fixture; 3] = [
        Fixture {
            name: "omb-1-topic-1-partition-1kb-kafka.json",
            text: include_str!(
                "../../../tests/fixtures/omb/omb-1-topic-1-partition-1kb-kafka.json"
            ),
            workload_message_size: None,
        },
        Fixture {
            name: "redpanda-kafka-throughput-sync.json",
            text: include_str!("../../../tests/fixtures/omb/redpanda-kafka-throughput-sync.json"),
            workload_message_size: Some(1024),
        },
        Fixture {
            name: "redpanda-kafka-latency-sync-200k.json",
            text: include_str!("../../../tests/fixtures/omb/redpanda-kafka-latency-sync-200k.json"),
            workload_message_size: Some(1024),
        },
    ];

    fn read(f: &Fixture) -> (OmbFigures, Value) {
        let result = match OmbResult::parse(f.name, f.text) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        let raw: Value = match serde_json::from_str(f.text) {
            Ok(v) => v,
            Err(e) => panic!("{}: {e}", f.name),
        };
        (OmbFigures::of(&result, f.workload_message_size), raw)
    }

    fn field(raw: &Value, name: &str) -> Option<f64> {
        raw.get(name).and_then(Value::as_f64)
    }

    fn series(raw: &Value, name: &str) -> Option<Vec<f64>> {
        raw.get(name)?
            .as_array()?
            .iter()
            .map(Value::as_f64)
            .collect::<Option<Vec<f64>>>()
    }

    #[test]
    fn every_figure_is_the_field_omb_wrote() {
        for f in &FIXTURES {
            let (fig, raw) = read(f);
            let name = f.name;
            assert_eq!(
                Some(fig.publish.series_msg_s.clone()),
                series(&raw, "publishRate"),
                "{name}"
            );
            assert_eq!(
                Some(fig.consume.series_msg_s.clone()),
                series(&raw, "consumeRate"),
                "{name}"
            );
            assert_eq!(fig.windows, fig.publish.series_msg_s.len(), "{name}");
            for (ours, prefix) in [
                (fig.publish_latency, "aggregatedPublishLatency"),
                (fig.end_to_end_latency, "aggregatedEndToEndLatency"),
            ] {
                for (value, suffix) in [
                    (ours.avg, "Avg"),
                    (ours.p50, "50pct"),
                    (ours.p75, "75pct"),
                    (ours.p95, "95pct"),
                    (ours.p99, "99pct"),
                    (ours.p999, "999pct"),
                    (ours.p9999, "9999pct"),
                    (ours.max, "Max"),
                ] {
                    let theirs = field(&raw, &format!("{prefix}{suffix}"));
                    assert!(theirs.is_some(), "{name}: {prefix}{suffix} missing");
                    assert_eq!(value, theirs, "{name}: {prefix}{suffix}");
                }
            }
            let backlog = series(&raw, "backlog").unwrap_or_default();
            assert_eq!(
                fig.backlog.map(|b| (b.max as f64, b.last as f64)),
                Some((
                    backlog.iter().copied().fold(f64::MIN, f64::max),
                    backlog.last().copied().unwrap_or(f64::NAN)
                )),
                "{name}"
            );
            match series(&raw, "publishErrorRate") {
                Some(errors) => {
                    let e = fig
                        .publish_errors
                        .map(|e| (e.max_err_s, e.windows_with_errors));
                    let max = errors.iter().copied().fold(0.0, f64::max);
                    let windows = errors.iter().filter(|&&v| v > 0.0).count();
                    assert_eq!(e, Some((max, windows)), "{name}");
                }
                None => assert_eq!(fig.publish_errors, None, "{name}"),
            }
            // OMB's own mean (ResultsToCsv's prod-rate-avg / con-rate-avg) averages the
            // windows' rates truncated to whole msg/s: ours differs by less than one msg/s.
            for (ours, key) in [
                (fig.publish.mean_msg_s, "publishRate"),
                (fig.consume.mean_msg_s, "consumeRate"),
            ] {
                let rates = series(&raw, key).unwrap_or_default();
                let truncated = rates.iter().map(|r| r.trunc()).sum::<f64>() / rates.len() as f64;
                assert!((ours - truncated).abs() < 1.0, "{name}: {key} mean");
            }
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn means_and_megabytes_are_those_computed_apart() {
        // Means computed independently (Python's sum/len over the same files); MB/s =
        // msg/s x message size / 2^20 as OMB's log prints it.
        let expected = [
            // file, publish msg/s, consume msg/s, publish MB/s, backlog max/last, errors
            (
                42075.43972537014,
                42074.877666819564,
                41.089296606806776,
                (1014, 0),
                Some(2),
            ),
            (
                590549.5936081677,
                590559.5127020141,
                576.7085875079763,
                (45600, 11156),
                None,
            ),
            (
                200065.1709961557,
                200065.19375670535,
                195.3761435509333,
                (174, 60),
                None,
            ),
        ];
        for (f, (publish, consume, mb_s, (max, last), error_windows)) in
            FIXTURES.iter().zip(expected)
        {
            let (fig, _) = read(f);
            assert!(close(fig.publish.mean_msg_s, publish), "{}", f.name);
            assert!(close(fig.consume.mean_msg_s, consume), "{}", f.name);
            assert!(
                fig.publish.mean_mb_s.is_some_and(|m| close(m, mb_s)),
                "{}",
                f.name
            );
            assert_eq!(
                fig.backlog,
                Some(BacklogFigures { max, last }),
                "{}",
                f.name
            );
            assert_eq!(
                fig.publish_errors.map(|e| e.windows_with_errors),
                error_windows,
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn the_pinned_values_of_omb_s_own_file() {
        // openmessaging/benchmark's committed result: 87 windows of ~50k msg/s of 1 KiB.
        let (fig, _) = read(&FIXTURES[0]);
        assert_eq!(fig.message_size, Some(1024));
        assert_eq!(fig.windows, 87);
        assert_eq!(fig.publish.series_msg_s[0], 54560.15650749273);
        assert_eq!(fig.publish_latency.p50, Some(12.15));
        assert_eq!(fig.publish_latency.p99, Some(106.617));
        assert_eq!(fig.publish_latency.p999, Some(539.399));
        assert_eq!(fig.publish_latency.max, Some(846.899));
        assert_eq!(fig.end_to_end_latency.p99, Some(116.0));
        assert_eq!(fig.end_to_end_latency.max, Some(852.003));
        let errors = fig.publish_errors.map(|e| e.max_err_s);
        assert_eq!(errors, Some(0.09597763885942551));
    }

    #[test]
    fn a_result_without_a_message_size_has_no_megabytes() {
        let (fig, _) = read(&Fixture {
            workload_message_size: None,
            ..FIXTURES[1]
        });
        assert_eq!(fig.message_size, None);
        assert_eq!(fig.publish.mean_mb_s, None);
        assert!(fig.publish.mean_msg_s > 0.0);
    }
}
