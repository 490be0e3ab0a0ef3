//! The comparison report's content, independent of its format: for each group of variants
//! that differ only in the baseline axes, every figure per variant (mean ± sd over the
//! repeats) and its delta against the baseline variant, tested with Welch's t-test; the
//! effective configuration where it differed; memory trends; the ramp limit.
//!
//! `report compare` reuses the same machinery by adding an axis, `run`, whose variants are
//! the two runs, with the first run as the baseline.
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use crate::report::jtl::Convention;
use crate::report::run::baseline::{Baseline, BaselineError};
use crate::report::run::figure::{FigureKey, Provenance, Section};
use crate::report::run::memory_trend::MemoryTrend;
use crate::report::run::point_measurement::PointMeasurement;
use crate::report::run::stats::{Significance, Summary, mann_whitney_u_test, welch_t_test};
use crate::results::{AxisRecord, RunDir, Status};

/// The axis `report compare` adds; another name is used if the runs already have a `run`.
const COMPARE_AXIS: &str = "run";

#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    #[error("the runs have different axes ({a} vs {b}), so their points do not correspond")]
    DifferentAxes { a: String, b: String },
}

/// One run the report reads.
#[derive(Debug, Clone, Serialize)]
pub struct RunSource {
    /// In `report compare`: `A` or `B`, the short name its columns and points carry.
    pub label: Option<String>,
    pub run_id: String,
    pub path: String,
    pub playbook: String,
    pub env: String,
    /// `sandbox` or `aws`.
    pub target: String,
    pub status: Status,
    pub started_at: f64,
    pub finished_at: Option<f64>,
    pub synthetic_metrics: bool,
    /// Points with results / points in the run.
    pub points_measured: usize,
    pub points_planned: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AxisValue {
    pub axis: String,
    pub variant: String,
}

/// One combination of axis variants, with its repeats.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    /// `kafka=kraft-m7g, job=create-25k`.
    pub name: String,
    /// In the run's axis order.
    pub axes: Vec<AxisValue>,
    pub points: Vec<PointOutcome>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PointOutcome {
    pub id: String,
    pub repeat: u32,
    pub status: Status,
    pub failure: Option<String>,
    /// Why its figures are not those of a whole, passing workload (`failed: engines lost in
    /// step smoke (...)`): marked on them wherever they appear.
    pub shortfall: Option<String>,
    /// The point's metrics could not be read (why); its other figures are reported.
    pub metrics_missing: Option<String>,
    /// Seconds since the epoch.
    pub workload_start: f64,
    pub workload_s: f64,
    /// Whether `workload_start` and `workload_s` are on the sandbox's simulated clock (a
    /// `--sandbox` point): human formats label them, so a compared AWS run's real figures
    /// beside them are never read as the same clock. JSON has the run's `target`.
    #[serde(skip)]
    pub simulated: bool,
    /// Per `load:` step: its engines and their start skew (absent without `load:` steps).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub load_engines: Vec<String>,
}

/// A point listed in `run.json` whose directory has no `point.json`.
#[derive(Debug, Clone, Serialize)]
pub struct PointNotMeasured {
    pub id: String,
    pub status: Status,
}

/// Variants that differ only in the baseline axes: the columns of one set of tables.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// `job=create-25k`, or `all points` when every axis is a baseline axis.
    pub title: String,
    pub fixed: Vec<AxisValue>,
    /// Indices into [`RunSummary::variants`]; the baseline variant first when it ran.
    pub variants: Vec<usize>,
    /// Column titles: the variants' values on the baseline axes (`kraft-m7g`).
    pub columns: Vec<String>,
    /// Whether `variants[0]` is the baseline; without it there are no deltas.
    pub has_baseline: bool,
    pub figures: Vec<FigureRow>,
    /// Only the configuration paths whose values differ between the variants.
    pub configuration: Vec<ConfigurationRow>,
    /// The same rows with one change shared by several services as one row, as the
    /// plan shows it ("environment.KAFKA_HOST on 26 services").
    pub configuration_groups: Vec<ConfigurationGroup>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FigureRow {
    pub key: FigureKey,
    /// Where the figure comes from; when its points disagree (`report compare` of a
    /// sandbox run with an AWS run), the synthetic one.
    pub source: Provenance,
    /// `source` is synthetic: the row is labelled so and never a finding.
    pub synthetic: bool,
    /// One per group variant, in the group's order.
    pub cells: Vec<FigureCell>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FigureCell {
    /// Where this variant's values come from; `None` when it has none.
    pub source: Option<Provenance>,
    /// The points measured, one value each.
    pub points: Vec<String>,
    pub values: Vec<f64>,
    /// `None` when no point of the variant has this figure.
    pub summary: Option<Summary>,
    /// Against the group's baseline variant; `None` for the baseline itself.
    pub delta: Option<Delta>,
    /// The points among `points` that did not pass, and why (`users=u3: failed: engines
    /// lost in step smoke (...)`): these figures are of a partial workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Delta {
    /// `mean - baseline mean`, in the figure's unit.
    pub absolute: f64,
    /// The instrument's resolution in the figure's unit (see [`FigureKey::resolution`]).
    pub resolution: Option<f64>,
    /// False when `absolute` is smaller than `resolution`: "no measurable change", never
    /// a finding, whatever the percentage.
    pub measurable: bool,
    /// Relative to the baseline mean; `None` when that is zero.
    pub percent: Option<f64>,
    pub significance: Significance,
    /// This variant or the baseline has a point that did not pass: the delta compares a
    /// partial workload, is marked so, and is never a finding.
    pub partial: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigurationRow {
    /// `services.mod-inventory-b.environment.KAFKA_HOST`.
    pub path: String,
    /// One per group variant (from its first repeat); `None` where the path is absent.
    pub values: Vec<Option<String>>,
}

/// Configuration rows that make one change on several services, folded into one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigurationGroup {
    /// The path below the service (`environment.KAFKA_HOST`), or the whole path for a
    /// row that is not per service (`kafka.main.broker_type`).
    pub field: String,
    /// The services that share the change, sorted; empty for a row not per service.
    pub services: Vec<String>,
    /// One per group variant, as in [`ConfigurationRow::values`].
    pub values: Vec<Option<String>>,
}

/// A variant whose effective configuration was not the same in all its repeats: the
/// repeats then measured different environments and are not comparable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigurationDrift {
    /// Index into [`RunSummary::variants`].
    pub variant: usize,
    /// The variant's first repeat, which the configuration tables show.
    pub first_point: String,
    /// A later repeat that differs from it.
    pub point: String,
    /// `{path, values: [first repeat's, this repeat's]}`.
    pub differences: Vec<ConfigurationRow>,
}

/// The limit a ramp found for one combination of the other axes.
#[derive(Debug, Clone, Serialize)]
pub struct RampLimit {
    pub run_id: String,
    pub axis: String,
    /// The other axes' variants (`log_level=info`), empty when the ramp is the only axis.
    pub other_axes: String,
    /// The last variant that passed, in declared order.
    pub last_passing: Option<String>,
    /// The variant after it, if it ran and did not pass.
    pub first_failing: Option<String>,
    pub failure: Option<String>,
}

/// Chart data: one metric of one resource, one line per point of the group.
#[derive(Debug, Clone)]
pub struct GroupTimeline {
    pub group: usize,
    pub section: Section,
    pub subject: String,
    pub metric: String,
    pub unit: String,
    pub lines: Vec<TimelineLine>,
}

/// One point's line in a group chart.
#[derive(Debug, Clone)]
pub struct TimelineLine {
    /// `kraft-m7g #2`.
    pub name: String,
    /// The variant's position among the group's columns, so its repeats share a colour.
    pub column: usize,
    pub repeat: u32,
    pub points: Vec<(f64, f64)>,
    /// Minutes from the workload's start to its end (the start is 0).
    pub workload_end_min: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub title: String,
    pub description: Option<String>,
    pub runs: Vec<RunSource>,
    /// True when any metric came from the sandbox: every such figure is synthetic.
    pub synthetic_metrics: bool,
    /// Every source the report's figures come from, measured ones first; each figure row
    /// names its own (`groups[].figures[].source`).
    pub sources: Vec<Provenance>,
    pub axes: Vec<AxisRecord>,
    pub baseline: Baseline,
    /// Most repeats of any variant; 1 means no estimate of noise.
    pub max_repeats: usize,
    pub variants: Vec<Variant>,
    /// Points of the runs without results (pending, skipped after a failure or by the
    /// ramp, interrupted before they started), in run order.
    pub points_not_measured: Vec<PointNotMeasured>,
    pub groups: Vec<Group>,
    pub memory_trends: Vec<MemoryTrend>,
    pub ramp_limits: Vec<RampLimit>,
    /// Variants whose configuration changed between repeats.
    pub configuration_drift: Vec<ConfigurationDrift>,
    /// The JMeter rules the transaction figures follow.
    pub convention: Convention,
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub timelines: Vec<GroupTimeline>,
}

fn source_of(dir: &RunDir) -> RunSource {
    let run = &dir.run;
    RunSource {
        label: None,
        run_id: run.run_id.clone(),
        path: dir.path.display().to_string(),
        playbook: run.playbook.name.clone(),
        env: run.env.name.clone(),
        target: run.target.clone(),
        status: run.status.clone(),
        started_at: run.started_at,
        finished_at: run.finished_at,
        synthetic_metrics: run.synthetic_metrics,
        points_measured: dir.points.len(),
        points_planned: run.points.len(),
    }
}

fn measure_all(dir: &RunDir, convention: Convention) -> Vec<PointMeasurement> {
    dir.points
        .iter()
        .map(|(record, effective, metrics)| {
            let point_dir = dir
                .run
                .points
                .iter()
                .find(|p| p.id == record.id)
                .map(|p| dir.path.join(&p.dir))
                .unwrap_or_else(|| dir.path.join("points").join(&record.id));
            let mut measurement = PointMeasurement::measure(
                &point_dir,
                record,
                effective,
                metrics.as_ref(),
                convention,
                dir.run.target == "sandbox",
            );
            if let Some(unreadable) = dir.unreadable.iter().find(|u| u.point == record.id) {
                measurement.warnings.push(format!(
                    "point {}: metrics left out, the other points are reported: {}",
                    record.id, unreadable.error
                ));
                measurement.metrics_missing = Some(unreadable.error.clone());
            }
            measurement
        })
        .collect()
}

fn not_measured(dir: &RunDir, prefix: &str) -> Vec<PointNotMeasured> {
    dir.run
        .points
        .iter()
        .filter(|p| !dir.points.iter().any(|(record, _, _)| record.id == p.id))
        .map(|p| PointNotMeasured {
            id: format!("{prefix}{}", p.id),
            status: p.status.clone(),
        })
        .collect()
}

/// A ramp limit as `run.json` records it, before the report finds the failure after it.
struct RampInput {
    run_id: String,
    axis: String,
    /// `log_level=info`, or empty.
    other_axes: String,
    /// Axis values the failing point must also have: in `compare`, its run.
    scope: Vec<(String, String)>,
    last_passing: Option<String>,
}

fn ramp_inputs(dir: &RunDir, scope: &[(String, String)]) -> Vec<RampInput> {
    dir.run
        .ramp
        .iter()
        .flat_map(|ramp| {
            ramp.limits.iter().map(|(others, last)| RampInput {
                run_id: dir.run.run_id.clone(),
                axis: ramp.axis.clone(),
                other_axes: others.clone(),
                scope: scope.to_vec(),
                last_passing: last.clone(),
            })
        })
        .collect()
}

impl RunSummary {
    /// The report of one run. `requested` baseline pairs replace the run's own.
    pub fn of_run(
        dir: &RunDir,
        requested: &[(String, String)],
        convention: Convention,
    ) -> Result<Self, SummaryError> {
        let baseline = Baseline::resolve(&dir.run.axes, &dir.run.baseline, requested)?;
        let title = dir
            .run
            .title
            .clone()
            .unwrap_or_else(|| dir.run.playbook.name.clone());
        let mut summary = Self::build(
            title,
            dir.run.description.clone(),
            vec![source_of(dir)],
            dir.run.axes.clone(),
            baseline,
            measure_all(dir, convention),
            ramp_inputs(dir, &[]),
        );
        summary.convention = convention;
        summary.points_not_measured = not_measured(dir, "");
        if dir.points.is_empty() {
            summary.warnings.push(format!(
                "no point of run {} has results yet",
                dir.run.run_id
            ));
        }
        Ok(summary)
    }

