//! A deterministic discrete-event clock, so a whole apply against the sandbox runs in
//! virtual time: a 40-minute MSK create or 144 rate-limited registrations take milliseconds,
//! and tests assert simulated seconds instead of timing real ones.
//!
//! # Model
//!
//! Concurrent units of work register as *participants* ([`Clock::participant`]). A participant
//! is *asleep* while inside [`Clock::sleep`] and *busy* otherwise (computing, or waiting for
//! real I/O such as an HTTP call to the sandbox). Virtual time moves only when no participant
//! is busy: it then jumps to the earliest sleep deadline, calls the `on_advance` hook with the
//! new time (the sandbox's manual clock is driven from it, so envctl and the emulated AWS share
//! one timeline), and wakes every sleeper whose deadline has come.
//!
//! # Invariants
//!
//! - Time never goes backwards and, under the rules below, never moves while a participant is
//!   busy, so an HTTP call in flight sees the time at which it was sent.
//! - Sleepers with the same deadline wake together; time is kept in integer nanoseconds, so a
//!   chain of sleeps sums exactly.
//! - Woken sleepers stop counting as asleep at the jump, so nothing else moves time until they
//!   have run and slept again or dropped their guards.
//! - The hook is called with the clock's lock held, in order, once per jump. It must not call
//!   back into this clock (it would deadlock); advancing another clock is what it is for.
//!
//! The clock counts, it does not identify: it compares the number of pending sleeps with the
//! number of live guards. Hence the rules:
//!
//! - Take a guard per concurrent unit of work *before* it starts (create it, then spawn), and
//!   drop it when the unit ends.
//! - Keep at most one clock sleep pending per participant: no `select!` between two clock
//!   sleeps, and no clock-based timeout around an HTTP call (a registered sleep counts its
//!   holder as asleep while the call is in flight; use the SDK's real-time timeouts).
//! - While any participant exists, sleep only from participants. A guardless sleep cannot be
//!   told apart from a participant's, so it could let time move under a busy participant.
//!   With no participants at all, guardless sleeps are fine and simply advance the clock
//!   (handy in tests and single-task tools).
//! - Hand over, do not gap: when finishing work makes new work ready (a dependency done, a
//!   concurrency slot free), create the new unit's guard *before* dropping the finished one.
//!   The simplest way: a spawned task returns its guard along with its result, and the
//!   scheduler drops it only after spawning what became ready. Otherwise the moment between
//!   the two guards looks idle and time jumps before the new work starts.
//!
//! # The one way to misuse it
//!
//! A participant that awaits anything other than the clock or real I/O — a channel, a
//! semaphore, a `JoinHandle`, a lock held by a sleeping task — while holding its guard counts
//! as busy forever, while the task it waits for is asleep waiting for time: a deadlock. Avoid
//! it by holding guards only in leaf work: a scheduler that holds no guard spawns the work,
//! awaits the handles and enforces dependencies and concurrency limits by what it spawns when
//! (handing guards over as above); or, inside a participant, by polling shared state with
//! clock sleeps. Detect it with [`SimClockBuilder::stall_timeout`]: a sleeper that sees
//! no clock activity for that long in *real* time panics with the clock's counts. Tests should
//! set it; it stays off by default because a legitimately slow real call would trip it.
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::clock::{Clock, ParticipantGuard, SleepFuture};

/// Called with the new time (seconds since the epoch) each time virtual time jumps.
pub type AdvanceHook = Box<dyn Fn(f64) + Send + Sync>;

/// A virtual clock shared by cloning (all clones are the same clock).
#[derive(Clone)]
pub struct SimClock {
    shared: Arc<Shared>,
}

/// Options for a [`SimClock`], fixed before the clock is shared.
pub struct SimClockBuilder {
    start_ns: u64,
    on_advance: Option<AdvanceHook>,
    stall_timeout: Option<Duration>,
}

struct Shared {
    state: Mutex<State>,
    start_ns: u64,
    on_advance: Option<AdvanceHook>,
    stall_timeout: Option<Duration>,
}

struct State {
    now_ns: u64,
    participants: usize,
    /// Pending sleeps by (deadline, sequence number); the sequence keeps equal deadlines apart
    /// and in arrival order.
    sleepers: BTreeMap<(u64, u64), Waker>,
    next_id: u64,
    /// Bumped on every change, so the stall watchdog can tell "nothing happened".
    activity: u64,
}

