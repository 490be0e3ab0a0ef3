//! `envctl schema [env|playbook]`: JSON Schema derived from the spec types, for editors
//! (see docs/editors.md).
use std::process::ExitCode;

use crate::cli::{SchemaArgs, SchemaKind};
use crate::spec::{EnvSpec, Playbook};

pub fn run(args: SchemaArgs) -> anyhow::Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(&schema(args.kind))?);
    Ok(ExitCode::SUCCESS)
}

/// The schema of a file kind.
pub fn schema(kind: SchemaKind) -> serde_json::Value {
    let mut value = match kind {
        SchemaKind::Env => serde_json::to_value(schemars::schema_for!(EnvSpec)),
        SchemaKind::Playbook => serde_json::to_value(schemars::schema_for!(Playbook)),
    }
    .unwrap_or_default();
    // A service entry may leave any field to `services.defaults`, so none is required there;
    // `validate` checks completeness after the merge.
    if let Some(service) = value.pointer_mut("/$defs/Service")
        && let Some(obj) = service.as_object_mut()
    {
        obj.remove("required");
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::env::{ENV_FIELDS, SERVICE_FIELDS};

    fn properties(schema: &serde_json::Value, pointer: &str) -> Vec<String> {
        let mut keys: Vec<String> = schema
            .pointer(pointer)
            .and_then(|p| p.as_object())
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    }

    /// The schema and the decoder must accept the same fields, or editors and `validate`
    /// would disagree.
    #[test]
    fn schema_fields_match_the_decoder() {
        let env = schema(SchemaKind::Env);
        let mut expected: Vec<String> = ENV_FIELDS.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(properties(&env, "/properties"), expected);
        let mut expected: Vec<String> = SERVICE_FIELDS.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(properties(&env, "/$defs/Service/properties"), expected);
        assert!(env.pointer("/$defs/Service/required").is_none());
        assert_eq!(
            env.pointer("/additionalProperties"),
            Some(&serde_json::Value::Bool(false))
        );
        let playbook = schema(SchemaKind::Playbook);
        assert!(properties(&playbook, "/properties").contains(&"matrix".to_string()));
    }
}
