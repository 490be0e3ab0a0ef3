//! What MSK accepts of an in-place change, shared by envctl's planner (which plans a
//! replacement, or refuses, instead of sending what MSK would refuse) and the sandbox
//! (which refuses it as MSK does).
//!
//! - Broker types: "For Standard brokers, you can update your cluster broker size from M5
//!   or T3 to M7g, T3 to M5, or from M7g to M5. You can't migrate from a larger broker size
//!   to a smaller broker size. For example, M7g.large to T3.small. For Express brokers, you
//!   can use only M7g broker sizes." (MSK Developer Guide, "Update the Amazon MSK cluster
//!   broker size", msk-update-broker-type.html). The same page advises trying an update "to
//!   a smaller broker size" on a test cluster first, so a smaller size of an allowed family
//!   is accepted; the note's refusal is read as its example says: nothing moves down to
//!   T3, the family that is only ever a source. A Standard cluster does not become an
//!   Express one by UpdateBrokerType (boto/boto3#4356: `express.m7g.4xlarge` asked, the
//!   cluster ended on `kafka.m7g.4xlarge`).
//! - Storage: "the cluster requires a cool-down period after every storage scaling event
//!   ... from a minimum of 6 hours to over 24 hours" (MSK Developer Guide, "Scale up Amazon
//!   MSK Standard broker storage", msk-update-storage.html; "Manual scaling for Standard
//!   brokers": "a cool-down period of at least six hours between events").

/// The least time between two storage scaling events of a cluster, in seconds: MSK's
/// documented minimum (the real cool-down can last over 24 hours).
pub const STORAGE_COOL_DOWN_S: f64 = 6.0 * 3600.0;

/// A broker type as MSK names it: `kafka.m5.2xlarge` (Standard), `express.m7g.large`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerType<'a> {
    pub express: bool,
    /// `t3`, `m5`, `m7g`, ...
    pub family: &'a str,
    /// `small`, `large`, `2xlarge`, ...
    pub size: &'a str,
}

impl<'a> BrokerType<'a> {
    pub fn parse(name: &'a str) -> Option<BrokerType<'a>> {
        let mut parts = name.split('.');
        let express = match parts.next()? {
            "kafka" => false,
            "express" => true,
            _ => return None,
        };
        let (family, size) = (parts.next()?, parts.next()?);
        if parts.next().is_some() || family.is_empty() || size.is_empty() {
            return None;
        }
        Some(BrokerType {
            express,
            family,
            size,
        })
    }
}

/// Why MSK's UpdateBrokerType refuses moving a cluster from broker type `from` to `to`, if
/// it does: the sentence a plan shows as a replacement's reason and the sandbox answers.
pub fn broker_type_change_refusal(from: &str, to: &str) -> Option<String> {
    if from == to {
        return None;
    }
    let (Some(a), Some(b)) = (BrokerType::parse(from), BrokerType::parse(to)) else {
        return Some(format!(
            "{from} -> {to}: not broker types MSK names (kafka.<family>.<size> or express.m7g.<size>)"
        ));
    };
    if a.express != b.express {
        return Some(format!(
            "{from} -> {to}: UpdateBrokerType does not move a cluster between Standard and Express brokers"
        ));
    }
    if b.express {
        return (b.family != "m7g")
            .then(|| format!("{from} -> {to}: Express brokers come in M7g sizes only"));
    }
    let allowed = match (a.family, b.family) {
        // A size change within M5 or M7g (T3 has one size).
        (x, y) if x == y => x != "t3",
        ("t3" | "m5", "m7g") | ("t3" | "m7g", "m5") => true,
        _ => false,
    };
    (!allowed).then(|| {
        if b.family == "t3" {
            format!(
                "{from} -> {to}: MSK does not migrate a cluster from a larger broker size to a smaller one such as T3"
            )
        } else {
            format!(
                "{from} -> {to}: MSK updates Standard brokers only from M5 or T3 to M7g, T3 to M5, or M7g to M5"
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_types_move_only_along_msks_paths() {
        let ok = [
            ("kafka.m5.large", "kafka.m7g.large"),
            ("kafka.t3.small", "kafka.m7g.large"),
            ("kafka.t3.small", "kafka.m5.large"),
            ("kafka.m7g.2xlarge", "kafka.m5.2xlarge"),
            ("kafka.m5.large", "kafka.m5.4xlarge"),
            ("kafka.m5.4xlarge", "kafka.m5.large"),
            ("express.m7g.large", "express.m7g.xlarge"),
        ];
        for (from, to) in ok {
            assert_eq!(broker_type_change_refusal(from, to), None, "{from} -> {to}");
        }
        let refused = [
            ("kafka.m5.2xlarge", "kafka.t3.small", "larger broker size"),
            ("kafka.m7g.large", "kafka.t3.small", "larger broker size"),
            (
                "kafka.m5.2xlarge",
                "express.m7g.2xlarge",
                "Standard and Express",
            ),
            (
                "express.m7g.large",
                "kafka.m7g.large",
                "Standard and Express",
            ),
            ("kafka.m5.large", "kafka.r5.large", "only from M5 or T3"),
            ("kafka.m5.large", "m5.large", "not broker types"),
        ];
        for (from, to, why) in refused {
            let refusal = broker_type_change_refusal(from, to).expect(from);
            assert!(refusal.contains(why), "{refusal}");
        }
    }
}
