//! Progress as live terminal bars: one line per resource group (`ecs/service`,
//! `kafka/cluster`, ...) with its counts and latest status, and a summary bar below them.
//! 144 services would not fit one line each; a group line plus printed failures does.
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::progress::{Finish, Progress, Summary, group_of};

const TOTAL_TEMPLATE: &str = "{bar:32} {pos}/{len} resources {elapsed_precise} {msg}";
const GROUP_TEMPLATE: &str = "{spinner} {prefix:<16} {msg}";

pub struct BarProgress {
    multi: MultiProgress,
    total: ProgressBar,
    groups: Mutex<BTreeMap<String, Group>>,
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

impl BarProgress {
    /// Draws on stderr, leaving stdout to the command's results.
    pub fn stderr() -> Self {
        Self::with_target(ProgressDrawTarget::stderr())
    }

    pub fn with_target(target: ProgressDrawTarget) -> Self {
        let multi = MultiProgress::with_draw_target(target);
        let total = multi.add(ProgressBar::new(0));
        // Templates are constants; a bad one is a programming error caught by the tests, and
        // falling back to the default style keeps a release build drawing regardless.
        total.set_style(
            ProgressStyle::with_template(TOTAL_TEMPLATE)
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self {
            multi,
            total,
            groups: Mutex::new(BTreeMap::new()),
        }
    }

    fn with_group(&self, resource: &str, f: impl FnOnce(&mut Group)) {
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        let name = group_of(resource);
        let group = groups.entry(name.to_string()).or_insert_with(|| {
            let bar = self
                .multi
                .insert_before(&self.total, ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template(GROUP_TEMPLATE)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(name.to_string());
            if !self.multi.is_hidden() {
                bar.enable_steady_tick(Duration::from_millis(120));
            }
            Group {
                bar,
                active: BTreeMap::new(),
                succeeded: 0,
                failed: 0,
                skipped: 0,
                latest: None,
            }
        });
        f(group);
        group.bar.set_message(group.line());
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
        self.total.set_length(total as u64);
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

    fn finished(&self, resource: &str, finish: Finish, text: &str) {
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
        self.total.inc(1);
        if finish == Finish::Failed {
            // Above the bars, so it stays on screen after they are gone.
            let _ = self.multi.println(format!("{resource}: FAILED: {text}"));
        }
    }

    fn summary(&self, summary: &Summary) {
        let groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        for group in groups.values() {
            group.bar.finish_with_message(group.line());
        }
        self.total.finish_with_message(format!(
            "{} succeeded, {} failed, {} skipped, {} unchanged in {}",
            summary.succeeded,
            summary.failed,
            summary.skipped,
            summary.unchanged,
            summary.took()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden() -> BarProgress {
        BarProgress::with_target(ProgressDrawTarget::hidden())
    }

    fn line(p: &BarProgress, group: &str) -> String {
        let groups = p.groups.lock().unwrap();
        match groups.get(group) {
            Some(g) => g.bar.message(),
            None => panic!("no line for {group}"),
        }
    }

    #[test]
    fn one_line_per_group_shows_counts_and_the_latest_status() {
        let p = hidden();
        p.planned(3);
        p.started("ecs/service/mod-users", "update");
        p.started("ecs/service/mod-orders", "update");
        p.started("kafka/cluster/main", "create");
        p.status(
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
        assert_eq!(p.total.position(), 2);
        assert_eq!(p.total.length(), Some(3));
        assert_eq!(p.groups.lock().unwrap().len(), 2);
    }

    #[test]
    fn the_summary_finishes_every_bar() {
        let p = hidden();
        p.planned(1);
        p.started("rds/instance/qcp1-db", "modify");
        p.finished("rds/instance/qcp1-db", Finish::Skipped, "dependency failed");
        p.summary(&Summary {
            skipped: 1,
            elapsed_secs: 61.0,
            ..Summary::default()
        });
        assert!(p.total.is_finished());
        assert_eq!(
            p.total.message(),
            "0 succeeded, 0 failed, 1 skipped, 0 unchanged in 00:01:01"
        );
        assert!(
            p.groups
                .lock()
                .unwrap()
                .values()
                .all(|g| g.bar.is_finished())
        );
        assert_eq!(line(&p, "rds/instance"), "0 active, 0 done, 1 skipped");
    }

    #[test]
    fn the_templates_parse() {
        assert!(ProgressStyle::with_template(TOTAL_TEMPLATE).is_ok());
        assert!(ProgressStyle::with_template(GROUP_TEMPLATE).is_ok());
    }
}
