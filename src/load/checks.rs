//! The workload checked before anything is spent: `validate`, `matrix plan` and the start of
//! `matrix run` (before its first mutating call) look at every step. A `run:` command's
//! programs are on PATH; every file a step names exists inside the project (`plan`,
//! `files`, input files in a command line) and a `jtl:` stays in it; a JMX parses, and the
//! properties it reads with `__P(name)` without a default are supplied (`properties:` of a
//! `load:` step, `-Jname=` of a command). Findings carry file:line:col like every other
//! diagnostic.
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::command;
use super::jmx;
use crate::spec::Loader;
use crate::spec::decode::At;
use crate::spec::diagnostic::{Diagnostic, Severity};
use crate::spec::playbook::expand_vars;
use crate::spec::playbook::{LoadStep, LoadedPlaybook, RunStep, Step};
use crate::spec::source::{Sources, Span, is_inside};

/// Where the steps will run, which decides what is checked and how strictly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `validate`: the spec alone. What the machine lacks (a program, the team's plan) is a
    /// warning, since CI validates on machines that never run the load.
    Validate,
    /// `matrix plan|run` against AWS: everything must be there.
    Aws,
    /// `--sandbox`: a `run:` step's `demo:` replaces its command, and the sandbox's engines
    /// run the demo workload, so a missing plan is a warning (it matters on AWS).
    Sandbox,
}

/// Checks every step of the playbook and adds the findings to the loader's diagnostics.
/// `lock` is the S3 location given on the command line (`--lock`, `ENVCTL_LOCK`), which
/// takes the place of the env's `lock:` as it does for the run's lock.
pub fn check_steps(
    loader: &mut Loader,
    loaded: &LoadedPlaybook,
    target: Target,
    lock: Option<&str>,
) {
    let workdir = loaded
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut checker = Checker {
        loader,
        workdir,
        project: loaded.env.root.clone(),
        target,
        vars: builtin_values(),
        env: &loaded.env.spec,
        lock: lock.map(str::to_string),
    };
    checker.steps(&loaded.playbook.steps);
}

/// Values of the built-in variables known before a run (`${ENVCTL}`); the rest stay
/// unexpanded and the words holding them are not checked.
fn builtin_values() -> std::collections::BTreeMap<String, String> {
    let mut vars = std::collections::BTreeMap::new();
    if let Ok(exe) = std::env::current_exe() {
        vars.insert("ENVCTL".into(), exe.display().to_string());
    }
    vars
}

struct Checker<'a> {
    loader: &'a mut Loader,
    workdir: PathBuf,
    project: PathBuf,
    target: Target,
    vars: std::collections::BTreeMap<String, String>,
    /// The env's name, region, cluster, roles and `lock:`, for the engine template and
    /// the artifacts' location.
    env: &'a crate::spec::EnvSpec,
    /// `--lock` / `ENVCTL_LOCK`, before the env's `lock:`.
    lock: Option<String>,
}

