//! The executor's infrastructure: the generic parts an apply or destroy is built from. The
//! executor itself decides *what* to call; these modules decide *when* and keep the record.
//!
//! - [`clock`]: [`Clock`], the only source of time and sleep. [`RealClock`] against AWS;
//!   [`SimClock`] (in [`sim_clock`]) against the sandbox, a discrete-event clock that moves
//!   only when every participant sleeps and drives the sandbox's clock from its jumps.
//! - [`limiter`]: [`RateLimits`], token buckets per ECS API category, acquired before each
//!   call so envctl stays under the account's throttling limits.
//! - [`backoff`]: [`Backoff`], full-jitter retries of throttled or transient failures, on top
//!   of the SDK's own attempts.
//! - [`wait`]: [`await_condition`], polling a probe until done, failed or a deadline.
//! - [`cancel`]: [`Cancel`], the run's stop signal, and [`InterruptibleClock`], whose sleeps
//!   wake on it (SIGINT/SIGTERM, a lost lock).
//! - [`journal`]: [`Journal`], the fsynced record of mutating calls
//!   (`.envctl/journal/<env>.jsonl`).
//! - [`task_set`]: [`TaskSet`], spawning concurrent reads (import) as clock participants, so
//!   a simulated clock does not jump while one of them is runnable.
//! - [`progress`]: [`Progress`] events, said as lines by [`PlainProgress`] (a line per state
//!   change) with [`BarProgress`]'s live bars below them on a terminal, kept by
//!   [`RecordingProgress`] in tests.
//! - [`console`]: [`Console`], where a command's lines and details go (stderr, `--verbose`,
//!   the run's log file).
//!
//! One mutating call goes: `limits.acquire(op)` -> `journal.record(intent)` -> the SDK call,
//! inside `backoff.retry` -> `journal.record(done | failed)` -> `await_condition` on the
//! result, reporting each probe's status to `progress`. The test below runs exactly that
//! against a loopback stand-in for the sandbox.
//!
//! # Driving a SimClock with HTTP calls in flight
//!
//! Build the clock with `SimClock::builder(start).on_advance(move |now| ...)` advancing the
//! sandbox's manual clock to `now`, and hand `Arc::new(sim.clone())` to everything as
//! `Arc<dyn Clock>`. Each concurrent unit of work (one task per resource) takes
//! `clock.participant()` before it is spawned; `apply::execute` does that, and the guard travels
//! back with the result until the scheduler has spawned what the finished work made ready.
//!
//! While a participant awaits an HTTP response it is busy, so virtual time is frozen and the
//! sandbox answers at the time the request was sent. While it sleeps in the limiter, a
//! backoff or a wait, it is asleep; once all are asleep, time jumps to the earliest wake-up.
//! The scheduler that spawns the tasks and awaits their results holds no guard of its own
//! while it waits.
//!
//! Read the rules in [`sim_clock`] (hand-over of guards, no clock-based timeouts around HTTP
//! calls). With the sandbox, turn the SDK's retries off (`RetryConfig::disabled()`): its
//! backoff sleeps in real time while the participant counts as busy, so the sandbox's
//! buckets, which refill on virtual time, would never refill in between; retry with
//! [`Backoff`] on the clock instead.
use std::sync::Arc;

pub mod backoff;
pub mod bar_progress;
pub mod cancel;
pub mod clock;
pub mod console;
pub mod journal;
pub mod limiter;
pub mod plain_progress;
pub mod private_file;
pub mod progress;
pub mod recording_progress;
pub mod sim_clock;
pub mod task_set;
pub mod wait;

