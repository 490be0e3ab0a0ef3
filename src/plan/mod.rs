//! Planning: a pure diff of the desired state against observed live state, as actions with
//! typed operations (what apply executes), the fields that change and why, in what order,
//! and how long they should take.
pub mod action;
pub mod critical_path;
pub mod destroy;
pub mod diff;
pub mod error;
pub mod estimate;
pub mod gc;
pub mod id;
pub mod op;
pub mod placeholder;
pub mod render;
pub mod saved;

pub use action::{Action, ActionKind, Change, Conflict, ConflictKind, KNOWN_AFTER_APPLY};
pub use critical_path::critical_path;
pub use destroy::destroy_plan;
pub use diff::{DiffOptions, HEALTH_FIELD, Plan, diff};
pub use error::PlanError;
pub use estimate::Estimates;
pub use id::ResourceId;
pub use op::{ClusterUpdate, Create, Delete, Op, ServiceRevision};
pub use placeholder::{Placeholder, Planned};
pub use saved::{SavedPlan, desired_hash};

#[cfg(test)]
mod data_tests;
#[cfg(test)]
pub(crate) mod tests;
