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

/// Why a file could not be read as a source.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("no such file")]
    NotFound,
    /// A FIFO, a device, a socket or a directory: reading one can block forever or never end.
    #[error("not a regular file (it is {0})")]
    NotRegular(&'static str),
    #[error("it is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("cannot read it ({0})")]
    Io(std::io::Error),
}

/// Reads a regular file, at most `limit` bytes of it.
///
/// The size on disk is not trusted (a file can grow while it is read, and `/proc` files
/// report 0): the read itself stops one byte past the limit. Anything but a regular file is
/// refused before it is opened, since opening a FIFO blocks until a writer appears.
pub fn read_regular_file(path: &Path, limit: usize) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let kind_error = |meta: &std::fs::Metadata| {
        let kind = file_kind(meta);
        (kind != "a regular file").then_some(ReadError::NotRegular(kind))
    };
    let meta = std::fs::metadata(path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(err),
    })?;
    if let Some(err) = kind_error(&meta) {
        return Err(err);
    }
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    // The path may have been replaced between the check and the open.
    if let Some(err) = file
        .metadata()
        .map_err(ReadError::Io)
        .map(|m| kind_error(&m))?
    {
        return Err(err);
    }
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The project a command reads from: files named inside envctl's files (`extends:`,
/// `template:`, a playbook's `env:`) must resolve under it.
///
/// It is `--root` when given; otherwise the current directory when it holds the file named
/// on the command line (CI runs from the repository's root); else, for a file in a
/// directory named `envs` or `playbooks` (envctl's layout: `envs/qcp1.yaml` names
/// `../task-defs/...`), that directory's parent; else the file's directory. The rule reads
/// names only, never what happens to lie around the file (a stray `/tmp/task-defs` must not
/// make `/tmp` a project).
pub fn project_root(explicit: Option<&Path>, top_file: &Path) -> PathBuf {
    if let Some(root) = explicit {
        return canonical(root);
    }
    let file = canonical(top_file);
    let file_dir = file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    match std::env::current_dir().map(|d| canonical(&d)) {
        Ok(cwd) if file.starts_with(&cwd) => cwd,
        _ => match (file_dir.file_name(), file_dir.parent()) {
            (Some(name), Some(parent)) if LAYOUT_DIRS.iter().any(|d| name == *d) => {
                parent.to_path_buf()
            }
            _ => file_dir,
        },
    }
}

/// The directories of envctl's layout whose files name siblings (`../task-defs/`).
const LAYOUT_DIRS: [&str; 2] = ["envs", "playbooks"];

/// `rel` named in the file at `from` (an `extends:`, a `template:`, a playbook's `env:`), as
/// people read it: `envs/../task-defs/x.yaml` is `task-defs/x.yaml` (issue 35: paths like
/// `playbooks/../envs/../task-defs/x.yaml` in every message and result). The tidy path is
/// taken only when it names the same file as the joined one: through a symbolic link `a/..`
/// is not where `a` started.
pub fn sibling(from: &Path, rel: &str) -> PathBuf {
    let joined = from.parent().unwrap_or(Path::new(".")).join(rel);
    let tidy = lexically_tidy(&joined);
    match (std::fs::canonicalize(&joined), std::fs::canonicalize(&tidy)) {
        (Ok(a), Ok(b)) if a == b => tidy,
        // Neither exists: the error names the tidy path.
        (Err(_), Err(_)) => tidy,
        _ => joined,
    }
}

/// `path` with `.` removed and each `name/..` dropped, leading `..` kept.
fn lexically_tidy(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut parts: Vec<Component> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => match parts.last() {
                Some(Component::Normal(_)) => {
                    parts.pop();
                }
                Some(Component::RootDir) => {}
                _ => parts.push(part),
            },
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return PathBuf::from(".");
    }
    parts.iter().collect()
}

