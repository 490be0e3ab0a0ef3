//! The matrix as planned: a playbook expanded into points, every configuration compiled,
//! the points ordered by what switching between them costs. `matrix plan` prints it and
//! `matrix run` executes it ([`super::runner`]).
use std::collections::BTreeMap;

use super::error::MatrixError;
use super::expand::{Point, expand};
use super::order::{Costs, Ordering as PointOrder, order};
use crate::compile::compile_env_with;
use crate::model::DesiredState;
use crate::plan::Estimates;
use crate::spec::Loader;
use crate::spec::playbook::{LoadedPlaybook, TeardownPolicy};

/// The expanded, ordered matrix with its estimates: what `matrix plan` prints and `matrix
/// run` executes.
pub struct MatrixPlan {
    pub points: Vec<Point>,
    pub ordering: PointOrder,
    pub costs: Costs,
    /// Desired state per configuration key.
    pub configs: BTreeMap<String, DesiredState>,
    /// Whether the first point starts from the environment as it exists (observed), not
    /// from an empty account.
    pub from_live: bool,
    /// How the run ends, as the pre-run summary says it: the teardown policy, or the
    /// restore of an environment that is put back.
    pub ending: Ending,
}

/// How a matrix run leaves the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Teardown(TeardownPolicy),
    /// `--restore` (or an adopted environment): put back to what it ran before, not deleted.
    Restore,
}

/// Expands, compiles every configuration and orders the points. `only` keeps the points
/// with these (axis, variant) pairs.
pub fn plan_matrix(
    loaded: &LoadedPlaybook,
    only: &[(String, String)],
) -> Result<MatrixPlan, MatrixError> {
    plan_matrix_from(loaded, only, None)
}

/// As [`plan_matrix`], the first point starting from `live` when given (what the account
/// runs now) instead of an empty account.
pub fn plan_matrix_from(
    loaded: &LoadedPlaybook,
    only: &[(String, String)],
    live: Option<&crate::model::live::LiveState>,
) -> Result<MatrixPlan, MatrixError> {
    let mut points = expand(&loaded.playbook);
    points.retain(|p| only.iter().all(|(a, v)| p.axis(a).is_none_or(|x| x == v)));
    if points.is_empty() {
        return Err(MatrixError::NoPoints);
    }
    let mut configs: Vec<(String, DesiredState)> = Vec::new();
    for p in &points {
        if configs.iter().any(|(k, _)| k == &p.config_key) {
            continue;
        }
        let mut loader =
            Loader::with_root(Some(loaded.env.root.clone())).with_copy(loaded.env.copy.clone());
        let Some(compiled) = compile_env_with(&mut loader, &loaded.env.path, &p.sets) else {
            // Its errors, not every warning before them.
            let diagnostics = std::mem::take(&mut loader.diagnostics).sorted();
            return Err(MatrixError::Compile {
                point: p.id.clone(),
                diagnostics: diagnostics
                    .render_errors_counting_warnings(&loader.sources, &loaded.env.path),
            });
        };
        configs.push((p.config_key.clone(), compiled.desired));
    }
    let costs = Costs::estimate(&configs, &Estimates::default());
    let ordering = order(&points, ramp_axis(loaded), &costs, seed(loaded));
    let mut plan = MatrixPlan {
        points,
        ordering,
        costs,
        configs: configs.into_iter().collect(),
        from_live: false,
        ending: Ending::Teardown(loaded.playbook.teardown.value),
    };
    if let Some(live) = live {
        plan.start_from(loaded, live);
    }
    Ok(plan)
}

fn ramp_axis(loaded: &LoadedPlaybook) -> Option<&str> {
    loaded.playbook.ramp.as_ref().map(|r| r.value.as_str())
}

fn seed(loaded: &LoadedPlaybook) -> Option<u64> {
    loaded
        .playbook
        .shuffle
        .then(|| super::order::hash(&loaded.playbook.name.value))
}

impl MatrixPlan {
    /// The first point starts from `live` (what the account runs now), not an empty
    /// account: its cost is the plan from there, and the order is chosen again.
    pub fn start_from(&mut self, loaded: &LoadedPlaybook, live: &crate::model::live::LiveState) {
        let configs: Vec<(String, DesiredState)> = self
            .costs
            .keys
            .iter()
            .filter_map(|k| self.configs.get(k).map(|d| (k.clone(), d.clone())))
            .collect();
        self.costs.start_from(&configs, live, &Estimates::default());
        self.ordering = order(&self.points, ramp_axis(loaded), &self.costs, seed(loaded));
        self.from_live = true;
    }
}
