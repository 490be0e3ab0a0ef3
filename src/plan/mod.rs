//! Planning: a pure diff of the desired state against observed live state, as actions with
//! the fields that change, why, in what order, and how long they should take.
pub mod action;
pub mod destroy;
pub mod diff;
pub mod estimate;
pub mod render;

pub use action::{Action, ActionKind, Change, Conflict, KNOWN_AFTER_APPLY, key};
pub use destroy::destroy_plan;
pub use diff::{DiffOptions, Plan, diff};
pub use estimate::Estimates;

#[cfg(test)]
pub(crate) mod tests;