impl SimClockBuilder {
    /// Calls `hook` with the new time on every jump (see the module docs for its rules).
    pub fn on_advance(mut self, hook: impl Fn(f64) + Send + Sync + 'static) -> Self {
        self.on_advance = Some(Box::new(hook));
        self
    }

    /// Panics a sleeper that has seen no clock activity for `real` wall-clock time: the
    /// symptom of a participant awaiting something other than the clock.
    pub fn stall_timeout(mut self, real: Duration) -> Self {
        self.stall_timeout = Some(real);
        self
    }

    pub fn build(self) -> SimClock {
        SimClock {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    now_ns: self.start_ns,
                    participants: 0,
                    sleepers: BTreeMap::new(),
                    next_id: 0,
                    activity: 0,
                }),
                start_ns: self.start_ns,
                on_advance: self.on_advance,
                stall_timeout: self.stall_timeout,
            }),
        }
    }
}

impl SimClock {
    /// A clock starting at `start_epoch_secs` with no hook and no stall detection.
    pub fn new(start_epoch_secs: f64) -> Self {
        Self::builder(start_epoch_secs).build()
    }

    pub fn builder(start_epoch_secs: f64) -> SimClockBuilder {
        // `as` saturates (and maps NaN to 0), so no start value can panic here.
        let start_ns = (start_epoch_secs.max(0.0) * 1e9).round() as u64;
        SimClockBuilder {
            start_ns,
            on_advance: None,
            stall_timeout: None,
        }
    }

    /// Exact virtual time since the clock was built.
    pub fn elapsed(&self) -> Duration {
        let state = self.shared.lock();
        Duration::from_nanos(state.now_ns.saturating_sub(self.shared.start_ns))
    }

    /// Number of sleeps currently waiting for time to move.
    pub fn pending_sleeps(&self) -> usize {
        self.shared.lock().sleepers.len()
    }

    /// Number of live participant guards.
    pub fn participants(&self) -> usize {
        self.shared.lock().participants
    }
}

impl Clock for SimClock {
    fn now(&self) -> f64 {
        self.shared.lock().now_ns as f64 / 1e9
    }

    fn sleep(&self, d: Duration) -> SleepFuture<'_> {
        let now_ns = self.shared.lock().now_ns;
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Box::pin(SimSleep {
            shared: self.shared.clone(),
            deadline_ns: now_ns.saturating_add(nanos),
            key: None,
            watchdog: None,
        })
    }

    fn participant(&self) -> ParticipantGuard {
        {
            let mut state = self.shared.lock();
            state.participants += 1;
            state.activity += 1;
        }
        let shared = self.shared.clone();
        ParticipantGuard::new(move || {
            let wakers = {
                let mut state = shared.lock();
                state.participants = state.participants.saturating_sub(1);
                state.activity += 1;
                shared.advance_if_idle(&mut state)
            };
            wakers.into_iter().for_each(Waker::wake);
        })
    }

    fn simulated(&self) -> bool {
        true
    }
}

impl Shared {
    /// A poisoned lock only means a hook or a test panicked; the counts are still consistent
    /// (every update is a single statement), so keep going rather than cascade the panic.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Jumps to the earliest deadline if nobody is busy; returns the wakers to wake once the
    /// lock is released.
    fn advance_if_idle(&self, state: &mut State) -> Vec<Waker> {
        if state.sleepers.is_empty() || state.sleepers.len() < state.participants {
            return Vec::new();
        }
        let Some(&(deadline, _)) = state.sleepers.keys().next() else {
            return Vec::new();
        };
        let later = state.sleepers.split_off(&(deadline.saturating_add(1), 0));
        let due = std::mem::replace(&mut state.sleepers, later);
        state.now_ns = state.now_ns.max(deadline);
        state.activity += 1;
        if let Some(hook) = &self.on_advance {
            hook(state.now_ns as f64 / 1e9);
        }
        due.into_values().collect()
    }
}

struct SimSleep {
    shared: Arc<Shared>,
    deadline_ns: u64,
    /// Set while registered in `State::sleepers`.
    key: Option<(u64, u64)>,
    /// A real-time timer and the activity count it was armed at.
    watchdog: Option<(Pin<Box<tokio::time::Sleep>>, u64)>,
}

