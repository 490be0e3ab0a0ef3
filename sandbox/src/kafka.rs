//! Amazon MSK (restJson1): provisioned clusters, configurations with revisions, in-place
//! updates as cluster operations, tags.
//!
//! Every update needs the cluster ACTIVE and its `currentVersion`; it moves the cluster to
//! UPDATING and returns an operation ARN whose state goes PENDING -> UPDATE_IN_PROGRESS ->
//! UPDATE_COMPLETE (or UPDATE_FAILED under the `failing_msk_operations` fault), after which
//! the cluster is ACTIVE again with a new `currentVersion`. The metadata mode is part of the
//! version string ("3.7.x.kraft" is KRaft) and cannot be switched in place.

use crate::catalogue::Catalogue;
use crate::paging::{decode_token, encode_token};
use crate::protocol::{ApiError, rest};
use crate::state::{Ctx, World};
use crate::util::{rfc3339, uuid_like};
use axum::http::Method;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use envctl_aws_model::msk::{STORAGE_COOL_DOWN_S, broker_type_change_refusal};
use envctl_aws_model::status::KafkaVersionStatus;
use envctl_aws_model::status::{KafkaClusterState, KafkaOperationState};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct KafkaState {
    seq: u64,
    /// By cluster ARN.
    clusters: BTreeMap<String, MskCluster>,
    /// By configuration ARN.
    configurations: BTreeMap<String, Configuration>,
    /// By operation ARN.
    operations: BTreeMap<String, Operation>,
    #[serde(skip)]
    next_due: f64,
}

