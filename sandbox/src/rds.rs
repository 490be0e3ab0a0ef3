//! Amazon RDS (awsQuery): DB instances (writer and read replicas), parameter groups, tags.
//!
//! Instance status follows AWS: creating -> backing-up -> available on create; after
//! ModifyDBInstance with ApplyImmediately the status stays "available" for a few seconds
//! (`rds_modify_delay`), then "modifying", then "available" with the new values; deleting
//! -> gone. Modifications without ApplyImmediately stay in PendingModifiedValues (the sandbox
//! has no maintenance window, so they are never applied).

use crate::catalogue::Catalogue;
use crate::paging::{decode_token, encode_token};
use crate::protocol::ApiError;
use crate::protocol::query::{Params, Xml, timestamp};
use crate::state::{Ctx, World};
use crate::tags::merge_tags;
use envctl_aws_model::status::{
    ApplyMethod, DbInstanceStatus, EngineVersionStatus, ParameterApplyStatus,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RdsState {
    seq: u64,
    instances: BTreeMap<String, DbInstance>,
    parameter_groups: BTreeMap<String, ParameterGroup>,
    subnet_groups: BTreeMap<String, SubnetGroup>,
    /// Final snapshots DeleteDBInstance took (identifier -> the instance it was of): a
    /// snapshot outlives its instance, so the identifier cannot be used again.
    #[serde(default)]
    final_snapshots: BTreeMap<String, String>,
    /// Parameter groups whose last deleted member still counts until this time (see
    /// `rds_parameter_group_release` in the duration profile).
    #[serde(default)]
    released_groups: BTreeMap<String, f64>,
    #[serde(skip)]
    next_due: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SubnetGroup {
    name: String,
    description: String,
    arn: String,
    subnets: Vec<String>,
    tags: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct DbInstance {
    id: String,
    arn: String,
    resource_id: String,
    class: String,
    engine: String,
    engine_version: String,
    allocated_storage: i64,
    storage_type: String,
    master_username: String,
    db_name: Option<String>,
    port: i64,
    parameter_group: String,
    parameter_apply_status: String,
    availability_zone: String,
    multi_az: bool,
    vpc_security_groups: Vec<String>,
    status: String,
    created_at: f64,
    available_at: Option<f64>,
    source: Option<String>,
    replicas: Vec<String>,
    tags: Vec<(String, String)>,
    pending: Pending,
    /// Scheduled transitions, in time order.
    transitions: Vec<(f64, Transition)>,
    /// None: the default VPC (no subnet group given).
    #[serde(default)]
    subnet_group: Option<String>,
    #[serde(default)]
    publicly_accessible: bool,
    /// When the last storage change was applied: another one waits six hours and the end of
    /// storage optimization.
    #[serde(default)]
    storage_changed_at: Option<f64>,
    /// ManageMasterUserPassword: the secret RDS created for the master password.
    #[serde(default)]
    master_secret_arn: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Pending {
    class: Option<String>,
    allocated_storage: Option<i64>,
    #[serde(default)]
    engine_version: Option<String>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.class.is_none() && self.allocated_storage.is_none() && self.engine_version.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Transition {
    Status(String),
    /// Apply the pending values and become available.
    ApplyPending,
    /// A reboot ends: available, parameters in sync.
    Rebooted,
    /// Immediate changes of dynamic parameters are in effect (`applying` -> `in-sync`).
    ParametersApplied,
    Remove,
}

/// After a storage change RDS optimizes storage for hours (status `storage-optimization`,
/// the instance usable); the sandbox takes two hours.
const STORAGE_OPTIMIZATION_SECS: f64 = 2.0 * 3600.0;
/// The next storage change waits at least six hours (RDS User Guide, "Working with storage
/// for Amazon RDS DB instances").
const STORAGE_CHANGE_COOLDOWN_SECS: f64 = 6.0 * 3600.0;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ParameterGroup {
    name: String,
    family: String,
    description: String,
    arn: String,
    /// User-set values: name -> (value, apply method).
    values: BTreeMap<String, (String, String)>,
    tags: Vec<(String, String)>,
    /// When ModifyDBParameterGroup last changed it: RDS asks to wait five minutes before
    /// creating an instance that uses it (see `GROUP_SETTLE_SECS`).
    #[serde(default)]
    modified_at: Option<f64>,
}

/// "After you modify a DB parameter group, you should wait at least 5 minutes before
/// creating your first DB instance that uses that DB parameter group" (RDS User Guide,
/// "Working with parameter groups"). What happens sooner is not documented; the sandbox
/// assumes the instance boots without the changes: `pending-reboot` once available.
const GROUP_SETTLE_SECS: f64 = 300.0;

/// Seconds an `immediate` change of a dynamic parameter shows `applying` before `in-sync`
/// (an assumption: AWS documents the state, not its length).
const APPLYING_SECS: f64 = 30.0;

/// A parameter of the engine-default catalogue: (name, default value, apply type,
/// data type, allowed values, description).
type CatalogueEntry = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// A small model of the PostgreSQL parameters envctl and the seeds touch. `max_connections`
/// is static on RDS: changing it needs ApplyMethod=pending-reboot.
const POSTGRES_PARAMETERS: &[CatalogueEntry] = &[
    (
        "autovacuum",
        "1",
        "dynamic",
        "boolean",
        "0,1",
        "Starts the autovacuum subprocess.",
    ),
    (
        "checkpoint_timeout",
        "300",
        "dynamic",
        "integer",
        "30-86400",
        "Maximum time between automatic WAL checkpoints, in seconds.",
    ),
    (
        "effective_cache_size",
        "{DBInstanceClassMemory/16384}",
        "dynamic",
        "integer",
        "1-2147483647",
        "Sets the planner's assumption about the size of the disk cache.",
    ),
    (
        "idle_in_transaction_session_timeout",
        "86400000",
        "dynamic",
        "integer",
        "0-2147483647",
        "Sets the maximum allowed duration of any idling transaction.",
    ),
    (
        "log_min_duration_statement",
        "-1",
        "dynamic",
        "integer",
        "-1-2147483647",
        "Sets the minimum execution time above which statements will be logged.",
    ),
    (
        "log_statement",
        "",
        "dynamic",
        "string",
        "none,ddl,mod,all",
        "Sets the type of statements logged.",
    ),
    (
        "maintenance_work_mem",
        "GREATEST({DBInstanceClassMemory*1024/63963136},65536)",
        "dynamic",
        "integer",
        "1024-2147483647",
        "Sets the maximum memory to be used for maintenance operations.",
    ),
    (
        "max_connections",
        "LEAST({DBInstanceClassMemory/9531392},5000)",
        "static",
        "integer",
        "6-262143",
        "Sets the maximum number of concurrent connections.",
    ),
    (
        "max_wal_size",
        "2048",
        "dynamic",
        "integer",
        "128-2147483647",
        "Sets the WAL size that triggers a checkpoint.",
    ),
    (
        "random_page_cost",
        "4",
        "dynamic",
        "real",
        "0-2147483647",
        "Sets the planner's estimate of the cost of a nonsequentially fetched disk page.",
    ),
    (
        "rds.force_ssl",
        "1",
        "dynamic",
        "boolean",
        "0,1",
        "Force SSL connections.",
    ),
    (
        "shared_buffers",
        "{DBInstanceClassMemory/32768}",
        "static",
        "integer",
        "16-1073741823",
        "Sets the number of shared memory buffers used by the server.",
    ),
    (
        "statement_timeout",
        "",
        "dynamic",
        "integer",
        "0-2147483647",
        "Sets the maximum allowed duration of any statement.",
    ),
    (
        "work_mem",
        "4096",
        "dynamic",
        "integer",
        "64-2147483647",
        "Sets the maximum memory to be used for query workspaces.",
    ),
];

const MYSQL_PARAMETERS: &[CatalogueEntry] = &[
    (
        "innodb_buffer_pool_size",
        "{DBInstanceClassMemory*3/4}",
        "static",
        "integer",
        "5242880-18446744073709551615",
        "The size in bytes of the buffer pool.",
    ),
    (
        "max_connections",
        "{DBInstanceClassMemory/12582880}",
        "dynamic",
        "integer",
        "1-100000",
        "The number of simultaneous client connections allowed.",
    ),
    (
        "slow_query_log",
        "",
        "dynamic",
        "boolean",
        "0,1",
        "Enables the slow query log.",
    ),
    (
        "long_query_time",
        "",
        "dynamic",
        "float",
        "0-31536000",
        "Defines what MySQL considers long queries.",
    ),
];

fn catalogue(family: &str) -> &'static [CatalogueEntry] {
    if family.starts_with("postgres") {
        POSTGRES_PARAMETERS
    } else if family.starts_with("mysql") || family.starts_with("mariadb") {
        MYSQL_PARAMETERS
    } else {
        &[]
    }
}

/// A DescribeDBParameters row: (name, value, source, apply type, data type, allowed values,
/// description, apply method).
type ParameterRow = (
    String,
    Option<String>,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    String,
);

pub fn resource_of(p: &Params) -> Option<String> {
    [
        "DBInstanceIdentifier",
        "DBParameterGroupName",
        "DBSubnetGroupName",
        "ResourceName",
    ]
    .iter()
    .find_map(|k| p.get(k))
    .map(str::to_string)
}

pub fn handle(world: &mut World, ctx: &Ctx<'_>, op: &str, p: &Params) -> Result<String, ApiError> {
    let rds = &mut world.rds;
    let catalogue = &world.catalogue;
    let out = match op {
        "CreateDBInstance" => rds.create_db_instance(ctx, catalogue, p),
        "CreateDBSubnetGroup" => rds.create_subnet_group(ctx, p),
        "DescribeDBSubnetGroups" => rds.describe_subnet_groups(p),
        "DeleteDBSubnetGroup" => rds.delete_subnet_group(p),
        "DescribeDBEngineVersions" => Ok(describe_engine_versions(catalogue, p)),
        "DescribeOrderableDBInstanceOptions" => Ok(describe_orderable(catalogue, p)),
        "CreateDBInstanceReadReplica" => rds.create_read_replica(ctx, p),
        "DescribeDBInstances" => rds.describe_db_instances(ctx, p),
        "ModifyDBInstance" => rds.modify_db_instance(ctx, catalogue, p),
        "DeleteDBInstance" => rds.delete_db_instance(ctx, p),
        "RebootDBInstance" => rds.reboot_db_instance(ctx, p),
        "StopDBInstance" => rds.stop_db_instance(ctx, p),
        "StartDBInstance" => rds.start_db_instance(ctx, p),
        "CreateDBParameterGroup" => rds.create_parameter_group(ctx, p),
        "ModifyDBParameterGroup" => rds.modify_parameter_group(ctx, p),
        "ResetDBParameterGroup" => rds.reset_parameter_group(ctx, p),
        "DescribeDBParameters" => rds.describe_parameters(p),
        "DeleteDBParameterGroup" => rds.delete_parameter_group(ctx, p),
        "DescribeDBParameterGroups" => rds.describe_parameter_groups(p),
        "AddTagsToResource" => rds.add_tags(p),
        "RemoveTagsFromResource" => rds.remove_tags(p),
        "ListTagsForResource" => rds.list_tags(p),
        _ => Err(ApiError::bad(
            "InvalidAction",
            format!("The action {op} is not valid for this web service (sandbox)."),
        )),
    };
    if envctl_aws_model::is_mutating("rds", op) {
        rds.next_due = 0.0;
    }
    out
}

/// DescribeDBEngineVersions: by engine, version (a full version or a major), DefaultOnly;
/// deprecated versions only with IncludeAll, as RDS does.
fn describe_engine_versions(catalogue: &Catalogue, p: &Params) -> String {
    let engine = p.get("Engine");
    let version = p.get("EngineVersion");
    let default_only = p.bool("DefaultOnly").unwrap_or(false);
    let include_all = p.bool("IncludeAll").unwrap_or(false);
    let mut x = Xml::new();
    x.open("DBEngineVersions");
    for v in &catalogue.rds_engine_versions {
        let version_matches = match version {
            None => true,
            Some(want) if want.contains('.') => v.version == want,
            Some(major) => v.version.split('.').next() == Some(major),
        };
        if engine.is_some_and(|e| e != v.engine)
            || !version_matches
            || (default_only && !v.default)
            || (!include_all && v.status != EngineVersionStatus::Available)
        {
            continue;
        }
        x.open("DBEngineVersion")
            .el("Engine", &v.engine)
            .el("EngineVersion", &v.version)
            .el("DBParameterGroupFamily", &v.family)
            .el("Status", &v.status)
            .close("DBEngineVersion");
    }
    x.close("DBEngineVersions");
    x.into_string()
}

/// DescribeOrderableDBInstanceOptions: the classes of the catalogue for each available
/// version of the engine (filtered by EngineVersion and DBInstanceClass).
fn describe_orderable(catalogue: &Catalogue, p: &Params) -> String {
    let engine = p.get("Engine").unwrap_or("postgres");
    let version = p.get("EngineVersion");
    let class = p.get("DBInstanceClass");
    let mut x = Xml::new();
    x.open("OrderableDBInstanceOptions");
    for v in catalogue
        .rds_engine_versions
        .iter()
        .filter(|v| v.engine == engine && v.status == EngineVersionStatus::Available)
        .filter(|v| version.is_none_or(|want| v.version == want))
    {
        for c in catalogue
            .rds_classes
            .iter()
            .filter(|c| class.is_none_or(|want| *c == want))
        {
            x.open("OrderableDBInstanceOption")
                .el("Engine", &v.engine)
                .el("EngineVersion", &v.version)
                .el("DBInstanceClass", c)
                .el("StorageType", "gp2")
                .el("MinStorageSize", 20)
                .el("MaxStorageSize", 65536)
                .close("OrderableDBInstanceOption");
        }
    }
    x.close("OrderableDBInstanceOptions");
    x.into_string()
}

fn combination(message: impl Into<String>) -> ApiError {
    ApiError::bad("InvalidParameterCombination", message)
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(
        404,
        "DBInstanceNotFound",
        format!("DBInstance {id} not found."),
    )
}

fn subnet_group_not_found(name: &str) -> ApiError {
    ApiError::new(
        404,
        "DBSubnetGroupNotFoundFault",
        format!("DB subnet group '{name}' does not exist."),
    )
}

fn pg_not_found(name: &str) -> ApiError {
    ApiError::new(
        404,
        "DBParameterGroupNotFound",
        format!("DBParameterGroup not found: {name}"),
    )
}

/// One `Parameters.Parameter.N` of a Modify or Reset call: its name and apply method
/// (`pending-reboot` when absent), checked against the family's catalogue: a name it knows,
/// and `immediate` only for a dynamic parameter (a static one takes effect only at a
/// reboot, and RDS says so).
fn checked_parameter<'p>(
    p: &'p Params,
    prefix: &str,
    cat: &[CatalogueEntry],
) -> Result<(&'p str, &'p str), ApiError> {
    let pname = p
        .get(&format!("{prefix}.ParameterName"))
        .ok_or_else(|| invalid("ParameterName is required"))?;
    let method = p
        .get(&format!("{prefix}.ApplyMethod"))
        .unwrap_or("pending-reboot");
    if method != ApplyMethod::Immediate && method != ApplyMethod::PendingReboot {
        return Err(invalid(format!("Invalid apply method: {method}")));
    }
    if !cat.is_empty() {
        let entry = cat
            .iter()
            .find(|e| e.0 == pname)
            .ok_or_else(|| invalid(format!("Could not find parameter with name: {pname}")))?;
        if entry.2 == "static" && method == ApplyMethod::Immediate {
            return Err(ApiError::bad(
                "InvalidParameterCombination",
                format!("cannot use immediate apply method for static parameter {pname}"),
            ));
        }
    }
    Ok((pname, method))
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad("InvalidParameterValue", message)
}

/// RDS identifiers: 1-63 letters, digits or hyphens, starting with a letter, no two
/// consecutive hyphens, not ending with a hyphen. Stored lowercase, as RDS does.
fn valid_identifier(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 63
        && id.starts_with(|c: char| c.is_ascii_alphabetic())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !id.contains("--")
        && !id.ends_with('-')
}

fn short(reference: &str) -> String {
    // `arn:aws:rds:region:account:db:name` or a plain identifier.
    reference
        .rsplit(':')
        .next()
        .unwrap_or(reference)
        .to_lowercase()
}

fn default_version(engine: &str) -> &'static str {
    match engine {
        "mysql" => "8.0.39",
        "mariadb" => "10.11.9",
        _ => "16.4",
    }
}

fn family_of(engine: &str, version: &str) -> String {
    let major = version.split('.').next().unwrap_or(version);
    match engine {
        "mysql" => format!(
            "mysql{}",
            version.split('.').take(2).collect::<Vec<_>>().join(".")
        ),
        "mariadb" => format!(
            "mariadb{}",
            version.split('.').take(2).collect::<Vec<_>>().join(".")
        ),
        e => format!("{e}{major}"),
    }
}

fn default_port(engine: &str) -> i64 {
    match engine {
        "mysql" | "mariadb" => 3306,
        _ => 5432,
    }
}

fn paginate<T: Clone>(items: &[T], p: &Params) -> Result<(Vec<T>, Option<String>), ApiError> {
    let max = p.int("MaxRecords")?.unwrap_or(100);
    if !(20..=100).contains(&max) {
        return Err(invalid(format!(
            "Invalid value {max} for MaxRecords. Must be between 20 and 100"
        )));
    }
    let start = match p.get("Marker") {
        None | Some("") => 0,
        Some(m) => decode_token(m).ok_or_else(|| invalid("Invalid Marker"))?,
    };
    let end = start.saturating_add(max as usize).min(items.len());
    let slice = items.get(start..end).map(<[T]>::to_vec).unwrap_or_default();
    Ok((slice, (end < items.len()).then(|| encode_token(end))))
}

/// What differs between the Describe calls of RDS's named groups (subnet and parameter
/// groups): the request parameter that names one, its not-found error, the result's list
/// element and how one group is rendered.
struct GroupDescribe<T> {
    name_param: &'static str,
    not_found: fn(&str) -> ApiError,
    list: &'static str,
    render: fn(&mut Xml, &T),
}

/// DescribeDBSubnetGroups and DescribeDBParameterGroups share one shape: the group named by
/// `name_param` (names are stored lowercased; the error repeats the name as given) or every
/// group in name order, paged by Marker and MaxRecords.
fn describe_groups<T>(
    p: &Params,
    groups: &BTreeMap<String, T>,
    how: GroupDescribe<T>,
) -> Result<String, ApiError> {
    let wanted: Vec<&T> = match p.get(how.name_param) {
        Some(name) => vec![
            groups
                .get(&name.to_lowercase())
                .ok_or_else(|| (how.not_found)(name))?,
        ],
        None => groups.values().collect(),
    };
    let (page, marker) = paginate(&wanted, p)?;
    let mut x = Xml::new();
    x.open(how.list);
    for g in page {
        (how.render)(&mut x, g);
    }
    x.close(how.list);
    x.opt("Marker", marker);
    Ok(x.into_string())
}

fn tag_list(x: &mut Xml, tags: &[(String, String)]) {
    x.open("TagList");
    for (k, v) in tags {
        x.open("Tag").el("Key", k).el("Value", v).close("Tag");
    }
    x.close("TagList");
}

impl RdsState {
    fn next(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The endpoint's host suffix: stable per account and Region, like RDS's.
    fn endpoint(ctx: &Ctx<'_>, id: &str) -> String {
        let h = crate::faults::hash_str(0, &[ctx.account, ctx.region]);
        let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let suffix: String = (0..11)
            .map(|i| alphabet[((h >> (i * 5)) % 36) as usize] as char)
            .collect();
        format!("{id}.c{suffix}.{}.rds.amazonaws.com", ctx.region)
    }

    pub fn settle(&mut self, ctx: &Ctx<'_>) {
        if self.next_due != 0.0 && ctx.now < self.next_due {
            return;
        }
        let mut next_due = f64::INFINITY;
        let mut removed = Vec::new();
        let mut upgraded: Vec<(Vec<String>, String)> = Vec::new();
        for inst in self.instances.values_mut() {
            while let Some((at, t)) = inst.transitions.first().cloned() {
                if at > ctx.now || ctx.faults.is_stuck("rds", &inst.id, &inst.status) {
                    next_due = next_due.min(at);
                    break;
                }
                inst.transitions.remove(0);
                match t {
                    Transition::Status(s) => {
                        if s == DbInstanceStatus::Available && inst.available_at.is_none() {
                            inst.available_at = Some(at);
                        }
                        inst.status = s;
                    }
                    Transition::ApplyPending => {
                        let pending = std::mem::take(&mut inst.pending);
                        if let Some(c) = pending.class {
                            inst.class = c;
                        }
                        if let Some(v) = pending.engine_version {
                            // "When you upgrade a PostgreSQL ... DB instance ... to its next
                            // major version, any read replicas associated with the database
                            // are also upgraded" (RDS User Guide, "Choosing a major version
                            // for an RDS for PostgreSQL upgrade").
                            let major = |v: &str| v.split('.').next().unwrap_or(v).to_string();
                            if major(&v) != major(&inst.engine_version) {
                                upgraded.push((inst.replicas.clone(), v.clone()));
                            }
                            inst.engine_version = v;
                        }
                        inst.status = "available".into();
                        if let Some(s) = pending.allocated_storage {
                            inst.allocated_storage = s;
                            inst.storage_changed_at = Some(at);
                            inst.status = "storage-optimization".into();
                            let end = at + STORAGE_OPTIMIZATION_SECS;
                            inst.transitions
                                .push((end, Transition::Status("available".into())));
                            inst.transitions.sort_by(|a, b| a.0.total_cmp(&b.0));
                        }
                    }
                    Transition::Rebooted => {
                        inst.status = "available".into();
                        inst.parameter_apply_status = "in-sync".into();
                    }
                    Transition::ParametersApplied => {
                        if inst.parameter_apply_status == ParameterApplyStatus::Applying {
                            inst.parameter_apply_status = "in-sync".into();
                        }
                    }
                    Transition::Remove => {
                        removed.push(inst.id.clone());
                        let until = at + ctx.profile.rds_parameter_group_release.as_secs_f64();
                        let release = self
                            .released_groups
                            .entry(inst.parameter_group.clone())
                            .or_insert(until);
                        *release = release.max(until);
                        break;
                    }
                }
            }
        }
        for (replicas, version) in upgraded {
            for r in replicas {
                if let Some(replica) = self.instances.get_mut(&r) {
                    replica.engine_version = version.clone();
                }
            }
        }
        for id in removed {
            if let Some(inst) = self.instances.remove(&id) {
                // Deleting a source promotes its replicas to standalone instances.
                for r in &inst.replicas {
                    if let Some(replica) = self.instances.get_mut(r) {
                        replica.source = None;
                    }
                }
                if let Some(src) = inst.source.as_ref().and_then(|s| self.instances.get_mut(s)) {
                    src.replicas.retain(|r| *r != id);
                }
            }
        }
        self.next_due = if ctx.faults.stuck.is_empty() {
            next_due
        } else {
            0.0
        };
    }

    fn instance_xml(&self, x: &mut Xml, i: &DbInstance, ctx: &Ctx<'_>) {
        x.open("DBInstance");
        x.el("DBInstanceIdentifier", &i.id)
            .el("DBInstanceClass", &i.class)
            .el("Engine", &i.engine)
            .el("DBInstanceStatus", &i.status)
            .el("MasterUsername", &i.master_username)
            .opt("DBName", i.db_name.as_ref());
        if let Some(arn) = &i.master_secret_arn {
            x.open("MasterUserSecret")
                .el("SecretArn", arn)
                .el("SecretStatus", "active")
                .close("MasterUserSecret");
        }
        // The endpoint exists once the instance is reachable (not while creating).
        if i.status != DbInstanceStatus::Creating {
            x.open("Endpoint")
                .el("Address", Self::endpoint(ctx, &i.id))
                .el("Port", i.port)
                .el("HostedZoneId", "Z2R2ITUGPM61AM")
                .close("Endpoint");
        }
        x.el("AllocatedStorage", i.allocated_storage)
            .opt("InstanceCreateTime", i.available_at.map(timestamp))
            .el("PreferredBackupWindow", "03:00-03:30")
            .el(
                "BackupRetentionPeriod",
                if i.source.is_some() { 0 } else { 1 },
            );
        x.open("VpcSecurityGroups");
        for sg in &i.vpc_security_groups {
            x.open("VpcSecurityGroupMembership")
                .el("VpcSecurityGroupId", sg)
                .el("Status", "active")
                .close("VpcSecurityGroupMembership");
        }
        x.close("VpcSecurityGroups");
        x.open("DBParameterGroups")
            .open("DBParameterGroup")
            .el("DBParameterGroupName", &i.parameter_group)
            .el("ParameterApplyStatus", &i.parameter_apply_status)
            .close("DBParameterGroup")
            .close("DBParameterGroups");
        if let Some(g) = &i.subnet_group {
            x.open("DBSubnetGroup")
                .el("DBSubnetGroupName", g)
                .close("DBSubnetGroup");
        }
        x.el("AvailabilityZone", &i.availability_zone)
            .el("PreferredMaintenanceWindow", "sun:05:00-sun:05:30");
        x.open("PendingModifiedValues")
            .opt("DBInstanceClass", i.pending.class.as_ref())
            .opt("AllocatedStorage", i.pending.allocated_storage)
            .close("PendingModifiedValues");
        x.el("MultiAZ", i.multi_az)
            .el("EngineVersion", &i.engine_version)
            .el("AutoMinorVersionUpgrade", true)
            .opt("ReadReplicaSourceDBInstanceIdentifier", i.source.as_ref());
        x.open("ReadReplicaDBInstanceIdentifiers");
        for r in &i.replicas {
            x.el("ReadReplicaDBInstanceIdentifier", r);
        }
        x.close("ReadReplicaDBInstanceIdentifiers");
        x.el("LicenseModel", "postgresql-license")
            .el("PubliclyAccessible", i.publicly_accessible)
            .el("StorageType", &i.storage_type)
            .el("DbInstancePort", 0)
            .el("StorageEncrypted", false)
            .el("DbiResourceId", &i.resource_id)
            .el("DBInstanceArn", &i.arn)
            .el("DeletionProtection", false);
        tag_list(x, &i.tags);
        x.close("DBInstance");
    }

    fn one_instance(&self, ctx: &Ctx<'_>, id: &str) -> String {
        let mut x = Xml::new();
        if let Some(i) = self.instances.get(id) {
            self.instance_xml(&mut x, i, ctx);
        }
        x.into_string()
    }

    fn check_parameter_group(&self, name: &str) -> Result<(), ApiError> {
        if name.starts_with("default.") || self.parameter_groups.contains_key(name) {
            Ok(())
        } else {
            Err(pg_not_found(name))
        }
    }

    fn create_db_instance(
        &mut self,
        ctx: &Ctx<'_>,
        catalogue: &Catalogue,
        p: &Params,
    ) -> Result<String, ApiError> {
        let id = p.required("DBInstanceIdentifier")?.to_lowercase();
        if !valid_identifier(&id) {
            return Err(invalid(format!(
                "The parameter DBInstanceIdentifier is not a valid identifier: {id}"
            )));
        }
        let class = p.required("DBInstanceClass")?.to_string();
        let engine = p.required("Engine")?.to_string();
        let storage = p.int("AllocatedStorage")?.unwrap_or(0);
        if !(20..=65536).contains(&storage) {
            return Err(invalid(format!(
                "Invalid storage size for engine name {engine} and storage type gp2: {storage}"
            )));
        }
        let master = p.required("MasterUsername")?.to_string();
        if self.instances.contains_key(&id) {
            return Err(ApiError::bad(
                "DBInstanceAlreadyExists",
                "DB instance already exists",
            ));
        }
        // A major ("16") takes the default minor; a minor RDS no longer offers is refused.
        let version = if engine == "postgres" {
            catalogue
                .resolve_engine_version(&engine, p.get("EngineVersion"))
                .ok_or_else(|| {
                    combination(format!(
                        "Cannot find version {} for {engine}",
                        p.get("EngineVersion").unwrap_or("(default)")
                    ))
                })?
        } else {
            p.get("EngineVersion")
                .unwrap_or(default_version(&engine))
                .to_string()
        };
        if engine == "postgres" && !catalogue.rds_class_orderable(&class) {
            return Err(combination(format!(
                "RDS does not support creating a DB instance with the following combination: DBInstanceClass={class}, Engine={engine}, EngineVersion={version}, LicenseModel=postgresql-license."
            )));
        }
        let subnet_group = match p.get("DBSubnetGroupName") {
            Some(name) => {
                let name = name.to_lowercase();
                if !self.subnet_groups.contains_key(&name) {
                    return Err(subnet_group_not_found(&name));
                }
                Some(name)
            }
            None => None,
        };
        // In the default VPC (no subnet group) an instance is public unless told otherwise
        // (CreateDBInstance API reference, PubliclyAccessible).
        let publicly_accessible = p
            .bool("PubliclyAccessible")
            .unwrap_or(subnet_group.is_none());
        let pg = p
            .get("DBParameterGroupName")
            .map(str::to_string)
            .unwrap_or_else(|| format!("default.{}", family_of(&engine, &version)));
        self.check_parameter_group(&pg)?;
        // A custom group must be of the instance's family (the error quoted in
        // aws-quickstart/quickstart-r3-corda#25 and mattermost-load-test-ng#707).
        let wanted = family_of(&engine, &version);
        if let Some(g) = self.parameter_groups.get(&pg)
            && g.family != wanted
        {
            return Err(combination(format!(
                "The parameter group {pg} with DBParameterGroupFamily {} can't be used for this instance. Use a parameter group with DBParameterGroupFamily {wanted}.",
                g.family
            )));
        }
        check_master_password(
            p.get("MasterUserPassword"),
            p.bool("ManageMasterUserPassword").unwrap_or(false),
        )?;
        let group_unsettled = self
            .parameter_groups
            .get(&pg)
            .and_then(|g| g.modified_at)
            .is_some_and(|at| ctx.now - at < GROUP_SETTLE_SECS);
        let n = self.next();
        let create = ctx.profile.rds_create.as_secs_f64();
        let backup = ctx.profile.rds_backup.as_secs_f64().min(create);
        let inst = DbInstance {
            arn: ctx.arn("rds", &format!("db:{id}")),
            resource_id: format!("db-{}", resource_suffix(n)),
            class,
            port: p.int("Port")?.unwrap_or(default_port(&engine)),
            engine,
            engine_version: version,
            allocated_storage: storage,
            storage_type: p.get("StorageType").unwrap_or("gp2").to_string(),
            master_username: master,
            db_name: p.get("DBName").map(str::to_string),
            parameter_group: pg,
            parameter_apply_status: if group_unsettled {
                "pending-reboot".into()
            } else {
                "in-sync".into()
            },
            availability_zone: p
                .get("AvailabilityZone")
                .map(str::to_string)
                .unwrap_or_else(|| format!("{}a", ctx.region)),
            multi_az: p.bool("MultiAZ").unwrap_or(false),
            vpc_security_groups: p.strings("VpcSecurityGroupIds", "VpcSecurityGroupId"),
            status: "creating".into(),
            created_at: ctx.now,
            available_at: None,
            source: None,
            replicas: Vec::new(),
            tags: p.tags(),
            pending: Pending::default(),
            transitions: vec![
                (
                    ctx.now + create - backup,
                    Transition::Status("backing-up".into()),
                ),
                (ctx.now + create, Transition::Status("available".into())),
            ],
            id: id.clone(),
            subnet_group,
            publicly_accessible,
            storage_changed_at: None,
            // RDS names the secret rds!db-<uuid> (Secrets Manager adds a 6-character suffix).
            master_secret_arn: p
                .bool("ManageMasterUserPassword")
                .unwrap_or(false)
                .then(|| {
                    ctx.arn(
                        "secretsmanager",
                        &format!(
                            "secret:rds!db-{}-{}",
                            crate::util::uuid_like("rds-secret", n),
                            &resource_suffix(n)[..6].to_ascii_lowercase()
                        ),
                    )
                }),
        };
        self.instances.insert(id.clone(), inst);
        Ok(self.one_instance(ctx, &id))
    }

    fn create_read_replica(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let id = p.required("DBInstanceIdentifier")?.to_lowercase();
        if !valid_identifier(&id) {
            return Err(invalid(format!(
                "The parameter DBInstanceIdentifier is not a valid identifier: {id}"
            )));
        }
        let source_id = short(p.required("SourceDBInstanceIdentifier")?);
        if self.instances.contains_key(&id) {
            return Err(ApiError::bad(
                "DBInstanceAlreadyExists",
                "DB instance already exists",
            ));
        }
        let source = self
            .instances
            .get(&source_id)
            .cloned()
            .ok_or_else(|| not_found(&source_id))?;
        if source.status != DbInstanceStatus::Available {
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!("DB Instance {source_id} is not in available state."),
            ));
        }
        // RDS User Guide, "Password management with Amazon RDS and AWS Secrets Manager",
        // Limitations: no read replica of a source whose master password Secrets Manager
        // manages (all engines but SQL Server); the error as terraform-aws-rds#532 got it.
        if source.master_secret_arn.is_some() && !source.engine.starts_with("sqlserver") {
            return Err(invalid(format!(
                "Creating read replicas for source instance with engine {} where ManageMasterUserPassword is enabled is not supported.",
                source.engine
            )));
        }
        if source.source.is_some() {
            // PostgreSQL supports cascading replicas only in newer versions; keep it simple.
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!("DB Instance {source_id} is a read replica."),
            ));
        }
        // Same-Region replicas of these engines inherit the source's parameter group
        // (CreateDBInstanceReadReplica API reference, DBParameterGroupName).
        if p.get("DBParameterGroupName").is_some()
            && matches!(source.engine.as_str(), "postgres" | "mysql" | "mariadb")
        {
            return Err(combination(format!(
                "A parameter group can't be specified during Read Replica creation for the following DB engine: {}",
                source.engine
            )));
        }
        let pg = source.parameter_group.clone();
        self.check_parameter_group(&pg)?;
        let subnet_group = match p.get("DBSubnetGroupName") {
            Some(name) => {
                let name = name.to_lowercase();
                if !self.subnet_groups.contains_key(&name) {
                    return Err(subnet_group_not_found(&name));
                }
                Some(name)
            }
            None => source.subnet_group.clone(),
        };
        let n = self.next();
        let inst = DbInstance {
            arn: ctx.arn("rds", &format!("db:{id}")),
            resource_id: format!("db-{}", resource_suffix(n)),
            class: p
                .get("DBInstanceClass")
                .map(str::to_string)
                .unwrap_or_else(|| source.class.clone()),
            engine: source.engine.clone(),
            engine_version: source.engine_version.clone(),
            allocated_storage: source.allocated_storage,
            storage_type: p
                .get("StorageType")
                .map(str::to_string)
                .unwrap_or_else(|| source.storage_type.clone()),
            master_username: source.master_username.clone(),
            db_name: source.db_name.clone(),
            port: p.int("Port")?.unwrap_or(source.port),
            parameter_group: pg,
            parameter_apply_status: "in-sync".into(),
            availability_zone: p
                .get("AvailabilityZone")
                .map(str::to_string)
                .unwrap_or_else(|| format!("{}b", ctx.region)),
            multi_az: p.bool("MultiAZ").unwrap_or(false),
            vpc_security_groups: {
                let given = p.strings("VpcSecurityGroupIds", "VpcSecurityGroupId");
                if given.is_empty() {
                    source.vpc_security_groups.clone()
                } else {
                    given
                }
            },
            status: "creating".into(),
            created_at: ctx.now,
            available_at: None,
            source: Some(source_id.clone()),
            replicas: Vec::new(),
            tags: p.tags(),
            pending: Pending::default(),
            transitions: vec![(
                ctx.now + ctx.profile.rds_replica_create.as_secs_f64(),
                Transition::Status("available".into()),
            )],
            id: id.clone(),
            publicly_accessible: p
                .bool("PubliclyAccessible")
                .unwrap_or(source.publicly_accessible),
            subnet_group,
            storage_changed_at: None,
            master_secret_arn: None,
        };
        self.instances.insert(id.clone(), inst);
        if let Some(src) = self.instances.get_mut(&source_id) {
            src.replicas.push(id.clone());
        }
        Ok(self.one_instance(ctx, &id))
    }

    fn describe_db_instances(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let mut ids: Vec<String> = match p.get("DBInstanceIdentifier") {
            Some(id) => {
                let id = short(id);
                if !self.instances.contains_key(&id) {
                    return Err(not_found(&id));
                }
                vec![id]
            }
            None => self.instances.keys().cloned().collect(),
        };
        for f in p.list_prefixes("Filters", "Filter") {
            let name = p.get(&format!("{f}.Name")).unwrap_or("");
            let values = p.strings(&format!("{f}.Values"), "Value");
            match name {
                "db-instance-id" => {
                    let wanted: Vec<String> = values.iter().map(|v| short(v)).collect();
                    ids.retain(|id| wanted.contains(id));
                }
                "engine" => ids.retain(|id| {
                    self.instances
                        .get(id)
                        .is_some_and(|i| values.contains(&i.engine))
                }),
                "dbi-resource-id" => ids.retain(|id| {
                    self.instances
                        .get(id)
                        .is_some_and(|i| values.contains(&i.resource_id))
                }),
                other => {
                    return Err(invalid(format!("Unrecognized filter name: {other}")));
                }
            }
        }
        let (page, marker) = paginate(&ids, p)?;
        let mut x = Xml::new();
        x.open("DBInstances");
        for id in &page {
            if let Some(i) = self.instances.get(id) {
                self.instance_xml(&mut x, i, ctx);
            }
        }
        x.close("DBInstances");
        x.opt("Marker", marker);
        Ok(x.into_string())
    }

    fn modify_db_instance(
        &mut self,
        ctx: &Ctx<'_>,
        catalogue: &Catalogue,
        p: &Params,
    ) -> Result<String, ApiError> {
        let id = short(p.required("DBInstanceIdentifier")?);
        let immediately = p.bool("ApplyImmediately").unwrap_or(false);
        let class = p.get("DBInstanceClass").map(str::to_string);
        let storage = p.int("AllocatedStorage")?;
        let pg = p.get("DBParameterGroupName").map(str::to_string);
        if let Some(g) = &pg {
            self.check_parameter_group(g)?;
        }
        let version = self.version_change(catalogue, &id, p)?;
        let inst = self.instances.get_mut(&id).ok_or_else(|| not_found(&id))?;
        // storage-optimization is a usable state: other modifications are accepted.
        if inst.status != DbInstanceStatus::Available
            && inst.status != DbInstanceStatus::StorageOptimization
        {
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!(
                    "Database instance is not in available state. Current state: {}",
                    inst.status
                ),
            ));
        }
        if let Some(s) = storage
            && s < inst.allocated_storage
        {
            return Err(invalid(
                "Invalid storage size: the allocated storage can only be increased.",
            ));
        }
        if let Some(s) = storage.filter(|s| *s != inst.allocated_storage) {
            // RDS User Guide, "Increasing DB instance storage capacity": an increase of at
            // least 10%, and none within six hours of the last one or during optimization.
            if s * 10 < inst.allocated_storage * 11 {
                return Err(combination(format!(
                    "Invalid storage size: the new allocated storage ({s} GiB) must be at least 10% greater than the current allocated storage ({} GiB).",
                    inst.allocated_storage
                )));
            }
            if let Some(at) = inst.storage_changed_at
                && (ctx.now - at < STORAGE_CHANGE_COOLDOWN_SECS
                    || inst.status == DbInstanceStatus::StorageOptimization)
            {
                return Err(combination(
                    "You can't currently modify the storage of this DB instance because the previous storage change is being optimized or was made less than six hours ago.",
                ));
            }
        }
        let class_change = class.as_ref().filter(|c| **c != inst.class).cloned();
        let storage_change = storage.filter(|s| *s != inst.allocated_storage);
        let pg_change = pg.filter(|g| *g != inst.parameter_group);
        if let Some(c) = class_change.clone() {
            inst.pending.class = Some(c);
        }
        if let Some(s) = storage_change {
            inst.pending.allocated_storage = Some(s);
        }
        if let Some(v) = version {
            inst.pending.engine_version = Some(v);
        }
        if let Some(g) = pg_change {
            // A new parameter group is attached at once; its static values wait for a reboot.
            inst.parameter_group = g;
            inst.parameter_apply_status = "pending-reboot".into();
        }
        if immediately && !inst.pending.is_empty() {
            // The AWS quirk: the status stays "available" for a few seconds after the call.
            let start = ctx.now + ctx.profile.rds_modify_delay.as_secs_f64();
            let duration = if inst.pending.class.is_some() {
                ctx.profile.rds_class_change
            } else {
                ctx.profile.rds_other_change
            };
            inst.transitions
                .retain(|(_, t)| *t != Transition::ApplyPending);
            inst.transitions
                .push((start, Transition::Status("modifying".into())));
            inst.transitions
                .push((start + duration.as_secs_f64(), Transition::ApplyPending));
            inst.transitions.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        Ok(self.one_instance(ctx, &id))
    }

    /// ModifyDBInstance's `EngineVersion`, resolved (a major alone takes its default minor),
    /// when it changes the version. A new major needs `AllowMajorVersionUpgrade`, and an
    /// instance on a custom parameter group needs a new group of the target's family named
    /// in the same call: the group's family is fixed and the old one cannot serve the new
    /// major ("The current DB instance parameter group X is custom. You must explicitly
    /// specify a new DB instance parameter group, either default or custom, for the engine
    /// version upgrade.", InvalidParameterCombination: aws/aws-cli#5939,
    /// cloudposse/terraform-aws-rds-cluster#134).
    fn version_change(
        &self,
        catalogue: &Catalogue,
        id: &str,
        p: &Params,
    ) -> Result<Option<String>, ApiError> {
        let Some(requested) = p.get("EngineVersion") else {
            return Ok(None);
        };
        let inst = self.instances.get(id).ok_or_else(|| not_found(id))?;
        let version = catalogue
            .resolve_engine_version(&inst.engine, Some(requested))
            .ok_or_else(|| {
                combination(format!(
                    "Cannot find version {requested} for {}",
                    inst.engine
                ))
            })?;
        if version == inst.engine_version {
            return Ok(None);
        }
        let major = |v: &str| v.split('.').next().unwrap_or(v).to_string();
        if major(&version) == major(&inst.engine_version) {
            return Ok(Some(version));
        }
        if !p.bool("AllowMajorVersionUpgrade").unwrap_or(false) {
            return Err(combination(
                "The AllowMajorVersionUpgrade flag must be present when upgrading to a new major version.",
            ));
        }
        let wanted = family_of(&inst.engine, &version);
        match p.get("DBParameterGroupName") {
            Some(g) => {
                let family = self
                    .parameter_groups
                    .get(g)
                    .map(|g| g.family.clone())
                    .unwrap_or_else(|| g.trim_start_matches("default.").to_string());
                if family != wanted {
                    return Err(combination(format!(
                        "The parameter group {g} with DBParameterGroupFamily {family} can't be used for this instance. Use a parameter group with DBParameterGroupFamily {wanted}."
                    )));
                }
            }
            None if !inst.parameter_group.starts_with("default.") => {
                return Err(combination(format!(
                    "The current DB instance parameter group {} is custom. You must explicitly specify a new DB instance parameter group, either default or custom, for the engine version upgrade.",
                    inst.parameter_group
                )));
            }
            None => {}
        }
        Ok(Some(version))
    }

    fn delete_db_instance(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let id = short(p.required("DBInstanceIdentifier")?);
        let skip = p.bool("SkipFinalSnapshot").unwrap_or(false);
        if !skip && p.get("FinalDBSnapshotIdentifier").is_none() {
            return Err(ApiError::bad(
                "InvalidParameterCombination",
                "FinalDBSnapshotIdentifier is required unless SkipFinalSnapshot is specified.",
            ));
        }
        let inst = self.instances.get_mut(&id).ok_or_else(|| not_found(&id))?;
        if inst.status == DbInstanceStatus::Deleting {
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!("Instance {id} is already being deleted."),
            ));
        }
        if let Some(snapshot) = p.get("FinalDBSnapshotIdentifier").filter(|_| !skip) {
            // A replica has no snapshot of its own (the error as cloud-custodian#417 and
            // fog/fog-aws#74 quote it); a snapshot identifier is used once per account and
            // Region, and the snapshot outlives the instance (the error as
            // cloud-custodian#309 and terraform-aws-modules/terraform-aws-rds#445 quote it).
            if inst.source.is_some() {
                return Err(ApiError::bad(
                    "InvalidParameterCombination",
                    "FinalDBSnapshotIdentifier can not be specified when deleting a replica instance",
                ));
            }
            if self.final_snapshots.contains_key(snapshot) {
                return Err(ApiError::bad(
                    "DBSnapshotAlreadyExists",
                    format!(
                        "Cannot create the snapshot because a snapshot with the identifier {snapshot} already exists."
                    ),
                ));
            }
            self.final_snapshots
                .insert(snapshot.to_string(), id.clone());
        }
        let Some(inst) = self.instances.get_mut(&id) else {
            return Err(not_found(&id));
        };
        inst.status = "deleting".into();
        inst.transitions = vec![(
            ctx.now + ctx.profile.rds_delete.as_secs_f64(),
            Transition::Remove,
        )];
        Ok(self.one_instance(ctx, &id))
    }

    /// RebootDBInstance: "rebooting" for `rds_reboot`, which applies pending static
    /// parameters (ParameterApplyStatus pending-reboot -> in-sync).
    fn reboot_db_instance(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let id = short(p.required("DBInstanceIdentifier")?);
        let inst = self.instances.get_mut(&id).ok_or_else(|| not_found(&id))?;
        if inst.status != DbInstanceStatus::Available {
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!(
                    "Instance {id} is not in available state. Current state: {}",
                    inst.status
                ),
            ));
        }
        // A modification is about to start (the few "available" seconds after Modify): the
        // sandbox does not interleave a reboot with it.
        if !inst.transitions.is_empty() {
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!("Instance {id} has a modification in progress."),
            ));
        }
        inst.status = "rebooting".into();
        inst.transitions.push((
            ctx.now + ctx.profile.rds_reboot.as_secs_f64(),
            Transition::Rebooted,
        ));
        Ok(self.one_instance(ctx, &id))
    }

    fn subnet_group_xml(x: &mut Xml, g: &SubnetGroup) {
        x.open("DBSubnetGroup")
            .el("DBSubnetGroupName", &g.name)
            .el("DBSubnetGroupDescription", &g.description)
            .el("SubnetGroupStatus", "Complete")
            .el("DBSubnetGroupArn", &g.arn);
        x.open("Subnets");
        for s in &g.subnets {
            x.open("Subnet")
                .el("SubnetIdentifier", s)
                .el("SubnetStatus", "Active")
                .close("Subnet");
        }
        x.close("Subnets").close("DBSubnetGroup");
    }

    /// CreateDBSubnetGroup: at least two subnets (RDS needs two Availability Zones).
    fn create_subnet_group(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let name = p.required("DBSubnetGroupName")?.to_lowercase();
        let description = p.required("DBSubnetGroupDescription")?.to_string();
        let subnets = p.strings("SubnetIds", "SubnetIdentifier");
        if name == "default" || !valid_identifier(&name) {
            return Err(invalid(format!(
                "The parameter DBSubnetGroupName is not a valid identifier: {name}"
            )));
        }
        if subnets.len() < 2 {
            return Err(ApiError::bad(
                "DBSubnetGroupDoesNotCoverEnoughAZs",
                "The DB subnet group doesn't meet Availability Zone (AZ) coverage requirement. Current AZ coverage: 1. Add subnets to cover at least 2 AZs.",
            ));
        }
        if self.subnet_groups.contains_key(&name) {
            return Err(ApiError::bad(
                "DBSubnetGroupAlreadyExists",
                format!("The DB subnet group '{name}' already exists."),
            ));
        }
        let g = SubnetGroup {
            arn: ctx.arn("rds", &format!("subgrp:{name}")),
            name: name.clone(),
            description,
            subnets,
            tags: p.tags(),
        };
        let mut x = Xml::new();
        Self::subnet_group_xml(&mut x, &g);
        self.subnet_groups.insert(name, g);
        Ok(x.into_string())
    }

    fn describe_subnet_groups(&mut self, p: &Params) -> Result<String, ApiError> {
        describe_groups(
            p,
            &self.subnet_groups,
            GroupDescribe {
                name_param: "DBSubnetGroupName",
                not_found: subnet_group_not_found,
                list: "DBSubnetGroups",
                render: Self::subnet_group_xml,
            },
        )
    }

    /// DeleteDBSubnetGroup: refused while an instance still uses the group.
    fn delete_subnet_group(&mut self, p: &Params) -> Result<String, ApiError> {
        let name = p.required("DBSubnetGroupName")?.to_lowercase();
        if !self.subnet_groups.contains_key(&name) {
            return Err(subnet_group_not_found(&name));
        }
        if let Some(user) = self
            .instances
            .values()
            .find(|i| i.subnet_group.as_deref() == Some(name.as_str()))
        {
            return Err(ApiError::bad(
                "InvalidDBSubnetGroupStateFault",
                format!(
                    "Cannot delete the subnet group '{name}' because at least one database instance: {} is still using it.",
                    user.id
                ),
            ));
        }
        self.subnet_groups.remove(&name);
        Ok(String::new())
    }

    /// The control API's automatic minor version upgrade: the instance (and its replicas)
    /// move to the newest available minor of their major, as RDS does in a maintenance
    /// window when AutoMinorVersionUpgrade is on (the default). Returns the new version.
    pub fn auto_minor_upgrade(&mut self, catalogue: &Catalogue, id: &str) -> Option<String> {
        let inst = self.instances.get(id)?;
        let next = catalogue.next_minor(&inst.engine, &inst.engine_version)?;
        let mut ids = vec![id.to_string()];
        ids.extend(inst.replicas.iter().cloned());
        for i in ids {
            if let Some(inst) = self.instances.get_mut(&i) {
                inst.engine_version = next.clone();
            }
        }
        Some(next)
    }

    fn parameter_group_xml(x: &mut Xml, g: &ParameterGroup) {
        x.open("DBParameterGroup")
            .el("DBParameterGroupName", &g.name)
            .el("DBParameterGroupFamily", &g.family)
            .el("Description", &g.description)
            .el("DBParameterGroupArn", &g.arn)
            .close("DBParameterGroup");
    }

    /// DescribeDBParameterGroups: one group by name, or every group (paged). Like
    /// DescribeDBSubnetGroups it carries no tags: ownership is read with
    /// ListTagsForResource on the group's ARN.
    fn describe_parameter_groups(&mut self, p: &Params) -> Result<String, ApiError> {
        describe_groups(
            p,
            &self.parameter_groups,
            GroupDescribe {
                name_param: "DBParameterGroupName",
                not_found: pg_not_found,
                list: "DBParameterGroups",
                render: Self::parameter_group_xml,
            },
        )
    }

    fn create_parameter_group(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let name = p.required("DBParameterGroupName")?.to_lowercase();
        let family = p.required("DBParameterGroupFamily")?.to_string();
        let description = p.required("Description")?.to_string();
        if name.starts_with("default.") || !valid_identifier(&name) {
            return Err(invalid(format!(
                "The parameter DBParameterGroupName is not a valid identifier: {name}"
            )));
        }
        if self.parameter_groups.contains_key(&name) {
            return Err(ApiError::bad(
                "DBParameterGroupAlreadyExists",
                format!("Parameter group {name} already exists"),
            ));
        }
        let g = ParameterGroup {
            arn: ctx.arn("rds", &format!("pg:{name}")),
            name: name.clone(),
            family,
            description,
            values: BTreeMap::new(),
            tags: p.tags(),
            modified_at: None,
        };
        let mut x = Xml::new();
        Self::parameter_group_xml(&mut x, &g);
        self.parameter_groups.insert(name, g);
        Ok(x.into_string())
    }

    fn modify_parameter_group(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let name = p.required("DBParameterGroupName")?.to_lowercase();
        let g = self
            .parameter_groups
            .get_mut(&name)
            .ok_or_else(|| pg_not_found(&name))?;
        let items = p.list_prefixes("Parameters", "Parameter");
        if items.is_empty() || items.len() > 20 {
            return Err(invalid(
                "You must specify between 1 and 20 parameters per ModifyDBParameterGroup call.",
            ));
        }
        let cat = catalogue(&g.family);
        let mut changes = Vec::new();
        for prefix in items {
            let (pname, method) = checked_parameter(p, &prefix, cat)?;
            let value = p.get(&format!("{prefix}.ParameterValue")).unwrap_or("");
            changes.push((pname.to_string(), value.to_string(), method.to_string()));
        }
        let needs_reboot = changes
            .iter()
            .any(|(_, _, m)| m == ApplyMethod::PendingReboot);
        for (n, v, m) in changes {
            g.values.insert(n, (v, m));
        }
        g.modified_at = Some(ctx.now);
        self.mark_group_users(ctx, &name, needs_reboot);
        let mut x = Xml::new();
        x.el("DBParameterGroupName", &name);
        Ok(x.into_string())
    }

    /// Instances using the group show that a reboot is needed to apply a change, or, for
    /// immediate (dynamic) changes only, that they are applying it.
    fn mark_group_users(&mut self, ctx: &Ctx<'_>, name: &str, needs_reboot: bool) {
        for inst in self.instances.values_mut() {
            if inst.parameter_group != name {
                continue;
            }
            if needs_reboot {
                inst.parameter_apply_status = "pending-reboot".into();
            } else if inst.parameter_apply_status != ParameterApplyStatus::PendingReboot {
                inst.parameter_apply_status = "applying".into();
                inst.transitions
                    .push((ctx.now + APPLYING_SECS, Transition::ParametersApplied));
                inst.transitions.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
        }
    }

    /// ResetDBParameterGroup: the named parameters (1 to 20, each with its ApplyMethod), or
    /// every one with `ResetAllParameters`, go back to the engine default, which is what
    /// DescribeDBParameters' `Source=user` then no longer lists. Applied like a
    /// modification: `pending-reboot` or, for dynamic parameters, `immediate` (RDS API
    /// Reference, ResetDBParameterGroup).
    fn reset_parameter_group(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let name = p.required("DBParameterGroupName")?.to_lowercase();
        let g = self
            .parameter_groups
            .get_mut(&name)
            .ok_or_else(|| pg_not_found(&name))?;
        let items = p.list_prefixes("Parameters", "Parameter");
        let all = p.bool("ResetAllParameters").unwrap_or(false);
        let needs_reboot = if all && items.is_empty() {
            g.values.clear();
            true
        } else {
            if all || items.is_empty() || items.len() > 20 {
                return Err(invalid(
                    "You must specify between 1 and 20 parameters per ResetDBParameterGroup call, or ResetAllParameters without parameters.",
                ));
            }
            let cat = catalogue(&g.family);
            let mut names = Vec::new();
            let mut needs_reboot = false;
            for prefix in items {
                let (pname, method) = checked_parameter(p, &prefix, cat)?;
                needs_reboot |= method == ApplyMethod::PendingReboot;
                names.push(pname.to_string());
            }
            for n in names {
                g.values.remove(&n);
            }
            needs_reboot
        };
        g.modified_at = Some(ctx.now);
        self.mark_group_users(ctx, &name, needs_reboot);
        let mut x = Xml::new();
        x.el("DBParameterGroupName", &name);
        Ok(x.into_string())
    }

    fn describe_parameters(&mut self, p: &Params) -> Result<String, ApiError> {
        let name = p.required("DBParameterGroupName")?.to_lowercase();
        let (family, values) = match self.parameter_groups.get(&name) {
            Some(g) => (g.family.clone(), g.values.clone()),
            None => match name.strip_prefix("default.") {
                Some(f) => (f.to_string(), BTreeMap::new()),
                None => return Err(pg_not_found(&name)),
            },
        };
        let source = p.get("Source");
        let mut rows: Vec<ParameterRow> = Vec::new();
        let cat = catalogue(&family);
        for e in cat {
            let (value, src, method) = match values.get(e.0) {
                Some((v, m)) => (Some(v.clone()), "user", m.clone()),
                None => (
                    (!e.1.is_empty()).then(|| e.1.to_string()),
                    if e.1.starts_with('{') || e.1.contains('(') {
                        "system"
                    } else {
                        "engine-default"
                    },
                    "pending-reboot".to_string(),
                ),
            };
            rows.push((e.0.to_string(), value, src, e.2, e.3, e.4, e.5, method));
        }
        for (n, (v, m)) in &values {
            if !cat.iter().any(|e| e.0 == n) {
                rows.push((
                    n.clone(),
                    Some(v.clone()),
                    "user",
                    "dynamic",
                    "string",
                    "",
                    "",
                    m.clone(),
                ));
            }
        }
        if let Some(s) = source {
            rows.retain(|r| r.2 == s);
        }
        let (page, marker) = paginate(&rows, p)?;
        let mut x = Xml::new();
        x.open("Parameters");
        for (n, v, src, apply_type, data_type, allowed, desc, method) in page {
            x.open("Parameter")
                .el("ParameterName", n)
                .opt("ParameterValue", v)
                .el("Description", desc)
                .el("Source", src)
                .el("ApplyType", apply_type)
                .el("DataType", data_type)
                .el("AllowedValues", allowed)
                .el("IsModifiable", true)
                .el("ApplyMethod", method)
                .close("Parameter");
        }
        x.close("Parameters");
        x.opt("Marker", marker);
        Ok(x.into_string())
    }

    fn delete_parameter_group(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let name = p.required("DBParameterGroupName")?.to_lowercase();
        if name.starts_with("default.") {
            return Err(ApiError::bad(
                "InvalidDBParameterGroupState",
                "Default DBParameterGroup cannot be deleted",
            ));
        }
        if !self.parameter_groups.contains_key(&name) {
            return Err(pg_not_found(&name));
        }
        // A member deleted a moment ago still counts: RDS refuses the group for a while
        // after its last instance is gone (terraform-aws-modules/terraform-aws-rds#78: the
        // instance is deleted, the group's delete fails, the same delete passes later;
        // terraform-provider-aws retries it for 3 minutes, hashicorp/terraform#15071).
        let lingering = self
            .released_groups
            .get(&name)
            .is_some_and(|until| *until > ctx.now);
        if lingering || self.instances.values().any(|i| i.parameter_group == name) {
            return Err(ApiError::bad(
                "InvalidDBParameterGroupState",
                format!(
                    "One or more database instances are still members of this parameter group {name}, so the group cannot be deleted"
                ),
            ));
        }
        self.parameter_groups.remove(&name);
        Ok(String::new())
    }

    fn tags_mut(&mut self, arn: &str) -> Result<&mut Vec<(String, String)>, ApiError> {
        let name = short(arn);
        if arn.contains(":pg:") {
            return self
                .parameter_groups
                .get_mut(&name)
                .map(|g| &mut g.tags)
                .ok_or_else(|| pg_not_found(&name));
        }
        if arn.contains(":subgrp:") {
            return self
                .subnet_groups
                .get_mut(&name)
                .map(|g| &mut g.tags)
                .ok_or_else(|| subnet_group_not_found(&name));
        }
        self.instances
            .get_mut(&name)
            .map(|i| &mut i.tags)
            .ok_or_else(|| not_found(&name))
    }

    fn add_tags(&mut self, p: &Params) -> Result<String, ApiError> {
        let arn = p.required("ResourceName")?.to_string();
        let tags = p.tags();
        merge_tags(self.tags_mut(&arn)?, tags);
        Ok(String::new())
    }

    fn remove_tags(&mut self, p: &Params) -> Result<String, ApiError> {
        let arn = p.required("ResourceName")?.to_string();
        let keys = p.strings("TagKeys", "member");
        self.tags_mut(&arn)?.retain(|(k, _)| !keys.contains(k));
        Ok(String::new())
    }

    fn list_tags(&mut self, p: &Params) -> Result<String, ApiError> {
        let arn = p.required("ResourceName")?.to_string();
        let tags = self.tags_mut(&arn)?.clone();
        let mut x = Xml::new();
        tag_list(&mut x, &tags);
        Ok(x.into_string())
    }

    /// Identifiers of the instances that exist (not being deleted), for synthetic metrics.
    pub fn instance_ids(&self) -> Vec<String> {
        self.instances
            .values()
            .filter(|i| i.status != DbInstanceStatus::Deleting)
            .map(|i| i.id.clone())
            .collect()
    }

    pub fn instance_exists(&self, id: &str) -> bool {
        self.instances.contains_key(id)
    }
}

