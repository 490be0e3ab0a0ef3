//! Report 003's sizing of a Kafka cluster by its brokers' storage throughput, shared by
//! `envctl validate` (the `kafka-storage-throughput` lint), `matrix plan` and the report (the
//! ceiling beside the measured throughput) and the sandbox (whose emulated OpenMessaging
//! Benchmark driver never publishes above it).
//!
//! Every byte a producer sends is written once by the partition's leader and once more by
//! each of the `r - 1` followers, and leaders and followers spread over the brokers, so one
//! broker's storage receives `t_storage = t_cluster / brokers * r`; hence
//! `max(t_cluster) <= max(t_storage) * brokers / r` (the AWS "Best practices for right-sizing
//! your Apache Kafka clusters to optimize performance and cost" sizing, quoted by NetApp's
//! "Performance overview and validation with AFF A900 on-premises" Kafka report). Kafka
//! refuses a topic whose replication factor exceeds the brokers it has
//! (`InvalidReplicationFactorException: Replication factor: 3 larger than available
//! brokers: 2`), so such a ceiling is an error, not a number.

use std::fmt;

/// What the ceiling is computed from: the env's brokers, the workload's replication factor
/// and what one broker's storage sustains (MB/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StorageSizing {
    pub storage_mb_s: f64,
    pub brokers: u32,
    pub replication_factor: u32,
}

/// Why no ceiling can be computed from a [`StorageSizing`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizingError {
    NoBrokers,
    NoReplicas,
    /// Kafka refuses to create such a topic.
    ReplicationAboveBrokers {
        replication_factor: u32,
        brokers: u32,
    },
    /// Zero, negative, infinite or NaN.
    StorageThroughput(f64),
}

impl fmt::Display for SizingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizingError::NoBrokers => f.write_str("a cluster without brokers has no ceiling"),
            SizingError::NoReplicas => f.write_str("a replication factor is at least 1"),
            SizingError::ReplicationAboveBrokers {
                replication_factor,
                brokers,
            } => write!(
                f,
                "replication factor {replication_factor} is larger than the {brokers} brokers: \
                 Kafka refuses such a topic"
            ),
            SizingError::StorageThroughput(v) => write!(
                f,
                "a broker's storage throughput is a positive number of MB/s, not {v}"
            ),
        }
    }
}

impl std::error::Error for SizingError {}

impl StorageSizing {
    /// `max(t_cluster) = t_storage x brokers / r`, in MB/s: the producer throughput the
    /// brokers' storage can absorb.
    pub fn producer_ceiling_mb_s(&self) -> Result<f64, SizingError> {
        if self.brokers == 0 {
            return Err(SizingError::NoBrokers);
        }
        if self.replication_factor == 0 {
            return Err(SizingError::NoReplicas);
        }
        if self.replication_factor > self.brokers {
            return Err(SizingError::ReplicationAboveBrokers {
                replication_factor: self.replication_factor,
                brokers: self.brokers,
            });
        }
        if !(self.storage_mb_s.is_finite() && self.storage_mb_s > 0.0) {
            return Err(SizingError::StorageThroughput(self.storage_mb_s));
        }
        Ok(self.storage_mb_s * f64::from(self.brokers) / f64::from(self.replication_factor))
    }
}

/// A measured producer throughput beside the ceiling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CeilingCheck {
    pub measured_mb_s: f64,
    pub ceiling_mb_s: f64,
    /// measured / ceiling.
    pub share: f64,
    pub verdict: CeilingVerdict,
}

/// Where a measured throughput sits against the ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeilingVerdict {
    /// Below [`NEAR_CEILING_SHARE`] of the ceiling: storage was not what limited it.
    Below,
    /// Within [`NEAR_CEILING_SHARE`] of the ceiling or up to it: storage may be the limit.
    Near,
    /// Above the ceiling: the storage figure is too low (or the brokers' page cache absorbed
    /// a burst); the sizing's input needs correcting, not the cluster.
    Above,
}

/// From this share of the ceiling on, a measured throughput is "near" it: within the
/// run-to-run spread of a throughput test (about 10%), storage cannot be ruled out.
pub const NEAR_CEILING_SHARE: f64 = 0.9;

