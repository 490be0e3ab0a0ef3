//! Fault injection: error rates, added latency, failing ECS deployments, failing MSK
//! operations, resources stuck in a state, and calls whose response is lost after they took
//! effect.
//!
//! Randomness is deterministic: the n-th call of an operation draws `hash(seed, service,
//! operation, n)`, so the same sequence of calls per operation gets the same faults whatever
//! the interleaving between operations.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The fault configuration (JSON). Every field is optional in the file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Seed of the deterministic draws.
    pub seed: u64,
    /// Injected errors, each with a rate in [0, 1].
    pub errors: Vec<ErrorFault>,
    /// Added real latency per matching request.
    pub latency: Vec<LatencyFault>,
    /// ECS service names whose deployments fail to start tasks (the circuit breaker trips).
    pub failing_deployments: Vec<String>,
    /// MSK operations that end in UPDATE_FAILED.
    pub failing_msk_operations: Vec<MskOperationFault>,
    /// Resources that stay in a state until the fault is removed.
    pub stuck: Vec<StuckFault>,
    /// Calls that are executed (the world changes) and whose response is then lost.
    pub lost_responses: Vec<LostResponseFault>,
    /// Load engines (RunTask of the engine task definition) that misbehave.
    pub failing_engines: Vec<EngineFault>,
}

/// An engine that misbehaves: the `engine`-th one (1-based, in launch order) of every
/// group of engines started together (same `startedBy`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineFault {
    pub engine: u32,
    pub kind: EngineFaultKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineFaultKind {
    /// Stays PROVISIONING: never reaches the barrier.
    NeverStarts,
    /// Runs past every deadline until StopTask.
    Hangs,
    /// JMeter fails a second after the barrier opens: exit code 1.
    ExitsOne,
}

/// What an injected error looks like on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The service's throttling error (retried by the SDK as a throttle).
    Throttling,
    /// HTTP 500 with the service's internal-error code (retried as transient).
    ServerError,
    /// The connection is dropped after the response head (retried as transient).
    ConnectionReset,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Throttling => "throttling",
            ErrorKind::ServerError => "server_error",
            ErrorKind::ConnectionReset => "connection_reset",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorFault {
    /// `ecs`, `rds`, `kafka`, `cloudwatch` or `*`.
    #[serde(default = "any")]
    pub service: String,
    /// Operation name (e.g. `DescribeServices`) or `*`.
    #[serde(default = "any")]
    pub operation: String,
    pub rate: f64,
    pub kind: ErrorKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyFault {
    #[serde(default = "any")]
    pub service: String,
    #[serde(default = "any")]
    pub operation: String,
    pub millis: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MskOperationFault {
    /// Cluster name.
    pub cluster: String,
    /// Operation type as DescribeClusterOperationV2 reports it (e.g. `UPDATE_BROKER_TYPE`)
    /// or `*`.
    #[serde(default = "any")]
    pub operation: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StuckFault {
    /// `ecs` (service name), `rds` (DB instance id) or `kafka` (cluster name).
    pub service: String,
    pub resource: String,
    /// The state it sticks in: an RDS status (`modifying`), an MSK state (`UPDATING`,
    /// `CREATING`) or, for ECS, a rollout state (`IN_PROGRESS`).
    pub state: String,
}

/// A call that reaches AWS and takes effect, but whose answer never reaches the client (a
/// connection closed after the request was processed, or a 5xx written after the state
/// change): what makes a retried create meet the resource its first attempt made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LostResponseFault {
    #[serde(default = "any")]
    pub service: String,
    /// Operation name (e.g. `CreateDBInstance`) or `*`.
    #[serde(default = "any")]
    pub operation: String,
    /// How many successful calls lose their response: the first `times` that match.
    #[serde(default = "one")]
    pub times: u32,
    /// How the loss shows: `connection_reset` (default) or `server_error`.
    #[serde(default = "connection_reset")]
    pub kind: ErrorKind,
}

fn one() -> u32 {
    1
}

fn connection_reset() -> ErrorKind {
    ErrorKind::ConnectionReset
}

fn any() -> String {
    "*".to_string()
}

fn matches(pattern: &str, value: &str) -> bool {
    pattern == "*" || pattern.eq_ignore_ascii_case(value)
}

impl FaultConfig {
    /// Reads a fault file (JSON, the same shape as `POST /_sandbox/faults`).
    pub fn from_file(path: &std::path::Path) -> Result<FaultConfig, crate::SandboxError> {
        let bytes = std::fs::read(path)
            .map_err(|e| crate::SandboxError::Io(path.display().to_string(), e))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| crate::SandboxError::State(format!("{}: {e}", path.display())))
    }

    pub fn latency_for(&self, service: &str, operation: &str) -> u64 {
        self.latency
            .iter()
            .filter(|l| matches(&l.service, service) && matches(&l.operation, operation))
            .map(|l| l.millis)
            .sum()
    }

    pub fn deployment_fails(&self, service_name: &str) -> bool {
        self.failing_deployments.iter().any(|s| s == service_name)
    }

    pub fn msk_operation_fails(&self, cluster: &str, operation_type: &str) -> bool {
        self.failing_msk_operations
            .iter()
            .any(|f| f.cluster == cluster && matches(&f.operation, operation_type))
    }

    /// The fault of the `index`-th engine (1-based) of its group, if any.
    pub fn engine_fault(&self, index: u32) -> Option<EngineFaultKind> {
        self.failing_engines
            .iter()
            .find(|f| f.engine == index)
            .map(|f| f.kind)
    }

    pub fn is_stuck(&self, service: &str, resource: &str, state: &str) -> bool {
        self.stuck.iter().any(|s| {
            s.service.eq_ignore_ascii_case(service)
                && s.resource == resource
                && s.state.eq_ignore_ascii_case(state)
        })
    }
}

/// Draws deterministic decisions for a fault configuration.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    pub config: FaultConfig,
    calls: HashMap<(String, String), u64>,
    /// Responses already lost, per `lost_responses` rule (by index).
    lost: Vec<u32>,
}

