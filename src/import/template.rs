//! Turning live task definitions into shared templates: every value that is the service's
//! own (name, image, sizes, JVM, log level, endpoints) becomes a template variable, values
//! all services share stay literal, and services whose definitions then read the same share
//! one template.
use std::collections::{BTreeMap, BTreeSet};

use super::jvm::{self, JAVA_VARIABLES, Jvm};
use super::yaml;
use super::{Endpoints, KafkaEndpoint};
use crate::model::{ContainerDefinition, TaskDefinition};
use crate::spec::deferred::{MASTER_SECRET_ARN, Outputs};

/// A part of a template that only some services render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cond {
    /// `memoryReservation` (`service.memory.soft`).
    Soft,
    /// The JVM options variable (`service.java_options`).
    Java,
    /// Endpoints of the service's Kafka cluster.
    Kafka,
    /// The reader endpoint (`service.rw_split`).
    RwSplit,
}

impl Cond {
    fn test(self) -> &'static str {
        match self {
            Cond::Soft => "service.memory.soft",
            Cond::Java => "service.java_options",
            Cond::Kafka => "kafka",
            Cond::RwSplit => "service.rw_split",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub cond: Option<Cond>,
}

impl Line {
    fn plain(text: impl Into<String>) -> Line {
        Line {
            text: text.into(),
            cond: None,
        }
    }
}

/// What one service's definition says, in envctl's terms.
#[derive(Debug, Clone)]
pub struct ServiceShape {
    pub name: String,
    pub image: String,
    pub cpu: u32,
    pub memory_hard: u32,
    pub memory_soft: Option<u32>,
    pub jvm: Option<Jvm>,
    /// `None` when the definition has no `LOG_LEVEL` the template can produce.
    pub log_level: Option<String>,
    pub rw_split: bool,
    pub kafka: Option<String>,
    pub port: Option<u16>,
    /// Variables kept as they are, by name.
    pub literals: BTreeMap<String, String>,
    pub secrets: BTreeMap<String, String>,
    /// Variables that look like secrets but hold plain values: left out, never written.
    pub withheld: Vec<String>,
    /// Containers after the first, kept verbatim.
    pub sidecars: usize,
    /// Template lines of the parts this service renders, environment excepted.
    head: Vec<Line>,
    tail: Vec<Line>,
    /// Environment lines the template computes (references, JVM, log level, env name).
    computed_env: Vec<(String, Line)>,
    pub uses: BTreeSet<Cond>,
}

/// Names that mark a value as a secret (the `secret-in-environment` lint's list).
const SECRETISH: [&str; 5] = ["PASSWORD", "SECRET", "TOKEN", "PRIVATE_KEY", "ACCESS_KEY"];

fn secretish(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRETISH.iter().any(|w| upper.contains(w))
}

/// A literal string in a template: JSON, unless it holds template markers, in which case
/// minijinja prints it.
fn lit(s: &str) -> String {
    if s.contains('{') {
        format!("{{{{ {} | tojson }}}}", yaml::json(s))
    } else {
        yaml::json(s)
    }
}

/// A mapping key in a template: YAML-quoted, or printed by minijinja when it holds markers.
fn key(s: &str) -> String {
    if s.contains('{') {
        lit(s)
    } else {
        yaml::string(s)
    }
}

/// A value with the env's and the service's names replaced by variables, so the same text
/// serves every service (`pcp1-mod-users` -> `env.name ~ "-" ~ service.name`).
fn generalize(value: &str, env: &str, service: &str, region: &str) -> String {
    if value == region {
        return "{{ env.region | tojson }}".into();
    }
    enum Piece<'a> {
        Text(&'a str),
        Var(&'static str),
    }
    let mut pieces = vec![Piece::Text(value)];
    for (needle, var) in [(service, "service.name"), (env, "env.name")] {
        if needle.is_empty() {
            continue;
        }
        let mut next = Vec::new();
        let mut replaced = false;
        for p in pieces {
            match p {
                Piece::Text(t) if !replaced && t.contains(needle) => {
                    let (before, after) = t.split_once(needle).unwrap_or((t, ""));
                    if !before.is_empty() {
                        next.push(Piece::Text(before));
                    }
                    next.push(Piece::Var(var));
                    if !after.is_empty() {
                        next.push(Piece::Text(after));
                    }
                    replaced = true;
                }
                other => next.push(other),
            }
        }
        pieces = next;
    }
    if pieces.iter().all(|p| matches!(p, Piece::Text(_))) {
        return lit(value);
    }
    let parts: Vec<String> = pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) => yaml::json(t),
            Piece::Var(v) => (*v).to_string(),
        })
        .collect();
    if parts.len() == 1 {
        format!("{{{{ {} | tojson }}}}", parts[0])
    } else {
        format!("{{{{ ({}) | tojson }}}}", parts.join(" ~ "))
    }
}

