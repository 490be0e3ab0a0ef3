//! The plan's vocabulary: one action per resource, with the fields that change and why.
use serde::{Deserialize, Serialize};

use super::id::ResourceId;
use super::op::Op;

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

pub use super::placeholder::KNOWN_AFTER_APPLY;

/// One field that changes; `None` means absent. Serialized (plan `--json`, saved plans,
/// the fingerprint) with secret values masked ([`Change::shown`]); the executor never reads
/// values from here.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
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

    /// The old and new values as envctl shows and writes them: a secret-named field's value
    /// masked whole, secrets inside any other value (a URL's password, a `-D...password=`)
    /// masked in place (`***` and a short hash, so a change still shows as one).
    pub fn shown(&self) -> (Option<String>, Option<String>) {
        let show = |v: &Option<String>| v.as_deref().map(|v| crate::redact::named(&self.field, v));
        (show(&self.old), show(&self.new))
    }
}

impl Serialize for Change {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (old, new) = self.shown();
        let mut out = serializer.serialize_struct("Change", 3)?;
        out.serialize_field("field", &self.field)?;
        out.serialize_field("old", &old)?;
        out.serialize_field("new", &new)?;
        out.end()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// The resource; its key (`ecs/service/mod-users`) in JSON.
    #[serde(rename = "resource")]
    pub id: ResourceId,
    /// The change class, for people: what `plan` prints.
    pub kind: ActionKind,
    pub changes: Vec<Change>,
    /// Why the action has this kind (e.g. why a replacement is needed); one text in JSON.
    #[serde(
        rename = "reason",
        with = "reasons_text",
        skip_serializing_if = "Vec::is_empty",
        default
    )]
    pub reasons: Vec<String>,
    /// Estimated seconds for this action alone.
    pub estimate_secs: f64,
    /// Resources whose actions must finish first.
    #[serde(rename = "depends_on")]
    pub deps: Vec<ResourceId>,
    /// What apply executes.
    #[serde(default)]
    pub op: Op,
}

impl Action {
    pub fn new(id: ResourceId, kind: ActionKind, op: Op) -> Action {
        Action {
            id,
            kind,
            changes: Vec::new(),
            reasons: Vec::new(),
            estimate_secs: 0.0,
            deps: Vec::new(),
            op,
        }
    }

    pub fn changes(mut self, changes: Vec<Change>) -> Action {
        self.changes = changes;
        self
    }

    pub fn reason(mut self, reason: impl Into<String>) -> Action {
        self.reasons.push(reason.into());
        self
    }

    pub fn reasons(mut self, reasons: Vec<String>) -> Action {
        self.reasons = reasons;
        self
    }

    /// Seconds this action takes; a no-op takes none.
    pub fn estimate(mut self, secs: f64) -> Action {
        self.estimate_secs = if self.kind == ActionKind::NoOp {
            0.0
        } else {
            secs
        };
        self
    }

    pub fn deps(mut self, deps: Vec<ResourceId>) -> Action {
        self.deps = deps;
        self
    }

    /// The reasons as one line, as `plan` prints them.
    pub fn reason_text(&self) -> Option<String> {
        (!self.reasons.is_empty()).then(|| self.reasons.join("; "))
    }
}

/// `reasons` is one `reason` string in plan JSON (schema version 1).
mod reasons_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(reasons: &[String], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&reasons.join("; "))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        Ok(text
            .filter(|t| !t.is_empty())
            .map(|t| t.split("; ").map(str::to_string).collect())
            .unwrap_or_default())
    }
}

/// A resource the plan will not touch, and why: one with the environment's name that
/// envctl does not own, or a change AWS would refuse (said before any call, not mid-apply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    pub resource: ResourceId,
    pub message: String,
    #[serde(default, skip_serializing_if = "ConflictKind::is_not_owned")]
    pub kind: ConflictKind,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConflictKind {
    /// Exists with the env's name, without the env's tag: never changed, used or deleted.
    #[default]
    NotOwned,
    /// Ours, but the change would be refused by AWS (e.g. RDS storage growth under 10%).
    Refused,
}

impl ConflictKind {
    pub fn is_not_owned(&self) -> bool {
        *self == ConflictKind::NotOwned
    }
}
