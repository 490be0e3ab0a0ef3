//! Lowering a decoded spec to the desired state: templates rendered, defaults filled,
//! names derived, references to other resources' outputs kept as references.
use std::collections::BTreeMap;

use minijinja::context;

use super::task_definition::{
    ContainerDefinition, LogConfiguration, PortMapping, SecretRef, TaskDefinition,
};
use super::template::TemplateCache;
use super::{
    ClusterCapacity, Database, DbInstance, DbParameterGroup, DbSubnetGroup, DesiredState,
    EcsCluster, EcsService, KafkaCluster, KafkaConfiguration, ManagedCapacity,
    managed_instances_provider_name, tag,
};
use crate::spec::decode::{At, Decode, Decoder};
use crate::spec::deferred::{Deferred, MASTER_SECRET_ARN, OutputRef, secret_value_from};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::env::{EnvSpec, MetadataMode, Service};
use crate::spec::load::{LoadedEnv, Loader};
use crate::spec::node::Node;

/// Lowers a loaded env; problems (template errors, bad template output) go to the loader's
/// diagnostics and yield `None`.
pub fn lower(
    loaded: &LoadedEnv,
    loader: &mut Loader,
    templates: &mut TemplateCache,
) -> Option<DesiredState> {
    let spec = &loaded.spec;
    let mut services = BTreeMap::new();
    let mut ok = true;
    for service in spec.services.values() {
        match lower_service(loaded, service, loader, templates) {
            Some(s) => {
                services.insert(s.name.clone(), s);
            }
            None => ok = false,
        }
    }
    let kafka = spec
        .kafka
        .iter()
        .map(|(key, k)| {
            let kraft = k.metadata.value == MetadataMode::Kraft;
            let kafka_version = if kraft {
                format!("{}.kraft", k.version.value)
            } else {
                k.version.value.clone()
            };
            let server_properties: String = k
                .properties
                .iter()
                .map(|(name, value)| format!("{name}={}\n", value.value))
                .collect();
            let configuration_name = super::kafka_configuration_name(&k.name.value, &kafka_version);
            let cluster = KafkaCluster {
                key: key.clone(),
                name: k.name.value.clone(),
                broker_type: k.broker_type.value.clone(),
                brokers: k.brokers.value,
                zones: k.zones.value,
                kafka_version,
                kraft,
                storage_gb: k.storage_gb.value,
                subnets: spec
                    .network
                    .subnets
                    .iter()
                    .take(k.zones.value as usize)
                    .map(|s| s.value.clone())
                    .collect(),
                security_groups: spec
                    .network
                    .security_groups
                    .iter()
                    .map(|s| s.value.clone())
                    .collect(),
                configuration: KafkaConfiguration {
                    name: configuration_name,
                    server_properties,
                },
                client_broker: k.client_broker.value.as_str().to_string(),
                security_protocol: k.client_broker.value.security_protocol().to_string(),
            };
            (key.clone(), cluster)
        })
        .collect();
    let db = spec.rds.as_ref().map(|rds| {
        let w = &rds.writer;
        let parameter_group = (!w.parameters.is_empty()).then(|| {
            let family = parameter_family(w.engine_version.as_ref().map(|v| v.value.as_str()));
            DbParameterGroup {
                name: parameter_group_name(&w.id.value, &family),
                family,
                parameters: w
                    .parameters
                    .iter()
                    .map(|(k, v)| (k.clone(), v.value.0.clone()))
                    .collect(),
            }
        });
        let pg_name = parameter_group.as_ref().map(|p| p.name.clone());
        let subnet_group = match &w.subnet_group {
            Some(existing) => DbSubnetGroup {
                name: existing.value.clone(),
                owned: false,
                subnets: Vec::new(),
            },
            None => DbSubnetGroup {
                name: super::db_subnet_group_name(&w.id.value),
                owned: true,
                subnets: spec
                    .network
                    .subnets
                    .iter()
                    .map(|s| s.value.clone())
                    .collect(),
            },
        };
        Database {
            writer: DbInstance {
                identifier: w.id.value.clone(),
                class: w.class.value.clone(),
                engine: w.engine.value.clone(),
                engine_version: w.engine_version.as_ref().map(|v| v.value.clone()),
                storage_gb: w.storage_gb.value,
                source: None,
                skip_final_snapshot: w.skip_final_snapshot,
                parameter_group: pg_name.clone(),
                database: w.database.value.clone(),
                subnet_group: subnet_group.name.clone(),
            },
            readers: rds
                .readers
                .iter()
                .map(|r| DbInstance {
                    identifier: r.id.value.clone(),
                    class: r.class.as_ref().unwrap_or(&w.class).value.clone(),
                    engine: w.engine.value.clone(),
                    engine_version: w.engine_version.as_ref().map(|v| v.value.clone()),
                    storage_gb: w.storage_gb.value,
                    source: Some(w.id.value.clone()),
                    skip_final_snapshot: true,
                    parameter_group: pg_name.clone(),
                    database: w.database.value.clone(),
                    subnet_group: subnet_group.name.clone(),
                })
                .collect(),
            parameter_group,
            subnet_group,
        }
    });
    let mut tags = BTreeMap::new();
    tags.extend(spec.tags.clone());
    tags.insert(tag::TOOL.to_string(), tag::TOOL_VALUE.to_string());
    tags.insert(tag::ENV.to_string(), spec.env.value.clone());
    tags.insert(tag::OWNER.to_string(), spec.owner.value.clone());
    if let Some(copy) = &loaded.copy {
        tags.insert(tag::COPY.to_string(), copy.to_string());
    }
    if !ok {
        return None;
    }
    Some(DesiredState {
        env: spec.env.value.clone(),
        copy: loaded.copy.clone(),
        region: spec.region.value.clone(),
        tags,
        ttl_secs: spec.ttl.value.secs(),
        subnets: spec
            .network
            .subnets
            .iter()
            .map(|s| s.value.clone())
            .collect(),
        security_groups: spec
            .network
            .security_groups
            .iter()
            .map(|s| s.value.clone())
            .collect(),
        cluster: EcsCluster {
            name: spec.ecs.cluster.value.clone(),
            instance_type: spec.ecs.capacity.instance_type.value.clone(),
            instances: spec.ecs.capacity.instances.value,
            capacity: lower_capacity(&spec.ecs.cluster.value, &spec.ecs.capacity),
        },
        services,
        kafka,
        db,
        log_retention_days: Some(spec.logs.retention_days.value),
        load_log_group: Some(super::load_log_group(&spec.env.value)),
    })
}

