//! Spawning the executor's concurrent work so that a `SimClock` sees it correctly without the
//! caller having to remember the rules in `sim_clock.rs`.
//!
//! Every spawned task gets a participant guard taken *before* it is spawned, and hands the
//! guard back with its result. The scheduler (which holds no guard itself) receives a
//! [`Finished`] and spawns whatever became ready before dropping it, so there is never an
//! instant where finished work has left and new work has not arrived — the gap in which a
//! simulated clock would jump too early. With `RealClock` the guards are inert and this is a
//! plain `JoinSet`.
use std::future::Future;
use std::sync::Arc;

use tokio::task::{JoinError, JoinSet};

use super::clock::{Clock, ParticipantGuard};

/// A set of spawned tasks, each a participant of `clock` until its [`Finished`] is dropped.
/// Dropping the set aborts the tasks still running.
pub struct TaskSet<T> {
    clock: Arc<dyn Clock>,
    tasks: JoinSet<(T, ParticipantGuard)>,
}

/// A task's output, still holding the task's participation. Drop it after spawning the work
/// its completion made ready (the end of the loop body does exactly that).
#[derive(Debug)]
pub struct Finished<T> {
    pub output: T,
    _guard: ParticipantGuard,
}

impl<T: Send + 'static> TaskSet<T> {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            tasks: JoinSet::new(),
        }
    }

    /// Spawns `work` as a participant of the clock.
    pub fn spawn(&mut self, work: impl Future<Output = T> + Send + 'static) {
        let guard = self.clock.participant();
        self.tasks.spawn(async move { (work.await, guard) });
    }

    /// The next task to finish, in completion order; `None` when none are left. A task that
    /// panicked or was aborted comes back as the `JoinError`, its guard already released.
    /// Await this only from code that holds no participant guard.
    pub async fn join_next(&mut self) -> Option<Result<Finished<T>, JoinError>> {
        let joined = self.tasks.join_next().await?;
        Some(joined.map(|(output, guard)| Finished {
            output,
            _guard: guard,
        }))
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::exec::sim_clock::SimClock;

    fn sim() -> (SimClock, Arc<dyn Clock>) {
        let sim = SimClock::builder(1_800_000_000.0)
            .stall_timeout(Duration::from_secs(10))
            .build();
        (sim.clone(), Arc::new(sim))
    }

    fn nap(
        clock: &Arc<dyn Clock>,
        name: &'static str,
        secs: u64,
    ) -> impl Future<Output = &'static str> + Send + 'static {
        let clock = clock.clone();
        async move {
            clock.sleep(Duration::from_secs(secs)).await;
            name
        }
    }

    #[tokio::test]
    async fn dependents_start_when_their_dependency_finishes() {
        // kafka (5 s) before the service that needs its endpoint (3 s); rds (6 s) alongside.
        let (sim, clock) = sim();
        let mut set = TaskSet::new(clock.clone());
        set.spawn(nap(&clock, "kafka", 5));
        set.spawn(nap(&clock, "rds", 6));
        let mut order = Vec::new();
        while let Some(done) = set.join_next().await {
            let done = match done {
                Ok(d) => d,
                Err(e) => panic!("task failed: {e}"),
            };
            order.push((done.output, sim.elapsed().as_secs()));
            if done.output == "kafka" {
                set.spawn(nap(&clock, "service", 3));
            }
        }
        assert_eq!(order, vec![("kafka", 5), ("rds", 6), ("service", 8)]);
        assert_eq!(sim.participants(), 0);
    }

    #[tokio::test]
    async fn a_concurrency_limit_refills_without_a_gap() {
        // Jobs of 10, 15, 10, 10 s, two at a time: the third starts when the first ends (10 s),
        // not when the clock next finds everyone asleep (15 s).
        let (sim, clock) = sim();
        let mut set = TaskSet::new(clock.clone());
        let mut queue = vec![10, 15, 10, 10].into_iter();
        for secs in queue.by_ref().take(2) {
            set.spawn(nap(&clock, "job", secs));
        }
        let mut finished_at = Vec::new();
        while let Some(done) = set.join_next().await {
            assert!(done.is_ok());
            finished_at.push(sim.elapsed().as_secs());
            if let Some(secs) = queue.next() {
                set.spawn(nap(&clock, "job", secs));
            }
            assert!(set.len() <= 2);
        }
        assert_eq!(finished_at, vec![10, 15, 20, 25]);
        assert!(set.is_empty());
    }

    #[tokio::test]
    async fn a_panicking_task_releases_its_participation() {
        let (sim, clock) = sim();
        let mut set: TaskSet<()> = TaskSet::new(clock.clone());
        set.spawn(async { panic!("adapter bug") });
        set.spawn({
            let clock = clock.clone();
            async move { clock.sleep(Duration::from_secs(4)).await }
        });
        let mut panics = 0;
        while let Some(done) = set.join_next().await {
            if done.is_err_and(|e| e.is_panic()) {
                panics += 1;
            }
        }
        assert_eq!(panics, 1);
        assert_eq!(sim.elapsed(), Duration::from_secs(4));
        assert_eq!(sim.participants(), 0);
    }
}
