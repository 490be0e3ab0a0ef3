//! The rules of the spec that its types alone do not give the generated schemas, added so an
//! editor accepts what `validate` accepts and rejects what it rejects (issue 35: the schema
//! required `load.tool`, which defaults to `jmeter`, and showed every shipped load step in
//! red). What a schema cannot say (references between sections and files, the lints) is
//! listed in docs/editors.md.
use serde_json::{Map, Value, json};

use crate::spec::playbook::{LOAD_TOOLS, MAX_ENGINES};

/// A playbook's rules: `load.tool` may be left out (it defaults to the first tool) and names
/// a known one; a step starts 1 to [`MAX_ENGINES`] engines; the matrix has an axis, and an
/// axis a variant.
pub fn playbook_rules(schema: &mut Value) {
    if let Some(load) = schema.pointer_mut("/$defs/LoadSpec") {
        if let Some(required) = load.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|r| r != "tool");
        }
        if let Some(tool) = load.pointer_mut("/properties/tool") {
            tool["enum"] = json!(LOAD_TOOLS);
            tool["default"] = json!(LOAD_TOOLS[0]);
        }
        if let Some(engines) = load.pointer_mut("/properties/engines") {
            engines["minimum"] = json!(1);
            engines["maximum"] = json!(MAX_ENGINES);
        }
    }
    if let Some(matrix) = schema.pointer_mut("/properties/matrix") {
        matrix["minProperties"] = json!(1);
        if let Some(axis) = matrix.get_mut("additionalProperties") {
            axis["minProperties"] = json!(1);
        }
    }
}

/// `ecs.capacity` in one of its forms: `managed_instances` alone, or `instance_type` with
/// `instances` (and an optional `provider`); and a managed provider lists a type at least.
/// After [`extends_is_a_diff`]: a diff may give part of a form.
pub fn capacity_forms(schema: &mut Value) {
    if let Some(capacity) = schema.pointer_mut("/$defs/Capacity") {
        capacity["oneOf"] = json!([
            {
                "required": ["managed_instances"],
                "not": {"anyOf": [
                    {"required": ["provider"]},
                    {"required": ["instance_type"]},
                    {"required": ["instances"]}
                ]}
            },
            {
                "required": ["instance_type", "instances"],
                "not": {"required": ["managed_instances"]}
            }
        ]);
    }
    // A diff that empties the list empties it in the merged env too.
    for managed in ["ManagedInstances", "PartialManagedInstances"] {
        let pointer = format!("/$defs/{managed}/properties/instance_types");
        if let Some(types) = schema.pointer_mut(&pointer) {
            // A partial definition's property is `anyOf: [the type, null]`.
            match types.pointer_mut("/anyOf/0") {
                Some(list) => list["minItems"] = json!(1),
                None => types["minItems"] = json!(1),
            }
        }
    }
}

/// The prefix of a definition's copy that requires nothing.
const PARTIAL: &str = "Partial";

/// An env with `extends:` is a diff of another: any field may be left to the base, and
/// `null` removes one (docs/spec.md). The root's properties check every env's types, names
/// and values, with nothing required; an env without `extends:` must also be complete
/// (`$defs/CompleteEnv`: the definitions as generated).
pub fn extends_is_a_diff(schema: &mut Value) {
    let Some(root) = schema.as_object_mut() else {
        return;
    };
    let complete = json!({
        "type": "object",
        "properties": root.get("properties").cloned().unwrap_or_else(|| json!({})),
        "required": root.remove("required").unwrap_or_else(|| json!([])),
    });
    if let Some(properties) = root.get_mut("properties") {
        *properties = partial_properties(properties);
    }
    let defs = root
        .entry("$defs")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(defs) = defs {
        let partials: Vec<(String, Value)> = defs
            .iter()
            .map(|(name, def)| (format!("{PARTIAL}{name}"), partial(def)))
            .collect();
        defs.extend(partials);
        defs.insert("CompleteEnv".into(), complete);
    }
    root.insert("if".into(), json!({"required": ["extends"]}));
    root.insert("else".into(), json!({"$ref": "#/$defs/CompleteEnv"}));
}

/// A schema that requires nothing, whose properties may also be null, and whose references
/// point at the partial definitions.
fn partial(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                match key.as_str() {
                    "required" if value.is_array() => {}
                    "$ref" => {
                        let target = value.as_str().unwrap_or_default();
                        let partial_ref = match target.strip_prefix("#/$defs/") {
                            Some(name) => format!("#/$defs/{PARTIAL}{name}"),
                            None => target.to_string(),
                        };
                        out.insert(key.clone(), Value::String(partial_ref));
                    }
                    "properties" => {
                        out.insert(key.clone(), partial_properties(value));
                    }
                    _ => {
                        out.insert(key.clone(), partial(value));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(partial).collect()),
        other => other.clone(),
    }
}

/// Each property partial, and nullable (a `null` removes the base's value).
fn partial_properties(properties: &Value) -> Value {
    match properties.as_object() {
        Some(map) => Value::Object(
            map.iter()
                .map(|(name, p)| {
                    let mut nullable = json!({"anyOf": [partial(p), {"type": "null"}]});
                    // Editors show the description of the property, not of a branch.
                    if let Some(description) = p.get("description") {
                        nullable["description"] = description.clone();
                    }
                    (name.clone(), nullable)
                })
                .collect(),
        ),
        None => properties.clone(),
    }
}
