//! Amazon Resource Names, parsed once: `arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE`.
//!
//! The resource part is service-specific: ECS writes `service/CLUSTER/NAME`,
//! `task-definition/FAMILY:REVISION`, `container-instance/CLUSTER/ID`; MSK writes
//! `cluster/NAME/UUID` and `configuration/NAME/UUID`; RDS writes `db:ID`. The accessors below
//! name what envctl reads from them, so no caller splits an ARN by hand. Source: IAM User
//! Guide, "IAM identifiers", ARN format; each service's "Resource types" table in the
//! Service Authorization Reference.

/// An ARN's parts, borrowed from the string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arn<'a> {
    pub partition: &'a str,
    pub service: &'a str,
    pub region: &'a str,
    pub account: &'a str,
    /// Everything after the account: `service/pcp1-pvt/mod-users`, `db:pcp1-writer`.
    pub resource: &'a str,
}

impl<'a> Arn<'a> {
    /// The parts of `arn`, or `None` when it is not an ARN (fewer than six `:`-separated
    /// fields, or another prefix).
    pub fn parse(arn: &'a str) -> Option<Arn<'a>> {
        let mut parts = arn.splitn(6, ':');
        if parts.next()? != "arn" {
            return None;
        }
        Some(Arn {
            partition: parts.next()?,
            service: parts.next()?,
            region: parts.next()?,
            account: parts.next()?,
            resource: parts.next()?,
        })
    }
}

/// The last `/`-separated segment of an ARN's resource: a service's, cluster's or container
/// instance's name or id (`.../pcp1-pvt/mod-users` -> `mod-users`), a task definition's
/// `FAMILY:REVISION`. A string that is not an ARN is returned as it is (a bare name).
pub fn resource_name(arn: &str) -> &str {
    match Arn::parse(arn) {
        Some(a) => a.resource.rsplit('/').next().unwrap_or(a.resource),
        None => arn,
    }
}

/// A task definition's family and revision, from its ARN
/// (`...:task-definition/pcp1-mod-users:3`) or from `FAMILY:REVISION`.
pub fn task_definition_revision(arn_or_name: &str) -> Option<(&str, u64)> {
    let (family, revision) = resource_name(arn_or_name).rsplit_once(':')?;
    Some((family, revision.parse().ok()?))
}

/// An MSK cluster's or configuration's name (`...:configuration/pcp1-tenant/UUID-N` ->
/// `pcp1-tenant`): MSK puts a unique id after the name.
pub fn msk_name(arn: &str) -> Option<&str> {
    Arn::parse(arn)?.resource.split('/').nth(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE: &str = "arn:aws:ecs:eu-west-1:123456789012:service/pcp1-pvt/mod-users";
    const REVISION: &str = "arn:aws:ecs:eu-west-1:123456789012:task-definition/pcp1-mod-users:13";
    const CONFIG: &str = "arn:aws:kafka:eu-west-1:123456789012:configuration/pcp1-tenant/0e1f-2";

    #[test]
    fn parts_of_an_arn() {
        let a = Arn::parse(SERVICE).unwrap_or_else(|| panic!("{SERVICE} is an ARN"));
        assert_eq!(
            (a.partition, a.service, a.region, a.account),
            ("aws", "ecs", "eu-west-1", "123456789012")
        );
        assert_eq!(a.resource, "service/pcp1-pvt/mod-users");
        let db = Arn::parse("arn:aws:rds:eu-west-1:1:db:pcp1-writer");
        assert_eq!(db.map(|a| a.resource), Some("db:pcp1-writer"));
        assert_eq!(Arn::parse("mod-users"), None);
        assert_eq!(Arn::parse("urn:aws:ecs:r:1:service/x"), None);
    }

    #[test]
    fn names_revisions_and_msk_names() {
        assert_eq!(resource_name(SERVICE), "mod-users");
        assert_eq!(resource_name("mod-users"), "mod-users");
        assert_eq!(resource_name(REVISION), "pcp1-mod-users:13");
        assert_eq!(
            task_definition_revision(REVISION),
            Some(("pcp1-mod-users", 13))
        );
        assert_eq!(
            task_definition_revision("pcp1-mod-users-bl:2"),
            Some(("pcp1-mod-users-bl", 2))
        );
        assert_eq!(task_definition_revision("pcp1-mod-users"), None);
        assert_eq!(msk_name(CONFIG), Some("pcp1-tenant"));
        assert_eq!(msk_name("pcp1-tenant"), None);
    }
}
