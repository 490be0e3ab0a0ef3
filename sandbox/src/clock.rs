//! Virtual time.
//!
//! The sandbox never runs background timers: every state machine is evaluated lazily against
//! `Clock::now()`. Virtual time is either scaled real time (`time_scale` virtual seconds per
//! real second) or manual (it moves only through [`Clock::advance`]). In both modes `advance`
//! adds an offset, so the control API can fast-forward a scaled clock too.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// A cloneable handle on the sandbox's virtual clock. Cheap to clone and to read.
#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Virtual seconds since the Unix epoch at `origin`.
    base: f64,
    origin: Instant,
    /// `None` in manual mode.
    scale: Option<f64>,
    /// Total seconds added by `advance`; a watch channel so sleepers wake when it moves.
    offset: watch::Sender<f64>,
}

impl Clock {
    /// A clock whose virtual time advances `scale` times faster than real time, starting at
    /// `start` (virtual seconds since the Unix epoch).
    pub fn scaled(start: f64, scale: f64) -> Clock {
        let scale = if scale.is_finite() && scale > 0.0 {
            scale
        } else {
            1.0
        };
        Clock::build(start, Some(scale))
    }

    /// A clock that moves only through [`Clock::advance`].
    pub fn manual(start: f64) -> Clock {
        Clock::build(start, None)
    }

    fn build(base: f64, scale: Option<f64>) -> Clock {
        let (offset, _) = watch::channel(0.0);
        Clock {
            inner: Arc::new(Inner {
                base,
                origin: Instant::now(),
                scale,
                offset,
            }),
        }
    }

    /// Virtual seconds since the Unix epoch.
    pub fn now(&self) -> f64 {
        let offset = *self.inner.offset.borrow();
        let running = match self.inner.scale {
            Some(scale) => self.inner.origin.elapsed().as_secs_f64() * scale,
            None => 0.0,
        };
        self.inner.base + offset + running
    }

    /// Virtual now as a `SystemTime`.
    pub fn now_system(&self) -> SystemTime {
        let since_epoch = Duration::try_from_secs_f64(self.now().max(0.0)).unwrap_or(Duration::MAX);
        UNIX_EPOCH.checked_add(since_epoch).unwrap_or(UNIX_EPOCH)
    }

    /// Virtual seconds per real second; `None` for a manual clock.
    pub fn time_scale(&self) -> Option<f64> {
        self.inner.scale
    }

    /// Whether the clock moves only through `advance`.
    pub fn is_manual(&self) -> bool {
        self.inner.scale.is_none()
    }

    /// Moves virtual time forward by `d` and wakes every sleeper whose deadline passed.
    pub fn advance(&self, d: Duration) {
        let secs = d.as_secs_f64();
        self.inner.offset.send_modify(|o| *o += secs);
    }

    /// Waits `d` of virtual time: `d / scale` of real time on a scaled clock, or until
    /// `advance` moves the clock past the deadline on a manual one.
    pub async fn sleep(&self, d: Duration) {
        let deadline = self.now() + d.as_secs_f64();
        self.sleep_until(deadline).await;
    }

    /// Waits until virtual now reaches `deadline` (virtual seconds since the epoch).
    pub async fn sleep_until(&self, deadline: f64) {
        let mut changes = self.inner.offset.subscribe();
        loop {
            let remaining = deadline - self.now();
            if remaining <= 0.0 {
                return;
            }
            match self.inner.scale {
                Some(scale) => {
                    // Capped so an absurd deadline cannot overflow the timer.
                    let real = Duration::try_from_secs_f64(remaining / scale)
                        .unwrap_or(Duration::MAX)
                        .min(Duration::from_secs(86_400 * 365));
                    tokio::select! {
                        _ = tokio::time::sleep(real) => {}
                        changed = changes.changed() => {
                            // The sender lives as long as this handle; a closed channel cannot
                            // happen while `self` exists, but never spin if it does.
                            if changed.is_err() { tokio::time::sleep(real).await; }
                        }
                    }
                }
                None => {
                    if changes.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn manual_sleep_wakes_only_after_advance() {
        let clock = Clock::manual(1000.0);
        let c2 = clock.clone();
        let sleeper = tokio::spawn(async move { c2.sleep(Duration::from_secs(60)).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(31));
        tokio::time::timeout(Duration::from_secs(2), sleeper)
            .await
            .expect("sleeper woke")
            .expect("task ok");
        assert_eq!(clock.now(), 1061.0);
    }

    #[tokio::test]
    async fn scaled_clock_runs_fast() {
        let clock = Clock::scaled(0.0, 1000.0);
        let t0 = Instant::now();
        clock.sleep(Duration::from_secs(50)).await;
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(clock.now() >= 50.0);
    }
}
