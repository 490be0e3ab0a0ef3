//! What can be wrong with a plan itself (as opposed to the environment it describes).
use super::id::ResourceId;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("`{0}` is not a resource key (expected e.g. `ecs/service/NAME`)")]
    BadResourceId(String),
    /// Two actions on one resource: the executor would run only one of them.
    #[error("the plan has two actions on {0}; this is a bug in envctl's planner")]
    DuplicateId(ResourceId),
    #[error("{action} depends on {missing}, which the plan does not contain")]
    UnknownDependency {
        action: ResourceId,
        missing: ResourceId,
    },
}
