//! Progress as lines a person follows (CI logs, pipes, and the lines above a terminal's
//! bars): a line when a resource's state changes, never one per poll.
//!
//! - A status is a line when it differs from the resource's last one (`[00:00:21]
//!   kafka/cluster/main: CREATING`); details (polls, deployment counts, the waits' own
//!   heartbeats, what each action started) go to the sink's details: the run's log and
//!   `--verbose`.
//! - Lines of one group saying the same thing one after the other, within
//!   [`COALESCE_SECS`], are one line: 26 services finishing their deployments are
//!   `ecs/service: 26 done (edge-patron-b, ...)`, each one's own text going to the details.
//! - When nothing was said for [`QUIET_SECS`] while resources are in progress, one line says
//!   what they are waiting for and for how long.
//! - A failure is said at once and whole.
//!
//! Every line is stamped with the time since the progress was made, on the run's clock; on a
//! sandbox the first line says that clock is simulated.
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::clock::Clock;
use super::console::Sink;
use super::progress::{Finish, Progress, Summary, group_of, stamp};
use crate::time::human;

/// How long after its first line a group line waits for more of the same (run clock).
pub const COALESCE_SECS: f64 = 30.0;
/// How long the console may stay silent while resources are in progress (run clock).
pub const QUIET_SECS: f64 = 300.0;
/// Names a coalesced line lists before "and N more".
const NAMES_SHOWN: usize = 3;

pub struct PlainProgress {
    clock: Arc<dyn Clock>,
    start: f64,
    sink: Arc<dyn Sink>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Resources in progress: since when, and their latest state.
    active: BTreeMap<String, Active>,
    last_status: HashMap<String, String>,
    batch: Option<Batch>,
    /// When the last line was said (run clock, since `start`).
    last_line: f64,
    planned: usize,
    /// Whether a line has said that the clock is simulated.
    clock_said: bool,
}

struct Active {
    since: f64,
    state: String,
}

/// Lines of one group saying the same thing, said together.
struct Batch {
    at: f64,
    group: String,
    /// `done`, `skipped`, or a status.
    what: String,
    finished: bool,
    /// Each resource, its own line and when it came.
    members: Vec<(String, String, f64)>,
}

impl PlainProgress {
    pub fn new(clock: Arc<dyn Clock>, sink: Arc<dyn Sink>) -> Self {
        let start = clock.now();
        Self {
            clock,
            start,
            sink,
            state: Mutex::new(State::default()),
        }
    }

    fn now(&self) -> f64 {
        self.clock.now() - self.start
    }

    fn with_state(&self, f: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.tick(&mut state);
        f(&mut state);
    }

    /// A line stamped `at`; the silence the heartbeat measures starts there.
    fn say(&self, s: &mut State, at: f64, text: &str) {
        self.sink.line(&format!("[{}] {text}", stamp(at)));
        s.last_line = at;
    }

    fn note(&self, text: &str) {
        self.note_at(self.now(), text);
    }

    fn note_at(&self, at: f64, text: &str) {
        self.sink.detail(&format!("[{}] {text}", stamp(at)));
    }

    /// Before every event: a group line whose time is up is said, and a long silence while
    /// resources are in progress is broken by one line about them.
    fn tick(&self, s: &mut State) {
        let now = self.now();
        if s.batch
            .as_ref()
            .is_some_and(|b| now - b.at >= COALESCE_SECS)
        {
            self.flush(s);
        }
        if !s.active.is_empty() && now - s.last_line >= QUIET_SECS {
            self.flush(s);
            let text = self.waiting_line(s, now);
            self.say(s, now, &text);
        }
    }

    /// `still waiting on kafka/cluster/kraft (CREATING for 5m 38s), ecs/service x26
    /// (rolling update for 3m 10s)`: a group of more than two is counted, not named.
    fn waiting_line(&self, s: &State, now: f64) -> String {
        let mut groups: BTreeMap<&str, Vec<(&String, &Active)>> = BTreeMap::new();
        for (resource, active) in &s.active {
            groups
                .entry(group_of(resource))
                .or_default()
                .push((resource, active));
        }
        let parts: Vec<String> = groups
            .iter()
            .flat_map(|(group, members)| {
                if members.len() > 2 {
                    let oldest = members.iter().map(|(_, a)| a.since).fold(now, f64::min);
                    let state = &members[0].1.state;
                    vec![format!(
                        "{group} x{} ({state} for {})",
                        members.len(),
                        human(now - oldest)
                    )]
                } else {
                    members
                        .iter()
                        .map(|(r, a)| format!("{r} ({} for {})", a.state, human(now - a.since)))
                        .collect()
                }
            })
            .collect();
        format!(
            "still waiting on {}{}",
            parts.join(", "),
            if self.clock.simulated() {
                "; simulated time"
            } else {
                ""
            }
        )
    }

