//! The error codes AWS answers that envctl acts on, as one type, so a code is written once
//! (here) and recognised by value everywhere else: envctl's adapters compare
//! `AwsError::is_code(ErrorCode::X)`, and the sandbox answers with `ErrorCode::X.as_str()`.
//!
//! The spelling is AWS's own (the `code` of the error response, which the SDKs expose as
//! `ProvideErrorMetadata::code`); the variants carry it unchanged so a grep for the code
//! AWS documents finds both the client and the emulator.

/// An AWS error code that changes what envctl does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    // ECS: "Common Errors" and each action's "Errors" section of the ECS API Reference.
    /// A request ECS refuses for the caller's reason (a resource in use, a missing one
    /// named by ARN, a provider that does not exist...).
    ClientException,
    InvalidParameterException,
    ClusterNotFoundException,
    ServiceNotFoundException,
    ServiceNotActiveException,
    ClusterContainsContainerInstancesException,
    ClusterContainsServicesException,
    ClusterContainsTasksException,
    /// DeleteCluster while a cluster-scoped (Managed Instances) capacity provider exists.
    ClusterContainsCapacityProviderException,
    ResourceInUseException,
    ServerException,
    // MSK (Kafka API Reference, "Errors").
    NotFoundException,
    ConflictException,
    BadRequestException,
    // RDS (RDS API Reference, each action's "Errors").
    DBInstanceNotFound,
    DBInstanceAlreadyExists,
    InvalidDBInstanceState,
    DBParameterGroupNotFound,
    DBParameterGroupAlreadyExists,
    DBSubnetGroupNotFoundFault,
    DBSubnetGroupAlreadyExists,
    InvalidDBSubnetGroupStateFault,
    /// DeleteDBParameterGroup while an instance (or one deleted a moment ago) uses it.
    InvalidDBParameterGroupState,
    /// DeleteDBInstance with a final snapshot identifier already taken.
    DBSnapshotAlreadyExists,
    // S3 (S3 API Reference, "Error responses"): HeadObject's 404 carries no body, so the
    // SDK reports `NotFound`; GetObject's is `NoSuchKey`.
    NoSuchKey,
    NotFound,
    NoSuchBucket,
    // Secrets Manager and CloudWatch Logs (their API References, each action's "Errors").
    /// A secret or log group that does not exist.
    ResourceNotFoundException,
    /// CreateSecret for a name that exists.
    ResourceExistsException,
    /// CreateLogGroup for a name that exists.
    ResourceAlreadyExistsException,
    /// Secrets Manager: the secret is scheduled for deletion (or another state refuses it).
    InvalidRequestException,
    /// A conditional write (If-Match / If-None-Match) that lost to another writer.
    PreconditionFailed,
    /// Two conditional writes of one key at once: one of them is told to retry.
    ConditionalRequestConflict,
    // Throttling, as ECS, MSK, RDS, CloudWatch and S3 spell it.
    ThrottlingException,
    Throttling,
    TooManyRequestsException,
    RequestLimitExceeded,
    RequestThrottled,
    SlowDown,
}

