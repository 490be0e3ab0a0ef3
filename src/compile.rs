//! The front half of every command: env file -> checked spec -> desired state.
use std::path::Path;

use crate::model::{self, DesiredState, TemplateCache, task_needs};

use crate::spec::lint::{check_capacity, lint_env_base};
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
    loader.diagnostics.extend(lint_env_base(&loaded.spec));
    // Lowering after a failed lint would mostly repeat its findings as template errors.
    if loader.diagnostics.has_errors() {
        return None;
    }
    let mut templates = TemplateCache::new();
    let desired = model::lower(&loaded, loader, &mut templates)?;
    // The capacity check needs the rendered task definitions: host ports and network mode
    // are in the templates, not in the spec.
    loader
        .diagnostics
        .extend(check_capacity(&loaded.spec, &task_needs(&desired)));
    loader
        .diagnostics
        .extend(check_network_modes(&loaded.spec, &desired));
    if loader.diagnostics.has_errors() {
        return None;
    }
    Some(Compiled { loaded, desired })
}

/// ECS Managed Instances run tasks in `awsvpc` or `host` network mode only (Amazon ECS
/// Developer Guide, "Amazon ECS Managed Instances task definition differences"): a service
/// whose template renders `bridge` would be refused by CreateService, so it is an error at
/// the service's template.
pub fn check_network_modes(
    spec: &crate::spec::env::EnvSpec,
    desired: &DesiredState,
) -> crate::spec::diagnostic::Diagnostics {
    use crate::spec::diagnostic::{Diagnostic, Diagnostics};
    let mut out = Diagnostics::new();
    if spec.ecs.capacity.managed_instances.is_none() {
        return out;
    }
    for (name, s) in &desired.services {
        let mode = s.task_definition.network_mode.as_str();
        if mode == "awsvpc" || mode == "host" {
            continue;
        }
        let Some(service) = spec.services.get(name) else {
            continue;
        };
        out.push(
            Diagnostic::error(
                "network-mode-unsupported",
                service.template.span,
                format!(
                    "{name}: network mode `{mode}` cannot run on ECS Managed Instances (ecs.capacity.managed_instances), which take awsvpc and host only"
                ),
            )
            .with_hint("set \"networkMode\": \"awsvpc\" in the template (each task gets its own interface in the env's subnets), or \"host\" for fixed ports"),
        );
    }
    out
}
