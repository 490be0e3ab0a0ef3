//! The report's *Summary*: what a reader should take away before the tables — the ramp
//! limit, the differences against the baseline that matter, the memory-leak statement and
//! the points that did not pass.
use crate::report::run::figure::{FigureKey, Section};
use crate::report::run::figure_format::{format_signed, without_negative_zero};
use crate::report::run::memory_trend::{MIN_R_SQUARED, MemoryTrend, SUSPICIOUS_SLOPE_PER_HOUR};
use crate::report::run::report_document::Span;
use crate::report::run::run_summary::{FigureRow, Group, RunSummary};
use crate::report::run::stats::Significance;

/// How many significant differences the summary lists per compared variant; the tables
/// have them all.
const SUMMARY_DIFFERENCES: usize = 5;
/// How many services the CPU peak sentence names; databases and brokers are few and all
/// named.
const SUMMARY_SERVICE_PEAKS: usize = 3;

pub(crate) fn findings(summary: &RunSummary) -> Vec<Vec<Span>> {
    let mut items = Vec::new();
    if let Some(item) = synthetic_statement(summary) {
        items.push(item);
    }
    for limit in &summary.ramp_limits {
        let scope = if limit.other_axes.is_empty() {
            String::new()
        } else {
            format!(" with {}", limit.other_axes)
        };
        let mut spans = vec![
            Span::plain(format!("Ramp over {}{scope}: limit ", limit.axis)),
            Span::strong(
                limit
                    .last_passing
                    .clone()
                    .unwrap_or_else(|| "none".to_owned()),
            ),
        ];
        let mut tail = match &limit.last_passing {
            Some(_) => " (the last variant that passed)".to_owned(),
            None => " (no variant passed)".to_owned(),
        };
        if let Some(failing) = &limit.first_failing {
            tail.push_str(&format!("; {failing} failed"));
            if let Some(failure) = &limit.failure {
                tail.push_str(&format!(": {failure}"));
            }
        }
        tail.push('.');
        spans.push(Span::plain(tail));
        items.push(spans);
    }
    for group in &summary.groups {
        items.extend(differences(summary, group));
    }
    items.extend(cpu_peaks(summary));
    items.push(memory_finding(summary));
    let failed: Vec<String> = summary
        .variants
        .iter()
        .flat_map(|v| v.points.iter())
        .filter(|p| p.status != crate::results::Status::Passed)
        .map(|p| match &p.shortfall {
            Some(why) => format!("{} ({why})", p.id),
            None => p.id.clone(),
        })
        .collect();
    if !failed.is_empty() {
        items.push(vec![Span::plain(format!(
            "Points that did not pass: {}.",
            failed.join("; ")
        ))]);
    }
    items
}

/// Synthetic figures are never findings; the summary says which it left out and why, so
/// that a reader does not take the silence for "nothing changed".
fn synthetic_statement(summary: &RunSummary) -> Option<Vec<Span>> {
    let rows: Vec<&FigureRow> = summary
        .groups
        .iter()
        .flat_map(|group| &group.figures)
        .collect();
    let synthetic = rows.iter().filter(|row| row.synthetic).count();
    if synthetic == 0 {
        return None;
    }
    let mut sources: Vec<&str> = rows
        .iter()
        .filter(|row| row.synthetic)
        .map(|row| row.source.short_name())
        .collect();
    sources.sort_unstable();
    sources.dedup();
    let measured = rows.len() - synthetic;
    let rest = if measured == 0 {
        "no figure is measured, so the summary has no finding about performance".to_owned()
    } else {
        format!(
            "the findings below come from the other {}",
            if measured == 1 {
                "figure".to_owned()
            } else {
                format!("{measured} figures")
            }
        )
    };
    Some(vec![
        Span::strong("No synthetic finding:"),
        Span::plain(format!(
            " {synthetic} of {} figures are synthetic ({}) and are left out of this \
             summary; {rest}.",
            rows.len(),
            sources.join(", "),
        )),
    ])
}