impl Checker<'_> {
    fn push(&mut self, d: Diagnostic) {
        self.loader.diagnostics.push(d);
    }

    fn steps(&mut self, steps: &[Step]) {
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Wait(_) => {}
                Step::Parallel(p) => self.steps(&p.parallel),
                Step::Run(run) => self.run_step(run, i),
                Step::Load(load) => self.load_step(load, i),
            }
        }
    }

    fn run_step(&mut self, step: &RunStep, index: usize) {
        let name = step
            .name
            .clone()
            .unwrap_or_else(|| format!("step-{}", index + 1));
        // With --sandbox a `demo:` runs instead of the command; validate checks both, the
        // command leniently (CI validates where the load tool is not installed).
        let commands: Vec<(&At<String>, Severity)> = match (self.target, &step.demo) {
            (Target::Aws, _) | (Target::Sandbox, None) => vec![(&step.run, Severity::Error)],
            (Target::Sandbox, Some(demo)) => vec![(demo, Severity::Error)],
            (Target::Validate, demo) => std::iter::once((&step.run, Severity::Warning))
                .chain(demo.iter().map(|d| (d, Severity::Error)))
                .collect(),
        };
        for (command, severity) in commands {
            let line = expand_vars(&command.value, &self.vars);
            let names = command::names(&line);
            for program in &names.programs {
                if !self.program_exists(program) {
                    let (where_, hint) = if program.contains('/') {
                        (
                            format!("{program}, which does not exist or is not executable"),
                            "a path is relative to the playbook's directory".to_string(),
                        )
                    } else {
                        (
                            format!("`{program}`, which is not on PATH"),
                            "install it, or run the load as engines on ECS with a `load:` step (docs/matrix.md)".to_string(),
                        )
                    };
                    self.push(
                        with_severity(
                            Diagnostic::error(
                                "program-not-found",
                                command.span,
                                format!("step `{name}` runs {where_}"),
                            ),
                            severity,
                        )
                        .with_hint(hint),
                    );
                }
            }
            for file in &names.files {
                let Some(path) = self.existing_file(file, command.span, &name, severity) else {
                    continue;
                };
                if path.extension().is_some_and(|e| e == "jmx") && !names.property_file {
                    self.plan(
                        &path,
                        command.span,
                        &names.properties,
                        "-Jname=value on the command line",
                    );
                }
            }
        }
        if let Some(jtl) = &step.jtl
            && !jtl.value.contains('$')
        {
            let p = Path::new(&jtl.value);
            if p.is_absolute() && !is_inside(&self.project, p) {
                self.push(
                    // An output: the run goes on, but the file is not copied (results hold
                    // only what the project or the point wrote).
                    Diagnostic::warning(
                        "path-outside-project",
                        jtl.span,
                        format!(
                            "step `{name}`'s jtl {} is outside the project {}",
                            jtl.value,
                            self.project.display()
                        ),
                    )
                    .with_hint("it will not be copied into the results: name it relative to the point's directory (RESULTS_DIR)"),
                );
            }
        }
    }

    fn load_step(&mut self, step: &LoadStep, index: usize) {
        let name = step
            .name
            .clone()
            .unwrap_or_else(|| format!("step-{}", index + 1));
        let load = &step.load;
        // Only AWS's engines run the plan (see [`Target`]).
        let severity = if self.target == Target::Aws {
            Severity::Error
        } else {
            Severity::Warning
        };
        let supplied: Vec<String> = load.properties.keys().cloned().collect();
        if let Some(plan) = self.existing_file(&load.plan.value, load.plan.span, &name, severity) {
            self.plan(
                &plan,
                load.plan.span,
                &supplied,
                "`properties:` of the load",
            );
        }
        for file in &load.files {
            self.existing_file(&file.value, file.span, &name, severity);
        }
        self.engine_template(load, &name);
        // Plans and results go through S3: on AWS, under the env's lock location.
        let lock = self
            .lock
            .as_deref()
            .or(self.env.lock.as_ref().map(|l| l.value.as_str()));
        if let Err(e) =
            super::artifacts::Artifacts::for_run(lock, "preflight", self.target != Target::Aws)
        {
            self.push(
                Diagnostic::error(
                    "load-needs-s3",
                    step_span(step),
                    format!("step `{name}`: {e}"),
                )
                .with_hint("the engines fetch the plan and put their results there; the task role needs s3:GetObject and s3:PutObject on it"),
            );
        }
    }

    /// The tool's engine template exists and renders into an engine task definition.
    fn engine_template(&mut self, load: &crate::spec::playbook::LoadSpec, name: &str) {
        let path = super::engine_def::template_path(&self.project, &load.tool.value);
        let env = self.env;
        let vars = super::engine_def::EngineVars {
            env: &env.env.value,
            region: &env.region.value,
            cluster: &env.ecs.cluster.value,
            execution_role: env.ecs.execution_role.as_ref().map(|r| r.value.as_str()),
            task_role: env.ecs.task_role.as_ref().map(|r| r.value.as_str()),
        };
        // A defaulted `tool:` has no place in the file: the step's plan stands for it.
        let span = if load.tool.span.is_builtin() {
            load.plan.span
        } else {
            load.tool.span
        };
        let td = match super::engine_def::render(&path, &load.tool.value, &vars) {
            Ok(td) => td,
            Err(e) => {
                self.engine_template_error(load, name, &path, span, e);
                return;
            }
        };
        if td.task_role_arn.is_none() {
            // Fargate gives a task without a task role no credentials endpoint: the engine
            // cannot fetch its plan nor put its results, and exits before the barrier
            // (docs/aws-behaviour.md, "A task without a task role has no AWS credentials").
            self.push(
                Diagnostic::error(
                    "load-needs-task-role",
                    span,
                    format!(
                        "step `{name}`: the engines would run without AWS credentials: the env sets no `ecs.task_role` (nor does {})",
                        path.display()
                    ),
                )
                .with_note(env.ecs.cluster.span, "the env's `ecs:`")
                .with_hint("set `ecs.task_role: arn:aws:iam::<account>:role/<name>`, a role ECS tasks may assume with s3:GetObject and s3:PutObject on the artifacts bucket (docs/matrix.md, \"Load engines\")"),
            );
        }
        for c in &td.container_definitions {
            self.engine_image(&c.image, &path, span, name);
        }
    }

    /// The engine image names the registry it is pulled from. The shipped template's
    /// `<registry>` placeholder and a bare name (which ECS pulls from Docker Hub, where
    /// envctl's engine is not published) are errors against AWS. The sandbox runs any
    /// image, and `validate` checks the spec, not where the image was pushed (CI validates
    /// before anyone builds it): neither looks.
    fn engine_image(&mut self, image: &str, template: &Path, step_span: Span, name: &str) {
        if self.target != Target::Aws {
            return;
        }
        let problem = match image_registry(image) {
            ImageRegistry::Placeholder => {
                format!("step `{name}`: the engine image `{image}` is the template's placeholder")
            }
            ImageRegistry::DockerHub => format!(
                "step `{name}`: the engine image `{image}` names no registry, so ECS would pull it from Docker Hub"
            ),
            ImageRegistry::Host(_) => return,
        };
        // Point at the image in the template when it is written there as is.
        let at = self.loader.read(template, step_span).and_then(|id| {
            let text = &self.loader.sources.get(id)?.text;
            let offset = text.find(image)?;
            let (line, column) = Sources::line_col(text, offset);
            Some(Span {
                file: id,
                start: offset,
                end: offset + image.len(),
                line,
                column,
            })
        });
        let (span, note) = match at {
            Some(at) => (at, Some(step_span)),
            None => (step_span, None),
        };
        let mut d = Diagnostic::error("engine-image", span, problem)
            .with_hint("build engines/jmeter/Dockerfile, push it to your registry (e.g. ECR) and write its URI here, `<host>/envctl-engine-jmeter:<tag>` (docs/matrix.md, \"The engine image\")");
        if let Some(note) = note {
            d = d.with_note(note, "used by this step");
        }
        self.push(d);
    }

    fn engine_template_error(
        &mut self,
        load: &crate::spec::playbook::LoadSpec,
        name: &str,
        path: &Path,
        span: Span,
        e: super::LoadError,
    ) {
        {
            self.push(
                Diagnostic::error(
                    "engine-template",
                    span,
                    format!(
                        "step `{name}`: the {} engine's task definition: {e}",
                        load.tool.value
                    ),
                )
                .with_hint(format!(
                    "{} renders the engines' task definition (docs/matrix.md, \"Load engines\")",
                    path.display()
                )),
            );
        }
    }

    fn program_exists(&self, program: &str) -> bool {
        if program.contains('/') {
            let p = Path::new(program);
            let full = if p.is_absolute() {
                p.to_path_buf()
            } else {
                self.workdir.join(p)
            };
            return is_executable(&full);
        }
        std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
        })
    }

    /// The file, resolved against the playbook's directory, when it exists inside the
    /// project; otherwise a finding at `span` and `None`.
    fn existing_file(
        &mut self,
        file: &str,
        span: Span,
        step: &str,
        severity: Severity,
    ) -> Option<PathBuf> {
        if file.contains('$') {
            return None;
        }
        let path = self.workdir.join(file);
        if !is_inside(&self.project, &path) {
            self.push(
                Diagnostic::error(
                    "path-outside-project",
                    span,
                    format!(
                        "step `{step}` names {file}, which is outside the project {}",
                        self.project.display()
                    ),
                )
                .with_hint("keep the workload's files in the project, relative to the playbook"),
            );
            return None;
        }
        if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            self.push(
                with_severity(
                    Diagnostic::error(
                        "missing-workload-file",
                        span,
                        format!(
                            "step `{step}` names {file}, which does not exist ({})",
                            path.display()
                        ),
                    ),
                    severity,
                )
                .with_hint("put the file there (the team's test plans are not in this repository), or change the step"),
            );
            return None;
        }
        Some(path)
    }

    /// Parses a JMX and checks that every property it needs is supplied.
    fn plan(&mut self, path: &Path, named_at: Span, supplied: &[String], how: &str) {
        let Some(id) = self.loader.read(path, named_at) else {
            return;
        };
        let Some(text) = self.loader.sources.get(id).map(|s| s.text.clone()) else {
            return;
        };
        let span_at = |offset: usize, len: usize| {
            let (line, column) = Sources::line_col(&text, offset);
            Span {
                file: id,
                start: offset,
                end: offset + len,
                line,
                column,
            }
        };
        if let Err(e) = jmx::parse(&text) {
            self.push(
                Diagnostic::error(
                    "invalid-test-plan",
                    span_at(e.offset, 0),
                    format!(
                        "{} is not a JMeter test plan: {}",
                        path.display(),
                        e.message
                    ),
                )
                .with_note(named_at, "named here"),
            );
            return;
        }
        let mut reported: Vec<String> = Vec::new();
        for u in jmx::property_uses(&text) {
            if u.has_default || supplied.contains(&u.name) || reported.contains(&u.name) {
                continue;
            }
            reported.push(u.name.clone());
            self.push(
                Diagnostic::error(
                    "missing-property",
                    named_at,
                    format!(
                        "the plan reads the property `{}` (with no default), which is not supplied",
                        u.name
                    ),
                )
                .with_note(span_at(u.offset, u.name.len()), "read here")
                .with_hint(format!(
                    "supply it with {how}; without it JMeter's __P gives \"1\""
                )),
            );
        }
    }
}