impl Future for SimSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let shared = this.shared.clone();
        let mut state = shared.lock();
        if state.now_ns >= this.deadline_ns {
            // A fired sleep was already removed by the jump; one that was due on arrival never
            // registered. Either way this task is busy again, which may let a passive
            // (guardless) sleeper's time come.
            if let Some(key) = this.key.take() {
                state.sleepers.remove(&key);
            }
            state.activity += 1;
            let wakers = shared.advance_if_idle(&mut state);
            drop(state);
            wakers.into_iter().for_each(Waker::wake);
            return Poll::Ready(());
        }
        let wakers = match this.key {
            Some(key) => {
                if let Some(waker) = state.sleepers.get_mut(&key) {
                    waker.clone_from(cx.waker());
                }
                Vec::new()
            }
            None => {
                let key = (this.deadline_ns, state.next_id);
                state.next_id += 1;
                state.sleepers.insert(key, cx.waker().clone());
                state.activity += 1;
                this.key = Some(key);
                shared.advance_if_idle(&mut state)
            }
        };
        let fired = state.now_ns >= this.deadline_ns;
        let activity = state.activity;
        let counts = (state.participants, state.sleepers.len(), state.now_ns);
        drop(state);
        wakers.into_iter().for_each(Waker::wake);
        if fired {
            // This sleep was the earliest and moved time itself; it is woken, so poll again
            // through the normal path rather than duplicate the completion logic.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.poll_watchdog(cx, activity, counts);
        Poll::Pending
    }
}

impl SimSleep {
    fn poll_watchdog(&mut self, cx: &mut Context<'_>, activity: u64, counts: (usize, usize, u64)) {
        let Some(limit) = self.shared.stall_timeout else {
            return;
        };
        loop {
            let (timer, seen) = self
                .watchdog
                .get_or_insert_with(|| (Box::pin(tokio::time::sleep(limit)), activity));
            if timer.as_mut().poll(cx).is_pending() {
                return;
            }
            let (participants, sleeping, now_ns) = counts;
            if *seen == activity {
                panic!(
                    "SimClock stalled: no activity for {limit:?} of real time with \
                     {participants} participant(s) and {sleeping} pending sleep(s) at \
                     {now_secs}s; a participant is probably awaiting something other than \
                     the clock or real I/O while holding its guard",
                    now_secs = now_ns as f64 / 1e9,
                );
            }
            // Something happened since the timer was armed: re-arm from here.
            self.watchdog = None;
        }
    }
}