fn lower_capacity(cluster: &str, c: &crate::spec::env::Capacity) -> ClusterCapacity {
    if let Some(m) = &c.managed_instances {
        return ClusterCapacity::ManagedInstances(ManagedCapacity {
            provider: managed_instances_provider_name(cluster),
            instance_types: m.instance_types.iter().map(|t| t.value.clone()).collect(),
            max: m.instances.max.value,
            infrastructure_role: m.infrastructure_role.value.clone(),
            instance_profile: m.instance_profile.value.clone(),
        });
    }
    match &c.provider {
        Some(p) => ClusterCapacity::Provider {
            name: p.value.clone(),
        },
        None => ClusterCapacity::Instances,
    }
}

/// The writer's DB parameter group: `<writer>-params-<family>`. A group's family is fixed
/// when it is created (RDS API Reference, CreateDBParameterGroup), so a major version
/// upgrade needs a new group, which RDS requires in the same ModifyDBInstance
/// (docs/aws-behaviour.md, "A major version upgrade takes a parameter group of the new
/// family"); naming the group by family makes the new one a new resource and the old one a
/// leftover the plan deletes after the instances moved off it. Observe reads the group of
/// the writer's family even when the spec sets no parameter any more, so values an earlier
/// spec set are reset rather than left in effect, and destroy still finds the group.
pub fn parameter_group_name(writer: &str, family: &str) -> String {
    format!("{writer}-params-{family}")
}

/// The DB parameter group family for a Postgres version ("16.3" and "16" -> postgres16).
pub fn parameter_family(version: Option<&str>) -> String {
    let major = version.and_then(|v| v.split('.').next()).unwrap_or("16");
    format!("postgres{major}")
}

fn output(name: String) -> String {
    OutputRef(name).marker()
}

