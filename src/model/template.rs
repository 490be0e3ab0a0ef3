//! Task-definition templates (`task-defs/*.yaml`): minijinja text that renders to a YAML
//! RegisterTaskDefinition input.
//!
//! Templates are compiled once per file and rendered per service. Endpoints enter the
//! context as reference markers (see `spec::deferred`), so the rendered text carries
//! references, never guessed values. Undefined variables are errors (strict mode), and a
//! fuel limit stops a runaway loop.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use minijinja::{Environment, UndefinedBehavior, Value};

use crate::spec::diagnostic::Diagnostic;
use crate::spec::load::Loader;
use crate::spec::node::{self, Node};
use crate::spec::source::{Sources, Span};

/// Instructions a template may execute per render: ample for any sane template.
const FUEL: u64 = 200_000;

pub struct TemplateCache {
    env: Environment<'static>,
    /// Template name (its path) per file; `None` when the file failed to load or compile.
    compiled: HashMap<PathBuf, Option<String>>,
}

impl Default for TemplateCache {
    fn default() -> Self {
        Self::new()
    }
}

impl TemplateCache {
    pub fn new() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(FUEL));
        TemplateCache {
            env,
            compiled: HashMap::new(),
        }
    }

    fn compile(&mut self, loader: &mut Loader, path: &Path, named_at: Span) -> Option<String> {
        if let Some(name) = self.compiled.get(path) {
            return name.clone();
        }
        let name = loader.read(path, named_at).and_then(|file| {
            let source = loader.sources.get(file)?;
            let name = source.name.clone();
            match self.env.add_template_owned(name.clone(), source.text.clone()) {
                Ok(()) => Some(name),
                Err(err) => {
                    let span = error_span(&loader.sources, file, &err);
                    loader.diagnostics.push(
                        Diagnostic::error("template-syntax", span, format!("template error: {}", err_message(&err)))
                            .with_hint("templates use minijinja (Jinja2) syntax: {{ service.cpu }}, {% if service.rw_split %}"),
                    );
                    None
                }
            }
        });
        self.compiled.insert(path.to_path_buf(), name.clone());
        name
    }

    /// Renders a template for one service and parses the result as YAML.
    pub fn render(
        &mut self,
        loader: &mut Loader,
        path: &Path,
        named_at: Span,
        context: &Value,
        label: &str,
    ) -> Option<Node> {
        let name = self.compile(loader, path, named_at)?;
        let template = self.env.get_template(&name).ok()?;
        let text = match template.render(context) {
            Ok(text) => text,
            Err(err) => {
                let file = loader.sources.find_path(path)?;
                let span = error_span(&loader.sources, file, &err);
                loader.diagnostics.push(
                    Diagnostic::error(
                        "template-render",
                        span,
                        format!("rendering for {label}: {}", err_message(&err)),
                    )
                    .with_note(named_at, "template used here")
                    .with_hint("variables: env.*, service.*, db.writer/reader.host/port, db.writer.master_secret_arn, kafka.bootstrap_servers/host/port (see docs/templates.md)"),
                );
                return None;
            }
        };
        let file = loader
            .sources
            .add(format!("{name} (rendered for {label})"), None, text);
        match node::parse_rendered(&loader.sources, file) {
            Ok(tree) => Some(tree),
            Err(err) => {
                loader.diagnostics.push(
                    Diagnostic::error(
                        "template-output",
                        err.span,
                        format!(
                            "the template rendered invalid YAML for {label}: {}",
                            err.message
                        ),
                    )
                    .with_note(named_at, "template used here")
                    .with_hint("quote values with `| tojson` so any text stays valid YAML"),
                );
                None
            }
        }
    }
}

fn err_message(err: &minijinja::Error) -> String {
    match err.detail() {
        Some(detail) => format!("{}: {detail}", err.kind()),
        None => err.kind().to_string(),
    }
}

fn error_span(
    sources: &Sources,
    file: crate::spec::source::FileId,
    err: &minijinja::Error,
) -> Span {
    let text = sources.get(file).map(|s| s.text.as_str()).unwrap_or("");
    if let Some(range) = err.range() {
        let (line, column) = Sources::line_col(text, range.start);
        return Span {
            file,
            start: range.start,
            end: range.end,
            line,
            column,
        };
    }
    let line = err.line().unwrap_or(1).max(1);
    let start: usize = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum();
    Span {
        file,
        start,
        end: start,
        line: line as u32,
        column: 1,
    }
}