    /// The same points in two runs (say two releases), side by side: run `a` is the
    /// baseline unless `requested` says otherwise.
    pub fn compare(
        a: &RunDir,
        b: &RunDir,
        requested: &[(String, String)],
        convention: Convention,
    ) -> Result<Self, SummaryError> {
        let names = |dir: &RunDir| {
            dir.run
                .axes
                .iter()
                .map(|axis| axis.name.clone())
                .collect::<Vec<_>>()
        };
        if names(a) != names(b) {
            return Err(SummaryError::DifferentAxes {
                a: names(a).join(", "),
                b: names(b).join(", "),
            });
        }
        let axis_name = if names(a).iter().any(|name| name == COMPARE_AXIS) {
            format!("compared_{COMPARE_AXIS}")
        } else {
            COMPARE_AXIS.to_owned()
        };
        // Columns, point ids and chart legends carry the short names; the overview says
        // which run each is (a run id in every column header made tables unreadable).
        let (name_a, name_b) = ("A".to_owned(), "B".to_owned());
        let mut axes = vec![AxisRecord {
            name: axis_name.clone(),
            variants: vec![name_a.clone(), name_b.clone()],
        }];
        for (axis_a, axis_b) in a.run.axes.iter().zip(&b.run.axes) {
            let mut variants = axis_a.variants.clone();
            for variant in &axis_b.variants {
                if !variants.contains(variant) {
                    variants.push(variant.clone());
                }
            }
            axes.push(AxisRecord {
                name: axis_a.name.clone(),
                variants,
            });
        }
        let recorded = BTreeMap::from([(axis_name.clone(), name_a.clone())]);
        let baseline = Baseline::resolve(&axes, &recorded, requested)?;
        let mut measurements = Vec::new();
        for (dir, name) in [(a, &name_a), (b, &name_b)] {
            for mut measurement in measure_all(dir, convention) {
                measurement.axes.insert(axis_name.clone(), name.clone());
                measurement.id = format!("{name}/{}", measurement.id);
                measurements.push(measurement);
            }
        }
        // Two runs of one playbook (the usual case: two releases) share a title, which
        // "X vs X" would only repeat.
        let (id_a, id_b) = (&a.run.run_id, &b.run.run_id);
        let title = match (&a.run.title, &b.run.title) {
            (Some(title_a), Some(title_b)) if title_a == title_b => {
                format!("{title_a}: {id_a} vs {id_b}")
            }
            (title_a, title_b) => format!(
                "{} vs {}",
                title_a.as_deref().unwrap_or(id_a),
                title_b.as_deref().unwrap_or(id_b)
            ),
        };
        let mut ramps = ramp_inputs(a, &[(axis_name.clone(), name_a.clone())]);
        ramps.extend(ramp_inputs(b, &[(axis_name.clone(), name_b.clone())]));
        let labelled = |dir: &RunDir, label: &str| RunSource {
            label: Some(label.to_owned()),
            ..source_of(dir)
        };
        let mut summary = Self::build(
            title,
            None,
            vec![labelled(a, &name_a), labelled(b, &name_b)],
            axes,
            baseline,
            measurements,
            ramps,
        );
        summary.convention = convention;
        summary.points_not_measured = not_measured(a, &format!("{name_a}/"));
        summary
            .points_not_measured
            .extend(not_measured(b, &format!("{name_b}/")));
        Ok(summary)
    }

