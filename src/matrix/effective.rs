//! The configuration AWS actually ran at a point, read back from the live state (not from
//! the spec), for the report's "what differed" table.
use crate::model::DesiredState;
use crate::model::live::LiveState;
use crate::plan::diff::normalize_properties;
use crate::results::{EffectiveConfig, EffectiveDb, EffectiveKafka, EffectiveService};
use crate::spec::deferred::Outputs;

pub fn effective(desired: &DesiredState, live: &LiveState) -> EffectiveConfig {
    let mut out = EffectiveConfig::default();
    for (name, s) in &live.services {
        if !desired.services.contains_key(name) {
            continue;
        }
        let mut e = EffectiveService {
            task_definition: envctl_aws_model::arn::resource_name(&s.task_definition).to_string(),
            desired_count: s.desired_count,
            running_count: s.running_count,
            ..EffectiveService::default()
        };
        if let Some(c) = live
            .task_definitions
            .get(&s.task_definition)
            .and_then(|td| td.container_definitions.first())
        {
            e.image = c.image.clone();
            e.cpu = c.cpu;
            e.memory = c.memory;
            e.memory_reservation = c.memory_reservation;
            let none = Outputs::new();
            e.environment = c
                .environment
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.resolve(&none).unwrap_or_else(|_| v.to_string()),
                    )
                })
                .collect();
            e.secrets = c
                .secrets
                .iter()
                .map(|s| (s.name.clone(), s.value_from.to_string()))
                .collect();
        }
        out.services.insert(name.clone(), e);
    }
    for k in desired.kafka.values() {
        if let Some(l) = live.kafka.get(&k.name) {
            let properties = live
                .kafka_configurations
                .get(&k.configuration.name)
                .map(|c| normalize_properties(&c.server_properties))
                .unwrap_or_default();
            out.kafka.insert(
                k.name.clone(),
                EffectiveKafka {
                    state: l.state.clone(),
                    broker_type: l.broker_type.clone(),
                    brokers: l.brokers,
                    kafka_version: l.kafka_version.clone(),
                    storage_gb: l.storage_gb,
                    server_properties: properties,
                },
            );
        }
    }
    for (id, db) in &live.db_instances {
        out.rds.insert(
            id.clone(),
            EffectiveDb {
                role: if db.source.is_some() {
                    "reader".into()
                } else {
                    "writer".into()
                },
                class: db.class.clone(),
                status: db.status.clone(),
                engine_version: db.engine_version.clone(),
            },
        );
    }
    out
}
