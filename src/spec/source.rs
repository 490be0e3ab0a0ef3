//! Source files and positions: every value envctl reads remembers where it came from.
use std::path::{Path, PathBuf};

/// Index of a loaded source in a [`Sources`] collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A byte range in one source, with the 1-based line and column of its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub column: u32,
}

impl Span {
    /// A span for values that have no place in any file (built-in defaults).
    pub const BUILTIN: Span = Span {
        file: FileId(u32::MAX),
        start: 0,
        end: 0,
        line: 0,
        column: 0,
    };

    pub fn is_builtin(&self) -> bool {
        self.file == FileId(u32::MAX)
    }
}

/// One source text: a file on disk, or a command-line `--set` argument.
#[derive(Debug, Clone)]
pub struct Source {
    /// What diagnostics print: the path as the user gave it, or `--set #N`.
    pub name: String,
    pub path: Option<PathBuf>,
    pub text: String,
}

/// All sources loaded during one command, so diagnostics can quote them.
#[derive(Debug, Default, Clone)]
pub struct Sources {
    files: Vec<Source>,
}

impl Sources {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, name: String, path: Option<PathBuf>, text: String) -> FileId {
        self.files.push(Source { name, path, text });
        FileId((self.files.len() - 1) as u32)
    }

    pub fn get(&self, id: FileId) -> Option<&Source> {
        self.files.get(id.0 as usize)
    }

    pub fn find_path(&self, path: &Path) -> Option<FileId> {
        self.files
            .iter()
            .position(|f| f.path.as_deref() == Some(path))
            .map(|i| FileId(i as u32))
    }

    pub fn iter(&self) -> impl Iterator<Item = (FileId, &Source)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), f))
    }

    /// `name:line:col` for a span, as compilers print it.
    pub fn locate(&self, span: Span) -> String {
        match self.get(span.file) {
            Some(src) => format!("{}:{}:{}", src.name, span.line, span.column),
            None => "<built-in>".to_string(),
        }
    }

    /// Line and column (1-based, in characters) of a byte offset.
    pub fn line_col(text: &str, offset: usize) -> (u32, u32) {
        let offset = offset.min(text.len());
        let before = &text[..floor_char_boundary(text, offset)];
        let line = before.matches('\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = before[line_start..].chars().count() as u32 + 1;
        (line, column)
    }
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}
