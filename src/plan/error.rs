//! What can be wrong with a plan itself (as opposed to the environment it describes).
use super::id::ResourceId;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// Two actions on one resource: the executor would run only one of them.
    #[error("the plan has two actions on {0}; this is a bug in envctl's planner")]
    DuplicateId(ResourceId),
    #[error("{action} depends on {missing}, which the plan does not contain")]
    UnknownDependency {
        action: ResourceId,
        missing: ResourceId,
    },
    /// Resources with the environment's names that envctl does not own. Applying around them
    /// would put owned resources inside or on top of someone else's (services in a foreign
    /// cluster, a replica of a foreign DB, DB_HOST pointing at it), so nothing runs.
    #[error(
        "{count} resource(s) with this environment's names exist but are not envctl's (no envctl:env tag); nothing was changed:\n{list}\nEither rename them in the env file (the key on each line), or pass --adopt to take them over on purpose (they are then tagged as this environment's, managed, and deleted by `destroy`)",
        count = .0.len(),
        list = .0.iter().map(|c| format!("  {}: {} (name set by {})", c.resource, c.message, naming_key(&c.resource))).collect::<Vec<_>>().join("\n")
    )]
    Conflicts(Vec<super::action::Conflict>),
    /// Changes to owned resources that AWS would refuse: said before any call rather than
    /// found half-way through an apply.
    #[error(
        "{count} change(s) would be refused by AWS; nothing was changed:\n{list}\nChange these values in the env file",
        count = .0.len(),
        list = .0.iter().map(|c| format!("  {}: {}", c.resource, c.message)).collect::<Vec<_>>().join("\n")
    )]
    Refused(Vec<super::action::Conflict>),
}

/// The env-file key whose value names `id` in AWS: what to change to give it another name.
/// Every key named here exists in the env schema (checked by a test).
pub fn naming_key(id: &ResourceId) -> String {
    match id {
        ResourceId::EcsCluster { .. } | ResourceId::ContainerInstances { .. } => {
            "`ecs.cluster`".into()
        }
        ResourceId::CapacityProvider { .. } => {
            "`ecs.cluster` (the provider is named after it)".into()
        }
        ResourceId::EcsService { name } => format!("the service's key `services.{name}`"),
        ResourceId::TaskDefinitions { .. } => {
            "`env` and the service's key under `services` (families are named after them)".into()
        }
        ResourceId::KafkaCluster { key } | ResourceId::KafkaConfiguration { key } => {
            format!("`kafka.{key}.name`")
        }
        ResourceId::DbInstance { .. } => "`rds.writer.id`, or a reader's `rds.readers[].id`".into(),
        ResourceId::DbParameterGroup { .. } | ResourceId::DbSubnetGroup { .. } => {
            "`rds.writer.id` (the group is named after it)".into()
        }
        ResourceId::DbMasterSecret { .. } => {
            "`rds.writer.id` (the secret is named after it)".into()
        }
        ResourceId::LogGroup { .. } => "`env` (the log group is `/ecs/<env>`)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Follows `path` (`a.b`, `services.NAME`, `rds.readers[].id`) through the env schema,
    /// resolving `$ref`s and optional (`anyOf` with null) values.
    fn in_schema(root: &Value, path: &str) -> bool {
        fn follow<'a>(root: &'a Value, mut v: &'a Value) -> Option<&'a Value> {
            loop {
                if let Some(r) = v.get("$ref").and_then(Value::as_str) {
                    v = root.pointer(r.strip_prefix('#')?)?;
                } else if let Some(any) = v.get("anyOf").and_then(Value::as_array) {
                    v = any
                        .iter()
                        .find(|a| a.get("type") != Some(&Value::from("null")))?;
                } else {
                    return Some(v);
                }
            }
        }
        let resolve = |v: &Value| follow(root, v).cloned();
        let mut at = match resolve(root) {
            Some(v) => v,
            None => return false,
        };
        for segment in path.split('.') {
            let (name, list) = match segment.strip_suffix("[]") {
                Some(n) => (n, true),
                None => (segment, false),
            };
            let next = at
                .pointer(&format!("/properties/{name}"))
                .or_else(|| at.get("additionalProperties").filter(|a| a.is_object()));
            let Some(next) = next.and_then(resolve) else {
                return false;
            };
            at = if list {
                match next.get("items").and_then(resolve) {
                    Some(items) => items,
                    None => return false,
                }
            } else {
                next
            };
        }
        true
    }

    #[test]
    fn the_rename_hint_names_keys_that_exist() {
        let schema = crate::commands::schema::schema(crate::cli::SchemaKind::Env);
        let ids = [
            ResourceId::EcsCluster {
                name: "qcp1-pvt".into(),
            },
            ResourceId::ContainerInstances {
                cluster: "qcp1-pvt".into(),
            },
            ResourceId::capacity_provider("envctl-qcp1-pvt"),
            ResourceId::service("mod-users"),
            ResourceId::TaskDefinitions {
                family: "qcp1-mod-users".into(),
            },
            ResourceId::KafkaCluster { key: "main".into() },
            ResourceId::KafkaConfiguration { key: "main".into() },
            ResourceId::db_instance("qcp1-db"),
            ResourceId::DbParameterGroup {
                name: "qcp1-db-params".into(),
            },
            ResourceId::DbSubnetGroup {
                name: "qcp1-db-subnets".into(),
            },
        ];
        let mut checked = 0;
        for id in &ids {
            let hint = naming_key(id);
            let keys: Vec<&str> = hint.split('`').skip(1).step_by(2).collect();
            assert!(!keys.is_empty(), "{id}: {hint}");
            for key in keys {
                assert!(in_schema(&schema, key), "{id}: `{key}` is not an env key");
                checked += 1;
            }
        }
        // The keys the old hint named do not exist: the check can fail.
        for wrong in ["cluster.name", "rds.writer.identifier"] {
            assert!(!in_schema(&schema, wrong), "{wrong}");
        }
        assert!(checked >= ids.len());
        let message = PlanError::Conflicts(vec![super::super::action::Conflict {
            resource: ResourceId::db_instance("qcp1-db"),
            message: "exists, not envctl's".into(),
            kind: Default::default(),
        }])
        .to_string();
        assert!(
            message.contains("(name set by `rds.writer.id`"),
            "{message}"
        );
    }
}