    /// Adds a line to the group's batch, saying the batch first when it says something else.
    fn batch(&self, s: &mut State, resource: &str, what: &str, finished: bool, own: String) {
        let group = group_of(resource);
        if s.batch
            .as_ref()
            .is_some_and(|b| b.group != group || b.what != what || b.finished != finished)
        {
            self.flush(s);
        }
        let now = self.now();
        let batch = s.batch.get_or_insert_with(|| Batch {
            at: now,
            group: group.to_string(),
            what: what.to_string(),
            finished,
            members: Vec::new(),
        });
        batch.members.push((resource.to_string(), own, now));
    }

    fn flush(&self, s: &mut State) {
        let Some(batch) = s.batch.take() else {
            return;
        };
        if let [(resource, own, _)] = batch.members.as_slice() {
            self.say(s, batch.at, &format!("{resource}: {own}"));
            return;
        }
        for (resource, own, at) in &batch.members {
            self.note_at(*at, &format!("{resource}: {own}"));
        }
        let mut names: Vec<&str> = batch
            .members
            .iter()
            .map(|(r, _, _)| r.rsplit('/').next().unwrap_or(r))
            .collect();
        let more = names.len().saturating_sub(NAMES_SHOWN);
        names.truncate(NAMES_SHOWN);
        let listed = if more > 0 {
            format!("{} and {more} more", names.join(", "))
        } else {
            names.join(", ")
        };
        let text = if batch.finished {
            format!(
                "{}: {} {} ({listed})",
                batch.group,
                batch.members.len(),
                batch.what
            )
        } else {
            format!("{}: {} ({listed})", batch.group, batch.what)
        };
        self.say(s, batch.at, &text);
    }
}

impl Progress for PlainProgress {
    fn planned(&self, total: usize) {
        self.with_state(|s| {
            s.planned = total;
            s.last_line = self.now();
            if total == 0 {
                self.note("nothing to change");
                return;
            }
            let clock = if self.clock.simulated() && !s.clock_said {
                s.clock_said = true;
                " (times are on the sandbox's simulated clock)"
            } else {
                ""
            };
            let noun = if total == 1 { "resource" } else { "resources" };
            let text = format!("{total} {noun} planned{clock}");
            let now = self.now();
            self.say(s, now, &text);
        });
    }

    fn started(&self, resource: &str, what: &str) {
        self.with_state(|s| {
            let since = self.now();
            s.active.insert(
                resource.to_string(),
                Active {
                    since,
                    state: what.to_string(),
                },
            );
            self.note(&format!("{resource}: {what}"));
        });
    }

    fn status(&self, resource: &str, text: &str) {
        self.with_state(|s| {
            if let Some(active) = s.active.get_mut(resource) {
                active.state = text.to_string();
            }
            if s.last_status.get(resource).is_some_and(|last| last == text) {
                self.note(&format!("{resource}: {text}"));
                return;
            }
            s.last_status.insert(resource.to_string(), text.to_string());
            self.batch(s, resource, text, false, text.to_string());
        });
    }

    fn detail(&self, resource: &str, text: &str) {
        self.with_state(|_| self.note(&format!("{resource}: {text}")));
    }

    fn finished(&self, resource: &str, finish: Finish, text: &str) {
        self.with_state(|s| {
            s.active.remove(resource);
            s.last_status.remove(resource);
            let own = format!("{}: {text}", finish.label());
            if finish == Finish::Failed {
                self.flush(s);
                let now = self.now();
                self.say(s, now, &format!("{resource}: {own}"));
            } else {
                self.batch(s, resource, finish.label(), true, own);
            }
        });
    }

