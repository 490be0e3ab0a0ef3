//! The AWS calls of load engines: the engine task definition (Fargate, awsvpc), RunTask in
//! batches of at most 10, DescribeTasks, StopTask, and the S3 objects engines read and
//! write (plans, the barrier, results).
use aws_sdk_ecs::Client as Ecs;
use aws_sdk_ecs::types::{
    AssignPublicIp, AwsVpcConfiguration, CapacityProviderStrategyItem, Compatibility,
    ContainerDefinition, ContainerOverride, CpuArchitecture, KeyValuePair, LaunchType,
    LogConfiguration, LogDriver, NetworkConfiguration, NetworkMode, OsFamily, RuntimePlatform, Tag,
    TaskOverride,
};
use aws_sdk_s3::Client as S3;
use aws_sdk_s3::primitives::ByteStream;
use envctl_aws_model::ErrorCode;
use envctl_aws_model::operation::EcsOp;

use super::error::AwsError;

/// The engine task definition as envctl registers it (rendered from its template).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EngineTaskDefinition {
    pub family: String,
    pub network_mode: String,
    pub requires_compatibilities: Vec<String>,
    /// Task-level CPU units and memory MiB (Fargate needs both).
    pub cpu: String,
    pub memory: String,
    #[serde(default)]
    pub execution_role_arn: Option<String>,
    #[serde(default)]
    pub task_role_arn: Option<String>,
    /// The OS and CPU architecture the image is built for (`runtimePlatform`): an image of
    /// another architecture fails at start with `exec format error`.
    #[serde(default)]
    pub runtime_platform: Option<EngineRuntimePlatform>,
    pub container_definitions: Vec<EngineContainer>,
}

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EngineRuntimePlatform {
    /// `LINUX`.
    pub operating_system_family: String,
    /// `X86_64` or `ARM64`.
    pub cpu_architecture: String,
}

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EngineContainer {
    pub name: String,
    pub image: String,
    #[serde(default = "yes")]
    pub essential: bool,
    #[serde(default)]
    pub environment: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub log_configuration: Option<EngineLog>,
    /// Seconds between SIGTERM (StopTask) and SIGKILL (`stopTimeout`; Fargate's default
    /// 30, its maximum 120): the engine's time to put what it measured.
    #[serde(default)]
    pub stop_timeout: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EngineLog {
    pub log_driver: String,
    #[serde(default)]
    pub options: std::collections::BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

fn kv(name: &str, value: &str) -> KeyValuePair {
    KeyValuePair::builder().name(name).value(value).build()
}

fn tags(tags: &[(String, String)]) -> Vec<Tag> {
    tags.iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect()
}

/// Registers the engine task definition with envctl's ownership tags; returns its ARN.
pub async fn register(
    c: &Ecs,
    td: &EngineTaskDefinition,
    owned: &[(String, String)],
) -> Result<String, AwsError> {
    let op = "RegisterTaskDefinition";
    let containers = td
        .container_definitions
        .iter()
        .map(|c| {
            let log = match &c.log_configuration {
                Some(l) => Some(
                    LogConfiguration::builder()
                        .log_driver(LogDriver::from(l.log_driver.as_str()))
                        .set_options(Some(l.options.clone().into_iter().collect()))
                        .build()
                        .map_err(|e| AwsError::local(op, &td.family, e.to_string()))?,
                ),
                None => None,
            };
            Ok(ContainerDefinition::builder()
                .name(&c.name)
                .image(&c.image)
                .essential(c.essential)
                .set_environment(Some(c.environment.iter().map(|(k, v)| kv(k, v)).collect()))
                .set_log_configuration(log)
                .set_stop_timeout(c.stop_timeout)
                .build())
        })
        .collect::<Result<Vec<_>, AwsError>>()?;
    let out = c
        .register_task_definition()
        .family(&td.family)
        .network_mode(NetworkMode::from(td.network_mode.as_str()))
        .set_requires_compatibilities(Some(
            td.requires_compatibilities
                .iter()
                .map(|c| Compatibility::from(c.as_str()))
                .collect(),
        ))
        .cpu(&td.cpu)
        .memory(&td.memory)
        .set_execution_role_arn(td.execution_role_arn.clone())
        .set_task_role_arn(td.task_role_arn.clone())
        .set_runtime_platform(td.runtime_platform.as_ref().map(|p| {
            RuntimePlatform::builder()
                .operating_system_family(OsFamily::from(p.operating_system_family.as_str()))
                .cpu_architecture(CpuArchitecture::from(p.cpu_architecture.as_str()))
                .build()
        }))
        .set_container_definitions(Some(containers))
        .set_tags(Some(tags(owned)))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(op, &td.family, e))?;
    out.task_definition()
        .and_then(|t| t.task_definition_arn())
        .map(str::to_string)
        .ok_or_else(|| AwsError::missing(op, &td.family, "taskDefinitionArn"))
}

/// Where engines run: Fargate (the default), or a capacity provider of the env's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineCapacity {
    Fargate,
    Provider(String),
}

