//! `envctl report ...`: the comparison report of a matrix run (or of two runs), and
//! summaries of JMeter result files.
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};

use crate::cli::{ReportArgs, ReportCommand, ReportCompareArgs, ReportJtlArgs, ReportOutputArgs};
use crate::report::jtl::render::{render, render_groups};
use crate::report::jtl::{Grouping, group_files, summarize_jtl_files};
use crate::report::run::baseline::Baseline;
use crate::report::{RunReportFormat, RunSummary};
use crate::results::RunDir;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    match (args.command, args.run_dir) {
        (Some(ReportCommand::Jtl(jtl)), _) => run_jtl(jtl),
        (Some(ReportCommand::Compare(compare)), _) => run_compare(compare),
        (None, Some(run_dir)) => {
            let baseline = baseline_pairs(&args.output)?;
            let dir = read_run(&run_dir)?;
            let summary = RunSummary::of_run(&dir, &baseline, args.output.convention)?;
            write_report(&summary, &args.output)
        }
        // clap's arg_required_else_help shows the help before this; kept for callers
        // that build ReportArgs themselves.
        (None, None) => bail!("give a run's results directory, or `report jtl` / `report compare`"),
    }
}

fn run_compare(args: ReportCompareArgs) -> anyhow::Result<ExitCode> {
    let baseline = baseline_pairs(&args.output)?;
    let (a, b) = (read_run(&args.run_a)?, read_run(&args.run_b)?);
    let summary = RunSummary::compare(&a, &b, &baseline, args.output.convention)?;
    write_report(&summary, &args.output)
}

/// The results error already names the file and its cause; as a context it would print
/// the cause twice in the error chain.
fn read_run(path: &Path) -> anyhow::Result<RunDir> {
    RunDir::read(path)
        .map_err(|error| anyhow!("cannot read the results in {}: {error}", path.display()))
}

fn baseline_pairs(output: &ReportOutputArgs) -> anyhow::Result<Vec<(String, String)>> {
    Ok(output
        .baseline
        .iter()
        .map(|text| Baseline::parse_pair(text))
        .collect::<Result<_, _>>()?)
}

fn write_report(summary: &RunSummary, output: &ReportOutputArgs) -> anyhow::Result<ExitCode> {
    let format = output
        .format
        .or_else(|| output.out.as_deref().and_then(RunReportFormat::of_path))
        .unwrap_or_default();
    let text = format.render(summary);
    for warning in &summary.warnings {
        eprintln!("warning: {warning}");
    }
    match &output.out {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write the report to {}", path.display()))?;
            // Said, so a redirected run is not silent about where its report went.
            eprintln!(
                "wrote {} ({} report, {} bytes)",
                path.display(),
                format!("{format:?}").to_lowercase(),
                text.len()
            );
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("cannot write the report to stdout")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the per-label table on stdout and warnings on stderr, so that
/// `envctl report jtl a.jtl > table.md` keeps the table clean.
fn run_jtl(args: ReportJtlArgs) -> anyhow::Result<ExitCode> {
    if let Some(by) = args.by {
        return run_jtl_groups(&args, by);
    }
    let (report, warnings) = summarize_jtl_files(&args.files, args.convention)?;
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

/// `report jtl --by file|run`: each group summarized on its own, one table each.
fn run_jtl_groups(args: &ReportJtlArgs, by: Grouping) -> anyhow::Result<ExitCode> {
    let mut groups = Vec::new();
    let mut all_warnings = Vec::new();
    for (name, files) in group_files(&args.files, by) {
        let (report, warnings) = summarize_jtl_files(&files, args.convention)?;
        all_warnings.extend(warnings);
        // A group without samples has no table; the "no samples" warning names its file.
        if report.total.is_some() {
            let sources = files.iter().map(|p| p.display().to_string()).collect();
            groups.push((name, report, sources));
        }
    }
    for warning in &all_warnings {
        eprintln!("warning: {warning}");
    }
    if groups.is_empty() {
        bail!(
            "no samples in {}: is this the results file of a test that ran?",
            sources(args).join(", ")
        );
    }
    let text = render_groups(&groups, &all_warnings, args.format);
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
