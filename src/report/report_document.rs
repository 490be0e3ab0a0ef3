//! The comparison report as a sequence of blocks (headings, paragraphs, tables, charts),
//! decided once here so that Markdown and HTML say the same thing; the renderers only
//! choose the syntax.
use std::collections::BTreeMap;

use crate::report::figure::{FigureKey, Section};
use crate::report::figure_format::{
    format_delta, format_significance, format_summary, without_negative_zero,
};
use crate::report::memory_trend::{MIN_R_SQUARED, MIN_SAMPLES, SUSPICIOUS_SLOPE_PER_HOUR};
use crate::report::run_summary::{FigureRow, Group, RunSummary};
use crate::report::stats::{SIGNIFICANCE_LEVEL, Significance};
use crate::report::timestamp::{format_duration, format_utc};

/// How many significant differences the summary lists per compared variant; the tables
/// have them all.
const SUMMARY_DIFFERENCES: usize = 5;

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub text: String,
    pub strong: bool,
    pub code: bool,
}

impl Span {
    pub fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            strong: false,
            code: false,
        }
    }
    pub fn strong(text: impl Into<String>) -> Self {
        Self {
            strong: true,
            ..Self::plain(text)
        }
    }
    pub fn code(text: impl Into<String>) -> Self {
        Self {
            code: true,
            ..Self::plain(text)
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    /// A significant difference or a suspected leak: what the reader must not miss.
    pub strong: bool,
}

impl Cell {
    fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            strong: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub caption: Option<String>,
    /// Figures (aligned right to compare digits) rather than text such as host names.
    pub numeric: bool,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(u8, String),
    Paragraph(Vec<Span>),
    Bullets(Vec<Vec<Span>>),
    /// Set apart: the synthetic-metrics warning.
    Note(Vec<Span>),
    Table(Table),
    /// The charts of a group (index into the summary's groups); only HTML draws them.
    Charts(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReportDocument {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl ReportDocument {
    pub fn of(summary: &RunSummary) -> Self {
        let mut blocks = vec![Block::Heading(1, summary.title.clone())];
        if summary.synthetic_metrics {
            blocks.push(Block::Note(vec![
                Span::strong("Synthetic metrics."),
                Span::plain(
                    " The CloudWatch figures in this report (services, database, MSK brokers) \
                     come from the envctl sandbox's synthetic series, not from AWS; they show \
                     the report's shape, not the system's performance.",
                ),
            ]));
        }
        if let Some(description) = &summary.description {
            blocks.push(Block::Paragraph(vec![Span::plain(description.clone())]));
        }
        blocks.push(Block::Bullets(overview(summary)));
        blocks.push(Block::Heading(2, "Summary".to_owned()));
        blocks.push(Block::Bullets(findings(summary)));
        blocks.push(Block::Heading(2, "Test runs".to_owned()));
        blocks.push(Block::Table(test_runs(summary)));
        for (index, group) in summary.groups.iter().enumerate() {
            let heading = if summary.groups.len() == 1 && group.fixed.is_empty() {
                "Results".to_owned()
            } else {
                group.title.clone()
            };
            blocks.push(Block::Heading(2, heading));
            blocks.extend(group_blocks(summary, index, group));
        }
        if !summary.warnings.is_empty() {
            blocks.push(Block::Heading(2, "Warnings".to_owned()));
            blocks.push(Block::Bullets(
                summary
                    .warnings
                    .iter()
                    .map(|w| vec![Span::plain(w.clone())])
                    .collect(),
            ));
        }
        blocks.push(Block::Heading(2, "Method".to_owned()));
        blocks.push(Block::Bullets(method(summary)));
        Self {
            title: summary.title.clone(),
            blocks,
        }
    }
}

fn overview(summary: &RunSummary) -> Vec<Vec<Span>> {
    let mut items = Vec::new();
    for run in &summary.runs {
        let took = run
            .finished_at
            .map(|end| {
                format!(
                    ", took {}",
                    format_duration(((end - run.started_at) * 1000.0) as i64)
                )
            })
            .unwrap_or_default();
        items.push(vec![
            Span::plain("Run "),
            Span::code(run.run_id.clone()),
            Span::plain(format!(
                ": playbook {}, env {}, target {}, status {}, {} of {} points measured, \
                 started {}{took}.",
                run.playbook,
                run.env,
                run.target,
                status_text(&run.status),
                run.points_measured,
                run.points_planned,
                format_utc((run.started_at * 1000.0) as i64),
            )),
        ]);
    }
    let axes = summary
        .axes
        .iter()
        .map(|axis| format!("{} ({})", axis.name, axis.variants.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    if !axes.is_empty() {
        items.push(vec![Span::plain(format!("Axes: {axes}."))]);
    }
    if !summary.baseline.0.is_empty() {
        items.push(vec![
            Span::plain("Baseline: "),
            Span::code(summary.baseline.describe()),
            Span::plain("; every delta is against it."),
        ]);
    }
    items.push(vec![Span::plain(noise_statement(summary))]);
    items
}

fn noise_statement(summary: &RunSummary) -> String {
    if summary.max_repeats <= 1 {
        "n=1, no estimate of noise: each figure is a single measurement, so a delta may be \
         run-to-run noise."
            .to_owned()
    } else {
        format!(
            "Up to {} repeats per variant: figures are mean ± sample standard deviation (CV = \
             sd / mean); a delta is significant when Welch's t-test gives p < {SIGNIFICANCE_LEVEL}, \
             otherwise it is within noise.",
            summary.max_repeats
        )
    }
}

fn status_text(status: &crate::results::Status) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{status:?}"))
}

fn findings(summary: &RunSummary) -> Vec<Vec<Span>> {
    let mut items = Vec::new();
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
    items.push(memory_finding(summary));
    let failed: Vec<&str> = summary
        .variants
        .iter()
        .flat_map(|v| v.points.iter())
        .filter(|p| p.status != crate::results::Status::Passed)
        .map(|p| p.id.as_str())
        .collect();
    if !failed.is_empty() {
        items.push(vec![Span::plain(format!(
            "Points that did not pass: {}.",
            failed.join("; ")
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
    let averages = || {
        group
            .figures
            .iter()
            .filter(|row| row.key.statistic != "Maximum")
    };
    let mut items = Vec::new();
    for column in 1..group.columns.len() {
        let mut changes: Vec<(&FigureRow, f64)> = averages()
            .filter_map(|row| {
                let delta = row.cells.get(column)?.delta.as_ref()?;
                let percent = delta.percent?;
                let keep = match delta.significance {
                    Significance::Tested(test) => test.significant,
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
            .map(|(row, percent)| format!("{} {percent:+.1}%", figure_name(&row.key)))
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
    let suspected: Vec<_> = summary
        .memory_trends
        .iter()
        .filter(|t| t.suspected_leak)
        .collect();
    if summary.memory_trends.is_empty() {
        return vec![Span::plain(
            "Memory trend: no service memory series was collected, so nothing can be said \
             about leaks.",
        )];
    }
    let services: std::collections::BTreeSet<&str> = summary
        .memory_trends
        .iter()
        .map(|t| t.service.as_str())
        .collect();
    if suspected.is_empty() {
        let steepest = summary
            .memory_trends
            .iter()
            .max_by(|a, b| a.trend.slope_per_hour.total_cmp(&b.trend.slope_per_hour));
        let mut text = format!(
            "No memory leak is suspected: no service's memory grew steadily (slope > \
             {SUSPICIOUS_SLOPE_PER_HOUR} %/h with R² ≥ {MIN_R_SQUARED}) in any point ({} services, {} \
             service-points)",
            services.len(),
            summary.memory_trends.len()
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

fn test_runs(summary: &RunSummary) -> Table {
    let mut rows = Vec::new();
    for variant in &summary.variants {
        for point in &variant.points {
            rows.push(vec![
                Cell::plain(point.id.clone()),
                Cell {
                    text: status_text(&point.status),
                    strong: point.status != crate::results::Status::Passed,
                },
                Cell::plain(format_utc((point.workload_start * 1000.0) as i64)),
                Cell::plain(format_duration((point.workload_s * 1000.0).round() as i64)),
                Cell::plain(point.failure.clone().unwrap_or_default()),
            ]);
        }
    }
    for point in &summary.points_not_measured {
        rows.push(vec![
            Cell::plain(point.id.clone()),
            Cell {
                text: status_text(&point.status),
                strong: point.status != crate::results::Status::Passed,
            },
            Cell::plain("—"),
            Cell::plain("—"),
            Cell::plain("no results"),
        ]);
    }
    Table {
        caption: None,
        numeric: false,
        headers: [
            "Point",
            "Status",
            "Workload start (UTC)",
            "Workload",
            "Failure",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
    }
}

/// Figures of a group become one table per section (per metric for CloudWatch sections),
/// with one row per subject and, per statistic, a column per variant and per delta.
fn group_blocks(summary: &RunSummary, index: usize, group: &Group) -> Vec<Block> {
    let mut tables: Vec<((Section, String), Vec<&FigureRow>)> = Vec::new();
    for row in &group.figures {
        let table_key = (
            row.key.section,
            if row.key.section.is_metric() {
                row.key.metric.clone()
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
            Section::Duration | Section::Transaction => section.title().to_owned(),
            _ => format!("{} {metric} ({unit})", section.title()),
        };
        let synthetic = section.is_metric() && summary.synthetic_metrics;
        blocks.push(Block::Heading(
            3,
            if synthetic {
                format!("{title}, synthetic metrics")
            } else {
                title
            },
        ));
        blocks.push(Block::Table(figure_table(
            group,
            *section,
            rows,
            summary.max_repeats > 1,
        )));
        if *section == Section::Service && metric == "Memory" {
            blocks.push(Block::Table(memory_trend_table(summary, group)));
        }
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
        let mut headers = vec!["Effective configuration".to_owned()];
        headers.extend(group.columns.iter().cloned());
        blocks.push(Block::Table(Table {
            caption: Some("Only what differed; read back from AWS when each point ran.".to_owned()),
            numeric: false,
            headers,
            rows: group
                .configuration
                .iter()
                .map(|row| {
                    let mut cells = vec![Cell::plain(row.path.clone())];
                    cells.extend(
                        row.values
                            .iter()
                            .map(|v| Cell::plain(v.clone().unwrap_or_else(|| "—".to_owned()))),
                    );
                    cells
                })
                .collect(),
        }));
    }
    if summary.timelines.iter().any(|t| t.group == index) {
        blocks.push(Block::Charts(index));
    }
    blocks
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

fn figure_table(
    group: &Group,
    section: Section,
    rows: &[&FigureRow],
    report_has_repeats: bool,
) -> Table {
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
        for (position, column) in group.columns.iter().enumerate() {
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
                            Some((row, delta)) => {
                                let verdict =
                                    format_significance(&delta.significance, report_has_repeats);
                                let mut text =
                                    format_delta(&row.key, delta.absolute, delta.percent);
                                if !verdict.is_empty() {
                                    text.push_str(&format!(", {verdict}"));
                                }
                                Cell {
                                    text,
                                    strong: matches!(delta.significance,
                                    Significance::Tested(test) if test.significant),
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
        group
            .columns
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

fn method(summary: &RunSummary) -> Vec<Vec<Span>> {
    let mut items = vec![
        vec![Span::plain(
            "Window: metric averages and maxima are taken over each point's workload, from \
             the first step's start to the last step's end; the transition before it and the \
             collection padding around it are left out.",
        )],
        vec![Span::plain(
            "Transactions: all JTL files of a point are merged per label; response times are \
             the label's mean in seconds.",
        )],
        vec![Span::plain(noise_statement(summary))],
        vec![Span::plain(format!(
            "Memory leak rule: least-squares line through a service's memory samples in the \
             window; suspected when the slope exceeds {SUSPICIOUS_SLOPE_PER_HOUR} percentage \
             points per hour with R² ≥ {MIN_R_SQUARED} over at least {MIN_SAMPLES} samples."
        ))],
    ];
    if summary.synthetic_metrics {
        items.push(vec![Span::plain(
            "Synthetic metrics: the run's CloudWatch series were generated by the envctl \
             sandbox.",
        )]);
    }
    // So that nobody reads 00:02:44 as a time of day.
    items.push(vec![Span::plain(
        "Durations are HH:MM:SS; deltas of durations are in seconds.",
    )]);
    items
}