/// One RunTask call: how many, with which environment for every engine of the call.
pub struct RunEngines<'a> {
    pub cluster: &'a str,
    pub task_definition: &'a str,
    pub container: &'a str,
    pub count: u32,
    pub capacity: &'a EngineCapacity,
    pub subnets: &'a [String],
    pub security_groups: &'a [String],
    pub started_by: &'a str,
    /// RunTask's `clientToken` (at most 64 characters): the same for every retry of this
    /// call, so a retry after a lost answer gets the tasks it started back.
    pub client_token: &'a str,
    pub environment: &'a [(String, String)],
    pub tags: &'a [(String, String)],
}

/// The tasks RunTask started, and the failures it reported (arn or reason).
pub struct Started {
    pub task_arns: Vec<String>,
    pub failures: Vec<String>,
}

pub async fn run_task(c: &Ecs, r: &RunEngines<'_>) -> Result<Started, AwsError> {
    let op = "RunTask";
    let vpc = AwsVpcConfiguration::builder()
        .set_subnets(Some(r.subnets.to_vec()))
        .set_security_groups(Some(r.security_groups.to_vec()))
        .assign_public_ip(AssignPublicIp::Disabled)
        .build()
        .map_err(|e| AwsError::local(op, r.task_definition, e.to_string()))?;
    let overrides = TaskOverride::builder()
        .container_overrides(
            ContainerOverride::builder()
                .name(r.container)
                .set_environment(Some(r.environment.iter().map(|(k, v)| kv(k, v)).collect()))
                .build(),
        )
        .build();
    let mut call = c
        .run_task()
        .cluster(r.cluster)
        .task_definition(r.task_definition)
        .count(r.count as i32)
        .started_by(r.started_by)
        .client_token(r.client_token)
        .network_configuration(
            NetworkConfiguration::builder()
                .awsvpc_configuration(vpc)
                .build(),
        )
        .overrides(overrides)
        .set_tags(Some(tags(r.tags)));
    call = match r.capacity {
        EngineCapacity::Fargate => call.launch_type(LaunchType::Fargate),
        EngineCapacity::Provider(name) => call.capacity_provider_strategy(
            CapacityProviderStrategyItem::builder()
                .capacity_provider(name)
                .weight(1)
                .build()
                .map_err(|e| AwsError::local(op, r.task_definition, e.to_string()))?,
        ),
    };
    let out = call
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(op, r.task_definition, e))?;
    Ok(Started {
        task_arns: out
            .tasks()
            .iter()
            .filter_map(|t| t.task_arn().map(str::to_string))
            .collect(),
        failures: out
            .failures()
            .iter()
            .map(|f| {
                format!(
                    "{}{}",
                    f.reason().unwrap_or("failure"),
                    f.detail().map(|d| format!(": {d}")).unwrap_or_default()
                )
            })
            .collect(),
    })
}

/// What DescribeTasks says about an engine.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineTask {
    pub arn: String,
    pub last_status: String,
    pub stopped_reason: Option<String>,
    pub exit_code: Option<i32>,
    /// When it became RUNNING (epoch seconds).
    pub started_at: Option<f64>,
}

