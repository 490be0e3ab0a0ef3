//! What happened to each resource: explicit outcomes, rendered as the result table.
use std::fmt::Write;

use serde::Serialize;

use crate::plan::ActionKind;
use crate::plan::estimate::human;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// The change was made and AWS reports it done.
    Applied {
        detail: String,
    },
    /// Nothing needed doing after all (e.g. an identical revision already existed).
    Unchanged {
        detail: String,
    },
    Failed {
        reason: String,
    },
    /// Not attempted because a resource it depends on failed or was skipped.
    Skipped {
        because: String,
    },
    /// Not attempted or not awaited because the run was interrupted.
    Cancelled,
}

impl Outcome {
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Applied { .. } | Outcome::Unchanged { .. })
    }

    /// How progress displays it.
    pub fn finish(&self) -> crate::exec::progress::Finish {
        use crate::exec::progress::Finish;
        match self {
            Outcome::Applied { .. } | Outcome::Unchanged { .. } => Finish::Succeeded,
            Outcome::Failed { .. } => Finish::Failed,
            Outcome::Skipped { .. } | Outcome::Cancelled => Finish::Skipped,
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Applied { .. } => "applied",
            Outcome::Unchanged { .. } => "unchanged",
            Outcome::Failed { .. } => "FAILED",
            Outcome::Skipped { .. } => "skipped",
            Outcome::Cancelled => "cancelled",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Outcome::Applied { detail } | Outcome::Unchanged { detail } => detail,
            Outcome::Failed { reason } => reason,
            Outcome::Skipped { because } => because,
            Outcome::Cancelled => "interrupted",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ResourceResult {
    pub resource: String,
    pub action: ActionKind,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Simulated or real seconds from the start of the run.
    pub started_secs: f64,
    pub finished_secs: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ApplyReport {
    pub results: Vec<ResourceResult>,
    pub elapsed_secs: f64,
    /// Whether `elapsed_secs` (and each result's times) are a sandbox's simulated seconds.
    pub simulated: bool,
    pub mutating_calls: u64,
    pub interrupted: bool,
}

impl ApplyReport {
    pub fn succeeded(&self) -> bool {
        !self.interrupted && self.results.iter().all(|r| r.outcome.is_success())
    }

    pub fn failures(&self) -> impl Iterator<Item = &ResourceResult> {
        self.results.iter().filter(|r| !r.outcome.is_success())
    }

    /// The per-resource table printed at the end of an apply or destroy.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let width = self
            .results
            .iter()
            .map(|r| r.resource.len())
            .max()
            .unwrap_or(8)
            .max(8);
        // A sandbox's durations are simulated: the column says so once.
        let took = if self.simulated {
            "took (simulated)"
        } else {
            "took"
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:<15}  {:<9}  {took:>8}  detail",
            "resource", "action", "result"
        );
        for r in &self.results {
            let _ = writeln!(
                out,
                "{:<width$}  {:<15}  {:<9}  {:>8}  {}",
                r.resource,
                r.action.verb(),
                r.outcome.label(),
                human(r.finished_secs - r.started_secs),
                r.outcome.detail()
            );
        }
        let ok = self
            .results
            .iter()
            .filter(|r| r.outcome.is_success())
            .count();
        let _ = writeln!(
            out,
            "\n{ok} of {} resources done in {}{}, {} mutating calls{}.",
            self.results.len(),
            human(self.elapsed_secs),
            if self.simulated { " (simulated)" } else { "" },
            self.mutating_calls,
            if self.interrupted {
                "; interrupted: run apply again to converge"
            } else {
                ""
            }
        );
        out
    }
}