    fn summary(&self, summary: &Summary) {
        self.with_state(|s| {
            self.flush(s);
            s.active.clear();
            s.last_status.clear();
            let text = format!(
                "{} succeeded, {} failed, {} skipped, {} unchanged in {}",
                summary.succeeded,
                summary.failed,
                summary.skipped,
                summary.unchanged,
                summary.took()
            );
            let anything = s.planned > 0
                || summary.succeeded + summary.failed + summary.skipped + summary.unchanged > 0;
            if anything {
                let now = self.now();
                self.say(s, now, &text);
            } else {
                self.note(&text);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::exec::console::Recorder;
    use crate::exec::sim_clock::SimClock;

    fn progress(clock: &Arc<dyn Clock>) -> (PlainProgress, Arc<Recorder>) {
        let recorder = Arc::new(Recorder::default());
        (
            PlainProgress::new(clock.clone(), recorder.clone()),
            recorder,
        )
    }

    #[tokio::test]
    async fn a_line_per_state_change_and_polls_only_in_the_details() {
        let sim = SimClock::new(1_800_000_000.0);
        let clock: Arc<dyn Clock> = Arc::new(sim.clone());
        let (progress, said) = progress(&clock);
        progress.planned(2);
        progress.started("ecs/service/mod-users", "rolling update");
        progress.started("rds/instance/db", "create");
        progress.status("rds/instance/db", "creating");
        let count = "deployment ecs-svc/123 IN_PROGRESS 1/2 running";
        // Twelve minutes of polls, once a minute.
        for minute in 1..=12 {
            clock.sleep(Duration::from_secs(60)).await;
            progress.detail("ecs/service/mod-users", count);
            let state = if minute < 7 { "creating" } else { "backing-up" };
            progress.status("rds/instance/db", state);
        }
        progress.finished("ecs/service/mod-users", Finish::Succeeded, "COMPLETED");
        progress.finished("rds/instance/db", Finish::Failed, "timed out");
        progress.summary(&Summary {
            succeeded: 1,
            failed: 1,
            elapsed_secs: 720.0,
            simulated: true,
            ..Summary::default()
        });
        assert_eq!(
            said.lines(),
            vec![
                "[00:00:00] 2 resources planned (times are on the sandbox's simulated clock)",
                "[00:00:00] rds/instance/db: creating",
                "[00:05:00] still waiting on ecs/service/mod-users (rolling update for 5m), \
                 rds/instance/db (creating for 5m); simulated time",
                "[00:07:00] rds/instance/db: backing-up",
                "[00:12:00] still waiting on ecs/service/mod-users (rolling update for 12m), \
                 rds/instance/db (backing-up for 12m); simulated time",
                "[00:12:00] ecs/service/mod-users: done: COMPLETED",
                "[00:12:00] rds/instance/db: FAILED: timed out",
                "[00:12:00] 1 succeeded, 1 failed, 0 skipped, 0 unchanged in 00:12:00 simulated",
            ]
        );
        let details = said.details();
        assert!(details.contains(&format!("[00:01:00] ecs/service/mod-users: {count}")));
        assert!(details.contains(&"[00:02:00] rds/instance/db: creating".to_string()));
        assert_eq!(details.iter().filter(|d| d.contains(count)).count(), 12);
    }

    #[tokio::test]
    async fn a_group_saying_the_same_thing_in_a_row_is_one_line() {
        let clock: Arc<dyn Clock> = Arc::new(SimClock::new(0.0));
        let (progress, said) = progress(&clock);
        progress.planned(6);
        for name in ["a", "b", "c", "d", "e"] {
            progress.started(&format!("ecs/service/{name}"), "rolling update");
        }
        progress.started("kafka/cluster/main", "create");
        for name in ["a", "b", "c", "d", "e"] {
            progress.detail(&format!("ecs/service/{name}"), "IN_PROGRESS 0/2 running");
            clock.sleep(Duration::from_secs(2)).await;
            progress.finished(
                &format!("ecs/service/{name}"),
                Finish::Succeeded,
                &format!("{name}:2 registered"),
            );
        }
        // After the window: a line of its own.
        clock.sleep(Duration::from_secs(40)).await;
        progress.status("kafka/cluster/main", "CREATING");
        progress.finished("kafka/cluster/main", Finish::Succeeded, "created (3.6.0)");
        assert_eq!(
            said.lines(),
            vec![
                "[00:00:00] 6 resources planned (times are on the sandbox's simulated clock)",
                "[00:00:02] ecs/service: 5 done (a, b, c and 2 more)",
                "[00:00:50] kafka/cluster/main: CREATING",
            ]
        );
        progress.summary(&Summary::default());
        assert_eq!(
            said.lines()[3],
            "[00:00:50] kafka/cluster/main: done: created (3.6.0)"
        );
        assert!(
            said.details()
                .contains(&"[00:00:10] ecs/service/e: done: e:2 registered".to_string()),
            "{:?}",
            said.details()
        );
    }

    #[test]
    fn a_plan_with_nothing_to_do_says_nothing() {
        let clock: Arc<dyn Clock> = Arc::new(SimClock::new(0.0));
        let (progress, said) = progress(&clock);
        progress.planned(0);
        progress.summary(&Summary::default());
        assert!(said.lines().is_empty());
        assert_eq!(said.details().len(), 2);
    }

    #[test]
    fn stamps_are_hours_minutes_seconds() {
        assert_eq!(stamp(0.0), "00:00:00");
        assert_eq!(stamp(83.9), "00:01:23");
        assert_eq!(stamp(360_000.0), "100:00:00");
        assert_eq!(stamp(-1.0), "00:00:00");
    }
}
