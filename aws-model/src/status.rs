//! AWS's status vocabulary as types: one enum per status field envctl or the sandbox compares,
//! parsed from AWS's spelling once and written back with `as_str()`.
//!
//! Every enum has an `Other(String)` variant: AWS adds states (MSK's `MAINTENANCE`, RDS's
//! `storage-optimization` arrived years after their APIs), and a value envctl has never heard
//! of must be carried and shown, never a panic or a silent default. A status compares with
//! the string it came in as (`service.status == ServiceStatus::Active`), so code holding the
//! SDK's or the sandbox's strings reads the same as code holding the enum, and the spelling
//! of each state is written here only.

use std::fmt;

/// Defines a status enum: its variants with AWS's spelling, `parse`, `as_str`, `Display`,
/// and comparisons with `str`/`String` in both directions.
macro_rules! status {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this crate does not know (yet): carried as AWS spelled it.
            Other(String),
        }

        impl $name {
            /// Every state this crate knows, in the order AWS documents them.
            pub const KNOWN: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The state AWS (or the sandbox) reported; an unknown spelling is `Other`.
            pub fn parse(text: &str) -> Self {
                match text {
                    $( $text => $name::$variant, )+
                    other => $name::Other(other.to_string()),
                }
            }

            /// AWS's spelling, to send, store or show.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::Other(text) => text,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                $name::parse(text)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.as_str()
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.as_str()
            }
        }

        impl PartialEq<$name> for &String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.as_str()
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                self == other.as_str()
            }
        }
    };
}

// ---- ECS (Amazon ECS API Reference, the data types named) ----------------------------------

status! {
    /// `Cluster.status`: ACTIVE, PROVISIONING, DEPROVISIONING, FAILED, INACTIVE.
    ClusterStatus {
        Active = "ACTIVE",
        Provisioning = "PROVISIONING",
        Deprovisioning = "DEPROVISIONING",
        Failed = "FAILED",
        Inactive = "INACTIVE",
    }
}

status! {
    /// `Service.status`: ACTIVE, DRAINING (DeleteService called, tasks stopping), INACTIVE.
    ServiceStatus {
        Active = "ACTIVE",
        Draining = "DRAINING",
        Inactive = "INACTIVE",
    }
}

status! {
    /// `Deployment.status`: PRIMARY (the most recent), ACTIVE (an older one still running
    /// tasks), INACTIVE (fully replaced).
    DeploymentStatus {
        Primary = "PRIMARY",
        Active = "ACTIVE",
        Inactive = "INACTIVE",
    }
}

status! {
    /// `Deployment.rolloutState`: COMPLETED (steady state), FAILED (the circuit breaker
    /// tripped), IN_PROGRESS.
    RolloutState {
        Completed = "COMPLETED",
        Failed = "FAILED",
        InProgress = "IN_PROGRESS",
    }
}

status! {
    /// `Task.lastStatus` and `Task.desiredStatus`: the task lifecycle (Developer Guide,
    /// "Amazon ECS task lifecycle").
    TaskStatus {
        Provisioning = "PROVISIONING",
        Pending = "PENDING",
        Activating = "ACTIVATING",
        Running = "RUNNING",
        Deactivating = "DEACTIVATING",
        Stopping = "STOPPING",
        Deprovisioning = "DEPROVISIONING",
        Stopped = "STOPPED",
        Deleted = "DELETED",
    }
}

status! {
    /// `ContainerInstance.status`: ACTIVE, DRAINING, REGISTERING, DEREGISTERING,
    /// REGISTRATION_FAILED, INACTIVE.
    ContainerInstanceStatus {
        Active = "ACTIVE",
        Draining = "DRAINING",
        Registering = "REGISTERING",
        Deregistering = "DEREGISTERING",
        RegistrationFailed = "REGISTRATION_FAILED",
        Inactive = "INACTIVE",
    }
}

status! {
    /// `CapacityProvider.status`: PROVISIONING, ACTIVE, DEPROVISIONING (DeleteCapacityProvider
    /// called), INACTIVE (deleted; still described for a while).
    CapacityProviderStatus {
        Provisioning = "PROVISIONING",
        Active = "ACTIVE",
        Deprovisioning = "DEPROVISIONING",
        Inactive = "INACTIVE",
    }
}

