//! Load engines, emulated: a task started by RunTask whose container environment carries
//! the engine protocol (`envctl_aws_model::engine`) behaves like envctl's JMeter engine,
//! running the demo workload instead of JMeter. It waits at the barrier (an S3 object
//! envctl writes once every engine is RUNNING) until the `start_at` it holds, generates
//! samples for the plan's `duration` property (60 s without one, at most 300 s), and puts a real CSV JTL,
//! a `jmeter.log` and an `engine.json` marked synthetic into the sandbox's S3 before it
//! stops with exit code 0.
//!
//! Everything is a function of virtual time, evaluated when a request arrives: an engine
//! that finished at t wrote its results with timestamps up to t, whenever the sandbox
//! noticed. Faults (`failing_engines`): an engine that never starts (it stays
//! PROVISIONING), one that hangs (it never ends until StopTask), one that exits 1.
use std::collections::BTreeMap;

use envctl_aws_model::engine::{
    BARRIER_POLL_S, ENV_BARRIER, ENV_BARRIER_TIMEOUT, ENV_PLAN, ENV_PROPERTIES, ENV_RESULTS,
    JTL_NAME, LOG_NAME, SUMMARY_NAME, parse_barrier, task_id,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::faults::EngineFaultKind;

/// The longest demo an engine runs, simulated seconds: a plan's `duration` of half an hour
/// is five minutes of demo samples (at the default time scale, 2.5 real seconds).
const DEMO_MAX_S: f64 = 300.0;

/// The engine part of a task.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Engine {
    barrier: (String, String),
    barrier_timeout_s: f64,
    results: (String, String),
    properties: BTreeMap<String, String>,
    /// The plan's file name without extension: the samples' label.
    label: String,
    fault: Option<EngineFaultKind>,
    /// When the barrier let it start.
    start_at: Option<f64>,
    done: bool,
}

/// What an engine does to the world when it ends.
pub struct EngineEnd {
    pub at: f64,
    pub exit_code: i64,
    pub objects: Vec<(String, String, Vec<u8>)>,
}

/// Where an engine reads its barrier: the S3 objects the sandbox serves.
pub trait ObjectStore {
    /// The object's content and the virtual time it was written.
    fn object(&self, bucket: &str, key: &str) -> Option<(Vec<u8>, f64)>;
}

/// `s3://bucket/key` as (bucket, key).
fn s3_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("s3://")?;
    let (bucket, key) = rest.split_once('/')?;
    Some((bucket.to_string(), key.to_string()))
}

impl Engine {
    /// An engine when the container environment (task definition plus overrides) speaks
    /// the protocol; `None` for every other task.
    pub fn from_environment(
        env: &BTreeMap<String, String>,
        fault: Option<EngineFaultKind>,
    ) -> Option<Engine> {
        let results = s3_uri(env.get(ENV_RESULTS)?)?;
        let barrier = s3_uri(env.get(ENV_BARRIER)?)?;
        let properties = env
            .get(ENV_PROPERTIES)
            .and_then(|p| serde_json::from_str::<BTreeMap<String, Value>>(p).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect();
        let label = env
            .get(ENV_PLAN)
            .and_then(|p| p.rsplit('/').next())
            .map(|f| f.trim_end_matches(".jmx").to_string())
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| "demo".into());
        Some(Engine {
            barrier,
            barrier_timeout_s: env
                .get(ENV_BARRIER_TIMEOUT)
                .and_then(|t| t.parse().ok())
                .unwrap_or(300.0),
            results,
            properties,
            label,
            fault,
            start_at: None,
            done: false,
        })
    }

    pub fn never_starts(&self) -> bool {
        self.fault == Some(EngineFaultKind::NeverStarts)
    }

    fn duration_s(&self) -> f64 {
        self.properties
            .get("duration")
            .and_then(|d| d.trim().parse::<f64>().ok())
            .filter(|d| d.is_finite() && *d >= 1.0)
            .unwrap_or(60.0)
            .min(DEMO_MAX_S)
    }

