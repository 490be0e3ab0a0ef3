//! `envctl report ...`: summaries of performance-test results.
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::{ReportArgs, ReportCommand, ReportJtlArgs};
use crate::report::jtl::summarize_jtl_files;
use crate::report::render::render;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ReportCommand::Jtl(jtl) => run_jtl(jtl),
    }
}

/// Prints the per-label table on stdout and warnings on stderr, so that
/// `envctl report jtl a.jtl > table.md` keeps the table clean.
fn run_jtl(args: ReportJtlArgs) -> anyhow::Result<ExitCode> {
    let (report, warnings) = summarize_jtl_files(&args.files)?;
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    if report.total.is_none() {
        bail!(
            "no samples in {}: is this the results file of a test that ran?",
            sources(&args).join(", ")
        );
    }
    let text = render(&report, &sources(&args), &warnings, args.format);
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("cannot write the report to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn sources(args: &ReportJtlArgs) -> Vec<String> {
    args.files
        .iter()
        .map(|path| path.display().to_string())
        .collect()
}