impl FaultState {
    pub fn new(config: FaultConfig) -> FaultState {
        FaultState {
            lost: vec![0; config.lost_responses.len()],
            config,
            calls: HashMap::new(),
        }
    }

    /// For a call that succeeded: whether its response is to be lost, and how. Counts the
    /// loss against the first matching rule that has losses left.
    pub fn lose_response(&mut self, service: &str, operation: &str) -> Option<ErrorKind> {
        for (i, rule) in self.config.lost_responses.iter().enumerate() {
            if !(matches(&rule.service, service) && matches(&rule.operation, operation)) {
                continue;
            }
            let spent = self.lost.get_mut(i)?;
            if *spent < rule.times {
                *spent += 1;
                return Some(rule.kind);
            }
        }
        None
    }

    /// The injected error for this call, if any. Advances the per-operation draw counter
    /// only when some rule could match, so an empty configuration costs nothing.
    pub fn draw_error(&mut self, service: &str, operation: &str) -> Option<ErrorKind> {
        let rules: Vec<&ErrorFault> = self
            .config
            .errors
            .iter()
            .filter(|e| matches(&e.service, service) && matches(&e.operation, operation))
            .collect();
        if rules.is_empty() {
            return None;
        }
        let n = self
            .calls
            .entry((service.to_string(), operation.to_string()))
            .or_insert(0);
        *n += 1;
        let u = unit(hash_str(
            self.config.seed,
            &[service, operation, &n.to_string()],
        ));
        // Rules partition [0, 1): the first rule takes [0, r1), the next [r1, r1 + r2) ...
        let mut acc = 0.0;
        for rule in rules {
            acc += rule.rate.clamp(0.0, 1.0);
            if u < acc {
                return Some(rule.kind);
            }
        }
        None
    }
}

/// SplitMix64: a small, well-distributed mixing function.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a over the parts (separated), mixed with the seed.
pub(crate) fn hash_str(seed: u64, parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
    mix(h ^ mix(seed))
}

/// A uniform number in [0, 1) from a hash.
pub(crate) fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_deterministic_and_near_the_rate() {
        let cfg = FaultConfig {
            seed: 7,
            errors: vec![ErrorFault {
                service: "ecs".into(),
                operation: "DescribeServices".into(),
                rate: 0.25,
                kind: ErrorKind::ServerError,
            }],
            ..FaultConfig::default()
        };
        let run = || {
            let mut s = FaultState::new(cfg.clone());
            (0..4000)
                .map(|_| s.draw_error("ecs", "DescribeServices").is_some())
                .collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        let hits = a.iter().filter(|x| **x).count();
        assert!((800..1200).contains(&hits), "hits {hits}");
        let mut s = FaultState::new(cfg);
        assert_eq!(s.draw_error("ecs", "ListServices"), None);
    }

    #[test]
    fn a_lost_response_rule_loses_exactly_its_count() {
        let cfg: FaultConfig = serde_json::from_str(
            r#"{"lost_responses": [{"service": "rds", "operation": "CreateDBInstance", "times": 2}]}"#,
        )
        .expect("valid fault file");
        let mut s = FaultState::new(cfg);
        assert_eq!(s.lose_response("rds", "CreateDBParameterGroup"), None);
        assert_eq!(
            s.lose_response("rds", "CreateDBInstance"),
            Some(ErrorKind::ConnectionReset)
        );
        assert!(s.lose_response("rds", "CreateDBInstance").is_some());
        assert_eq!(s.lose_response("rds", "CreateDBInstance"), None);
    }

    #[test]
    fn fault_file_parses() {
        let cfg: FaultConfig = serde_json::from_str(
            r#"{"seed": 1, "errors": [{"operation": "UpdateService", "rate": 0.5, "kind": "throttling"}],
                "failing_deployments": ["mod-a"], "stuck": [{"service": "rds", "resource": "db", "state": "modifying"}]}"#,
        )
        .expect("valid fault file");
        assert_eq!(cfg.errors[0].service, "*");
        assert!(cfg.deployment_fails("mod-a"));
        assert!(cfg.is_stuck("rds", "db", "MODIFYING"));
    }
}
