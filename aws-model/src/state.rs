//! Resource states as AWS reports them, and the one answer envctl gives to "does this state
//! need an operator?" (no change envctl would plan clears it, and waiting will not either).

/// RDS `DBInstanceStatus` (DescribeDBInstances). Source: RDS User Guide, "Viewing Amazon RDS
/// DB instance status" (the table of statuses, their billing, and what each means).
pub mod db_instance {
    pub const AVAILABLE: &str = "available";
    pub const STOPPED: &str = "stopped";
    pub const STOPPING: &str = "stopping";
    pub const STARTING: &str = "starting";

    /// States an operator must clear: the instance serves badly or not at all and stays so.
    /// `failed` ("the instance has failed and Amazon RDS can't recover it"), the
    /// `incompatible-*` states (RDS cannot start it with its credentials, network, option
    /// group, parameters or restore), the encryption-key states, `restore-error` and
    /// `storage-full` (it has run out of allocated storage).
    pub const NEEDS_OPERATOR: &[&str] = &[
        "failed",
        "incompatible-credentials",
        "incompatible-network",
        "incompatible-option-group",
        "incompatible-parameters",
        "incompatible-restore",
        "inaccessible-encryption-credentials",
        "inaccessible-encryption-credentials-recoverable",
        "restore-error",
        "storage-full",
    ];

    /// The instance will not become available by itself.
    pub fn needs_operator(status: &str) -> bool {
        NEEDS_OPERATOR.contains(&status)
    }
}

/// MSK cluster `State` (DescribeClusterV2). Source: MSK API Reference, ClusterInfo / Cluster
/// `State`: ACTIVE, CREATING, DELETING, FAILED, HEALING, MAINTENANCE, REBOOTING_BROKER,
/// UPDATING.
pub mod kafka_cluster {
    pub const ACTIVE: &str = "ACTIVE";
    pub const FAILED: &str = "FAILED";

    /// The cluster will not become ACTIVE by itself.
    pub fn needs_operator(state: &str) -> bool {
        state == FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_answer_for_states_that_need_an_operator() {
        for s in [
            "failed",
            "incompatible-parameters",
            "storage-full",
            "restore-error",
        ] {
            assert!(db_instance::needs_operator(s), "{s}");
        }
        for s in [
            "available",
            "stopped",
            "stopping",
            "modifying",
            "backing-up",
        ] {
            assert!(!db_instance::needs_operator(s), "{s}");
        }
        assert!(kafka_cluster::needs_operator("FAILED"));
        assert!(!kafka_cluster::needs_operator("HEALING"));
    }
}