/// Whether `path` lies under `root` once `..` and symbolic links are resolved.
pub fn is_inside(root: &Path, path: &Path) -> bool {
    canonical(path).starts_with(root)
}

/// The absolute path with symbolic links resolved; for a path that does not exist (yet),
/// the absolute path with `.` and `..` removed, so it can still be checked against a root.
fn canonical(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod sibling_tests {
    use super::*;

    #[test]
    fn a_named_file_reads_without_detours_unless_a_link_makes_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["playbooks", "envs", "task-defs", "elsewhere/inner"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let env = sibling(&root.join("playbooks/pb.yaml"), "../envs/qcp1.yaml");
        assert_eq!(env, root.join("envs/qcp1.yaml"));
        let template = sibling(&env, "../task-defs/folio-module.yaml");
        assert_eq!(template, root.join("task-defs/folio-module.yaml"));
        assert_eq!(
            sibling(
                Path::new("playbooks/pb.yaml"),
                "../envs/../task-defs/x.yaml"
            ),
            PathBuf::from("task-defs/x.yaml")
        );
        assert_eq!(
            sibling(Path::new("pb.yaml"), "../x.yaml"),
            PathBuf::from("../x.yaml")
        );
        // envs/link -> elsewhere/inner: link/.. is elsewhere/, not envs/.
        std::os::unix::fs::symlink(root.join("elsewhere/inner"), root.join("envs/link")).unwrap();
        std::fs::write(root.join("elsewhere/b.yaml"), "env: b\n").unwrap();
        let through = sibling(&root.join("envs/link/a.yaml"), "../b.yaml");
        assert_eq!(through, root.join("envs/link/../b.yaml"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_limit_whatever_the_file_claims() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.yaml");
        std::fs::write(&path, "x".repeat(100)).unwrap();
        assert_eq!(read_regular_file(&path, 100).unwrap().len(), 100);
        assert!(matches!(
            read_regular_file(&path, 99),
            Err(ReadError::TooLarge { limit: 99 })
        ));
        // A character device reports size 0 and never ends: refused before it is opened.
        assert!(matches!(
            read_regular_file(Path::new("/dev/zero"), 100),
            Err(ReadError::NotRegular("a character device"))
        ));
        assert!(matches!(
            read_regular_file(dir.path(), 100),
            Err(ReadError::NotRegular("a directory"))
        ));
    }

    #[test]
    fn paths_are_inside_only_after_dot_dot_and_links_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("envs")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("envs/link")).unwrap();
        assert!(is_inside(&root, &root.join("envs/../task-defs/x.yaml")));
        assert!(!is_inside(&root, &root.join("envs/../../x.yaml")));
        assert!(!is_inside(&root, &root.join("envs/link/passwd")));
        assert!(!is_inside(&root, Path::new("/etc/passwd")));
        assert_eq!(
            project_root(Some(&root.join("envs/..")), Path::new("x")),
            root
        );
    }

    /// Run from elsewhere (a CI step's working directory, a test's temp dir), an env in
    /// `envs/` still reaches `../task-defs/`: the project is the directory holding `envs/`;
    /// a file elsewhere keeps its own directory, whatever lies around it.
    #[test]
    fn the_project_of_a_file_run_from_elsewhere_is_the_directory_holding_envs() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("project/envs")).unwrap();
        std::fs::create_dir_all(root.join("project/task-defs")).unwrap();
        let env = root.join("project/envs/x.yaml");
        std::fs::write(&env, "env: x\n").unwrap();
        // The test's working directory is the crate, which does not hold the temp dir.
        assert_eq!(project_root(None, &env), root.join("project"));
        std::fs::create_dir_all(root.join("task-defs")).unwrap();
        std::fs::create_dir_all(root.join("configs")).unwrap();
        let loose = root.join("configs/loose.yaml");
        std::fs::write(&loose, "env: x\n").unwrap();
        assert_eq!(project_root(None, &loose), root.join("configs"));
    }
}