status! {
    /// `CapacityProvider.updateStatus`.
    CapacityProviderUpdateStatus {
        CreateInProgress = "CREATE_IN_PROGRESS",
        CreateComplete = "CREATE_COMPLETE",
        CreateFailed = "CREATE_FAILED",
        DeleteInProgress = "DELETE_IN_PROGRESS",
        DeleteComplete = "DELETE_COMPLETE",
        DeleteFailed = "DELETE_FAILED",
        UpdateInProgress = "UPDATE_IN_PROGRESS",
        UpdateComplete = "UPDATE_COMPLETE",
        UpdateFailed = "UPDATE_FAILED",
    }
}

status! {
    /// `TaskDefinition.status`: ACTIVE, INACTIVE (deregistered), DELETE_IN_PROGRESS.
    TaskDefinitionStatus {
        Active = "ACTIVE",
        Inactive = "INACTIVE",
        DeleteInProgress = "DELETE_IN_PROGRESS",
    }
}

// ---- MSK (Amazon MSK API Reference) ---------------------------------------------------------

status! {
    /// `ClusterInfo.State` / `Cluster.State` (DescribeClusterV2).
    KafkaClusterState {
        Active = "ACTIVE",
        Creating = "CREATING",
        Deleting = "DELETING",
        Failed = "FAILED",
        Healing = "HEALING",
        Maintenance = "MAINTENANCE",
        RebootingBroker = "REBOOTING_BROKER",
        Updating = "UPDATING",
    }
}

status! {
    /// `ClusterOperationInfo.OperationState` (DescribeClusterOperation).
    KafkaOperationState {
        Pending = "PENDING",
        UpdateInProgress = "UPDATE_IN_PROGRESS",
        UpdateComplete = "UPDATE_COMPLETE",
        UpdateFailed = "UPDATE_FAILED",
    }
}

status! {
    /// `KafkaVersion.Status` (ListKafkaVersions): ACTIVE or DEPRECATED.
    KafkaVersionStatus {
        Active = "ACTIVE",
        Deprecated = "DEPRECATED",
    }
}

// ---- RDS (Amazon RDS API Reference and User Guide) ------------------------------------------

status! {
    /// `DBInstance.DBInstanceStatus` (User Guide, "Viewing Amazon RDS DB instance status").
    /// Whether a state needs an operator is [`DbInstanceStatus::needs_operator`].
    DbInstanceStatus {
        Available = "available",
        BackingUp = "backing-up",
        Creating = "creating",
        Deleting = "deleting",
        Failed = "failed",
        IncompatibleCredentials = "incompatible-credentials",
        IncompatibleNetwork = "incompatible-network",
        IncompatibleOptionGroup = "incompatible-option-group",
        IncompatibleParameters = "incompatible-parameters",
        IncompatibleRestore = "incompatible-restore",
        InaccessibleEncryptionCredentials = "inaccessible-encryption-credentials",
        InaccessibleEncryptionCredentialsRecoverable = "inaccessible-encryption-credentials-recoverable",
        Modifying = "modifying",
        Rebooting = "rebooting",
        RestoreError = "restore-error",
        Starting = "starting",
        Stopped = "stopped",
        Stopping = "stopping",
        StorageFull = "storage-full",
        StorageOptimization = "storage-optimization",
    }
}

impl DbInstanceStatus {
    /// The instance will not become available by itself (see [`crate::state::db_instance`]).
    pub fn needs_operator(&self) -> bool {
        crate::state::db_instance::needs_operator(self.as_str())
    }

    /// Usable and not changing any more: `available`, or `storage-optimization`, which follows
    /// every storage change for hours while the instance serves normally (RDS User Guide,
    /// "Increasing DB instance storage capacity").
    pub fn settled(&self) -> bool {
        matches!(
            self,
            DbInstanceStatus::Available | DbInstanceStatus::StorageOptimization
        )
    }
}

status! {
    /// `DBParameterGroupStatus.ParameterApplyStatus`: whether the instance runs its group's
    /// values (`in-sync`), waits for a reboot (`pending-reboot`) or is applying them.
    ParameterApplyStatus {
        InSync = "in-sync",
        PendingReboot = "pending-reboot",
        Applying = "applying",
    }
}

