//! `envctl schema [env|playbook]`: JSON Schema derived from the spec types, for editors
//! (see docs/editors.md).
use std::process::ExitCode;

use crate::cli::{SchemaArgs, SchemaKind};
use crate::spec::{EnvSpec, Playbook};

pub fn run(args: SchemaArgs) -> anyhow::Result<ExitCode> {
    let schema = match args.kind {
        SchemaKind::Env => schemars::schema_for!(EnvSpec),
        SchemaKind::Playbook => schemars::schema_for!(Playbook),
    };
    println!("{}", serde_json::to_string_pretty(&schema)?);
    Ok(ExitCode::SUCCESS)
}
