//! Where commands send their calls: AWS (real time), the embedded sandbox in-process (its
//! scaled virtual time), a sandbox served by another process (`envctl sandbox serve`, reached
//! through `--endpoint-url`/`AWS_ENDPOINT_URL`: its time scale is read from its control API,
//! so waits run on its clock as with `--sandbox`), or a simulated sandbox whose clock moves
//! only when envctl waits (tests and benchmarks: deterministic simulated seconds).
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use envctl_sandbox::{Sandbox, SandboxConfig};

use crate::account::Reads;
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
    /// The endpoint of a sandbox served by another process, when the session runs against
    /// one (its clock is [`ServedClock`]).
    pub served: Option<String>,
    /// S3 clients by bucket, for buckets in another Region than the session's
    /// ([`Session::s3_for`]).
    buckets: Arc<std::sync::Mutex<std::collections::BTreeMap<String, BucketClient>>>,
}

/// The S3 client that reaches a bucket, and the bucket's Region.
#[derive(Clone, Debug)]
pub struct BucketClient {
    pub client: aws_sdk_s3::Client,
    pub region: String,
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
    fn simulated(&self) -> bool {
        true
    }
}

/// A served sandbox's scaled clock, seen from another process: virtual time read once from
/// its control API (`GET /_sandbox/clock`), then extrapolated at its time scale, the way the
/// sandbox computes it itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedClock {
    virtual_at_origin: f64,
    origin: std::time::Instant,
    pub time_scale: f64,
}

impl Clock for ServedClock {
    fn now(&self) -> f64 {
        self.virtual_at_origin + self.origin.elapsed().as_secs_f64() * self.time_scale
    }
    fn sleep(&self, d: Duration) -> SleepFuture<'_> {
        let real = Duration::try_from_secs_f64(d.as_secs_f64() / self.time_scale)
            .unwrap_or(Duration::MAX)
            .min(Duration::from_secs(86_400));
        Box::pin(tokio::time::sleep(real))
    }
    fn participant(&self) -> ParticipantGuard {
        ParticipantGuard::inert()
    }
    fn simulated(&self) -> bool {
        true
    }
}

impl ServedClock {
    /// The clock of the sandbox serving `endpoint`, or `None` when the endpoint is not a
    /// sandbox with a scaled clock (AWS, moto, LocalStack; a manual-clock sandbox, whose time
    /// moves only when its driver says so). Only plain-HTTP endpoints are asked (the sandbox
    /// serves no TLS), once, with a short timeout.
    pub async fn probe(endpoint: &str) -> Option<ServedClock> {
        let addr = endpoint.strip_prefix("http://")?.trim_end_matches('/');
        if addr.contains('/') {
            return None;
        }
        let body = tokio::time::timeout(PROBE_TIMEOUT, http_get(addr, "/_sandbox/clock"))
            .await
            .ok()??;
        Self::from_clock_json(&body)
    }

    /// Parses the control API's `{"now": SECS, "manual": BOOL, "time_scale": SCALE|null}`.
    fn from_clock_json(body: &str) -> Option<ServedClock> {
        let doc: serde_json::Value = serde_json::from_str(body).ok()?;
        let now = doc.get("now")?.as_f64()?;
        let time_scale = doc.get("time_scale")?.as_f64()?;
        (time_scale.is_finite() && time_scale > 0.0 && now.is_finite()).then(|| ServedClock {
            virtual_at_origin: now,
            origin: std::time::Instant::now(),
            time_scale,
        })
    }
}

