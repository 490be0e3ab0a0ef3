//! The front half of every command: env file -> checked spec -> desired state.
use std::path::Path;

use crate::model::{self, DesiredState, TemplateCache};
use crate::spec::lint::lint_env;
use crate::spec::merge::SetOverride;
use crate::spec::{LoadedEnv, Loader};

/// An env that loaded, passed its lints (warnings allowed) and lowered.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub loaded: LoadedEnv,
    pub desired: DesiredState,
}

/// Loads, lints and lowers an env with `--set` overrides. Every problem is in
/// `loader.diagnostics`; `None` when any of them is an error.
pub fn compile_env(loader: &mut Loader, path: &Path, set_args: &[String]) -> Option<Compiled> {
    let sets: Vec<_> = set_args
        .iter()
        .filter_map(|a| loader.parse_set_arg(a))
        .collect();
    if sets.len() != set_args.len() {
        return None;
    }
    compile_env_with(loader, path, &sets)
}

/// As [`compile_env`], with overrides already parsed (a playbook variant's `set:`).
pub fn compile_env_with(
    loader: &mut Loader,
    path: &Path,
    sets: &[SetOverride],
) -> Option<Compiled> {
    let loaded = loader.load_env(path, sets)?;
    loader.diagnostics.extend(lint_env(&loaded.spec));
    // Lowering after a failed lint would mostly repeat its findings as template errors.
    if loader.diagnostics.has_errors() {
        return None;
    }
    let mut templates = TemplateCache::new();
    let desired = model::lower(&loaded, loader, &mut templates)?;
    if loader.diagnostics.has_errors() {
        return None;
    }
    Some(Compiled { loaded, desired })
}
