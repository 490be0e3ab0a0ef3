//! Progress as live terminal bars: one line per resource group (`ecs/service`,
//! `kafka/cluster`, ...) with its counts and latest status or poll, and a total below them
//! with the time on the run's clock (simulated on a sandbox, and said so). 144 services
//! would not fit one line each; a group line does. The lines people keep (state changes,
//! failures, the summary) are [`super::PlainProgress`]'s, printed above the bars; the bars
//! go when the apply ends, so each apply of a matrix draws its own.
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::clock::Clock;
use super::progress::{Finish, Progress, Summary, group_of, stamp};

const TOTAL_TEMPLATE: &str = "{bar:32} {pos}/{len} resources {msg}";
const GROUP_TEMPLATE: &str = "{spinner} {prefix:<16} {msg}";

pub struct BarProgress {
    multi: MultiProgress,
    clock: Arc<dyn Clock>,
    start: f64,
    bars: Mutex<Bars>,
}

/// The bars of the apply in progress.
#[derive(Default)]
struct Bars {
    total: Option<ProgressBar>,
    groups: BTreeMap<String, Group>,
}

/// One group's line and what it shows.
struct Group {
    bar: ProgressBar,
    /// Resources in progress, with their latest status (empty until the first one).
    active: BTreeMap<String, String>,
    succeeded: usize,
    failed: usize,
    skipped: usize,
    /// The resource whose status changed last: the one the line shows.
    latest: Option<String>,
}

fn style(template: &str, fallback: fn() -> ProgressStyle) -> ProgressStyle {
    // Templates are constants; a bad one is a programming error caught by the tests, and
    // falling back to the default style keeps a release build drawing regardless.
    ProgressStyle::with_template(template).unwrap_or_else(|_| fallback())
}

impl BarProgress {
    /// Draws on `target`.
    pub fn with_target(target: ProgressDrawTarget, clock: Arc<dyn Clock>) -> Self {
        Self::on(MultiProgress::with_draw_target(target), clock)
    }

    /// Draws in `multi`, the console's display (its lines are printed above).
    pub fn on(multi: MultiProgress, clock: Arc<dyn Clock>) -> Self {
        let start = clock.now();
        Self {
            multi,
            clock,
            start,
            bars: Mutex::new(Bars::default()),
        }
    }

    /// The run's clock, as the total shows it.
    fn time(&self) -> String {
        let at = stamp(self.clock.now() - self.start);
        if self.clock.simulated() {
            format!("{at} simulated")
        } else {
            at
        }
    }

    fn with_bars<T>(&self, f: impl FnOnce(&mut Bars) -> T) -> T {
        let mut bars = self.bars.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut bars)
    }

    fn with_group(&self, resource: &str, f: impl FnOnce(&mut Group)) {
        let name = group_of(resource);
        let time = self.time();
        self.with_bars(|bars| {
            if !bars.groups.contains_key(name) {
                let spinner = ProgressBar::new_spinner();
                let bar = match &bars.total {
                    Some(total) => self.multi.insert_before(total, spinner),
                    None => self.multi.add(spinner),
                };
                bar.set_style(style(GROUP_TEMPLATE, ProgressStyle::default_spinner));
                bar.set_prefix(name.to_string());
                if !self.multi.is_hidden() {
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
                bars.groups.insert(
                    name.to_string(),
                    Group {
                        bar,
                        active: BTreeMap::new(),
                        succeeded: 0,
                        failed: 0,
                        skipped: 0,
                        latest: None,
                    },
                );
            }
            if let Some(group) = bars.groups.get_mut(name) {
                f(group);
                group.bar.set_message(group.line());
            }
            if let Some(total) = &bars.total {
                total.set_message(time);
            }
        });
    }
}

impl Group {
    fn line(&self) -> String {
        let mut line = format!("{} active, {} done", self.active.len(), self.succeeded);
        if self.failed > 0 {
            line.push_str(&format!(", {} failed", self.failed));
        }
        if self.skipped > 0 {
            line.push_str(&format!(", {} skipped", self.skipped));
        }
        let shown = self
            .latest
            .as_ref()
            .and_then(|r| self.active.get(r).map(|s| (r, s)));
        if let Some((resource, status)) = shown {
            let name = resource.rsplit('/').next().unwrap_or(resource);
            line.push_str(&format!(" · {name}: {status}"));
        }
        line
    }
}

impl Progress for BarProgress {
    fn planned(&self, total: usize) {
        let time = self.time();
        self.with_bars(|bars| {
            if total == 0 {
                return;
            }
            let bar = self.multi.add(ProgressBar::new(total as u64));
            bar.set_style(style(TOTAL_TEMPLATE, ProgressStyle::default_bar));
            bar.set_message(time);
            bars.total = Some(bar);
        });
    }

