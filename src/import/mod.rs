//! `envctl import`: live descriptions of an ECS cluster, MSK clusters and DB instances turned
//! into an env file in envctl's own idiom (shared templates, `services.defaults`, `jvm:`,
//! `log_level`, `rw_split`, endpoints as references, secrets as ARNs). Pure: the adapter
//! (`account::import`) reads, this module writes text, the command puts it on disk.
mod document;
pub mod jvm;
mod template;
mod yaml;

use std::collections::{BTreeMap, BTreeSet};

use crate::model::TaskDefinition;
use crate::model::live::{LiveCluster, LiveDb, LiveKafka, LiveService};

/// The tag `envctl park` leaves on a service it scaled to 0: the count to restore.
pub const PARKED_COUNT_TAG: &str = "envctl:parked-count";

/// Everything import reads, as the adapter returns it.
#[derive(Debug, Clone)]
pub struct ImportedWorld {
    pub region: String,
    pub cluster: LiveCluster,
    /// Sorted by name.
    pub services: Vec<LiveService>,
    /// Each service's current revision, by ARN.
    pub task_definitions: BTreeMap<String, TaskDefinition>,
    /// In the order of the command line.
    pub kafka: Vec<ImportedKafka>,
    pub db: Option<ImportedDb>,
    /// The cluster's capacity providers other than FARGATE's: attached to it, or scoped to it
    /// (a Managed Instances provider names its cluster). Not expressed in the env (it gets
    /// `--capacity`'s fixed instances), so each is a note: plan would not manage it and
    /// destroy would leave it.
    pub capacity_providers: Vec<ImportedProvider>,
}

/// A capacity provider of the imported cluster, as DescribeCapacityProviders shows it.
#[derive(Debug, Clone)]
pub struct ImportedProvider {
    pub name: String,
    /// MANAGED_INSTANCES, EC2_AUTOSCALING.
    pub kind: String,
    /// A Managed Instances provider's settings (instance types, roles).
    pub managed: Option<crate::model::ManagedInstancesSettings>,
}

#[derive(Debug, Clone)]
pub struct ImportedKafka {
    pub live: LiveKafka,
    /// Name of the configuration the cluster uses, if any.
    pub configuration_name: Option<String>,
    /// server.properties of the revision the cluster uses.
    pub server_properties: Option<String>,
    pub security_groups: Vec<String>,
    /// `EncryptionInTransit.ClientBroker` as its bootstrap strings show it.
    pub client_broker: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ImportedDb {
    pub writer: LiveDb,
    /// Replicas of the writer, sorted by identifier (the first is `db.reader`).
    pub readers: Vec<LiveDb>,
    /// User-set parameters of the writer's group (none for a `default.` group).
    pub parameters: BTreeMap<String, String>,
    pub security_groups: Vec<String>,
}

/// What the command line adds.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub env: String,
    /// `--owner`; otherwise the cluster's `envctl:owner` tag.
    pub owner: Option<String>,
    /// `--capacity TYPE:COUNT`: overrides what the capacity providers say, and sizes a
    /// cluster of registered instances (envctl does not read container instances).
    pub capacity: Option<(String, u32)>,
    /// The template directory as the env file refers to it (`../task-defs`).
    pub template_dir: String,
}

/// The files import writes.
#[derive(Debug, Clone)]
pub struct Imported {
    pub env_yaml: String,
    /// File name (in the template directory) and text.
    pub templates: Vec<(String, String)>,
    /// What could not be expressed, also listed at the top of the env file.
    pub notes: Vec<String>,
}

/// Endpoints of the imported data stores, as task definitions contain them.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    /// (address, port) of the writer and the first reader.
    pub writer: Option<(String, String)>,
    pub reader: Option<(String, String)>,
    pub kafka: Vec<KafkaEndpoint>,
    /// The writer's RDS-managed master secret: a service secret naming it is written as
    /// `${rds.writer.master_secret_arn}`, which follows a replaced writer.
    pub master_secret_arn: Option<String>,
}

#[derive(Debug, Clone)]
pub struct KafkaEndpoint {
    pub key: String,
    pub bootstrap: String,
    pub host: String,
    pub port: String,
}

/// Keys under `kafka:`: `main` for one cluster, otherwise the names without the env prefix.
fn kafka_keys(env: &str, clusters: &[ImportedKafka]) -> Vec<String> {
    if clusters.len() == 1 {
        return vec!["main".into()];
    }
    let mut keys: Vec<String> = Vec::new();
    for (i, k) in clusters.iter().enumerate() {
        let name = k.live.name.to_ascii_lowercase();
        let short = name
            .strip_prefix(&format!("{env}-"))
            .unwrap_or(&name)
            .trim_start_matches("msk-")
            .to_string();
        let mut key: String = short
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        if key.is_empty() || !key.starts_with(|c: char| c.is_ascii_lowercase()) {
            key = format!("kafka{}", i + 1);
        }
        while keys.contains(&key) {
            key.push_str(&format!("-{}", i + 1));
        }
        keys.push(key);
    }
    keys
}

