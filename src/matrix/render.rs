//! The `matrix plan` text: points in run order, transitions with estimates, and the totals.
use super::order::Method;
use super::plan::{Ending, MatrixPlan};
use crate::spec::playbook::LoadedPlaybook;

impl MatrixPlan {
    /// The `matrix plan` text: points in order, transitions with estimates, and the three
    /// totals.
    pub fn render(&self, loaded: &LoadedPlaybook) -> String {
        use crate::plan::estimate::human;
        use std::fmt::Write;
        let mut out = String::new();
        let p = &loaded.playbook;
        let _ = writeln!(
            out,
            "Matrix {} over env {}: {}, {}, {}.",
            p.name.value,
            loaded.env.spec.env.value,
            crate::plan::estimate::plural(p.matrix.len(), "axis", "axes"),
            crate::plan::estimate::plural(self.points.len(), "point", "points"),
            crate::plan::estimate::plural(
                self.configs.len(),
                "environment configuration",
                "environment configurations"
            )
        );
        let groups = crate::plan::estimate::plural(self.ordering.groups, "group", "groups");
        let method = match &self.ordering.method {
            Method::Exact => format!("exact search over {groups}"),
            Method::Heuristic { lower_bound_s } => format!(
                "heuristic over {groups}; lower bound {}",
                human(*lower_bound_s)
            ),
        };
        let _ = writeln!(out, "\nOrder ({method}):");
        let mut at = super::order::EMPTY;
        let index = |key: &str| self.costs.keys.iter().position(|k| k == key).unwrap_or(0);
        for (n, &i) in self.ordering.order.iter().enumerate() {
            let point = &self.points[i];
            let c = index(&point.config_key);
            let (secs, what) = if at == c {
                (0.0, "no change".to_string())
            } else {
                let secs = if at == super::order::EMPTY {
                    self.costs.from_empty[c]
                } else {
                    self.costs.between[at][c]
                };
                (
                    secs,
                    self.costs
                        .summaries
                        .get(&(at, c))
                        .cloned()
                        .unwrap_or_default(),
                )
            };
            let _ = writeln!(
                out,
                "  {:>2}. {:<48} {:>8}  {what}",
                n + 1,
                point.id,
                if secs > 0.0 {
                    format!("~{}", human(secs))
                } else {
                    "-".into()
                }
            );
            at = c;
        }
        let _ = writeln!(out, "\nEstimated time spent changing the environment:");
        let _ = writeln!(
            out,
            "  envctl order        {}",
            human(self.ordering.envctl_s)
        );
        let _ = writeln!(
            out,
            "  declared order      {}",
            human(self.ordering.declared_s)
        );
        let _ = writeln!(
            out,
            "  rebuild per point   {}",
            human(self.ordering.rebuild_s)
        );
        let saved = self.ordering.declared_s - self.ordering.envctl_s;
        if saved > 0.5 {
            let _ = writeln!(
                out,
                "  saving              {} against the declared order",
                human(saved)
            );
        }
        let start = if self.from_live {
            "the first point starts from the environment as it exists"
        } else {
            "the first point starts from an empty account"
        };
        let end = match &self.ending {
            Ending::Teardown(policy) => format!("teardown: {}", policy.as_str()),
            Ending::Restore => {
                "then restore: the environment is put back to what it ran before, not deleted"
                    .to_string()
            }
        };
        let _ = writeln!(
            out,
            "(plus the workload itself at each point; {start}; {end})"
        );
        out
    }
}