fn lower_service(
    loaded: &LoadedEnv,
    s: &Service,
    loader: &mut Loader,
    templates: &mut TemplateCache,
) -> Option<EcsService> {
    let spec: &EnvSpec = &loaded.spec;
    let db = spec.rds.as_ref().map(|rds| {
        let writer = context! {
            id => rds.writer.id.value.clone(),
            host => output("rds.writer.address".into()),
            port => output("rds.writer.port".into()),
            master_secret_arn => output(MASTER_SECRET_ARN.into()),
        };
        let reader = rds.readers.first().map(|r| {
            context! {
                id => r.id.value.clone(),
                host => output("rds.reader.address".into()),
                port => output("rds.reader.port".into()),
            }
        });
        context! { writer => writer, reader => reader, name => rds.writer.database.value.clone() }
    });
    let kafka = s.kafka.as_ref().map(|key| {
        let k = &key.value;
        context! {
            key => k.clone(),
            bootstrap_servers => output(format!("kafka.{k}.bootstrap_brokers")),
            host => output(format!("kafka.{k}.host")),
            port => output(format!("kafka.{k}.port")),
            security_protocol => spec
                .kafka
                .get(k)
                .map(|c| c.client_broker.value.security_protocol())
                .unwrap_or("PLAINTEXT"),
        }
    });
    let jvm = s.jvm.as_ref().map(|j| {
        context! {
            xmx => j.xmx.value,
            metaspace => j.metaspace.as_ref().map(|m| m.value),
            max_metaspace => j.max_metaspace.as_ref().map(|m| m.value),
        }
    });
    let ctx = context! {
        env => context! {
            name => spec.env.value.clone(),
            region => spec.region.value.clone(),
            owner => spec.owner.value.clone(),
            cluster => spec.ecs.cluster.value.clone(),
            network_mode => spec.ecs.capacity.network_mode(),
            compatibility => spec.ecs.capacity.compatibility(),
        },
        service => context! {
            name => s.name.value.clone(),
            image => s.image_ref(),
            count => s.count.value,
            cpu => s.cpu.value,
            memory => context! { hard => s.memory.hard.value, soft => s.memory.soft.as_ref().map(|m| m.value) },
            jvm => jvm,
            java_options => s.jvm.as_ref().map(|j| j.java_options()).unwrap_or_default(),
            log_level => s.log_level.value.as_str(),
            rw_split => s.rw_split.value,
            port => s.port,
        },
        db => db,
        kafka => kafka,
    };
    let path = crate::spec::source::sibling(&loaded.path, &s.template.value);
    let label = format!("service {}", s.name.value);
    let tree = templates.render(loader, &path, s.template.span, &ctx, &label)?;
    let mut decoder = Decoder::new();
    let decoded = decode_task_definition(&tree, &mut decoder);
    let failed = decoder.diagnostics.has_errors();
    for mut diag in decoder.diagnostics.iter().cloned() {
        diag = diag.with_note(s.template.span, "template used here");
        loader.diagnostics.push(diag);
    }
    if failed {
        return None;
    }
    let mut task_definition = decoded?;
    // The env's roles apply to every task definition whose template names none.
    if task_definition.execution_role_arn.is_none() {
        task_definition.execution_role_arn =
            spec.ecs.execution_role.as_ref().map(|r| r.value.clone());
    }
    if task_definition.task_role_arn.is_none() {
        task_definition.task_role_arn = spec.ecs.task_role.as_ref().map(|r| r.value.clone());
    }
    // ECS places a task definition on a Managed Instances provider only when it was
    // validated for it (Developer Guide, "Amazon ECS task definition parameters for Amazon
    // ECS Managed Instances"; aws/aws-cdk#36098): say so here, not at CreateService.
    if spec.ecs.capacity.managed_instances.is_some()
        && !task_definition
            .requires_compatibilities
            .iter()
            .any(|c| c == "MANAGED_INSTANCES")
    {
        loader.diagnostics.push(
            Diagnostic::error(
                "task-definition-not-managed-instances",
                s.template.span,
                format!(
                    "{}: the task definition's requiresCompatibilities ({}) lacks MANAGED_INSTANCES, and ECS refuses to place it on the env's Managed Instances capacity provider",
                    s.name.value,
                    task_definition.requires_compatibilities.join(", ")
                ),
            )
            .with_hint("write `requiresCompatibilities: [{{ env.compatibility | tojson }}]` in the template (MANAGED_INSTANCES on Managed Instances, EC2 otherwise)"),
        );
        return None;
    }

    // The service's own variables and secrets are added after the template's and win, so
    // templates stay generic.
    if let Some(container) = task_definition.container_definitions.first_mut() {
        for (name, value) in &s.environment {
            container
                .environment
                .insert(name.clone(), Deferred::literal(value.value.0.clone()));
        }
        for (name, arn) in &s.secrets {
            let value_from = match secret_value_from(&arn.value) {
                Ok(v) => v,
                Err(unknown) => {
                    loader.diagnostics.push(
                        Diagnostic::error(
                            "unknown-secret-reference",
                            arn.span,
                            format!("{}: {name} refers to {unknown}, which envctl does not publish", s.name.value),
                        )
                        .with_hint("a secret may refer to ${rds.writer.master_secret_arn} (the RDS-managed master password, e.g. \"${rds.writer.master_secret_arn}:password::\"); otherwise give the secret's ARN"),
                    );
                    return None;
                }
            };
            if value_from.refs().next().is_some() && spec.rds.is_none() {
                loader.diagnostics.push(
                    Diagnostic::error(
                        "unknown-secret-reference",
                        arn.span,
                        format!(
                            "{}: {name} refers to the RDS master secret, but the env has no `rds:`",
                            s.name.value
                        ),
                    )
                    .with_hint("give the secret's ARN"),
                );
                return None;
            }
            container.secrets.retain(|x| &x.name != name);
            container.secrets.push(SecretRef {
                name: name.clone(),
                value_from,
            });
        }
        container.secrets.sort_by(|a, b| a.name.cmp(&b.name));
    }
    // RegisterTaskDefinition refuses container secrets without an execution role
    // (ClientException), so say it here, at the secret.
    if task_definition.execution_role_arn.is_none()
        && task_definition
            .container_definitions
            .iter()
            .any(|c| !c.secrets.is_empty())
    {
        let span = s
            .secrets
            .values()
            .next()
            .map(|v| v.span)
            .unwrap_or(s.template.span);
        loader.diagnostics.push(
            Diagnostic::error(
                "secrets-without-execution-role",
                span,
                format!(
                    "{}: container secrets need an execution role, and neither `ecs.execution_role` nor the template's `executionRoleArn` is set",
                    s.name.value
                ),
            )
            .with_hint(
                "set `ecs.execution_role: arn:aws:iam::<account>:role/<name>` (a role ECS can assume that may read these secrets)",
            ),
        );
        return None;
    }
    let mut depends_on: Vec<String> = task_definition
        .unresolved()
        .iter()
        .map(|r| r.resource().to_string())
        .collect();
    depends_on.dedup();
    Some(EcsService {
        name: s.name.value.clone(),
        desired_count: s.count.value,
        task_definition,
        depends_on,
    })
}

