//! The engine task definition: `task-defs/engine-<tool>.yaml` in the project, a minijinja
//! template like the services' (docs/templates.md), rendered with the env's name, region,
//! cluster and roles, and registered by envctl with its ownership tags. An unchanged
//! definition is not registered again: the latest revision of the family is reused when it
//! says the same.
use envctl_aws_model::operation::EcsOp;
use std::path::{Path, PathBuf};

use minijinja::{Environment, UndefinedBehavior, context};

use super::LoadError;
use crate::aws::engines::{self as api, EngineTaskDefinition};
use crate::exec::Operation;
use crate::session::Session;

/// What a template may use.
pub struct EngineVars<'a> {
    pub env: &'a str,
    pub region: &'a str,
    pub cluster: &'a str,
    pub execution_role: Option<&'a str>,
    pub task_role: Option<&'a str>,
}

/// The template of a tool's engine.
pub fn template_path(project: &Path, tool: &str) -> PathBuf {
    project
        .join("task-defs")
        .join(format!("engine-{tool}.yaml"))
}

/// Renders the template into the definition envctl registers.
pub fn render(
    path: &Path,
    tool: &str,
    vars: &EngineVars<'_>,
) -> Result<EngineTaskDefinition, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(100_000));
    let template_err = |e: minijinja::Error| LoadError::Template {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    env.add_template("engine", &text).map_err(template_err)?;
    let rendered = env
        .get_template("engine")
        .and_then(|t| {
            t.render(context! {
                env => context! { name => vars.env, region => vars.region },
                ecs => context! {
                    cluster => vars.cluster,
                    execution_role => vars.execution_role,
                    task_role => vars.task_role,
                },
                engine => context! { tool => tool, family => format!("{}-engine-{tool}", vars.env) },
            })
        })
        .map_err(template_err)?;
    let td: EngineTaskDefinition =
        serde_saphyr::from_str(&rendered).map_err(|e| LoadError::Template {
            path: path.display().to_string(),
            message: format!("the rendered text is not an engine task definition: {e}"),
        })?;
    if td.container_definitions.len() != 1 {
        return Err(LoadError::Template {
            path: path.display().to_string(),
            message: format!(
                "an engine task definition has one container (the engine), found {}",
                td.container_definitions.len()
            ),
        });
    }
    Ok(td)
}

/// The ARN of a revision that says `td`: the family's latest one when it is equal, else a
/// new registration. Returns (arn, whether it registered).
pub async fn ensure_registered(
    session: &Session,
    td: &EngineTaskDefinition,
    tags: &[(String, String)],
) -> Result<(String, bool), LoadError> {
    let clock = session.clock.as_ref();
    let limits = session.limits.as_ref();
    let ecs = &session.clients.ecs;
    let latest = crate::aws::paced::call(
        clock,
        limits,
        &td.family,
        Operation::Ecs(EcsOp::DescribeTaskDefinition),
        || api::latest(ecs, &td.family),
    )
    .await?;
    if let Some((arn, existing)) = latest
        && existing == *td
    {
        return Ok((arn, false));
    }
    let arn = crate::aws::paced::call(
        clock,
        limits,
        &td.family,
        Operation::Ecs(EcsOp::RegisterTaskDefinition),
        || api::register(ecs, td, tags),
    )
    .await?;
    Ok((arn, true))
}
