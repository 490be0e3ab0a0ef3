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

/// Receives the executor's events. Implementations never fail the run: output errors are
/// swallowed, because losing a progress line must not abort an apply halfway.
pub trait Progress: Send + Sync {
    /// The number of resources the run will report `finished` for.
    fn planned(&self, total: usize);
    /// Work on `resource` (a model key such as `ecs/service/mod-users`) began: `what` says
    /// which (`"update: rolling deployment"`).
    fn started(&self, resource: &str, what: &str);
    /// A new status while waiting (`"deployment ecs-svc/123 IN_PROGRESS 1/2 running"`).
    fn status(&self, resource: &str, text: &str);
    fn finished(&self, resource: &str, finish: Finish, text: &str);
    fn summary(&self, summary: &Summary);
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