const TASK_DEF_FIELDS: &[&str] = &[
    "family",
    "networkMode",
    "requiresCompatibilities",
    "taskRoleArn",
    "executionRoleArn",
    "containerDefinitions",
];
const CONTAINER_FIELDS: &[&str] = &[
    "name",
    "image",
    "cpu",
    "memory",
    "memoryReservation",
    "essential",
    "portMappings",
    "environment",
    "secrets",
    "logConfiguration",
];

fn decode_task_definition(node: &Node, d: &mut Decoder) -> Option<TaskDefinition> {
    let f = d.fields(node, "a task definition", TASK_DEF_FIELDS)?;
    let family: Option<String> = f.req(d, "family");
    let network_mode = f.or(d, "networkMode", "bridge".to_string());
    let requires_compatibilities = f.or(d, "requiresCompatibilities", vec!["EC2".to_string()]);
    let task_role_arn = f.opt(d, "taskRoleArn");
    let execution_role_arn = f.opt(d, "executionRoleArn");
    let containers = match f.node("containerDefinitions") {
        Some(n) => match &n.kind {
            crate::spec::node::NodeKind::Seq(items) if !items.is_empty() => {
                let decoded: Vec<Option<ContainerDefinition>> = items
                    .iter()
                    .map(|i| decode_container(i, d, &network_mode))
                    .collect();
                decoded.into_iter().collect::<Option<Vec<_>>>()
            }
            _ => {
                d.type_error(n, "a non-empty list of container definitions");
                None
            }
        },
        None => {
            d.error(Diagnostic::error(
                "missing-field",
                f.span,
                "the task definition has no `containerDefinitions`",
            ));
            None
        }
    };
    Some(TaskDefinition {
        family: family?,
        network_mode,
        requires_compatibilities,
        task_role_arn,
        execution_role_arn,
        container_definitions: containers?,
    })
}