    fn build(
        title: String,
        description: Option<String>,
        runs: Vec<RunSource>,
        axes: Vec<AxisRecord>,
        baseline: Baseline,
        mut measurements: Vec<PointMeasurement>,
        ramps: Vec<RampInput>,
    ) -> Self {
        let (variants, members) = variants_of(&axes, &mut measurements);
        let mut warnings: Vec<String> = measurements
            .iter()
            .flat_map(|m| m.warnings.iter().cloned())
            .collect();
        let mut groups = groups_of(&axes, &baseline, &variants);
        let mut timelines = Vec::new();
        for (group_index, group) in groups.iter_mut().enumerate() {
            if !group.has_baseline && !baseline.0.is_empty() {
                warnings.push(format!(
                    "{}: the baseline variant ({}) has no results, so there are no deltas",
                    group.title,
                    baseline.describe()
                ));
            }
            let group_members: Vec<&[usize]> = group
                .variants
                .iter()
                .map(|&v| members[v].as_slice())
                .collect();
            group.figures = figure_rows(&measurements, &group_members, group.has_baseline);
            group.configuration = configuration_rows(&measurements, &group_members);
            group.configuration_groups = configuration_groups(&group.configuration);
            timelines.extend(group_timelines(
                group_index,
                &measurements,
                &group_members,
                &group.columns,
            ));
        }
        let mut memory_trends = Vec::new();
        for (variant_index, list) in members.iter().enumerate() {
            for &index in list {
                let m = &measurements[index];
                for (service, trend) in &m.memory_trends {
                    memory_trends.push(MemoryTrend {
                        point: m.id.clone(),
                        variant: variant_index,
                        service: service.clone(),
                        trend: *trend,
                        suspected_leak: trend.suspects_a_leak(),
                        synthetic: m.provenance(Section::Service).is_synthetic(),
                    });
                }
            }
        }
        let configuration_drift = configuration_drift(&measurements, &members);
        for drift in &configuration_drift {
            warnings.push(drift_warning(&variants[drift.variant].name, drift));
        }
        let ramp_limits = ramps
            .into_iter()
            .map(|input| ramp_limit(&axes, &variants, input))
            .collect();
        let synthetic_metrics = runs.iter().any(|r| r.synthetic_metrics)
            || measurements.iter().any(|m| m.synthetic_metrics);
        let mut sources: Vec<Provenance> = groups
            .iter()
            .flat_map(|group| group.figures.iter().map(|row| row.source))
            .collect();
        sources.sort();
        sources.dedup();
        Self {
            title,
            description,
            runs,
            synthetic_metrics,
            sources,
            axes,
            baseline,
            max_repeats: members.iter().map(Vec::len).max().unwrap_or(0),
            variants,
            points_not_measured: Vec::new(),
            groups,
            memory_trends,
            ramp_limits,
            configuration_drift,
            convention: Convention::default(),
            warnings,
            timelines,
        }
    }

