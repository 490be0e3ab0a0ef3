//! The comparison report as a sequence of blocks (headings, paragraphs, tables, charts),
//! decided once here so that Markdown and HTML say the same thing; the renderers only
//! choose the syntax.
use crate::report::run::figure::{Provenance, Section};
use crate::report::run::group_section::group_blocks;
use crate::report::run::memory_trend::{MIN_R_SQUARED, MIN_SAMPLES, SUSPICIOUS_SLOPE_PER_HOUR};
use crate::report::run::report_findings::findings;
use crate::report::run::run_summary::RunSummary;
use crate::report::run::stats::SIGNIFICANCE_LEVEL;
use crate::report::timestamp::{format_duration, format_utc};

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
    pub fn plain(text: impl Into<String>) -> Self {
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
    /// Details a reader opens on demand (HTML `<details>`); Markdown, which has no
    /// folding that both GitHub and Confluence read, shows the summary line and the table.
    Folded {
        summary: String,
        table: Table,
    },
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
        let synthetic = synthetic_explanations(summary);
        if !synthetic.is_empty() {
            blocks.push(Block::Note(vec![
                Span::strong("Synthetic figures."),
                Span::plain(format!(
                    " In this report {}. They show the report's shape, not the system's \
                     performance, are marked synthetic in every table, and are never listed \
                     as findings.",
                    synthetic.join("; ")
                )),
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

/// One clause per synthetic source of the report's figures, in section order:
/// "the demo workload's transactions time the sandbox's own API ...".
pub(crate) fn synthetic_explanations(summary: &RunSummary) -> Vec<&'static str> {
    let mut seen: Vec<(Section, Provenance)> = Vec::new();
    for row in summary.groups.iter().flat_map(|group| &group.figures) {
        // One clause covers every CloudWatch section.
        let section = if row.key.section.is_metric() {
            Section::Service
        } else {
            row.key.section
        };
        if row.synthetic && !seen.contains(&(section, row.source)) {
            seen.push((section, row.source));
        }
    }
    seen.sort();
    let mut clauses: Vec<&'static str> = seen
        .into_iter()
        .map(|(section, source)| source.explanation(section))
        .collect();
    clauses.dedup();
    clauses
}

/// " (simulated)" after a time or duration on the sandbox's clock: a sandbox run's times
/// are virtual (hours ahead of the wall clock, minutes passing in seconds), and a report
/// never lets them pass for real ones beside an AWS run's (issue 26 item 11).
fn simulated_label(simulated: bool) -> &'static str {
    if simulated { " (simulated)" } else { "" }
}

fn overview(summary: &RunSummary) -> Vec<Vec<Span>> {
    let mut items = Vec::new();
    for run in &summary.runs {
        let label = simulated_label(run.target == "sandbox");
        let took = run
            .finished_at
            .map(|end| {
                format!(
                    ", took {}{label}",
                    format_duration(((end - run.started_at) * 1000.0) as i64)
                )
            })
            .unwrap_or_default();
        let prefix = match &run.label {
            Some(label) => format!("{label}: run "),
            None => "Run ".to_owned(),
        };
        items.push(vec![
            Span::plain(prefix),
            Span::code(run.run_id.clone()),
            Span::plain(format!(
                ": playbook {}, env {}, target {}, status {}, {} of {} points measured, \
                 started {}{label}{took}.",
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
             otherwise it is within noise. Percentile deltas use an exact two-sided \
             Mann-Whitney rank test over the repeats instead, which needs at least 4 repeats \
             per variant (or 3 and 5) to be able to reach p < {SIGNIFICANCE_LEVEL}.",
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

fn test_runs(summary: &RunSummary) -> Table {
    let mut rows = Vec::new();
    // A column for load engines only when some point ran them (`load:` steps).
    let engines = summary
        .variants
        .iter()
        .any(|v| v.points.iter().any(|p| !p.load_engines.is_empty()));
    for variant in &summary.variants {
        for point in &variant.points {
            let mut row = vec![
                Cell::plain(point.id.clone()),
                Cell {
                    text: status_text(&point.status),
                    strong: point.status != crate::results::Status::Passed,
                },
                Cell::plain(format!(
                    "{}{}",
                    format_utc((point.workload_start * 1000.0) as i64),
                    simulated_label(point.simulated)
                )),
                Cell::plain(format!(
                    "{}{}",
                    format_duration((point.workload_s * 1000.0).round() as i64),
                    simulated_label(point.simulated)
                )),
                Cell::plain(
                    [
                        point.failure.clone(),
                        point
                            .metrics_missing
                            .as_ref()
                            .map(|_| "metrics missing (see Warnings)".to_owned()),
                    ]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join("; "),
                ),
            ];
            if engines {
                row.push(Cell::plain(point.load_engines.join("; ")));
            }
            rows.push(row);
        }
    }
    for point in &summary.points_not_measured {
        let mut row = vec![
            Cell::plain(point.id.clone()),
            Cell {
                text: status_text(&point.status),
                strong: point.status != crate::results::Status::Passed,
            },
            Cell::plain("—"),
            Cell::plain("—"),
            Cell::plain("no results"),
        ];
        if engines {
            row.push(Cell::plain("—"));
        }
        rows.push(row);
    }
    let mut headers: Vec<String> = [
        "Point",
        "Status",
        "Workload start (UTC)",
        "Workload",
        "Failure",
    ]
    .map(str::to_owned)
    .to_vec();
    if engines {
        headers.push("Load engines".to_owned());
    }
    Table {
        caption: None,
        numeric: false,
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
        vec![Span::plain(format!(
            "Transactions: all JTL files of a point are merged per label; response times are \
             in seconds. {}",
            summary.convention.method_sentence()
        ))],
        vec![Span::plain(noise_statement(summary))],
        vec![Span::plain(format!(
            "Memory leak rule: least-squares line through a service's memory samples in the \
             window; suspected when the slope exceeds {SUSPICIOUS_SLOPE_PER_HOUR} percentage \
             points per hour with R² ≥ {MIN_R_SQUARED} over at least {MIN_SAMPLES} samples."
        ))],
    ];
    let synthetic = synthetic_explanations(summary);
    if !synthetic.is_empty() {
        items.push(vec![Span::plain(format!(
            "Synthetic figures: {}. Each figure's source is in the JSON (`source`, \
             `synthetic` per figure row) and the CSV (`source`, `synthetic` columns).",
            synthetic.join("; ")
        ))]);
    }
    items.push(vec![Span::plain(
        "Resolution: a difference smaller than what the instrument can show (1 ms for \
         response times on JMeter's clock, 1 ms for durations) is reported as no measurable \
         change and never as a finding, whatever its percentage.",
    )]);
    // So that nobody reads 00:02:44 as a time of day.
    items.push(vec![Span::plain(
        "Durations are HH:MM:SS; deltas of durations are in seconds.",
    )]);
    items
}