fn decode_container(
    node: &Node,
    d: &mut Decoder,
    network_mode: &str,
) -> Option<ContainerDefinition> {
    let f = d.fields(node, "a container definition", CONTAINER_FIELDS)?;
    let name = f.req(d, "name");
    let image = f.req(d, "image");
    let cpu = f.req(d, "cpu");
    let memory = f.req(d, "memory");
    let memory_reservation = f.opt(d, "memoryReservation");
    let essential = f.or(d, "essential", true);
    let port_mappings = match f.node("portMappings") {
        Some(n) => decode_ports(n, d, network_mode),
        None => Some(Vec::new()),
    };
    let environment = match f.node("environment") {
        Some(n) => decode_environment(n, d),
        None => Some(BTreeMap::new()),
    };
    let secrets: Option<BTreeMap<String, String>> = f.opt(d, "secrets");
    let log_configuration = match f.node("logConfiguration") {
        Some(n) => {
            let lf = d.fields(n, "a log configuration", &["logDriver", "options"]);
            lf.and_then(|lf| {
                let driver = lf.req(d, "logDriver");
                let options = lf.or(d, "options", BTreeMap::<String, String>::new());
                driver.map(|log_driver| LogConfiguration {
                    log_driver,
                    options,
                })
            })
        }
        None => None,
    };
    Some(ContainerDefinition {
        name: name?,
        image: image?,
        cpu: cpu?,
        memory: memory?,
        memory_reservation,
        essential,
        port_mappings: port_mappings?,
        environment: environment?,
        secrets: secrets
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value_from): (String, String)| SecretRef {
                name,
                // A template may name `{{ db.writer.master_secret_arn }}`: its marker becomes
                // the reference.
                value_from: Deferred::parse(&value_from)
                    .unwrap_or_else(|| Deferred::literal(value_from)),
            })
            .collect(),
        log_configuration,
    })
}

/// Port mappings as ECS stores them: in `awsvpc` and `host` mode a `hostPort` left out (or
/// 0) is the container port, and any other value must equal it (API reference,
/// PortMapping; RegisterTaskDefinition answers "When networkMode=awsvpc, the host ports and
/// container ports in port mappings must match.", pulumi/pulumi-awsx#935). Sending what ECS
/// stores keeps the next plan from seeing a port change on every service.
fn decode_ports(node: &Node, d: &mut Decoder, network_mode: &str) -> Option<Vec<PortMapping>> {
    let crate::spec::node::NodeKind::Seq(items) = &node.kind else {
        d.type_error(node, "a list of port mappings");
        return None;
    };
    let mut out = Vec::new();
    for item in items {
        let f = d.fields(
            item,
            "a port mapping",
            &["containerPort", "hostPort", "protocol"],
        )?;
        let container_port: Option<u16> = f.req(d, "containerPort");
        let mut host_port = f.or(d, "hostPort", 0u16);
        let protocol = f.or(d, "protocol", "tcp".to_string());
        let container_port = container_port?;
        if network_mode == "awsvpc" || network_mode == "host" {
            if host_port == 0 {
                host_port = container_port;
            } else if host_port != container_port {
                let span = f.node("hostPort").map(|n| n.span).unwrap_or(item.span);
                d.error(
                    Diagnostic::error(
                        "host-port-mismatch",
                        span,
                        format!(
                            "in networkMode {network_mode} the hostPort ({host_port}) must equal the containerPort ({container_port}): ECS refuses the task definition"
                        ),
                    )
                    .with_hint(format!(
                        "leave `hostPort` out (ECS uses {container_port}), or use bridge mode for a different host port"
                    )),
                );
                return None;
            }
        }
        out.push(PortMapping {
            container_port,
            host_port,
            protocol,
        });
    }
    Some(out)
}

fn decode_environment(node: &Node, d: &mut Decoder) -> Option<BTreeMap<String, Deferred>> {
    let entries = d.named(node, "environment variables")?;
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        let text: At<crate::spec::decode::Scalar> = At::decode(value, d)?;
        match Deferred::parse(&text.value.0) {
            Some(v) => {
                out.insert(key.name.clone(), v);
            }
            None => d.error(Diagnostic::error(
                "template-output",
                value.span,
                format!("`{}` holds a broken endpoint reference", key.name),
            )),
        }
    }
    Some(out)
}