/// DescribeTasks of up to 100 tasks.
pub async fn describe(
    c: &Ecs,
    cluster: &str,
    arns: &[String],
) -> Result<Vec<EngineTask>, AwsError> {
    let out = c
        .describe_tasks()
        .cluster(cluster)
        .set_tasks(Some(arns.to_vec()))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(EcsOp::DescribeTasks, cluster, e))?;
    Ok(out
        .tasks()
        .iter()
        .map(|t| EngineTask {
            arn: t.task_arn().unwrap_or_default().to_string(),
            last_status: t.last_status().unwrap_or_default().to_string(),
            stopped_reason: t.stopped_reason().map(str::to_string),
            exit_code: t.containers().first().and_then(|c| c.exit_code()),
            started_at: t.started_at().map(|d| d.as_secs_f64()),
        })
        .collect())
}

pub async fn stop(c: &Ecs, cluster: &str, arn: &str, reason: &str) -> Result<(), AwsError> {
    c.stop_task()
        .cluster(cluster)
        .task(arn)
        .reason(reason)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| AwsError::from_sdk(EcsOp::StopTask, arn, e))
}

/// PutObject (unconditional).
pub async fn put(c: &S3, bucket: &str, key: &str, body: Vec<u8>) -> Result<(), AwsError> {
    c.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| AwsError::from_sdk("PutObject", &format!("s3://{bucket}/{key}"), e))
}

/// CreateBucket, for the sandbox's artifacts bucket (on AWS the bucket is the user's).
pub async fn create_bucket(c: &S3, bucket: &str) -> Result<(), AwsError> {
    c.create_bucket()
        .bucket(bucket)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| AwsError::from_sdk("CreateBucket", bucket, e))
}

/// The family's latest ACTIVE revision as an engine definition, with its ARN; `None` when
/// the family has none (ECS answers ClientException "Unable to describe task definition").
pub async fn latest(
    c: &Ecs,
    family: &str,
) -> Result<Option<(String, EngineTaskDefinition)>, AwsError> {
    let out = match c
        .describe_task_definition()
        .task_definition(family)
        .send()
        .await
    {
        Ok(out) => out,
        Err(e) => {
            let e = AwsError::from_sdk(EcsOp::DescribeTaskDefinition, family, e);
            return if e.is_code(ErrorCode::ClientException) {
                Ok(None)
            } else {
                Err(e)
            };
        }
    };
    let Some(td) = out.task_definition() else {
        return Ok(None);
    };
    let Some(arn) = td.task_definition_arn() else {
        return Ok(None);
    };
    let containers = td
        .container_definitions()
        .iter()
        .map(|c| EngineContainer {
            name: c.name().unwrap_or_default().to_string(),
            image: c.image().unwrap_or_default().to_string(),
            essential: c.essential().unwrap_or(true),
            environment: c
                .environment()
                .iter()
                .filter_map(|kv| Some((kv.name()?.to_string(), kv.value()?.to_string())))
                .collect(),
            log_configuration: c.log_configuration().map(|l| EngineLog {
                log_driver: l.log_driver().as_str().to_string(),
                options: l
                    .options()
                    .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default(),
            }),
            stop_timeout: c.stop_timeout(),
        })
        .collect();
    Ok(Some((
        arn.to_string(),
        EngineTaskDefinition {
            family: td.family().unwrap_or_default().to_string(),
            network_mode: td
                .network_mode()
                .map(|m| m.as_str().to_string())
                .unwrap_or_default(),
            requires_compatibilities: td
                .requires_compatibilities()
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            cpu: td.cpu().unwrap_or_default().to_string(),
            memory: td.memory().unwrap_or_default().to_string(),
            execution_role_arn: td.execution_role_arn().map(str::to_string),
            task_role_arn: td.task_role_arn().map(str::to_string),
            runtime_platform: td.runtime_platform().map(|p| EngineRuntimePlatform {
                operating_system_family: p
                    .operating_system_family()
                    .map(|f| f.as_str().to_string())
                    .unwrap_or_default(),
                cpu_architecture: p
                    .cpu_architecture()
                    .map(|a| a.as_str().to_string())
                    .unwrap_or_default(),
            }),
            container_definitions: containers,
        },
    )))
}
