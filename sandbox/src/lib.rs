//! envctl-sandbox: an embedded AWS control-plane emulator (ECS, MSK, RDS, CloudWatch,
//! CloudWatch Logs' log groups, Secrets Manager's secrets, and the S3 objects of envctl's
//! remote lock).
//!
//! It serves, on 127.0.0.1, the operations envctl uses over the wire protocols the Rust SDK
//! speaks (ECS awsJson1.1, Kafka restJson1, RDS awsQuery, CloudWatch rpc-v2-cbor), with
//! state machines on a virtual [`Clock`], the ECS token buckets, fault injection and a
//! request log. Point an SDK client at [`Sandbox::endpoint_url`]. See `README.md`.

mod catalogue;
mod clock;
mod cloudwatch;
mod config;
mod ecs;
mod engines;
mod faults;
mod json_input;
mod kafka;
mod logs;
mod paging;
mod protocol;
mod rds;
mod s3;
mod secretsmanager;
mod server;
mod state;
mod stats;
mod tags;
mod throttle;
mod util;

pub use catalogue::{Catalogue, EngineVersion, KafkaVersion};
pub use clock::Clock;
pub use config::{DEFAULT_TIME_SCALE, DurationProfile, SandboxConfig};
pub use faults::{
    EngineFault, EngineFaultKind, ErrorFault, ErrorKind, FaultConfig, LatencyFault,
    LostResponseFault, MskOperationFault, StuckFault,
};
pub use stats::{LOG_CAPACITY, OperationStats, Outcome, RequestRecord, RequestStats};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Errors starting, running or stopping the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot bind 127.0.0.1:{0}: {1}")]
    Bind(u16, std::io::Error),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("invalid sandbox state: {0}")]
    State(String),
    #[error("the sandbox server failed: {0}")]
    Server(String),
}

/// A running sandbox server.
pub struct Sandbox {
    shared: Arc<server::Shared>,
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Sandbox {
    /// Loads the state directory (if any), binds 127.0.0.1:`port` and starts serving.
    pub async fn start(config: SandboxConfig) -> Result<Sandbox, SandboxError> {
        let loaded = match &config.state_dir {
            Some(dir) => state::load(dir)?,
            None => None,
        };
        let (start, world) = match loaded {
            Some((saved, world)) => {
                let wall = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0);
                (state::resume_at(saved, wall, config.manual_clock), world)
            }
            None => (
                config
                    .start_time
                    .unwrap_or_else(SystemTime::now)
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0),
                state::World::default(),
            ),
        };
        let clock = if config.manual_clock {
            Clock::manual(start)
        } else {
            Clock::scaled(start, config.time_scale)
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|e| SandboxError::Bind(config.port, e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| SandboxError::Bind(config.port, e))?;
        let shared = Arc::new(server::Shared::new(config, clock, world));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let app = server::router(shared.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await
        });
        Ok(Sandbox {
            shared,
            addr,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`, for `endpoint_url` on an SDK config.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The virtual clock (a cloneable handle).
    pub fn clock(&self) -> Clock {
        self.shared.clock.clone()
    }

    /// A snapshot of the request counters.
    pub fn stats(&self) -> RequestStats {
        self.shared.stats()
    }

    /// The most recent requests (at most [`LOG_CAPACITY`]), oldest first.
    pub fn request_log(&self) -> Vec<RequestRecord> {
        self.shared.log()
    }

    /// Clears the counters and the log.
    pub fn reset_stats(&self) {
        self.shared.reset_stats();
    }

    /// Registers container instances (zone, CPU units, MiB for tasks) in `cluster`, as the
    /// control API's `POST /_sandbox/ecs/container-instances` does: at once when the cluster
    /// exists, 90 s after it is created otherwise. Returns their ARNs.
    pub fn declare_instances(&self, cluster: &str, instances: &[(&str, u32, u32)]) -> Vec<String> {
        let d = ecs::DeclaredInstances {
            cluster: cluster.to_string(),
            instances: instances
                .iter()
                .map(|(zone, cpu, memory)| ecs::DeclaredInstance {
                    zone: zone.to_string(),
                    cpu: *cpu,
                    memory: *memory,
                })
                .collect(),
        };
        let (region, account) = (&self.shared.region, &self.shared.account);
        let arn = |r: &str| format!("arn:aws:ecs:{region}:{account}:{r}");
        util::lock(&self.shared.world)
            .ecs
            .declare_instances(&d, arn)
    }

    /// `count` instances of `instance_type` (sized as the sandbox sizes that type: CPU units,
    /// memory less what the OS and agent keep) over the region's zones a and b, registering
    /// in `cluster` as `declare_instances` does: the fleet an Auto Scaling group outside
    /// envctl would register for an `ecs.capacity: {instances: N}` env. `None` for a type
    /// the sandbox does not know.
    pub fn declare_fleet(
        &self,
        cluster: &str,
        instance_type: &str,
        count: u32,
    ) -> Option<Vec<String>> {
        let (cpu, memory) = catalogue::ec2_container_resources(instance_type)?;
        let zones = [
            format!("{}a", self.shared.region),
            format!("{}b", self.shared.region),
        ];
        let fleet: Vec<(&str, u32, u32)> = (0..count as usize)
            .map(|i| (zones[i % 2].as_str(), cpu, memory))
            .collect();
        Some(self.declare_instances(cluster, &fleet))
    }

    /// The instances no capacity provider launched leave `cluster` (the control API's
    /// `POST /_sandbox/ecs/container-instances/retire`); returns how many.
    pub fn retire_instances(&self, cluster: &str) -> usize {
        util::lock(&self.shared.world).ecs.retire_instances(cluster)
    }

    /// Replaces the fault configuration; takes effect on the next request.
    pub fn set_faults(&self, faults: FaultConfig) {
        self.shared.set_faults(faults);
    }

    /// Stops serving and saves the world if a state directory is configured.
    pub async fn shutdown(mut self) -> Result<(), SandboxError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(SandboxError::Server(e.to_string())),
                Err(e) => return Err(SandboxError::Server(e.to_string())),
            }
        }
        self.shared.persist()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // Dropped without `shutdown`: stop serving; state was saved after each mutating call.
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The root crate keeps the sandbox and clock in shared state across tasks.
    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Sandbox>();
        check::<Clock>();
        check::<SandboxConfig>();
        check::<RequestStats>();
    }
}
