//! The env file import writes: top-level sections from the live resources, and services
//! written as `services.defaults` (what most share) plus each service's differences.
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::jvm::Jvm;
use super::template::ServiceShape;
use super::{ImportOptions, ImportedWorld, yaml};
use crate::model::tag;

/// A service's fields as the spec names them.
#[derive(Debug, Clone)]
pub struct ServiceEntry {
    name: String,
    template: String,
    image: String,
    version: Option<String>,
    count: u32,
    memory: (u32, Option<u32>),
    cpu: u32,
    jvm: Option<Jvm>,
    log_level: String,
    rw_split: bool,
    kafka: Option<String>,
    port: u16,
    environment: BTreeMap<String, String>,
    secrets: BTreeMap<String, String>,
}

/// `image:tag` -> (image, tag); a registry port (`host:5000/x`) or a digest is not a tag.
fn split_image(image: &str) -> (String, Option<String>) {
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) if !image.contains('@') && !tag.is_empty() => {
            let cut = image.len() - tag.len() - 1;
            (image[..cut].to_string(), Some(tag.to_string()))
        }
        _ => (image.to_string(), None),
    }
}

impl ServiceEntry {
    pub fn new(shape: &ServiceShape, count: u32, template: String) -> ServiceEntry {
        let (image, version) = split_image(&shape.image);
        ServiceEntry {
            name: shape.name.clone(),
            template,
            image,
            version,
            count,
            memory: (shape.memory_hard, shape.memory_soft),
            cpu: shape.cpu,
            jvm: shape.jvm.clone(),
            log_level: shape.log_level.clone().unwrap_or_else(|| "info".into()),
            rw_split: shape.rw_split,
            kafka: shape.kafka.clone(),
            port: shape.port.unwrap_or(DEFAULT_PORT),
            environment: shape.literals.clone(),
            secrets: shape.secrets.clone(),
        }
    }
}

const DEFAULT_PORT: u16 = 8081;

/// The value most services have, when at least two and at least half of them have it.
fn shared<T: Ord + Clone>(values: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    let mut n = 0;
    for v in values {
        *counts.entry(v).or_default() += 1;
        n += 1;
    }
    let (value, count) = counts.into_iter().max_by_key(|(_, c)| *c)?;
    (count >= 2 && count * 2 >= n).then_some(value)
}

/// The defaults chosen for the services; `None` fields fall back to the spec's own.
#[derive(Default)]
struct Defaults {
    template: Option<String>,
    count: Option<u32>,
    cpu: Option<u32>,
    memory: Option<(u32, Option<u32>)>,
    jvm: Option<Option<Jvm>>,
    log_level: Option<String>,
    rw_split: Option<bool>,
    kafka: Option<Option<String>>,
    port: Option<u16>,
    secrets: BTreeMap<String, String>,
}

impl Defaults {
    fn choose(services: &[ServiceEntry]) -> Defaults {
        let s = services;
        let mut secrets = s.first().map(|e| e.secrets.clone()).unwrap_or_default();
        for e in s {
            secrets.retain(|k, v| e.secrets.get(k) == Some(v));
        }
        if s.len() < 2 {
            secrets.clear();
        }
        Defaults {
            template: shared(s.iter().map(|e| e.template.clone())),
            count: shared(s.iter().map(|e| e.count)).filter(|&c| c != 1),
            cpu: shared(s.iter().map(|e| e.cpu)),
            memory: shared(s.iter().map(|e| e.memory)),
            jvm: shared(s.iter().map(|e| e.jvm.clone())).filter(Option::is_some),
            log_level: shared(s.iter().map(|e| e.log_level.clone())).filter(|l| l != "info"),
            rw_split: shared(s.iter().map(|e| e.rw_split)).filter(|&b| b),
            kafka: shared(s.iter().map(|e| e.kafka.clone())).filter(Option::is_some),
            port: shared(s.iter().map(|e| e.port)).filter(|&p| p != DEFAULT_PORT),
            secrets,
        }
    }
}

