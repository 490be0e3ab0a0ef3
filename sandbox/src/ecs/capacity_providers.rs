//! ECS capacity providers: Create/Describe/Update/DeleteCapacityProvider and
//! PutClusterCapacityProviders, including the Managed Instances provider's configuration
//! and which of its members an update may change.

use super::*;
use envctl_aws_model::status::{CapacityProviderStatus, ClusterStatus, ServiceStatus};

/// The members of UpdateManagedInstancesProviderConfiguration and of its
/// InstanceLaunchTemplateUpdate (API reference). Others (`capacityOptionType`, ...) are set at
/// creation only; the sandbox refuses them rather than ignoring them, so a caller that
/// believes it changed one finds out.
const MI_UPDATE_MEMBERS: &[&str] = &[
    "infrastructureRoleArn",
    "instanceLaunchTemplate",
    "propagateTags",
    "infrastructureOptimization",
    "autoRepairConfiguration",
];
const TEMPLATE_UPDATE_MEMBERS: &[&str] = &[
    "ec2InstanceProfileArn",
    "networkConfiguration",
    "storageConfiguration",
    "instanceMetadataTagsPropagation",
    "localStorageConfiguration",
    "monitoring",
    "instanceRequirements",
    "capacityReservations",
];

/// An UpdateCapacityProvider `managedInstancesProvider`: `infrastructureRoleArn` is required,
/// only updatable members, and instance requirements valid as for CreateCapacityProvider.
pub(super) fn check_managed_update(m: &Value) -> Result<(), ApiError> {
    if m.get("infrastructureRoleArn")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(ApiError::bad(
            "InvalidParameterException",
            "managedInstancesProvider.infrastructureRoleArn must be specified.",
        ));
    }
    let template = m.get("instanceLaunchTemplate");
    let members = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let refused = members(Some(m))
        .into_iter()
        .filter(|k| !MI_UPDATE_MEMBERS.contains(&k.as_str()))
        .chain(
            members(template)
                .into_iter()
                .filter(|k| !TEMPLATE_UPDATE_MEMBERS.contains(&k.as_str()))
                .map(|k| format!("instanceLaunchTemplate.{k}")),
        )
        .next();
    if let Some(member) = refused {
        return Err(ApiError::bad(
            "InvalidParameterException",
            format!(
                "managedInstancesProvider.{member} cannot be updated; it is set when the capacity provider is created."
            ),
        ));
    }
    if template
        .and_then(|t| t.get("ec2InstanceProfileArn"))
        .is_some_and(|p| p.as_str().is_none_or(str::is_empty))
    {
        return Err(ApiError::bad(
            "InvalidParameterException",
            "instanceLaunchTemplate.ec2InstanceProfileArn must be an instance profile ARN.",
        ));
    }
    check_instance_requirements(template)
}

/// `instanceRequirements`, when given, needs `vCpuCount.min` and `memoryMiB.min`
/// (InstanceRequirementsRequest: both required).
fn check_instance_requirements(template: Option<&Value>) -> Result<(), ApiError> {
    let Some(r) = template.and_then(|t| t.get("instanceRequirements")) else {
        return Ok(());
    };
    for range in ["vCpuCount", "memoryMiB"] {
        if r.get(range)
            .and_then(|v| v.get("min"))
            .and_then(Value::as_i64)
            .is_none()
        {
            return Err(ApiError::bad(
                "InvalidParameterException",
                format!("instanceRequirements.{range}.min must be specified."),
            ));
        }
    }
    Ok(())
}

/// Sets each member of `update` on `target`; members named in `nested` are merged one level
/// down instead of replaced (a launch template update keeps the members it does not name).
pub(super) fn merge_members(target: &mut Value, update: &Value, nested: &[&str]) {
    let (Some(target), Some(update)) = (target.as_object_mut(), update.as_object()) else {
        return;
    };
    for (k, v) in update {
        match target.get_mut(k) {
            Some(old) if nested.contains(&k.as_str()) && old.is_object() => {
                merge_members(old, v, &[]);
            }
            _ => {
                target.insert(k.clone(), v.clone());
            }
        }
    }
}