fn endpoints(world: &ImportedWorld, keys: &[String]) -> Endpoints {
    let pair = |d: &LiveDb| d.address.clone().zip(d.port.map(|p| p.to_string()));
    Endpoints {
        writer: world.db.as_ref().and_then(|db| pair(&db.writer)),
        master_secret_arn: world
            .db
            .as_ref()
            .and_then(|db| db.writer.master_secret_arn.clone()),
        reader: world
            .db
            .as_ref()
            .and_then(|db| db.readers.first())
            .and_then(pair),
        kafka: world
            .kafka
            .iter()
            .zip(keys)
            .filter_map(|(k, key)| {
                let bootstrap = k.live.bootstrap_brokers.clone()?;
                // As `LiveState::outputs` splits it: the first broker's host and port.
                let first = bootstrap.split(',').next().unwrap_or_default().to_string();
                let (host, port) = first.rsplit_once(':').unwrap_or((&first, "9092"));
                Some(KafkaEndpoint {
                    key: key.clone(),
                    host: host.to_string(),
                    port: port.to_string(),
                    bootstrap,
                })
            })
            .collect(),
    }
}

/// Writes the env document and its templates.
pub fn import(world: &ImportedWorld, options: &ImportOptions) -> Imported {
    let env = options.env.as_str();
    let keys = kafka_keys(env, &world.kafka);
    let endpoints = endpoints(world, &keys);
    let mut notes = Vec::new();

    let mut shapes = Vec::new();
    for s in &world.services {
        match world
            .task_definitions
            .get(&s.task_definition)
            .and_then(|td| template::shape(&s.name, td, env, &world.region, &endpoints))
        {
            Some(shape) => shapes.push((s, shape)),
            None => notes.push(format!(
                "service {}: its task definition {} could not be read; left out",
                s.name, s.task_definition
            )),
        }
    }
    // Literal variables with one value in every service belong to the templates.
    let mut shared: BTreeMap<String, String> = shapes
        .first()
        .map(|(_, s)| s.literals.clone())
        .unwrap_or_default();
    for (_, s) in &shapes {
        shared.retain(|k, v| s.literals.get(k) == Some(v));
    }
    for (_, s) in &mut shapes {
        s.literals.retain(|k, _| !shared.contains_key(k));
        if s.sidecars > 0 {
            notes.push(format!(
                "service {}: {} more container(s) kept verbatim in its template (envctl sizes the first)",
                s.name, s.sidecars
            ));
        }
        for name in &s.withheld {
            notes.push(format!(
                "service {}: `{name}` looks like a secret but is a plain variable: its value was not read into this file; move it to `secrets:` (until then plan shows it removed)",
                s.name
            ));
        }
    }

    // Services that render the same lines share a template; services using more of the
    // optional parts go first so that the others can fit into their templates.
    let mut order: Vec<usize> = (0..shapes.len()).collect();
    order.sort_by_key(|&i| {
        (
            std::cmp::Reverse(shapes[i].1.uses.len()),
            shapes[i].1.name.clone(),
        )
    });
    let mut groups: Vec<(Vec<template::Line>, Vec<usize>)> = Vec::new();
    for i in order {
        let own = template::lines(&shapes[i].1, &shared);
        let uses = &shapes[i].1.uses;
        let mine = template::rendered_by(&own, uses);
        match groups
            .iter_mut()
            .find(|(lines, _)| template::rendered_by(lines, uses) == mine)
        {
            Some((_, members)) => members.push(i),
            None => groups.push((own, vec![i])),
        }
    }
    groups.sort_by_key(|(_, members)| std::cmp::Reverse(members.len()));
    let mut templates = Vec::new();
    let mut template_of: BTreeMap<String, String> = BTreeMap::new();
    for (n, (lines, members)) in groups.iter().enumerate() {
        let file = if n == 0 {
            format!("{env}.yaml")
        } else {
            format!("{env}-{}.yaml", shapes[members[0]].1.name)
        };
        let names: BTreeSet<&str> = members.iter().map(|&i| shapes[i].1.name.as_str()).collect();
        let header = format!(
            "# Task-definition template written by `envctl import` from the live definitions of\n# {} service(s) of the ECS cluster {}. Variables: docs/templates.md.\n",
            names.len(),
            world.cluster.name
        );
        templates.push((file.clone(), template::text(&header, lines)));
        for name in names {
            template_of.insert(name.to_string(), format!("{}/{file}", options.template_dir));
        }
    }

    let services: Vec<document::ServiceEntry> = shapes
        .iter()
        .map(|(live, shape)| {
            let count = match live.tags.get(PARKED_COUNT_TAG) {
                Some(parked) if live.desired_count == 0 => {
                    parked.parse().unwrap_or(live.desired_count)
                }
                _ => live.desired_count,
            };
            document::ServiceEntry::new(
                shape,
                count,
                template_of.get(&shape.name).cloned().unwrap_or_default(),
            )
        })
        .collect();
    let env_yaml = document::write(world, options, &keys, &services, &mut notes);
    Imported {
        env_yaml,
        templates,
        notes,
    }
}

#[cfg(test)]
mod tests;