/// What a variable's value refers to.
enum Meaning {
    Expr(String, Option<Cond>),
    /// An endpoint host; the paired `_PORT` variable may refer to the same resource.
    Host(String, Option<Cond>, String),
}

/// Reads a live definition. `env`/`region` are the imported env's.
pub fn shape(
    service: &str,
    td: &TaskDefinition,
    env: &str,
    region: &str,
    endpoints: &Endpoints,
) -> Option<ServiceShape> {
    let c = td.container_definitions.first()?;
    let outputs = Outputs::new();
    let mut values = BTreeMap::new();
    for (name, value) in &c.environment {
        // Live definitions are resolved: every value is a literal.
        values.insert(name.clone(), value.resolve(&outputs).unwrap_or_default());
    }
    let mut shape = ServiceShape {
        name: service.to_string(),
        image: c.image.clone(),
        cpu: c.cpu,
        memory_hard: c.memory,
        memory_soft: c.memory_reservation,
        jvm: None,
        log_level: None,
        rw_split: false,
        kafka: None,
        port: None,
        literals: BTreeMap::new(),
        secrets: c
            .secrets
            .iter()
            .map(|s| {
                let arn = s.value_from.to_string();
                let value = match endpoints
                    .master_secret_arn
                    .as_deref()
                    .and_then(|m| arn.strip_prefix(m))
                {
                    Some(suffix) => format!("${{{MASTER_SECRET_ARN}}}{suffix}"),
                    None => arn,
                };
                (s.name.clone(), value)
            })
            .collect(),
        withheld: Vec::new(),
        sidecars: td.container_definitions.len() - 1,
        head: Vec::new(),
        tail: Vec::new(),
        computed_env: Vec::new(),
        uses: BTreeSet::new(),
    };
    if c.memory_reservation.is_some() {
        shape.uses.insert(Cond::Soft);
    }
    shape.head = head_lines(td, c, env, service, region, &mut shape.port);
    shape.tail = tail_lines(td, c, env, service, region);

    // Hosts first: a port is a reference only next to its host.
    let mut hosts: BTreeMap<String, (String, Option<Cond>)> = BTreeMap::new();
    let mut meanings: BTreeMap<String, Meaning> = BTreeMap::new();
    let mut kafka_key: Option<&KafkaEndpoint> = None;
    for (name, value) in &values {
        let meaning = if name == "ENV" && value == env {
            Some(Meaning::Expr("{{ env.name | tojson }}".into(), None))
        } else if name == "LOG_LEVEL"
            && crate::spec::env::LogLevel::NAMES.contains(&value.to_ascii_lowercase().as_str())
            && *value == value.to_ascii_uppercase()
        {
            shape.log_level = Some(value.to_ascii_lowercase());
            Some(Meaning::Expr(
                "{{ service.log_level | upper | tojson }}".into(),
                None,
            ))
        } else if JAVA_VARIABLES.contains(&name.as_str())
            && shape.jvm.is_none()
            && let Some(parsed) = jvm::parse(value)
        {
            shape.jvm = Some(parsed);
            Some(Meaning::Expr(
                "{{ service.java_options | tojson }}".into(),
                Some(Cond::Java),
            ))
        } else if let Some(w) = &endpoints.writer
            && *value == w.0
        {
            Some(Meaning::Host(
                "{{ db.writer.host | tojson }}".into(),
                None,
                w.1.clone(),
            ))
        } else if let Some(r) = &endpoints.reader
            && *value == r.0
        {
            Some(Meaning::Host(
                "{{ db.reader.host | tojson }}".into(),
                Some(Cond::RwSplit),
                r.1.clone(),
            ))
        } else if let Some(k) = endpoints.kafka.iter().find(|k| {
            (*value == k.bootstrap || *value == k.host)
                && kafka_key.is_none_or(|chosen| chosen.key == k.key)
        }) {
            kafka_key = Some(k);
            if *value == k.bootstrap {
                Some(Meaning::Expr(
                    "{{ kafka.bootstrap_servers | tojson }}".into(),
                    Some(Cond::Kafka),
                ))
            } else {
                Some(Meaning::Host(
                    "{{ kafka.host | tojson }}".into(),
                    Some(Cond::Kafka),
                    k.port.clone(),
                ))
            }
        } else {
            None
        };
        if let Some(m) = meaning {
            if let Meaning::Host(expr, cond, port) = &m {
                hosts.insert(name.clone(), (expr.replace(".host", ".port"), *cond));
                let _ = port;
            }
            meanings.insert(name.clone(), m);
        }
    }
    for (name, value) in &values {
        if meanings.contains_key(name) || !name.contains("PORT") {
            continue;
        }
        let host = name.replacen("PORT", "HOST", 1);
        if let (Some((expr, cond)), Some(Meaning::Host(_, _, port))) =
            (hosts.get(&host), meanings.get(&host))
            && port == value
        {
            meanings.insert(name.clone(), Meaning::Expr(expr.clone(), *cond));
        }
    }
    // R/W split is one switch for a host and a port: anything else stays literal.
    let rw: Vec<&String> = meanings
        .iter()
        .filter(|(_, m)| {
            matches!(
                m,
                Meaning::Expr(_, Some(Cond::RwSplit)) | Meaning::Host(_, Some(Cond::RwSplit), _)
            )
        })
        .map(|(n, _)| n)
        .collect();
    if rw.len() == 2 {
        shape.rw_split = true;
        shape.uses.insert(Cond::RwSplit);
    } else {
        let rw: Vec<String> = rw.into_iter().cloned().collect();
        for n in rw {
            meanings.remove(&n);
        }
    }
    if let Some(k) = kafka_key {
        shape.kafka = Some(k.key.clone());
        shape.uses.insert(Cond::Kafka);
    }
    if shape.jvm.is_some() {
        shape.uses.insert(Cond::Java);
    }
    for (name, value) in values {
        match meanings.remove(&name) {
            Some(Meaning::Expr(expr, cond)) | Some(Meaning::Host(expr, cond, _)) => {
                shape.computed_env.push((
                    name.clone(),
                    Line {
                        text: format!("      {}: {expr}", key(&name)),
                        cond,
                    },
                ));
            }
            None if secretish(&name) && !value.is_empty() => shape.withheld.push(name),
            None => {
                shape.literals.insert(name, value);
            }
        }
    }
    Some(shape)
}

