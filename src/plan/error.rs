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
    /// Resources with the environment's names that envctl does not own. Applying around them
    /// would put owned resources inside or on top of someone else's (services in a foreign
    /// cluster, a replica of a foreign DB, DB_HOST pointing at it), so nothing runs.
    #[error(
        "{count} resource(s) with this environment's names exist but are not envctl's (no envctl:env tag); nothing was changed:\n{list}\nEither rename them in the env file (e.g. `cluster.name`, the service key, `rds.writer.identifier`, the MSK cluster `name`), or pass --adopt to take them over on purpose (they are then tagged as this environment's, managed, and deleted by `destroy`)",
        count = .0.len(),
        list = .0.iter().map(|c| format!("  {}: {}", c.resource, c.message)).collect::<Vec<_>>().join("\n")
    )]
    Conflicts(Vec<super::action::Conflict>),
    /// Changes to owned resources that AWS would refuse: said before any call rather than
    /// found half-way through an apply.
    #[error(
        "{count} change(s) would be refused by AWS; nothing was changed:\n{list}\nChange these values in the env file",
        count = .0.len(),
        list = .0.iter().map(|c| format!("  {}: {}", c.resource, c.message)).collect::<Vec<_>>().join("\n")
    )]
    Refused(Vec<super::action::Conflict>),
}