    fn started(&self, resource: &str, what: &str) {
        self.with_group(resource, |g| {
            g.active.insert(resource.to_string(), what.to_string());
            g.latest = Some(resource.to_string());
        });
    }

    fn status(&self, resource: &str, text: &str) {
        self.with_group(resource, |g| {
            g.active.insert(resource.to_string(), text.to_string());
            g.latest = Some(resource.to_string());
        });
    }

    fn detail(&self, resource: &str, text: &str) {
        // A poll is what the live display is for: the group line shows the latest.
        self.status(resource, text);
    }

    fn finished(&self, resource: &str, finish: Finish, _: &str) {
        self.with_group(resource, |g| {
            g.active.remove(resource);
            match finish {
                Finish::Succeeded => g.succeeded += 1,
                Finish::Failed => g.failed += 1,
                Finish::Skipped => g.skipped += 1,
            }
            if g.latest.as_deref() == Some(resource) {
                g.latest = g.active.keys().next_back().cloned();
            }
        });
        self.with_bars(|bars| {
            if let Some(total) = &bars.total {
                total.inc(1);
            }
        });
    }

    fn summary(&self, _: &Summary) {
        // The summary line is PlainProgress's, above the bars: the bars go.
        self.with_bars(|bars| {
            for group in std::mem::take(&mut bars.groups).into_values() {
                group.bar.finish_and_clear();
                self.multi.remove(&group.bar);
            }
            if let Some(total) = bars.total.take() {
                total.finish_and_clear();
                self.multi.remove(&total);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::sim_clock::SimClock;

    fn hidden() -> BarProgress {
        BarProgress::with_target(
            ProgressDrawTarget::hidden(),
            Arc::new(SimClock::new(1_800_000_000.0)),
        )
    }

    fn line(p: &BarProgress, group: &str) -> String {
        p.with_bars(|bars| match bars.groups.get(group) {
            Some(g) => g.bar.message(),
            None => panic!("no line for {group}"),
        })
    }

    fn total(p: &BarProgress) -> ProgressBar {
        p.with_bars(|bars| bars.total.clone().expect("a total bar"))
    }

    #[test]
    fn one_line_per_group_shows_counts_and_the_latest_poll() {
        let p = hidden();
        p.planned(3);
        p.started("ecs/service/mod-users", "update");
        p.started("ecs/service/mod-orders", "update");
        p.started("kafka/cluster/main", "create");
        p.detail(
            "ecs/service/mod-users",
            "deployment ecs-svc/1 IN_PROGRESS 1/2 running",
        );
        assert_eq!(
            line(&p, "ecs/service"),
            "2 active, 0 done · mod-users: deployment ecs-svc/1 IN_PROGRESS 1/2 running"
        );
        assert_eq!(line(&p, "kafka/cluster"), "1 active, 0 done · main: create");

        p.finished("ecs/service/mod-users", Finish::Failed, "rolled back");
        assert_eq!(
            line(&p, "ecs/service"),
            "1 active, 0 done, 1 failed · mod-orders: update"
        );
        p.finished("ecs/service/mod-orders", Finish::Succeeded, "COMPLETED");
        assert_eq!(line(&p, "ecs/service"), "0 active, 1 done, 1 failed");
        assert_eq!(total(&p).position(), 2);
        assert_eq!(total(&p).length(), Some(3));
        // The total counts the run's clock, which is a sandbox's here.
        assert_eq!(total(&p).message(), "00:00:00 simulated");
        assert_eq!(p.with_bars(|b| b.groups.len()), 2);
    }

    #[test]
    fn the_summary_clears_the_bars_for_the_next_apply() {
        let p = hidden();
        p.planned(1);
        p.started("rds/instance/qcp1-db", "modify");
        p.finished("rds/instance/qcp1-db", Finish::Skipped, "dependency failed");
        let first = total(&p);
        p.summary(&Summary {
            skipped: 1,
            elapsed_secs: 61.0,
            ..Summary::default()
        });
        assert!(first.is_finished());
        assert!(p.with_bars(|b| b.groups.is_empty() && b.total.is_none()));
        p.planned(2);
        assert_eq!(total(&p).position(), 0);
        assert_eq!(total(&p).length(), Some(2));
    }

    #[test]
    fn the_templates_parse() {
        assert!(ProgressStyle::with_template(TOTAL_TEMPLATE).is_ok());
        assert!(ProgressStyle::with_template(GROUP_TEMPLATE).is_ok());
    }
}
