//! Expanding a playbook's matrix into points: the cartesian product of its axes, zipped
//! axes advancing together, excluded combinations removed, each point repeated.
use std::collections::BTreeMap;

use crate::spec::merge::SetOverride;
use crate::spec::playbook::{Axis, Playbook, Variant};

/// One run of the workload in one configuration.
#[derive(Debug, Clone)]
pub struct Point {
    /// `kafka=zookeeper-m5,job=create-25k` (with `#2` for the second repeat).
    pub id: String,
    /// Directory-safe form of the id.
    pub dir: String,
    /// (axis, variant) in declared axis order.
    pub axes: Vec<(String, String)>,
    pub repeat: u32,
    /// Environment overrides of all its variants, in axis order.
    pub sets: Vec<SetOverride>,
    pub vars: BTreeMap<String, String>,
    /// Points with equal keys need the same environment: switching between them is free.
    pub config_key: String,
}

impl Point {
    pub fn axis(&self, name: &str) -> Option<&str> {
        self.axes
            .iter()
            .find(|(a, _)| a == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A canonical text for a set of overrides (path = value, sorted).
fn config_key(sets: &[SetOverride]) -> String {
    let mut parts: Vec<String> = sets
        .iter()
        .map(|s| {
            format!(
                "{}={}",
                s.path,
                s.value
                    .scalar_text()
                    .unwrap_or_else(|| format!("{:?}", s.value.kind))
            )
        })
        .collect();
    parts.sort();
    parts.join(";")
}

/// The points of a playbook in declared order: axes vary like nested loops, the last axis
/// fastest; repeats of a point are consecutive.
pub fn expand(playbook: &Playbook) -> Vec<Point> {
    // Zipped axes form one dimension whose i-th value takes the i-th variant of each.
    let mut dims: Vec<Vec<Vec<(&Axis, &Variant)>>> = Vec::new();
    let mut zipped: Vec<&str> = Vec::new();
    for axis in &playbook.matrix {
        if zipped.contains(&axis.name.value.as_str()) {
            continue;
        }
        let group = playbook
            .zip
            .iter()
            .find(|g| g.iter().any(|a| a.value == axis.name.value));
        match group {
            Some(group) => {
                let axes: Vec<&Axis> = group
                    .iter()
                    .filter_map(|n| playbook.matrix.iter().find(|a| a.name.value == n.value))
                    .collect();
                zipped.extend(axes.iter().map(|a| a.name.value.as_str()));
                let len = axes.iter().map(|a| a.variants.len()).min().unwrap_or(0);
                dims.push(
                    (0..len)
                        .map(|i| axes.iter().map(|a| (*a, &a.variants[i])).collect())
                        .collect(),
                );
            }
            None => dims.push(axis.variants.iter().map(|v| vec![(axis, v)]).collect()),
        }
    }
    let mut combos: Vec<Vec<(&Axis, &Variant)>> = vec![Vec::new()];
    for dim in &dims {
        combos = combos
            .into_iter()
            .flat_map(|prefix| {
                dim.iter().map(move |choice| {
                    let mut next = prefix.clone();
                    next.extend(choice.iter().copied());
                    next
                })
            })
            .collect();
    }
    let order = |a: &Axis| {
        playbook
            .matrix
            .iter()
            .position(|x| x.name.value == a.name.value)
            .unwrap_or(usize::MAX)
    };
    let repeats = playbook.repeat.value.max(1);
    let mut points = Vec::new();
    for mut combo in combos {
        combo.sort_by_key(|(a, _)| order(a));
        let axes: Vec<(String, String)> = combo
            .iter()
            .map(|(a, v)| (a.name.value.clone(), v.name.value.clone()))
            .collect();
        let excluded = playbook.exclude.iter().any(|rule| {
            rule.0.iter().all(|(axis, variant)| {
                axes.iter()
                    .any(|(a, v)| a == &axis.value && v == &variant.value)
            })
        });
        if excluded {
            continue;
        }
        let sets: Vec<SetOverride> = combo
            .iter()
            .flat_map(|(_, v)| v.set.iter().cloned())
            .collect();
        let mut vars = BTreeMap::new();
        for (_, v) in &combo {
            for (k, val) in &v.vars {
                vars.insert(k.clone(), val.value.0.clone());
            }
        }
        let key = config_key(&sets);
        let base_id = axes
            .iter()
            .map(|(a, v)| format!("{a}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        for repeat in 1..=repeats {
            let id = if repeats > 1 {
                format!("{base_id}#{repeat}")
            } else {
                base_id.clone()
            };
            points.push(Point {
                id,
                dir: crate::results::point_dir_name(&axes, repeat, repeats),
                axes: axes.clone(),
                repeat,
                sets: sets.clone(),
                vars: vars.clone(),
                config_key: key.clone(),
            });
        }
    }
    points
}
