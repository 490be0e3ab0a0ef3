//! One DescribeServices for up to ten waiting services: the deployment and deletion waits
//! of a cluster's services share their looks instead of sending one call each.
//!
//! DescribeServices takes up to ten names per call (ECS API reference, DescribeServices;
//! docs/aws-behaviour.md), and every call spends a token of the account's service-read
//! bucket, which other tools in the account share. A 144-service apply used to send 159 of
//! them, one name each.
//!
//! A wait that wants to look at its service asks [`look`]. The ask joins the round planned
//! for its cluster, or plans one `gather` later: the asks that arrive meanwhile are answered
//! together. When the round is due, the first waiter to wake takes its own name and up to
//! nine more that are due and sends the call (under the shared limiter, like every read);
//! the next waiter whose name is still untaken sends the next call, so a round of 25 names
//! is three calls. A waiter whose name another waiter is fetching looks again after
//! [`ANSWER_POLL`]: waits run as simulated-clock participants, which may await only the
//! clock or I/O, never another task (see `exec::sim_clock`), so they poll shared state.
//!
//! An answer counts for an ask only if its call was sent after the ask: a call sent before
//! an UpdateService may predate the deployment the waiter follows.
use envctl_aws_model::operation::EcsOp;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::context::Context;
use super::error::ActionError;
use crate::aws::ecs;
use crate::exec::Operation;
use crate::model::live::LiveService;

/// ECS's maximum number of services per DescribeServices call.
pub const DESCRIBE_SERVICES_BATCH: usize = 10;

/// How soon a waiter whose name is in another waiter's call looks for the answer again: a
/// DescribeServices takes tens of milliseconds.
pub const ANSWER_POLL: Duration = Duration::from_millis(25);

/// The shared looks of one run, per cluster.
pub struct ServiceWatch {
    gather: Duration,
    clusters: Mutex<BTreeMap<String, Round>>,
}

/// One cluster's waiting names.
#[derive(Default)]
struct Round {
    /// When the next round goes out; asks made before then join it.
    planned: Option<f64>,
    names: BTreeMap<String, Watched>,
}

#[derive(Default)]
struct Watched {
    /// Waits currently interested in this name.
    waiters: usize,
    /// An ask not yet taken into a call: the time of the round it joined.
    due: Option<f64>,
    /// A call for this name is on its way.
    in_flight: bool,
    /// The last answer, with the time its call was sent.
    answer: Option<(f64, Answer)>,
}

/// What DescribeServices said about one name.
#[derive(Debug, Clone)]
enum Answer {
    Found(Box<LiveService>),
    /// Not in `services` (ECS lists it under `failures` as MISSING).
    Missing,
    Failed(ActionError),
}

/// What the waiter should do next.
enum Next {
    Answer(Answer),
    Fetch(Vec<String>),
    Sleep(Duration),
}

impl ServiceWatch {
    /// `gather`: how long an ask waits for others to join its round.
    pub fn new(gather: Duration) -> Self {
        ServiceWatch {
            gather,
            clusters: Mutex::new(BTreeMap::new()),
        }
    }

    fn with<T>(&self, cluster: &str, f: impl FnOnce(&mut Round) -> T) -> T {
        // Every update below leaves the map consistent, so a poisoned lock is still usable.
        let mut clusters = self.clusters.lock().unwrap_or_else(|p| p.into_inner());
        f(clusters.entry(cluster.to_string()).or_default())
    }

    fn ask(&self, cluster: &str, name: &str, now: f64, not_after: f64) {
        let gather = self.gather.as_secs_f64();
        self.with(cluster, |round| {
            // Strictly later: a round due now may already be out (its senders woke at the
            // same instant), and joining it would depend on who ran first.
            let at = match round.planned {
                Some(at) if at > now => at,
                _ => {
                    round.planned = Some(now + gather);
                    now + gather
                }
            };
            // A look the wait's deadline cannot wait for goes out alone, on the deadline.
            let at = at.min(not_after.max(now));
            let watched = round.names.entry(name.to_string()).or_default();
            watched.due = Some(watched.due.map_or(at, |d| d.min(at)));
        });
    }

