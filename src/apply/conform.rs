//! The conformance check before every planned send (terraform's "Provider produced
//! inconsistent final plan", `checkPlannedChange`): the request the executor is about to
//! send must equal the one the plan carries, except where the plan holds a placeholder
//! (`plan::placeholder`) that the run has since filled. A difference anywhere else means the
//! executor changed what the user approved: a bug, reported with the resource and the
//! differing fields (never their values, which may be secrets), and nothing is sent.
use serde::Serialize;
use serde_json::Value;

use super::error::ActionError;

/// The key a placeholder serializes under (`plan::placeholder::Planned::AfterApply`).
const PLACEHOLDER_KEY: &str = "known_after_apply";

/// Compares the request about to be sent with the planned one.
pub fn check<T: Serialize>(resource: &str, planned: &T, sending: &T) -> Result<(), ActionError> {
    let (planned, sending) = match (serde_json::to_value(planned), serde_json::to_value(sending)) {
        (Ok(p), Ok(s)) => (p, s),
        (Err(e), _) | (_, Err(e)) => {
            return Err(ActionError::Internal(format!(
                "{resource}: the request cannot be compared with the plan: {e}"
            )));
        }
    };
    let mut fields = Vec::new();
    differences(&planned, &sending, String::new(), &mut fields);
    if fields.is_empty() {
        Ok(())
    } else {
        Err(ActionError::Inconsistent {
            resource: resource.to_string(),
            fields,
        })
    }
}

/// The request to send: the planned one with `fill` applied (placeholders given the values
/// the run learned), checked against the plan. Any other change `fill` makes is refused.
pub fn filled<T: Serialize + Clone>(
    resource: &str,
    planned: &T,
    fill: impl FnOnce(&mut T),
) -> Result<T, ActionError> {
    let mut sending = planned.clone();
    fill(&mut sending);
    check(resource, planned, &sending)?;
    Ok(sending)
}

fn is_placeholder(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.len() == 1 && m.contains_key(PLACEHOLDER_KEY))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The paths (`provisioned.numberOfBrokerNodes`, `tags[2]`) where `sending` differs from
/// `planned`; a placeholder in the plan matches whatever fills it.
fn differences(planned: &Value, sending: &Value, path: String, out: &mut Vec<String>) {
    if is_placeholder(planned) {
        return;
    }
    match (planned, sending) {
        (Value::Object(p), Value::Object(s)) => {
            let keys: std::collections::BTreeSet<&String> = p.keys().chain(s.keys()).collect();
            for key in keys {
                match (p.get(key), s.get(key)) {
                    (Some(a), Some(b)) => differences(a, b, join(&path, key), out),
                    _ => out.push(join(&path, key)),
                }
            }
        }
        (Value::Array(p), Value::Array(s)) if p.len() == s.len() => {
            for (i, (a, b)) in p.iter().zip(s).enumerate() {
                differences(a, b, format!("{path}[{i}]"), out);
            }
        }
        (a, b) if a == b => {}
        _ => out.push(if path.is_empty() {
            "(the whole request)".into()
        } else {
            path
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::placeholder::{Placeholder, Planned};

    #[derive(Debug, Serialize, Clone)]
    struct Request {
        name: String,
        count: u32,
        revision: Planned<String>,
        subnets: Vec<String>,
    }

    fn planned() -> Request {
        Request {
            name: "mod-users".into(),
            count: 2,
            revision: Planned::after_apply(Placeholder::TaskDefinitionRevision {
                family: "pcp1-mod-users".into(),
            }),
            subnets: vec!["subnet-a".into(), "subnet-b".into()],
        }
    }

    #[test]
    fn a_filled_placeholder_conforms() {
        let mut sending = planned();
        sending.revision = Planned::Known("arn:aws:ecs:td/pcp1-mod-users:4".into());
        assert_eq!(check("ecs/service/mod-users", &planned(), &sending), Ok(()));
    }

    #[test]
    fn an_altered_request_is_a_typed_error_naming_the_resource_and_fields() {
        let mut sending = planned();
        sending.count = 3;
        sending.subnets.push("subnet-c".into());
        let err = check("ecs/service/mod-users", &planned(), &sending);
        assert_eq!(
            err,
            Err(ActionError::Inconsistent {
                resource: "ecs/service/mod-users".into(),
                fields: vec!["count".into(), "subnets".into()],
            })
        );
        let text = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("ecs/service/mod-users"), "{text}");
        assert!(text.contains("count, subnets"), "{text}");
    }

    #[test]
    fn filling_refuses_a_change_outside_the_placeholders() {
        let arn = "arn:aws:ecs:td/pcp1-mod-users:4";
        let sent = filled("ecs/service/mod-users", &planned(), |r| {
            r.revision = Planned::Known(arn.into())
        });
        assert_eq!(
            sent.ok().and_then(|r| r.revision.known().cloned()),
            Some(arn.to_string())
        );
        let altered = filled("ecs/service/mod-users", &planned(), |r| {
            r.revision = Planned::Known(arn.into());
            r.name = "mod-users-2".into();
        });
        assert!(
            matches!(&altered, Err(ActionError::Inconsistent { fields, .. }) if fields == &["name"]),
            "{altered:?}"
        );
    }

    #[test]
    fn a_known_value_in_the_plan_must_be_sent_as_planned() {
        let mut plan = planned();
        plan.revision = Planned::Known("arn:aws:ecs:td/pcp1-mod-users:3".into());
        let mut sending = plan.clone();
        sending.revision = Planned::Known("arn:aws:ecs:td/pcp1-mod-users:4".into());
        let err = check("ecs/service/mod-users", &plan, &sending);
        assert!(
            matches!(&err, Err(ActionError::Inconsistent { fields, .. }) if fields == &["revision"]),
            "{err:?}"
        );
    }
}
