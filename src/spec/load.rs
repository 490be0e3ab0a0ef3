//! Reading env files: `extends:` chains, `--set` overrides, service defaults, then decoding.
use super::copy::CopyName;
use std::path::{Path, PathBuf};

use super::decode::{Decode, Decoder};
use super::diagnostic::{Diagnostic, Diagnostics};
use super::env::EnvSpec;
use super::merge::{SetOverride, apply_service_defaults, apply_set, merge};
use super::node::{self, Node, NodeKind};
use super::source::{self, FileId, ReadError, Sources, Span};

/// Loads files and remembers them, so every diagnostic can quote its source.
#[derive(Default)]
pub struct Loader {
    pub sources: Sources,
    pub diagnostics: Diagnostics,
    /// `--root`: the project files may name; `None` infers it per command-line file.
    explicit_root: Option<PathBuf>,
    /// The project of the command-line file being loaded (see [`source::project_root`]).
    root: Option<PathBuf>,
    /// Files that could not be read, with the place that named them: each error is reported
    /// once (`validate` looks at a file before loading it).
    unreadable: Vec<(PathBuf, Span)>,
    /// `--copy NAME`: every env this loader decodes is that copy of the env.
    copy: Option<CopyName>,
}

/// An env file after `extends`, `--set` and defaults, decoded.
#[derive(Debug, Clone)]
pub struct LoadedEnv {
    pub spec: EnvSpec,
    /// The env file as given.
    pub path: PathBuf,
    /// The merged tree the spec was decoded from (playbooks apply variants to it).
    pub tree: Node,
    /// The project its files were read from, so a later load (a matrix point) keeps it.
    pub root: PathBuf,
    /// The copy (`--copy`) already applied to `spec`'s names; `tree` is the env as written.
    pub copy: Option<CopyName>,
}

impl LoadedEnv {
    /// Directory that relative paths in the env file are resolved against.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

impl Loader {
    pub fn new() -> Self {
        Self::default()
    }

    /// A loader whose files must all lie under `root` (`--root`); `None` infers the project
    /// from each file named on the command line.
    pub fn with_root(root: Option<PathBuf>) -> Self {
        Loader {
            explicit_root: root,
            ..Self::default()
        }
    }

    /// Every env this loader decodes becomes `copy` of itself (`--copy`, [`super::copy`]).
    pub fn with_copy(mut self, copy: Option<CopyName>) -> Self {
        self.copy = copy;
        self
    }

    /// The copy this loader applies.
    pub fn copy(&self) -> Option<&CopyName> {
        self.copy.as_ref()
    }

    /// Reads a file (once per path) into the source map; a missing file is a diagnostic at
    /// the place that named it.
    ///
    /// A file named on the command line (`named_at` is built in) sets the project; a file
    /// named inside another (`extends:`, `template:`, `env:`) must lie in that project, and
    /// one outside is refused by its path alone: its content is never read, so it cannot
    /// appear in an error.
    pub fn read(&mut self, path: &Path, named_at: Span) -> Option<FileId> {
        if let Some(id) = self.sources.find_path(path) {
            return Some(id);
        }
        if self
            .unreadable
            .iter()
            .any(|(p, s)| p == path && *s == named_at)
        {
            return None;
        }
        let id = self.read_new(path, named_at);
        if id.is_none() {
            self.unreadable.push((path.to_path_buf(), named_at));
        }
        id
    }

