//! Files and directories only their owner can read: everything envctl keeps under its state
//! directory (observe cache, journal, locks) and in results. Task definitions read back from
//! AWS, step output and lease holders are nobody else's business on a shared CI machine.
//!
//! Files are created 0600 and directories 0700. A mode given at creation is filtered by the
//! umask, so permissions are also set explicitly once a file or directory exists.
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub const FILE_MODE: u32 = 0o600;
pub const DIR_MODE: u32 = 0o700;

/// `fs::create_dir_all`, with every directory it creates and `dir` itself private.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
}

/// `OpenOptions::new()` for a file that, when it is created, is private.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// `File::create`, private: a file left over with a wider mode is narrowed.
pub fn create(path: &Path) -> io::Result<File> {
    let file = options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Writes `bytes` to `path` atomically (a private temporary file, then a rename), so a
/// killed run never leaves half a file, creating the directory (private) if needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir_all(dir)?;
    }
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = Path::new(&tmp_name);
    let mut file = create(tmp)?;
    file.write_all(bytes)?;
    fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_and_directories_are_private_even_when_they_existed() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state/cache");
        fs::create_dir_all(&state).unwrap();
        fs::set_permissions(&state, Permissions::from_mode(0o755)).unwrap();
        create_dir_all(&state).unwrap();
        assert_eq!(mode(&state), DIR_MODE);
        let nested = dir.path().join("a/b/c");
        create_dir_all(&nested).unwrap();
        assert_eq!(
            (mode(&dir.path().join("a")), mode(&nested)),
            (DIR_MODE, DIR_MODE)
        );

        let file = state.join("env.json");
        fs::write(&file, "old").unwrap();
        fs::set_permissions(&file, Permissions::from_mode(0o644)).unwrap();
        write_atomic(&file, b"new").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(mode(&file), FILE_MODE);
        let appended = state.join("journal.jsonl");
        options().append(true).create(true).open(&appended).unwrap();
        assert_eq!(mode(&appended), FILE_MODE);
    }
}
