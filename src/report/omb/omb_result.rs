//! The result file OMB's driver writes, read as it is.
//!
//! OMB's `Benchmark` writes its `TestResult` with Jackson's default pretty printer: one
//! value per ~10-second window in each series (`publishRate`, `consumeRate`, `backlog`,
//! `publishLatency99pct`, ...) and one `aggregated*` value per latency percentile over the
//! whole test. Fields were added over OMB's history (`publishErrorRate`, `messageSize`,
//! `topics`, `partitions`, the publish-delay latencies), so every field but the workload,
//! the driver and the two rates may be missing; unknown fields are ignored, as OMB's own
//! reader (`ResultsToCsv`) ignores them. Jackson writes a NaN or infinite double as the
//! string `"NaN"` / `"Infinity"` (`JsonWriteFeature.WRITE_NAN_AS_STRINGS`, on by default),
//! so numbers are read from strings too.
use super::omb_error::{OmbError, OmbErrorKind};
use serde::{Deserialize, Deserializer};
use std::path::Path;

/// The largest result file read: a 24-hour test has 8,640 windows, a few MB of JSON.
const MAX_RESULT_BYTES: u64 = 64 * 1024 * 1024;

/// One OMB result file, with OMB's field names in camelCase.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OmbResult {
    /// The workload's `name`.
    pub workload: String,
    /// The driver's `name` (`Kafka`, `Pulsar`, ...).
    pub driver: String,
    /// Bytes per message; 0 or missing in results of OMB before it was added.
    #[serde(default)]
    pub message_size: Option<u64>,
    #[serde(default)]
    pub topics: Option<u32>,
    #[serde(default)]
    pub partitions: Option<u32>,
    #[serde(default)]
    pub producers_per_topic: Option<u32>,
    #[serde(default)]
    pub consumers_per_topic: Option<u32>,

    /// Messages published per second, per window.
    #[serde(deserialize_with = "numbers")]
    pub publish_rate: Vec<f64>,
    /// Failed sends per second, per window (missing before OMB recorded it).
    #[serde(default, deserialize_with = "some_numbers")]
    pub publish_error_rate: Option<Vec<f64>>,
    /// Messages consumed per second, per window.
    #[serde(deserialize_with = "numbers")]
    pub consume_rate: Vec<f64>,
    /// Messages sent and not yet received at the end of each window.
    #[serde(default)]
    pub backlog: Vec<i64>,

    // Per-window publish latency, milliseconds.
    #[serde(default, deserialize_with = "numbers")]
    pub publish_latency_avg: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub publish_latency_50pct: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub publish_latency_75pct: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub publish_latency_95pct: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub publish_latency_99pct: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub publish_latency_999pct: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub publish_latency_9999pct: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub publish_latency_max: Vec<f64>,

    // Publish latency over the whole test, milliseconds.
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_publish_latency_avg: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_publish_latency_50pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_publish_latency_75pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_publish_latency_95pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_publish_latency_99pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_publish_latency_999pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_publish_latency_9999pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_publish_latency_max: Option<f64>,

    // Per-window end-to-end latency (producer to consumer), milliseconds.
    #[serde(default, deserialize_with = "numbers")]
    pub end_to_end_latency_avg: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub end_to_end_latency_50pct: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub end_to_end_latency_99pct: Vec<f64>,
    #[serde(default, deserialize_with = "numbers")]
    pub end_to_end_latency_max: Vec<f64>,

    // End-to-end latency over the whole test, milliseconds.
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_end_to_end_latency_avg: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_end_to_end_latency_50pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_end_to_end_latency_75pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_end_to_end_latency_95pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_end_to_end_latency_99pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_end_to_end_latency_999pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_end_to_end_latency_9999pct: Option<f64>,
    #[serde(default, deserialize_with = "some_number")]
    pub aggregated_end_to_end_latency_max: Option<f64>,
}

impl OmbResult {
    /// Reads a result from its text; `source_name` names it in errors.
    pub fn parse(source_name: &str, text: &str) -> Result<OmbResult, OmbError> {
        let fail = |kind| OmbError {
            source_name: source_name.to_string(),
            kind,
        };
        let result: OmbResult =
            serde_json::from_str(text).map_err(|e| fail(OmbErrorKind::Json(e)))?;
        result.check().map_err(fail)?;
        Ok(result)
    }

