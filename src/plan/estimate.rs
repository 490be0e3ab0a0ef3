//! How long changes take in AWS, for plan and matrix estimates.
//!
//! Typical durations, as AWS documents or as observed; the sandbox's duration profile uses
//! the same figures so estimates and simulated runs agree. Every figure is in seconds.

/// Seconds per kind of change. The defaults are documented in docs/estimates.md.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimates {
    /// A new task reaching RUNNING (image pull, JVM start, health check).
    pub ecs_task_start: f64,
    /// Old tasks draining after a deployment (load balancer deregistration delay).
    pub ecs_drain: f64,
    pub ecs_cluster_create: f64,
    /// A capacity provider's instance launching and registering with the cluster (EC2
    /// boot, ECS agent start); a provider's first tasks wait for it.
    pub ecs_instance_launch: f64,
    /// A new Managed Instances capacity provider PROVISIONING until ACTIVE.
    pub ecs_capacity_provider_create: f64,
    /// A deleted Managed Instances capacity provider DEPROVISIONING (its instances
    /// terminating) until INACTIVE.
    pub ecs_capacity_provider_delete: f64,
    /// A deleted service draining to INACTIVE (its tasks stop, load balancers deregister).
    pub ecs_service_delete: f64,
    pub msk_create: f64,
    pub msk_delete: f64,
    /// A rolling broker type change, per broker.
    pub msk_broker_type_per_broker: f64,
    pub msk_broker_count: f64,
    pub msk_storage: f64,
    /// Applying a configuration revision restarts brokers one by one, per broker.
    pub msk_configuration_per_broker: f64,
    pub msk_version_per_broker: f64,
    pub msk_configuration_write: f64,
    pub rds_create: f64,
    pub rds_replica_create: f64,
    pub rds_class_change: f64,
    pub rds_storage_change: f64,
    pub rds_version_upgrade: f64,
    pub rds_delete: f64,
    pub rds_parameter_group: f64,
    /// A reboot, which applies static parameters.
    pub rds_reboot: f64,
    /// StopDBInstance until `stopped` (`unpark` right after `park` waits for it).
    pub rds_stop: f64,
    /// StartDBInstance until `available` (`unpark`).
    pub rds_start: f64,
}

impl Default for Estimates {
    fn default() -> Self {
        Estimates {
            ecs_task_start: 40.0,
            ecs_drain: 30.0,
            ecs_cluster_create: 5.0,
            ecs_instance_launch: 90.0,
            ecs_capacity_provider_create: 30.0,
            ecs_capacity_provider_delete: 120.0,
            ecs_service_delete: 120.0,
            msk_create: 25.0 * 60.0,
            msk_delete: 10.0 * 60.0,
            msk_broker_type_per_broker: 6.0 * 60.0,
            msk_broker_count: 15.0 * 60.0,
            msk_storage: 10.0 * 60.0,
            msk_configuration_per_broker: 4.0 * 60.0,
            msk_version_per_broker: 10.0 * 60.0,
            msk_configuration_write: 5.0,
            rds_create: 12.0 * 60.0,
            rds_replica_create: 12.0 * 60.0,
            rds_class_change: 10.0 * 60.0,
            rds_storage_change: 10.0 * 60.0,
            rds_version_upgrade: 20.0 * 60.0,
            rds_delete: 5.0 * 60.0,
            rds_parameter_group: 5.0,
            rds_reboot: 90.0,
            rds_stop: 4.0 * 60.0,
            rds_start: 6.0 * 60.0,
        }
    }
}

impl Estimates {
    /// A rolling deployment: the new tasks start (maximumPercent 200 starts them all at
    /// once), then the old ones drain.
    pub fn ecs_rolling(&self) -> f64 {
        self.ecs_task_start + self.ecs_drain
    }
}

/// "1h 05m", "6m 40s", "45s": how estimates are printed (and every duration: the executor's
/// progress prints them too, so the function lives with the clock's other formats).
pub use crate::time::human;

/// `1 axis`, `2 axes`: a count with the noun's right number.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn counts_take_the_right_number() {
        assert_eq!(plural(1, "axis", "axes"), "1 axis");
        assert_eq!(plural(2, "axis", "axes"), "2 axes");
        assert_eq!(plural(0, "service", "services"), "0 services");
    }
    use super::*;

    #[test]
    fn durations_print_compactly() {
        assert_eq!(human(45.0), "45s");
        assert_eq!(human(400.0), "6m 40s");
        assert_eq!(human(1500.0), "25m");
        assert_eq!(human(3900.0), "1h 05m");
    }
}