    /// Advances the engine to `now`: returns its end once it has one. `running_at` is when
    /// its task became RUNNING; `stopped_at` when StopTask stopped it, if it did.
    pub fn settle(
        &mut self,
        task_arn: &str,
        now: f64,
        running_at: f64,
        stopped_at: Option<f64>,
        store: &dyn ObjectStore,
    ) -> Option<EngineEnd> {
        if self.done || self.never_starts() || now < running_at {
            if let Some(stop) = stopped_at
                && !self.done
            {
                self.done = true;
                return Some(self.end(task_arn, stop, 143, None, "stopped before it started"));
            }
            return None;
        }
        if self.start_at.is_none() {
            // The engine polls the barrier once per BARRIER_POLL_S from RUNNING on; it sees
            // the object at its first poll at or after the object was written.
            if let Some((body, written_at)) = store.object(&self.barrier.0, &self.barrier.1)
                && let Some(at) = parse_barrier(&String::from_utf8_lossy(&body))
            {
                let polls = ((written_at - running_at) / BARRIER_POLL_S).ceil().max(0.0);
                self.start_at = Some(at.max(running_at + polls * BARRIER_POLL_S));
            } else {
                let give_up = running_at + self.barrier_timeout_s;
                let stop = stopped_at.filter(|s| *s < give_up);
                if let Some(stop) = stop {
                    self.done = true;
                    return Some(self.end(task_arn, stop, 143, None, "stopped at the barrier"));
                }
                if now >= give_up {
                    self.done = true;
                    let why = format!(
                        "barrier: no s3://{}/{} after {:.0} s; giving up",
                        self.barrier.0, self.barrier.1, self.barrier_timeout_s
                    );
                    return Some(self.end(task_arn, give_up, 1, None, &why));
                }
                return None;
            }
        }
        let start = self.start_at?;
        let (planned_end, exit_code) = match self.fault {
            Some(EngineFaultKind::ExitsOne) => (Some(start + 1.0), 1),
            Some(EngineFaultKind::Hangs) => (None, 0),
            _ => (Some(start + self.duration_s()), 0),
        };
        let (end, code, why) = match (planned_end, stopped_at) {
            (Some(e), Some(s)) if s < e => (s, 143, "stopped by StopTask"),
            (None, Some(s)) => (s, 143, "stopped by StopTask"),
            (Some(e), _) if now >= e => (
                e,
                exit_code,
                if exit_code == 0 {
                    "the plan ended"
                } else {
                    "Error in NonGUIDriver: the plan could not run (sandbox fault exits_1)"
                },
            ),
            _ => return None,
        };
        self.done = true;
        let samples = (exit_code == 0 || code == 143).then(|| self.jtl(task_arn, start, end));
        Some(self.end(task_arn, end, code, samples, why))
    }

    fn end(
        &self,
        task_arn: &str,
        at: f64,
        exit_code: i64,
        jtl: Option<Vec<u8>>,
        why: &str,
    ) -> EngineEnd {
        let prefix = format!("{}{}/", self.results.1, task_id(task_arn));
        let mut objects = Vec::new();
        let log = format!(
            "{} INFO o.a.j.JMeter: sandbox engine (synthetic: the demo workload, not JMeter)\n{} {} envctl-engine: {why}\n",
            at,
            at,
            if exit_code == 0 { "INFO" } else { "ERROR" }
        );
        objects.push((
            self.results.0.clone(),
            format!("{prefix}{LOG_NAME}"),
            log.into_bytes(),
        ));
        if let Some(jtl) = jtl {
            objects.push((self.results.0.clone(), format!("{prefix}{JTL_NAME}"), jtl));
        }
        // The demo's CPU model: 6% of the engine's vCPUs per user thread (the `users`
        // property, 1 without one), reported once the engine ran a whole minute.
        let ran = self.start_at.map_or(0.0, |s| at - s);
        let cpu = (ran >= 60.0).then(|| {
            let users = self
                .properties
                .get("users")
                .and_then(|u| u.trim().parse::<f64>().ok())
                .filter(|u| u.is_finite() && *u > 0.0)
                .unwrap_or(1.0);
            (6.0 * users).min(100.0)
        });
        let summary = serde_json::json!({
            "exit_code": exit_code,
            "synthetic": true,
            "tool": "sandbox-demo",
            "max_cpu_percent": cpu,
        });
        objects.push((
            self.results.0.clone(),
            format!("{prefix}{SUMMARY_NAME}"),
            summary.to_string().into_bytes(),
        ));
        EngineEnd {
            at,
            exit_code,
            objects,
        }
    }

    /// Two samples a second from `start` to `end`, with latencies drawn deterministically
    /// from the task's id: a real CSV JTL, as `envctl workload` writes.
    fn jtl(&self, task_arn: &str, start: f64, end: f64) -> Vec<u8> {
        let mut out = String::from(
            "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n",
        );
        let seed = task_id(task_arn)
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
        let mut state = seed | 1;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut t = (start * 1000.0).round() as i64;
        let end_ms = (end * 1000.0).round() as i64;
        let id = task_id(task_arn);
        let short = &id[..id.len().min(8)];
        while t < end_ms {
            let elapsed = 20 + (next() % 180) as i64;
            let ok = next() % 200 != 0;
            out.push_str(&format!(
                "{t},{elapsed},{},{},{},engine-{short} 1-1,text,{ok},{},512,128,1,1,,{},0,{}\n",
                self.label,
                if ok { 200 } else { 500 },
                if ok { "OK" } else { "Internal Server Error" },
                if ok { "" } else { "synthetic error" },
                elapsed.saturating_sub(5),
                elapsed / 10
            ));
            t += 500;
        }
        out.into_bytes()
    }
}
