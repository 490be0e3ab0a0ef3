//! A plan saved by `plan --out`, executed by `apply FILE`: the plan, and what it was made
//! for (the env file, its overrides, a hash of the desired state).
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::diff::Plan;
use crate::model::DesiredState;

/// The saved-plan format version (`envctl_saved_plan`).
pub const SAVED_PLAN_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedPlan {
    /// Marks the file kind and its version.
    pub envctl_saved_plan: u32,
    pub env_path: String,
    pub set: Vec<String>,
    pub adopt: bool,
    /// Hash of the desired state the plan was made for: a changed spec invalidates it.
    pub desired_hash: String,
    pub plan: Plan,
}

/// A hash of the desired state: equal for equal specs (after templates and overrides).
pub fn desired_hash(desired: &DesiredState) -> String {
    hex::encode(&Sha256::digest(serde_json::to_vec(desired).unwrap_or_default())[..16])
}
