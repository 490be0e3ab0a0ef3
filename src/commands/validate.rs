//! `envctl validate FILE...`: every problem in every file, at once.
use std::io::Write;
use std::process::ExitCode;

use crate::cli::{DiagnosticFormat, ValidateArgs};
use crate::compile::compile_env;
use crate::load::checks::{self, Target};
use crate::spec::Loader;
use crate::spec::Severity;
use crate::spec::node::{self, NodeKind};
use crate::spec::source::Span;

pub fn run(args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let mut loader = Loader::with_root(args.overrides.project.root.clone())
        .with_copy(args.overrides.copy.clone());
    let mut summaries = Vec::new();
    for file in &args.files {
        let before = loader.diagnostics.error_count();
        let summary = if is_playbook(&mut loader, file) {
            let loaded = loader.load_playbook(file);
            if let Some(p) = &loaded {
                checks::check_steps(&mut loader, p, Target::Validate, None);
            }
            loaded.map(|p| {
                let points: usize = p.playbook.matrix.iter().map(|a| a.variants.len()).product();
                use crate::plan::estimate::plural;
                format!(
                    "playbook {} over env {}: {}, up to {}",
                    p.playbook.name.value,
                    p.env.spec.env.value,
                    plural(p.playbook.matrix.len(), "axis", "axes"),
                    plural(points, "point", "points")
                )
            })
        } else {
            compile_env(&mut loader, file, &args.overrides.set).map(|c| {
                loader
                    .diagnostics
                    .extend(crate::spec::lint::kafka_support_warnings(
                        &c.loaded.spec,
                        &super::common::today(),
                    ));
                let readers = c.desired.db.as_ref().map(|d| d.readers.len()).unwrap_or(0);
                use crate::plan::estimate::plural;
                format!(
                    "env {}: {}, {}, {}",
                    c.desired.env,
                    plural(c.desired.services.len(), "service", "services"),
                    plural(c.desired.kafka.len(), "Kafka cluster", "Kafka clusters"),
                    plural(
                        c.desired.db.as_ref().map(|_| 1 + readers).unwrap_or(0),
                        "RDS instance",
                        "RDS instances"
                    )
                )
            })
        };
        let failed = loader.diagnostics.error_count() > before;
        summaries.push((file.display().to_string(), summary.filter(|_| !failed)));
    }
    let diagnostics = std::mem::take(&mut loader.diagnostics).sorted();
    let errors = diagnostics.error_count();
    let warnings = diagnostics.warning_count();
    // Allowed warnings stay in the output (the finding is still there to read); they only
    // stop counting against --strict. An allowance that matches nothing is reported, so a
    // stale one (the warning was fixed, or the code misspelled) does not linger unnoticed.
    let allowed = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning && args.allow.iter().any(|a| a == d.code))
        .count();
    let unused: Vec<&str> = args
        .allow
        .iter()
        .filter(|a| {
            !diagnostics
                .iter()
                .any(|d| d.severity == Severity::Warning && d.code == a.as_str())
        })
        .map(String::as_str)
        .collect();
    let failing_warnings = warnings - allowed;
    let failed = errors > 0 || (args.strict && failing_warnings > 0);
    let mut stdout = std::io::stdout().lock();
    match args.format {
        DiagnosticFormat::Text => {
            eprint!("{}", diagnostics.render(&loader.sources));
            for code in &unused {
                eprintln!("note: --allow {code} matched no warning");
            }
            for (file, summary) in &summaries {
                match summary {
                    Some(s) => writeln!(stdout, "{file}: ok: {s}")?,
                    None => writeln!(stdout, "{file}: invalid")?,
                }
            }
            let allowed_note = if allowed > 0 {
                format!(" ({allowed} allowed)")
            } else {
                String::new()
            };
            writeln!(
                stdout,
                "{} file(s): {errors} error(s), {warnings} warning(s){allowed_note}{}",
                summaries.len(),
                if args.strict && failing_warnings > 0 && errors == 0 {
                    " (--strict: warnings fail)"
                } else {
                    ""
                }
            )?;
        }
        DiagnosticFormat::Json => {
            let doc = serde_json::json!({
                "ok": !failed,
                "errors": errors,
                "warnings": warnings,
                "allowed_warnings": allowed,
                "unused_allow": unused,
                "diagnostics": diagnostics.records(&loader.sources),
            });
            writeln!(stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A playbook is a file with a top-level `matrix:`; anything else is read as an env.
fn is_playbook(loader: &mut Loader, file: &std::path::Path) -> bool {
    let Some(id) = loader.read(file, Span::BUILTIN) else {
        return false;
    };
    matches!(node::parse(&loader.sources, id), Ok(tree) if matches!(tree.kind, NodeKind::Map(_)) && tree.get("matrix").is_some())
}
