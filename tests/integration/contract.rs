//! The contract table in docs/aws-behaviour.md covers every AWS operation envctl can send.
//!
//! The operations come from the code, two ways that must agree with the table: the names
//! envctl paces and journals its calls under (`Operation::Ecs(EcsOp::UpdateService)`, the one
//! type every call of `apply`, `observe`, `gc` and `park` goes through), and, as a net for
//! calls made outside it (import, preflight, the lock), every SDK request the adapters in
//! `src/aws/` send (`<client>.<operation>()...send()`). A new call without a row fails here,
//! naming the operation and where it is sent.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::repo;

/// The section of docs/aws-behaviour.md that holds the table.
const SECTION: &str = "## The contract: every operation envctl sends";

/// The `Operation` variants' APIs, as the table's first column names them.
fn api_of_variant(variant: &str) -> Option<&'static str> {
    Some(match variant {
        "Ecs" => "ECS",
        "Kafka" => "MSK",
        "Rds" => "RDS",
        "SecretsManager" => "Secrets Manager",
        "Logs" => "CloudWatch Logs",
        _ => return None,
    })
}

/// The API of an adapter file that talks to one service only.
fn api_of_adapter(file: &str) -> Option<&'static str> {
    Some(match file {
        "ecs.rs" => "ECS",
        "kafka.rs" => "MSK",
        "rds.rs" => "RDS",
        "secrets.rs" => "Secrets Manager",
        "logs.rs" => "CloudWatch Logs",
        "cloudwatch.rs" => "CloudWatch",
        "s3.rs" => "S3",
        _ => return None,
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// (API, operation) -> where in the code it is named.
type Found = BTreeMap<(String, String), BTreeSet<String>>;

/// `Operation::<Variant>(<Variant>Op::<Name>)` anywhere in `src/`.
fn paced_operations(files: &[(String, String)]) -> Found {
    let variants = operation_variants();
    let mut found = Found::new();
    for (path, text) in files {
        for (i, _) in text.match_indices("Operation::") {
            let rest = &text[i + "Operation::".len()..];
            let variant: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            let typed = format!("({variant}Op::");
            let Some(args) = rest[variant.len()..].strip_prefix(typed.as_str()) else {
                continue;
            };
            let name: String = args
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if !args[name.len()..].starts_with(')') || name.is_empty() {
                continue;
            }
            assert!(
                variants.contains(&variant),
                "{path}: Operation::{variant} is not a variant of exec::Operation"
            );
            let api = api_of_variant(&variant).unwrap_or_else(|| {
                panic!(
                    "Operation::{variant} ({path}) has no API name in tests/integration/contract.rs"
                )
            });
            let line = text[..i].lines().count();
            found
                .entry((api.to_string(), name))
                .or_default()
                .insert(format!("{path}:{line}"));
        }
    }
    found
}

/// The variants of `exec::Operation`, read from its definition: a new API (a new variant)
/// must be given its table name above, or every one of its calls would go unchecked.
fn operation_variants() -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo().join("src/exec/limiter.rs")).expect("limiter.rs");
    let start = text.find("pub enum Operation {").expect("enum Operation");
    let body = &text[start..];
    let end = body.find('}').expect("end of enum Operation");
    body["pub enum Operation {".len()..end]
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.is_empty())
        .filter_map(|l| l.split('(').next().map(str::to_string))
        .collect()
}

/// Methods that end a receiver chain but are not SDK operations.
const NOT_OPERATIONS: &[&str] = &["as_str", "clone", "to_string", "as_ref", "iter"];

/// Every `<client>.<operation>()...send()` in `src/`: the operation's snake-case name with
/// the file it is in. `.send()` outside `src/aws/` fails: adapters are the edge.
fn sdk_requests(files: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, text) in files {
        let chunks: Vec<&str> = text.split(".send()").collect();
        if chunks.len() == 1 {
            continue;
        }
        assert!(
            path.starts_with("src/aws/"),
            "{path} sends an AWS request; only the adapters in src/aws/ do"
        );
        for chunk in &chunks[..chunks.len() - 1] {
            let name = last_client_call(chunk).unwrap_or_else(|| {
                panic!(
                    "{path}: a .send() whose operation this test cannot find: {}",
                    &chunk[chunk.len().saturating_sub(200)..]
                )
            });
            out.push((path.clone(), name));
        }
    }
    out
}