/// The mutable part of a cluster, as operations report source and target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ClusterShape {
    instance_type: String,
    broker_count: i64,
    volume_size: i64,
    kafka_version: String,
    configuration: Option<(String, i64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct MskCluster {
    arn: String,
    name: String,
    state: String,
    created_at: f64,
    current_version: String,
    shape: ClusterShape,
    client_subnets: Vec<String>,
    security_groups: Vec<String>,
    tags: BTreeMap<String, String>,
    /// Pass-through settings returned as sent (encryptionInfo, clientAuthentication, ...).
    extra: serde_json::Map<String, Value>,
    active_operation: Option<String>,
    /// When CREATING ends (ACTIVE) or DELETING ends (gone).
    due_at: Option<f64>,
    /// `EncryptionInTransit.ClientBroker`: TLS when the request has none (MSK Developer
    /// Guide, "Amazon MSK encryption in transit"), so there is no plaintext listener then.
    #[serde(default = "default_client_broker")]
    client_broker: String,
}

fn default_client_broker() -> String {
    "TLS".into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Configuration {
    arn: String,
    name: String,
    description: String,
    kafka_versions: Vec<String>,
    created_at: f64,
    /// (created at, description, server.properties text), revision n at index n-1.
    revisions: Vec<(f64, String, String)>,
    tags: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Operation {
    arn: String,
    cluster_arn: String,
    operation_type: String,
    start: f64,
    /// PENDING until then, UPDATE_IN_PROGRESS after.
    in_progress_at: f64,
    due_at: f64,
    fails: bool,
    /// Final state once settled: UPDATE_COMPLETE or UPDATE_FAILED.
    finished: Option<(f64, String)>,
    source: ClusterShape,
    target: ClusterShape,
}

/// A decoded request: operation, path labels, query and body.
pub struct Route {
    pub operation: &'static str,
    arn: Option<String>,
    revision: Option<i64>,
    query: Vec<(String, String)>,
    body: Value,
}

impl Route {
    pub fn resource(&self) -> Option<String> {
        self.arn.clone()
    }

    fn query(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Maps method and path to an operation (paths from the SDK's `uri_base` functions).
pub fn route(
    method: &Method,
    path: &str,
    query: Option<&str>,
    body: &[u8],
) -> Result<Route, ApiError> {
    let seg = rest::segments(path);
    let s: Vec<&str> = seg.iter().map(String::as_str).collect();
    let m = method.as_str();
    let (operation, arn, revision): (&'static str, Option<&str>, Option<&str>) =
        match (m, s.as_slice()) {
            ("POST", ["api", "v2", "clusters"]) => ("CreateClusterV2", None, None),
            ("GET", ["api", "v2", "clusters"]) => ("ListClustersV2", None, None),
            ("GET", ["api", "v2", "clusters", arn]) => ("DescribeClusterV2", Some(arn), None),
            ("GET", ["api", "v2", "clusters", arn, "operations"]) => {
                ("ListClusterOperationsV2", Some(arn), None)
            }
            ("GET", ["api", "v2", "operations", arn]) => {
                ("DescribeClusterOperationV2", Some(arn), None)
            }
            ("DELETE", ["v1", "clusters", arn]) => ("DeleteCluster", Some(arn), None),
            ("GET", ["v1", "clusters", arn, "bootstrap-brokers"]) => {
                ("GetBootstrapBrokers", Some(arn), None)
            }
            ("PUT", ["v1", "clusters", arn, "nodes", "type"]) => {
                ("UpdateBrokerType", Some(arn), None)
            }
            ("PUT", ["v1", "clusters", arn, "nodes", "count"]) => {
                ("UpdateBrokerCount", Some(arn), None)
            }
            ("PUT", ["v1", "clusters", arn, "nodes", "storage"]) => {
                ("UpdateBrokerStorage", Some(arn), None)
            }
            ("PUT", ["v1", "clusters", arn, "configuration"]) => {
                ("UpdateClusterConfiguration", Some(arn), None)
            }
            ("PUT", ["v1", "clusters", arn, "version"]) => {
                ("UpdateClusterKafkaVersion", Some(arn), None)
            }
            ("POST", ["v1", "configurations"]) => ("CreateConfiguration", None, None),
            ("GET", ["v1", "configurations"]) => ("ListConfigurations", None, None),
            ("GET", ["v1", "configurations", arn]) => ("DescribeConfiguration", Some(arn), None),
            ("PUT", ["v1", "configurations", arn]) => ("UpdateConfiguration", Some(arn), None),
            ("DELETE", ["v1", "configurations", arn]) => ("DeleteConfiguration", Some(arn), None),
            ("GET", ["v1", "configurations", arn, "revisions", rev]) => {
                ("DescribeConfigurationRevision", Some(arn), Some(rev))
            }
            ("GET", ["v1", "kafka-versions"]) => ("ListKafkaVersions", None, None),
            ("POST", ["v1", "tags", arn]) => ("TagResource", Some(arn), None),
            ("GET", ["v1", "tags", arn]) => ("ListTagsForResource", Some(arn), None),
            ("DELETE", ["v1", "tags", arn]) => ("UntagResource", Some(arn), None),
            _ => {
                return Err(ApiError::new(
                    404,
                    "NotFoundException",
                    format!("The sandbox has no MSK operation at {m} {path}"),
                ));
            }
        };
    let revision = match revision {
        Some(r) => Some(
            r.parse()
                .map_err(|_| bad(format!("Invalid revision: {r}")))?,
        ),
        None => None,
    };
    let body = if matches!(m, "POST" | "PUT") {
        rest::parse_body(body)?
    } else {
        Value::Null
    };
    Ok(Route {
        operation,
        arn: arn.map(str::to_string),
        revision,
        query: query
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default(),
        body,
    })
}

pub fn handle(world: &mut World, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
    let k = &mut world.kafka;
    let catalogue = &world.catalogue;
    let out = match r.operation {
        "ListKafkaVersions" => Ok(list_kafka_versions(catalogue)),
        "CreateClusterV2" => k.create_cluster(ctx, catalogue, r),
        "ListClustersV2" => k.list_clusters(ctx, r),
        "DescribeClusterV2" => k.describe_cluster(ctx, r),
        "DeleteCluster" => k.delete_cluster(ctx, r),
        "GetBootstrapBrokers" => k.bootstrap_brokers(ctx, r),
        "UpdateBrokerType"
        | "UpdateBrokerCount"
        | "UpdateBrokerStorage"
        | "UpdateClusterConfiguration"
        | "UpdateClusterKafkaVersion" => k.update(ctx, catalogue, r),
        "DescribeClusterOperationV2" => k.describe_operation(ctx, r),
        "ListClusterOperationsV2" => k.list_operations(ctx, r),
        "CreateConfiguration" => k.create_configuration(ctx, r),
        "ListConfigurations" => k.list_configurations(r),
        "DescribeConfiguration" => k.describe_configuration(r),
        "UpdateConfiguration" => k.update_configuration(ctx, r),
        "DeleteConfiguration" => k.delete_configuration(r),
        "DescribeConfigurationRevision" => k.describe_revision(r),
        "TagResource" => k.tag(r),
        "ListTagsForResource" => k.list_tags(r),
        "UntagResource" => k.untag(r),
        op => Err(ApiError::new(
            404,
            "NotFoundException",
            format!("unknown operation {op}"),
        )),
    };
    if envctl_aws_model::is_mutating("kafka", r.operation) {
        k.next_due = 0.0;
    }
    out
}

/// Brokers per cluster the sandbox accepts (MSK's default quota is 30 per cluster for
/// ZooKeeper clusters; the sandbox is lenient but bounded).
const MAX_BROKERS: i64 = 90;

/// ListKafkaVersions: every version with its status (the sandbox returns one page).
fn list_kafka_versions(catalogue: &Catalogue) -> (u16, Value) {
    let versions: Vec<Value> = catalogue
        .kafka_versions
        .iter()
        .map(|v| json!({"version": v.version, "status": v.status}))
        .collect();
    (200, json!({ "kafkaVersions": versions }))
}

/// MSK creates clusters and upgrades only on ACTIVE versions; versions past end of support
/// are refused ("MSK will phase out support for newly created clusters that use Kafka
/// versions with published end of support dates", MSK Developer Guide, version support).
fn check_kafka_version(catalogue: &Catalogue, version: &str) -> Result<(), ApiError> {
    match catalogue.kafka_status(version) {
        Some(s) if s == KafkaVersionStatus::Active => Ok(()),
        status => Err(bad(format!(
            "Unsupported KafkaVersion [{version}]{}. Supported versions: {}.",
            if status.is_some() {
                " (past its end of support)"
            } else {
                ""
            },
            catalogue.active_kafka_versions().join(", ")
        ))),
    }
}

/// A list's page as its request asks for it: (first index, size), from `nextToken` and
/// `maxResults` (1-100, `default` without it).
fn page_of(r: &Route, default: usize) -> Result<(usize, usize), ApiError> {
    let max = match r.query("maxResults") {
        Some(m) => m
            .parse()
            .ok()
            .filter(|m| (1..=100).contains(m))
            .ok_or_else(|| bad("maxResults must be between 1 and 100."))?,
        None => default,
    };
    let start = match r.query("nextToken") {
        Some(t) => decode_token(t).ok_or_else(|| bad("Invalid nextToken."))?,
        None => 0,
    };
    Ok((start, max))
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad("BadRequestException", message)
}

fn not_found(what: &str, arn: &str) -> ApiError {
    ApiError::new(
        404,
        "NotFoundException",
        format!("{what} {arn} does not exist."),
    )
}

fn is_kraft(version: &str) -> bool {
    version.ends_with(".kraft")
}

fn body_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn required<'a>(v: &'a Value, key: &str) -> Result<&'a str, ApiError> {
    body_str(v, key).filter(|s| !s.is_empty()).ok_or_else(|| {
        bad(format!(
            "The request is missing the required parameter {key}."
        ))
    })
}

fn tags_of(v: &Value) -> BTreeMap<String, String> {
    v.get("tags")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn parse_properties(text: &str) -> Result<(), ApiError> {
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once('=') {
            Some((k, _)) if !k.trim().is_empty() => {}
            _ => {
                return Err(bad(format!(
                    "Invalid server properties at line {}: {line}",
                    i + 1
                )));
            }
        }
    }
    Ok(())
}

fn shape_json(s: &ClusterShape) -> Value {
    let mut v = json!({
        "instanceType": s.instance_type,
        "numberOfBrokerNodes": s.broker_count,
        "brokerEBSVolumeInfo": [{"kafkaBrokerNodeId": "ALL", "volumeSizeGB": s.volume_size}],
        "kafkaVersion": s.kafka_version,
    });
    if let Some((arn, rev)) = &s.configuration {
        v["configurationInfo"] = json!({"arn": arn, "revision": rev});
    }
    v
}

impl KafkaState {
    fn next(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Control API: MSK upgrades a cluster past its version's end of support by itself,
    /// "without notice" (MSK Developer Guide, "Amazon MSK version support"): the cluster
    /// runs `version` (a new current version), its configuration unchanged, and the upgrade
    /// is listed as a cluster operation (`UPDATE_CLUSTER_KAFKA_VERSION`, as MSK lists a
    /// version upgrade). With `duration_s` the cluster is UPDATING that long first, the
    /// operation in progress (a measurement may run into it); without, it is done at once.
    /// Returns the version it ran before; `None` for no such ACTIVE cluster, a version the
    /// catalogue does not offer, or one of another metadata mode than the cluster's.
    pub fn auto_upgrade(
        &mut self,
        catalogue: &Catalogue,
        (name, version): (&str, &str),
        now: f64,
        duration_s: Option<f64>,
    ) -> Option<String> {
        check_kafka_version(catalogue, version).ok()?;
        let token = self.version_token();
        let n = self.next();
        let c = self.clusters.values_mut().find(|c| c.name == name)?;
        let from = c.shape.kafka_version.clone();
        if is_kraft(&from) != is_kraft(version) || c.state != KafkaClusterState::Active {
            return None;
        }
        let mut target = c.shape.clone();
        target.kafka_version = version.to_string();
        let duration = duration_s.unwrap_or(0.0).max(0.0);
        let arn = format!(
            "{}/{}",
            c.arn.replace(":cluster/", ":cluster-operation/"),
            uuid_like("msk-auto-upgrade", n)
        );
        let op = Operation {
            arn: arn.clone(),
            cluster_arn: c.arn.clone(),
            operation_type: "UPDATE_CLUSTER_KAFKA_VERSION".into(),
            start: now,
            in_progress_at: now,
            due_at: now + duration,
            fails: false,
            finished: None,
            source: c.shape.clone(),
            target: target.clone(),
        };
        if duration > 0.0 {
            c.state = "UPDATING".into();
            c.active_operation = Some(arn.clone());
            self.next_due = 0.0;
            self.operations.insert(arn, op);
        } else {
            c.shape = target;
            c.current_version = token;
            self.operations.insert(
                arn,
                Operation {
                    finished: Some((now, "UPDATE_COMPLETE".into())),
                    ..op
                },
            );
        }
        Some(from)
    }

    /// When the cool-down after the cluster's last storage scaling ends, while it lasts:
    /// MSK needs at least six hours after every storage scaling event ("Scale up Amazon MSK
    /// Standard broker storage"); the sandbox counts them from the operation's end.
    fn storage_cool_down_until(&self, cluster_arn: &str, now: f64) -> Option<f64> {
        self.operations
            .values()
            .filter(|o| o.cluster_arn == cluster_arn && o.operation_type == "UPDATE_BROKER_STORAGE")
            .filter_map(|o| match &o.finished {
                Some((end, state)) if *state == KafkaOperationState::UpdateComplete => Some(*end),
                _ => None,
            })
            .map(|end| end + STORAGE_COOL_DOWN_S)
            .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))))
            .filter(|until| *until > now)
    }

    /// ListClusterOperationsV2: the cluster's operations, newest first (`maxResults` 1-100,
    /// `nextToken`), each a ClusterOperationV2Summary.
    fn list_operations(&mut self, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
        let c = self.cluster(r.arn.as_ref())?.clone();
        let (start, max) = page_of(r, 100)?;
        let mut all: Vec<&Operation> = self
            .operations
            .values()
            .filter(|o| o.cluster_arn == c.arn)
            .collect();
        all.sort_by(|a, b| b.start.total_cmp(&a.start));
        let end = start.saturating_add(max).min(all.len());
        let items: Vec<Value> = all
            .get(start..end)
            .unwrap_or(&[])
            .iter()
            .map(|o| {
                let mut v = json!({
                    "clusterArn": o.cluster_arn,
                    "clusterType": "PROVISIONED",
                    "operationArn": o.arn,
                    "operationState": Self::operation_state(o, ctx.now),
                    "operationType": o.operation_type,
                    "startTime": rfc3339(o.start),
                });
                if let Some((end, _)) = &o.finished {
                    v["endTime"] = json!(rfc3339(*end));
                }
                v
            })
            .collect();
        let mut out = json!({ "clusterOperationInfoList": items });
        if end < all.len() {
            out["nextToken"] = json!(encode_token(end));
        }
        Ok((200, out))
    }

    fn operation_state(op: &Operation, now: f64) -> String {
        match &op.finished {
            Some((_, s)) => s.clone(),
            None if now < op.in_progress_at => "PENDING".to_string(),
            None => "UPDATE_IN_PROGRESS".to_string(),
        }
    }

    /// A `currentVersion` token: 14 upper-case alphanumerics, like MSK's `K3AEGXETSR30VB`.
    fn version_token(&mut self) -> String {
        let n = self.next();
        let h = crate::faults::hash_str(n, &["msk-version"]);
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        std::iter::once('K')
            .chain((0..13).map(|i| alphabet[((h >> (i * 4)) % 36) as usize] as char))
            .collect()
    }

    pub fn settle(&mut self, ctx: &Ctx<'_>) {
        let now = ctx.now;
        if self.next_due != 0.0 && now < self.next_due {
            return;
        }
        let mut next_due = f64::INFINITY;
        let mut removed = Vec::new();
        let mut finished_ops = Vec::new();
        for c in self.clusters.values_mut() {
            let Some(at) = c.due_at else { continue };
            if at > now || ctx.faults.is_stuck("kafka", &c.name, &c.state) {
                next_due = next_due.min(at);
                continue;
            }
            match KafkaClusterState::parse(&c.state) {
                KafkaClusterState::Creating => {
                    c.state = "ACTIVE".into();
                    c.due_at = None;
                }
                KafkaClusterState::Deleting => removed.push(c.arn.clone()),
                _ => c.due_at = None,
            }
        }
        for arn in removed {
            self.clusters.remove(&arn);
        }
        for op in self.operations.values_mut() {
            if op.finished.is_some() {
                continue;
            }
            let stuck = self
                .clusters
                .get(&op.cluster_arn)
                .is_some_and(|c| ctx.faults.is_stuck("kafka", &c.name, &c.state));
            if op.due_at > now || stuck {
                next_due = next_due.min(op.due_at);
                continue;
            }
            let state = if op.fails {
                "UPDATE_FAILED"
            } else {
                "UPDATE_COMPLETE"
            };
            op.finished = Some((op.due_at, state.to_string()));
            finished_ops.push(op.clone());
        }
        for op in finished_ops {
            let token = self.version_token();
            // A cluster deleted while updating stays DELETING.
            if let Some(c) = self
                .clusters
                .get_mut(&op.cluster_arn)
                .filter(|c| c.state == KafkaClusterState::Updating)
            {
                if !op.fails {
                    c.shape = op.target.clone();
                }
                // A failed update leaves the cluster as it was, ACTIVE again.
                c.state = "ACTIVE".into();
                c.active_operation = None;
                c.current_version = token;
            }
        }
        self.next_due = if ctx.faults.stuck.is_empty() {
            next_due
        } else {
            0.0
        };
    }

    fn cluster(&self, arn: Option<&String>) -> Result<&MskCluster, ApiError> {
        let arn = arn.map(String::as_str).unwrap_or("");
        self.clusters
            .get(arn)
            .ok_or_else(|| not_found("Cluster", arn))
    }

    fn host_suffix(c: &MskCluster, ctx: &Ctx<'_>) -> String {
        let h = crate::faults::hash_str(0, &[&c.arn]);
        let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let id: String = (0..6)
            .map(|i| alphabet[((h >> (i * 6)) % 36) as usize] as char)
            .collect();
        format!(
            "{}.{id}.c{}.kafka.{}.amazonaws.com",
            c.name,
            1 + (h >> 60) % 9,
            ctx.region
        )
    }

    fn cluster_json(&self, c: &MskCluster, ctx: &Ctx<'_>) -> Value {
        let mut provisioned = json!({
            "brokerNodeGroupInfo": {
                "brokerAZDistribution": "DEFAULT",
                "clientSubnets": c.client_subnets,
                "instanceType": c.shape.instance_type,
                "securityGroups": c.security_groups,
                "storageInfo": {"ebsStorageInfo": {"volumeSize": c.shape.volume_size}},
            },
            "currentBrokerSoftwareInfo": {"kafkaVersion": c.shape.kafka_version},
            "numberOfBrokerNodes": c.shape.broker_count,
            "enhancedMonitoring": "DEFAULT",
            "storageMode": "LOCAL",
            "encryptionInfo": {
                "encryptionAtRest": {"dataVolumeKMSKeyId": format!("arn:aws:kms:{}:{}:key/aws-msk", ctx.region, ctx.account)},
                "encryptionInTransit": {"clientBroker": c.client_broker, "inCluster": true},
            },
        });
        if let Some((arn, rev)) = &c.shape.configuration {
            provisioned["currentBrokerSoftwareInfo"]["configurationArn"] = json!(arn);
            provisioned["currentBrokerSoftwareInfo"]["configurationRevision"] = json!(rev);
        }
        // ZooKeeper clusters expose the ensemble once it exists; KRaft clusters have none.
        if !is_kraft(&c.shape.kafka_version) && c.state != KafkaClusterState::Creating {
            let suffix = Self::host_suffix(c, ctx);
            let zk = |port: u16| {
                (1..=3)
                    .map(|i| format!("z-{i}.{suffix}:{port}"))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            provisioned["zookeeperConnectString"] = json!(zk(2181));
            provisioned["zookeeperConnectStringTls"] = json!(zk(2182));
        }
        if let Value::Object(p) = &mut provisioned {
            for (k, v) in &c.extra {
                p.insert(k.clone(), v.clone());
            }
        }
        let mut v = json!({
            "clusterArn": c.arn,
            "clusterName": c.name,
            "clusterType": "PROVISIONED",
            "creationTime": rfc3339(c.created_at),
            "currentVersion": c.current_version,
            "state": c.state,
            "tags": c.tags,
            "provisioned": provisioned,
        });
        if let Some(op) = &c.active_operation {
            v["activeOperationArn"] = json!(op);
        }
        v
    }

    fn create_cluster(
        &mut self,
        ctx: &Ctx<'_>,
        catalogue: &Catalogue,
        r: &Route,
    ) -> Result<(u16, Value), ApiError> {
        let b = &r.body;
        let name = required(b, "clusterName")?.to_string();
        if b.get("serverless").is_some() {
            return Err(bad("The sandbox emulates provisioned MSK clusters only."));
        }
        let p = b
            .get("provisioned")
            .ok_or_else(|| bad("The request is missing the required parameter provisioned."))?;
        let group = p.get("brokerNodeGroupInfo").ok_or_else(|| {
            bad("The request is missing the required parameter brokerNodeGroupInfo.")
        })?;
        let instance_type = required(group, "instanceType")?.to_string();
        let subnets: Vec<String> = group
            .get("clientSubnets")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if !(2..=3).contains(&subnets.len()) {
            return Err(bad("Specify either two or three client subnets."));
        }
        let brokers = p
            .get("numberOfBrokerNodes")
            .and_then(Value::as_i64)
            .ok_or_else(|| {
                bad("The request is missing the required parameter numberOfBrokerNodes.")
            })?;
        if !(1..=MAX_BROKERS).contains(&brokers) || brokers % subnets.len() as i64 != 0 {
            return Err(bad(format!(
                "The number of broker nodes must be a multiple of the number of Availability Zones ({}).",
                subnets.len()
            )));
        }
        let version = required(p, "kafkaVersion")?.to_string();
        check_kafka_version(catalogue, &version)?;
        if !catalogue.msk_broker_types.contains(&instance_type) {
            return Err(bad(format!(
                "The broker instance type {instance_type} is not supported in this Region."
            )));
        }
        let volume = group
            .pointer("/storageInfo/ebsStorageInfo/volumeSize")
            .and_then(Value::as_i64)
            .unwrap_or(1000);
        if !(1..=catalogue.msk_max_volume_gib).contains(&volume) {
            return Err(bad(format!(
                "The EBS volume size must be between 1 and {} GiB.",
                catalogue.msk_max_volume_gib
            )));
        }
        let client_broker = match p.pointer("/encryptionInfo/encryptionInTransit/clientBroker") {
            None => default_client_broker(),
            Some(v) => match v.as_str() {
                Some(b @ ("TLS" | "TLS_PLAINTEXT" | "PLAINTEXT")) => b.to_string(),
                _ => {
                    return Err(bad(format!(
                        "Invalid clientBroker {v}: use TLS, TLS_PLAINTEXT or PLAINTEXT."
                    )));
                }
            },
        };
        let configuration = match p.get("configurationInfo") {
            Some(ci) => Some(self.check_configuration(ci)?),
            None => None,
        };
        if self.clusters.values().any(|c| c.name == name) {
            return Err(ApiError::new(
                409,
                "ConflictException",
                format!("A cluster with the name {name} already exists."),
            ));
        }
        let n = self.next();
        let arn = ctx.arn(
            "kafka",
            &format!("cluster/{name}/{}-{}", uuid_like("msk", n), 1 + n % 25),
        );
        let mut extra = serde_json::Map::new();
        for key in ["clientAuthentication", "loggingInfo", "openMonitoring"] {
            // encryptionInfo is kept as `client_broker` and rendered by cluster_json.
            if let Some(v) = p.get(key) {
                extra.insert(key.to_string(), v.clone());
            }
        }
        let token = self.version_token();
        let cluster = MskCluster {
            arn: arn.clone(),
            name: name.clone(),
            state: "CREATING".into(),
            created_at: ctx.now,
            current_version: token,
            shape: ClusterShape {
                instance_type,
                broker_count: brokers,
                volume_size: volume,
                kafka_version: version,
                configuration,
            },
            client_subnets: subnets,
            security_groups: group
                .get("securityGroups")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            tags: tags_of(b),
            extra,
            active_operation: None,
            due_at: Some(ctx.now + ctx.profile.msk_create.as_secs_f64()),
            client_broker,
        };
        self.clusters.insert(arn.clone(), cluster);
        Ok((
            200,
            json!({
                "clusterArn": arn,
                "clusterName": name,
                "state": "CREATING",
                "clusterType": "PROVISIONED",
            }),
        ))
    }

    fn check_configuration(&self, ci: &Value) -> Result<(String, i64), ApiError> {
        let arn = required(ci, "arn")?;
        let rev = ci
            .get("revision")
            .and_then(Value::as_i64)
            .ok_or_else(|| bad("The request is missing the required parameter revision."))?;
        let cfg = self
            .configurations
            .get(arn)
            .ok_or_else(|| bad(format!("The configuration {arn} does not exist.")))?;
        if rev < 1 || rev as usize > cfg.revisions.len() {
            return Err(bad(format!(
                "Revision {rev} of configuration {arn} does not exist."
            )));
        }
        Ok((arn.to_string(), rev))
    }

    fn list_clusters(&mut self, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
        let prefix = r.query("clusterNameFilter").unwrap_or("");
        if r.query("clusterTypeFilter")
            .is_some_and(|t| t == "SERVERLESS")
        {
            return Ok((200, json!({"clusterInfoList": []})));
        }
        let (start, max) = page_of(r, 10)?;
        let all: Vec<&MskCluster> = self
            .clusters
            .values()
            .filter(|c| c.name.starts_with(prefix))
            .collect();
        let end = start.saturating_add(max).min(all.len());
        let items: Vec<Value> = all
            .get(start..end)
            .unwrap_or(&[])
            .iter()
            .map(|c| self.cluster_json(c, ctx))
            .collect();
        let mut out = json!({ "clusterInfoList": items });
        if end < all.len() {
            out["nextToken"] = json!(encode_token(end));
        }
        Ok((200, out))
    }

    fn describe_cluster(&mut self, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
        let c = self.cluster(r.arn.as_ref())?;
        Ok((200, json!({ "clusterInfo": self.cluster_json(c, ctx) })))
    }

    fn delete_cluster(&mut self, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
        let arn = r.arn.clone().unwrap_or_default();
        let c = self
            .clusters
            .get_mut(&arn)
            .ok_or_else(|| not_found("Cluster", &arn))?;
        if let Some(v) = r.query("currentVersion")
            && v != c.current_version
        {
            return Err(bad(format!(
                "The provided current version {v} does not match the cluster's current version {}.",
                c.current_version
            )));
        }
        if c.state == KafkaClusterState::Deleting {
            return Err(bad(format!("Cluster {arn} is already being deleted.")));
        }
        c.state = "DELETING".into();
        c.due_at = Some(ctx.now + ctx.profile.msk_delete.as_secs_f64());
        Ok((200, json!({"clusterArn": arn, "state": "DELETING"})))
    }

    fn bootstrap_brokers(&mut self, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
        let c = self.cluster(r.arn.as_ref())?;
        if c.state == KafkaClusterState::Creating || c.state == KafkaClusterState::Deleting {
            return Err(bad(format!(
                "Bootstrap broker information is not available while the cluster is {}.",
                c.state
            )));
        }
        let suffix = Self::host_suffix(c, ctx);
        let list = |port: u16| {
            (1..=c.shape.broker_count)
                .map(|i| format!("b-{i}.{suffix}:{port}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        // Each string exists only when its listener does: 9092 for PLAINTEXT, 9094 for TLS
        // (GetBootstrapBrokers API reference; no IAM auth is configured by envctl).
        let mut out = serde_json::Map::new();
        if c.client_broker != "TLS" {
            out.insert("bootstrapBrokerString".into(), json!(list(9092)));
        }
        if c.client_broker != "PLAINTEXT" {
            out.insert("bootstrapBrokerStringTls".into(), json!(list(9094)));
        }
        Ok((200, Value::Object(out)))
    }

    /// The five in-place updates: validate against the cluster, then start an operation.
    fn update(
        &mut self,
        ctx: &Ctx<'_>,
        catalogue: &Catalogue,
        r: &Route,
    ) -> Result<(u16, Value), ApiError> {
        let b = &r.body;
        let version = required(b, "currentVersion")?.to_string();
        let configuration = match b.get("configurationInfo") {
            Some(ci) => Some(self.check_configuration(ci)?),
            None => None,
        };
        let c = self.cluster(r.arn.as_ref())?.clone();
        if c.state != KafkaClusterState::Active {
            return Err(bad(format!(
                "This operation cannot be performed on a cluster in the {} state. The cluster must be ACTIVE.",
                c.state
            )));
        }
        if version != c.current_version {
            return Err(bad(format!(
                "The provided current version {version} does not match the cluster's current version {}.",
                c.current_version
            )));
        }
        let p = ctx.profile;
        let per = |d: std::time::Duration| d.as_secs_f64() * c.shape.broker_count as f64;
        let mut target = c.shape.clone();
        let (op_type, duration) = match r.operation {
            "UpdateBrokerType" => {
                let t = required(b, "targetInstanceType")?;
                if t == c.shape.instance_type {
                    return Err(bad(format!("The cluster already uses broker type {t}.")));
                }
                // MSK's migration paths (MSK Developer Guide, msk-update-broker-type).
                if let Some(why) = broker_type_change_refusal(&c.shape.instance_type, t) {
                    return Err(bad(format!(
                        "The broker type of cluster {} cannot be updated to {t}: {why}.",
                        c.name
                    )));
                }
                target.instance_type = t.to_string();
                ("UPDATE_BROKER_TYPE", per(p.msk_broker_type_per_broker))
            }
            "UpdateBrokerCount" => {
                let t = b
                    .get("targetNumberOfBrokerNodes")
                    .and_then(Value::as_i64)
                    .ok_or_else(|| bad("The request is missing the required parameter targetNumberOfBrokerNodes."))?;
                let zones = c.client_subnets.len().max(1) as i64;
                if t > MAX_BROKERS {
                    return Err(bad(format!(
                        "A cluster can have at most {MAX_BROKERS} brokers."
                    )));
                }
                if t <= c.shape.broker_count {
                    return Err(bad("The number of broker nodes can only be increased."));
                }
                if (t - c.shape.broker_count) % zones != 0 {
                    return Err(bad(format!(
                        "The number of broker nodes must be increased by a multiple of the number of Availability Zones ({zones})."
                    )));
                }
                target.broker_count = t;
                ("INCREASE_BROKER_COUNT", p.msk_broker_count.as_secs_f64())
            }
            "UpdateBrokerStorage" => {
                let size = b
                    .get("targetBrokerEBSVolumeInfo")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(|v| v.get("volumeSizeGB"))
                    .and_then(Value::as_i64)
                    .ok_or_else(|| bad("The request is missing the required parameter targetBrokerEBSVolumeInfo."))?;
                if size <= c.shape.volume_size {
                    return Err(bad("The storage size can only be increased."));
                }
                if size > 16384 {
                    return Err(bad("The maximum storage size per broker is 16384 GiB."));
                }
                if let Some(until) = self.storage_cool_down_until(&c.arn, ctx.now) {
                    return Err(bad(format!(
                        "The cluster is in a cool-down period after its last storage scaling: storage can be scaled again after {}.",
                        rfc3339(until)
                    )));
                }
                target.volume_size = size;
                ("UPDATE_BROKER_STORAGE", p.msk_storage.as_secs_f64())
            }
            "UpdateClusterConfiguration" => {
                let Some(cfg) = configuration else {
                    return Err(bad(
                        "The request is missing the required parameter configurationInfo.",
                    ));
                };
                target.configuration = Some(cfg);
                (
                    "UPDATE_CLUSTER_CONFIGURATION",
                    per(p.msk_configuration_per_broker),
                )
            }
            _ => {
                let t = required(b, "targetKafkaVersion")?;
                if is_kraft(t) != is_kraft(&c.shape.kafka_version) {
                    return Err(bad(format!(
                        "Cannot update Kafka version from {} to {t}: switching between ZooKeeper and KRaft metadata modes is not supported. Create a new cluster instead.",
                        c.shape.kafka_version
                    )));
                }
                if t == c.shape.kafka_version {
                    return Err(bad(format!("The cluster already runs Kafka {t}.")));
                }
                check_kafka_version(catalogue, t)?;
                // A cluster on a custom configuration moves to one whose KafkaVersions
                // includes the target (MSK Developer Guide, "Upgrade the Apache Kafka
                // version"); the configuration's versions are fixed at its creation.
                if let Some((cfg_arn, _)) =
                    configuration.as_ref().or(c.shape.configuration.as_ref())
                    && let Some(cfg) = self.configurations.get(cfg_arn)
                    && !cfg.kafka_versions.is_empty()
                    && !cfg.kafka_versions.iter().any(|v| v == t)
                {
                    return Err(bad(format!(
                        "The configuration {cfg_arn} does not support Kafka version {t} (its KafkaVersions: {}). Specify a configuration revision that supports the target version.",
                        cfg.kafka_versions.join(", ")
                    )));
                }
                target.kafka_version = t.to_string();
                if let Some(cfg) = configuration {
                    target.configuration = Some(cfg);
                }
                (
                    "UPDATE_CLUSTER_KAFKA_VERSION",
                    per(p.msk_version_per_broker),
                )
            }
        };
        let n = self.next();
        let cluster_uuid = c.arn.rsplit('/').next().unwrap_or("").to_string();
        let op_arn = ctx.arn(
            "kafka",
            &format!(
                "cluster-operation/{}/{cluster_uuid}/{}",
                c.name,
                uuid_like("msk-op", n)
            ),
        );
        let pending = p.msk_operation_pending.as_secs_f64();
        let op = Operation {
            arn: op_arn.clone(),
            cluster_arn: c.arn.clone(),
            operation_type: op_type.to_string(),
            start: ctx.now,
            in_progress_at: ctx.now + pending,
            due_at: ctx.now + pending + duration,
            fails: ctx.faults.msk_operation_fails(&c.name, op_type),
            finished: None,
            source: c.shape.clone(),
            target,
        };
        self.operations.insert(op_arn.clone(), op);
        if let Some(cm) = self.clusters.get_mut(&c.arn) {
            cm.state = "UPDATING".into();
            cm.active_operation = Some(op_arn.clone());
        }
        Ok((
            200,
            json!({"clusterArn": c.arn, "clusterOperationArn": op_arn}),
        ))
    }

    fn describe_operation(&mut self, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
        let arn = r.arn.clone().unwrap_or_default();
        let op = self
            .operations
            .get(&arn)
            .ok_or_else(|| not_found("Cluster operation", &arn))?;
        let state = Self::operation_state(op, ctx.now);
        let step = |name: &str, done: bool, running: bool| json!({"stepName": name, "stepInfo": {"stepStatus": if done { "SUCCEEDED" } else if running { "IN_PROGRESS" } else { "PENDING" }}});
        let finished = op.finished.is_some();
        let steps = vec![
            step(
                "INITIALIZE_UPDATE",
                ctx.now >= op.in_progress_at,
                ctx.now < op.in_progress_at,
            ),
            step(
                "UPDATE_BROKERS",
                finished && !op.fails,
                ctx.now >= op.in_progress_at && !finished,
            ),
            step("FINALIZE_UPDATE", finished && !op.fails, false),
        ];
        let mut info = json!({
            "clusterArn": op.cluster_arn,
            "clusterType": "PROVISIONED",
            "operationArn": op.arn,
            "operationState": state,
            "operationType": op.operation_type,
            "startTime": rfc3339(op.start),
            "provisioned": {
                "operationSteps": steps,
                "sourceClusterInfo": shape_json(&op.source),
                "targetClusterInfo": shape_json(&op.target),
            },
        });
        if let Some((end, _)) = &op.finished {
            info["endTime"] = json!(rfc3339(*end));
        }
        if op.fails && finished {
            info["errorInfo"] = json!({
                "errorCode": "InternalFailure",
                "errorString": "The update failed and was rolled back (fault injected by the sandbox).",
            });
        }
        Ok((200, json!({ "clusterOperationInfo": info })))
    }

    fn configuration_json(c: &Configuration) -> Value {
        let latest = c.revisions.len();
        let (at, desc, _) = c.revisions.last().cloned().unwrap_or_default();
        json!({
            "arn": c.arn,
            "name": c.name,
            "description": c.description,
            "kafkaVersions": c.kafka_versions,
            "creationTime": rfc3339(c.created_at),
            "state": "ACTIVE",
            "latestRevision": {"creationTime": rfc3339(at), "description": desc, "revision": latest},
        })
    }

    fn decode_properties(b: &Value) -> Result<String, ApiError> {
        let encoded = required(b, "serverProperties")?;
        let bytes = BASE64
            .decode(encoded)
            .map_err(|e| bad(format!("serverProperties is not valid base64: {e}")))?;
        let text =
            String::from_utf8(bytes).map_err(|_| bad("serverProperties must be UTF-8 text."))?;
        parse_properties(&text)?;
        Ok(text)
    }

    fn create_configuration(&mut self, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
        let b = &r.body;
        let name = required(b, "name")?.to_string();
        let text = Self::decode_properties(b)?;
        if self.configurations.values().any(|c| c.name == name) {
            return Err(ApiError::new(
                409,
                "ConflictException",
                format!("A configuration with the name {name} already exists."),
            ));
        }
        let n = self.next();
        let arn = ctx.arn(
            "kafka",
            &format!(
                "configuration/{name}/{}-{}",
                uuid_like("msk-cfg", n),
                1 + n % 25
            ),
        );
        let description = body_str(b, "description").unwrap_or("").to_string();
        let cfg = Configuration {
            arn: arn.clone(),
            name,
            description: description.clone(),
            kafka_versions: b
                .get("kafkaVersions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            created_at: ctx.now,
            revisions: vec![(ctx.now, description, text)],
            tags: BTreeMap::new(),
        };
        let v = Self::configuration_json(&cfg);
        self.configurations.insert(arn, cfg);
        Ok((200, v))
    }

    fn configuration(&self, r: &Route) -> Result<&Configuration, ApiError> {
        let arn = r.arn.as_deref().unwrap_or("");
        self.configurations
            .get(arn)
            .ok_or_else(|| not_found("Configuration", arn))
    }

    fn list_configurations(&mut self, r: &Route) -> Result<(u16, Value), ApiError> {
        let all: Vec<Value> = self
            .configurations
            .values()
            .map(Self::configuration_json)
            .collect();
        let start = match r.query("nextToken") {
            Some(t) => decode_token(t).ok_or_else(|| bad("Invalid nextToken."))?,
            None => 0,
        };
        let max: usize = r
            .query("maxResults")
            .and_then(|m| m.parse().ok())
            .unwrap_or(100);
        let end = start.saturating_add(max.max(1)).min(all.len());
        let mut out = json!({"configurations": all.get(start..end).unwrap_or(&[])});
        if end < all.len() {
            out["nextToken"] = json!(encode_token(end));
        }
        Ok((200, out))
    }

    fn describe_configuration(&mut self, r: &Route) -> Result<(u16, Value), ApiError> {
        Ok((200, Self::configuration_json(self.configuration(r)?)))
    }

    fn update_configuration(&mut self, ctx: &Ctx<'_>, r: &Route) -> Result<(u16, Value), ApiError> {
        let text = Self::decode_properties(&r.body)?;
        let description = body_str(&r.body, "description").unwrap_or("").to_string();
        let arn = r.arn.clone().unwrap_or_default();
        let cfg = self
            .configurations
            .get_mut(&arn)
            .ok_or_else(|| not_found("Configuration", &arn))?;
        cfg.revisions.push((ctx.now, description.clone(), text));
        Ok((
            200,
            json!({
                "arn": arn,
                "latestRevision": {"creationTime": rfc3339(ctx.now), "description": description, "revision": cfg.revisions.len()},
            }),
        ))
    }

    fn delete_configuration(&mut self, r: &Route) -> Result<(u16, Value), ApiError> {
        let arn = self.configuration(r)?.arn.clone();
        let in_use = self.clusters.values().any(|c| {
            c.shape
                .configuration
                .as_ref()
                .is_some_and(|(a, _)| *a == arn)
        });
        if in_use {
            return Err(bad(format!(
                "Configuration {arn} is in use by one or more clusters."
            )));
        }
        self.configurations.remove(&arn);
        Ok((200, json!({"arn": arn, "state": "DELETING"})))
    }

    fn describe_revision(&mut self, r: &Route) -> Result<(u16, Value), ApiError> {
        let cfg = self.configuration(r)?;
        let rev = r.revision.unwrap_or(0);
        let (at, desc, text) = usize::try_from(rev)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| cfg.revisions.get(i))
            .ok_or_else(|| not_found("Configuration revision", &format!("{}:{rev}", cfg.arn)))?;
        Ok((
            200,
            json!({
                "arn": cfg.arn,
                "creationTime": rfc3339(*at),
                "description": desc,
                "revision": rev,
                "serverProperties": BASE64.encode(text.as_bytes()),
            }),
        ))
    }

    fn tags_mut(&mut self, r: &Route) -> Result<&mut BTreeMap<String, String>, ApiError> {
        let arn = r.arn.clone().unwrap_or_default();
        if let Some(c) = self.clusters.get_mut(&arn) {
            return Ok(&mut c.tags);
        }
        self.configurations
            .get_mut(&arn)
            .map(|c| &mut c.tags)
            .ok_or_else(|| not_found("Resource", &arn))
    }

    fn tag(&mut self, r: &Route) -> Result<(u16, Value), ApiError> {
        let new = tags_of(&r.body);
        self.tags_mut(r)?.extend(new);
        Ok((204, Value::Null))
    }

    fn untag(&mut self, r: &Route) -> Result<(u16, Value), ApiError> {
        let keys: Vec<String> = r
            .query
            .iter()
            .filter(|(k, _)| k == "tagKeys")
            .map(|(_, v)| v.clone())
            .collect();
        let tags = self.tags_mut(r)?;
        tags.retain(|k, _| !keys.contains(k));
        Ok((204, Value::Null))
    }

    fn list_tags(&mut self, r: &Route) -> Result<(u16, Value), ApiError> {
        let tags = self.tags_mut(r)?.clone();
        Ok((200, json!({ "tags": tags })))
    }

    /// (cluster name, broker count) of every cluster that serves traffic, for metrics.
    pub fn active_clusters(&self) -> Vec<(String, i64)> {
        self.clusters
            .values()
            .filter(|c| {
                c.state == KafkaClusterState::Active || c.state == KafkaClusterState::Updating
            })
            .map(|c| (c.name.clone(), c.shape.broker_count))
            .collect()
    }
}