    fn next(&self, cluster: &str, name: &str, asked: f64, now: f64) -> Next {
        self.with(cluster, |round| {
            let Some(mine) = round.names.get(name) else {
                return Next::Sleep(ANSWER_POLL);
            };
            if let Some((sent, answer)) = &mine.answer
                && *sent >= asked
            {
                // Every waiter of a call takes its answer one ANSWER_POLL after the call was
                // sent, the one that sent it included: their next looks stay together, so
                // they keep sharing rounds (on a simulated clock the call itself takes no
                // time, and who sends it is a race).
                let ready = sent + ANSWER_POLL.as_secs_f64();
                if now < ready {
                    return Next::Sleep(Duration::from_secs_f64(ready - now));
                }
                return Next::Answer(answer.clone());
            }
            if mine.in_flight {
                return Next::Sleep(ANSWER_POLL);
            }
            let due = mine.due.unwrap_or(now);
            if due > now {
                return Next::Sleep(Duration::from_secs_f64(due - now));
            }
            // Take this name and the next nine that are due, earliest round first.
            let mut others: Vec<(f64, &String)> = round
                .names
                .iter()
                .filter(|(n, w)| *n != name && !w.in_flight && w.due.is_some_and(|d| d <= now))
                .map(|(n, w)| (w.due.unwrap_or(now), n))
                .collect();
            others.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
            let batch: Vec<String> = std::iter::once(name.to_string())
                .chain(
                    others
                        .into_iter()
                        .take(DESCRIBE_SERVICES_BATCH - 1)
                        .map(|(_, n)| n.clone()),
                )
                .collect();
            for n in &batch {
                if let Some(w) = round.names.get_mut(n) {
                    w.in_flight = true;
                    w.due = None;
                }
            }
            if round.planned.is_some_and(|p| p <= now)
                && !round.names.values().any(|w| w.due.is_some())
            {
                round.planned = None;
            }
            Next::Fetch(batch)
        })
    }

    fn answered(&self, cluster: &str, sent: f64, answers: Vec<(String, Answer)>) {
        self.with(cluster, |round| {
            for (name, answer) in answers {
                if let Some(w) = round.names.get_mut(&name) {
                    w.in_flight = false;
                    w.answer = Some((sent, answer));
                    if w.waiters == 0 {
                        round.names.remove(&name);
                    }
                }
            }
        });
    }

    /// A call that never answered (its wait was dropped mid-call): its names are due at
    /// once, so their other waiters send the next one instead of waiting for it forever.
    fn abandoned(&self, cluster: &str, batch: &[String]) {
        self.with(cluster, |round| {
            for name in batch {
                if let Some(w) = round.names.get_mut(name)
                    && w.in_flight
                {
                    w.in_flight = false;
                    w.due = Some(f64::NEG_INFINITY);
                    if w.waiters == 0 {
                        round.names.remove(name);
                    }
                }
            }
        });
    }

    fn register(&self, cluster: &str, name: &str) {
        self.with(cluster, |round| {
            round.names.entry(name.to_string()).or_default().waiters += 1;
        });
    }

    fn unregister(&self, cluster: &str, name: &str) {
        self.with(cluster, |round| {
            if let Some(w) = round.names.get_mut(name) {
                w.waiters = w.waiters.saturating_sub(1);
                if w.waiters == 0 && !w.in_flight {
                    round.names.remove(name);
                }
            }
        });
    }
}

/// A wait's interest in a name, for as long as the wait lasts; dropping it (the wait ended,
/// failed or was cancelled) takes the name out of later rounds.
pub struct Watching<'a> {
    watch: &'a ServiceWatch,
    cluster: String,
    name: String,
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        self.watch.unregister(&self.cluster, &self.name);
    }
}

/// Starts watching `name` in `cluster` for one wait.
pub fn watch<'a>(ctx: &'a Context, cluster: &str, name: &str) -> Watching<'a> {
    ctx.service_watch.register(cluster, name);
    Watching {
        watch: &ctx.service_watch,
        cluster: cluster.to_string(),
        name: name.to_string(),
    }
}

/// The service as a DescribeServices sent after this call began sees it, no later than
/// `not_after` (the wait's deadline, on the run's clock); `None` when ECS does not know it
/// (deleted and gone, or never created).
pub async fn look(
    ctx: &Context,
    watching: &Watching<'_>,
    resource: &str,
    not_after: f64,
) -> Result<Option<LiveService>, ActionError> {
    let watch = &ctx.service_watch;
    let (cluster, name) = (watching.cluster.as_str(), watching.name.as_str());
    let asked = ctx.clock.now();
    watch.ask(cluster, name, asked, not_after);
    loop {
        if ctx.cancelled() {
            return Err(ActionError::Interrupted { during: None });
        }
        let now = ctx.clock.now();
        match watch.next(cluster, name, asked, now) {
            Next::Answer(Answer::Found(s)) => return Ok(Some(*s)),
            Next::Answer(Answer::Missing) => return Ok(None),
            Next::Answer(Answer::Failed(e)) => return Err(e),
            Next::Sleep(d) => ctx.clock.sleep(d).await,
            Next::Fetch(batch) => {
                let mut in_flight = InFlight {
                    watch,
                    cluster,
                    batch,
                };
                let answers = fetch(ctx, resource, cluster, &in_flight.batch).await;
                in_flight.batch.clear();
                watch.answered(cluster, now, answers);
            }
        }
    }
}

