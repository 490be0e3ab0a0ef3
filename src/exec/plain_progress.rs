//! Progress as timestamped lines, for CI logs and pipes:
//! `[00:01:23] ecs/service/mod-users: deployment ecs-svc/123 IN_PROGRESS 1/2 running`.
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use super::clock::Clock;
use super::progress::{Finish, Progress, Summary, stamp};

/// Writes one line per event, stamped with the time since it was created. A status equal to
/// the resource's previous one is not repeated: waits poll every few seconds and would
/// otherwise fill a CI log with identical lines.
pub struct PlainProgress {
    clock: Arc<dyn Clock>,
    start: f64,
    state: Mutex<State>,
}

struct State {
    out: Box<dyn Write + Send>,
    last_status: HashMap<String, String>,
}

impl PlainProgress {
    pub fn new(clock: Arc<dyn Clock>, out: Box<dyn Write + Send>) -> Self {
        let start = clock.now();
        Self {
            clock,
            start,
            state: Mutex::new(State {
                out,
                last_status: HashMap::new(),
            }),
        }
    }

    fn line(&self, state: &mut State, text: &str) {
        let stamp = stamp(self.clock.now() - self.start);
        // Progress output must never fail the run (see `Progress`).
        let _ = writeln!(state.out, "[{stamp}] {text}");
        let _ = state.out.flush();
    }

    fn with_state(&self, f: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut state);
    }
}

impl Progress for PlainProgress {
    fn planned(&self, total: usize) {
        self.with_state(|s| self.line(s, &format!("{total} resources planned")));
    }

    fn started(&self, resource: &str, what: &str) {
        self.with_state(|s| self.line(s, &format!("{resource}: {what}")));
    }

    fn status(&self, resource: &str, text: &str) {
        self.with_state(|s| {
            if s.last_status.get(resource).is_some_and(|last| last == text) {
                return;
            }
            s.last_status.insert(resource.to_string(), text.to_string());
            self.line(s, &format!("{resource}: {text}"));
        });
    }

    fn finished(&self, resource: &str, finish: Finish, text: &str) {
        self.with_state(|s| {
            s.last_status.remove(resource);
            self.line(s, &format!("{resource}: {}: {text}", finish.label()));
        });
    }

    fn summary(&self, summary: &Summary) {
        let text = format!(
            "{} succeeded, {} failed, {} skipped, {} unchanged in {}",
            summary.succeeded,
            summary.failed,
            summary.skipped,
            summary.unchanged,
            summary.took()
        );
        self.with_state(|s| self.line(s, &text));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::exec::sim_clock::SimClock;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[tokio::test]
    async fn lines_are_stamped_with_simulated_time_and_repeats_are_dropped() {
        let sim = SimClock::new(1_800_000_000.0);
        let clock: Arc<dyn Clock> = Arc::new(sim.clone());
        let buffer = Buffer::default();
        let progress = PlainProgress::new(clock.clone(), Box::new(buffer.clone()));
        progress.planned(2);
        progress.started("ecs/service/mod-users", "update: rolling deployment");
        clock.sleep(Duration::from_secs(83)).await;
        let status = "deployment ecs-svc/123 IN_PROGRESS 1/2 running";
        progress.status("ecs/service/mod-users", status);
        progress.status("ecs/service/mod-users", status);
        clock.sleep(Duration::from_secs(3600)).await;
        progress.finished("ecs/service/mod-users", Finish::Succeeded, "COMPLETED");
        progress.finished(
            "ecs/service/mod-orders",
            Finish::Skipped,
            "dependency failed",
        );
        progress.summary(&Summary {
            succeeded: 1,
            skipped: 1,
            elapsed_secs: 3683.0,
            ..Summary::default()
        });
        assert_eq!(
            buffer.text(),
            "[00:00:00] 2 resources planned\n\
             [00:00:00] ecs/service/mod-users: update: rolling deployment\n\
             [00:01:23] ecs/service/mod-users: deployment ecs-svc/123 IN_PROGRESS 1/2 running\n\
             [01:01:23] ecs/service/mod-users: done: COMPLETED\n\
             [01:01:23] ecs/service/mod-orders: skipped: dependency failed\n\
             [01:01:23] 1 succeeded, 0 failed, 1 skipped, 0 unchanged in 01:01:23\n"
        );
    }

    #[test]
    fn a_changed_status_is_printed_again_after_another() {
        let clock: Arc<dyn Clock> = Arc::new(SimClock::new(0.0));
        let buffer = Buffer::default();
        let progress = PlainProgress::new(clock, Box::new(buffer.clone()));
        for text in ["CREATING", "CREATING", "ACTIVE", "CREATING"] {
            progress.status("kafka/cluster/main", text);
        }
        assert_eq!(buffer.text().lines().count(), 3);
    }

    #[test]
    fn stamps_are_hours_minutes_seconds() {
        assert_eq!(stamp(0.0), "00:00:00");
        assert_eq!(stamp(83.9), "00:01:23");
        assert_eq!(stamp(360_000.0), "100:00:00");
        assert_eq!(stamp(-1.0), "00:00:00");
    }
}
