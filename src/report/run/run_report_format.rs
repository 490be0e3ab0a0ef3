//! The formats of `envctl report RUN_DIR` and `envctl report compare`.
use std::path::Path;

use crate::report::run::run_summary::RunSummary;
use crate::report::run::{csv_report, html_report, json_report, markdown_report};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum RunReportFormat {
    /// Markdown tables for GitHub and Confluence.
    #[default]
    Md,
    /// One self-contained HTML file with SVG charts.
    Html,
    /// The whole summary, machine-readable (docs/reports.md).
    Json,
    /// One tidy table: a row per point and figure.
    Csv,
}

impl RunReportFormat {
    /// The format an output file's extension asks for (`report.html`), if any.
    pub fn of_path(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(Self::Md),
            "html" | "htm" => Some(Self::Html),
            "json" => Some(Self::Json),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }

    pub fn render(self, summary: &RunSummary) -> String {
        match self {
            Self::Md => markdown_report::render(summary),
            Self::Html => html_report::render(summary),
            Self::Json => json_report::render(summary),
            Self::Csv => csv_report::render(summary),
        }
    }
}