fn jvm_flow(j: &Jvm) -> String {
    let mut parts = vec![format!("xmx: {}", j.xmx)];
    if let Some(m) = j.metaspace {
        parts.push(format!("metaspace: {m}"));
    }
    if let Some(m) = j.max_metaspace {
        parts.push(format!("max_metaspace: {m}"));
    }
    if let Some(o) = &j.options {
        parts.push(format!("options: {}", yaml::string(o)));
    }
    format!("{{{}}}", parts.join(", "))
}

/// A service's `jvm` against the default's: only what differs, `null` for what it lacks.
fn jvm_diff(own: &Jvm, base: &Jvm) -> String {
    let opt = |o: Option<u32>| o.map_or("null".to_string(), |v| v.to_string());
    let mut parts = Vec::new();
    if own.xmx != base.xmx {
        parts.push(format!("xmx: {}", own.xmx));
    }
    if own.metaspace != base.metaspace {
        parts.push(format!("metaspace: {}", opt(own.metaspace)));
    }
    if own.max_metaspace != base.max_metaspace {
        parts.push(format!("max_metaspace: {}", opt(own.max_metaspace)));
    }
    if own.options != base.options {
        let text = own
            .options
            .as_deref()
            .map_or("null".to_string(), yaml::string);
        parts.push(format!("options: {text}"));
    }
    format!("{{{}}}", parts.join(", "))
}

fn memory_flow(m: (u32, Option<u32>)) -> String {
    match m.1 {
        Some(soft) => format!("{{hard: {}, soft: {soft}}}", m.0),
        None => format!("{{hard: {}}}", m.0),
    }
}

fn map_lines(out: &mut String, indent: &str, map: &BTreeMap<String, String>, loose: bool) {
    for (k, v) in map {
        let value = if loose {
            yaml::loose(v)
        } else {
            yaml::string(v)
        };
        let _ = writeln!(out, "{indent}{}: {value}", yaml::string(k));
    }
}

fn write_defaults(out: &mut String, d: &Defaults) {
    let mut body = String::new();
    let i = "    ";
    if let Some(t) = &d.template {
        let _ = writeln!(body, "{i}template: {}", yaml::string(t));
    }
    if let Some(c) = d.count {
        let _ = writeln!(body, "{i}count: {c}");
    }
    if let Some(m) = d.memory {
        let _ = writeln!(body, "{i}memory: {}", memory_flow(m));
    }
    if let Some(c) = d.cpu {
        let _ = writeln!(body, "{i}cpu: {c}");
    }
    if let Some(Some(j)) = &d.jvm {
        let _ = writeln!(body, "{i}jvm: {}", jvm_flow(j));
    }
    if let Some(l) = &d.log_level {
        let _ = writeln!(body, "{i}log_level: {l}");
    }
    if let Some(true) = d.rw_split {
        let _ = writeln!(body, "{i}rw_split: true");
    }
    if let Some(Some(k)) = &d.kafka {
        let _ = writeln!(body, "{i}kafka: {}", yaml::string(k));
    }
    if let Some(p) = d.port {
        let _ = writeln!(body, "{i}port: {p}");
    }
    if !d.secrets.is_empty() {
        let _ = writeln!(body, "{i}secrets:");
        map_lines(&mut body, "      ", &d.secrets, false);
    }
    if !body.is_empty() {
        out.push_str("  defaults:\n");
        out.push_str(&body);
    }
}

