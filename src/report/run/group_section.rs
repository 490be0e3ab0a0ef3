//! One group's section of the report: a table per section (per metric for CloudWatch
//! sections) with a column per variant and per delta, the memory trend table, the
//! configuration that differed, and where the charts go.
use std::collections::BTreeMap;

use crate::report::run::figure::{FigureKey, Section};
use crate::report::run::figure_format::{
    format_delta, format_significance, format_summary, no_measurable_change, without_negative_zero,
};
use crate::report::run::memory_trend::{MIN_R_SQUARED, MIN_SAMPLES, SUSPICIOUS_SLOPE_PER_HOUR};
use crate::report::run::report_document::{Block, Cell, Span, Table};
use crate::report::run::run_summary::{FigureRow, Group, RunSummary};

const PERCENTILES: &str = "percentiles";

/// Figures of a group become one table per section (per metric for CloudWatch sections),
/// with one row per subject and, per statistic, a column per variant and per delta.
pub(crate) fn group_blocks(summary: &RunSummary, index: usize, group: &Group) -> Vec<Block> {
    let mut tables: Vec<((Section, String), Vec<&FigureRow>)> = Vec::new();
    for row in &group.figures {
        let table_key = (
            row.key.section,
            if row.key.section.is_metric() {
                row.key.metric.clone()
            } else if row.key.is_percentile() {
                // Their own table: with averages and errors one table would be too wide.
                PERCENTILES.to_owned()
            } else {
                String::new()
            },
        );
        match tables.iter_mut().find(|(key, _)| key == &table_key) {
            Some((_, rows)) => rows.push(row),
            None => tables.push((table_key, vec![row])),
        }
    }
    let mut blocks = Vec::new();
    for ((section, metric), rows) in &tables {
        let unit = rows.first().map(|r| r.key.unit.clone()).unwrap_or_default();
        let title = match section {
            Section::Transaction if metric == PERCENTILES => {
                format!(
                    "Transaction percentiles ({})",
                    summary.convention.short_name()
                )
            }
            Section::Duration | Section::Transaction => section.title().to_owned(),
            _ => format!("{} {metric} ({unit})", section.title()),
        };
        // Every table says where its numbers come from when they are synthetic, so a
        // table copied out of the report keeps its label.
        let mut synthetic: Vec<&str> = rows
            .iter()
            .filter(|row| row.synthetic)
            .map(|row| row.source.short_name())
            .collect();
        synthetic.sort_unstable();
        synthetic.dedup();
        blocks.push(Block::Heading(
            3,
            if synthetic.is_empty() {
                title
            } else {
                format!("{title}, synthetic ({})", synthetic.join(", "))
            },
        ));
        let mut table = figure_table(summary, group, *section, rows, summary.max_repeats > 1);
        add_shortfalls(&mut table, summary, group);
        blocks.push(Block::Table(table));
        if *section == Section::Service && metric == "Memory" {
            let mut table = memory_trend_table(summary, group);
            add_shortfalls(&mut table, summary, group);
            blocks.push(Block::Table(table));
        }
    }
    // Charts before the configuration table, which can be long (26 services' changes),
    // so that they are not thousands of pixels down.
    if summary.timelines.iter().any(|t| t.group == index) {
        blocks.push(Block::Charts(index));
    }
    blocks.push(Block::Heading(3, "Configuration differences".to_owned()));
    if group.variants.len() < 2 {
        blocks.push(Block::Paragraph(vec![Span::plain(
            "One variant only: nothing to compare.",
        )]));
    } else if group.configuration.is_empty() {
        blocks.push(Block::Paragraph(vec![Span::plain(
            "The effective configuration read back from AWS was the same for every variant.",
        )]));
    } else {
        blocks.extend(configuration_blocks(group));
    }
    for drift in summary
        .configuration_drift
        .iter()
        .filter(|drift| group.variants.contains(&drift.variant))
    {
        blocks.push(Block::Paragraph(vec![
            Span::strong("Configuration changed between repeats"),
            Span::plain(format!(
                " of {}: {} differs from {} in {} ({}); these repeats measured different \
                 environments and are not comparable.",
                summary.variants[drift.variant].name,
                drift.point,
                drift.first_point,
                plural(drift.differences.len(), "path"),
                drift
                    .differences
                    .iter()
                    .map(|row| row.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        ]));
    }
    blocks
}

/// The differences grouped as the plan groups them (one row for a change shared by many
/// services), with the full per-service list folded below when grouping saved rows.
fn configuration_blocks(group: &Group) -> Vec<Block> {
    let mut headers = vec!["Effective configuration".to_owned()];
    headers.extend(group.columns.iter().cloned());
    let value_cells = |values: &[Option<String>]| {
        values
            .iter()
            .map(|v| Cell::plain(v.clone().unwrap_or_else(|| "—".to_owned())))
            .collect::<Vec<_>>()
    };
    let grouped_rows = group
        .configuration_groups
        .iter()
        .map(|row| {
            let name = match row.services.as_slice() {
                [] => row.field.clone(),
                [service] => format!("services.{service}.{}", row.field),
                services => format!("{} on {}", row.field, plural(services.len(), "service")),
            };
            let mut cells = vec![Cell::plain(name)];
            cells.extend(value_cells(&row.values));
            cells
        })
        .collect();
    let mut blocks = vec![Block::Table(Table {
        caption: Some("Only what differed; read back from AWS when each point ran.".to_owned()),
        numeric: false,
        headers: headers.clone(),
        rows: grouped_rows,
    })];
    if group.configuration_groups.len() < group.configuration.len() {
        blocks.push(Block::Folded {
            summary: format!(
                "All {} differences, one row per service and field",
                group.configuration.len()
            ),
            table: Table {
                caption: None,
                numeric: false,
                headers,
                rows: group
                    .configuration
                    .iter()
                    .map(|row| {
                        let mut cells = vec![Cell::plain(row.path.clone())];
                        cells.extend(value_cells(&row.values));
                        cells
                    })
                    .collect(),
            },
        });
    }
    blocks
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// Column headers name the statistic in the reports' words.
fn statistic_title(section: Section, key: &FigureKey) -> String {
    match (section, key.statistic.as_str()) {
        (Section::Duration, _) => "duration".to_owned(),
        (Section::Transaction, "Value") => format!("{} ({})", key.metric.to_lowercase(), key.unit),
        (Section::Transaction, statistic) => {
            format!("{} ({})", short_statistic(statistic), key.unit)
        }
        (_, statistic) => short_statistic(statistic),
    }
}

fn short_statistic(statistic: &str) -> String {
    match statistic {
        "Average" => "avg".to_owned(),
        "Maximum" => "max".to_owned(),
        other => other.to_lowercase(),
    }
}

/// The group's column titles, a column with a point that did not pass marked with how it
/// ended (`u3 (failed)`): every header of its figures and deltas carries it.
pub(crate) fn marked_columns(summary: &RunSummary, group: &Group) -> Vec<String> {
    group
        .columns
        .iter()
        .zip(&group.variants)
        .map(|(column, &variant)| {
            let ended = summary.variants[variant]
                .points
                .iter()
                .find_map(|p| p.shortfall.as_deref())
                .map(|why| why.split(':').next().unwrap_or(why));
            match ended {
                Some(ended) => format!("{column} ({ended})"),
                None => column.clone(),
            }
        })
        .collect()
}

/// Under a table with a marked column: which points did not pass and why, and that their
/// deltas compare a partial workload.
fn add_shortfalls(table: &mut Table, summary: &RunSummary, group: &Group) {
    let why: Vec<String> = group
        .variants
        .iter()
        .flat_map(|&v| summary.variants[v].points.iter())
        .filter_map(|p| p.shortfall.as_ref().map(|s| format!("{} {s}", p.id)))
        .collect();
    if why.is_empty() {
        return;
    }
    let note = format!(
        "Not a whole workload: {}. Its figures are of a partial workload, and its deltas \
         compare one.",
        why.join("; ")
    );
    table.caption = Some(match table.caption.take() {
        Some(caption) => format!("{caption} {note}"),
        None => note,
    });
}

fn figure_table(
    summary: &RunSummary,
    group: &Group,
    section: Section,
    rows: &[&FigureRow],
    report_has_repeats: bool,
) -> Table {
    let columns = marked_columns(summary, group);
    // Column blocks: each distinct (metric, statistic) in first-seen order.
    let mut blocks: Vec<(String, String)> = Vec::new();
    let mut by_subject: BTreeMap<&str, Vec<&FigureRow>> = BTreeMap::new();
    let mut subjects: Vec<&str> = Vec::new();
    for row in rows {
        let block = (row.key.metric.clone(), row.key.statistic.clone());
        if !blocks.contains(&block) {
            blocks.push(block);
        }
        if !subjects.contains(&row.key.subject.as_str()) {
            subjects.push(&row.key.subject);
        }
        by_subject.entry(&row.key.subject).or_default().push(row);
    }
    let subject_title = match section {
        Section::Duration => "Step",
        Section::Transaction => "Transaction",
        Section::Service => "Service",
        Section::Database => "Instance",
        Section::Broker => "Broker",
        Section::Other => "Resource",
    };
    // A column block that is zero in every point (errors, most of the time) says less
    // than one line under the table.
    let all_zero = |metric: &String, statistic: &String| {
        rows.iter()
            .filter(|r| &r.key.metric == metric && &r.key.statistic == statistic)
            .flat_map(|r| r.cells.iter().flat_map(|c| c.values.iter()))
            .all(|v| *v == 0.0)
    };
    let mut zero_titles = Vec::new();
    blocks.retain(|(metric, statistic)| {
        if !all_zero(metric, statistic) {
            return true;
        }
        if let Some(sample) = rows
            .iter()
            .find(|r| &r.key.metric == metric && &r.key.statistic == statistic)
        {
            zero_titles.push(statistic_title(section, &sample.key));
        }
        false
    });
    let caption = (!zero_titles.is_empty()).then(|| {
        format!(
            "Zero in every point, so not shown: {}.",
            zero_titles.join(", ")
        )
    });
    let mut headers = vec![subject_title.to_owned()];
    for (metric, statistic) in &blocks {
        let Some(sample) = rows
            .iter()
            .find(|r| &r.key.metric == metric && &r.key.statistic == statistic)
        else {
            continue;
        };
        let name = statistic_title(section, &sample.key);
        for (position, column) in columns.iter().enumerate() {
            headers.push(format!("{column} {name}"));
            if position > 0 && group.has_baseline {
                headers.push(format!("Δ {column} {name}"));
            }
        }
    }
    let mut table_rows = Vec::new();
    for subject in subjects {
        let mut cells = vec![Cell::plain(subject)];
        let rows_of_subject = by_subject.get(subject).cloned().unwrap_or_default();
        for (metric, statistic) in &blocks {
            let row = rows_of_subject
                .iter()
                .find(|r| &r.key.metric == metric && &r.key.statistic == statistic);
            for position in 0..group.columns.len() {
                let cell = row.and_then(|r| r.cells.get(position).map(|c| (r, c)));
                cells.push(Cell::plain(match cell {
                    Some((row, cell)) => format_summary(&row.key, cell.summary.as_ref()),
                    None => "—".to_owned(),
                }));
                if position > 0 && group.has_baseline {
                    cells.push(
                        match cell.and_then(|(row, c)| c.delta.as_ref().map(|d| (row, d))) {
                            Some((row, delta)) if !delta.measurable => {
                                Cell::plain(no_measurable_change(&row.key, delta.resolution))
                            }
                            Some((row, delta)) => {
                                let verdict =
                                    format_significance(&delta.significance, report_has_repeats);
                                let mut text =
                                    format_delta(&row.key, delta.absolute, delta.percent);
                                if !verdict.is_empty() {
                                    text.push_str(&format!(", {verdict}"));
                                }
                                if delta.partial {
                                    text.push_str(", partial workload");
                                }
                                Cell {
                                    text,
                                    strong: delta.significance.is_significant() && !delta.partial,
                                }
                            }
                            None => Cell::plain("—"),
                        },
                    );
                }
            }
        }
        table_rows.push(cells);
    }
    Table {
        caption,
        numeric: true,
        headers,
        rows: table_rows,
    }
}

/// Per service and variant, the steepest of its repeats' memory slopes.
fn memory_trend_table(summary: &RunSummary, group: &Group) -> Table {
    let mut services: Vec<&str> = Vec::new();
    for trend in &summary.memory_trends {
        if group.variants.contains(&trend.variant) && !services.contains(&trend.service.as_str()) {
            services.push(&trend.service);
        }
    }
    let mut headers = vec!["Service".to_owned()];
    headers.extend(
        marked_columns(summary, group)
            .iter()
            .map(|c| format!("{c} memory trend (%/h, R²)")),
    );
    let rows = services
        .iter()
        .map(|service| {
            let mut cells = vec![Cell::plain(*service)];
            for variant in &group.variants {
                let steepest = summary
                    .memory_trends
                    .iter()
                    .filter(|t| t.variant == *variant && t.service == *service)
                    .max_by(|a, b| a.trend.slope_per_hour.total_cmp(&b.trend.slope_per_hour));
                cells.push(match steepest {
                    Some(t) => Cell {
                        text: format!(
                            "{:+.2} (R² {:.2}){}",
                            without_negative_zero(t.trend.slope_per_hour, 2),
                            t.trend.r_squared,
                            if t.suspected_leak {
                                ", leak suspected"
                            } else {
                                ""
                            }
                        ),
                        strong: t.suspected_leak,
                    },
                    None => Cell::plain("—"),
                });
            }
            cells
        })
        .collect();
    Table {
        caption: Some(format!(
            "Least-squares slope of memory over the workload window, steepest repeat; a leak \
             is suspected above {SUSPICIOUS_SLOPE_PER_HOUR} %/h with R² ≥ {MIN_R_SQUARED} and \
             at least {MIN_SAMPLES} samples."
        )),
        numeric: true,
        headers,
        rows,
    }
}