    /// Reads `path` and summarizes it.
    pub fn read(
        path: &Path,
        requested: &[(String, String)],
        convention: Convention,
    ) -> Result<Self, SummaryError> {
        let dir = RunDir::read(path)?;
        Self::of_run(&dir, requested, convention)
    }
}

/// The position of each axis's variant in its declared order; unknown variants last.
fn declared_position(axes: &[AxisRecord], values: &BTreeMap<String, String>) -> Vec<usize> {
    axes.iter()
        .map(|axis| {
            values
                .get(&axis.name)
                .and_then(|v| axis.variants.iter().position(|x| x == v))
                .unwrap_or(usize::MAX)
        })
        .collect()
}

/// Sorts the measurements into declared order (then by repeat) and cuts them into
/// variants; returns the variants and, per variant, the indices of its measurements.
fn variants_of(
    axes: &[AxisRecord],
    measurements: &mut [PointMeasurement],
) -> (Vec<Variant>, Vec<Vec<usize>>) {
    measurements.sort_by_key(|m| (declared_position(axes, &m.axes), m.repeat));
    let mut variants: Vec<Variant> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (index, m) in measurements.iter().enumerate() {
        let values: Vec<AxisValue> = axes
            .iter()
            .filter_map(|axis| {
                m.axes.get(&axis.name).map(|variant| AxisValue {
                    axis: axis.name.clone(),
                    variant: variant.clone(),
                })
            })
            .collect();
        let outcome = PointOutcome {
            id: m.id.clone(),
            repeat: m.repeat,
            status: m.status.clone(),
            failure: m.failure.clone(),
            shortfall: m.shortfall.clone(),
            metrics_missing: m.metrics_missing.clone(),
            workload_start: m.window.0,
            workload_s: m.window.1 - m.window.0,
            simulated: m.sandbox,
            load_engines: m.load_engines.clone(),
        };
        match (variants.last_mut(), members.last_mut()) {
            (Some(last), Some(list)) if last.axes == values => {
                last.points.push(outcome);
                list.push(index);
            }
            _ => {
                variants.push(Variant {
                    name: describe(&values),
                    axes: values,
                    points: vec![outcome],
                });
                members.push(vec![index]);
            }
        }
    }
    (variants, members)
}

/// `kafka=kraft-m7g, job=create-25k`.
fn describe(values: &[AxisValue]) -> String {
    values
        .iter()
        .map(|v| format!("{}={}", v.axis, v.variant))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Variants that share their values on the non-baseline axes form a group, in the
/// declared order of those values (job=create-25k before job=update-25k, whichever ran
/// first); inside a group the baseline variant comes first. Figures are filled in later.
fn groups_of(axes: &[AxisRecord], baseline: &Baseline, variants: &[Variant]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (variant_index, variant) in variants.iter().enumerate() {
        let fixed: Vec<AxisValue> = variant
            .axes
            .iter()
            .filter(|v| !baseline.contains_axis(&v.axis))
            .cloned()
            .collect();
        match groups.iter_mut().find(|g| g.fixed == fixed) {
            Some(group) => group.variants.push(variant_index),
            None => groups.push(Group {
                title: if fixed.is_empty() {
                    "all points".to_owned()
                } else {
                    describe(&fixed)
                },
                fixed,
                variants: vec![variant_index],
                columns: Vec::new(),
                has_baseline: false,
                figures: Vec::new(),
                configuration: Vec::new(),
                configuration_groups: Vec::new(),
            }),
        }
    }
    groups.sort_by_key(|group| {
        let values = group
            .fixed
            .iter()
            .map(|v| (v.axis.clone(), v.variant.clone()))
            .collect();
        declared_position(
            &axes
                .iter()
                .filter(|a| !baseline.contains_axis(&a.name))
                .cloned()
                .collect::<Vec<_>>(),
            &values,
        )
    });
    let is_baseline = |v: &Variant| {
        baseline.0.iter().all(|(axis, variant)| {
            v.axes
                .iter()
                .any(|value| &value.axis == axis && &value.variant == variant)
        })
    };
    for group in &mut groups {
        if let Some(at) = group
            .variants
            .iter()
            .position(|&v| is_baseline(&variants[v]))
        {
            let base = group.variants.remove(at);
            group.variants.insert(0, base);
            group.has_baseline = true;
        }
        group.columns = group
            .variants
            .iter()
            .map(|&v| {
                let compared: Vec<&str> = variants[v]
                    .axes
                    .iter()
                    .filter(|value| baseline.contains_axis(&value.axis))
                    .map(|value| value.variant.as_str())
                    .collect();
                if compared.is_empty() {
                    "result".to_owned()
                } else {
                    compared.join(" / ")
                }
            })
            .collect();
    }
    groups
}

/// Keys in first-seen order across the group's points, then by section.
fn figure_rows(
    measurements: &[PointMeasurement],
    members: &[&[usize]],
    has_baseline: bool,
) -> Vec<FigureRow> {
    let mut keys: Vec<FigureKey> = Vec::new();
    let mut lookup: Vec<HashMap<&FigureKey, f64>> = Vec::with_capacity(measurements.len());
    for m in measurements {
        lookup.push(m.figures.iter().map(|(k, v)| (k, *v)).collect());
    }
    for list in members {
        for &index in *list {
            for (key, _) in &measurements[index].figures {
                if !keys.contains(key) {
                    keys.push(key.clone());
                }
            }
        }
    }
    keys.sort_by_key(|key| key.section);
    keys.into_iter()
        .map(|key| {
            let mut cells: Vec<FigureCell> = members
                .iter()
                .map(|list| {
                    let measured: Vec<usize> = list
                        .iter()
                        .copied()
                        .filter(|&index| lookup[index].contains_key(&key))
                        .collect();
                    let (points, values): (Vec<String>, Vec<f64>) = measured
                        .iter()
                        .filter_map(|&index| {
                            lookup[index]
                                .get(&key)
                                .map(|value| (measurements[index].id.clone(), *value))
                        })
                        .unzip();
                    let shortfalls: Vec<String> = measured
                        .iter()
                        .filter_map(|&index| {
                            let m = &measurements[index];
                            m.shortfall.as_ref().map(|why| format!("{}: {why}", m.id))
                        })
                        .collect();
                    FigureCell {
                        source: measured
                            .iter()
                            .map(|&index| measurements[index].provenance(key.section))
                            .max(),
                        summary: Summary::of(&values).ok(),
                        points,
                        values,
                        delta: None,
                        shortfall: (!shortfalls.is_empty()).then(|| shortfalls.join("; ")),
                    }
                })
                .collect();
            if has_baseline && let Some((base, others)) = cells.split_first_mut() {
                for cell in others {
                    cell.delta = delta(&key, base, cell);
                }
            }
            // Provenance orders measured sources before synthetic ones, so the maximum is
            // the synthetic one when the points disagree.
            let source = cells
                .iter()
                .filter_map(|cell| cell.source)
                .max()
                .unwrap_or(Provenance::of(key.section, false, false));
            FigureRow {
                key,
                source,
                synthetic: source.is_synthetic(),
                cells,
            }
        })
        .collect()
}

/// Percentiles are compared with a rank test, everything else with Welch's t-test (see
/// `stats` and docs/reports.md for why).
fn delta(key: &FigureKey, base: &FigureCell, cell: &FigureCell) -> Option<Delta> {
    let (b, c) = (base.summary?, cell.summary?);
    let absolute = c.mean - b.mean;
    let resolution = key.resolution();
    // A relative tolerance, so that 0.001 s computed as 0.000999... still counts.
    let measurable = resolution.is_none_or(|step| absolute.abs() >= step * (1.0 - 1e-9));
    let test = if key.is_percentile() {
        mann_whitney_u_test
    } else {
        welch_t_test
    };
    Some(Delta {
        absolute,
        resolution,
        measurable,
        percent: (b.mean != 0.0).then(|| absolute / b.mean.abs() * 100.0),
        significance: test(&base.values, &cell.values).ok()?,
        partial: base.shortfall.is_some() || cell.shortfall.is_some(),
    })
}

/// Rows `services.<name>.<field>` with equal field and values become one group per
/// change; other rows stay on their own. Groups keep the rows' (sorted) order.
fn configuration_groups(rows: &[ConfigurationRow]) -> Vec<ConfigurationGroup> {
    let mut groups: Vec<ConfigurationGroup> = Vec::new();
    for row in rows {
        // ECS service names cannot contain dots, so the first segment after `services.`
        // is the whole name.
        let per_service = row
            .path
            .strip_prefix("services.")
            .and_then(|rest| rest.split_once('.'));
        let Some((service, field)) = per_service else {
            groups.push(ConfigurationGroup {
                field: row.path.clone(),
                services: Vec::new(),
                values: row.values.clone(),
            });
            continue;
        };
        match groups
            .iter_mut()
            .find(|g| !g.services.is_empty() && g.field == field && g.values == row.values)
        {
            Some(group) => group.services.push(service.to_owned()),
            None => groups.push(ConfigurationGroup {
                field: field.to_owned(),
                services: vec![service.to_owned()],
                values: row.values.clone(),
            }),
        }
    }
    groups
}

/// Every later repeat of a variant compared with its first.
fn configuration_drift(
    measurements: &[PointMeasurement],
    members: &[Vec<usize>],
) -> Vec<ConfigurationDrift> {
    let mut drift = Vec::new();
    for (variant, list) in members.iter().enumerate() {
        let Some((&first, later)) = list.split_first() else {
            continue;
        };
        for &index in later {
            let rows = configuration_rows(measurements, &[&[first], &[index]]);
            if !rows.is_empty() {
                drift.push(ConfigurationDrift {
                    variant,
                    first_point: measurements[first].id.clone(),
                    point: measurements[index].id.clone(),
                    differences: rows,
                });
            }
        }
    }
    drift
}

/// How many differing paths a warning names before "and N more".
const DRIFT_PATHS_SHOWN: usize = 3;

fn drift_warning(variant: &str, drift: &ConfigurationDrift) -> String {
    let shown: Vec<String> = drift
        .differences
        .iter()
        .take(DRIFT_PATHS_SHOWN)
        .map(|row| {
            let value = |v: Option<&Option<String>>| {
                v.and_then(Option::as_deref)
                    .unwrap_or("(absent)")
                    .to_owned()
            };
            format!(
                "{}: {} -> {}",
                row.path,
                value(row.values.first()),
                value(row.values.get(1))
            )
        })
        .collect();
    let more = drift.differences.len().saturating_sub(DRIFT_PATHS_SHOWN);
    let more = if more > 0 {
        format!(", and {more} more")
    } else {
        String::new()
    };
    format!(
        "{variant}: the effective configuration changed between repeats ({} vs {}: {}{more}), \
         so its repeats measured different environments and are not comparable",
        drift.first_point,
        drift.point,
        shown.join("; ")
    )
}

fn configuration_rows(
    measurements: &[PointMeasurement],
    members: &[&[usize]],
) -> Vec<ConfigurationRow> {
    let firsts: Vec<Option<&BTreeMap<String, String>>> = members
        .iter()
        .map(|list| list.first().map(|&i| &measurements[i].configuration))
        .collect();
    let mut paths: Vec<&String> = firsts.iter().flatten().flat_map(|c| c.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|path| {
            let values: Vec<Option<String>> = firsts
                .iter()
                .map(|c| c.and_then(|c| c.get(path)).cloned())
                .collect();
            values
                .iter()
                .any(|v| v != &values[0])
                .then(|| ConfigurationRow {
                    path: path.clone(),
                    values,
                })
        })
        .collect()
}

fn group_timelines(
    group: usize,
    measurements: &[PointMeasurement],
    members: &[&[usize]],
    columns: &[String],
) -> Vec<GroupTimeline> {
    let mut out: Vec<GroupTimeline> = Vec::new();
    for (position, (list, column)) in members.iter().zip(columns).enumerate() {
        for &index in *list {
            let m = &measurements[index];
            let mut line_name = if list.len() > 1 {
                format!("{column} #{}", m.repeat)
            } else {
                column.clone()
            };
            // A line of a point that did not pass says how it ended, in the legend.
            if let Some(why) = &m.shortfall {
                line_name.push_str(&format!(" ({})", why.split(':').next().unwrap_or(why)));
            }
            for timeline in &m.timelines {
                let existing = out.iter_mut().find(|t| {
                    t.section == timeline.section
                        && t.subject == timeline.subject
                        && t.metric == timeline.metric
                });
                let target = match existing {
                    Some(target) => target,
                    None => {
                        out.push(GroupTimeline {
                            group,
                            section: timeline.section,
                            subject: timeline.subject.clone(),
                            metric: timeline.metric.clone(),
                            unit: timeline.unit.clone(),
                            lines: Vec::new(),
                        });
                        let last = out.len() - 1;
                        &mut out[last]
                    }
                };
                target.lines.push(TimelineLine {
                    name: line_name.clone(),
                    column: position,
                    repeat: m.repeat,
                    points: timeline.points.clone(),
                    workload_end_min: (m.window.1 - m.window.0) / 60.0,
                });
            }
        }
    }
    out
}

/// The first variant after the last passing one that ran and did not pass, among the
/// points with the same other axes (and, in `compare`, the same run).
fn ramp_limit(axes: &[AxisRecord], variants: &[Variant], input: RampInput) -> RampLimit {
    let mut pairs: Vec<(String, String)> = input
        .other_axes
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(a, v)| (a.trim().to_owned(), v.trim().to_owned()))
        .collect();
    pairs.extend(input.scope.iter().cloned());
    let declared = axes
        .iter()
        .find(|a| a.name == input.axis)
        .map(|a| a.variants.as_slice())
        .unwrap_or_default();
    let next = match &input.last_passing {
        Some(last) => declared
            .iter()
            .position(|v| v == last)
            .and_then(|at| declared.get(at + 1)),
        None => declared.first(),
    };
    let has = |variant: &Variant, axis: &str, value: &str| {
        variant
            .axes
            .iter()
            .any(|v| v.axis == axis && v.variant == value)
    };
    let failing = next.and_then(|next| {
        variants.iter().find(|variant| {
            has(variant, &input.axis, next)
                && pairs.iter().all(|(axis, value)| has(variant, axis, value))
                && variant.points.iter().any(|p| p.status != Status::Passed)
        })
    });
    RampLimit {
        run_id: input.run_id,
        axis: input.axis,
        other_axes: input.other_axes,
        last_passing: input.last_passing,
        first_failing: next.filter(|_| failing.is_some()).cloned(),
        failure: failing.and_then(|v| v.points.iter().find_map(|p| p.failure.clone())),
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

    /// A point with one figure, `okapi-b CPU Average = cpu`.
    fn point(kafka: &str, job: &str, repeat: u32, cpu: f64) -> PointMeasurement {
        PointMeasurement {
            id: format!("kafka={kafka},job={job}#{repeat}"),
            axes: BTreeMap::from([
                ("kafka".to_owned(), kafka.to_owned()),
                ("job".to_owned(), job.to_owned()),
            ]),
            repeat,
            status: Status::Passed,
            failure: None,
            shortfall: None,
            window: (0.0, 900.0),
            figures: vec![(
                FigureKey {
                    section: Section::Service,
                    subject: "okapi-b".into(),
                    metric: "CPU".into(),
                    statistic: "Average".into(),
                    unit: "%".into(),
                },
                cpu,
            )],
            memory_trends: Vec::new(),
            configuration: BTreeMap::from([("kafka.main.broker_type".to_owned(), kafka.into())]),
            timelines: Vec::new(),
            synthetic_metrics: false,
            sandbox: false,
            warnings: Vec::new(),
            metrics_missing: None,
            load_engines: Vec::new(),
        }
    }

    fn summary(baseline: &[(&str, &str)], points: Vec<PointMeasurement>) -> RunSummary {
        let baseline = Baseline(
            baseline
                .iter()
                .map(|(a, v)| (a.to_string(), v.to_string()))
                .collect(),
        );
        RunSummary::build(
            "t".into(),
            None,
            Vec::new(),
            axes(),
            baseline,
            points,
            Vec::new(),
        )
    }

    #[test]
    fn points_in_any_order_become_variants_in_declared_order() {
        let s = summary(
            &[("kafka", "zookeeper-m5")],
            vec![
                point("kraft-m7g", "update-25k", 1, 4.0),
                point("zookeeper-m5", "create-25k", 2, 2.0),
                point("zookeeper-m5", "update-25k", 1, 3.0),
                point("zookeeper-m5", "create-25k", 1, 1.0),
            ],
        );
        let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "kafka=zookeeper-m5, job=create-25k",
                "kafka=zookeeper-m5, job=update-25k",
                "kafka=kraft-m7g, job=update-25k"
            ]
        );
        assert_eq!(s.variants[0].points.len(), 2);
        assert_eq!(s.max_repeats, 2);
        let titles: Vec<&str> = s.groups.iter().map(|g| g.title.as_str()).collect();
        assert_eq!(titles, ["job=create-25k", "job=update-25k"]);
        let update = &s.groups[1];
        assert_eq!(update.columns, ["zookeeper-m5", "kraft-m7g"]);
        let delta = update.figures[0].cells[1].delta.as_ref().unwrap();
        assert_eq!(delta.absolute, 1.0);
        assert_eq!(delta.significance, Significance::NoEstimateOfNoise);
        assert_eq!(update.configuration.len(), 1);
        assert!(s.groups[0].configuration.is_empty(), "one variant only");
    }

