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
    loader
        .diagnostics
        .extend(model::name_limits::check_name_lengths(
            &loaded.spec,
            loaded.copy.as_ref(),
        ));
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
    loader
        .diagnostics
        .extend(check_copy_names(&loaded.spec, &desired));
    if loader.diagnostics.has_errors() {
        return None;
    }
    Some(Compiled { loaded, desired })
}

/// Under `--copy`, the names a template derives (the task family, the awslogs group) must
/// carry the copy's suffix too, or two copies would share them: a destroy of one would
/// deregister the other's task definitions. Templates that build them from `env.name` do.
pub fn check_copy_names(
    spec: &crate::spec::env::EnvSpec,
    desired: &DesiredState,
) -> crate::spec::diagnostic::Diagnostics {
    use crate::spec::diagnostic::{Diagnostic, Diagnostics};
    let mut out = Diagnostics::new();
    let Some(copy) = &desired.copy else {
        return out;
    };
    let suffix = format!("-{copy}");
    for (name, s) in &desired.services {
        let Some(service) = spec.services.get(name) else {
            continue;
        };
        let td = &s.task_definition;
        let groups = td
            .container_definitions
            .iter()
            .filter_map(|c| c.log_configuration.as_ref())
            .filter_map(|l| l.options.get("awslogs-group"));
        let shared = std::iter::once(("task family", &td.family))
            .chain(groups.map(|g| ("log group", g)))
            .filter(|(_, n)| !n.contains(&suffix));
        for (what, n) in shared {
            out.push(
                Diagnostic::error(
                    "copy-name-shared",
                    service.template.span,
                    format!(
                        "{name}: the {what} `{n}` does not carry the suffix `{suffix}` of copy `{copy}`: every copy of the env would share it"
                    ),
                )
                .with_hint("derive it from `env.name` in the template (the env's name with the copy's suffix)"),
            );
        }
    }
    out
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
