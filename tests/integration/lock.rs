//! The lock across machines, and interruption, through the binary: two "CI runners" (two
//! state dirs) apply one env against one sandbox served on loopback, the lock in its S3
//! (`ENVCTL_LOCK=s3://...`), and real SIGINTs. Assertions are on what is observable after
//! the fact (exit codes, the journal, the lease object, the cluster's tags), with generous
//! time bounds where the point is speed.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use envctl::aws::{Clients, Connection};
use envctl::exec::journal::{Journal, Phase};
use envctl::lock::Lease;
use envctl_sandbox::{FaultConfig, LatencyFault, Sandbox, SandboxConfig};

use crate::{BASE_ENV, Test};

const BUCKET: &str = "ci-locks";
const LOCK: &str = "s3://ci-locks/envctl/";
const KEY: &str = "envctl/test.lock.json";
const CLUSTER: &str = "test-pvt";
const LOCKED_BY: &str = "envctl:locked-by";
/// Simulated seconds per real second of the served sandbox.
const TIME_SCALE: f64 = 40.0;

/// A sandbox served on loopback with the lock bucket and the env's cluster (owned, so that a
/// run stamps it), and clients to look at both.
struct Served {
    sandbox: Sandbox,
    clients: Clients,
    test: Test,
}

async fn served(latency: Vec<LatencyFault>) -> Served {
    served_at(latency, TIME_SCALE).await
}

/// [`served`] at `time_scale` simulated seconds per real second.
async fn served_at(latency: Vec<LatencyFault>, time_scale: f64) -> Served {
    let sandbox = Sandbox::start(SandboxConfig {
        faults: FaultConfig {
            latency,
            ..FaultConfig::default()
        },
        // envctl waits on the served sandbox's clock: at this scale an apply of BASE_ENV
        // (30 simulated minutes) lasts about 45 real seconds, long enough to act on a run
        // in the middle of it.
        time_scale,
        ..SandboxConfig::default()
    })
    .await
    .expect("sandbox starts");
    let clients = Clients::connect(&Connection {
        region: "us-east-1".into(),
        profile: None,
        endpoint_url: Some(sandbox.endpoint_url()),
        sandbox: true,
        no_sdk_retries: false,
    })
    .await;
    clients
        .s3
        .create_bucket()
        .bucket(BUCKET)
        .send()
        .await
        .expect("bucket");
    clients
        .ecs
        .create_cluster()
        .cluster_name(CLUSTER)
        .tags(tag("envctl:tool", "envctl"))
        .tags(tag("envctl:env", "test"))
        .send()
        .await
        .expect("cluster");
    let test = Test::new().file("env.yaml", BASE_ENV);
    Served {
        sandbox,
        clients,
        test,
    }
}

fn tag(key: &str, value: &str) -> aws_sdk_ecs::types::Tag {
    aws_sdk_ecs::types::Tag::builder()
        .key(key)
        .value(value)
        .build()
}

impl Served {
    fn dir(&self) -> &Path {
        self.test.path()
    }

