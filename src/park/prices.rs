//! On-demand prices (USD per hour, us-east-1) of the instance types and classes the shipped
//! envs use, for estimating what parking saves per day (`park::cost`). Source and date:
//! docs/park.md, "What parking saves"; each table's page is its `*_SOURCE`, which the cost
//! lines name. An unknown type has no estimate rather than a guessed one.

/// Where the EC2 prices come from (Linux on-demand, US East (N. Virginia)).
pub const EC2_SOURCE: &str = "aws.amazon.com/ec2/pricing/on-demand";
/// Where the RDS prices come from (PostgreSQL, Single-AZ, US East (N. Virginia)).
pub const RDS_SOURCE: &str = "aws.amazon.com/rds/postgresql/pricing";
/// Where the MSK prices come from (provisioned brokers, US East (N. Virginia)).
pub const MSK_SOURCE: &str = "aws.amazon.com/msk/pricing";

/// EC2 container instances (Linux).
const EC2: &[(&str, f64)] = &[
    ("m6i.xlarge", 0.192),
    ("m6i.2xlarge", 0.384),
    ("m6i.4xlarge", 0.768),
    ("c6i.2xlarge", 0.34),
    ("c6i.4xlarge", 0.68),
];

/// RDS for PostgreSQL, Single-AZ.
const RDS: &[(&str, f64)] = &[
    ("db.r6g.large", 0.225),
    ("db.r6g.xlarge", 0.449),
    ("db.r6g.2xlarge", 0.899),
    ("db.r6g.4xlarge", 1.798),
];

/// MSK brokers (provisioned, standard).
const MSK: &[(&str, f64)] = &[
    ("kafka.m5.large", 0.21),
    ("kafka.m5.xlarge", 0.42),
    ("kafka.m5.2xlarge", 0.84),
    ("kafka.m5.4xlarge", 1.68),
    ("kafka.m7g.large", 0.204),
    ("kafka.m7g.xlarge", 0.408),
    ("kafka.m7g.2xlarge", 0.816),
];

fn find(table: &[(&str, f64)], kind: &str) -> Option<f64> {
    table.iter().find(|(k, _)| *k == kind).map(|(_, p)| *p)
}

pub fn ec2_hourly(instance_type: &str) -> Option<f64> {
    find(EC2, instance_type)
}

pub fn rds_hourly(class: &str) -> Option<f64> {
    find(RDS, class)
}

pub fn msk_hourly(broker_type: &str) -> Option<f64> {
    find(MSK, broker_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_the_shipped_envs_use_has_a_price() {
        for t in ["m6i.2xlarge", "m6i.4xlarge", "c6i.4xlarge"] {
            assert!(ec2_hourly(t).is_some(), "{t}");
        }
        for c in ["db.r6g.xlarge", "db.r6g.2xlarge"] {
            assert!(rds_hourly(c).is_some(), "{c}");
        }
        for b in ["kafka.m5.2xlarge", "kafka.m7g.2xlarge", "kafka.m5.4xlarge"] {
            assert!(msk_hourly(b).is_some(), "{b}");
        }
        assert_eq!(rds_hourly("db.x99.huge"), None);
    }
}