fn head_lines(
    td: &TaskDefinition,
    c: &ContainerDefinition,
    env: &str,
    service: &str,
    region: &str,
    port: &mut Option<u16>,
) -> Vec<Line> {
    let mut lines = vec![
        Line::plain(format!(
            "family: {}",
            generalize(&td.family, env, service, region)
        )),
        Line::plain(format!("networkMode: {}", lit(&td.network_mode))),
        Line::plain(format!(
            "requiresCompatibilities: [{}]",
            td.requires_compatibilities
                .iter()
                .map(|s| lit(s))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    ];
    if let Some(arn) = &td.task_role_arn {
        lines.push(Line::plain(format!(
            "taskRoleArn: {}",
            generalize(arn, env, service, region)
        )));
    }
    if let Some(arn) = &td.execution_role_arn {
        lines.push(Line::plain(format!(
            "executionRoleArn: {}",
            generalize(arn, env, service, region)
        )));
    }
    lines.push(Line::plain("containerDefinitions:"));
    lines.push(Line::plain(format!(
        "  - name: {}",
        generalize(&c.name, env, service, region)
    )));
    lines.push(Line::plain("    image: {{ service.image | tojson }}"));
    lines.push(Line::plain("    cpu: {{ service.cpu }}"));
    lines.push(Line::plain("    memory: {{ service.memory.hard }}"));
    lines.push(Line {
        text: "    memoryReservation: {{ service.memory.soft }}".into(),
        cond: Some(Cond::Soft),
    });
    lines.push(Line::plain(format!("    essential: {}", c.essential)));
    match c.port_mappings.as_slice() {
        [] => lines.push(Line::plain("    portMappings: []")),
        [m] if m.host_port == 0 || m.host_port == m.container_port => {
            *port = Some(m.container_port);
            let host = if m.host_port == 0 {
                String::new()
            } else {
                ", hostPort: {{ service.port }}".into()
            };
            let protocol = if m.protocol == "tcp" {
                String::new()
            } else {
                format!(", protocol: {}", lit(&m.protocol))
            };
            lines.push(Line::plain("    portMappings:"));
            lines.push(Line::plain(format!(
                "      - {{containerPort: {{{{ service.port }}}}{host}{protocol}}}"
            )));
        }
        many => {
            lines.push(Line::plain("    portMappings:"));
            for m in many {
                lines.push(Line::plain(format!(
                    "      - {{containerPort: {}, hostPort: {}, protocol: {}}}",
                    m.container_port,
                    m.host_port,
                    lit(&m.protocol)
                )));
            }
        }
    }
    lines
}

fn tail_lines(
    td: &TaskDefinition,
    c: &ContainerDefinition,
    env: &str,
    service: &str,
    region: &str,
) -> Vec<Line> {
    let mut lines = Vec::new();
    if let Some(log) = &c.log_configuration {
        lines.push(Line::plain("    logConfiguration:"));
        lines.push(Line::plain(format!(
            "      logDriver: {}",
            lit(&log.log_driver)
        )));
        lines.push(Line::plain("      options:"));
        for (k, v) in &log.options {
            lines.push(Line::plain(format!(
                "        {}: {}",
                key(k),
                generalize(v, env, service, region)
            )));
        }
    }
    // Further containers (sidecars) are kept verbatim.
    for extra in td.container_definitions.iter().skip(1) {
        lines.push(Line::plain(format!(
            "  - {{% raw %}}{}{{% endraw %}}",
            container_json(extra)
        )));
    }
    lines
}

/// A container as one JSON object in the template's input shape (environment and secrets
/// as maps).
fn container_json(c: &ContainerDefinition) -> String {
    let outputs = Outputs::new();
    let environment: serde_json::Map<String, serde_json::Value> = c
        .environment
        .iter()
        .map(|(k, v)| (k.clone(), v.resolve(&outputs).unwrap_or_default().into()))
        .collect();
    let secrets: serde_json::Map<String, serde_json::Value> = c
        .secrets
        .iter()
        .map(|s| (s.name.clone(), s.value_from.to_string().into()))
        .collect();
    let mut value = serde_json::json!({
        "name": c.name,
        "image": c.image,
        "cpu": c.cpu,
        "memory": c.memory,
        "essential": c.essential,
        "portMappings": c.port_mappings,
        "environment": environment,
        "secrets": secrets,
    });
    if let Some(soft) = c.memory_reservation {
        value["memoryReservation"] = soft.into();
    }
    if let Some(log) = &c.log_configuration {
        value["logConfiguration"] = serde_json::to_value(log).unwrap_or_default();
    }
    value.to_string()
}

/// The full line list of a service, with the variables every service shares.
pub fn lines(shape: &ServiceShape, shared: &BTreeMap<String, String>) -> Vec<Line> {
    let mut env: Vec<(String, Line)> = shape.computed_env.clone();
    for (name, value) in shared {
        env.push((
            name.clone(),
            Line::plain(format!("      {}: {}", key(name), lit(value))),
        ));
    }
    // What every service renders first, then each optional part as one block.
    env.sort_by(|a, b| (a.1.cond, &a.0).cmp(&(b.1.cond, &b.0)));
    let mut out = shape.head.clone();
    if env.is_empty() {
        out.push(Line::plain("    environment: {}"));
    } else {
        out.push(Line::plain("    environment:"));
        out.extend(env.into_iter().map(|(_, l)| l));
    }
    out.extend(shape.tail.iter().cloned());
    out
}

/// The lines a service renders from a template.
pub fn rendered_by(template: &[Line], uses: &BTreeSet<Cond>) -> Vec<Line> {
    template
        .iter()
        .filter(|l| l.cond.is_none_or(|c| uses.contains(&c)))
        .cloned()
        .collect()
}

/// Template text: conditional lines wrapped in `{%- if %}` blocks.
pub fn text(header: &str, lines: &[Line]) -> String {
    let mut out = String::from(header);
    let mut open: Option<Cond> = None;
    for line in lines {
        if line.cond != open {
            if open.is_some() {
                out.push_str("{%- endif %}\n");
            }
            if let Some(c) = line.cond {
                out.push_str(&format!("{{%- if {} %}}\n", c.test()));
            }
            open = line.cond;
        }
        out.push_str(&line.text);
        out.push('\n');
    }
    if open.is_some() {
        out.push_str("{%- endif %}\n");
    }
    out
}
