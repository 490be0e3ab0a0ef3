//! A plan saved by `plan --out`, executed by `apply FILE`: the plan, and what it was made
//! for (the env file, its overrides, a hash of the desired state).
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::diff::Plan;
use crate::model::DesiredState;

/// The saved-plan format version (`envctl_saved_plan`). 2: operations carry their
/// requests, with placeholders for what AWS hands out during the run.
pub const SAVED_PLAN_VERSION: u32 = 2;

/// Why a file marked as a saved plan cannot be applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SavedPlanError {
    #[error(
        "{path} is a saved plan of format {found}; this envctl applies format {SAVED_PLAN_VERSION} only: plan again (`envctl plan ENV --out FILE`)"
    )]
    Version { path: String, found: String },
    #[error("{path} is marked as a saved plan but cannot be read ({reason}): plan again")]
    Unreadable { path: String, reason: String },
}

impl SavedPlan {
    /// The saved plan in `bytes` (read from `path`): `None` when it is not marked as one (an
    /// env file), an error when it is marked but of another format or damaged.
    pub fn read(path: &str, bytes: &[u8]) -> Result<Option<SavedPlan>, SavedPlanError> {
        if bytes.first() != Some(&b'{') {
            return Ok(None);
        }
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
            return Ok(None);
        };
        let Some(version) = value.get("envctl_saved_plan") else {
            return Ok(None);
        };
        if version.as_u64() != Some(u64::from(SAVED_PLAN_VERSION)) {
            return Err(SavedPlanError::Version {
                path: path.to_string(),
                found: version.to_string(),
            });
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| SavedPlanError::Unreadable {
                path: path.to_string(),
                reason: e.to_string(),
            })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedPlan {
    /// Marks the file kind and its version.
    pub envctl_saved_plan: u32,
    pub env_path: String,
    pub set: Vec<String>,
    pub adopt: bool,
    /// `--copy`: the copy of the env the plan is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<crate::spec::copy::CopyName>,
    /// Hash of the desired state the plan was made for: a changed spec invalidates it.
    pub desired_hash: String,
    pub plan: Plan,
}

/// A hash of the desired state: equal for equal specs (after templates and overrides).
pub fn desired_hash(desired: &DesiredState) -> String {
    hex::encode(&Sha256::digest(serde_json::to_vec(desired).unwrap_or_default())[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_plan_of_the_old_format_is_a_clear_error_and_an_env_file_is_none() {
        let old = br#"{"envctl_saved_plan": 1, "env_path": "envs/pcp1.yaml", "set": [], "adopt": false, "desired_hash": "x", "plan": {}}"#;
        let err = SavedPlan::read("old.plan.json", old);
        assert_eq!(
            err,
            Err(SavedPlanError::Version {
                path: "old.plan.json".into(),
                found: "1".into()
            })
        );
        let text = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("plan again"), "{text}");
        assert_eq!(SavedPlan::read("envs/pcp1.yaml", b"env: pcp1\n"), Ok(None));
        let damaged = br#"{"envctl_saved_plan": 2, "plan": 3}"#;
        assert!(matches!(
            SavedPlan::read("x.json", damaged),
            Err(SavedPlanError::Unreadable { .. })
        ));
    }
}
