//! Progress of an apply as events, so the executor never prints: it tells a [`Progress`],
//! and the command picks how to show it — live bars on a terminal, timestamped lines in CI
//! logs, a recording in tests.

/// How a resource's work ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Succeeded,
    Failed,
    /// Not attempted, e.g. because a dependency failed.
    Skipped,
}

impl Finish {
    pub fn label(self) -> &'static str {
        match self {
            Finish::Succeeded => "done",
            Finish::Failed => "FAILED",
            Finish::Skipped => "skipped",
        }
    }
}

/// Counts for the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    pub succeeded: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Resources that needed no change.
    pub unchanged: usize,
    /// On the executor's clock.
    pub elapsed_secs: f64,
    /// Whether that clock is a sandbox's: the duration is then labelled simulated.
    pub simulated: bool,
}

impl Summary {
    /// `hh:mm:ss`, with ` simulated` when the clock was a sandbox's.
    pub fn took(&self) -> String {
        let stamp = stamp(self.elapsed_secs);
        if self.simulated {
            format!("{stamp} simulated")
        } else {
            stamp
        }
    }
}

/// A duration measured on `clock`, as people read it (`2m 25s`), with ` simulated` when
/// that clock is a sandbox's: a simulated duration never passes for a real one.
pub fn took(clock: &dyn super::Clock, secs: f64) -> String {
    let text = crate::time::human(secs);
    if clock.simulated() {
        format!("{text} simulated")
    } else {
        text
    }
}

/// Receives the executor's events. Implementations never fail the run: output errors are
/// swallowed, because losing a progress line must not abort an apply halfway.
pub trait Progress: Send + Sync {
    /// The number of resources the run will report `finished` for.
    fn planned(&self, total: usize);
    /// Work on `resource` (a model key such as `ecs/service/mod-users`) began: `what` says
    /// which (`"update: rolling deployment"`).
    fn started(&self, resource: &str, what: &str);
    /// The resource's state changed (`"CREATING"`, `"backing-up"`): a line people follow.
    /// The same status again is not a change and is not shown twice.
    fn status(&self, resource: &str, text: &str);
    /// What a poll saw or a wait is doing (`"deployment ecs-svc/123 IN_PROGRESS 1/2
    /// running"`, `"waiting for cluster ACTIVE: 92s of at most 5400s"`): for the run's log,
    /// `--verbose` and the live display, not a line of its own.
    fn detail(&self, resource: &str, text: &str) {
        let _ = (resource, text);
    }
    fn finished(&self, resource: &str, finish: Finish, text: &str);
    fn summary(&self, summary: &Summary);
}

/// Two renderings of one progress (the lines and the bars of a terminal).
pub struct Both<A, B>(pub A, pub B);

impl<A: Progress, B: Progress> Progress for Both<A, B> {
    fn planned(&self, total: usize) {
        self.0.planned(total);
        self.1.planned(total);
    }
    fn started(&self, resource: &str, what: &str) {
        self.0.started(resource, what);
        self.1.started(resource, what);
    }
    fn status(&self, resource: &str, text: &str) {
        self.0.status(resource, text);
        self.1.status(resource, text);
    }
    fn detail(&self, resource: &str, text: &str) {
        self.0.detail(resource, text);
        self.1.detail(resource, text);
    }
    fn finished(&self, resource: &str, finish: Finish, text: &str) {
        self.0.finished(resource, finish, text);
        self.1.finished(resource, finish, text);
    }
    fn summary(&self, summary: &Summary) {
        // The bars go first, so the summary line is not printed above bars about to vanish.
        self.1.summary(summary);
        self.0.summary(summary);
    }
}

/// `hh:mm:ss`, hours growing past two digits if a run ever lasts that long.
pub(crate) fn stamp(secs: f64) -> String {
    let secs = secs.max(0.0) as u64;
    format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// The group a resource is shown under: its key without the last segment
/// (`ecs/service/mod-users` -> `ecs/service`).
pub fn group_of(resource: &str) -> &str {
    resource
        .rsplit_once('/')
        .map_or(resource, |(group, _)| group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_group_by_their_key_prefix() {
        assert_eq!(group_of("ecs/service/mod-users"), "ecs/service");
        assert_eq!(group_of("kafka/cluster/main"), "kafka/cluster");
        assert_eq!(group_of("standalone"), "standalone");
    }
}
