//! Why a matrix could not be planned or run (anyhow stays at the command edge).
use std::path::PathBuf;

use crate::converge::ConvergeError;
use crate::plan::PlanError;

use super::restore::RestoreError;

#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error("no point of the matrix matches the --only filters")]
    NoPoints,
    /// A configuration of the matrix does not compile; the diagnostics are rendered.
    #[error("the configuration of {point} does not compile:\n{diagnostics}")]
    Compile { point: String, diagnostics: String },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", .path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Converge(#[from] ConvergeError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Restore(#[from] RestoreError),
}

impl MatrixError {
    /// An I/O error on `path`, for `map_err`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> MatrixError {
        let path = path.into();
        move |source| MatrixError::Io { path, source }
    }
}