    /// `envctl ARGS` as runner `state` (its own `--state-dir`), output to files.
    fn command(&self, state: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_envctl"));
        cmd.args(args)
            .args(["--endpoint-url", &self.sandbox.endpoint_url()])
            .args(["--state-dir", state])
            .current_dir(self.dir())
            .env("ENVCTL_LOCK", LOCK)
            .env("AWS_ACCESS_KEY_ID", "sandbox")
            .env("AWS_SECRET_ACCESS_KEY", "sandbox")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_CONFIG_FILE", self.dir().join("no-aws-config"))
            .env(
                "AWS_SHARED_CREDENTIALS_FILE",
                self.dir().join("no-aws-credentials"),
            )
            .env_remove("AWS_PROFILE")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// Starts `envctl apply env.yaml --yes` as runner `state`.
    fn spawn_apply(&self, state: &str, extra: &[&str]) -> Runner {
        let mut args = vec!["apply", "env.yaml", "--yes"];
        args.extend_from_slice(extra);
        self.spawn(state, &args)
    }

    /// Starts `envctl ARGS` as runner `state`, its output in `<state>.stdout|stderr`.
    fn spawn(&self, state: &str, args: &[&str]) -> Runner {
        let stderr = std::fs::File::create(self.dir().join(format!("{state}.stderr"))).unwrap();
        let stdout = std::fs::File::create(self.dir().join(format!("{state}.stdout"))).unwrap();
        self.command(state, args)
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map(Runner)
            .expect("envctl starts")
    }

    /// Runs a command to its end: (exit code, stdout, stderr).
    fn run(&self, state: &str, args: &[&str]) -> (i32, String, String) {
        let out = self.command(state, args).output().expect("envctl runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn stderr(&self, state: &str) -> String {
        std::fs::read_to_string(self.dir().join(format!("{state}.stderr"))).unwrap_or_default()
    }

    fn state_dir(&self, state: &str) -> PathBuf {
        self.dir().join(state)
    }

    async fn lease(&self) -> Option<Lease> {
        envctl::aws::s3::get(&self.clients.s3, BUCKET, KEY)
            .await
            .expect("GetObject")
            .map(|o| serde_json::from_slice(&o.body).expect("a lease"))
    }

    async fn stamp(&self) -> Option<String> {
        envctl::aws::ecs::describe_cluster(&self.clients.ecs, CLUSTER)
            .await
            .expect("DescribeClusters")
            .and_then(|c| c.tags.get(LOCKED_BY).cloned())
    }

    /// Waits until runner `state`'s journal has an intent of `operation` (and, with
    /// `done`, its end too).
    async fn journaled(&self, state: &str, operation: &str, done: bool) {
        let dir = self.state_dir(state);
        wait_until(
            &format!("{operation} in the journal"),
            Duration::from_secs(60),
            || {
                let journal = Journal::read_all(&dir, "test").unwrap_or_default();
                let phases: Vec<Phase> = journal
                    .entries
                    .iter()
                    .filter(|e| e.operation == operation)
                    .map(|e| e.phase)
                    .collect();
                if done {
                    phases.contains(&Phase::Done)
                } else {
                    phases.contains(&Phase::Intent)
                }
            },
        )
        .await;
    }

    async fn held_lease(&self) -> Lease {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(lease) = self.lease().await {
                return lease;
            }
            assert!(Instant::now() < deadline, "no lease was taken within 60 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A running envctl, killed if a test fails before it exits.
struct Runner(Child);

impl Drop for Runner {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn signal(Runner(child): &Runner, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// Waits for a child to exit (at most `limit`), returning its status and how long it took.
async fn exit_within(Runner(child): &mut Runner, limit: Duration) -> (ExitStatus, Duration) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (status, started.elapsed());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("envctl was still running {limit:?} after the signal");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every intent of the run has its `done` or `failed`.
fn assert_journal_complete(dir: &Path) {
    let journal = Journal::read_all(dir, "test").expect("journal");
    assert!(!journal.entries.is_empty(), "the run made mutating calls");
    assert!(!journal.torn_tail);
    let open: Vec<String> = journal
        .in_flight()
        .iter()
        .map(|e| format!("{} {}", e.operation, e.resource))
        .collect();
    assert!(open.is_empty(), "calls left in flight: {open:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_runner_fails_fast_naming_the_holder_and_renewal_outlives_the_ttl() {
    let world = served(Vec::new()).await;
    // A 3 s lease, renewed every second: without renewal it would expire mid-test.
    let mut first = world.spawn_apply("runner-1", &["--lock-ttl", "3"]);
    let lease = world.held_lease().await;
    assert_eq!(lease.env, "test");
    let deadline = Instant::now() + Duration::from_secs(30);
    while world.stamp().await.is_none() {
        assert!(Instant::now() < deadline, "the cluster was never stamped");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        world.stamp().await,
        Some(format!("{} {}", lease.run_id, lease.owner))
    );

    // Twice the TTL later the lease is still runner 1's, with a later expiry.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let renewed = world.lease().await.expect("still held");
    assert_eq!(renewed.run_id, lease.run_id);
    assert!(
        renewed.expires_at > lease.expires_at + 2.0,
        "{renewed:?} vs {lease:?}"
    );

    let started = Instant::now();
    let (code, _, stderr) = world.run("runner-2", &["apply", "env.yaml", "--yes"]);
    let took = started.elapsed();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("environment `test` is being applied by")
            && stderr.contains(&format!("run {}", lease.run_id))
            && stderr.contains("s3://ci-locks/envctl/test.lock.json"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(20), "failed fast: {took:?}");
    let second = Journal::read_all(&world.state_dir("runner-2"), "test").expect("journal");
    assert!(second.entries.is_empty(), "runner 2 changed nothing");

    // Who is using the environment, as `status` says.
    let (_, status, _) = world.run("runner-2", &["status", "env.yaml"]);
    assert!(
        status.contains(&format!("in use by run {} ", lease.run_id)),
        "{status}"
    );

    // Breaking another run's lease is refused, naming the holder.
    let (code, _, stderr) = world.run(
        "runner-2",
        &["unlock", "env.yaml", "--run", "test-20261130000000-1"],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&lease.run_id), "{stderr}");
    assert_eq!(
        world.lease().await.map(|l| l.run_id),
        Some(lease.run_id.clone())
    );

    // Runner 1 stops on SIGINT and gives the environment back.
    world.journaled("runner-1", "CreateDBInstance", true).await;
    signal(&first, "INT");
    let (status, _) = exit_within(&mut first, Duration::from_secs(20)).await;
    assert_eq!(status.code(), Some(130), "{}", world.stderr("runner-1"));
    assert_eq!(world.lease().await, None, "the lease was released");
    assert_eq!(world.stamp().await, None, "the stamp was removed");
    assert_journal_complete(&world.state_dir("runner-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_breaks_the_lease_and_the_run_that_lost_it_stops() {
    let world = served(Vec::new()).await;
    let mut first = world.spawn_apply("runner-1", &["--lock-ttl", "3"]);
    let lease = world.held_lease().await;
    world.journaled("runner-1", "CreateDBInstance", true).await;

    // The run renews its lease: it is alive, and breaking its lease needs --force.
    let (code, _, stderr) = world.run("runner-2", &["unlock", "env.yaml", "--run", &lease.run_id]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("held by a run that is still renewing its lease")
            && stderr.contains(&format!(
                "running on host {} as pid {}",
                lease.host, lease.pid
            ))
            && stderr.contains("last renewed its lease")
            && stderr.contains("pass --force"),
        "{stderr}"
    );
    assert_eq!(
        world.lease().await.map(|l| l.run_id),
        Some(lease.run_id.clone())
    );
    // --force asks first; without a terminal, only --yes answers.
    let (code, _, stderr) = world.run(
        "runner-2",
        &["unlock", "env.yaml", "--run", &lease.run_id, "--force"],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("run again with --yes"), "{stderr}");
    assert_eq!(
        world.lease().await.map(|l| l.run_id),
        Some(lease.run_id.clone())
    );

    let (code, _, stderr) = world.run(
        "runner-2",
        &[
            "unlock",
            "env.yaml",
            "--run",
            &lease.run_id,
            "--force",
            "--yes",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("held by a live run {}", lease.run_id))
            && stderr.contains(&format!("removed the lease of run {}", lease.run_id)),
        "{stderr}"
    );
    let mut second = world.spawn_apply("runner-2", &["--lock-ttl", "3"]);

    // Runner 1's next renewal finds the lease gone or taken: it stops, and says why.
    let (status, _) = exit_within(&mut first, Duration::from_secs(30)).await;
    let stderr = world.stderr("runner-1");
    assert_eq!(status.code(), Some(1), "{stderr}");
    // Taken over by runner 2, or found deleted before runner 2 took it.
    assert!(
        (stderr.contains("the lock on `test` was taken over by")
            || stderr.contains("the lock on `test` was broken: its lease was deleted"))
            && stderr.contains("the run stopped"),
        "{stderr}"
    );
    assert_journal_complete(&world.state_dir("runner-1"));

    // Runner 2 proceeds: it converges what runner 1 left and gives the lock back.
    let (status, _) = exit_within(&mut second, Duration::from_secs(120)).await;
    assert_eq!(status.code(), Some(0), "{}", world.stderr("runner-2"));
    assert_eq!(world.lease().await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_wakes_the_waits_lets_calls_in_flight_finish_and_releases_the_lease() {
    // Each DescribeServices takes 1 s, so a probe is often in flight when the signal comes.
    let world = served(vec![LatencyFault {
        service: "ecs".into(),
        operation: "DescribeServices".into(),
        millis: 1000,
    }])
    .await;
    let mut run = world.spawn_apply("runner-1", &[]);
    world.held_lease().await;
    // The service is created: its deployment wait sleeps 40 s before the first look, and the
    // data stores poll every 15-30 s.
    world.journaled("runner-1", "CreateService", true).await;
    signal(&run, "INT");
    let (status, took) = exit_within(&mut run, Duration::from_secs(90)).await;
    eprintln!("exit latency after SIGINT: {:.2} s", took.as_secs_f64());
    let stderr = world.stderr("runner-1");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        took < Duration::from_secs(8),
        "exited {took:?} after SIGINT"
    );
    assert_journal_complete(&world.state_dir("runner-1"));
    assert_eq!(world.lease().await, None, "the lease was released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_exits_at_once_and_still_releases_the_lease() {
    // A call that takes 60 s: the first signal waits for it, the second does not.
    let world = served(vec![LatencyFault {
        service: "ecs".into(),
        operation: "RegisterTaskDefinition".into(),
        millis: 60_000,
    }])
    .await;
    let mut run = world.spawn_apply("runner-1", &[]);
    world.held_lease().await;
    world
        .journaled("runner-1", "RegisterTaskDefinition", false)
        .await;
    signal(&run, "INT");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        run.0.try_wait().expect("try_wait").is_none(),
        "the first signal lets the call in flight finish"
    );
    signal(&run, "INT");
    let (status, took) = exit_within(&mut run, Duration::from_secs(20)).await;
    eprintln!(
        "exit latency after the second SIGINT: {:.2} s",
        took.as_secs_f64()
    );
    assert_eq!(status.code(), Some(130), "{}", world.stderr("runner-1"));
    assert!(
        took < Duration::from_secs(5),
        "exited {took:?} after the second signal"
    );
    assert_eq!(world.lease().await, None, "the lease was released");
}

/// Issue 26 item 1: a matrix run whose lease is broken (`unlock --force`) while a point runs,
/// and another runner applies meanwhile. The matrix renews only every 5 minutes (the default
/// TTL), far later than it would switch to its next point and tear the environment down: it
/// must find out before that switch (fencing), stop, say why in run.json, and exit non-zero,
/// leaving the environment to the run that holds it now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matrix_that_lost_its_lease_neither_switches_nor_tears_down() {
    let world = served(Vec::new()).await;
    // ECS only, so that both runners converge quickly.
    let start = BASE_ENV.find("rds:\n").expect("rds section");
    let end = BASE_ENV.find("services:\n").expect("services section");
    let env =
        format!("{}{}", &BASE_ENV[..start], &BASE_ENV[end..]).replace("    kafka: main\n", "");
    std::fs::write(world.dir().join("env.yaml"), env).unwrap();
    let playbook = "\
name: two
env: env.yaml
matrix:
  level:
    info: {set: {services.mod-users.log_level: info}}
    debug: {set: {services.mod-users.log_level: debug}}
steps:
  - wait: 10m
collect: {padding: 0s, period: 60s}
teardown: always
";
    std::fs::write(world.dir().join("pb.yaml"), playbook).unwrap();
    let mut matrix = world.spawn(
        "runner-1",
        &["matrix", "run", "pb.yaml", "--results", "results"],
    );
    let lease = world.held_lease().await;
    // The first point is applied and in its workload step: 10 simulated minutes, 15 real
    // seconds at the sandbox's time scale (envctl reads it from the endpoint).
    wait_until("the first point's step", Duration::from_secs(120), || {
        world.stderr("runner-1").contains("wait 10m")
    })
    .await;
    let (code, _, stderr) = world.run(
        "runner-2",
        &[
            "unlock",
            "env.yaml",
            "--run",
            &lease.run_id,
            "--force",
            "--yes",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = world.run("runner-2", &["apply", "env.yaml", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    std::fs::write(world.dir().join("runner-2.stderr"), &stderr).unwrap();

    let (status, _) = exit_within(&mut matrix, Duration::from_secs(120)).await;
    let stderr = world.stderr("runner-1");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the lock on `test` was")
            && stderr.contains("the run stopped")
            && !stderr.contains("teardown (always): destroying"),
        "{stderr}"
    );
    let run: envctl::results::RunRecord = serde_json::from_slice(
        &std::fs::read(
            world
                .dir()
                .join("results")
                .join(&lease.run_id)
                .join("run.json"),
        )
        .expect("run.json"),
    )
    .expect("a run record");
    let reason = run.lock_lost.clone().unwrap_or_default();
    assert!(reason.contains("the lock on `test` was"), "{run:?}");
    assert!(!run.teardown.performed, "{:?}", run.teardown);
    assert!(
        run.teardown
            .detail
            .as_deref()
            .unwrap_or_default()
            .contains("the lock was lost"),
        "{:?}",
        run.teardown
    );
    assert_eq!(
        run.points[1].status,
        envctl::results::Status::Interrupted,
        "{stderr}"
    );
    assert_eq!(
        run.points[1].started_at, None,
        "the second point never started"
    );
    // What runner 2 applied is still there: the service runs its two tasks.
    let services = world
        .clients
        .ecs
        .describe_services()
        .cluster(CLUSTER)
        .services("mod-users")
        .send()
        .await
        .expect("DescribeServices");
    let service = services.services().first().expect("the service exists");
    assert!(
        service.status() == Some("ACTIVE") && service.desired_count() == 2,
        "{service:?}\nrunner 1:\n{stderr}\nrunner 2:\n{}",
        world.stderr("runner-2")
    );
}

/// A run that fails after it took the lock gives the lease and the cluster's stamp back on
/// its way out, as a run that succeeds does: the next run takes the lock without `unlock`
/// and without taking over a stale lease. Here `park` fails opening its journal (its state
/// dir's `journal` is a file), after the lock and the stamp.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fails_holding_the_lock_gives_it_back() {
    // Fast: the apply that gives park something to do takes a fraction of a second.
    let world = served_at(Vec::new(), 20_000.0).await;
    let (code, _, stderr) = world.run("a", &["apply", "env.yaml", "--yes"]);
    assert_eq!(code, 0, "apply: {stderr}");
    assert_eq!(world.lease().await, None, "apply released its lease");

    let broken = world.state_dir("b");
    std::fs::create_dir_all(&broken).expect("state dir");
    std::fs::write(broken.join("journal"), "not a directory").expect("journal file");
    let (code, _, stderr) = world.run("b", &["park", "env.yaml", "--yes"]);
    assert_eq!(code, 1, "park without a journal fails: {stderr}");
    assert!(stderr.contains("journal"), "{stderr}");
    assert_eq!(
        world.lease().await,
        None,
        "the failed run left its lease behind"
    );
    assert_eq!(
        world.stamp().await,
        None,
        "the failed run left its stamp behind"
    );

    let (code, _, stderr) = world.run("a", &["park", "env.yaml", "--yes"]);
    assert_eq!(code, 0, "park: {stderr}");
    assert!(!stderr.contains("took over a stale lock"), "{stderr}");
    assert!(!stderr.contains("is being applied by"), "{stderr}");
}

/// The lock bucket in another Region than the env: S3 answers a request signed for the
/// env's Region with 301 PermanentRedirect (`x-amz-bucket-region`), which the Rust SDK does
/// not follow (awslabs/aws-sdk-rust#183, #1052). envctl asks the bucket's Region once
/// (HeadBucket) and reaches it with a client of that Region: the lease is taken, read and
/// released, and the load artifacts under the same bucket are put and read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_bucket_in_another_region_is_reached_through_its_region() {
    let world = crate::apply::World::new().await;
    let session = &world.session;
    let eu = envctl::aws::s3::client_in_region(&session.clients.s3, "eu-west-1");
    eu.create_bucket()
        .bucket("locks-eu")
        .create_bucket_configuration(
            aws_sdk_s3::types::CreateBucketConfiguration::builder()
                .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::EuWest1)
                .build(),
        )
        .send()
        .await
        .expect("bucket in eu-west-1");
    // The session's own client (us-east-1) is redirected, as S3 does.
    let err = envctl::aws::s3::get(&session.clients.s3, "locks-eu", "envs/pcp1.lock.json")
        .await
        .expect_err("signed for us-east-1");
    assert_eq!(err.code.as_deref(), Some("PermanentRedirect"), "{err:?}");
    let bucket = session
        .s3_for("locks-eu")
        .await
        .expect("the bucket's Region");
    assert_eq!(bucket.region, "eu-west-1");
    let store = envctl::lock::S3Store::new(bucket.client.clone(), "locks-eu", "envs/");
    let held = envctl::lock::LeaseStore::acquire(
        &store,
        "pcp1",
        &envctl::lock::Holder::current("run-eu"),
        Duration::from_secs(60),
    )
    .await
    .expect("the lease, through the bucket's Region");
    assert_eq!(held.lease().run_id, "run-eu");
    held.release().await.expect("released");
    let heads = world.sandbox().stats().get("s3", "HeadBucket").count;
    session.s3_for("locks-eu").await.expect("remembered");
    assert_eq!(
        world.sandbox().stats().get("s3", "HeadBucket").count,
        heads,
        "asked once per session"
    );
    // Load artifacts live under the lock's bucket: put and read back the same way.
    let artifacts =
        envctl::load::artifacts::Artifacts::for_run(Some("s3://locks-eu/perf/"), "r1", false)
            .expect("artifacts");
    let dir = tempfile::tempdir().expect("dir");
    let plan = dir.path().join("plan.jmx");
    std::fs::write(&plan, "<jmeterTestPlan/>").expect("plan");
    let (key, sent) = envctl::load::artifacts::upload(session, &artifacts, &plan)
        .await
        .expect("upload");
    assert!(sent);
    let back = dir.path().join("back.jmx");
    assert!(
        envctl::load::artifacts::download(session, "locks-eu", &key, &back)
            .await
            .expect("download")
    );
}

/// Issue 34: each copy of an env has its own lock. While copy `a` is being applied (its
/// lease `test-a.lock.json` held), a destroy of copy `b` takes `b`'s lock and runs, and a
/// destroy of `a` fails fast naming `a`'s holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copies_of_an_env_have_their_own_locks() {
    let world = served(Vec::new()).await;
    let mut first = world.spawn_apply("runner-a", &["--copy", "a"]);
    let key_a = "envctl/test-a.lock.json";
    let deadline = Instant::now() + Duration::from_secs(60);
    let lease_a: Lease = loop {
        if let Some(o) = envctl::aws::s3::get(&world.clients.s3, BUCKET, key_a)
            .await
            .expect("GetObject")
        {
            break serde_json::from_slice(&o.body).expect("a lease");
        }
        assert!(Instant::now() < deadline, "copy a's lease was never taken");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(lease_a.env, "test-a");
    assert_eq!(world.lease().await, None, "the env's own lock is free");

    let (code, _, stderr) = world.run("runner-b", &["destroy", "env.yaml", "--copy", "b", "--yes"]);
    assert_eq!(code, 0, "copy b's lock is its own: {stderr}");
    let (code, _, stderr) = world.run("runner-b", &["destroy", "env.yaml", "--copy", "a", "--yes"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("environment `test-a` is being applied by")
            && stderr.contains(&format!("run {}", lease_a.run_id)),
        "{stderr}"
    );

    signal(&first, "INT");
    let (status, _) = exit_within(&mut first, Duration::from_secs(20)).await;
    assert_eq!(status.code(), Some(130), "{}", world.stderr("runner-a"));
}