impl CeilingCheck {
    pub fn new(measured_mb_s: f64, ceiling_mb_s: f64) -> CeilingCheck {
        let share = if ceiling_mb_s > 0.0 {
            measured_mb_s / ceiling_mb_s
        } else {
            f64::INFINITY
        };
        let verdict = if share > 1.0 {
            CeilingVerdict::Above
        } else if share >= NEAR_CEILING_SHARE {
            CeilingVerdict::Near
        } else {
            CeilingVerdict::Below
        };
        CeilingCheck {
            measured_mb_s,
            ceiling_mb_s,
            share,
            verdict,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizing(storage_mb_s: f64, brokers: u32, replication_factor: u32) -> StorageSizing {
        StorageSizing {
            storage_mb_s,
            brokers,
            replication_factor,
        }
    }

    #[test]
    fn the_ceiling_is_storage_times_brokers_over_replication() {
        // envs/kafka-omb.yaml: 8 brokers whose EBS volume sustains 250 MB/s.
        assert_eq!(
            sizing(250.0, 8, 3).producer_ceiling_mb_s(),
            Ok(2000.0 / 3.0)
        );
        assert_eq!(sizing(250.0, 8, 2).producer_ceiling_mb_s(), Ok(1000.0));
        assert_eq!(sizing(250.0, 8, 1).producer_ceiling_mb_s(), Ok(2000.0));
        // Report 003's own figures: t_storage = t_cluster / brokers * r, so 3.4 GB/s over 8
        // brokers at r = 3 is 1.275 GB/s per broker, and back again.
        let t_storage = 3400.0 / 8.0 * 3.0;
        let ceiling = sizing(t_storage, 8, 3).producer_ceiling_mb_s();
        assert!(ceiling.is_ok_and(|c| (c - 3400.0).abs() < 1e-9));
    }

    #[test]
    fn a_lower_replication_factor_raises_the_ceiling_in_proportion() {
        let rf3 = sizing(250.0, 8, 3).producer_ceiling_mb_s();
        let rf2 = sizing(250.0, 8, 2).producer_ceiling_mb_s();
        match (rf3, rf2) {
            (Ok(a), Ok(b)) => assert!((b / a - 1.5).abs() < 1e-12),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_has_no_ceiling_says_why() {
        assert_eq!(
            sizing(250.0, 0, 3).producer_ceiling_mb_s(),
            Err(SizingError::NoBrokers)
        );
        assert_eq!(
            sizing(250.0, 3, 0).producer_ceiling_mb_s(),
            Err(SizingError::NoReplicas)
        );
        assert_eq!(
            sizing(250.0, 2, 3).producer_ceiling_mb_s(),
            Err(SizingError::ReplicationAboveBrokers {
                replication_factor: 3,
                brokers: 2
            })
        );
        for bad in [0.0, -1.0, f64::INFINITY] {
            assert_eq!(
                sizing(bad, 8, 3).producer_ceiling_mb_s(),
                Err(SizingError::StorageThroughput(bad))
            );
        }
        assert!(matches!(
            sizing(f64::NAN, 8, 3).producer_ceiling_mb_s(),
            Err(SizingError::StorageThroughput(_))
        ));
        assert_eq!(
            SizingError::ReplicationAboveBrokers {
                replication_factor: 3,
                brokers: 2
            }
            .to_string(),
            "replication factor 3 is larger than the 2 brokers: Kafka refuses such a topic"
        );
    }

    #[test]
    fn a_measured_throughput_is_below_near_or_above_the_ceiling() {
        let c = CeilingCheck::new(500.0, 1000.0);
        assert_eq!((c.share, c.verdict), (0.5, CeilingVerdict::Below));
        assert_eq!(
            CeilingCheck::new(900.0, 1000.0).verdict,
            CeilingVerdict::Near
        );
        assert_eq!(
            CeilingCheck::new(1000.0, 1000.0).verdict,
            CeilingVerdict::Near
        );
        assert_eq!(
            CeilingCheck::new(1000.1, 1000.0).verdict,
            CeilingVerdict::Above
        );
    }
}