pub use backoff::{Backoff, BackoffPolicy, RetryOutcome, Verdict};
pub use bar_progress::BarProgress;
pub use cancel::{Cancel, InterruptibleClock};
pub use clock::{Clock, ParticipantGuard, RealClock, SleepFuture};
pub use console::{Console, Sink};
pub use journal::{Entry, Journal, JournalError, JournalRead, Phase};
pub use limiter::{
    Category, Limit, Operation, RateLimits, TokenBucket, category, lower_bound_secs,
};
pub use plain_progress::PlainProgress;
pub use progress::{Both, Finish, Progress, Summary, group_of};
pub use recording_progress::{Event, RecordingProgress};
pub use sim_clock::{AdvanceHook, SimClock, SimClockBuilder};
pub use task_set::{Finished, TaskSet};
pub use wait::{PollInterval, Probe, WaitOutcome, await_condition};

/// How a command shows its progress on its console: a timestamped line per state change,
/// with live bars below them when the console is a terminal. Here rather than in
/// [`progress`], which the renderings implement: choosing between them is the caller's side.
pub fn progress_on(console: &Arc<Console>, clock: Arc<dyn Clock>) -> Arc<dyn Progress> {
    let lines = PlainProgress::new(clock.clone(), console.clone());
    match console.bars() {
        Some(multi) => Arc::new(Both(lines, BarProgress::on(multi.clone(), clock))),
        None => Arc::new(lines),
    }
}

#[cfg(test)]
mod tests {
    //! The pieces together, against a loopback server standing in for the sandbox: a line
    //! protocol over real TCP, with its own clock driven by the SimClock's hook.
    use envctl_aws_model::operation::EcsOp;
    use envctl_aws_model::status::RolloutState;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    const START: f64 = 1_800_000_000.0;

    /// The stand-in's state: its own clock, and when each deployment completes.
    #[derive(Default)]
    struct FakeEcs {
        now: Mutex<f64>,
        completes_at: Mutex<HashMap<String, f64>>,
    }

    impl FakeEcs {
        /// `UPDATE <service> <secs>` starts a deployment taking `secs`; `DESCRIBE <service>`
        /// answers its state. Every reply ends with the server's time.
        fn answer(&self, request: &str) -> String {
            let now = *self.now.lock().unwrap();
            let words: Vec<&str> = request.split_whitespace().collect();
            let mut deployments = self.completes_at.lock().unwrap();
            match words.as_slice() {
                ["UPDATE", service, secs] => {
                    let secs: f64 = secs.parse().unwrap();
                    deployments.insert(service.to_string(), now + secs);
                    format!("IN_PROGRESS {now}")
                }
                ["DESCRIBE", service] => match deployments.get(*service) {
                    Some(done) if *done <= now => format!("COMPLETED {now}"),
                    Some(_) => format!("IN_PROGRESS {now}"),
                    None => format!("MISSING {now}"),
                },
                _ => format!("BAD {now}"),
            }
        }
    }