    fn read_new(&mut self, path: &Path, named_at: Span) -> Option<FileId> {
        if named_at.is_builtin() {
            self.root = Some(source::project_root(self.explicit_root.as_deref(), path));
        } else if let Some(root) = &self.root
            && !source::is_inside(root, path)
        {
            self.diagnostics.push(
                Diagnostic::error(
                    "path-outside-project",
                    named_at,
                    format!(
                        "{} is outside the project {}",
                        path.display(),
                        root.display()
                    ),
                )
                .with_hint(
                    "name a file inside the project (relative to this file), or give the project's directory with --root",
                ),
            );
            return None;
        }
        match source::read_regular_file(path, node::MAX_FILE_BYTES) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Some(self.sources.add(
                    path.display().to_string(),
                    Some(path.to_path_buf()),
                    text,
                )),
                Err(err) => {
                    let offset = err.utf8_error().valid_up_to();
                    let text = String::from_utf8_lossy(err.as_bytes()).into_owned();
                    let id = self.sources.add(
                        path.display().to_string(),
                        Some(path.to_path_buf()),
                        text.clone(),
                    );
                    let (line, column) = Sources::line_col(&text, offset);
                    self.diagnostics.push(
                        Diagnostic::error(
                            "not-utf8",
                            Span {
                                file: id,
                                start: offset,
                                end: offset,
                                line,
                                column,
                            },
                            format!("{} is not UTF-8 text", path.display()),
                        )
                        .with_hint("save the file as UTF-8"),
                    );
                    None
                }
            },
            Err(ReadError::TooLarge { limit }) => {
                self.diagnostics.push(
                    Diagnostic::error(
                        "file-too-large",
                        named_at,
                        format!(
                            "{} is larger than {limit} bytes, the most envctl reads per file",
                            path.display()
                        ),
                    )
                    .with_hint("is this the right file?"),
                );
                None
            }
            Err(err @ ReadError::NotRegular(_)) => {
                self.diagnostics.push(
                    Diagnostic::error("not-a-file", named_at, format!("{}: {err}", path.display()))
                        .with_hint("envctl reads regular files only"),
                );
                None
            }
            Err(err) => {
                self.diagnostics.push(Diagnostic::error(
                    "file-not-found",
                    named_at,
                    format!("{}: {err}", path.display()),
                ));
                None
            }
        }
    }

    /// The project of the file being loaded (the current directory before any).
    fn current_root(&self) -> PathBuf {
        self.root
            .clone()
            .or_else(|| self.explicit_root.clone())
            .unwrap_or_else(|| PathBuf::from("."))
    }

    /// Reads and parses a YAML file into a tree.
    pub fn parse_file(&mut self, path: &Path, named_at: Span) -> Option<(FileId, Node)> {
        let id = self.read(path, named_at)?;
        match node::parse(&self.sources, id) {
            Ok(tree) => {
                if !matches!(tree.kind, NodeKind::Map(_)) {
                    self.diagnostics.push(Diagnostic::error(
                        "wrong-type",
                        tree.span,
                        format!(
                            "expected a mapping at the top of the file, found {}",
                            tree.type_name()
                        ),
                    ));
                    return None;
                }
                Some((id, tree))
            }
            Err(err) => {
                self.diagnostics.push(
                    Diagnostic::error("yaml-syntax", err.span, err.message)
                        .with_hint("check indentation, quoting and `key: value` pairs here"),
                );
                None
            }
        }
    }

    /// The env tree with its `extends:` chain merged in (parents first).
    fn env_tree(&mut self, path: &Path, named_at: Span, chain: &mut Vec<PathBuf>) -> Option<Node> {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if chain.contains(&canonical) {
            let cycle: Vec<String> = chain
                .iter()
                .chain(std::iter::once(&canonical))
                .map(|p| {
                    p.file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default()
                })
                .collect();
            self.diagnostics.push(
                Diagnostic::error(
                    "extends-cycle",
                    named_at,
                    format!("`extends` forms a cycle: {}", cycle.join(" -> ")),
                )
                .with_hint("an env may extend another, but no file may reach itself"),
            );
            return None;
        }
        let (_, mut tree) = self.parse_file(path, named_at)?;
        chain.push(canonical);
        let extends = take_key(&mut tree, "extends");
        let result = match extends {
            Some(parent) => match &parent.kind {
                NodeKind::Str(rel) => {
                    let parent_path = super::source::sibling(path, rel);
                    let base = self.env_tree(&parent_path, parent.span, chain);
                    base.map(|base| {
                        let span = tree.span;
                        let mut merged = merge(base, tree);
                        merged.span = span;
                        merged
                    })
                }
                _ => {
                    self.diagnostics.push(Diagnostic::error(
                        "wrong-type",
                        parent.span,
                        format!("expected a path (a string), found {}", parent.type_name()),
                    ));
                    None
                }
            },
            None => Some(tree),
        };
        chain.pop();
        result
    }

    /// Loads an env file: extends, overrides, service defaults, decoding.
    pub fn load_env(&mut self, path: &Path, sets: &[SetOverride]) -> Option<LoadedEnv> {
        self.load_env_at(path, sets, Span::BUILTIN)
    }

    /// As [`Loader::load_env`], for a file named at `named_at` (a playbook's `env:`).
    pub fn load_env_at(
        &mut self,
        path: &Path,
        sets: &[SetOverride],
        named_at: Span,
    ) -> Option<LoadedEnv> {
        let mut tree = self.env_tree(path, named_at, &mut Vec::new())?;
        let mut ok = true;
        for set in sets {
            if let Err(diag) = apply_set(&mut tree, set) {
                self.diagnostics.push(*diag);
                ok = false;
            }
        }
        if !ok {
            return None;
        }
        self.decode_env(path, tree)
    }

    /// Decodes an already merged tree (after a playbook variant's overrides, for instance).
    pub fn decode_env(&mut self, path: &Path, mut tree: Node) -> Option<LoadedEnv> {
        apply_service_defaults(&mut tree);
        let mut decoder = Decoder::new();
        let spec = EnvSpec::decode(&tree, &mut decoder);
        let failed = decoder.diagnostics.has_errors();
        self.diagnostics.extend(decoder.diagnostics);
        if failed {
            return None;
        }
        let mut spec = spec?;
        if let Some(copy) = &self.copy {
            super::copy::apply(&mut spec, copy);
        }
        Some(LoadedEnv {
            spec,
            path: path.to_path_buf(),
            tree,
            root: self.current_root(),
            copy: self.copy.clone(),
        })
    }

    /// Parses a command-line `path=value` override; its value is YAML (`3`, `warn`, `true`).
    pub fn parse_set_arg(&mut self, arg: &str) -> Option<SetOverride> {
        let Some((path, value)) = arg.split_once('=') else {
            let id = self.sources.add("--set".into(), None, arg.to_string());
            self.diagnostics.push(
                Diagnostic::error(
                    "invalid-set-path",
                    Span {
                        file: id,
                        start: 0,
                        end: arg.len(),
                        line: 1,
                        column: 1,
                    },
                    format!("`--set {arg}` has no `=`"),
                )
                .with_hint("write --set path=value, e.g. --set services.mod-users.log_level=warn"),
            );
            return None;
        };
        // The whole argument is a source of its own, so a finding about the path (a
        // misspelt field, a service that does not exist) points at the path, not at the value.
        let lead = path.len() - path.trim_start().len();
        let path = path.trim();
        let arg_id = self.sources.add("--set".into(), None, arg.to_string());
        let path_span = Span {
            file: arg_id,
            start: lead,
            end: lead + path.len(),
            line: 1,
            column: u32::try_from(lead + 1).unwrap_or(1),
        };
        let id = self
            .sources
            .add(format!("--set {path}"), None, value.to_string());
        let value_span = Span {
            file: id,
            start: 0,
            end: value.len(),
            line: 1,
            column: 1,
        };
        let value = if value.trim().is_empty() {
            Node::new(NodeKind::Str(String::new()), value_span)
        } else {
            match node::parse(&self.sources, id) {
                Ok(v) => v,
                Err(err) => {
                    self.diagnostics
                        .push(Diagnostic::error("yaml-syntax", err.span, err.message));
                    return None;
                }
            }
        };
        Some(SetOverride {
            path: path.to_string(),
            path_span,
            value,
        })
    }
}

/// Removes a top-level key from a mapping, returning its value.
pub fn take_key(tree: &mut Node, key: &str) -> Option<Node> {
    let NodeKind::Map(entries) = &mut tree.kind else {
        return None;
    };
    let i = entries.iter().position(|(k, _)| k.name == key)?;
    Some(entries.remove(i).1)
}
