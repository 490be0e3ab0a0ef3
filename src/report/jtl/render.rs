//! Turns a [`JtlReport`] into text for people (Markdown) or programs (JSON, CSV).
use std::fmt::Write as _;

use serde::Serialize;

use crate::report::jtl::{DisjointFiles, FileSpan, JtlReport, JtlWarning, LabelStats};
use crate::report::timestamp::{format_duration, format_utc};

/// Output formats of `envctl report jtl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReportFormat {
    /// A Markdown table that pastes into Confluence and GitHub.
    #[default]
    Md,
    /// Everything, machine-readable, with full precision.
    Json,
    /// One row per label plus TOTAL, for spreadsheets.
    Csv,
}

const COLUMNS: [&str; 14] = [
    "Label",
    "Samples",
    "Errors",
    "Error %",
    "Avg (ms)",
    "Min (ms)",
    "Max (ms)",
    "P50 (ms)",
    "P90 (ms)",
    "P95 (ms)",
    "P99 (ms)",
    "Throughput (/s)",
    "Received (KB/s)",
    "Sent (KB/s)",
];

const CSV_COLUMNS: [&str; 14] = [
    "label",
    "samples",
    "errors",
    "error_percent",
    "mean_ms",
    "min_ms",
    "max_ms",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "throughput_per_second",
    "received_kb_per_second",
    "sent_kb_per_second",
];

/// Renders the report; `sources` are the file names shown in the Markdown and JSON headers.
pub fn render(
    report: &JtlReport,
    sources: &[String],
    warnings: &[JtlWarning],
    format: ReportFormat,
) -> String {
    match format {
        ReportFormat::Md => render_markdown(report, sources),
        ReportFormat::Json => render_json(report, sources, warnings),
        ReportFormat::Csv => render_csv(report, None),
    }
}

/// One table per group (`report jtl --by file|run`): Markdown sections headed by the
/// group's name, a JSON `groups` array, or CSV rows with a leading `group` column.
pub fn render_groups(
    groups: &[(String, JtlReport, Vec<String>)],
    warnings: &[JtlWarning],
    format: ReportFormat,
) -> String {
    match format {
        ReportFormat::Md => groups
            .iter()
            .map(|(name, report, sources)| {
                format!("## {}\n\n{}", name, render_markdown(report, sources))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        ReportFormat::Json => {
            let documents: Vec<JsonGroup<'_>> = groups
                .iter()
                .map(|(name, report, sources)| JsonGroup {
                    group: name,
                    report: json_document(report, sources, &[]),
                })
                .collect();
            let mut text = serde_json::to_string_pretty(&JsonGroups {
                groups: documents,
                warnings,
            })
            .unwrap_or_else(|_| "{}".to_owned());
            text.push('\n');
            text
        }
        ReportFormat::Csv => {
            let mut out = format!("group,{}\n", CSV_COLUMNS.join(","));
            for (name, report, _) in groups {
                out.push_str(&render_csv(report, Some(name)));
            }
            out
        }
    }
}

#[derive(Serialize)]
struct JsonGroup<'a> {
    group: &'a str,
    #[serde(flatten)]
    report: JsonReport<'a>,
}

#[derive(Serialize)]
struct JsonGroups<'a> {
    groups: Vec<JsonGroup<'a>>,
    warnings: &'a [JtlWarning],
}

/// Files merged from different times: what the reader must know before trusting the
/// throughput column.
fn disjoint_note(disjoint: &DisjointFiles, total: Option<&LabelStats>) -> String {
    let merged_rate = total
        .and_then(|total| total.throughput_per_second)
        .map_or_else(|| "n/a".to_owned(), |rate| format!("{rate:.3}/s"));
    let covered_rate = disjoint
        .covered_throughput_per_second
        .map_or_else(|| "n/a".to_owned(), |rate| format!("{rate:.3}/s"));
    format!(
        "The {} files do not overlap in time: they ran in {} separate stretches, {} of the {} \
         from the first start to the last end. Throughput and KB/s are computed as JMeter \
         computes them for one merged file, samples over the first start to the last end, \
         gaps included (TOTAL {merged_rate}); over the time the files ran, TOTAL is \
         {covered_rate}. `--by file` or `--by run` gives each file or run its own table.",
        disjoint.files,
        disjoint.spans,
        format_duration(disjoint.covered_ms),
        format_duration(disjoint.span_ms),
    )
}

fn rows(report: &JtlReport) -> impl Iterator<Item = &LabelStats> {
    report.labels.iter().chain(report.total.as_ref())
}