/// "Maximum DB CPU reached 63% (writer) and 99% (reader) during the 10 users test", as the
/// published reports say it: per section, the highest CPU maximum of each resource over
/// every point, with the variant where it happened.
fn cpu_peaks(summary: &RunSummary) -> Vec<Vec<Span>> {
    let mut items = Vec::new();
    for (section, label, limit) in [
        (
            Section::Service,
            "Highest service CPU",
            SUMMARY_SERVICE_PEAKS,
        ),
        (Section::Database, "Database CPU peaks", usize::MAX),
        (Section::Broker, "MSK broker CPU peaks", usize::MAX),
    ] {
        // (subject, metric, unit, peak, variant name), the highest per subject.
        let mut peaks: Vec<(&str, &str, &str, f64, String)> = Vec::new();
        for group in &summary.groups {
            for row in &group.figures {
                let key = &row.key;
                if key.section != section
                    || key.statistic != "Maximum"
                    || !key.metric.starts_with("CPU")
                    || row.synthetic
                {
                    continue;
                }
                for (cell, &variant) in row.cells.iter().zip(&group.variants) {
                    let Some(peak) = cell.values.iter().copied().reduce(f64::max) else {
                        continue;
                    };
                    let name = summary
                        .variants
                        .get(variant)
                        .map_or(String::new(), |v| match &cell.shortfall {
                            // A peak of a partial workload says so.
                            Some(_) => format!("{}, did not pass", v.name),
                            None => v.name.clone(),
                        });
                    match peaks.iter_mut().find(|p| p.0 == key.subject) {
                        Some(existing) if existing.3 >= peak => {}
                        Some(existing) => {
                            *existing = (&key.subject, &key.metric, &key.unit, peak, name)
                        }
                        None => peaks.push((&key.subject, &key.metric, &key.unit, peak, name)),
                    }
                }
            }
        }
        if peaks.is_empty() {
            continue;
        }
        if section == Section::Service {
            peaks.sort_by(|a, b| b.3.total_cmp(&a.3));
        }
        let listed: Vec<String> = peaks
            .iter()
            .take(limit)
            .map(|(subject, metric, unit, peak, variant)| {
                let unit = if *unit == "%" {
                    "%".to_owned()
                } else {
                    format!(" {unit}")
                };
                let metric = if *metric == "CPU" {
                    String::new()
                } else {
                    format!(" {}", lowercase_word(metric))
                };
                if variant.is_empty() {
                    format!("{subject}{metric} {peak:.1}{unit}")
                } else {
                    format!("{subject}{metric} {peak:.1}{unit} ({variant})")
                }
            })
            .collect();
        items.push(vec![Span::plain(format!(
            "{label} (maximum of any point): {}.",
            listed.join(", ")
        ))]);
    }
    items
}

/// Per compared variant: the significant differences, largest first; with n=1, where
/// nothing can be called significant, the largest changes, said to be single measurements.
fn differences(summary: &RunSummary, group: &Group) -> Vec<Vec<Span>> {
    if !group.has_baseline {
        return Vec::new();
    }
    let scope = if summary.groups.len() > 1 {
        format!(" ({})", group.title)
    } else {
        String::new()
    };
    let single = summary.max_repeats <= 1;
    // Maxima move with their averages; listing both would say everything twice.
    // Synthetic figures are never findings.
    let averages = || {
        group
            .figures
            .iter()
            .filter(|row| row.key.statistic != "Maximum" && !row.synthetic)
    };
    if averages().next().is_none() {
        return Vec::new();
    }
    let mut items = Vec::new();
    for column in 1..group.columns.len() {
        // A comparison with a partial workload is no finding: the summary says why not.
        let partial: Vec<&str> = [0, column]
            .iter()
            .filter_map(|&c| {
                group
                    .figures
                    .iter()
                    .find_map(|r| r.cells.get(c)?.shortfall.as_deref())
            })
            .collect();
        if !partial.is_empty() {
            items.push(vec![
                Span::strong(group.columns[column].clone()),
                Span::plain(format!(
                    " vs {}{scope}: not compared, a point did not pass ({}).",
                    group.columns[0],
                    partial.join("; ")
                )),
            ]);
            continue;
        }
        let mut changes: Vec<(&FigureRow, f64)> = averages()
            .filter_map(|row| {
                let delta = row.cells.get(column)?.delta.as_ref()?;
                // Below the instrument's resolution there is nothing to report.
                if !delta.measurable {
                    return None;
                }
                let percent = delta.percent?;
                let keep = match delta.significance {
                    Significance::Tested(_)
                    | Significance::RankTested(_)
                    | Significance::TooFewRepeatsForRankTest { .. } => {
                        delta.significance.is_significant()
                    }
                    Significance::NoNoise { difference } => difference != 0.0,
                    // A change that rounds to 0.0% is no change worth listing.
                    Significance::NoEstimateOfNoise => {
                        single && without_negative_zero(percent, 1) != 0.0
                    }
                };
                keep.then_some((row, percent))
            })
            .collect();
        changes.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        let listed: Vec<String> = changes
            .iter()
            .take(SUMMARY_DIFFERENCES)
            .map(|(row, percent)| {
                format!("{} {}%", figure_name(&row.key), format_signed(*percent, 1))
            })
            .collect();
        let mut spans = vec![
            Span::strong(group.columns[column].clone()),
            Span::plain(format!(" vs {}{scope}: ", group.columns[0])),
        ];
        spans.push(Span::plain(if single {
            format!(
                "largest changes (single measurements, no estimate of noise): {}.",
                listed.join(", ")
            )
        } else if changes.is_empty() {
            format!(
                "none of {} figures (maxima not counted) differs significantly.",
                averages().count()
            )
        } else {
            format!(
                "{} of {} figures (maxima not counted) differ significantly{}: {}.",
                changes.len(),
                averages().count(),
                if changes.len() > SUMMARY_DIFFERENCES {
                    ", the largest"
                } else {
                    ""
                },
                listed.join(", ")
            )
        }));
        items.push(spans);
    }
    items
}

