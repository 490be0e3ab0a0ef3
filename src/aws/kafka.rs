//! MSK: clusters, configurations and their operations, translated between the model and
//! the SDK. Every update presents the cluster's `CurrentVersion`; callers re-read it after
//! each operation (`describe_cluster`).
use aws_sdk_kafka::Client;
use aws_sdk_kafka::primitives::Blob;
use aws_sdk_kafka::types::{
    BrokerEbsVolumeInfo, BrokerNodeGroupInfo, ClientBroker, ConfigurationInfo, EbsStorageInfo,
    EncryptionInTransit, EncryptionInfo, ProvisionedRequest, StorageInfo,
};

use super::error::AwsError;
use crate::model::live::{LiveKafka, LiveKafkaConfiguration, Tags};
use crate::model::requests::CreateClusterV2;
use envctl_aws_model::operation::KafkaOp;
use envctl_aws_model::status::KafkaVersionStatus;

fn live_from_cluster(c: &aws_sdk_kafka::types::Cluster) -> Option<LiveKafka> {
    let p = c.provisioned()?;
    let group = p.broker_node_group_info();
    let software = p.current_broker_software_info();
    Some(LiveKafka {
        name: c.cluster_name()?.to_string(),
        arn: c.cluster_arn()?.to_string(),
        state: c
            .state()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        current_version: c.current_version().unwrap_or_default().to_string(),
        broker_type: group
            .and_then(|g| g.instance_type())
            .unwrap_or_default()
            .to_string(),
        brokers: p.number_of_broker_nodes().unwrap_or(0).max(0) as u32,
        client_subnets: group
            .map(|g| g.client_subnets().to_vec())
            .unwrap_or_default(),
        kafka_version: software
            .and_then(|s| s.kafka_version())
            .unwrap_or_default()
            .to_string(),
        storage_gb: group
            .and_then(|g| g.storage_info())
            .and_then(|s| s.ebs_storage_info())
            .and_then(|e| e.volume_size())
            .unwrap_or(0)
            .max(0) as u32,
        configuration_arn: software
            .and_then(|s| s.configuration_arn())
            .map(str::to_string),
        configuration_revision: software.and_then(|s| s.configuration_revision()),
        bootstrap_brokers: None,
        tags: c
            .tags()
            .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default(),
        storage_cool_down_until: None,
    })
}

/// Every provisioned cluster of the account and Region (one call per page of 100), with its
/// tags. The API reference lists `tags` in the `Cluster` that ListClustersV2 returns, but
/// nothing promises the list fills it; a cluster listed without tags has them read with
/// ListTagsForResource, so ownership never rests on a field the list may leave out.
pub async fn list_clusters(c: &Client) -> Result<Vec<LiveKafka>, AwsError> {
    let mut clusters = list_clusters_page_tags(c).await?;
    for cluster in clusters.iter_mut().filter(|k| k.tags.is_empty()) {
        cluster.tags = list_tags(c, &cluster.arn).await?;
    }
    Ok(clusters)
}

/// Tags of an MSK resource (cluster or configuration).
pub async fn list_tags(c: &Client, arn: &str) -> Result<Tags, AwsError> {
    let out = c
        .list_tags_for_resource()
        .resource_arn(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::ListTagsForResource, arn, e))?;
    Ok(out
        .tags()
        .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default())
}

async fn list_clusters_page_tags(c: &Client) -> Result<Vec<LiveKafka>, AwsError> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = c
            .list_clusters_v2()
            .max_results(100)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(KafkaOp::ListClustersV2, "*", e))?;
        out.extend(
            page.cluster_info_list()
                .iter()
                .filter_map(live_from_cluster),
        );
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(out);
        }
    }
}

pub async fn describe_cluster(c: &Client, arn: &str) -> Result<LiveKafka, AwsError> {
    let out = c
        .describe_cluster_v2()
        .cluster_arn(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::DescribeClusterV2, arn, e))?;
    out.cluster_info()
        .and_then(live_from_cluster)
        .ok_or_else(|| {
            AwsError::missing(KafkaOp::DescribeClusterV2, arn, "provisioned cluster info")
        })
}