/// 26 upper-case characters, as in `db-ABCDEFGHIJKLMNOPQRSTUVWXYZ`.
fn resource_suffix(n: u64) -> String {
    let h = crate::faults::hash_str(n, &["rds-resource"]);
    let h2 = crate::faults::mix(h);
    (0..26)
        .map(|i| {
            let bits = if i < 12 {
                h >> (i * 5)
            } else {
                h2 >> ((i - 12) * 4)
            };
            (b'A' + (bits % 26) as u8) as char
        })
        .collect()
}

/// StopDBInstance: "stopping" for this long, then "stopped" (AWS: "several minutes").
const RDS_STOP: f64 = 4.0 * 60.0;
/// StartDBInstance: "starting" for this long, then "available" (AWS: minutes or more).
const RDS_START: f64 = 6.0 * 60.0;
/// A stopped instance that nobody starts is started by RDS after seven days.
const RDS_AUTO_START: f64 = 7.0 * 86_400.0;

/// Stopping and starting instances, with AWS's rules: only an available instance stops,
/// never one that has a read replica or is one, and RDS starts it again after seven days.
impl RdsState {
    fn stop_db_instance(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let id = short(p.required("DBInstanceIdentifier")?);
        let inst = self.instances.get_mut(&id).ok_or_else(|| not_found(&id))?;
        if inst.status != DbInstanceStatus::Available || !inst.transitions.is_empty() {
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!(
                    "Instance {id} is not in available state. Current state: {}",
                    inst.status
                ),
            ));
        }
        if inst.source.is_some() || !inst.replicas.is_empty() {
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!("Cannot stop instance {id}: it has a read replica or is one."),
            ));
        }
        inst.status = "stopping".into();
        let stopped = ctx.now + RDS_STOP;
        inst.transitions = vec![
            (stopped, Transition::Status("stopped".into())),
            (
                stopped + RDS_AUTO_START,
                Transition::Status("starting".into()),
            ),
            (
                stopped + RDS_AUTO_START + RDS_START,
                Transition::Status("available".into()),
            ),
        ];
        Ok(self.one_instance(ctx, &id))
    }

    fn start_db_instance(&mut self, ctx: &Ctx<'_>, p: &Params) -> Result<String, ApiError> {
        let id = short(p.required("DBInstanceIdentifier")?);
        let inst = self.instances.get_mut(&id).ok_or_else(|| not_found(&id))?;
        if inst.status != DbInstanceStatus::Stopped {
            return Err(ApiError::bad(
                "InvalidDBInstanceState",
                format!(
                    "Instance {id} is not stopped. Current state: {}",
                    inst.status
                ),
            ));
        }
        inst.status = "starting".into();
        inst.transitions = vec![(ctx.now + RDS_START, Transition::Status("available".into()))];
        Ok(self.one_instance(ctx, &id))
    }
}