    #[test]
    fn a_baseline_on_two_axes_puts_every_variant_in_one_group_baseline_first() {
        let s = summary(
            &[("kafka", "kraft-m7g"), ("job", "update-25k")],
            vec![
                point("zookeeper-m5", "create-25k", 1, 1.0),
                point("kraft-m7g", "update-25k", 1, 4.0),
                point("kraft-m7g", "create-25k", 1, 2.0),
            ],
        );
        assert_eq!(s.groups.len(), 1);
        let group = &s.groups[0];
        assert_eq!(group.title, "all points");
        assert!(group.has_baseline);
        assert_eq!(
            group.columns,
            [
                "kraft-m7g / update-25k",
                "zookeeper-m5 / create-25k",
                "kraft-m7g / create-25k"
            ]
        );
        let deltas: Vec<f64> = group.figures[0].cells[1..]
            .iter()
            .map(|c| c.delta.as_ref().unwrap().absolute)
            .collect();
        assert_eq!(deltas, [-3.0, -2.0]);
    }

    #[test]
    fn a_group_without_its_baseline_has_no_deltas_and_says_why() {
        let s = summary(
            &[("kafka", "zookeeper-m5")],
            vec![
                point("kraft-m7g", "create-25k", 1, 2.0),
                point("zookeeper-m5", "update-25k", 1, 3.0),
            ],
        );
        let create = &s.groups[0];
        assert_eq!(create.title, "job=create-25k");
        assert!(!create.has_baseline);
        assert!(create.figures[0].cells[0].delta.is_none());
        assert_eq!(
            s.warnings,
            [
                "job=create-25k: the baseline variant (kafka=zookeeper-m5) has no results, so \
              there are no deltas"
            ]
        );
    }