/// The last `<receiver>.<snake_name>()` of a builder chain whose receiver is a client
/// (`c`, `client`, `clients.rds`, `ctx.clients.ecs`).
fn last_client_call(chunk: &str) -> Option<String> {
    // Whitespace around the dots of a chain goes; elsewhere it still separates words.
    let compact = chunk
        .split('.')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(".");
    let mut best = None;
    for (i, _) in compact.match_indices(".") {
        let before = &compact[..i];
        let receiver_ok = before.ends_with("c")
            && !before
                .chars()
                .rev()
                .nth(1)
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            || before.ends_with("client")
            || before
                .rsplit_once("clients.")
                .is_some_and(|(_, svc)| svc.chars().all(|c| c.is_ascii_lowercase()));
        if !receiver_ok {
            continue;
        }
        let name: String = compact[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty()
            && compact[i + 1 + name.len()..].starts_with("()")
            && !NOT_OPERATIONS.contains(&name.as_str())
        {
            best = Some(name);
        }
    }
    best
}

fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The table's rows: (API, operation) -> the row's other cells.
fn contract_rows() -> BTreeMap<(String, String), Vec<String>> {
    let text =
        std::fs::read_to_string(repo().join("docs/aws-behaviour.md")).expect("aws-behaviour.md");
    let start = text
        .find(SECTION)
        .unwrap_or_else(|| panic!("docs/aws-behaviour.md has no section `{SECTION}`"));
    let section = &text[start + SECTION.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<String> = line
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_string())
            .collect();
        if cells.len() < 4 || cells[0] == "API" || cells[0].starts_with("---") {
            continue;
        }
        let op = cells[1].trim_matches('`').to_string();
        rows.insert((cells[0].clone(), op), cells[2..].to_vec());
    }
    rows
}

fn sources() -> Vec<(String, String)> {
    let root = repo();
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap_or(&p).display().to_string();
            let text = std::fs::read_to_string(&p).expect("read source");
            // Unit tests name operations envctl never sends (MSK's CreateCluster, in the
            // limiter's tests): only the code before a file's test module counts.
            let code = match text.find("#[cfg(test)]\nmod tests") {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            (rel, code)
        })
        .collect()
}

#[test]
fn every_operation_envctl_sends_has_a_row_in_the_contract_table() {
    let files = sources();
    let rows = contract_rows();
    let mut missing = Vec::new();
    let paced = paced_operations(&files);
    assert!(
        paced.len() > 40,
        "found only {} paced operations: the scan is broken",
        paced.len()
    );
    for ((api, op), places) in &paced {
        if !rows.contains_key(&(api.clone(), op.clone())) {
            missing.push(format!(
                "{api} {op} (sent as Operation::... at {})",
                places.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let requests = sdk_requests(&files);
    for (path, snake) in &requests {
        let file = path.rsplit('/').next().unwrap_or(path);
        let api = api_of_adapter(file);
        let covered = rows
            .keys()
            .any(|(a, op)| squash(op) == squash(snake) && api.is_none_or(|api| a == api));
        if !covered {
            missing.push(format!(
                "{} {snake} (the SDK request in {path})",
                api.unwrap_or("(API of the client used)")
            ));
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "operations without a row in docs/aws-behaviour.md, \"{SECTION}\" (add `| <API> | `<Operation>` | <errors> | <sandbox test or not emulated, why> |`):\n  {}",
        missing.join("\n  ")
    );
    // Every row says what the sandbox does with the errors it lists.
    for ((api, op), cells) in &rows {
        let last = cells.last().map(String::as_str).unwrap_or_default();
        assert!(
            !last.is_empty() && !cells[0].is_empty(),
            "{api} {op}: a row needs its documented errors and the sandbox test (or `not emulated: why`)"
        );
    }
}

#[test]
fn the_contract_scan_finds_calls_the_way_they_are_written() {
    assert_eq!(
        last_client_call("let page = c\n    .describe_db_instances()\n    .max_records(100)"),
        Some("describe_db_instances".to_string())
    );
    assert_eq!(
        last_client_call("let page = clients\n .rds\n .describe_db_engine_versions()\n .engine(e)"),
        Some("describe_db_engine_versions".to_string())
    );
    assert_eq!(
        last_client_call("c.register_task_definition().network_mode(m.as_str())"),
        Some("register_task_definition".to_string())
    );
    assert_eq!(last_client_call("let x = y.z();"), None);
    let files = vec![(
        "src/apply/x.rs".to_string(),
        "ctx.read(r, Operation::Rds(RdsOp::DescribeDBInstances), || f())\nOperation::Ecs(name)"
            .to_string(),
    )];
    let found = paced_operations(&files);
    assert_eq!(
        found.keys().cloned().collect::<Vec<_>>(),
        vec![("RDS".to_string(), "DescribeDBInstances".to_string())]
    );
}
