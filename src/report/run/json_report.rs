//! The comparison report as JSON: the whole [`RunSummary`] (documented in docs/reports.md)
//! under a format version, at full precision.
use serde::Serialize;

use crate::report::run::run_summary::RunSummary;

/// Bumped when a field changes meaning or disappears; new fields do not bump it.
pub const REPORT_FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct JsonReport<'a> {
    report_format_version: u32,
    #[serde(flatten)]
    summary: &'a RunSummary,
}

pub fn render(summary: &RunSummary) -> String {
    let document = JsonReport {
        report_format_version: REPORT_FORMAT_VERSION,
        summary,
    };
    // Plain structs of strings, numbers and maps; serde_json writes non-finite floats as
    // null rather than failing, so the fallback is never expected to show.
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}