    /// The "Export response time average -100.0%": 0.065 ms -> 0 ms on JMeter's
    /// 1 ms clock is below the resolution, so it is no measurable change and no finding,
    /// while a 2 ms change of another label is both.
    #[test]
    fn a_change_below_the_resolution_is_no_measurable_change_and_no_finding() {
        let response = |kafka: &str, label: &str, seconds: f64| {
            let mut p = point(kafka, "create-25k", 1, 10.0);
            p.figures = vec![(
                FigureKey {
                    section: Section::Transaction,
                    subject: label.into(),
                    metric: "Response time".into(),
                    statistic: "Average".into(),
                    unit: "s".into(),
                },
                seconds,
            )];
            p
        };
        let mut base = response("zookeeper-m5", "Export", 0.000_065);
        let mut other = response("kraft-m7g", "Export", 0.0);
        let check_in = |p: &PointMeasurement, seconds| {
            let mut key = p.figures[0].0.clone();
            key.subject = "Check-in".into();
            (key, seconds)
        };
        base.figures.push(check_in(&base, 0.100));
        other.figures.push(check_in(&other, 0.102));
        let s = summary(&[("kafka", "zookeeper-m5")], vec![base, other]);
        let group = &s.groups[0];
        let delta = |subject: &str| {
            group
                .figures
                .iter()
                .find(|row| row.key.subject == subject)
                .and_then(|row| row.cells[1].delta.clone())
                .unwrap()
        };
        let export = delta("Export");
        assert_eq!(export.percent, Some(-100.0));
        assert!(!export.measurable);
        assert_eq!(export.resolution, Some(0.001));
        assert!(delta("Check-in").measurable);
        let findings: Vec<String> = crate::report::run::report_findings::findings(&s)
            .into_iter()
            .map(|spans| spans.into_iter().map(|span| span.text).collect())
            .collect();
        let changes = findings
            .iter()
            .find(|text| text.contains("largest changes"))
            .unwrap();
        assert!(
            changes.contains("Check-in response time average +2.0%"),
            "{changes}"
        );
        assert!(!changes.contains("Export"), "{changes}");
    }

