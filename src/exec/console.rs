//! Where a command's words go. Two kinds: a *line* is what a person follows (a resource's
//! state changed, a point started, a step ended, a call is being retried); a *detail*
//! explains it afterwards (every poll, every deployment count, every later retry). Lines go
//! to stderr, above the live bars on a terminal; details go to the run's log file, and to
//! stderr as well with `--verbose`. Both go to the log, so the log is the whole story.
//!
//! The executor and the matrix are handed their [`Sink`] (through [`super::Progress`] and the
//! matrix's options); code with no such handle, the retry loop under every AWS call and the
//! load engines, speaks through the process's [`current`] console, as a logger would.
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use indicatif::{MultiProgress, ProgressDrawTarget};

use super::private_file;

/// Receives a run's words. Implementations never fail the run: losing a line must not stop
/// an apply halfway.
pub trait Sink: Send + Sync {
    /// What a person follows.
    fn line(&self, text: &str);
    /// What explains it later: the log file, and the console with `--verbose`.
    fn detail(&self, text: &str);
}

/// Lines a log waiting for its directory keeps; a run that never makes it drops the rest.
const MAX_PENDING_LINES: usize = 100_000;

/// The run's log file.
enum Log {
    None,
    /// Opened at the first write after its directory exists (a matrix run's directory is
    /// made by the runner, and a run refused before that must leave no trace).
    Pending {
        path: PathBuf,
        lines: Vec<String>,
    },
    Open {
        path: PathBuf,
        file: File,
    },
    /// A write failed once: the run goes on without its log.
    Broken,
}

/// A command's console: stderr (with the live bars when it is a terminal), `--verbose`, and
/// the run's log file.
pub struct Console {
    verbose: bool,
    bars: Option<MultiProgress>,
    out: Mutex<Box<dyn Write + Send>>,
    log: Mutex<Log>,
}

impl Console {
    /// On stderr: with live bars when it is a terminal, plain lines otherwise (CI, pipes).
    pub fn stderr(verbose: bool) -> Console {
        use std::io::IsTerminal;
        let bars = std::io::stderr()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Console {
            verbose,
            bars,
            out: Mutex::new(Box::new(std::io::stderr())),
            log: Mutex::new(Log::None),
        }
    }

    /// Plain lines into `out` (tests, and anything that is not a terminal).
    pub fn to_writer(out: Box<dyn Write + Send>, verbose: bool) -> Console {
        Console {
            verbose,
            bars: None,
            out: Mutex::new(out),
            log: Mutex::new(Log::None),
        }
    }

    /// The live display lines are printed above, when stderr is a terminal.
    pub fn bars(&self) -> Option<&MultiProgress> {
        self.bars.as_ref()
    }

    pub fn verbose(&self) -> bool {
        self.verbose
    }

    /// Keeps every line and detail in `path` from now on (and those said so far, when the
    /// log was pending). The file is made (0600) at the first write once its directory
    /// exists; this never creates the directory.
    pub fn log_to(&self, path: PathBuf) {
        let mut log = lock(&self.log);
        let earlier = match std::mem::replace(&mut *log, Log::None) {
            Log::Pending { lines, .. } => lines,
            _ => Vec::new(),
        };
        *log = Log::Pending {
            path,
            lines: earlier,
        };
    }

    /// Where the log is (or will be, once its directory exists).
    pub fn log_path(&self) -> Option<PathBuf> {
        match &*lock(&self.log) {
            Log::Pending { path, .. } | Log::Open { path, .. } => Some(path.clone()),
            Log::None | Log::Broken => None,
        }
    }

    fn print(&self, text: &str) {
        match &self.bars {
            Some(bars) => {
                let _ = bars.println(text);
            }
            None => {
                let mut out = lock(&self.out);
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
            }
        }
    }

    fn keep(&self, text: &str) {
        let mut log = lock(&self.log);
        let next = match std::mem::replace(&mut *log, Log::None) {
            Log::Pending { path, mut lines } => {
                if path.parent().is_some_and(Path::is_dir) {
                    lines.push(text.to_string());
                    open_with(&path, &lines)
                } else {
                    if lines.len() < MAX_PENDING_LINES {
                        lines.push(text.to_string());
                    }
                    Log::Pending { path, lines }
                }
            }
            Log::Open { path, mut file } => match writeln!(file, "{text}") {
                Ok(()) => Log::Open { path, file },
                Err(_) => Log::Broken,
            },
            other => other,
        };
        *log = next;
    }
}