/// The bootstrap string for a client security protocol (`PLAINTEXT` or `SSL`, as
/// `KafkaCluster::security_protocol` gives it), or `None` when the cluster offers none: a
/// cluster whose ClientBroker is TLS (MSK's default) has no plaintext string, and handing
/// its port 9094 to plaintext clients would fail at connect time instead of here.
pub async fn bootstrap_brokers_for(
    c: &Client,
    arn: &str,
    security_protocol: &str,
) -> Result<Option<String>, AwsError> {
    Ok(bootstrap_strings(c, arn)
        .await?
        .for_protocol(security_protocol))
}

/// Every bootstrap string a cluster offers (GetBootstrapBrokers), for `import`, which reads
/// a cluster whose client encryption it does not know yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BootstrapStrings {
    /// `BootstrapBrokerString`, port 9092: only when ClientBroker allows PLAINTEXT.
    pub plaintext: Option<String>,
    /// `BootstrapBrokerStringTls`, port 9094: only when ClientBroker allows TLS.
    pub tls: Option<String>,
    /// `BootstrapBrokerStringSaslScram` (9096) and `BootstrapBrokerStringSaslIam` (9098).
    pub sasl_scram: Option<String>,
    pub sasl_iam: Option<String>,
}

impl BootstrapStrings {
    /// The string for one client security protocol: TLS for `SSL`, plaintext otherwise.
    pub fn for_protocol(&self, security_protocol: &str) -> Option<String> {
        match security_protocol {
            "SSL" => self.tls.clone(),
            _ => self.plaintext.clone(),
        }
    }

    /// The string services are pointed at: plaintext when the cluster offers it (what the
    /// env's PLAINTEXT clients speak), else TLS, else a SASL one. MSK's default ClientBroker
    /// is TLS only, which has no plaintext string at all.
    pub fn preferred(&self) -> Option<&str> {
        [&self.plaintext, &self.tls, &self.sasl_scram, &self.sasl_iam]
            .into_iter()
            .find_map(|s| s.as_deref())
    }

    /// `EncryptionInTransit.ClientBroker` as the strings show it (plaintext and TLS: both);
    /// `None` when the cluster offers neither (SASL only).
    pub fn client_broker(&self) -> Option<&'static str> {
        match (&self.plaintext, &self.tls) {
            (Some(_), Some(_)) => Some("TLS_PLAINTEXT"),
            (Some(_), None) => Some("PLAINTEXT"),
            (None, Some(_)) => Some("TLS"),
            (None, None) => None,
        }
    }
}

pub async fn bootstrap_strings(c: &Client, arn: &str) -> Result<BootstrapStrings, AwsError> {
    let out = c
        .get_bootstrap_brokers()
        .cluster_arn(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::GetBootstrapBrokers, arn, e))?;
    let own = |s: Option<&str>| s.map(str::to_string);
    Ok(BootstrapStrings {
        plaintext: own(out.bootstrap_broker_string()),
        tls: own(out.bootstrap_broker_string_tls()),
        sasl_scram: own(out.bootstrap_broker_string_sasl_scram()),
        sasl_iam: own(out.bootstrap_broker_string_sasl_iam()),
    })
}

/// Configurations (name, ARN, latest revision, description), every page.
pub async fn list_configurations(
    c: &Client,
) -> Result<Vec<(String, String, i64, String)>, AwsError> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = c
            .list_configurations()
            .max_results(100)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(KafkaOp::ListConfigurations, "*", e))?;
        for conf in page.configurations() {
            if let (Some(name), Some(arn)) = (conf.name(), conf.arn()) {
                let rev = conf
                    .latest_revision()
                    .and_then(|r| r.revision())
                    .unwrap_or(1);
                out.push((
                    name.to_string(),
                    arn.to_string(),
                    rev,
                    conf.description().unwrap_or_default().to_string(),
                ));
            }
        }
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(out);
        }
    }
}

/// server.properties of one revision (revisions are immutable: callers cache by ARN and
/// revision).
pub async fn configuration_revision(
    c: &Client,
    arn: &str,
    revision: i64,
) -> Result<String, AwsError> {
    let out = c
        .describe_configuration_revision()
        .arn(arn)
        .revision(revision)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::DescribeConfigurationRevision, arn, e))?;
    let blob = out.server_properties().ok_or_else(|| {
        AwsError::missing(
            KafkaOp::DescribeConfigurationRevision,
            arn,
            "serverProperties",
        )
    })?;
    Ok(String::from_utf8_lossy(blob.as_ref()).into_owned())
}

