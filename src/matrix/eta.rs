//! How long a matrix run has left, from its plan: the plan's estimates of the switches still
//! to make (its transitions between the remaining points, in run order) and of the teardown,
//! plus the remaining workloads as measured at the points done (every point runs the same
//! steps). Not extrapolated from whole points: the first one builds the environment, and
//! extrapolating it made the estimate 2-3.4 times too high.
use super::order::EMPTY;
use super::plan::{Ending, MatrixPlan};
use crate::plan::estimate::human;
use crate::spec::playbook::TeardownPolicy;

/// What is left, and where each figure comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Left {
    /// The plan's estimate of the remaining switches.
    pub switches_s: f64,
    /// The plan's estimate of the teardown, when the run ends with one.
    pub teardown_s: Option<f64>,
    /// Points whose workload is still to run.
    pub workloads: usize,
    /// The mean workload of the points done (steps and metrics padding); `None` before the
    /// first one.
    pub workload_s: Option<f64>,
}

impl Left {
    /// What is left before the point at `next` (in run order) starts; `runs(i)` says whether
    /// the point at position `i` will run (a resumed run skips those that passed before);
    /// `measured` holds the workloads of the points done.
    pub fn of(
        plan: &MatrixPlan,
        next: usize,
        runs: impl Fn(usize) -> bool,
        measured: &[f64],
    ) -> Left {
        let config = |position: usize| {
            plan.ordering
                .order
                .get(position)
                .map(|&i| plan.costs.index(&plan.points[i].config_key))
        };
        let mut at = next.checked_sub(1).and_then(config).unwrap_or(EMPTY);
        let mut switches_s = 0.0;
        let mut workloads = 0;
        for position in next..plan.ordering.order.len() {
            let Some(to) = config(position).filter(|_| runs(position)) else {
                continue;
            };
            switches_s += plan.costs.step(at, to);
            workloads += 1;
            at = to;
        }
        let teardown_s = match plan.ending {
            Ending::Teardown(TeardownPolicy::Never) | Ending::Restore => None,
            Ending::Teardown(_) => plan.costs.destroy.get(at).copied(),
        };
        Left {
            switches_s,
            teardown_s,
            workloads,
            workload_s: (!measured.is_empty())
                .then(|| measured.iter().sum::<f64>() / measured.len() as f64),
        }
    }

    /// `about 1h 07m left: 2m 40s of switches and 13m 45s of teardown as the plan estimates,
    /// 3 workloads of 16m 30s as measured`; before a workload is measured, the plan's part
    /// and how many workloads come on top. `simulated` says the times are the sandbox's.
    pub fn render(&self, simulated: bool) -> String {
        let clock = if simulated { " (simulated)" } else { "" };
        let mut plan = format!("{} of switches", human(self.switches_s));
        if let Some(t) = self.teardown_s {
            plan.push_str(&format!(" and {} of teardown", human(t)));
        }
        let workloads = crate::plan::estimate::plural(self.workloads, "workload", "workloads");
        match self.workload_s {
            Some(w) => {
                let total =
                    self.switches_s + self.teardown_s.unwrap_or(0.0) + w * self.workloads as f64;
                format!(
                    "about {} left{clock}: {plan} as the plan estimates, {workloads} of {} as \
                     measured",
                    human(total),
                    human(w)
                )
            }
            None => format!("left{clock}: {plan} as the plan estimates, plus {workloads}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Loader;

    fn plan(dir: &std::path::Path) -> MatrixPlan {
        let mut loader = Loader::with_root(Some(dir.to_path_buf()));
        let loaded = loader
            .load_playbook(&dir.join("playbooks/kafka-kraft-vs-zookeeper.yaml"))
            .expect("the shipped playbook loads");
        super::super::plan_matrix(&loaded, &[]).expect("a plan")
    }

    #[test]
    fn what_is_left_comes_from_the_plan_and_the_measured_workloads() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let plan = plan(root);
        let costs = &plan.costs;
        let config =
            |position: usize| costs.index(&plan.points[plan.ordering.order[position]].config_key);
        let (first, last) = (config(0), config(3));
        assert_ne!(first, last, "the order switches once");
        // Before the first point: every switch and the teardown, nothing measured.
        let start = Left::of(&plan, 0, |_| true, &[]);
        assert_eq!(start.switches_s, plan.ordering.envctl_s);
        assert_eq!(start.teardown_s, Some(costs.destroy[last]));
        assert_eq!(start.workloads, 4);
        assert_eq!(start.workload_s, None);
        assert!(start.render(true).starts_with("left (simulated): "));
        assert!(
            start
                .render(true)
                .ends_with("as the plan estimates, plus 4 workloads")
        );
        // Before the third: one switch (the second and fourth points change nothing), and two
        // workloads of the mean measured so far.
        let third = Left::of(&plan, 2, |_| true, &[1000.0, 1200.0]);
        assert_eq!(third.switches_s, costs.between[first][last]);
        assert_eq!(third.workloads, 2);
        assert_eq!(third.workload_s, Some(1100.0));
        let total = third.switches_s + costs.destroy[last] + 2200.0;
        assert!(
            third
                .render(false)
                .starts_with(&format!("about {} left: ", human(total))),
            "{}",
            third.render(false)
        );
        assert!(
            third
                .render(false)
                .ends_with("2 workloads of 18m 20s as measured")
        );
        // A point that will not run (passed in an earlier run) costs nothing.
        let resumed = Left::of(&plan, 2, |p| p != 2, &[1000.0]);
        assert_eq!(resumed.workloads, 1);
        assert_eq!(resumed.switches_s, costs.between[first][last]);
    }
}