/// How long the probe of an endpoint may take: a sandbox on loopback answers in
/// milliseconds; anything slower is not one.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// One HTTP/1.1 GET over a fresh connection; the body of a 200 response.
async fn http_get(addr: &str, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    // A control response is a few hundred bytes; refuse to buffer more than 64 KiB.
    stream.take(64 * 1024).read_to_end(&mut raw).await.ok()?;
    let raw = String::from_utf8(raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?;
    (status == "200").then(|| body.to_string())
}

impl Session {
    /// A session on `clients` and `clock`, with full ECS buckets.
    pub fn new(clients: Clients, clock: Arc<dyn Clock>, sandbox: Option<Sandbox>) -> Session {
        Session {
            clients,
            limits: Arc::new(RateLimits::ecs(clock.clone())),
            clock,
            sandbox,
            served: None,
            buckets: Default::default(),
        }
    }

    /// The S3 client for `bucket`: the session's own when the bucket is in the session's
    /// Region, else one for the bucket's Region. S3 answers a request signed for another
    /// Region with 301 PermanentRedirect, which the Rust SDK does not follow
    /// (awslabs/aws-sdk-rust#183, #1052), so the Region is asked once per bucket
    /// (HeadBucket's `x-amz-bucket-region`) and remembered for the session.
    pub async fn s3_for(&self, bucket: &str) -> Result<BucketClient, crate::aws::AwsError> {
        let known = self
            .buckets
            .lock()
            .map(|m| m.get(bucket).cloned())
            .unwrap_or_default();
        if let Some(known) = known {
            return Ok(known);
        }
        let own = self
            .clients
            .s3
            .config()
            .region()
            .map(|r| r.to_string())
            .unwrap_or_default();
        let region = crate::aws::paced::retry(self.clock.as_ref(), bucket, || {
            crate::aws::s3::bucket_region(&self.clients.s3, bucket)
        })
        .await?
        .unwrap_or_else(|| own.clone());
        let client = if region == own {
            self.clients.s3.clone()
        } else {
            crate::aws::s3::client_in_region(&self.clients.s3, &region)
        };
        let found = BucketClient { client, region };
        if let Ok(mut m) = self.buckets.lock() {
            m.insert(bucket.to_string(), found.clone());
        }
        Ok(found)
    }

    /// How the account is read in this session: its clients, clock and buckets.
    pub fn reads(&self) -> Reads {
        Reads::new(
            self.clients.clone(),
            self.clock.clone(),
            self.limits.clone(),
        )
    }

    /// AWS through the default credential chain.
    pub async fn aws(connection: &Connection) -> Session {
        Session::new(
            Clients::connect(connection).await,
            Arc::new(RealClock),
            None,
        )
    }

    /// A sandbox served by another process at `connection`'s endpoint: AWS's clients, and
    /// the sandbox's clock so that waits last what they last with `--sandbox`.
    pub async fn served(connection: &Connection, endpoint: &str, clock: ServedClock) -> Session {
        let mut session = Session::new(Clients::connect(connection).await, Arc::new(clock), None);
        session.served = Some(endpoint.to_string());
        session
    }

    /// Whether the calls go to a sandbox (embedded or served), not to AWS: a matrix then
    /// runs its steps' `demo:` commands and records synthetic metrics.
    pub fn is_sandbox(&self) -> bool {
        self.sandbox.is_some() || self.served.is_some()
    }

    /// The endpoint of the sandbox the calls go to, if any, for workload commands
    /// (`AWS_ENDPOINT_URL`).
    pub fn sandbox_endpoint(&self) -> Option<String> {
        self.sandbox
            .as_ref()
            .map(|s| s.endpoint_url())
            .or_else(|| self.served.clone())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_served_sandbox_tells_its_time_scale_and_other_endpoints_do_not() {
        let sandbox = Sandbox::start(SandboxConfig {
            time_scale: 120.0,
            ..SandboxConfig::default()
        })
        .await
        .expect("the sandbox starts");
        let clock = ServedClock::probe(&sandbox.endpoint_url())
            .await
            .expect("a served sandbox answers");
        assert_eq!(clock.time_scale, 120.0);
        // Within a second of its own (a few ms of real time are 120 times that).
        assert!((clock.now() - sandbox.clock().now()).abs() < 1.0);
        // A 30 s wait of simulated time is a quarter of a real second.
        let real = std::time::Instant::now();
        clock.sleep(Duration::from_secs(30)).await;
        let took = real.elapsed();
        assert!(
            took >= Duration::from_millis(240) && took < Duration::from_secs(2),
            "{took:?}"
        );
        // Not a sandbox: HTTPS, a path, nothing listening, or a manual clock.
        assert_eq!(
            ServedClock::probe("https://ecs.us-east-1.amazonaws.com").await,
            None
        );
        assert_eq!(ServedClock::probe("http://127.0.0.1:9/x").await, None);
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        assert_eq!(
            ServedClock::probe(&format!("http://127.0.0.1:{port}")).await,
            None
        );
        assert_eq!(
            ServedClock::from_clock_json(r#"{"now": 1.0, "manual": true, "time_scale": null}"#),
            None
        );
        let _ = sandbox.shutdown().await;
    }
}