    /// The series OMB appends to once per window have one length, and rates are rates.
    fn check(&self) -> Result<(), OmbErrorKind> {
        let expected = self.publish_rate.len();
        let mut series: Vec<(&'static str, &[f64])> = vec![
            ("publishRate", &self.publish_rate),
            ("consumeRate", &self.consume_rate),
        ];
        if let Some(errors) = &self.publish_error_rate {
            series.push(("publishErrorRate", errors));
        }
        for (field, values) in &series {
            if values.len() != expected {
                return Err(OmbErrorKind::SeriesLength {
                    field,
                    expected,
                    found: values.len(),
                });
            }
            if let Some((window, &value)) = values
                .iter()
                .enumerate()
                .find(|(_, v)| !(v.is_finite() && **v >= 0.0))
            {
                return Err(OmbErrorKind::BadValue {
                    field,
                    window,
                    value,
                });
            }
        }
        // Older and newer OMBs write the backlog with the rates; a file without one is read.
        if !self.backlog.is_empty() && self.backlog.len() != expected {
            return Err(OmbErrorKind::SeriesLength {
                field: "backlog",
                expected,
                found: self.backlog.len(),
            });
        }
        Ok(())
    }
}

/// Reads one OMB result file.
pub fn read_omb_result(path: &Path) -> Result<OmbResult, OmbError> {
    use std::io::Read;
    let name = path.display().to_string();
    let io = |e| OmbError {
        source_name: name.clone(),
        kind: OmbErrorKind::Io(e),
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut text = String::new();
    file.take(MAX_RESULT_BYTES)
        .read_to_string(&mut text)
        .map_err(io)?;
    OmbResult::parse(&name, &text)
}

/// A JSON number, or one of the strings Jackson writes for a non-finite double.
#[derive(Deserialize)]
#[serde(untagged)]
enum JacksonDouble {
    Number(f64),
    Text(String),
}

impl JacksonDouble {
    fn value<E: serde::de::Error>(self) -> Result<f64, E> {
        match self {
            JacksonDouble::Number(v) => Ok(v),
            JacksonDouble::Text(t) => match t.as_str() {
                "NaN" => Ok(f64::NAN),
                "Infinity" => Ok(f64::INFINITY),
                "-Infinity" => Ok(f64::NEG_INFINITY),
                other => Err(E::custom(format!("expected a number, found {other:?}"))),
            },
        }
    }
}

fn numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    Vec::<JacksonDouble>::deserialize(d)?
        .into_iter()
        .map(JacksonDouble::value)
        .collect()
}

fn some_numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<f64>>, D::Error> {
    numbers(d).map(Some)
}

fn some_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    JacksonDouble::deserialize(d)?.value().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> OmbErrorKind {
        match OmbResult::parse("r.json", text) {
            Err(e) => e.kind,
            Ok(r) => panic!("read {r:?}"),
        }
    }

    #[test]
    fn a_minimal_result_is_read_and_missing_fields_are_none() {
        let r = OmbResult::parse(
            "r.json",
            r#"{"workload":"w","driver":"Kafka","publishRate":[1.5,2],"consumeRate":[1,2],
                "aggregatedPublishLatency99pct":"NaN","someFutureField":[1]}"#,
        );
        let r = match r {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(r.publish_rate, vec![1.5, 2.0]);
        assert_eq!(r.publish_error_rate, None);
        assert_eq!(r.message_size, None);
        assert!(r.aggregated_publish_latency_99pct.is_some_and(f64::is_nan));
        assert_eq!(r.aggregated_publish_latency_50pct, None);
    }

    #[test]
    fn series_of_different_lengths_are_refused() {
        assert!(matches!(
            kind(r#"{"workload":"w","driver":"d","publishRate":[1,2],"consumeRate":[1]}"#),
            OmbErrorKind::SeriesLength {
                field: "consumeRate",
                expected: 2,
                found: 1
            }
        ));
        assert!(matches!(
            kind(
                r#"{"workload":"w","driver":"d","publishRate":[1],"consumeRate":[1],"backlog":[1,2]}"#
            ),
            OmbErrorKind::SeriesLength {
                field: "backlog",
                ..
            }
        ));
    }

    #[test]
    fn a_negative_or_unknown_rate_is_refused_with_its_window() {
        assert!(matches!(
            kind(r#"{"workload":"w","driver":"d","publishRate":[1,-2],"consumeRate":[1,2]}"#),
            OmbErrorKind::BadValue {
                field: "publishRate",
                window: 1,
                ..
            }
        ));
        assert!(matches!(
            kind(
                r#"{"workload":"w","driver":"d","publishRate":[1],"consumeRate":[1],"publishErrorRate":["NaN"]}"#
            ),
            OmbErrorKind::BadValue {
                field: "publishErrorRate",
                window: 0,
                ..
            }
        ));
        assert!(matches!(
            kind(r#"{"workload":"w","driver":"d","publishRate":["fast"],"consumeRate":[1]}"#),
            OmbErrorKind::Json(_)
        ));
    }

    #[test]
    fn what_is_not_json_names_the_file() {
        let e = OmbResult::parse("points/a/omb.json", "{").err();
        assert!(e.is_some_and(|e| {
            e.to_string()
                .starts_with("points/a/omb.json: not an OpenMessaging Benchmark result: EOF")
        }));
    }
}