    async fn serve(listener: TcpListener, ecs: Arc<FakeEcs>) {
        while let Ok((stream, _)) = listener.accept().await {
            let ecs = ecs.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut line = String::new();
                if BufReader::new(read).read_line(&mut line).await.is_ok() {
                    // Real latency: virtual time must not move meanwhile.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    let reply = ecs.answer(&line);
                    let _ = write.write_all(format!("{reply}\n").as_bytes()).await;
                }
            });
        }
    }

    struct Run {
        clock: Arc<dyn Clock>,
        limits: RateLimits,
        journal: Journal,
        progress: RecordingProgress,
        addr: std::net::SocketAddr,
        /// Calls whose reply carried a server time other than the send time.
        skewed: Mutex<Vec<String>>,
    }

    impl Run {
        /// One request, one reply line: (state, server time).
        async fn call(&self, operation: EcsOp, request: String) -> String {
            self.limits.acquire(Operation::Ecs(operation)).await;
            let sent = self.clock.now();
            let mut stream = TcpStream::connect(self.addr).await.unwrap();
            stream
                .write_all(format!("{request}\n").as_bytes())
                .await
                .unwrap();
            let mut reply = String::new();
            BufReader::new(stream).read_line(&mut reply).await.unwrap();
            let (state, server_now) = reply.trim().split_once(' ').unwrap();
            if server_now.parse::<f64>().unwrap() != sent {
                self.skewed
                    .lock()
                    .unwrap()
                    .push(format!("{request}: {server_now} != {sent}"));
            }
            state.to_string()
        }

        fn record(&self, resource: &str, operation: &str, phase: Phase) {
            let entry = Entry {
                time: self.clock.now(),
                run_id: "r1".into(),
                resource: resource.into(),
                operation: operation.into(),
                phase,
                message: None,
            };
            self.journal.record(&entry).unwrap();
        }

        async fn deploy(&self, service: &str, takes_secs: u64) -> WaitOutcome<()> {
            let key = format!("ecs/service/{service}");
            self.progress.started(&key, "update: rolling deployment");
            self.record(&key, "UpdateService", Phase::Intent);
            self.call(
                EcsOp::UpdateService,
                format!("UPDATE {service} {takes_secs}"),
            )
            .await;
            self.record(&key, "UpdateService", Phase::Done);
            let outcome = await_condition(
                self.clock.as_ref(),
                Duration::from_secs(600),
                PollInterval::fixed(Duration::from_secs(15)),
                || async {
                    match self
                        .call(EcsOp::DescribeServices, format!("DESCRIBE {service}"))
                        .await
                    {
                        s if s == RolloutState::Completed => Probe::Done(()),
                        s => {
                            self.progress.status(&key, &s);
                            Probe::Pending { status: s }
                        }
                    }
                },
            )
            .await;
            let text = format!("{outcome:?}");
            self.progress.finished(&key, Finish::Succeeded, &text);
            outcome
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_deployments_share_one_virtual_timeline_with_the_server() {
        let ecs = Arc::new(FakeEcs::default());
        *ecs.now.lock().unwrap() = START;
        let hook_ecs = ecs.clone();
        let sim = SimClock::builder(START)
            .on_advance(move |now| *hook_ecs.now.lock().unwrap() = now)
            .stall_timeout(Duration::from_secs(10))
            .build();
        let clock: Arc<dyn Clock> = Arc::new(sim.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(listener, ecs.clone()));
        let dir = tempfile::tempdir().unwrap();
        let run = Arc::new(Run {
            clock: clock.clone(),
            limits: RateLimits::ecs(clock.clone()),
            journal: Journal::open(dir.path(), "qcp1").unwrap(),
            progress: RecordingProgress::new(),
            addr,
            skewed: Mutex::new(Vec::new()),
        });

        let mut handles = Vec::new();
        for (service, secs) in [("mod-users", 180), ("mod-orders", 200), ("mod-search", 240)] {
            let guard = clock.participant();
            let run = run.clone();
            handles.push(tokio::spawn(async move {
                let _guard = guard;
                let outcome = run.deploy(service, secs).await;
                (service, outcome, run.clock.now() - START)
            }));
        }
        let mut done = Vec::new();
        for handle in handles {
            done.push(handle.await.unwrap());
        }
        server.abort();

        // Completion is seen at the first 15 s poll at or after it: 180, 210, 240.
        assert_eq!(
            done,
            vec![
                ("mod-users", WaitOutcome::Done(()), 180.0),
                ("mod-orders", WaitOutcome::Done(()), 210.0),
                ("mod-search", WaitOutcome::Done(()), 240.0),
            ]
        );
        assert_eq!(sim.elapsed(), Duration::from_secs(240));
        assert_eq!(*ecs.now.lock().unwrap(), START + 240.0);
        assert_eq!(run.skewed.lock().unwrap().clone(), Vec::<String>::new());

        let journal = Journal::read_all(dir.path(), "qcp1").unwrap();
        assert_eq!(journal.entries.len(), 6);
        assert!(journal.in_flight().is_empty());
        let statuses = run
            .progress
            .events()
            .into_iter()
            .filter(|e| matches!(e, Event::Status { .. }))
            .count();
        // Pending probes: 0..165 (12), 0..195 (14), 0..225 (16).
        assert_eq!(statuses, 12 + 14 + 16);
    }
}
