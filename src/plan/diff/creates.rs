//! The creates the planner decides, each with the request it will send (`model::requests`)
//! and placeholders for what AWS hands out during the run: the one place where the desired
//! state becomes a create's request, so the executor never reads the spec.
use crate::model::live::LiveState;
use crate::model::{DbInstance, DbParameterGroup, DesiredState, EcsService, KafkaCluster};
use crate::model::{ManagedCapacity, requests};
use crate::plan::op::{Create, MasterSecret, ProviderCreate, ServiceRevision};
use crate::plan::placeholder::{ConfigurationRevision, Placeholder, Planned};

/// The env's cluster, with the existing provider it names attached.
pub(super) fn ecs_cluster(desired: &DesiredState) -> Create {
    let attach = match &desired.cluster.capacity {
        crate::model::ClusterCapacity::Provider { name } => Some(name.clone()),
        _ => None,
    };
    Create::EcsCluster {
        name: desired.cluster.name.clone(),
        attach,
    }
}

/// The owned Managed Instances provider, in the env's network; `wait_only` when an earlier
/// run created it and it is still PROVISIONING.
pub(super) fn capacity_provider(
    desired: &DesiredState,
    m: &ManagedCapacity,
    wait_only: bool,
) -> Create {
    Create::CapacityProvider(ProviderCreate {
        cluster: desired.cluster.name.clone(),
        name: m.provider.clone(),
        settings: m.settings(&desired.subnets, &desired.security_groups),
        wait_only,
    })
}

/// The service's revision is registered (or an identical one reused) during the run: its
/// content may name endpoints only the run learns.
pub(super) fn ecs_service(
    desired: &DesiredState,
    service: &EcsService,
    request: requests::CreateService,
) -> Create {
    Create::EcsService {
        register: requests::register_task_definition(desired, service),
        request,
        revision: Planned::after_apply(Placeholder::TaskDefinitionRevision {
            family: service.task_definition.family.clone(),
        }),
    }
}

/// A new revision of the service's content for an update: registered, or an identical one
/// reused, during the run.
pub(super) fn service_revision(desired: &DesiredState, service: &EcsService) -> ServiceRevision {
    ServiceRevision::Register {
        register: requests::register_task_definition(desired, service),
        arn: Planned::after_apply(Placeholder::TaskDefinitionRevision {
            family: service.task_definition.family.clone(),
        }),
    }
}

/// The description that marks a configuration as the env's (MSK configurations take no
/// tags; `apply::existing` reads the mark back).
pub fn configuration_description(env: &str) -> String {
    format!("envctl:env={env} managed by envctl")
}

pub(super) fn kafka_configuration(desired: &DesiredState, cluster: &KafkaCluster) -> Create {
    Create::KafkaConfiguration {
        request: requests::create_configuration(cluster),
        description: configuration_description(&desired.env),
    }
}

/// The cluster on its configuration's revision: the live one when the plan leaves the
/// configuration alone, otherwise the one written earlier in the run.
pub(super) fn kafka_cluster(
    desired: &DesiredState,
    live: &LiveState,
    cluster: &KafkaCluster,
    configuration_written: bool,
) -> Create {
    Create::KafkaCluster {
        name: cluster.name.clone(),
        request: requests::create_cluster(desired, cluster),
        configuration: configuration_revision(live, cluster, configuration_written),
        security_protocol: cluster.security_protocol.clone(),
    }
}

/// The configuration revision a cluster is to run: the live latest when the plan does not
/// write the configuration, otherwise the revision the run writes (a placeholder).
pub(super) fn configuration_revision(
    live: &LiveState,
    cluster: &KafkaCluster,
    configuration_written: bool,
) -> Planned<ConfigurationRevision> {
    let known = live
        .kafka_configurations
        .get(&cluster.configuration.name)
        .filter(|_| !configuration_written)
        .map(|c| ConfigurationRevision {
            arn: c.arn.clone(),
            revision: c.latest_revision,
        });
    match known {
        Some(c) => Planned::Known(c),
        None => Planned::after_apply(Placeholder::KafkaConfiguration {
            key: cluster.key.clone(),
        }),
    }
}

pub(super) fn db_parameter_group(desired: &DesiredState, group: &DbParameterGroup) -> Create {
    Create::DbParameterGroup {
        request: requests::create_db_parameter_group(desired, group),
    }
}

/// The writer or a replica; the writer with its owned subnet group and its master secret
/// (whose ARN the run learns when it creates it).
pub(super) fn db_instance(desired: &DesiredState, instance: &DbInstance) -> Create {
    let mut request = requests::create_db_instance(desired, instance, &desired.security_groups);
    let subnet_group = request.create_subnet_group.take();
    let master_secret = request.master_secret_name.take().map(|name| MasterSecret {
        description: format!(
            "envctl: master credentials of the {} DB writer (env {})",
            name, desired.env
        ),
        arn: Planned::after_apply(Placeholder::MasterSecret { name: name.clone() }),
        name,
    });
    Create::DbInstance {
        request,
        subnet_group,
        master_secret,
        role: db_role(desired, &instance.identifier).map(str::to_string),
    }
}

/// The outputs an instance publishes: `rds.writer.*`, `rds.reader.*` (the first replica).
pub fn db_role(desired: &DesiredState, identifier: &str) -> Option<&'static str> {
    let db = desired.db.as_ref()?;
    if db.writer.identifier == identifier {
        Some("writer")
    } else if db
        .readers
        .first()
        .is_some_and(|r| r.identifier == identifier)
    {
        Some("reader")
    } else {
        None
    }
}

pub(super) fn log_group(name: &str, retention_days: Option<u32>) -> Create {
    Create::LogGroup {
        name: name.to_string(),
        retention_days,
    }
}