/// Rounded for reading: averages to 0.1 ms, percentages to 0.01, throughput to 0.001/s
/// (a label run a few times an hour still shows a non-zero rate).
fn render_markdown(report: &JtlReport, sources: &[String]) -> String {
    let mut out = String::new();
    // Blank lines between the header lines: Markdown joins adjacent lines into one paragraph.
    let _ = writeln!(out, "Results: {}\n", sources.join(", "));
    let _ = writeln!(out, "{}\n", report.convention.method_sentence());
    if let (Some(start), Some(end)) = (report.start_ms(), report.end_ms()) {
        let _ = writeln!(
            out,
            "Start: {} · End: {} · Duration: {}",
            format_utc(start),
            format_utc(end),
            format_duration(end.saturating_sub(start))
        );
        out.push('\n');
    }
    if let Some(disjoint) = report.disjoint_files() {
        let _ = writeln!(out, "{}\n", disjoint_note(&disjoint, report.total.as_ref()));
    }
    let approximate: Vec<&str> = rows(report)
        .filter(|row| !row.percentiles_exact)
        .map(|row| row.label.as_str())
        .collect();
    if !approximate.is_empty() {
        let _ = writeln!(
            out,
            "Percentiles of {} are within 0.1% above 2,048 ms, not exact: more distinct \
             response times than envctl keeps per label.\n",
            approximate.join(", ")
        );
    }
    let _ = writeln!(out, "| {} |", COLUMNS.join(" | "));
    let _ = writeln!(out, "|:---|{}", "---:|".repeat(COLUMNS.len() - 1));
    for row in rows(report) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.2} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            escape_markdown_cell(&row.label),
            row.samples,
            row.errors,
            row.error_percent,
            row.mean_ms,
            row.min_ms,
            row.max_ms,
            format_percentile(row.p50_ms),
            format_percentile(row.p90_ms),
            format_percentile(row.p95_ms),
            format_percentile(row.p99_ms),
            row.throughput_per_second
                .map_or_else(|| "n/a".to_owned(), |rate| format!("{rate:.3}")),
            row.received_kb_per_second
                .map_or_else(|| "n/a".to_owned(), |rate| format!("{rate:.2}")),
            row.sent_kb_per_second
                .map_or_else(|| "n/a".to_owned(), |rate| format!("{rate:.2}")),
        );
    }
    out
}

/// Whole milliseconds as JMeter's Aggregate Report shows them; an interpolated dashboard
/// percentile to 0.01 ms, as the dashboard shows it.
fn format_percentile(ms: f64) -> String {
    if ms.fract() == 0.0 {
        format!("{ms:.0}")
    } else {
        format!("{ms:.2}")
    }
}

/// A pipe would end the cell and a line break the row.
fn escape_markdown_cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\r', '\n'], " ")
}

#[derive(Serialize)]
struct JsonReport<'a> {
    sources: &'a [String],
    convention: crate::report::jtl::Convention,
    start: Option<String>,
    end: Option<String>,
    duration_ms: Option<i64>,
    /// Each file's samples and span, in the order given.
    files: &'a [FileSpan],
    /// Present when the files do not overlap in time (see the Markdown note).
    disjoint_files: Option<DisjointFiles>,
    labels: &'a [LabelStats],
    total: Option<&'a LabelStats>,
    warnings: &'a [JtlWarning],
}

fn json_document<'a>(
    report: &'a JtlReport,
    sources: &'a [String],
    warnings: &'a [JtlWarning],
) -> JsonReport<'a> {
    JsonReport {
        sources,
        convention: report.convention,
        start: report.start_ms().map(format_utc),
        end: report.end_ms().map(format_utc),
        duration_ms: report
            .start_ms()
            .zip(report.end_ms())
            .map(|(start, end)| end - start),
        files: &report.files,
        disjoint_files: report.disjoint_files(),
        labels: &report.labels,
        total: report.total.as_ref(),
        warnings,
    }
}

fn render_json(report: &JtlReport, sources: &[String], warnings: &[JtlWarning]) -> String {
    let document = json_document(report, sources, warnings);
    // Serializing plain structs of strings and numbers cannot fail; an empty object is
    // the harmless fallback should serde_json ever disagree.
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}

/// Full precision: spreadsheets round for display themselves. With a `group`, rows only
/// (the caller writes one header for all groups), each led by the group's name.
fn render_csv(report: &JtlReport, group: Option<&str>) -> String {
    let mut out = String::new();
    if group.is_none() {
        out.push_str(&CSV_COLUMNS.join(","));
        out.push('\n');
    }
    let rate = |rate: Option<f64>| rate.map(|rate| rate.to_string()).unwrap_or_default();
    for row in rows(report) {
        if let Some(group) = group {
            out.push_str(&quote_csv_field(group));
            out.push(',');
        }
        let throughput = rate(row.throughput_per_second);
        let fields = [
            quote_csv_field(&row.label),
            row.samples.to_string(),
            row.errors.to_string(),
            row.error_percent.to_string(),
            row.mean_ms.to_string(),
            row.min_ms.to_string(),
            row.max_ms.to_string(),
            row.p50_ms.to_string(),
            row.p90_ms.to_string(),
            row.p95_ms.to_string(),
            row.p99_ms.to_string(),
            throughput,
            rate(row.received_kb_per_second),
            rate(row.sent_kb_per_second),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// RFC 4180 quoting: only fields with a delimiter, quote or line break are quoted.
fn quote_csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(escape_markdown_cell("a|b\nc"), "a\\|b c");
    }

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(quote_csv_field("plain"), "plain");
        assert_eq!(quote_csv_field("a, \"b\""), "\"a, \"\"b\"\"\"");
    }
}