/// CreateDBInstance's `MasterUserPassword`: required unless `ManageMasterUserPassword` is
/// on, refused with it; 8 to 128 printable ASCII characters other than `/`, `'`, `"`, `@`
/// and space (RDS API Reference, CreateDBInstance, MasterUserPassword constraints).
fn check_master_password(password: Option<&str>, managed: bool) -> Result<(), ApiError> {
    match (password, managed) {
        (Some(_), true) => Err(combination(
            "You can't specify MasterUserPassword and ManageMasterUserPassword at the same time."
                .to_string(),
        )),
        (None, false) => Err(invalid(
            "The parameter MasterUserPassword must be provided and must not be blank.".to_string(),
        )),
        (None, true) => Ok(()),
        (Some(pw), false) => {
            if pw.len() < 8 {
                return Err(invalid(
                    "The parameter MasterUserPassword is not a valid password because it is shorter than 8 characters.".to_string(),
                ));
            }
            if pw.len() > 128
                || !pw
                    .chars()
                    .all(|c| c.is_ascii_graphic() && !"/'\"@".contains(c))
            {
                return Err(invalid(
                    "The parameter MasterUserPassword is not a valid password. Only printable ASCII characters besides '/', '@', '\"', ' ' may be used.".to_string(),
                ));
            }
            Ok(())
        }
    }
}