impl Drop for SimSleep {
    fn drop(&mut self) {
        // A sleep cancelled before it fired (dropped by a select or a timeout) stops counting
        // as asleep; its holder is busy again, which can only hold time back, so no jump.
        if let Some(key) = self.key.take() {
            let mut state = self.shared.lock();
            if state.sleepers.remove(&key).is_some() {
                state.activity += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use super::*;

    const START: f64 = 1_800_000_000.0;

    fn test_clock() -> SimClock {
        SimClock::builder(START)
            .stall_timeout(Duration::from_secs(10))
            .build()
    }

    /// Spawns a participant that sleeps `secs` in turn and returns the elapsed virtual time
    /// it observed when done.
    fn sleeper(clock: &SimClock, secs: &[u64]) -> tokio::task::JoinHandle<Duration> {
        let guard = clock.participant();
        let clock = clock.clone();
        let secs = secs.to_vec();
        tokio::spawn(async move {
            let _guard = guard;
            for s in secs {
                clock.sleep(Duration::from_secs(s)).await;
            }
            clock.elapsed()
        })
    }

    async fn join(handle: tokio::task::JoinHandle<Duration>) -> Duration {
        match handle.await {
            Ok(d) => d,
            Err(e) => panic!("sleeper task failed: {e}"),
        }
    }

    #[tokio::test]
    async fn concurrent_sleeps_overlap_instead_of_adding_up() {
        let clock = test_clock();
        let five = sleeper(&clock, &[5]);
        let three = sleeper(&clock, &[3]);
        assert_eq!(join(three).await, Duration::from_secs(3));
        assert_eq!(join(five).await, Duration::from_secs(5));
        assert_eq!(clock.elapsed(), Duration::from_secs(5));
        assert_eq!(clock.participants(), 0);
    }

    #[tokio::test]
    async fn a_chain_of_sleeps_sums_exactly() {
        let clock = test_clock();
        let chain = sleeper(&clock, &[1, 2, 3, 60]);
        assert_eq!(join(chain).await, Duration::from_secs(66));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn interleaved_chains_keep_their_own_order() {
        let clock = test_clock();
        // Wake-ups at 2,4,6 and 3,6: the shared deadline at 6 must wake both together.
        let a = sleeper(&clock, &[2, 2, 2]);
        let b = sleeper(&clock, &[3, 3]);
        assert_eq!(join(a).await, Duration::from_secs(6));
        assert_eq!(join(b).await, Duration::from_secs(6));
        assert_eq!(clock.elapsed(), Duration::from_secs(6));
    }

    #[tokio::test]
    async fn a_busy_participant_holds_time_until_it_finishes() {
        let clock = test_clock();
        // Stands in for a task with an HTTP call in flight.
        let busy = clock.participant();
        let sleeping = sleeper(&clock, &[10]);
        // Until the sleep registers (or, if the clock is broken, completes: then fail below
        // instead of spinning here).
        while clock.pending_sleeps() == 0 && !sleeping.is_finished() {
            tokio::task::yield_now().await;
        }
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(clock.elapsed(), Duration::ZERO);
        assert!(!sleeping.is_finished());
        drop(busy);
        assert_eq!(join(sleeping).await, Duration::from_secs(10));
    }

    #[tokio::test]
    async fn handing_the_guard_back_starts_dependents_without_a_gap() {
        // A (5 s) must finish before B (3 s) starts; C (6 s) runs alongside. The scheduler is
        // not a participant: it awaits join handles, which only a non-participant may do.
        async fn run(clock: &SimClock, hand_over: bool) -> Duration {
            let guard = clock.participant();
            let c = clock.clone();
            let a = tokio::spawn(async move {
                c.sleep(Duration::from_secs(5)).await;
                guard // returned with the result: A still counts as busy
            });
            let independent = sleeper(clock, &[6]);
            let a_guard = match a.await {
                Ok(g) => g,
                Err(e) => panic!("A failed: {e}"),
            };
            if !hand_over {
                drop(a_guard);
                tokio::task::yield_now().await;
                let b = sleeper(clock, &[3]);
                join(independent).await;
                return join(b).await;
            }
            let b = sleeper(clock, &[3]);
            drop(a_guard);
            join(independent).await;
            join(b).await
        }
        assert_eq!(run(&test_clock(), true).await, Duration::from_secs(8));
        // Dropping first leaves a moment with only C, asleep: time jumps to 6 before B starts.
        // This is the gap the rule in the module docs exists to avoid.
        assert_eq!(run(&test_clock(), false).await, Duration::from_secs(9));
    }

    #[tokio::test]
    async fn the_hook_sees_every_jump_in_order() {
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let record = seen.clone();
        let clock = SimClock::builder(START)
            .on_advance(move |now| record.lock().unwrap_or_else(|p| p.into_inner()).push(now))
            .stall_timeout(Duration::from_secs(10))
            .build();
        let a = sleeper(&clock, &[5]);
        let b = sleeper(&clock, &[3]);
        join(a).await;
        join(b).await;
        let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(seen, vec![START + 3.0, START + 5.0]);
    }

    #[tokio::test]
    async fn a_guardless_sleep_is_passive_and_does_not_hang() {
        let clock = test_clock();
        clock.sleep(Duration::from_secs(7)).await;
        clock.sleep(Duration::ZERO).await;
        assert_eq!(clock.elapsed(), Duration::from_secs(7));
        assert_eq!(clock.now(), START + 7.0);
    }

    #[tokio::test]
    async fn a_cancelled_sleep_stops_counting_as_asleep() {
        let clock = test_clock();
        let busy = clock.participant();
        {
            let _guard = clock.participant();
            let mut sleep = clock.sleep(Duration::from_secs(30));
            // Poll once so it registers, then drop it as a select! would.
            let waker = Waker::noop();
            let mut cx = Context::from_waker(waker);
            assert!(sleep.as_mut().poll(&mut cx).is_pending());
            assert_eq!(clock.pending_sleeps(), 1);
        }
        assert_eq!(clock.pending_sleeps(), 0);
        drop(busy);
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_participant_awaiting_something_else_is_reported_as_a_stall() {
        let clock = SimClock::builder(START)
            .stall_timeout(Duration::from_millis(50))
            .build();
        let (_never_tx, never_rx) = tokio::sync::oneshot::channel::<()>();
        let stuck_guard = clock.participant();
        let stuck = tokio::spawn(async move {
            let _guard = stuck_guard;
            let _ = never_rx.await;
        });
        let sleeping = sleeper(&clock, &[1]);
        let err = match sleeping.await {
            Ok(d) => panic!("expected a stall panic, slept {d:?}"),
            Err(e) => e,
        };
        assert!(err.is_panic());
        stuck.abort();
    }
}
