//! Values of a planned request that AWS hands out only during the run: a task-definition
//! revision registered earlier in the same apply, the MSK configuration revision written
//! just before its cluster, the ARN of the writer's master secret. The plan says which one
//! it waits for ([`Placeholder`]); the executor fills it right before the send, and the
//! conformance check (`apply::conform`) lets exactly those positions differ from the plan.
//!
//! Endpoints inside task definitions (`${kafka.tenant.host}`) are placeholders of their own
//! kind already: `spec::deferred::Deferred`, resolved from the run's outputs.
use serde::{Deserialize, Serialize};

/// The value shown for something an apply will only learn from AWS.
pub const KNOWN_AFTER_APPLY: &str = "(known after apply)";

/// A value the plan knows, or the name of the value AWS will hand out during the run.
///
/// In `plan --json` and saved plans a known value is the value itself and an unknown one
/// is `{"known_after_apply": {"kind": ...}}`; text output shows it as
/// [`KNOWN_AFTER_APPLY`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Planned<T> {
    // First, so that `{"known_after_apply": ...}` never reads as a `T` with optional fields.
    AfterApply { known_after_apply: Placeholder },
    Known(T),
}

impl<T> Planned<T> {
    pub fn after_apply(placeholder: Placeholder) -> Self {
        Planned::AfterApply {
            known_after_apply: placeholder,
        }
    }

    /// The known value, if the plan has it.
    pub fn known(&self) -> Option<&T> {
        match self {
            Planned::Known(v) => Some(v),
            Planned::AfterApply { .. } => None,
        }
    }

    /// What waits to be filled, if anything.
    pub fn placeholder(&self) -> Option<&Placeholder> {
        match self {
            Planned::Known(_) => None,
            Planned::AfterApply { known_after_apply } => Some(known_after_apply),
        }
    }
}

impl<T: std::fmt::Display> Planned<T> {
    /// The value as `plan` prints it.
    pub fn shown(&self) -> String {
        match self {
            Planned::Known(v) => v.to_string(),
            Planned::AfterApply { .. } => KNOWN_AFTER_APPLY.to_string(),
        }
    }
}

/// Which value a placeholder stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Placeholder {
    /// The ARN of the revision of `family` registered (or an identical one reused) during
    /// the run: its content may hold endpoints known only then.
    TaskDefinitionRevision { family: String },
    /// The ARN and revision of the MSK configuration of Kafka cluster `key`, written
    /// (created or updated) earlier in the run.
    KafkaConfiguration { key: String },
    /// The ARN of the writer's master secret `name`, created (or this env's found) right
    /// before the writer.
    MasterSecret { name: String },
}

/// An MSK configuration revision, as a cluster names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigurationRevision {
    pub arn: String,
    pub revision: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_serialize_as_themselves_and_placeholders_by_kind() {
        let known: Planned<String> = Planned::Known("arn:aws:ecs:x".into());
        assert_eq!(
            serde_json::to_value(&known).ok(),
            Some(serde_json::json!("arn:aws:ecs:x"))
        );
        let later: Planned<String> = Planned::after_apply(Placeholder::TaskDefinitionRevision {
            family: "pcp1-mod-users".into(),
        });
        let json = serde_json::to_value(&later).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"known_after_apply": {"kind": "task-definition-revision", "family": "pcp1-mod-users"}})
        );
        let back: Planned<String> = serde_json::from_value(json).unwrap_or(known.clone());
        assert_eq!(back, later);
        assert_eq!(later.shown(), KNOWN_AFTER_APPLY);
        assert_eq!(known.shown(), "arn:aws:ecs:x");
    }

    #[test]
    fn a_struct_value_with_optional_fields_is_not_taken_for_a_placeholder() {
        let later: Planned<ConfigurationRevision> =
            Planned::after_apply(Placeholder::KafkaConfiguration {
                key: "tenant".into(),
            });
        let text = serde_json::to_string(&later).unwrap_or_default();
        let back: Option<Planned<ConfigurationRevision>> = serde_json::from_str(&text).ok();
        assert_eq!(back, Some(later));
        let known = Planned::Known(ConfigurationRevision {
            arn: "arn:aws:kafka:c".into(),
            revision: 3,
        });
        let text = serde_json::to_string(&known).unwrap_or_default();
        let back: Option<Planned<ConfigurationRevision>> = serde_json::from_str(&text).ok();
        assert_eq!(back, Some(known));
    }
}
