//! ECS clusters: Create/Describe/List/DeleteCluster and a cluster's JSON view.

use super::deployments::deployment_counts;
use super::tasks::task_status;
use super::*;
use envctl_aws_model::status::{CapacityProviderStatus, ClusterStatus, ServiceStatus, TaskStatus};

impl EcsState {
    // ---- clusters --------------------------------------------------------------------

    pub(super) fn cluster_json(&self, c: &Cluster, ctx: &Ctx<'_>, with_tags: bool) -> Value {
        let (mut running, mut pending) = (0, 0);
        let mut active_services = 0;
        for s in c.services.values() {
            if s.status == ServiceStatus::Active || s.status == ServiceStatus::Draining {
                if s.status == ServiceStatus::Active {
                    active_services += 1;
                }
                for d in &s.deployments {
                    let (r, p) = deployment_counts(d, ctx.now);
                    running += r;
                    pending += p;
                }
            }
        }
        for t in self.tasks.values() {
            if t.cluster_arn == c.arn {
                match TaskStatus::parse(task_status(t, ctx.now)) {
                    TaskStatus::Running => running += 1,
                    TaskStatus::Provisioning | TaskStatus::Pending => pending += 1,
                    _ => {}
                }
            }
        }
        let mut v = json!({
            "clusterArn": c.arn,
            "clusterName": c.name,
            "status": c.status,
            "registeredContainerInstancesCount": c.container_instances.len(),
            "runningTasksCount": running,
            "pendingTasksCount": pending,
            "activeServicesCount": active_services,
            "statistics": [],
            "settings": [{"name": "containerInsights", "value": "disabled"}],
            "capacityProviders": c.capacity_providers,
            "defaultCapacityProviderStrategy": c.default_strategy,
        });
        if with_tags {
            v["tags"] = tags_json(self.tags.get(&c.arn).map(Vec::as_slice).unwrap_or(&[]));
        }
        v
    }

    pub(super) fn create_cluster(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let name = opt_str(input, "clusterName")
            .unwrap_or("default")
            .to_string();
        if !valid_name(&name) {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "Cluster name can have up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens.",
            ));
        }
        let tags = parse_tags(input)?;
        // The first CreateCluster of an account makes the service-linked role, which it
        // cannot assume at once (terraform-provider-aws#15452, aws/containers-roadmap#2614).
        let role_delay = ctx.profile.ecs_service_linked_role.as_secs_f64();
        if role_delay > 0.0 {
            let ready = *self
                .service_linked_role_at
                .get_or_insert(ctx.now + role_delay);
            if ctx.now < ready {
                return Err(ApiError::bad(
                    "InvalidParameterException",
                    "Unable to assume the service linked role. Please verify that the ECS service linked role exists.",
                ));
            }
        }
        let arn = Self::cluster_arn(ctx, &name);
        // CreateCluster is idempotent on an ACTIVE cluster and revives an INACTIVE one.
        let cluster = self
            .clusters
            .entry(name.clone())
            .or_insert_with(|| Cluster {
                name: name.clone(),
                arn: arn.clone(),
                status: "ACTIVE".into(),
                created_at: ctx.now,
                services: BTreeMap::new(),
                container_instances: Vec::new(),
                capacity_providers: Vec::new(),
                launching: Vec::new(),
                default_strategy: Vec::new(),
            });
        cluster.status = "ACTIVE".into();
        // Instances whose agents were waiting for this cluster register after their
        // restart interval (settle_capacity moves them in when due).
        let due = ctx.now + ctx.profile.ecs_instance_launch.as_secs_f64();
        for mut ci in self.awaiting_cluster.remove(&name).unwrap_or_default() {
            ci.registered_at = due;
            cluster.launching.push(ci);
            self.next_due = 0.0;
        }
        merge_tags(self.tags.entry(arn.clone()).or_default(), tags);
        let c = self.clusters.get(&name).cloned();
        let v = c
            .map(|c| self.cluster_json(&c, ctx, true))
            .unwrap_or(Value::Null);
        Ok(json!({ "cluster": v }))
    }

    pub(super) fn describe_clusters(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let mut names = str_list(input, "clusters");
        if names.is_empty() {
            names.push("default".into());
        }
        let with_tags = include_tags(input);
        let mut clusters = Vec::new();
        let mut failures = Vec::new();
        for n in &names {
            match self.clusters.get(short_name(n)) {
                Some(c) => clusters.push(self.cluster_json(c, ctx, with_tags)),
                None => failures.push(json!({
                    "arn": if n.starts_with("arn:") { n.clone() } else { Self::cluster_arn(ctx, n) },
                    "reason": "MISSING"
                })),
            }
        }
        Ok(json!({ "clusters": clusters, "failures": failures }))
    }

    pub(super) fn list_clusters(&mut self, input: &Value) -> Result<Value, ApiError> {
        let arns: Vec<String> = self
            .clusters
            .values()
            .filter(|c| c.status == ClusterStatus::Active)
            .map(|c| c.arn.clone())
            .collect();
        let (items, next) = page(&arns, input, 100)?;
        Ok(json!({ "clusterArns": items, "nextToken": next }))
    }

    pub(super) fn delete_cluster(
        &mut self,
        ctx: &Ctx<'_>,
        input: &Value,
    ) -> Result<Value, ApiError> {
        let name = short_name(req_str(input, "cluster")?).to_string();
        let arn = Self::cluster_arn(ctx, &name);
        let running_tasks = self
            .tasks
            .values()
            .any(|t| t.cluster_arn == arn && t.stopped_at.is_none());
        let cluster = self.active_cluster(&name)?;
        if cluster
            .services
            .values()
            .any(|s| s.status == ServiceStatus::Active || s.status == ServiceStatus::Draining)
        {
            return Err(ApiError::bad(
                "ClusterContainsServicesException",
                "The Cluster cannot be deleted while Services are active.",
            ));
        }
        if running_tasks {
            return Err(ApiError::bad(
                "ClusterContainsTasksException",
                "The Cluster cannot be deleted while Tasks are active.",
            ));
        }
        if !cluster.container_instances.is_empty() {
            return Err(ApiError::bad(
                "ClusterContainsContainerInstancesException",
                "The Cluster cannot be deleted while Container Instances are active or draining.",
            ));
        }
        // API reference, DeleteCluster: a cluster-scoped (Managed Instances) provider that
        // is not yet INACTIVE (still DEPROVISIONING, or never deleted) keeps the cluster.
        if let Some(cp) = self.capacity_providers.values().find(|cp| {
            cp.cluster.as_deref() == Some(name.as_str())
                && cp.status != CapacityProviderStatus::Inactive
        }) {
            return Err(ApiError::bad(
                "ClusterContainsCapacityProviderException",
                format!(
                    "The Cluster cannot be deleted while capacity provider {} ({}) is associated with it. Delete the capacity provider and wait until it is INACTIVE.",
                    cp.name, cp.status
                ),
            ));
        }
        let Some(cluster) = self.clusters.get_mut(&name) else {
            return Err(ApiError::bad(
                "ClusterNotFoundException",
                "Cluster not found.",
            ));
        };
        cluster.status = "INACTIVE".into();
        let c = cluster.clone();
        Ok(json!({ "cluster": self.cluster_json(&c, ctx, false) }))
    }
}