pub async fn create_configuration(
    c: &Client,
    name: &str,
    kafka_versions: &[String],
    server_properties: &str,
    description: &str,
) -> Result<LiveKafkaConfiguration, AwsError> {
    let out = c
        .create_configuration()
        .name(name)
        .description(description)
        .set_kafka_versions(Some(kafka_versions.to_vec()))
        .server_properties(Blob::new(server_properties.as_bytes()))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::CreateConfiguration, name, e))?;
    Ok(LiveKafkaConfiguration {
        name: name.to_string(),
        arn: out
            .arn()
            .ok_or_else(|| AwsError::missing(KafkaOp::CreateConfiguration, name, "arn"))?
            .to_string(),
        latest_revision: out
            .latest_revision()
            .and_then(|r| r.revision())
            .unwrap_or(1),
        server_properties: server_properties.to_string(),
    })
}

/// Writes a new revision; returns its number.
pub async fn update_configuration(
    c: &Client,
    arn: &str,
    server_properties: &str,
    description: &str,
) -> Result<i64, AwsError> {
    let out = c
        .update_configuration()
        .arn(arn)
        .description(description)
        .server_properties(Blob::new(server_properties.as_bytes()))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::UpdateConfiguration, arn, e))?;
    out.latest_revision()
        .and_then(|r| r.revision())
        .ok_or_else(|| AwsError::missing(KafkaOp::UpdateConfiguration, arn, "latestRevision"))
}

fn configuration_info(arn: &str, revision: i64) -> ConfigurationInfo {
    ConfigurationInfo::builder()
        .arn(arn)
        .revision(revision)
        .build()
}

/// Creates a provisioned cluster on a configuration revision; returns its ARN.
pub async fn create_cluster(
    c: &Client,
    req: &CreateClusterV2,
    configuration: (&str, i64),
    tags: &Tags,
) -> Result<String, AwsError> {
    let p = &req.provisioned;
    let group = BrokerNodeGroupInfo::builder()
        .instance_type(&p.broker_node_group_info.instance_type)
        .set_client_subnets(Some(p.broker_node_group_info.client_subnets.clone()))
        .set_security_groups(Some(p.broker_node_group_info.security_groups.clone()))
        .storage_info(
            StorageInfo::builder()
                .ebs_storage_info(
                    EbsStorageInfo::builder()
                        .volume_size(
                            p.broker_node_group_info
                                .storage_info
                                .ebs_storage_info
                                .volume_size as i32,
                        )
                        .build(),
                )
                .build(),
        )
        .build();
    let provisioned = ProvisionedRequest::builder()
        .broker_node_group_info(group)
        .kafka_version(&p.kafka_version)
        .number_of_broker_nodes(p.number_of_broker_nodes as i32)
        .configuration_info(configuration_info(configuration.0, configuration.1))
        .encryption_info(
            EncryptionInfo::builder()
                .encryption_in_transit(
                    EncryptionInTransit::builder()
                        .client_broker(ClientBroker::from(
                            p.encryption_info
                                .encryption_in_transit
                                .client_broker
                                .as_str(),
                        ))
                        .in_cluster(p.encryption_info.encryption_in_transit.in_cluster)
                        .build(),
                )
                .build(),
        )
        .build();
    let out = c
        .create_cluster_v2()
        .cluster_name(&req.cluster_name)
        .provisioned(provisioned)
        .set_tags(Some(
            tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        ))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::CreateClusterV2, &req.cluster_name, e))?;
    out.cluster_arn()
        .map(str::to_string)
        .ok_or_else(|| AwsError::missing(KafkaOp::CreateClusterV2, &req.cluster_name, "clusterArn"))
}

/// An in-place cluster change as MSK takes it (the plan's `UpdateRequest` with the
/// configuration revision resolved); each returns the operation ARN to poll.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateRequest {
    Configuration {
        arn: String,
        revision: i64,
    },
    BrokerType(String),
    BrokerCount(u32),
    BrokerStorage(u32),
    KafkaVersion {
        target: String,
        configuration: Option<(String, i64)>,
    },
}

