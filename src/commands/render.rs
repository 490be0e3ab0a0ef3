//! `envctl render ENV`: the requests an apply would send, with unknown endpoints shown as
//! `${reference}`.
use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;

use crate::cli::{DataFormat, RenderArgs};
use crate::compile::compile_env;
use crate::model::requests;
use crate::redact;
use crate::spec::Loader;
use crate::spec::decode::suggest;

pub fn run(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let mut loader = Loader::with_root(args.overrides.project.root.clone())
        .with_copy(args.overrides.copy.clone());
    let compiled = compile_env(&mut loader, &args.env, &args.overrides.set);
    // Errors in full, warnings counted: the requests are what `render` is for.
    let diagnostics = std::mem::take(&mut loader.diagnostics).sorted();
    super::common::report_diagnostics(&diagnostics, &loader.sources, &args.env);
    let Some(compiled) = compiled else {
        return Ok(ExitCode::from(1));
    };
    let desired = &compiled.desired;
    let value = match &args.service {
        Some(name) => match desired.services.get(name) {
            Some(service) => {
                serde_json::to_value(requests::register_task_definition(desired, service))?
            }
            None => {
                let hint = suggest(name, desired.services.keys().map(String::as_str))
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                bail!("{} has no service `{name}`{hint}", args.env.display());
            }
        },
        None => serde_json::to_value(requests::all(desired))?,
    };
    // Template output can carry what the env's lints cannot see.
    let mut value = value;
    redact::json(&mut value);
    let mut stdout = std::io::stdout().lock();
    match args.format {
        DataFormat::Json => writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?,
        DataFormat::Yaml => write!(stdout, "{}", serde_saphyr::to_string(&value)?)?,
    }
    Ok(ExitCode::SUCCESS)
}