/// The names of a call on its way, released by [`ServiceWatch::abandoned`] if the call is
/// dropped before it answers.
struct InFlight<'a> {
    watch: &'a ServiceWatch,
    cluster: &'a str,
    batch: Vec<String>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.batch.is_empty() {
            self.watch.abandoned(self.cluster, &self.batch);
        }
    }
}

/// One DescribeServices for `batch`; every name gets an answer, so none stays in flight.
async fn fetch(
    ctx: &Context,
    resource: &str,
    cluster: &str,
    batch: &[String],
) -> Vec<(String, Answer)> {
    let names = batch.to_vec();
    let described = ctx
        .read(resource, Operation::Ecs(EcsOp::DescribeServices), || {
            ecs::describe_services(&ctx.clients.ecs, cluster, &names)
        })
        .await;
    match described {
        Ok(services) => {
            let mut by_name: BTreeMap<String, LiveService> =
                services.into_iter().map(|s| (s.name.clone(), s)).collect();
            names
                .into_iter()
                .map(|n| {
                    let answer = by_name
                        .remove(&n)
                        .map_or(Answer::Missing, |s| Answer::Found(Box::new(s)));
                    (n, answer)
                })
                .collect()
        }
        Err(e) => names
            .into_iter()
            .map(|n| (n, Answer::Failed(e.clone())))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch_with(names: &[&str]) -> ServiceWatch {
        let watch = ServiceWatch::new(Duration::from_secs(5));
        for n in names {
            watch.register("c", n);
        }
        watch
    }

    fn fetch_of(next: Next) -> Vec<String> {
        match next {
            Next::Fetch(batch) => batch,
            Next::Answer(_) => panic!("an answer, not a fetch"),
            Next::Sleep(d) => panic!("a sleep of {d:?}, not a fetch"),
        }
    }

    fn sleep_of(next: Next) -> Duration {
        match next {
            Next::Sleep(d) => d,
            _ => panic!("not a sleep"),
        }
    }

    #[test]
    fn twelve_asks_in_one_round_are_two_calls() {
        let names: Vec<String> = (0..12).map(|i| format!("s{i:02}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let watch = watch_with(&refs);
        for (i, n) in refs.iter().enumerate() {
            watch.ask("c", n, 100.0 + i as f64 * 0.1, f64::MAX);
        }
        // All joined the round planned by the first ask, 5 s later.
        assert_eq!(
            sleep_of(watch.next("c", "s11", 101.1, 101.1)),
            Duration::from_secs_f64(105.0 - 101.1)
        );
        let first = fetch_of(watch.next("c", "s07", 100.7, 105.0));
        assert_eq!(first.len(), 10);
        assert_eq!(first[0], "s07");
        let rest: Vec<&String> = names.iter().filter(|n| !first.contains(n)).collect();
        assert_eq!(rest.len(), 2);
        // A name in the first call waits for its answer; an untaken one sends the second.
        assert_eq!(
            sleep_of(watch.next("c", &first[1], 100.0, 105.0)),
            ANSWER_POLL
        );
        let second = fetch_of(watch.next("c", rest[0], 100.0, 105.0));
        assert_eq!(second.len(), 2);
    }

    #[test]
    fn an_answer_sent_before_the_ask_does_not_count() {
        let watch = watch_with(&["a"]);
        watch.ask("c", "a", 10.0, f64::MAX);
        assert_eq!(fetch_of(watch.next("c", "a", 10.0, 15.0)), vec!["a"]);
        watch.answered("c", 15.0, vec![("a".into(), Answer::Missing)]);
        // The same wait takes it once ANSWER_POLL has passed.
        let ready = 15.0 + ANSWER_POLL.as_secs_f64();
        assert!(matches!(
            watch.next("c", "a", 10.0, ready),
            Next::Answer(Answer::Missing)
        ));
        // A later ask (after an UpdateService, say) needs a call of its own.
        watch.ask("c", "a", 20.0, f64::MAX);
        assert_eq!(
            sleep_of(watch.next("c", "a", 20.0, 20.0)),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn a_look_does_not_wait_past_its_deadline_and_an_abandoned_call_is_resent() {
        let watch = watch_with(&["a", "b"]);
        watch.ask("c", "a", 10.0, f64::MAX);
        // b's wait ends at 12: its look goes out then, before the round at 15.
        watch.ask("c", "b", 11.0, 12.0);
        assert_eq!(
            sleep_of(watch.next("c", "b", 11.0, 11.0)),
            Duration::from_secs(1)
        );
        let batch = fetch_of(watch.next("c", "b", 11.0, 12.0));
        assert_eq!(batch, vec!["b"]);
        // Its call is dropped before it answers: b is due at once for its other waiters (a
        // is not due before its round).
        watch.abandoned("c", &batch);
        assert_eq!(fetch_of(watch.next("c", "b", 11.0, 12.5)), vec!["b"]);
    }
}