fn write_service(out: &mut String, e: &ServiceEntry, d: &Defaults) {
    let i = "    ";
    let _ = writeln!(out, "  {}:", yaml::string(&e.name));
    if d.template.as_ref() != Some(&e.template) {
        let _ = writeln!(out, "{i}template: {}", yaml::string(&e.template));
    }
    let _ = writeln!(out, "{i}image: {}", yaml::string(&e.image));
    if let Some(v) = &e.version {
        let _ = writeln!(out, "{i}version: {}", yaml::string(v));
    }
    if e.count != d.count.unwrap_or(1) {
        let _ = writeln!(out, "{i}count: {}", e.count);
    }
    match d.memory {
        Some(base) if base == e.memory => {}
        Some(base) => {
            let mut parts = Vec::new();
            if base.0 != e.memory.0 {
                parts.push(format!("hard: {}", e.memory.0));
            }
            if base.1 != e.memory.1 {
                parts.push(format!(
                    "soft: {}",
                    e.memory.1.map_or("null".to_string(), |s| s.to_string())
                ));
            }
            let _ = writeln!(out, "{i}memory: {{{}}}", parts.join(", "));
        }
        None => {
            let _ = writeln!(out, "{i}memory: {}", memory_flow(e.memory));
        }
    }
    if d.cpu != Some(e.cpu) {
        let _ = writeln!(out, "{i}cpu: {}", e.cpu);
    }
    match (&d.jvm, &e.jvm) {
        (Some(Some(base)), Some(own)) if base != own => {
            let _ = writeln!(out, "{i}jvm: {}", jvm_diff(own, base));
        }
        (Some(Some(_)), None) => {
            let _ = writeln!(out, "{i}jvm: null");
        }
        (None | Some(None), Some(own)) => {
            let _ = writeln!(out, "{i}jvm: {}", jvm_flow(own));
        }
        _ => {}
    }
    if e.log_level != d.log_level.as_deref().unwrap_or("info") {
        let _ = writeln!(out, "{i}log_level: {}", e.log_level);
    }
    if e.rw_split != d.rw_split.unwrap_or(false) {
        let _ = writeln!(out, "{i}rw_split: {}", e.rw_split);
    }
    let base_kafka = d.kafka.clone().flatten();
    if e.kafka != base_kafka {
        let text = e.kafka.as_deref().map_or("null".to_string(), yaml::string);
        let _ = writeln!(out, "{i}kafka: {text}");
    }
    if e.port != d.port.unwrap_or(DEFAULT_PORT) {
        let _ = writeln!(out, "{i}port: {}", e.port);
    }
    if !e.environment.is_empty() {
        let _ = writeln!(out, "{i}environment:");
        map_lines(out, "      ", &e.environment, false);
    }
    let extra: BTreeMap<String, String> = e
        .secrets
        .iter()
        .filter(|(k, v)| d.secrets.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !extra.is_empty() {
        let _ = writeln!(out, "{i}secrets:");
        map_lines(out, "      ", &extra, false);
    }
}

/// `KEY=VALUE` lines of server.properties (comments and blank lines skipped).
fn properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (what envctl writes in its tags).
fn epoch(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' || !text.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

fn duration(secs: i64) -> String {
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs % size == 0 {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

/// The whole env file.
pub fn write(
    world: &ImportedWorld,
    options: &ImportOptions,
    keys: &[String],
    services: &[ServiceEntry],
    notes: &mut Vec<String>,
) -> String {
    let tags = &world.cluster.tags;
    let owner = options
        .owner
        .clone()
        .or_else(|| tags.get(tag::OWNER).cloned())
        .unwrap_or_else(|| {
            notes.push("owner: the cluster has no envctl:owner tag and --owner was not given; `unknown` written".into());
            "unknown".into()
        });
    let ttl = match (
        tags.get(tag::CREATED).and_then(|t| epoch(t)),
        tags.get(tag::EXPIRES).and_then(|t| epoch(t)),
    ) {
        (Some(c), Some(e)) if e > c && e - c != 86_400 => Some(duration(e - c)),
        _ => None,
    };
    let mut subnets: Vec<String> = Vec::new();
    let mut security_groups: Vec<String> = Vec::new();
    for k in &world.kafka {
        if subnets.is_empty() {
            subnets = k.live.client_subnets.clone();
        } else if !subnets.starts_with(&k.live.client_subnets) {
            notes.push(format!(
                "kafka {}: its client subnets ({}) are not the first of network.subnets, which envctl gives every cluster; plan will show it as a replacement",
                k.live.name,
                k.live.client_subnets.join(", ")
            ));
        }
        security_groups.extend(k.security_groups.iter().cloned());
    }
    if let Some(db) = &world.db {
        security_groups.extend(db.security_groups.iter().cloned());
    }
    // awsvpc services carry the env's network in their configuration (what apply sends
    // them): its groups are the env's, and its subnets when no MSK cluster gave them.
    let awsvpc = world
        .services
        .iter()
        .filter_map(|s| s.placement.as_ref().and_then(|p| p.network.as_ref()));
    for n in awsvpc {
        if subnets.is_empty() {
            subnets = n.subnets.clone();
        }
        security_groups.extend(n.security_groups.iter().cloned());
    }
    let mut seen = std::collections::BTreeSet::new();
    security_groups.retain(|g| seen.insert(g.clone()));
    if subnets.is_empty() {
        notes.push(
            "network.subnets: no MSK cluster or awsvpc service was imported to read them from; fill them in".into(),
        );
    }

    let mut body = String::new();
    let _ = writeln!(body, "env: {}", yaml::string(&options.env));
    let _ = writeln!(body, "region: {}", yaml::string(&world.region));
    let _ = writeln!(body, "owner: {}", yaml::string(&owner));
    if let Some(ttl) = ttl {
        let _ = writeln!(body, "ttl: {ttl}");
    }
    let extra_tags: BTreeMap<String, String> = tags
        .iter()
        .filter(|(k, _)| !k.starts_with("envctl:") && !k.starts_with("aws:"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !extra_tags.is_empty() {
        body.push_str("tags:\n");
        map_lines(&mut body, "  ", &extra_tags, false);
    }
    let list = |v: &[String]| {
        v.iter()
            .map(|s| yaml::string(s))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        body,
        "network:\n  subnets: [{}]\n  security_groups: [{}]",
        list(&subnets),
        list(&security_groups)
    );
    let capacity = capacity(world, options, services, notes);
    let _ = writeln!(
        body,
        "\necs:\n  cluster: {}\n  capacity: {capacity}",
        yaml::string(&world.cluster.name),
    );
    if let Some(db) = &world.db {
        write_rds(&mut body, db, notes);
    }
    if !world.kafka.is_empty() {
        body.push_str("\nkafka:\n");
        for (k, key) in world.kafka.iter().zip(keys) {
            write_kafka(&mut body, k, key, notes);
        }
    }
    body.push_str("\nservices:\n");
    let defaults = Defaults::choose(services);
    write_defaults(&mut body, &defaults);
    for s in services {
        body.push('\n');
        write_service(&mut body, s, &defaults);
    }

    let mut head = format!(
        "# Imported by `envctl import` from the ECS cluster {} ({} services){}{}.\n",
        world.cluster.name,
        services.len(),
        if world.kafka.is_empty() {
            String::new()
        } else {
            format!(
                ", MSK {}",
                world
                    .kafka
                    .iter()
                    .map(|k| k.live.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        world
            .db
            .as_ref()
            .map(|d| format!(", RDS {}", d.writer.identifier))
            .unwrap_or_default()
    );
    if options.capacity.is_some() {
        head.push_str(
            "# ecs.capacity's size is from the command line (envctl does not read container instances).\n",
        );
    }
    if notes.is_empty() {
        head.push_str("# Everything read is expressed below.\n");
    } else {
        head.push_str("# Not expressed in envctl's terms (kept verbatim or left out):\n");
        for n in notes.iter() {
            head.push_str(&format!("#   - {n}\n"));
        }
    }
    head + &body
}

fn write_rds(out: &mut String, db: &super::ImportedDb, notes: &mut Vec<String>) {
    let w = &db.writer;
    let _ = writeln!(out, "\nrds:\n  writer:");
    let _ = writeln!(out, "    id: {}", yaml::string(&w.identifier));
    let _ = writeln!(out, "    class: {}", yaml::string(&w.class));
    if w.engine != "postgres" {
        notes.push(format!(
            "rds {}: engine {} (envctl manages postgres only); written as is and will not validate",
            w.identifier, w.engine
        ));
        let _ = writeln!(out, "    engine: {}", yaml::string(&w.engine));
    }
    if !w.engine_version.is_empty() {
        let _ = writeln!(out, "    engine_version: {}", yaml::json(&w.engine_version));
    }
    let _ = writeln!(out, "    storage_gb: {}", w.storage_gb);
    if !db.parameters.is_empty() {
        let _ = writeln!(out, "    parameters:");
        map_lines(out, "      ", &db.parameters, true);
    }
    let expected = crate::model::parameter_group_name(
        &w.identifier,
        &crate::model::parameter_family(Some(&w.engine_version)),
    );
    if let Some(group) = &w.parameter_group
        && !group.starts_with("default.")
        && *group != expected
    {
        notes.push(format!(
            "rds {}: its parameter group is {group}; envctl manages the parameters in a group named {expected}, so plan shows that group created and the instances moved to it",
            w.identifier
        ));
    }
    if !db.readers.is_empty() {
        let _ = writeln!(out, "  readers:");
        for r in &db.readers {
            if r.class == w.class {
                let _ = writeln!(out, "    - {{id: {}}}", yaml::string(&r.identifier));
            } else {
                let _ = writeln!(
                    out,
                    "    - {{id: {}, class: {}}}",
                    yaml::string(&r.identifier),
                    yaml::string(&r.class)
                );
            }
        }
    }
}

fn write_kafka(out: &mut String, k: &super::ImportedKafka, key: &str, notes: &mut Vec<String>) {
    let l = &k.live;
    let kraft = l.kraft();
    let version = l.kafka_version.trim_end_matches(".kraft");
    let _ = writeln!(out, "  {}:", yaml::string(key));
    let _ = writeln!(out, "    name: {}", yaml::string(&l.name));
    let _ = writeln!(out, "    broker_type: {}", yaml::string(&l.broker_type));
    let _ = writeln!(out, "    brokers: {}", l.brokers);
    let _ = writeln!(out, "    zones: {}", l.client_subnets.len().max(1));
    let _ = writeln!(out, "    version: {}", yaml::json(version));
    let _ = writeln!(
        out,
        "    metadata: {}",
        if kraft { "kraft" } else { "zookeeper" }
    );
    let _ = writeln!(out, "    storage_gb: {}", l.storage_gb);
    // The env's default is TLS_PLAINTEXT; another setting decides which bootstrap string
    // the services get, so it is written.
    if let Some(cb) = k
        .client_broker
        .as_deref()
        .filter(|cb| *cb != "TLS_PLAINTEXT")
    {
        let _ = writeln!(out, "    client_broker: {cb}");
    }
    let expected = crate::model::kafka_configuration_name(&l.name, &l.kafka_version);
    match (&k.configuration_name, &k.server_properties) {
        (Some(name), Some(text)) => {
            if *name != expected {
                notes.push(format!(
                    "kafka {}: its configuration is {name}; envctl keeps server properties in a configuration named {expected}, so plan shows that configuration created",
                    l.name
                ));
            }
            let props = properties(text);
            if !props.is_empty() {
                let _ = writeln!(out, "    properties:");
                map_lines(out, "      ", &props, true);
            }
        }
        _ => notes.push(format!(
            "kafka {}: it uses MSK's default configuration; envctl will create {expected}",
            l.name
        )),
    }
}

/// `ecs.capacity` from the cluster's capacity providers, `--capacity` overriding the size:
/// - envctl's own Managed Instances provider (`envctl-<cluster>`, which every service's
///   strategy names): `managed_instances` with its instance types and roles, so plan manages
///   the provider and destroy deletes it. Its `max` is envctl's budget, which ECS does not
///   know: `--capacity`'s count, else one instance per task (what can never be too few;
///   lower it to the fleet you mean to pay for);
/// - another provider every service's strategy names: `provider:` (used, never changed;
///   written as fixed instances, the plan would replace every service, since UpdateService
///   cannot set a launch type), sized by `--capacity` or its Managed Instances types;
/// - otherwise registered instances of `--capacity`'s size.
///
/// Providers of the cluster that the env does not express are notes.
fn capacity(
    world: &super::ImportedWorld,
    options: &super::ImportOptions,
    services: &[ServiceEntry],
    notes: &mut Vec<String>,
) -> String {
    let shared = shared_provider(&world.services);
    let own = crate::model::managed_instances_provider_name(&world.cluster.name);
    let tasks: u32 = services.iter().map(|s| s.count).sum::<u32>().max(1);
    let mut expressed = None;
    let line = match world
        .capacity_providers
        .iter()
        .find(|cp| Some(&cp.name) == shared.as_ref())
    {
        Some(
            cp @ super::ImportedProvider {
                managed: Some(m), ..
            },
        ) if cp.name == own => {
            expressed = Some(cp.name.clone());
            let max = options.capacity.as_ref().map_or(tasks, |(_, n)| *n);
            let types: Vec<String> = m.instance_types.iter().map(|t| yaml::string(t)).collect();
            format!(
                "{{managed_instances: {{instance_types: [{}], instances: {{min: 0, max: {max}}}, infrastructure_role: {}, instance_profile: {}}}}}",
                types.join(", "),
                yaml::string(&m.infrastructure_role),
                yaml::string(&m.instance_profile)
            )
        }
        Some(cp) => {
            expressed = Some(cp.name.clone());
            let (kind, count) = options.capacity.clone().unwrap_or_else(|| {
                let first = cp
                    .managed
                    .as_ref()
                    .and_then(|m| m.instance_types.first().cloned())
                    .unwrap_or_else(|| "m6i.2xlarge".into());
                (first, tasks)
            });
            format!(
                "{{provider: {}, instance_type: {}, instances: {count}}}",
                yaml::string(&cp.name),
                yaml::string(&kind)
            )
        }
        None => {
            let (kind, count) = options
                .capacity
                .clone()
                .unwrap_or_else(|| ("m6i.2xlarge".into(), tasks));
            if options.capacity.is_none() {
                notes.push(format!(
                    "ecs cluster {}: its services run on registered container instances, which envctl does not read: ecs.capacity is a guess ({kind} x {count}); pass --capacity TYPE:COUNT",
                    world.cluster.name
                ));
            }
            format!(
                "{{instance_type: {}, instances: {count}}}",
                yaml::string(&kind)
            )
        }
    };
    for cp in &world.capacity_providers {
        if Some(&cp.name) != expressed.as_ref() {
            notes.push(format!(
                "ecs capacity provider {} ({}) of cluster {}: no service runs on it alone; not imported, so plan does not manage it and destroy leaves it",
                cp.name, cp.kind, world.cluster.name
            ));
        }
    }
    line
}

/// The capacity provider every service's strategy names alone (weight 1, as envctl places
/// services), if there is one: what `ecs.capacity.provider` expresses. None when a service
/// runs on a launch type, on several providers, or its placement was not read.
fn shared_provider(services: &[crate::model::live::LiveService]) -> Option<String> {
    let mut found: Option<&str> = None;
    for s in services {
        let placement = s.placement.as_ref()?;
        let [(name, 1)] = placement.strategy.as_slice() else {
            return None;
        };
        match found {
            Some(f) if f != name => return None,
            _ => found = Some(name),
        }
    }
    found.map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags_split_but_registry_ports_and_digests_do_not() {
        assert_eq!(
            split_image("folioorg/mod-users:19.2.0"),
            ("folioorg/mod-users".into(), Some("19.2.0".into()))
        );
        assert_eq!(
            split_image("registry:5000/mod-users"),
            ("registry:5000/mod-users".into(), None)
        );
        assert_eq!(
            split_image("a/b@sha256:abc"),
            ("a/b@sha256:abc".into(), None)
        );
    }

    #[test]
    fn ttl_comes_from_the_creation_and_expiry_tags() {
        let c = epoch("2026-11-30T22:00:00Z").unwrap();
        let e = epoch("2026-12-02T22:00:00Z").unwrap();
        assert_eq!(duration(e - c), "2d");
        assert_eq!(duration(5400), "90m");
        assert_eq!(epoch("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch("yesterday"), None);
    }

    #[test]
    fn shared_needs_two_services_and_half_of_them() {
        assert_eq!(shared([1, 1, 2].into_iter()), Some(1));
        assert_eq!(shared([1, 2, 3].into_iter()), None);
        assert_eq!(shared([1].into_iter()), None);
        assert_eq!(shared([1, 1, 2, 2].into_iter()), Some(2));
    }

    #[test]
    fn properties_skip_comments() {
        let p = properties("# c\nauto.create.topics.enable=true\n\nlog.retention.minutes = 480\n");
        assert_eq!(p.len(), 2);
        assert_eq!(p["log.retention.minutes"], "480");
    }
}