    /// The qcp1 Kafka switch: KAFKA_HOST changed the same way on 26 services is one row,
    /// a field whose value differs per service stays one row per service.
    #[test]
    fn configuration_rows_are_grouped_as_the_plan_groups_them() {
        let value = |text: &str| Some(text.to_owned());
        let mut rows = vec![ConfigurationRow {
            path: "kafka.main.broker_type".into(),
            values: vec![value("kafka.m5.2xlarge"), value("kafka.m7g.2xlarge")],
        }];
        for index in 0..26 {
            rows.push(ConfigurationRow {
                path: format!("services.mod-{index:02}.environment.KAFKA_HOST"),
                values: vec![value("b-1.ptf-mobius:9092"), value("b-1.ptf-KRaft:9092")],
            });
            rows.push(ConfigurationRow {
                path: format!("services.mod-{index:02}.task_definition"),
                values: vec![
                    value(&format!("mod-{index:02}:1")),
                    value(&format!("mod-{index:02}:2")),
                ],
            });
        }
        rows.sort_by(|a, b| a.path.cmp(&b.path));
        let groups = configuration_groups(&rows);
        assert_eq!(groups.len(), 1 + 1 + 26);
        assert_eq!(groups[0].field, "kafka.main.broker_type");
        assert!(groups[0].services.is_empty());
        let kafka_host: Vec<_> = groups
            .iter()
            .filter(|g| g.field == "environment.KAFKA_HOST")
            .collect();
        assert_eq!(kafka_host.len(), 1);
        assert_eq!(kafka_host[0].services.len(), 26);
        assert_eq!(kafka_host[0].services[0], "mod-00");
        assert_eq!(
            kafka_host[0].values,
            [value("b-1.ptf-mobius:9092"), value("b-1.ptf-KRaft:9092")]
        );
        assert_eq!(
            groups
                .iter()
                .filter(|g| g.field == "task_definition")
                .count(),
            26
        );
    }
}