status! {
    /// `Parameter.ApplyMethod` (ModifyDBParameterGroup): now, or at the next reboot.
    ApplyMethod {
        Immediate = "immediate",
        PendingReboot = "pending-reboot",
    }
}

status! {
    /// `DBEngineVersion.Status` (DescribeDBEngineVersions): `available` or `deprecated`.
    EngineVersionStatus {
        Available = "available",
        Deprecated = "deprecated",
    }
}

/// Every spelling of every state this module knows: the literals no code outside this crate
/// compares (a test greps `src/` and the sandbox for them).
pub fn spellings() -> Vec<&'static str> {
    fn of<T: 'static>(
        known: &'static [T],
        as_str: fn(&'static T) -> &'static str,
    ) -> Vec<&'static str> {
        known.iter().map(as_str).collect()
    }
    [
        of(ClusterStatus::KNOWN, ClusterStatus::as_str),
        of(ServiceStatus::KNOWN, ServiceStatus::as_str),
        of(DeploymentStatus::KNOWN, DeploymentStatus::as_str),
        of(RolloutState::KNOWN, RolloutState::as_str),
        of(TaskStatus::KNOWN, TaskStatus::as_str),
        of(
            ContainerInstanceStatus::KNOWN,
            ContainerInstanceStatus::as_str,
        ),
        of(
            CapacityProviderStatus::KNOWN,
            CapacityProviderStatus::as_str,
        ),
        of(
            CapacityProviderUpdateStatus::KNOWN,
            CapacityProviderUpdateStatus::as_str,
        ),
        of(TaskDefinitionStatus::KNOWN, TaskDefinitionStatus::as_str),
        of(KafkaClusterState::KNOWN, KafkaClusterState::as_str),
        of(KafkaOperationState::KNOWN, KafkaOperationState::as_str),
        of(KafkaVersionStatus::KNOWN, KafkaVersionStatus::as_str),
        of(DbInstanceStatus::KNOWN, DbInstanceStatus::as_str),
        of(ParameterApplyStatus::KNOWN, ParameterApplyStatus::as_str),
        of(ApplyMethod::KNOWN, ApplyMethod::as_str),
        of(EngineVersionStatus::KNOWN, EngineVersionStatus::as_str),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_state_parses_back_from_its_spelling() {
        for s in ServiceStatus::KNOWN {
            assert_eq!(&ServiceStatus::parse(s.as_str()), s);
        }
        for s in DbInstanceStatus::KNOWN {
            assert_eq!(&DbInstanceStatus::parse(s.as_str()), s);
        }
        for s in TaskStatus::KNOWN {
            assert_eq!(&TaskStatus::parse(s.as_str()), s);
        }
    }

    #[test]
    fn an_unknown_state_is_carried_not_lost() {
        let s = KafkaClusterState::parse("PATCHING");
        assert_eq!(s, KafkaClusterState::Other("PATCHING".into()));
        assert_eq!(s.as_str(), "PATCHING");
        assert_eq!(s.to_string(), "PATCHING");
        assert!(s != KafkaClusterState::Active);
    }

    #[test]
    fn a_state_compares_with_the_string_it_came_in_as() {
        let live = String::from("ACTIVE");
        assert!(live == ServiceStatus::Active);
        assert!(live != ServiceStatus::Draining);
        assert!("DRAINING" == ServiceStatus::Draining);
        assert!(ServiceStatus::Inactive == "INACTIVE");
        // The same spelling in two enums is two states.
        assert!(live == ClusterStatus::Active && live == CapacityProviderStatus::Active);
    }

    #[test]
    fn spellings_list_every_known_state() {
        let all = spellings();
        assert!(all.contains(&"DEPROVISIONING") && all.contains(&"storage-optimization"));
        assert!(!all.contains(&"PATCHING"));
    }

    #[test]
    fn one_answer_for_db_states() {
        assert!(DbInstanceStatus::StorageFull.needs_operator());
        assert!(!DbInstanceStatus::Modifying.needs_operator());
        assert!(DbInstanceStatus::parse("storage-optimization").settled());
        assert!(!DbInstanceStatus::Stopped.settled());
    }
}
