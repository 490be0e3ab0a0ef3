//! `envctl schema [env|playbook]`: JSON Schema derived from the spec types, for editors
//! (see docs/editors.md).
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{SchemaArgs, SchemaKind};
use crate::spec::{EnvSpec, Playbook};

pub fn run(args: SchemaArgs) -> anyhow::Result<ExitCode> {
    let text = serde_json::to_string_pretty(&schema(args.kind))?;
    match &args.out {
        // A shell redirection into `.envctl/` fails in a fresh clone, before envctl runs:
        // `--out` makes the directory first.
        Some(path) => {
            // Made private (0700), as every directory envctl makes under `.envctl/` is: the
            // state directory holds the journal, locks and the sandbox's world. One that
            // exists (`docs/`) is left as it is.
            if let Some(dir) = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty() && !d.exists())
            {
                crate::exec::private_file::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(path, text + "\n")
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => println!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The schema of a file kind.
pub fn schema(kind: SchemaKind) -> serde_json::Value {
    let mut value = match kind {
        SchemaKind::Env => serde_json::to_value(schemars::schema_for!(EnvSpec)),
        SchemaKind::Playbook => serde_json::to_value(schemars::schema_for!(Playbook)),
        SchemaKind::Results => results_schema(),
    }
    .unwrap_or_default();
    // A service entry may leave any field to `services.defaults`, so none is required there;
    // `validate` checks completeness after the merge.
    if let Some(service) = value.pointer_mut("/$defs/Service")
        && let Some(obj) = service.as_object_mut()
    {
        obj.remove("required");
    }
    match kind {
        SchemaKind::Env => {
            super::schema_rules::extends_is_a_diff(&mut value);
            super::schema_rules::capacity_forms(&mut value);
        }
        SchemaKind::Playbook => super::schema_rules::playbook_rules(&mut value),
        SchemaKind::Results => {}
    }
    value
}

/// The schema of `run.json`; the files of a point directory (`point.json`,
/// `effective.json`, `metrics.json`) are `$defs/PointRecord`, `$defs/EffectiveConfig` and
/// `$defs/MetricsRecord`, so one document describes the whole results layout.
fn results_schema() -> Result<serde_json::Value, serde_json::Error> {
    use crate::results::{EffectiveConfig, MetricsRecord, PointRecord, RunRecord};
    let mut run = serde_json::to_value(schemars::schema_for!(RunRecord))?;
    for (name, schema) in [
        ("PointRecord", schemars::schema_for!(PointRecord)),
        ("EffectiveConfig", schemars::schema_for!(EffectiveConfig)),
        ("MetricsRecord", schemars::schema_for!(MetricsRecord)),
    ] {
        let mut schema = serde_json::to_value(schema)?;
        // Their own definitions move to the root, where their `#/$defs/...` refs point.
        let defs = schema
            .as_object_mut()
            .and_then(|o| {
                o.remove("$schema");
                o.remove("$defs")
            })
            .and_then(|d| d.as_object().cloned())
            .unwrap_or_default();
        if let Some(root) = run.as_object_mut() {
            let root_defs = root.entry("$defs").or_insert_with(|| serde_json::json!({}));
            if let Some(root_defs) = root_defs.as_object_mut() {
                root_defs.extend(defs);
                root_defs.insert(name.to_owned(), schema);
            }
        }
    }
    Ok(run)
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
        let results = schema(SchemaKind::Results);
        assert!(properties(&results, "/properties").contains(&"run_id".to_string()));
        for record in [
            "PointRecord",
            "EffectiveConfig",
            "MetricsRecord",
            "MetricSeries",
        ] {
            assert!(
                results.pointer(&format!("/$defs/{record}")).is_some(),
                "{record}"
            );
        }
        let playbook = schema(SchemaKind::Playbook);
        assert!(properties(&playbook, "/properties").contains(&"matrix".to_string()));
    }
}