impl EcsState {
    // ---- capacity providers -----------------------------------------------------------

    fn capacity_provider_json(cp: &CapacityProvider) -> Value {
        let mut v = json!({
            "capacityProviderArn": cp.arn,
            "name": cp.name,
            "status": cp.status,
            "type": cp.kind,
        });
        if let Some(c) = &cp.cluster {
            v["cluster"] = json!(c);
        }
        let key = if cp.kind == "MANAGED_INSTANCES" {
            "managedInstancesProvider"
        } else {
            "autoScalingGroupProvider"
        };
        v[key] = cp.config.clone();
        v
    }

    pub(super) fn create_capacity_provider(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let name = req_str(input, "name")?.to_string();
        let lower = name.to_ascii_lowercase();
        if ["aws", "ecs", "fargate"]
            .iter()
            .any(|p| lower.starts_with(p))
        {
            // API reference, CreateCapacityProvider `name`: it can't be prefixed with
            // "aws", "ecs", or "fargate".
            return Err(ApiError::bad(
                "ClientException",
                "The capacity provider name cannot be prefixed with 'aws', 'ecs', or 'fargate'.",
            ));
        }
        if self
            .capacity_providers
            .get(&name)
            .is_some_and(|cp| cp.status != CapacityProviderStatus::Inactive)
        {
            return Err(ApiError::bad(
                "ClientException",
                format!("The specified capacity provider {name} already exists."),
            ));
        }
        let (kind, config, cluster) = match (
            input.get("managedInstancesProvider"),
            input.get("autoScalingGroupProvider"),
        ) {
            (Some(m), None) => {
                let template = m.get("instanceLaunchTemplate");
                let missing = m
                    .get("infrastructureRoleArn")
                    .and_then(Value::as_str)
                    .is_none()
                    || template
                        .and_then(|t| t.get("ec2InstanceProfileArn"))
                        .and_then(Value::as_str)
                        .is_none();
                if missing {
                    return Err(ApiError::bad(
                        "InvalidParameterException",
                        "managedInstancesProvider needs infrastructureRoleArn and instanceLaunchTemplate.ec2InstanceProfileArn.",
                    ));
                }
                check_instance_requirements(template)?;
                let cluster = opt_str(input, "cluster").map(|c| short_name(c).to_string());
                let Some(cluster) = cluster else {
                    return Err(ApiError::bad(
                        "InvalidParameterException",
                        "A Managed Instances capacity provider needs a cluster.",
                    ));
                };
                self.active_cluster(&cluster)?;
                self.check_cluster_visible(ctx, &cluster)?;
                ("MANAGED_INSTANCES", m.clone(), Some(cluster))
            }
            (None, Some(a)) => ("EC2_AUTOSCALING", a.clone(), None),
            _ => {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Exactly one of autoScalingGroupProvider and managedInstancesProvider must be given.",
                ));
            }
        };
        // A Managed Instances provider is PROVISIONING first (terraform-provider-aws#45693,
        // pulumi-aws#6061); an Auto Scaling group provider is ACTIVE at once.
        let managed = kind == "MANAGED_INSTANCES";
        let active_at = if managed {
            ctx.now + ctx.profile.ecs_capacity_provider_provision.as_secs_f64()
        } else {
            ctx.now
        };
        if managed {
            self.next_due = self.next_due.min(active_at);
        }
        let cp = CapacityProvider {
            arn: ctx.arn("ecs", &format!("capacity-provider/{name}")),
            name: name.clone(),
            status: if managed { "PROVISIONING" } else { "ACTIVE" }.into(),
            kind: kind.into(),
            cluster,
            config,
            active_at,
            gone_at: None,
        };
        let tags = parse_tags(input)?;
        self.tags.insert(cp.arn.clone(), tags);
        let v = Self::capacity_provider_json(&cp);
        self.capacity_providers.insert(name, cp);
        Ok(json!({ "capacityProvider": v }))
    }

    /// DescribeCapacityProviders. With `cluster`, only the providers associated with that
    /// cluster, Managed Instances ones included; without it, a cluster-scoped Managed
    /// Instances provider is not among them (API reference, DescribeCapacityProviders
    /// `cluster`: "including Amazon ECS Managed Instances capacity providers" only when it
    /// is given).
    pub(super) fn describe_capacity_providers(&mut self, input: &Value) -> Result<Value, ApiError> {
        let wanted = str_list(input, "capacityProviders");
        let with_tags = include_tags(input);
        let cluster = match opt_str(input, "cluster") {
            Some(c) => Some(self.active_cluster(short_name(c))?.clone()),
            None => None,
        };
        let visible = |cp: &CapacityProvider| match &cluster {
            Some(c) => serves(cp, c),
            None => cp.cluster.is_none(),
        };
        let mut found: Vec<Value> = Vec::new();
        let mut failures = Vec::new();
        if wanted.is_empty() {
            found.extend(
                self.capacity_providers
                    .values()
                    .filter(|cp| visible(cp))
                    .map(Self::capacity_provider_json),
            );
        }
        for w in &wanted {
            let name = w.rsplit('/').next().unwrap_or(w);
            match self.capacity_providers.get(name).filter(|cp| visible(cp)) {
                Some(cp) => found.push(Self::capacity_provider_json(cp)),
                None => failures.push(json!({ "arn": w, "reason": "MISSING" })),
            }
        }
        if with_tags {
            for v in &mut found {
                let arn = v["capacityProviderArn"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let tags = self.tags.get(&arn).cloned().unwrap_or_default();
                v["tags"] = tags_json(&tags);
            }
        }
        Ok(json!({ "capacityProviders": found, "failures": failures }))
    }

    /// Names of the capacity providers in an ACTIVE service's strategy.
    fn strategy_users(&self, provider: &str) -> Vec<String> {
        let mut out = Vec::new();
        for c in self.clusters.values() {
            for s in c
                .services
                .values()
                .filter(|s| s.status != ServiceStatus::Inactive)
            {
                let uses = s
                    .extra
                    .get("capacityProviderStrategy")
                    .and_then(Value::as_array)
                    .is_some_and(|l| {
                        l.iter().any(|i| {
                            i.get("capacityProvider").and_then(Value::as_str) == Some(provider)
                        })
                    });
                if uses {
                    out.push(s.name.clone());
                }
            }
        }
        out
    }

    /// A Managed Instances provider is cluster-scoped: DeleteCapacityProvider and
    /// UpdateCapacityProvider name its cluster (API reference, both `cluster`).
    fn check_owner_cluster(&self, name: &str, input: &Value) -> Result<(), ApiError> {
        let given_cluster = opt_str(input, "cluster").map(short_name);
        if let Some(owner) = self
            .capacity_providers
            .get(name)
            .and_then(|cp| cp.cluster.as_deref())
            && given_cluster != Some(owner)
        {
            return Err(ApiError::bad(
                "InvalidParameterException",
                format!(
                    "The Managed Instances capacity provider {name} belongs to cluster {owner}: specify that cluster."
                ),
            ));
        }
        Ok(())
    }

    /// The ACTIVE (or still PROVISIONING) provider a request names (by name or ARN);
    /// ClientException otherwise, as DeleteCapacityProvider answers for a provider that does
    /// not exist (or is already being deleted).
    fn active_provider(&self, reference: &str) -> Result<&CapacityProvider, ApiError> {
        let name = short_name(reference);
        self.capacity_providers
            .get(name)
            .filter(|cp| {
                cp.status == CapacityProviderStatus::Active
                    || cp.status == CapacityProviderStatus::Provisioning
            })
            .ok_or_else(|| {
                ApiError::bad(
                    "ClientException",
                    format!("The specified capacity provider {name} does not exist."),
                )
            })
    }

    /// UpdateCapacityProvider: the members given replace the stored ones (inside
    /// `instanceLaunchTemplate`, member by member); instances already launched keep the old
    /// settings, later launches (`managed_provider`) read the new ones. A provider's type
    /// cannot change, and a member the update configuration does not have is refused.
    pub(super) fn update_capacity_provider(&mut self, input: &Value) -> Result<Value, ApiError> {
        let cp = self.active_provider(req_str(input, "name")?)?;
        let (name, kind) = (cp.name.clone(), cp.kind.clone());
        let (key, update) = match (
            input.get("managedInstancesProvider"),
            input.get("autoScalingGroupProvider"),
        ) {
            (Some(m), None) => ("managedInstancesProvider", m),
            (None, Some(a)) => ("autoScalingGroupProvider", a),
            _ => {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Exactly one of autoScalingGroupProvider and managedInstancesProvider must be given.",
                ));
            }
        };
        let managed = kind == "MANAGED_INSTANCES";
        if managed != (key == "managedInstancesProvider") {
            return Err(ApiError::bad(
                "InvalidParameterException",
                format!("The capacity provider {name} is of type {kind}: {key} cannot update it."),
            ));
        }
        if managed {
            self.check_owner_cluster(&name, input)?;
            check_managed_update(update)?;
        }
        let Some(cp) = self.capacity_providers.get_mut(&name) else {
            return Err(ApiError::bad(
                "ClientException",
                "capacity provider vanished",
            ));
        };
        merge_members(&mut cp.config, update, &["instanceLaunchTemplate"]);
        Ok(json!({ "capacityProvider": Self::capacity_provider_json(cp) }))
    }

    pub(super) fn delete_capacity_provider(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let name = self
            .active_provider(req_str(input, "capacityProvider")?)?
            .name
            .clone();
        // API reference, DeleteCapacityProvider: the provider must first be removed from the
        // capacity provider strategy of every service, only a provider associated with no
        // cluster can be deleted, and a Managed Instances provider (cluster-scoped) is deleted
        // from its cluster.
        let users = self.strategy_users(&name);
        if !users.is_empty() {
            return Err(ApiError::bad(
                "ClientException",
                format!(
                    "The capacity provider {name} is in use by services ({}) and cannot be deleted.",
                    users.join(", ")
                ),
            ));
        }
        let attached: Vec<String> = self
            .clusters
            .values()
            .filter(|c| c.status == ClusterStatus::Active && c.capacity_providers.contains(&name))
            .map(|c| c.name.clone())
            .collect();
        if !attached.is_empty() {
            return Err(ApiError::bad(
                "ClientException",
                format!(
                    "The capacity provider {name} is associated with cluster {} and cannot be deleted. Remove it with PutClusterCapacityProviders first.",
                    attached.join(", ")
                ),
            ));
        }
        self.check_owner_cluster(&name, input)?;
        let Some(cp) = self.capacity_providers.get_mut(&name) else {
            return Err(ApiError::bad(
                "ClientException",
                "capacity provider vanished",
            ));
        };
        if cp.kind == "MANAGED_INSTANCES" {
            // DEPROVISIONING while ECS terminates its instances; INACTIVE (and its cluster
            // deletable) only then (API reference, CapacityProvider `status`; DeleteCluster
            // ClusterContainsCapacityProviderException).
            let gone_at = ctx.now + ctx.profile.ecs_capacity_provider_deprovision.as_secs_f64();
            cp.status = "DEPROVISIONING".into();
            cp.gone_at = Some(gone_at);
            let cp = cp.clone();
            self.next_due = self.next_due.min(gone_at);
            return Ok(json!({ "capacityProvider": Self::capacity_provider_json(&cp) }));
        }
        cp.status = "INACTIVE".into();
        let cp = cp.clone();
        for c in self.clusters.values_mut() {
            c.capacity_providers.retain(|n| *n != name);
        }
        Ok(json!({ "capacityProvider": Self::capacity_provider_json(&cp) }))
    }

    pub(super) fn put_cluster_capacity_providers(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let cluster_name = short_name(req_str(input, "cluster")?).to_string();
        self.check_cluster_visible(ctx, &cluster_name)?;
        let names = str_list(input, "capacityProviders");
        for n in &names {
            let cp = self.capacity_providers.get(short_name(n));
            if cp.is_some_and(|cp| cp.kind == "MANAGED_INSTANCES") {
                // hashicorp/terraform-provider-aws#44783; aws/aws-cdk#35699 (fixed in #35783
                // by no longer generating the association).
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Cannot associate Managed Instances capacity provider to clusters using this API. Managed Instances capacity providers are already associated with the cluster named when they were created.",
                ));
            }
            if cp.is_some_and(|cp| cp.status == CapacityProviderStatus::Provisioning) {
                return Err(not_active(n));
            }
            let known = n == "FARGATE"
                || n == "FARGATE_SPOT"
                || cp.is_some_and(|cp| cp.status == CapacityProviderStatus::Active);
            if !known {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    format!("The specified capacity provider {n} does not exist."),
                ));
            }
        }
        let current = self
            .active_cluster(&cluster_name)?
            .capacity_providers
            .clone();
        for removed in current.iter().filter(|n| !names.contains(n)) {
            if !self.strategy_users(removed).is_empty() {
                return Err(ApiError::bad(
                    "ResourceInUseException",
                    format!(
                        "The specified capacity provider {removed} is in use and cannot be removed."
                    ),
                ));
            }
        }
        let strategy: Vec<Value> = input
            .get("defaultCapacityProviderStrategy")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let cluster = self.active_cluster(&cluster_name)?;
        cluster.capacity_providers = names;
        cluster.default_strategy = strategy;
        let c = cluster.clone();
        Ok(json!({ "cluster": self.cluster_json(&c, ctx, false) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_managed_instances_update_refuses_what_only_creation_sets() {
        let role = "arn:aws:iam::1:role/r";
        let ok = json!({"infrastructureRoleArn": role,
            "instanceLaunchTemplate": {"instanceRequirements": {"vCpuCount": {"min": 4}, "memoryMiB": {"min": 16384}}}});
        assert!(check_managed_update(&ok).is_ok());
        let code =
            |v: Value| check_managed_update(&v).map_err(|e| format!("{}: {}", e.code, e.message));
        // Not a member of InstanceLaunchTemplateUpdate.
        let spot = code(json!({"infrastructureRoleArn": role,
            "instanceLaunchTemplate": {"capacityOptionType": "SPOT"}}));
        assert!(spot.is_err_and(|e| e.contains("capacityOptionType")));
        // infrastructureRoleArn is required.
        let no_role = code(json!({"instanceLaunchTemplate": {}}));
        assert!(no_role.is_err_and(|e| e.contains("infrastructureRoleArn")));
        // As for CreateCapacityProvider: requirements need their minimums.
        let no_min = code(json!({"infrastructureRoleArn": role,
            "instanceLaunchTemplate": {"instanceRequirements": {"vCpuCount": {}}}}));
        assert!(no_min.is_err_and(|e| e.contains("vCpuCount.min")));
    }

    #[test]
    fn an_update_merges_the_launch_template_member_by_member() {
        let mut config = json!({"infrastructureRoleArn": "a",
            "instanceLaunchTemplate": {"ec2InstanceProfileArn": "p", "networkConfiguration": {"subnets": ["s1"]}}});
        merge_members(
            &mut config,
            &json!({"infrastructureRoleArn": "b",
                "instanceLaunchTemplate": {"networkConfiguration": {"subnets": ["s2"]}}}),
            &["instanceLaunchTemplate"],
        );
        assert_eq!(
            config,
            json!({"infrastructureRoleArn": "b",
                "instanceLaunchTemplate": {"ec2InstanceProfileArn": "p", "networkConfiguration": {"subnets": ["s2"]}}})
        );
    }
}