/// Creates the log with the lines said so far.
fn open_with(path: &Path, lines: &[String]) -> Log {
    let Ok(mut file) = private_file::create(path) else {
        return Log::Broken;
    };
    for line in lines {
        if writeln!(file, "{line}").is_err() {
            return Log::Broken;
        }
    }
    Log::Open {
        path: path.to_path_buf(),
        file,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sink for Console {
    fn line(&self, text: &str) {
        self.print(text);
        self.keep(text);
    }

    fn detail(&self, text: &str) {
        if self.verbose {
            self.print(text);
        }
        self.keep(text);
    }
}

/// A sink that drops everything (tests, and commands that say nothing).
pub struct Quiet;

impl Sink for Quiet {
    fn line(&self, _: &str) {}
    fn detail(&self, _: &str) {}
}

/// Before a command installs its console, lines go to stderr and details nowhere.
struct Default;

impl Sink for Default {
    fn line(&self, text: &str) {
        eprintln!("{text}");
    }
    fn detail(&self, _: &str) {}
}

static CURRENT: RwLock<Option<Arc<Console>>> = RwLock::new(None);

/// Makes `console` the process's console: what [`current`] and [`installed`] return from
/// now on. A command installs one when it connects (`commands::common::session`).
pub fn install(console: Arc<Console>) {
    let mut current = CURRENT.write().unwrap_or_else(|p| p.into_inner());
    *current = Some(console);
}

/// The console the command installed.
pub fn installed() -> Option<Arc<Console>> {
    CURRENT.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The console the command installed, or stderr for lines and nowhere for details.
pub fn current() -> Arc<dyn Sink> {
    match installed() {
        Some(console) => console,
        None => Arc::new(Default),
    }
}

/// A line on the process's console.
pub fn line(text: &str) {
    current().line(text);
}

/// A detail on the process's console.
pub fn detail(text: &str) {
    current().detail(text);
}

/// A sink that keeps what it is told, for tests: lines and details apart.
#[derive(Default)]
pub struct Recorder {
    said: Mutex<Vec<(bool, String)>>,
}

impl Recorder {
    /// The lines, in order.
    pub fn lines(&self) -> Vec<String> {
        self.kept(true)
    }

    /// The details, in order.
    pub fn details(&self) -> Vec<String> {
        self.kept(false)
    }

    fn kept(&self, lines: bool) -> Vec<String> {
        lock(&self.said)
            .iter()
            .filter(|(l, _)| *l == lines)
            .map(|(_, t)| t.clone())
            .collect()
    }
}

impl Sink for Recorder {
    fn line(&self, text: &str) {
        lock(&self.said).push((true, text.to_string()));
    }
    fn detail(&self, text: &str) {
        lock(&self.said).push((false, text.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn details_reach_the_console_only_when_verbose_and_the_log_always() {
        let dir = tempfile::tempdir().unwrap();
        for verbose in [false, true] {
            let out = Buffer::default();
            let console = Console::to_writer(Box::new(out.clone()), verbose);
            let path = dir.path().join(format!("{verbose}.log"));
            console.log_to(path.clone());
            console.line("kafka/cluster/main: CREATING");
            console.detail("waiting for cluster ACTIVE: 92s");
            let shown = if verbose {
                "kafka/cluster/main: CREATING\nwaiting for cluster ACTIVE: 92s\n"
            } else {
                "kafka/cluster/main: CREATING\n"
            };
            assert_eq!(out.text(), shown);
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                "kafka/cluster/main: CREATING\nwaiting for cluster ACTIVE: 92s\n"
            );
        }
    }

    #[test]
    fn a_log_whose_directory_does_not_exist_yet_keeps_the_lines_until_it_does() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = dir.path().join("results/run-1");
        let console = Console::to_writer(Box::new(Buffer::default()), false);
        console.log_to(run_dir.join("console.log"));
        console.line("Matrix m over env e: 1 axis, 2 points");
        assert!(!run_dir.exists(), "the log never makes its directory");
        std::fs::create_dir_all(&run_dir).unwrap();
        console.detail("[1/2] a=1: registered engine");
        let log = std::fs::read_to_string(run_dir.join("console.log")).unwrap();
        assert_eq!(
            log,
            "Matrix m over env e: 1 axis, 2 points\n[1/2] a=1: registered engine\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(run_dir.join("console.log"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