impl UpdateRequest {
    pub fn operation(&self) -> KafkaOp {
        match self {
            UpdateRequest::Configuration { .. } => KafkaOp::UpdateClusterConfiguration,
            UpdateRequest::BrokerType(_) => KafkaOp::UpdateBrokerType,
            UpdateRequest::BrokerCount(_) => KafkaOp::UpdateBrokerCount,
            UpdateRequest::BrokerStorage(_) => KafkaOp::UpdateBrokerStorage,
            UpdateRequest::KafkaVersion { .. } => KafkaOp::UpdateClusterKafkaVersion,
        }
    }
}

pub async fn update_cluster(
    c: &Client,
    arn: &str,
    current_version: &str,
    update: &UpdateRequest,
) -> Result<String, AwsError> {
    let op = update.operation();
    let map = |e| AwsError::from_sdk(op, arn, e);
    let operation_arn = match update {
        UpdateRequest::Configuration {
            arn: conf,
            revision,
        } => c
            .update_cluster_configuration()
            .cluster_arn(arn)
            .current_version(current_version)
            .configuration_info(configuration_info(conf, *revision))
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(op, arn, e))?
            .cluster_operation_arn()
            .map(str::to_string),
        UpdateRequest::BrokerType(t) => c
            .update_broker_type()
            .cluster_arn(arn)
            .current_version(current_version)
            .target_instance_type(t)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(op, arn, e))?
            .cluster_operation_arn()
            .map(str::to_string),
        UpdateRequest::BrokerCount(n) => c
            .update_broker_count()
            .cluster_arn(arn)
            .current_version(current_version)
            .target_number_of_broker_nodes(*n as i32)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(op, arn, e))?
            .cluster_operation_arn()
            .map(str::to_string),
        UpdateRequest::BrokerStorage(gb) => c
            .update_broker_storage()
            .cluster_arn(arn)
            .current_version(current_version)
            .target_broker_ebs_volume_info(
                BrokerEbsVolumeInfo::builder()
                    .kafka_broker_node_id("All")
                    .volume_size_gb(*gb as i32)
                    .build(),
            )
            .send()
            .await
            .map_err(map)?
            .cluster_operation_arn()
            .map(str::to_string),
        UpdateRequest::KafkaVersion {
            target,
            configuration,
        } => {
            let info = configuration
                .as_ref()
                .map(|(conf, rev)| configuration_info(conf, *rev));
            c.update_cluster_kafka_version()
                .cluster_arn(arn)
                .current_version(current_version)
                .target_kafka_version(target)
                .set_configuration_info(info)
                .send()
                .await
                .map_err(|e| AwsError::from_sdk(op, arn, e))?
                .cluster_operation_arn()
                .map(str::to_string)
        }
    };
    operation_arn.ok_or_else(|| AwsError::missing(op, arn, "clusterOperationArn"))
}

/// An operation's state (PENDING, UPDATE_IN_PROGRESS, UPDATE_COMPLETE, UPDATE_FAILED) and
/// error, if any.
pub async fn operation_state(
    c: &Client,
    operation_arn: &str,
) -> Result<(String, Option<String>), AwsError> {
    let out = c
        .describe_cluster_operation_v2()
        .cluster_operation_arn(operation_arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::DescribeClusterOperationV2, operation_arn, e))?;
    let op = out.cluster_operation_info().ok_or_else(|| {
        AwsError::missing(
            KafkaOp::DescribeClusterOperationV2,
            operation_arn,
            "clusterOperationInfo",
        )
    })?;
    let error = op.error_info().map(|e| {
        format!(
            "{}: {}",
            e.error_code().unwrap_or("error"),
            e.error_string().unwrap_or_default()
        )
    });
    Ok((op.operation_state().unwrap_or_default().to_string(), error))
}

