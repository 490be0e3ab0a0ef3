//! The variant each figure is compared against: per axis, one baseline variant.
//!
//! A point's counterpart is the point with every baseline axis set to its baseline variant
//! and every other axis unchanged; so with `kafka=zookeeper-m5`, the KRaft point of the
//! update job compares against the ZooKeeper point of the update job.
use std::collections::BTreeMap;

use crate::results::AxisRecord;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaselineError {
    #[error("baseline `{0}` is not `axis=variant`")]
    Syntax(String),
    #[error("baseline names axis `{axis}`, which the run does not have (its axes: {known})")]
    UnknownAxis { axis: String, known: String },
    #[error(
        "baseline `{axis}={variant}`: axis `{axis}` has no variant `{variant}` (its variants: {known})"
    )]
    UnknownVariant {
        axis: String,
        variant: String,
        known: String,
    },
}

/// Axis name -> baseline variant.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Baseline(pub BTreeMap<String, String>);

impl Baseline {
    /// Parses one `--baseline axis=variant`.
    pub fn parse_pair(text: &str) -> Result<(String, String), BaselineError> {
        match text.split_once('=') {
            Some((axis, variant)) if !axis.trim().is_empty() && !variant.trim().is_empty() => {
                Ok((axis.trim().to_owned(), variant.trim().to_owned()))
            }
            _ => Err(BaselineError::Syntax(text.to_owned())),
        }
    }

    /// The baseline to use: the `requested` pairs when there are any (they replace the
    /// run's), else the one recorded in `run.json`, else the first variant of the first
    /// axis. Every pair must name an axis and a variant of the run.
    pub fn resolve(
        axes: &[AxisRecord],
        recorded: &BTreeMap<String, String>,
        requested: &[(String, String)],
    ) -> Result<Self, BaselineError> {
        let chosen: BTreeMap<String, String> = if !requested.is_empty() {
            requested.iter().cloned().collect()
        } else if !recorded.is_empty() {
            recorded.clone()
        } else {
            axes.first()
                .and_then(|axis| {
                    axis.variants
                        .first()
                        .map(|variant| (axis.name.clone(), variant.clone()))
                })
                .into_iter()
                .collect()
        };
        for (axis, variant) in &chosen {
            let Some(record) = axes.iter().find(|a| &a.name == axis) else {
                return Err(BaselineError::UnknownAxis {
                    axis: axis.clone(),
                    known: axes
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            if !record.variants.contains(variant) {
                return Err(BaselineError::UnknownVariant {
                    axis: axis.clone(),
                    variant: variant.clone(),
                    known: record.variants.join(", "),
                });
            }
        }
        Ok(Self(chosen))
    }

    pub fn contains_axis(&self, axis: &str) -> bool {
        self.0.contains_key(axis)
    }

    /// The axes of `point` with the baseline axes replaced by their baseline variants.
    pub fn counterpart(&self, point: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        point
            .iter()
            .map(|(axis, variant)| {
                let variant = self.0.get(axis).unwrap_or(variant);
                (axis.clone(), variant.clone())
            })
            .collect()
    }

    /// `kafka=zookeeper-m5, job=create-25k`.
    pub fn describe(&self) -> String {
        self.0
            .iter()
            .map(|(axis, variant)| format!("{axis}={variant}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes() -> Vec<AxisRecord> {
        vec![
            AxisRecord {
                name: "kafka".into(),
                variants: vec!["zookeeper-m5".into(), "kraft-m7g".into()],
            },
            AxisRecord {
                name: "job".into(),
                variants: vec!["create-25k".into(), "update-25k".into()],
            },
        ]
    }

    #[test]
    fn requested_replaces_recorded_which_replaces_the_default() {
        let recorded = BTreeMap::from([("job".to_owned(), "update-25k".to_owned())]);
        let requested = [Baseline::parse_pair("kafka=kraft-m7g").unwrap()];
        assert_eq!(
            Baseline::resolve(&axes(), &recorded, &requested)
                .unwrap()
                .describe(),
            "kafka=kraft-m7g"
        );
        assert_eq!(
            Baseline::resolve(&axes(), &recorded, &[])
                .unwrap()
                .describe(),
            "job=update-25k"
        );
        assert_eq!(
            Baseline::resolve(&axes(), &BTreeMap::new(), &[])
                .unwrap()
                .describe(),
            "kafka=zookeeper-m5"
        );
    }

    #[test]
    fn unknown_axes_and_variants_are_named_with_the_choices() {
        let error = |pair: &str| {
            Baseline::resolve(
                &axes(),
                &BTreeMap::new(),
                &[Baseline::parse_pair(pair).unwrap()],
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            error("broker=m5"),
            "baseline names axis `broker`, which the run does not have (its axes: kafka, job)"
        );
        assert_eq!(
            error("kafka=kraft"),
            "baseline `kafka=kraft`: axis `kafka` has no variant `kraft` \
             (its variants: zookeeper-m5, kraft-m7g)"
        );
        assert_eq!(
            Baseline::parse_pair("kafka").unwrap_err().to_string(),
            "baseline `kafka` is not `axis=variant`"
        );
    }

    #[test]
    fn the_counterpart_keeps_the_other_axes() {
        let baseline = Baseline(BTreeMap::from([(
            "kafka".to_owned(),
            "zookeeper-m5".to_owned(),
        )]));
        let point = BTreeMap::from([
            ("kafka".to_owned(), "kraft-m7g".to_owned()),
            ("job".to_owned(), "update-25k".to_owned()),
        ]);
        let counterpart = baseline.counterpart(&point);
        assert_eq!(counterpart["kafka"], "zookeeper-m5");
        assert_eq!(counterpart["job"], "update-25k");
    }
}
