//! Issue 35: the editor schemas (`envctl schema env|playbook`) agree with `validate`. Every
//! env and playbook in the repository is accepted (the schema once required `load.tool`, and
//! 4 of the 6 shipped playbooks showed red in editors); files `validate` rejects are rejected
//! by the schema too, except the rules a schema cannot see, listed with why.
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Test, repo};

fn schema(kind: &str) -> jsonschema::Validator {
    let out = Test::new().args(["schema", kind]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let schema: Value = serde_json::from_str(&out.stdout).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("readable");
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .expect("a directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn problems(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn every_shipped_env_and_playbook_validates_against_the_schemas() {
    let (env, playbook) = (schema("env"), schema("playbook"));
    let mut envs = files("envs");
    // The test environments: one is a diff of a shipped env (`extends:`).
    envs.extend(files("tests/fixtures"));
    let playbooks = files("playbooks");
    assert!(envs.len() >= 6 && playbooks.len() >= 6);
    let mut failures = Vec::new();
    for (validator, files) in [(&env, &envs), (&playbook, &playbooks)] {
        for file in files {
            let found = problems(validator, &yaml(file));
            if !found.is_empty() {
                failures.push(format!("{}: {}", file.display(), found.join("; ")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A change to a shipped file: the value at a JSON pointer, or the key removed.
struct Case {
    file: &'static str,
    pointer: &'static str,
    value: Option<Value>,
    /// The code `validate` reports.
    code: &'static str,
}

fn case(file: &'static str, pointer: &'static str, value: Value, code: &'static str) -> Case {
    Case {
        file,
        pointer,
        value: Some(value),
        code,
    }
}

fn removed(file: &'static str, pointer: &'static str, code: &'static str) -> Case {
    Case {
        file,
        pointer,
        value: None,
        code,
    }
}

fn apply(doc: &mut Value, pointer: &str, value: Option<Value>) {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let parent = doc.pointer_mut(parent).expect("the parent exists");
    match (parent, value) {
        (Value::Object(map), Some(v)) => {
            map.insert(key.to_string(), v);
        }
        (Value::Object(map), None) => {
            map.remove(key);
        }
        (Value::Array(items), Some(v)) => items[key.parse::<usize>().expect("an index")] = v,
        (other, _) => panic!("cannot change {pointer} in {other}"),
    }
}

/// Writes the changed file beside the shipped ones (its relative paths still resolve) and
/// returns whether `validate` rejected it with `code`, and the schema's problems.
fn judge(
    project: &Path,
    c: &Case,
    env: &jsonschema::Validator,
    pb: &jsonschema::Validator,
) -> (bool, Vec<String>) {
    let mut doc = yaml(&project.join(c.file));
    apply(&mut doc, c.pointer, c.value.clone());
    let changed = c.file.replace(".yaml", "-changed.yaml");
    let text = serde_saphyr::to_string(&doc).expect("serializable");
    std::fs::write(project.join(&changed), text).expect("writable");
    let out = Test::new()
        .args(["validate", &project.join(&changed).display().to_string()])
        .run();
    let rejected = out.code == 1 && out.stderr.contains(&format!("error[{}]", c.code));
    let validator = if c.file.starts_with("playbooks/") {
        pb
    } else {
        env
    };
    (rejected, problems(validator, &doc))
}

/// A project with the shipped envs, task definitions and playbooks, to change copies in.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for sub in ["envs", "playbooks", "task-defs"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("dir");
        for file in std::fs::read_dir(repo().join(sub))
            .expect("dir")
            .filter_map(Result::ok)
        {
            if file.path().is_file() {
                std::fs::copy(file.path(), dir.path().join(sub).join(file.file_name()))
                    .expect("copy");
            }
        }
    }
    dir
}

#[test]
fn what_validate_rejects_the_schemas_reject() {
    use serde_json::json;
    let (env, pb) = (schema("env"), schema("playbook"));
    let project = project();
    let (e, p) = ("envs/pcp1.yaml", "playbooks/qcp1-four-axes.yaml");
    let rejected_by_both = [
        case(e, "/plann", json!("x"), "unknown-field"),
        removed(e, "/region", "missing-field"),
        case(e, "/ttl", json!("48 hours"), "invalid-value"),
        case(e, "/ecs/cluster", json!(5), "wrong-type"),
        case(e, "/ecs/capacity", json!({}), "missing-field"),
        case(
            e,
            "/ecs/capacity",
            json!({"instance_type": "m6i.2xlarge"}),
            "missing-field",
        ),
        case(e, "/kafka/tenant/metadata", json!("raft"), "invalid-value"),
        case(e, "/kafka/tenant/brokers", json!(-1), "out-of-range"),
        case(e, "/kafka/tenant/colour", json!("red"), "unknown-field"),
        removed(e, "/rds/writer/class", "missing-field"),
        case(
            e,
            "/services/defaults/log_level",
            json!("loud"),
            "invalid-value",
        ),
        case(e, "/network/subnets", json!("subnet-1"), "wrong-type"),
        case(p, "/plann", json!("x"), "unknown-field"),
        case(p, "/teardown", json!("sometimes"), "invalid-value"),
        case(p, "/steps/0/load/tool", json!("gatling"), "invalid-value"),
        case(p, "/steps/0/load/engines", json!(0), "out-of-range"),
        case(p, "/steps/0/load/engines", json!(5000), "out-of-range"),
        case(
            p,
            "/steps/0/load/timeout",
            json!("an hour"),
            "invalid-value",
        ),
        removed(p, "/steps/0/load/plan", "missing-field"),
        case(p, "/steps/0/load/colour", json!("red"), "unknown-field"),
        removed(p, "/name", "missing-field"),
        case(p, "/collect/padding", json!("soon"), "invalid-value"),
        case(p, "/matrix", json!({}), "empty-matrix"),
        case(p, "/fail_fast", json!("yes please"), "wrong-type"),
    ];
    let mut failures = Vec::new();
    for c in &rejected_by_both {
        let (rejected, schema_problems) = judge(project.path(), c, &env, &pb);
        if !rejected {
            failures.push(format!(
                "validate accepts {} {} (or not with {})",
                c.file, c.pointer, c.code
            ));
        }
        if schema_problems.is_empty() {
            failures.push(format!(
                "the schema accepts {} {} = {:?}",
                c.file, c.pointer, c.value
            ));
        }
    }
    // What a schema cannot see, so only `validate` rejects (docs/editors.md says so): rules
    // across sections and files, and the lints.
    let validate_only = [
        // `secrets` need an execution role: a rule between two sections.
        removed(e, "/ecs/execution_role", "secrets-without-execution-role"),
        // A variant sets a path the env does not have: the env is another file.
        case(
            p,
            "/matrix/users/u1/set",
            json!({"services.no-such.cpu": 1}),
            "unknown-reference",
        ),
    ];
    for c in &validate_only {
        let (rejected, schema_problems) = judge(project.path(), c, &env, &pb);
        if !rejected {
            failures.push(format!(
                "validate accepts {} {} (or not with {})",
                c.file, c.pointer, c.code
            ));
        }
        if !schema_problems.is_empty() {
            failures.push(format!(
                "the schema now rejects {} {}: move it to the cases both reject",
                c.file, c.pointer
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
