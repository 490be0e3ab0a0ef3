//! `matrix run --resume RUN_ID`: which earlier run may be continued.
//!
//! A resume writes into an existing results directory, so the id is checked before anything
//! is created: it must be an id envctl could have made (no path), name a run that exists,
//! and belong to the same playbook, byte for byte; otherwise points of two different
//! comparisons would end up side by side in one report.
use std::path::{Path, PathBuf};

use super::{RunRecord, read_json};

/// The longest run id accepted (envctl's own are about 60 characters).
const MAX_RUN_ID_LEN: usize = 128;

#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(
        "`{0}` is not a run id: use the id `matrix run` printed (letters, digits, `-`, `_` and `.`, starting with a letter or digit), not a path"
    )]
    Shape(String),
    #[error("no run `{id}` in {}: nothing to resume (runs are directories with a run.json)", .root.display())]
    NotFound { id: String, root: PathBuf },
    #[error(transparent)]
    Unreadable(#[from] super::ResultsError),
    #[error(
        "run `{id}` is of playbook {previous} (content {previous_hash}), not of {current} (content {current_hash}): resume it with the playbook it ran, or start a new run"
    )]
    OtherPlaybook {
        id: String,
        previous: String,
        previous_hash: String,
        current: String,
        current_hash: String,
    },
}

/// Whether `id` has the shape of a run id: a single path component that cannot climb.
pub fn is_run_id(id: &str) -> bool {
    let mut chars = id.chars();
    id.len() <= MAX_RUN_ID_LEN
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The run to resume, once `id` is a run id, `results_root/id/run.json` exists and was
/// written for a playbook with `playbook_hash` (see [`super::content_hash`]).
pub fn check(
    results_root: &Path,
    id: &str,
    playbook: &Path,
    playbook_hash: &str,
) -> Result<RunRecord, ResumeError> {
    if !is_run_id(id) {
        return Err(ResumeError::Shape(id.to_string()));
    }
    let run_file = results_root.join(id).join("run.json");
    if !std::fs::metadata(&run_file).is_ok_and(|m| m.is_file()) {
        return Err(ResumeError::NotFound {
            id: id.to_string(),
            root: results_root.to_path_buf(),
        });
    }
    let run: RunRecord = read_json(&run_file)?;
    if run.playbook.content_hash != playbook_hash {
        return Err(ResumeError::OtherPlaybook {
            id: id.to_string(),
            previous: run.playbook.path.clone(),
            previous_hash: run.playbook.content_hash.clone(),
            current: playbook.display().to_string(),
            current_hash: playbook_hash.to_string(),
        });
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_single_names() {
        for ok in ["pb-20261130220000-42", "a", "x_y.z"] {
            assert!(is_run_id(ok), "{ok}");
        }
        for bad in [
            "",
            "..",
            "../other",
            "/etc",
            "a/b",
            ".hidden",
            "-flag",
            "a b",
            &"x".repeat(129),
        ] {
            assert!(!is_run_id(bad), "{bad}");
        }
    }
}