/// One of a cluster's operations as ListClusterOperationsV2 lists it: what MSK did or does
/// to the cluster (envctl's updates, and its own: automatic version upgrades, patching).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterOperation {
    pub arn: String,
    /// `UPDATE_BROKER_STORAGE`, `UPDATE_CLUSTER_KAFKA_VERSION`, ...
    pub operation_type: String,
    /// `PENDING`, `UPDATE_IN_PROGRESS`, `UPDATE_COMPLETE`, `UPDATE_FAILED`.
    pub state: String,
    /// Epoch seconds.
    pub start: Option<f64>,
    pub end: Option<f64>,
}

/// Every operation of the cluster (ListClusterOperationsV2, pages of 100), newest first as
/// MSK lists them.
pub async fn list_operations(c: &Client, arn: &str) -> Result<Vec<ClusterOperation>, AwsError> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = c
            .list_cluster_operations_v2()
            .cluster_arn(arn)
            .max_results(100)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(KafkaOp::ListClusterOperationsV2, arn, e))?;
        let seconds = |t: Option<&aws_smithy_types::DateTime>| t.map(|t| t.as_secs_f64());
        out.extend(
            page.cluster_operation_info_list()
                .iter()
                .map(|o| ClusterOperation {
                    arn: o.operation_arn().unwrap_or_default().to_string(),
                    operation_type: o.operation_type().unwrap_or_default().to_string(),
                    state: o.operation_state().unwrap_or_default().to_string(),
                    start: seconds(o.start_time()),
                    end: seconds(o.end_time()),
                }),
        );
        match page.next_token() {
            Some(t) => token = Some(t.to_string()),
            None => return Ok(out),
        }
    }
}

pub async fn delete_cluster(c: &Client, arn: &str, current_version: &str) -> Result<(), AwsError> {
    c.delete_cluster()
        .cluster_arn(arn)
        .current_version(current_version)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::DeleteCluster, arn, e))?;
    Ok(())
}

pub async fn delete_configuration(c: &Client, arn: &str) -> Result<(), AwsError> {
    c.delete_configuration()
        .arn(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::DeleteConfiguration, arn, e))?;
    Ok(())
}

pub async fn tag_resource(c: &Client, arn: &str, tags: &Tags) -> Result<(), AwsError> {
    c.tag_resource()
        .resource_arn(arn)
        .set_tags(Some(
            tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        ))
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::TagResource, arn, e))?;
    Ok(())
}

/// The cluster with exactly this name, with its tags, if one exists. ListClustersV2's
/// `clusterNameFilter` matches by prefix, hence the exact comparison.
pub async fn find_cluster(c: &Client, name: &str) -> Result<Option<LiveKafka>, AwsError> {
    let mut token = None;
    loop {
        let page = c
            .list_clusters_v2()
            .cluster_name_filter(name)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(KafkaOp::ListClustersV2, name, e))?;
        if let Some(mut found) = page
            .cluster_info_list()
            .iter()
            .filter_map(live_from_cluster)
            .find(|k| k.name == name)
        {
            if found.tags.is_empty() {
                found.tags = list_tags(c, &found.arn).await?;
            }
            return Ok(Some(found));
        }
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(None);
        }
    }
}
/// ListKafkaVersions, ACTIVE only, every page.
pub async fn active_kafka_versions(c: &Client) -> Result<Vec<String>, AwsError> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = c
            .list_kafka_versions()
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(KafkaOp::ListKafkaVersions, "*", e))?;
        out.extend(
            page.kafka_versions()
                .iter()
                .filter(|v| {
                    v.status()
                        .is_some_and(|s| s.as_str() == KafkaVersionStatus::Active)
                })
                .filter_map(|v| v.version().map(str::to_string)),
        );
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            return Ok(out);
        }
    }
}

/// The security groups of an MSK cluster's brokers.
pub async fn broker_security_groups(c: &Client, arn: &str) -> Result<Vec<String>, AwsError> {
    let out = c
        .describe_cluster_v2()
        .cluster_arn(arn)
        .send()
        .await
        .map_err(|e| AwsError::from_sdk(KafkaOp::DescribeClusterV2, arn, e))?;
    Ok(out
        .cluster_info()
        .and_then(|c| c.provisioned())
        .and_then(|p| p.broker_node_group_info())
        .map(|g| g.security_groups().to_vec())
        .unwrap_or_default())
}
