//! The plan's vocabulary: one action per resource, with the fields that change and why.
use serde::{Deserialize, Serialize};

/// What happens to a resource. Ordered from harmless to disruptive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    NoOp,
    /// Changed without restarting anything (a task count, a parameter, a new configuration
    /// revision).
    UpdateInPlace,
    /// Changed by replacing tasks or brokers one at a time (a new task-definition revision
    /// and deployment, an MSK broker type change).
    RollingUpdate,
    Create,
    /// Deleted and created again: the change cannot be made in place.
    Replace,
    Delete,
}

impl ActionKind {
    pub fn verb(self) -> &'static str {
        match self {
            ActionKind::NoOp => "no change",
            ActionKind::UpdateInPlace => "update in place",
            ActionKind::RollingUpdate => "rolling update",
            ActionKind::Create => "create",
            ActionKind::Replace => "replace",
            ActionKind::Delete => "delete",
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            ActionKind::NoOp => " ",
            ActionKind::UpdateInPlace => "~",
            ActionKind::RollingUpdate => "~",
            ActionKind::Create => "+",
            ActionKind::Replace => "-/+",
            ActionKind::Delete => "-",
        }
    }
}

/// The value shown for something an apply will only learn from AWS.
pub const KNOWN_AFTER_APPLY: &str = "(known after apply)";

/// One field that changes; `None` means absent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Change {
    pub field: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

impl Change {
    pub fn new(field: impl Into<String>, old: Option<String>, new: Option<String>) -> Self {
        Change {
            field: field.into(),
            old,
            new,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Stable key: `ecs/service/mod-users`, `kafka/cluster/main`, `rds/instance/qcp1-db`.
    pub resource: String,
    pub kind: ActionKind,
    pub changes: Vec<Change>,
    /// Why the action has this kind (e.g. why a replacement is needed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// Estimated seconds for this action alone.
    pub estimate_secs: f64,
    /// Resources whose actions must finish first.
    pub depends_on: Vec<String>,
}

/// A resource with one of the environment's names that envctl does not own: never touched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    pub resource: String,
    pub message: String,
}

/// Resource keys, in one place so every module spells them alike.
pub mod key {
    pub fn cluster(name: &str) -> String {
        format!("ecs/cluster/{name}")
    }
    pub fn service(name: &str) -> String {
        format!("ecs/service/{name}")
    }
    pub fn kafka_cluster(key: &str) -> String {
        format!("kafka/cluster/{key}")
    }
    pub fn kafka_configuration(key: &str) -> String {
        format!("kafka/configuration/{key}")
    }
    pub fn db_instance(id: &str) -> String {
        format!("rds/instance/{id}")
    }
    pub fn db_parameter_group(name: &str) -> String {
        format!("rds/parameter-group/{name}")
    }

    /// Splits a key into (kind, name): `ecs/service/x` -> (`ecs/service`, `x`).
    pub fn split(key: &str) -> (&str, &str) {
        match key.match_indices('/').nth(1) {
            Some((i, _)) => (&key[..i], &key[i + 1..]),
            None => (key, ""),
        }
    }
}
