//! Where commands send their calls: AWS (real time), the embedded sandbox in-process (its
//! scaled virtual time), or a simulated sandbox whose clock moves only when envctl waits
//! (tests and benchmarks: deterministic simulated seconds).
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use envctl_sandbox::{Sandbox, SandboxConfig};

use crate::aws::{Clients, Connection};
use crate::exec::{Clock, ParticipantGuard, RateLimits, RealClock, SimClock, SleepFuture};

pub struct Session {
    pub clients: Clients,
    pub clock: Arc<dyn Clock>,
    /// ECS's rate limits, one set of buckets for every call of the session (they are per
    /// account and Region): observe's reads and apply's calls draw from the same ones.
    pub limits: Arc<RateLimits>,
    /// The embedded sandbox, when the session runs against it.
    pub sandbox: Option<Sandbox>,
}

/// The sandbox's virtual clock seen through the executor's `Clock` trait.
struct SandboxClock(envctl_sandbox::Clock);

impl Clock for SandboxClock {
    fn now(&self) -> f64 {
        self.0.now()
    }
    fn sleep(&self, d: Duration) -> SleepFuture<'_> {
        Box::pin(self.0.sleep(d))
    }
    fn participant(&self) -> ParticipantGuard {
        ParticipantGuard::inert()
    }
}

impl Session {
    /// A session on `clients` and `clock`, with full ECS buckets.
    pub fn new(clients: Clients, clock: Arc<dyn Clock>, sandbox: Option<Sandbox>) -> Session {
        Session {
            clients,
            limits: Arc::new(RateLimits::ecs(clock.clone())),
            clock,
            sandbox,
        }
    }

    /// AWS through the default credential chain.
    pub async fn aws(connection: &Connection) -> Session {
        Session::new(
            Clients::connect(connection).await,
            Arc::new(RealClock),
            None,
        )
    }

    async fn connect_sandbox(sandbox: &Sandbox, region: &str, simulated: bool) -> Clients {
        Clients::connect(&Connection {
            region: region.to_string(),
            profile: None,
            endpoint_url: Some(sandbox.endpoint_url()),
            sandbox: true,
            no_sdk_retries: simulated,
        })
        .await
    }

    /// The embedded sandbox on an ephemeral port, its world kept in `state_dir` so that
    /// successive commands see one another's changes.
    pub async fn sandbox(
        state_dir: PathBuf,
        time_scale: Option<f64>,
        region: &str,
    ) -> anyhow::Result<Session> {
        let mut config = SandboxConfig {
            state_dir: Some(state_dir),
            region: region.to_string(),
            ..SandboxConfig::default()
        };
        if let Some(scale) = time_scale {
            config.time_scale = scale;
        }
        let sandbox = Sandbox::start(config).await?;
        let clients = Self::connect_sandbox(&sandbox, region, false).await;
        let clock = Arc::new(SandboxClock(sandbox.clock()));
        Ok(Session::new(clients, clock, Some(sandbox)))
    }

    /// A sandbox on a manual clock driven by a discrete-event clock: time passes only while
    /// every task of envctl waits, so a run's simulated duration is deterministic.
    pub async fn simulated(mut config: SandboxConfig) -> anyhow::Result<Session> {
        config.manual_clock = true;
        let region = config.region.clone();
        let sandbox = Sandbox::start(config).await?;
        let sandbox_clock = sandbox.clock();
        let start = sandbox_clock.now();
        let driven = sandbox_clock.clone();
        let clock = SimClock::builder(start)
            .on_advance(move |t| {
                let delta = t - driven.now();
                if delta > 0.0 {
                    driven.advance(Duration::from_secs_f64(delta));
                }
            })
            .build();
        let clients = Self::connect_sandbox(&sandbox, &region, true).await;
        Ok(Session::new(clients, Arc::new(clock), Some(sandbox)))
    }

    /// Stops the sandbox (saving its world), if any.
    pub async fn close(self) -> anyhow::Result<()> {
        if let Some(sandbox) = self.sandbox {
            sandbox.shutdown().await?;
        }
        Ok(())
    }
}