/// Where a load step is: its `plan:` (always given), the nearest position the spec keeps.
fn step_span(step: &LoadStep) -> Span {
    step.load.plan.span
}

fn with_severity(mut d: Diagnostic, severity: Severity) -> Diagnostic {
    d.severity = severity;
    d
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where an image is pulled from, as Docker reads a reference: the first `/`-separated
/// component is a registry host only when it holds a `.` or a `:` or is `localhost`;
/// otherwise the name is Docker Hub's (distribution/reference, `splitDockerDomain`).
#[derive(Debug, PartialEq, Eq)]
pub enum ImageRegistry<'a> {
    Host(&'a str),
    DockerHub,
    /// A `<...>` left for the user to fill in.
    Placeholder,
}

pub fn image_registry(image: &str) -> ImageRegistry<'_> {
    if image.contains('<') || image.contains('>') {
        return ImageRegistry::Placeholder;
    }
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            ImageRegistry::Host(first)
        }
        _ => ImageRegistry::DockerHub,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_names_its_registry_only_with_a_host_first() {
        assert_eq!(
            image_registry(
                "123456789012.dkr.ecr.us-east-1.amazonaws.com/envctl-engine-jmeter:5.6.2"
            ),
            ImageRegistry::Host("123456789012.dkr.ecr.us-east-1.amazonaws.com")
        );
        assert_eq!(
            image_registry("localhost:5000/engine:1"),
            ImageRegistry::Host("localhost:5000")
        );
        assert_eq!(
            image_registry("localhost/engine"),
            ImageRegistry::Host("localhost")
        );
        assert_eq!(
            image_registry("envctl-engine-jmeter:5.6.2"),
            ImageRegistry::DockerHub
        );
        assert_eq!(
            image_registry("justb4/jmeter:5.6"),
            ImageRegistry::DockerHub
        );
        assert_eq!(
            image_registry("<registry>/envctl-engine-jmeter:5.6.2"),
            ImageRegistry::Placeholder
        );
    }
}
