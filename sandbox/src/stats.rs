//! Request statistics and the request log.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// The log keeps the most recent records only, so a long benchmark cannot grow it without
/// bound; counters in [`RequestStats`] are never truncated.
pub const LOG_CAPACITY: usize = 100_000;

/// What happened to one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    /// An AWS error answered by the emulated service (not injected), with its code.
    Error {
        code: String,
    },
    /// Refused by the ECS token buckets.
    Throttled,
    /// Injected by the fault configuration (`throttling`, `server_error`, `connection_reset`).
    Fault {
        fault: String,
    },
}

/// One request, as the log records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Virtual seconds since the Unix epoch when the request was answered.
    pub at: f64,
    pub service: String,
    pub operation: String,
    pub resource: Option<String>,
    pub outcome: Outcome,
}

/// Counters for one (service, operation).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationStats {
    pub count: u64,
    pub throttled: u64,
    pub faulted: u64,
    pub errors: u64,
}

/// Counters per (service, operation), plus totals by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestStats {
    /// Keyed by `"service:Operation"`, e.g. `"ecs:DescribeServices"`.
    pub operations: BTreeMap<String, OperationStats>,
    pub mutating: u64,
    pub reads: u64,
}

impl RequestStats {
    /// Counters for one operation (zero if it was never called).
    pub fn get(&self, service: &str, operation: &str) -> OperationStats {
        self.operations
            .get(&key(service, operation))
            .cloned()
            .unwrap_or_default()
    }

    /// Requests to mutating operations (see [`envctl_aws_model::is_mutating`]), including refused ones.
    pub fn mutating_calls(&self) -> u64 {
        self.mutating
    }

    /// Requests to read-only operations, including refused ones.
    pub fn read_calls(&self) -> u64 {
        self.reads
    }

    /// All requests.
    pub fn total(&self) -> u64 {
        self.mutating + self.reads
    }

    pub fn throttled(&self) -> u64 {
        self.operations.values().map(|o| o.throttled).sum()
    }

    pub(crate) fn record(&mut self, r: &RequestRecord) {
        let entry = self
            .operations
            .entry(key(&r.service, &r.operation))
            .or_default();
        entry.count += 1;
        match &r.outcome {
            Outcome::Ok => {}
            Outcome::Error { .. } => entry.errors += 1,
            Outcome::Throttled => entry.throttled += 1,
            Outcome::Fault { fault } => {
                entry.faulted += 1;
                // An injected throttle is also a throttle from the client's point of view.
                if fault == "throttling" {
                    entry.throttled += 1;
                }
            }
        }
        if envctl_aws_model::is_mutating(&r.service, &r.operation) {
            self.mutating += 1;
        } else {
            self.reads += 1;
        }
    }
}

fn key(service: &str, operation: &str) -> String {
    format!("{service}:{operation}")
}

/// Stats plus the bounded log, behind one lock in the server.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub stats: RequestStats,
    pub log: VecDeque<RequestRecord>,
}

impl Recorder {
    pub fn record(&mut self, r: RequestRecord) {
        self.stats.record(&r);
        if self.log.len() == LOG_CAPACITY {
            self.log.pop_front();
        }
        self.log.push_back(r);
    }

    pub fn reset(&mut self) {
        self.stats = RequestStats::default();
        self.log.clear();
    }
}