/// `mod-inventory-b CPU average`, `Check-in response time average`.
fn figure_name(key: &FigureKey) -> String {
    let statistic = match key.statistic.as_str() {
        "Value" => String::new(),
        other => format!(" {}", other.to_lowercase()),
    };
    match key.section {
        Section::Duration => format!("{} duration", key.subject),
        _ => format!("{} {}{statistic}", key.subject, lowercase_word(&key.metric)),
    }
}

/// `Response time` -> `response time`, but `CPU` stays `CPU`.
fn lowercase_word(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if first.is_uppercase() && second.is_uppercase() => {
            text.to_owned()
        }
        _ => text.to_lowercase(),
    }
}

fn memory_finding(summary: &RunSummary) -> Vec<Span> {
    // Trends of synthetic series say nothing about leaks either way.
    let trends: Vec<&MemoryTrend> = summary
        .memory_trends
        .iter()
        .filter(|t| !t.synthetic)
        .collect();
    if trends.is_empty() && !summary.memory_trends.is_empty() {
        return vec![Span::plain(
            "Memory trend: the memory series are the sandbox's synthetic ones, so nothing \
             is said about leaks.",
        )];
    }
    let suspected: Vec<_> = trends.iter().filter(|t| t.suspected_leak).collect();
    if trends.is_empty() {
        return vec![Span::plain(
            "Memory trend: no service memory series was collected, so nothing can be said \
             about leaks.",
        )];
    }
    let services: std::collections::BTreeSet<&str> =
        trends.iter().map(|t| t.service.as_str()).collect();
    if suspected.is_empty() {
        let steepest = trends
            .iter()
            .max_by(|a, b| a.trend.slope_per_hour.total_cmp(&b.trend.slope_per_hour));
        let mut text = format!(
            "No memory leak is suspected: no service's memory grew steadily (slope > \
             {SUSPICIOUS_SLOPE_PER_HOUR} %/h with R² ≥ {MIN_R_SQUARED}) in any point ({} services, {} \
             service-points)",
            services.len(),
            trends.len()
        );
        if let Some(t) = steepest {
            text.push_str(&format!(
                "; the steepest was {} in {} at {:+.2} %/h (R² {:.2})",
                t.service,
                t.point,
                without_negative_zero(t.trend.slope_per_hour, 2),
                t.trend.r_squared
            ));
        }
        text.push('.');
        return vec![Span::plain(text)];
    }
    let listed: Vec<String> = suspected
        .iter()
        .map(|t| {
            format!(
                "{} in {} ({:+.2} %/h, R² {:.2})",
                t.service, t.point, t.trend.slope_per_hour, t.trend.r_squared
            )
        })
        .collect();
    vec![
        Span::strong("Memory leak suspected"),
        Span::plain(format!(
            " (steady growth: slope > {SUSPICIOUS_SLOPE_PER_HOUR} %/h with R² ≥ {MIN_R_SQUARED}): {}.",
            listed.join("; ")
        )),
    ]
}