impl ErrorCode {
    /// Every code, for tests and for tables that list them.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::ClientException,
        ErrorCode::InvalidParameterException,
        ErrorCode::ClusterNotFoundException,
        ErrorCode::ServiceNotFoundException,
        ErrorCode::ServiceNotActiveException,
        ErrorCode::ClusterContainsContainerInstancesException,
        ErrorCode::ClusterContainsServicesException,
        ErrorCode::ClusterContainsTasksException,
        ErrorCode::ClusterContainsCapacityProviderException,
        ErrorCode::ResourceInUseException,
        ErrorCode::ServerException,
        ErrorCode::NotFoundException,
        ErrorCode::ConflictException,
        ErrorCode::BadRequestException,
        ErrorCode::DBInstanceNotFound,
        ErrorCode::DBInstanceAlreadyExists,
        ErrorCode::InvalidDBInstanceState,
        ErrorCode::DBParameterGroupNotFound,
        ErrorCode::DBParameterGroupAlreadyExists,
        ErrorCode::DBSubnetGroupNotFoundFault,
        ErrorCode::DBSubnetGroupAlreadyExists,
        ErrorCode::InvalidDBSubnetGroupStateFault,
        ErrorCode::InvalidDBParameterGroupState,
        ErrorCode::DBSnapshotAlreadyExists,
        ErrorCode::NoSuchKey,
        ErrorCode::NotFound,
        ErrorCode::NoSuchBucket,
        ErrorCode::ResourceNotFoundException,
        ErrorCode::ResourceExistsException,
        ErrorCode::ResourceAlreadyExistsException,
        ErrorCode::InvalidRequestException,
        ErrorCode::PreconditionFailed,
        ErrorCode::ConditionalRequestConflict,
        ErrorCode::ThrottlingException,
        ErrorCode::Throttling,
        ErrorCode::TooManyRequestsException,
        ErrorCode::RequestLimitExceeded,
        ErrorCode::RequestThrottled,
        ErrorCode::SlowDown,
    ];

    /// The code as AWS sends it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ClientException => "ClientException",
            ErrorCode::InvalidParameterException => "InvalidParameterException",
            ErrorCode::ClusterNotFoundException => "ClusterNotFoundException",
            ErrorCode::ServiceNotFoundException => "ServiceNotFoundException",
            ErrorCode::ServiceNotActiveException => "ServiceNotActiveException",
            ErrorCode::ClusterContainsContainerInstancesException => {
                "ClusterContainsContainerInstancesException"
            }
            ErrorCode::ClusterContainsServicesException => "ClusterContainsServicesException",
            ErrorCode::ClusterContainsTasksException => "ClusterContainsTasksException",
            ErrorCode::ClusterContainsCapacityProviderException => {
                "ClusterContainsCapacityProviderException"
            }
            ErrorCode::ResourceInUseException => "ResourceInUseException",
            ErrorCode::ServerException => "ServerException",
            ErrorCode::NotFoundException => "NotFoundException",
            ErrorCode::ConflictException => "ConflictException",
            ErrorCode::BadRequestException => "BadRequestException",
            ErrorCode::DBInstanceNotFound => "DBInstanceNotFound",
            ErrorCode::DBInstanceAlreadyExists => "DBInstanceAlreadyExists",
            ErrorCode::InvalidDBInstanceState => "InvalidDBInstanceState",
            ErrorCode::DBParameterGroupNotFound => "DBParameterGroupNotFound",
            ErrorCode::DBParameterGroupAlreadyExists => "DBParameterGroupAlreadyExists",
            ErrorCode::DBSubnetGroupNotFoundFault => "DBSubnetGroupNotFoundFault",
            ErrorCode::DBSubnetGroupAlreadyExists => "DBSubnetGroupAlreadyExists",
            ErrorCode::InvalidDBSubnetGroupStateFault => "InvalidDBSubnetGroupStateFault",
            ErrorCode::InvalidDBParameterGroupState => "InvalidDBParameterGroupState",
            ErrorCode::DBSnapshotAlreadyExists => "DBSnapshotAlreadyExists",
            ErrorCode::NoSuchKey => "NoSuchKey",
            ErrorCode::NotFound => "NotFound",
            ErrorCode::NoSuchBucket => "NoSuchBucket",
            ErrorCode::ResourceNotFoundException => "ResourceNotFoundException",
            ErrorCode::ResourceExistsException => "ResourceExistsException",
            ErrorCode::ResourceAlreadyExistsException => "ResourceAlreadyExistsException",
            ErrorCode::InvalidRequestException => "InvalidRequestException",
            ErrorCode::PreconditionFailed => "PreconditionFailed",
            ErrorCode::ConditionalRequestConflict => "ConditionalRequestConflict",
            ErrorCode::ThrottlingException => "ThrottlingException",
            ErrorCode::Throttling => "Throttling",
            ErrorCode::TooManyRequestsException => "TooManyRequestsException",
            ErrorCode::RequestLimitExceeded => "RequestLimitExceeded",
            ErrorCode::RequestThrottled => "RequestThrottled",
            ErrorCode::SlowDown => "SlowDown",
        }
    }

    /// The code AWS sent, if it is one envctl acts on.
    pub fn parse(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == code)
    }

    /// Rate limiting: the call was refused before it did anything, and waiting helps.
    pub const fn is_throttling(self) -> bool {
        matches!(
            self,
            ErrorCode::ThrottlingException
                | ErrorCode::Throttling
                | ErrorCode::TooManyRequestsException
                | ErrorCode::RequestLimitExceeded
                | ErrorCode::RequestThrottled
                | ErrorCode::SlowDown
        )
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_as_itself_and_is_listed_once() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
            assert!(seen.insert(code.as_str()), "{code} listed twice");
        }
        assert_eq!(ErrorCode::parse("SomethingElse"), None);
    }

    #[test]
    fn throttling_is_the_rate_limit_codes_only() {
        assert!(ErrorCode::ThrottlingException.is_throttling());
        assert!(ErrorCode::SlowDown.is_throttling());
        assert!(!ErrorCode::ClientException.is_throttling());
        assert!(!ErrorCode::ServerException.is_throttling());
    }
}
