//! Docs that cannot rot: every command of the README's `sh` blocks and every `run:`/`script:`
//! line of docs/ci.md's recipes runs as written, in the documented order, in a copy of the
//! project; a command whose exit code is not the one the docs imply fails the test. The
//! conventions (skips with a reason, servers, placeholders, CI stand-ins) are documented in
//! docs/ci.md, "The recipes are tested".
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::repo;

/// Written in a README comment, followed by the reason, for a command the test cannot run.
const SKIP: &str = "not run by the docs test:";
/// Written in a README comment for a command that serves until interrupted.
const SERVER: &str = "until Ctrl-C";
/// Far above any documented command's run time (the main job takes about a minute); a hung
/// command fails the test instead of hanging it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

// ---------------------------------------------------------------------------------------
// Reading the docs

/// A fenced code block: its info string, the heading above it, its first line's number.
struct Block {
    lang: String,
    heading: String,
    first_line: usize,
    body: String,
}

fn fenced_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut heading = String::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        if fence && open.is_some() {
            blocks.extend(open.take());
        } else if let Some(block) = open.as_mut() {
            block.body.push_str(line);
            block.body.push('\n');
        } else if fence {
            open = Some(Block {
                lang: line.trim_start().trim_start_matches('`').trim().to_string(),
                heading: heading.clone(),
                first_line: i + 2,
                body: String::new(),
            });
        } else if line.starts_with('#') {
            heading = line.trim_start_matches('#').trim().to_string();
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    blocks
}

/// A shell line split into command and comment: `#` after whitespace, outside quotes.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let (mut single, mut double) = (false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => {
                return (line[..i].trim_end(), Some(line[i + 1..].trim()));
            }
            _ => {}
        }
        previous = c;
    }
    (line.trim_end(), None)
}

#[derive(Debug, PartialEq)]
enum Kind {
    Run,
    Skip(String),
    Server,
}

/// A documented command: where it is, as written, and what the test runs.
#[derive(Debug)]
struct DocCommand {
    origin: String,
    written: String,
    script: String,
    kind: Kind,
}

/// Every command of the README's `sh` blocks, in order.
fn readme_commands() -> Vec<DocCommand> {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    sh_commands(&text, "README.md")
}

/// The commands of a Markdown text's `sh` blocks; panics on one the test could not run
/// without a stated reason.
fn sh_commands(text: &str, file: &str) -> Vec<DocCommand> {
    let mut commands = Vec::new();
    for block in fenced_blocks(text).into_iter().filter(|b| b.lang == "sh") {
        let mut pending = String::new();
        for (i, line) in block.body.lines().enumerate() {
            let origin = format!("{file}:{}", block.first_line + i);
            let (command, comment) = split_comment(line);
            if let Some(rest) = command.strip_suffix('\\') {
                pending.push_str(rest);
                continue;
            }
            let command = format!("{pending}{command}");
            pending.clear();
            if command.trim().is_empty() {
                continue;
            }
            let kind = match comment {
                Some(c) if c.contains(SKIP) => {
                    let reason = c.split(SKIP).nth(1).unwrap_or_default().trim();
                    assert!(!reason.is_empty(), "{origin}: `{SKIP}` without a reason");
                    Kind::Skip(reason.to_string())
                }
                Some(c) if c.contains(SERVER) => Kind::Server,
                _ => Kind::Run,
            };
            let script = match command.strip_prefix("cargo run -- ") {
                Some(args) => format!("envctl {args}"),
                None => {
                    // Any other cargo command would build or test inside the tests.
                    assert!(
                        !command.starts_with("cargo ") || matches!(kind, Kind::Skip(_)),
                        "{origin}: `{command}` cannot run inside the tests; say why with `# {SKIP} <reason>`"
                    );
                    command.clone()
                }
            };
            commands.push(DocCommand {
                origin,
                written: command,
                script,
                kind,
            });
        }
    }
    commands
}

/// docs/ci.md's recipes: (the heading, the first line, the parsed YAML).
fn ci_recipes() -> Vec<(String, usize, Value)> {
    let text = std::fs::read_to_string(repo().join("docs/ci.md")).expect("docs/ci.md");
    // The one-time setup (the lock bucket) is `sh`, each command saying why the test does
    // not run it; sh_commands refuses one that does not.
    for command in sh_commands(&text, "docs/ci.md") {
        assert!(
            matches!(command.kind, Kind::Skip(_)),
            "{}: the docs test runs no sh command of docs/ci.md",
            command.origin
        );
    }
    fenced_blocks(&text)
        .into_iter()
        .filter(|b| b.lang != "sh")
        .map(|b| {
            assert_eq!(
                b.lang, "yaml",
                "docs/ci.md:{}: a `{}` block; the docs test runs only YAML recipes",
                b.first_line, b.lang
            );
            let doc: Value = serde_saphyr::from_str(&b.body).unwrap_or_else(|e| {
                panic!("docs/ci.md:{}: the recipe is not YAML: {e}", b.first_line)
            });
            (b.heading, b.first_line, doc)
        })
        .collect()
}

fn recipe(heading: &str) -> (usize, Value) {
    let (_, line, doc) = ci_recipes()
        .into_iter()
        .find(|(h, _, _)| h == heading)
        .unwrap_or_else(|| panic!("docs/ci.md has no `## {heading}` recipe"));
    (line, doc)
}

// ---------------------------------------------------------------------------------------
// Where the commands run

/// A copy of the project as a checkout of it would have it: the files git tracks or would
/// (not ignored), as they are in the work tree; without git (a source tarball), everything
/// but build output, state and results.
/// The CI recipes run in the team's repository, which has the JMeter plans the reports ran
/// (this one does not: `matrix run` against an account refuses a missing plan before its
/// first call). A minimal valid plan stands in for each; the sandbox's engines run the demo
/// workload whatever the plan says. The team has also pushed the engine image and named it
/// in `task-defs/engine-jmeter.yaml` in place of the `<registry>` placeholder, which
/// `matrix run` against an account refuses.
fn with_team_plans(work: &Path) {
    let template = work.join("task-defs/engine-jmeter.yaml");
    let text = std::fs::read_to_string(&template).expect("the engine template");
    assert!(
        text.contains("<registry>/"),
        "the engine template's image placeholder moved: update the docs test"
    );
    std::fs::write(
        &template,
        text.replace(
            "<registry>/",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/",
        ),
    )
    .expect("the engine template");
    const PLAN: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.2">
  <hashTree>
    <TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="team plan stand-in"/>
    <hashTree/>
  </hashTree>
</jmeterTestPlan>
"#;
    let dir = work.join("playbooks/jmeter");
    std::fs::create_dir_all(&dir).expect("playbooks/jmeter");
    for name in ["data-import.jmx", "check-in-check-out.jmx"] {
        std::fs::write(dir.join(name), PLAN).expect("a stand-in plan");
    }
}

fn project_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let listed = Command::new("git")
        .arg("-C")
        .arg(repo())
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success());
    let files: Vec<PathBuf> = match listed {
        Some(out) => String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|f| !f.is_empty())
            .map(PathBuf::from)
            .collect(),
        None => {
            fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
                for entry in std::fs::read_dir(root.join(rel)).expect("read dir") {
                    let entry = entry.expect("entry");
                    let path = rel.join(entry.file_name());
                    let skip = ["target", ".git", ".envctl", "results", "fuzz"];
                    if rel.as_os_str().is_empty()
                        && skip.contains(&entry.file_name().to_string_lossy().as_ref())
                    {
                        continue;
                    }
                    if entry.file_type().expect("file type").is_dir() {
                        walk(root, &path, out);
                    } else {
                        out.push(path);
                    }
                }
            }
            let mut out = Vec::new();
            walk(&repo(), Path::new(""), &mut out);
            out
        }
    };
    for file in files {
        let from = repo().join(&file);
        if !from.is_file() {
            continue; // deleted in the work tree, not yet in the index
        }
        let to = dir.path().join(&file);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::copy(&from, &to).expect("copy");
    }
    dir
}

fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The machine's PATH without any directory holding an `envctl`, so only the one the docs
/// install (or the test provides) can answer.
fn system_path() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| !d.join("envctl").exists())
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// Runs documented shell: a clean environment (no AWS settings or credentials of the
/// machine's, a home of its own), `path` before the system's.
struct Shell {
    cwd: PathBuf,
    home: tempfile::TempDir,
    logs: tempfile::TempDir,
    path: Vec<PathBuf>,
    env: BTreeMap<String, String>,
    count: usize,
}

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn describe(&self) -> String {
        let tail = |s: &str| {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(15)..].join("\n")
        };
        format!(
            "exit {:?}\n--- stdout (end)\n{}\n--- stderr (end)\n{}",
            self.code,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

impl Shell {
    fn new(cwd: &Path) -> Self {
        Shell {
            cwd: cwd.to_path_buf(),
            home: tempfile::tempdir().expect("home"),
            logs: tempfile::tempdir().expect("logs"),
            path: Vec::new(),
            env: BTreeMap::new(),
            count: 0,
        }
    }

    fn command(&mut self, script: &str) -> (Command, PathBuf, PathBuf) {
        self.count += 1;
        let file = self.logs.path().join(format!("{}.sh", self.count));
        std::fs::write(&file, script).expect("write script");
        let out = self.logs.path().join(format!("{}.out", self.count));
        let err = self.logs.path().join(format!("{}.err", self.count));
        let mut cmd = Command::new("bash");
        // GitHub's `bash` shell for `run:`; GitLab's runner stops at a failing line as well.
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&file)
            .current_dir(&self.cwd)
            .env_clear()
            .env("HOME", self.home.path())
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .envs(&self.env)
            .env("PATH", self.path_var())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&err).expect("stderr file"));
        (cmd, out, err)
    }

    fn path_var(&self) -> String {
        let mut parts: Vec<String> = self.path.iter().map(|p| p.display().to_string()).collect();
        parts.push(system_path());
        parts.join(":")
    }

    fn run(&mut self, script: &str) -> Ran {
        let (mut cmd, out, err) = self.command(script);
        let mut child = cmd.spawn().expect("bash starts");
        let start = Instant::now();
        let code = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status.code();
            }
            if start.elapsed() > COMMAND_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Ran {
            code,
            stdout: std::fs::read_to_string(out).unwrap_or_default(),
            stderr: std::fs::read_to_string(err).unwrap_or_default(),
        }
    }
}

/// A directory with `envctl`, the binary under test.
fn bin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("bin dir");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_envctl"), dir.path().join("envctl"))
        .expect("symlink");
    dir
}

// ---------------------------------------------------------------------------------------
// The README

/// `<run-id>`, `<a>`, `<b>`: the runs in results/, by the time their run.json was written.
fn substitute_placeholders(command: &DocCommand, cwd: &Path) -> String {
    let mut runs: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(cwd.join("results"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter_map(|e| {
                    let written = e.path().join("run.json").metadata().ok()?.modified().ok()?;
                    Some((written, e.file_name().to_string_lossy().into_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    runs.sort();
    let newest = |back: usize| {
        runs.len()
            .checked_sub(1 + back)
            .map(|i| runs[i].1.clone())
            .unwrap_or_else(|| {
                panic!(
                    "{}: `{}` needs {} earlier run(s) in results/, found {}",
                    command.origin,
                    command.written,
                    back + 1,
                    runs.len()
                )
            })
    };
    let mut script = command.script.clone();
    while let Some(start) = script.find('<') {
        let Some(len) = script[start + 1..].find('>') else {
            break;
        };
        let name = &script[start + 1..start + 1 + len];
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            || name.is_empty()
        {
            break;
        }
        let value = match name {
            "run-id" | "b" => newest(0),
            "a" => newest(1),
            other => panic!(
                "{}: unknown placeholder <{other}> in `{}`",
                command.origin, command.written
            ),
        };
        script.replace_range(start..start + len + 2, &value);
    }
    script
}

/// Starts a documented server on a free port, has an AWS client use it, stops it with
/// Ctrl-C (SIGINT) and returns a failure if any of that goes otherwise than documented.
fn check_server(shell: &mut Shell, command: &DocCommand) -> Option<String> {
    // The documented port may be taken on a shared machine (another test run); port 0 asks
    // the system for a free one, and the server prints the one it got.
    let script = match command.script.find("--port ") {
        Some(i) => {
            let rest = &command.script[i + "--port ".len()..];
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            format!("{}--port 0{}", &command.script[..i], &rest[digits..])
        }
        None => command.script.clone(),
    };
    let (mut cmd, out, err) = shell.command(&format!("exec {script}"));
    let mut child = cmd.spawn().expect("bash starts");
    let start = Instant::now();
    let endpoint = loop {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        if let Some(url) = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("AWS_ENDPOINT_URL="))
        {
            break Some(url.to_string());
        }
        if child.try_wait().ok().flatten().is_some() || start.elapsed() > Duration::from_secs(60) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut failure = None;
    match endpoint {
        None => {
            failure = Some(format!(
                "{}: `{}` did not start serving:\n{}",
                command.origin,
                command.written,
                std::fs::read_to_string(&err).unwrap_or_default()
            ))
        }
        Some(url) => {
            let env = first_env_file(&shell.cwd);
            let client = shell.run(&format!(
                "AWS_ENDPOINT_URL={url} AWS_ACCESS_KEY_ID=docs-test AWS_SECRET_ACCESS_KEY=docs-test envctl status {env}"
            ));
            if client.code != Some(0) {
                failure = Some(format!(
                    "{}: an AWS client (envctl status {env}) against `{}`: {}",
                    command.origin,
                    command.written,
                    client.describe()
                ));
            }
        }
    }
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped yet.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let stopped = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if stopped.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if failure.is_none() && code != Some(0) {
        failure = Some(format!(
            "{}: `{}` exited {code:?} on Ctrl-C, not 0",
            command.origin, command.written
        ));
    }
    failure
}

fn first_env_file(cwd: &Path) -> String {
    let mut envs: Vec<String> = std::fs::read_dir(cwd.join("envs"))
        .expect("envs/")
        .filter_map(Result::ok)
        .map(|e| format!("envs/{}", e.file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    envs.sort();
    envs.into_iter().next().expect("an env in envs/")
}

/// The main job runs on the sandbox, so every figure of its report is synthetic: its
/// Summary must say so and list none of them as a finding (the Summary once led with
/// "Check-out p95 +1037.5%", the sandbox API's own latency on a busy machine).
fn main_job_summary_problems(markdown: &str) -> Vec<String> {
    let summary: String = markdown
        .split("## Summary")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_default()
        .to_owned();
    let mut problems = Vec::new();
    if !summary.contains("No synthetic finding:") {
        problems.push(format!(
            "the main job's Summary does not say its figures are synthetic:\n{summary}"
        ));
    }
    let without_memory_statement = summary.replace("nothing is said about leaks", "");
    for finding in [
        "largest changes",
        "differ significantly",
        "maximum of any point",
        "leak",
    ] {
        if without_memory_statement.contains(finding) {
            problems.push(format!(
                "the main job's Summary lists a synthetic finding ({finding}):\n{summary}"
            ));
        }
    }
    problems
}

/// Issue 35: what the main job says is followed by a person. At most 200 lines (it printed
/// 857-920), at most 40 of them about waits and polls (it printed 424-494), and every
/// duration measured on the sandbox's clock says it is simulated (47-53 did not).
fn main_job_console_problems(out: &Ran) -> Vec<String> {
    let text = format!("{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = text.lines().collect();
    let mut problems = Vec::new();
    if lines.len() > 200 {
        problems.push(format!("the main job printed {} lines", lines.len()));
    }
    let waits = lines
        .iter()
        .filter(|l| {
            ["waiting", "IN_PROGRESS", "engines running", "still waiting"]
                .iter()
                .any(|w| l.contains(w))
        })
        .count();
    if waits > 40 {
        problems.push(format!("the main job printed {waits} wait lines"));
    }
    // A measured duration: a step's or a point's end, a teardown, the time left.
    let measured = ["ok in ", "passed in ", "FAILED in ", "deleted in ", " left"];
    for line in lines
        .iter()
        .filter(|l| measured.iter().any(|m| l.contains(m)))
    {
        if !line.contains("simulated") {
            problems.push(format!("an unlabelled simulated duration: {line}"));
        }
    }
    if !text.contains("took (simulated)") {
        problems.push("the points table does not say its times are simulated".into());
    }
    problems
}

#[test]
fn readme_commands_run_as_written() {
    let commands = readme_commands();
    // The README's first block (the main job, the tests) and its "Try it" block.
    assert!(
        commands.len() >= 15,
        "README.md: only {} commands found",
        commands.len()
    );
    assert!(
        commands[0]
            .written
            .starts_with("cargo run -- matrix run playbooks/"),
        "README.md's first command is the main job: {:?}",
        commands[0]
    );
    let work = project_copy();
    let bin = bin_dir();
    let mut shell = Shell::new(work.path());
    shell.path.push(bin.path().to_path_buf());
    let mut failures = Vec::new();
    let mut ran = 0;
    for command in &commands {
        match &command.kind {
            Kind::Skip(reason) => eprintln!("{}: not run: {reason}", command.origin),
            Kind::Server => {
                ran += 1;
                failures.extend(check_server(&mut shell, command));
            }
            Kind::Run => {
                ran += 1;
                let script = substitute_placeholders(command, work.path());
                let out = shell.run(&script);
                if out.code != Some(0) {
                    failures.push(format!(
                        "{}: `{}` (run as `{script}`): {}",
                        command.origin,
                        command.written,
                        out.describe()
                    ));
                } else if std::ptr::eq(command, &commands[0]) {
                    failures.extend(main_job_console_problems(&out));
                } else if command
                    .written
                    .starts_with("cargo run -- report results/<run-id>/")
                    && !command.written.contains("--format")
                {
                    failures.extend(main_job_summary_problems(&out.stdout));
                }
            }
        }
    }
    assert!(ran >= 14, "only {ran} README commands ran");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn readme_parsing_understands_the_conventions() {
    let (command, comment) = split_comment(
        "cargo run -- plan e.yaml --set 'a.b=\"# not a comment\"'   # the plan; not run by the docs test: why",
    );
    assert_eq!(
        command,
        "cargo run -- plan e.yaml --set 'a.b=\"# not a comment\"'"
    );
    assert_eq!(comment, Some("the plan; not run by the docs test: why"));
    let blocks = fenced_blocks("# A\n\n```sh\nx\n```\n## B\n```yaml\nk: v\n```\n");
    let summary: Vec<(&str, &str, usize, &str)> = blocks
        .iter()
        .map(|b| {
            (
                b.lang.as_str(),
                b.heading.as_str(),
                b.first_line,
                b.body.as_str(),
            )
        })
        .collect();
    assert_eq!(summary, [("sh", "A", 4, "x\n"), ("yaml", "B", 8, "k: v\n")]);
    let parsed = sh_commands(
        "```sh\ncargo run -- plan e.yaml \\\n  --sandbox   # a plan\n\ncargo run -- sandbox serve   # until Ctrl-C\ncargo test   # not run by the docs test: recursion\nls\n```\n",
        "T.md",
    );
    let summary: Vec<(&str, &str, &Kind)> = parsed
        .iter()
        .map(|c| (c.origin.as_str(), c.script.as_str(), &c.kind))
        .collect();
    assert_eq!(
        summary,
        [
            ("T.md:3", "envctl plan e.yaml   --sandbox", &Kind::Run),
            ("T.md:5", "envctl sandbox serve", &Kind::Server),
            ("T.md:6", "cargo test", &Kind::Skip("recursion".into())),
            ("T.md:7", "ls", &Kind::Run),
        ]
    );
    // A cargo command other than `cargo run --` without a reason, or a reason left empty.
    for text in [
        "```sh\ncargo test --workspace   # the tests\n```\n",
        "```sh\ncargo test   # not run by the docs test:\n```\n",
    ] {
        let result = std::panic::catch_unwind(|| sh_commands(text, "T.md"));
        assert!(result.is_err(), "{text} must be refused");
    }

    let command = DocCommand {
        origin: "t".into(),
        written: "report <nope>".into(),
        script: "envctl report <nope>".into(),
        kind: Kind::Run,
    };
    let dir = tempfile::tempdir().expect("dir");
    let unknown = std::panic::catch_unwind(|| substitute_placeholders(&command, dir.path()));
    assert!(unknown.is_err(), "an unknown placeholder must fail");
    let needs_runs = DocCommand {
        script: "envctl report results/<run-id>/".into(),
        ..command
    };
    let missing = std::panic::catch_unwind(|| substitute_placeholders(&needs_runs, dir.path()));
    assert!(missing.is_err(), "<run-id> without a run must fail");
}

// ---------------------------------------------------------------------------------------
// The CI recipes

/// The targets .github/workflows/release.yml builds.
fn release_targets() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml"))
        .expect("release workflow");
    let doc: Value = serde_saphyr::from_str(&text).expect("release.yml is YAML");
    doc["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .expect("a build matrix")
        .iter()
        .map(|e| e["target"].as_str().expect("a target").to_string())
        .collect()
}

/// Subcommands that reach AWS (those with `--sandbox`), as `case` patterns on "$1 $2".
fn aws_command_patterns() -> Vec<String> {
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<String>) {
        for sub in cmd.get_subcommands() {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            if sub.get_arguments().any(|a| a.get_id() == "sandbox") {
                out.push(match path.len() {
                    1 => format!("\"{} \"*", path[0]),
                    _ => format!("\"{}\"", path.join(" ")),
                });
            }
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(
        &<envctl::cli::Cli as clap::CommandFactory>::command(),
        &[],
        &mut out,
    );
    out
}

/// A release as the workflow publishes it, served by a `curl` stand-in: for each target,
/// `envctl-<target>.tar.gz` holding `envctl-<target>/envctl` and its `.sha256`. The binary
/// is the one under test, with `--sandbox` on the commands that reach AWS.
struct FakeRelease {
    _dir: tempfile::TempDir,
    shims: PathBuf,
}

/// The account the recipes' jobs share: a sandbox served on loopback (its S3 holds the lock
/// from one command and one job to the next, as AWS does), on a runtime kept alive with it.
struct Account {
    sandbox: Option<envctl_sandbox::Sandbox>,
    clients: envctl::aws::Clients,
    runtime: tokio::runtime::Runtime,
}

/// The lock bucket of the recipes' `ENVCTL_LOCK`.
const LOCK_BUCKET: &str = "perf-ci-locks";

impl Account {
    /// With `lock_bucket`, the bucket docs/ci.md's one-time setup makes (the test stands in
    /// for `aws s3api create-bucket`).
    fn new(lock_bucket: bool) -> Account {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let (sandbox, clients) = runtime.block_on(async {
            let sandbox = envctl_sandbox::Sandbox::start(envctl_sandbox::SandboxConfig {
                // envctl reads it from the endpoint: qcp1's 25-minute MSK creates take 2.5 s.
                time_scale: 600.0,
                ..envctl_sandbox::SandboxConfig::default()
            })
            .await
            .expect("the sandbox starts");
            let clients = envctl::aws::Clients::connect(&envctl::aws::Connection {
                region: "us-east-1".into(),
                profile: None,
                endpoint_url: Some(sandbox.endpoint_url()),
                sandbox: true,
                no_sdk_retries: false,
            })
            .await;
            if lock_bucket {
                clients
                    .s3
                    .create_bucket()
                    .bucket(LOCK_BUCKET)
                    .send()
                    .await
                    .expect("CreateBucket");
            }
            (sandbox, clients)
        });
        Account {
            sandbox: Some(sandbox),
            clients,
            runtime,
        }
    }

    fn endpoint(&self) -> String {
        self.sandbox
            .as_ref()
            .map(|s| s.endpoint_url())
            .unwrap_or_default()
    }

    /// qcp1's lease in the lock bucket, if one was left behind.
    fn lease(&self) -> Option<String> {
        self.runtime.block_on(async {
            envctl::aws::s3::get(&self.clients.s3, LOCK_BUCKET, "envctl/qcp1.lock.json")
                .await
                .expect("GetObject")
                .map(|o| String::from_utf8_lossy(&o.body).into_owned())
        })
    }

    /// Conditional writes and deletes the account's S3 answered: the lease's takes and
    /// renewals (PutObject) and releases (DeleteObject). Nothing else in the recipes
    /// writes to S3, so they show the jobs held the recipes' lock (`ENVCTL_LOCK`) there.
    fn lock_calls(&self) -> (u64, u64) {
        let stats = self.sandbox.as_ref().map(|s| s.stats()).unwrap_or_default();
        (
            stats.get("s3", "PutObject").count,
            stats.get("s3", "DeleteObject").count,
        )
    }

    /// ECS clusters and MSK clusters still there (not deleted, not being deleted).
    fn leftovers(&self) -> Vec<String> {
        self.runtime.block_on(async {
            let mut left = Vec::new();
            let arns = self
                .clients
                .ecs
                .list_clusters()
                .send()
                .await
                .expect("ListClusters");
            if !arns.cluster_arns().is_empty() {
                let described = self
                    .clients
                    .ecs
                    .describe_clusters()
                    .set_clusters(Some(arns.cluster_arns().to_vec()))
                    .send()
                    .await
                    .expect("DescribeClusters");
                for c in described.clusters() {
                    if c.status() == Some("ACTIVE") {
                        left.push(format!("ecs {}", c.cluster_name().unwrap_or_default()));
                    }
                }
            }
            let msk = self
                .clients
                .kafka
                .list_clusters_v2()
                .send()
                .await
                .expect("ListClustersV2");
            for c in msk.cluster_info_list() {
                let state = c
                    .state()
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_default();
                if state != "DELETING" {
                    left.push(format!(
                        "msk {} {state}",
                        c.cluster_name().unwrap_or_default()
                    ));
                }
            }
            left
        })
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        if let Some(sandbox) = self.sandbox.take() {
            let _ = self.runtime.block_on(sandbox.shutdown());
        }
    }
}

fn fake_release(corrupt: bool) -> FakeRelease {
    fake_release_for(corrupt, None)
}

/// As [`fake_release`], the installed envctl sending its AWS calls to `endpoint` (a served
/// sandbox, whose S3 keeps the recipes' lock) instead of the embedded sandbox.
fn fake_release_for(corrupt: bool, endpoint: Option<&str>) -> FakeRelease {
    use sha2::Digest;
    let dir = tempfile::tempdir().expect("release dir");
    let assets = dir.path().join("assets");
    std::fs::create_dir_all(&assets).expect("assets dir");
    let patterns = aws_command_patterns();
    assert!(
        patterns.iter().any(|p| p == "\"matrix run\""),
        "{patterns:?}"
    );
    let real = env!("CARGO_BIN_EXE_envctl");
    let wrapper = match endpoint {
        Some(url) => format!(
            "#!/bin/sh\n# The docs test's envctl: the binary under test, against the account the jobs share\n# (a sandbox served on loopback, whose S3 holds the recipes' lock, ENVCTL_LOCK).\ncase \"$1 $2\" in\n  {}) exec '{real}' \"$@\" --endpoint-url '{url}' ;;\nesac\nexec '{real}' \"$@\"\n",
            patterns.join("|")
        ),
        None => format!(
            "#!/bin/sh\n# The docs test's envctl: the binary under test, against the embedded sandbox.\n# The recipes' S3 lock (ENVCTL_LOCK) gives way to the local one: the embedded sandbox keeps\n# no bucket from one command to the next.\nunset ENVCTL_LOCK\ncase \"$1 $2\" in\n  {}) exec '{real}' \"$@\" --sandbox ;;\nesac\nexec '{real}' \"$@\"\n",
            patterns.join("|")
        ),
    };
    let targets = release_targets();
    assert!(targets.len() >= 3, "{targets:?}");
    for target in &targets {
        let name = format!("envctl-{target}");
        let staging = dir.path().join("staging");
        std::fs::create_dir_all(staging.join(&name)).expect("staging");
        write_executable(&staging.join(&name).join("envctl"), &wrapper);
        std::fs::copy(
            repo().join("README.md"),
            staging.join(&name).join("README.md"),
        )
        .expect("README");
        let archive = assets.join(format!("{name}.tar.gz"));
        let status = Command::new("tar")
            .arg("-czf")
            .arg(&archive)
            .arg("-C")
            .arg(&staging)
            .arg(&name)
            .status()
            .expect("tar runs");
        assert!(status.success());
        let bytes = std::fs::read(&archive).expect("archive");
        let hash = hex::encode(sha2::Sha256::digest(&bytes));
        std::fs::write(
            assets.join(format!("{name}.tar.gz.sha256")),
            format!("{hash}  {name}.tar.gz\n"),
        )
        .expect("checksum");
        if corrupt {
            let mut bytes = bytes;
            let last = bytes.len() - 1;
            bytes[last] ^= 0xff;
            std::fs::write(&archive, bytes).expect("corrupt");
        }
    }
    let shims = dir.path().join("shims");
    std::fs::create_dir_all(&shims).expect("shims");
    // Only this repository's release of the crate's version: a recipe naming another
    // repository or version gets curl's 404 exit code.
    let prefix = format!(
        "{}/releases/download/v{}/",
        env!("CARGO_PKG_REPOSITORY"),
        env!("CARGO_PKG_VERSION")
    );
    write_executable(
        &shims.join("curl"),
        &format!(
            r#"#!/bin/sh
# The docs test's curl: serves the release from {assets} instead of the network.
out=""; remote=""; url=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o|--output) out="$2"; shift ;;
    -O|--remote-name) remote=1 ;;
    --*) ;;
    -*O*) remote=1 ;;
    https://*|http://*) url="$1" ;;
  esac
  shift
done
case "$url" in
  '{prefix}'*) file='{assets}'/"${{url#'{prefix}'}}" ;;
  *) echo "curl: (22) docs test: $url is not under {prefix}" >&2; exit 22 ;;
esac
[ -f "$file" ] || {{ echo "curl: (22) The requested URL returned error: 404" >&2; exit 22; }}
if [ -n "$out" ]; then cp "$file" "$out"
elif [ -n "$remote" ]; then cp "$file" "./${{url##*/}}"
else cat "$file"; fi
"#,
            assets = assets.display()
        ),
    );
    FakeRelease { _dir: dir, shims }
}

fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn lines_of(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().expect("a string").to_string())
            .collect(),
        Value::Null => Vec::new(),
        other => panic!("expected a string or a list, got {other}"),
    }
}

/// The paths an artifact step lists must exist after the run.
fn missing_paths(cwd: &Path, paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .flat_map(|p| {
            p.lines()
                .map(str::trim)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|p| !p.is_empty() && !cwd.join(p).exists())
        .collect()
}

/// The jobs of a GitHub workflow in the order `needs:` runs them (a job after those it needs).
fn github_job_order(jobs: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    while order.len() < jobs.len() {
        let before = order.len();
        for (name, job) in jobs {
            if order.contains(name) {
                continue;
            }
            let needs: Vec<String> = match &job["needs"] {
                Value::String(n) => vec![n.clone()],
                Value::Array(ns) => ns
                    .iter()
                    .filter_map(|n| n.as_str().map(String::from))
                    .collect(),
                _ => Vec::new(),
            };
            if needs.iter().all(|n| order.contains(n)) {
                order.push(name.clone());
            }
        }
        assert!(order.len() > before, "a cycle in `needs:`: {order:?}");
    }
    order
}

/// Runs the GitHub Actions recipe's jobs, each on a fresh checkout as on fresh runners, in
/// `needs:` order; a job with `if: always()` runs whatever happened before it. Returns the
/// failures and a log.
fn run_github_recipe(release: &FakeRelease, only_install: bool) -> (Vec<String>, Vec<String>) {
    let (line, doc) = recipe("GitHub Actions");
    let jobs = doc["jobs"].as_object().expect("jobs");
    let mut failures = Vec::new();
    let mut log = Vec::new();
    let mut any_failed = false;
    for job_name in github_job_order(jobs) {
        let job = &jobs[&job_name];
        let run_job = match job["if"].as_str() {
            None => !any_failed,
            Some("always()") => true,
            Some(other) => panic!("docs/ci.md:{line}: the docs test does not know `if: {other}`"),
        };
        if !run_job {
            failures.push(format!(
                "docs/ci.md:{line}: job {job_name} skipped after a failed job"
            ));
            continue;
        }
        let failed = run_github_job(
            release,
            line,
            &doc,
            &job_name,
            job,
            only_install,
            &mut failures,
            &mut log,
        );
        any_failed |= failed;
        if only_install {
            break;
        }
    }
    (failures, log)
}

/// One job of the GitHub recipe; true if a step failed.
#[allow(clippy::too_many_arguments)]
fn run_github_job(
    release: &FakeRelease,
    line: usize,
    doc: &Value,
    job_name: &str,
    job: &Value,
    only_install: bool,
    failures: &mut Vec<String>,
    log: &mut Vec<String>,
) -> bool {
    let work = project_copy();
    with_team_plans(work.path());
    let runner_temp = tempfile::tempdir().expect("RUNNER_TEMP");
    let github_path = runner_temp.path().join("github_path");
    std::fs::write(&github_path, "").expect("GITHUB_PATH");
    let mut shell = Shell::new(work.path());
    shell.path.push(release.shims.clone());
    shell.env.extend(string_map(&doc["env"]));
    shell.env.extend(string_map(&job["env"]));
    shell.env.insert("CI".into(), "true".into());
    shell.env.insert("GITHUB_ACTIONS".into(), "true".into());
    shell.env.insert(
        "RUNNER_TEMP".into(),
        runner_temp.path().display().to_string(),
    );
    shell
        .env
        .insert("GITHUB_PATH".into(), github_path.display().to_string());
    let mut failed = false;
    for (i, step) in job["steps"].as_array().expect("steps").iter().enumerate() {
        let name = step["name"]
            .as_str()
            .or(step["uses"].as_str())
            .or(step["run"].as_str())
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        let origin = format!("docs/ci.md:{line}: job {job_name} step {} ({name})", i + 1);
        let run_it = match step["if"].as_str() {
            None => !failed,
            Some("always()") => true,
            Some(other) => panic!("{origin}: the docs test does not know `if: {other}`"),
        };
        if !run_it {
            failures.push(format!("{origin}: skipped after a failed step"));
            continue;
        }
        if let Some(uses) = step["uses"].as_str() {
            let action = uses.split('@').next().unwrap_or_default();
            let with = &step["with"];
            match action {
                // The temp copy is the checkout.
                "actions/checkout" => {}
                "aws-actions/configure-aws-credentials" => {
                    let region = with["aws-region"].as_str().expect("aws-region");
                    shell.env.insert("AWS_REGION".into(), region.into());
                    shell
                        .env
                        .insert("AWS_ACCESS_KEY_ID".into(), "docs-test".into());
                    shell
                        .env
                        .insert("AWS_SECRET_ACCESS_KEY".into(), "docs-test".into());
                }
                "actions/upload-artifact" => {
                    let paths = lines_of(&with["path"]);
                    let missing = missing_paths(work.path(), &paths);
                    if paths.is_empty() || !missing.is_empty() {
                        failures.push(format!("{origin}: nothing to upload at {missing:?}"));
                    }
                }
                other => panic!("{origin}: the docs test has no stand-in for `{other}`"),
            }
            log.push(format!("{origin}: stood in for {action}"));
            continue;
        }
        let script = step["run"]
            .as_str()
            .unwrap_or_else(|| panic!("{origin}: neither `uses:` nor `run:`"));
        assert!(
            !script.contains("${{"),
            "{origin}: an expression in `run:` the docs test cannot evaluate"
        );
        assert!(
            step.get("shell").is_none(),
            "{origin}: the docs test runs the default shell (bash) only"
        );
        let saved = shell.env.clone();
        shell.env.extend(string_map(&step["env"]));
        let out = shell.run(script);
        shell.env = saved;
        log.push(format!("{origin}: exit {:?}", out.code));
        if out.code != Some(0) {
            failed = true;
            failures.push(format!("{origin}:\n{script}\n{}", out.describe()));
        }
        // As on GitHub: directories appended to $GITHUB_PATH come first in later steps.
        let added = std::fs::read_to_string(&github_path).unwrap_or_default();
        for dir in added.lines().filter(|l| !l.trim().is_empty()) {
            shell.path.insert(0, PathBuf::from(dir.trim()));
        }
        std::fs::write(&github_path, "").expect("GITHUB_PATH");
        if only_install && script.contains("curl ") {
            break;
        }
    }
    failed
}

/// Runs the GitLab CI recipe's jobs stage by stage, each on a fresh checkout; a job with
/// `when: always` runs whatever happened before it. Returns the failures and a log.
fn run_gitlab_recipe(release: &FakeRelease, only_install: bool) -> (Vec<String>, Vec<String>) {
    let (line, doc) = recipe("GitLab CI");
    let top = doc.as_object().expect("a pipeline");
    let stages: Vec<String> = lines_of(&doc["stages"]);
    assert!(!stages.is_empty(), "docs/ci.md:{line}: `stages:`");
    let global = ["stages", "variables", "default"];
    let known = [
        "stage",
        "resource_group",
        "timeout",
        "variables",
        "before_script",
        "script",
        "after_script",
        "artifacts",
        "when",
    ];
    let default = &doc["default"];
    for key in default
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_else(Vec::new)
    {
        assert!(
            ["image", "before_script"].contains(&key.as_str()),
            "docs/ci.md:{line}: the docs test does not know `default: {key}`"
        );
    }
    let mut failures = Vec::new();
    let mut log = Vec::new();
    let mut any_failed = false;
    for stage in &stages {
        for (job_name, job) in top.iter().filter(|(k, _)| !global.contains(&k.as_str())) {
            if job["stage"].as_str() != Some(stage.as_str()) {
                continue;
            }
            for key in job.as_object().expect("a job map").keys() {
                assert!(
                    known.contains(&key.as_str()),
                    "docs/ci.md:{line}: the docs test does not know `{key}`"
                );
            }
            let run_job = match job["when"].as_str() {
                None | Some("on_success") => !any_failed,
                Some("always") => true,
                Some(other) => {
                    panic!("docs/ci.md:{line}: the docs test does not know `when: {other}`")
                }
            };
            if !run_job {
                failures.push(format!(
                    "docs/ci.md:{line}: job {job_name} skipped after a failed job"
                ));
                continue;
            }
            let work = project_copy();
            with_team_plans(work.path());
            let mut shell = Shell::new(work.path());
            shell.path.push(release.shims.clone());
            shell.env.extend(string_map(&doc["variables"]));
            shell.env.extend(string_map(&job["variables"]));
            shell.env.insert("CI".into(), "true".into());
            shell.env.insert("GITLAB_CI".into(), "true".into());
            shell
                .env
                .insert("CI_PROJECT_DIR".into(), work.path().display().to_string());
            // The runner's own credentials.
            shell
                .env
                .insert("AWS_ACCESS_KEY_ID".into(), "docs-test".into());
            shell
                .env
                .insert("AWS_SECRET_ACCESS_KEY".into(), "docs-test".into());
            // before_script and script share one shell; after_script runs in a new one.
            let before = if job.get("before_script").is_some() {
                &job["before_script"]
            } else {
                &default["before_script"]
            };
            let mut main = lines_of(before);
            if !only_install {
                main.extend(lines_of(&job["script"]));
            }
            let mut sections = vec![("before_script + script", main)];
            if !only_install && job.get("after_script").is_some() {
                sections.push(("after_script", lines_of(&job["after_script"])));
            }
            for (section, lines) in sections {
                let origin = format!("docs/ci.md:{line}: {job_name} {section}");
                // Names the failing line, as GitLab's job log does.
                let script = format!(
                    "trap 'echo \"docs test: exit $? at: $BASH_COMMAND\" >&2' ERR\n{}\n",
                    lines.join("\n")
                );
                let out = shell.run(&script);
                log.push(format!("{origin}: exit {:?}", out.code));
                if out.code != Some(0) {
                    if section != "after_script" {
                        any_failed = true;
                    }
                    failures.push(format!(
                        "{origin}:\n{}\n{}",
                        lines.join("\n"),
                        out.describe()
                    ));
                }
            }
            if !only_install && job.get("artifacts").is_some() {
                let paths = lines_of(&job["artifacts"]["paths"]);
                let missing = missing_paths(work.path(), &paths);
                if paths.is_empty() || !missing.is_empty() {
                    failures.push(format!(
                        "docs/ci.md:{line}: {job_name} artifacts missing: {missing:?}"
                    ));
                }
            }
            if only_install {
                return (failures, log);
            }
        }
    }
    (failures, log)
}

/// Both jobs ran: the matrix (with its lock in the account's S3) and the teardown, which
/// left nothing of qcp1 and no lease behind.
fn assert_torn_down_and_unlocked(account: &Account) {
    assert_eq!(
        account.leftovers(),
        Vec::<String>::new(),
        "the teardown job left these"
    );
    assert_eq!(account.lease(), None, "a lease was left in {LOCK_BUCKET}");
    // The jobs took the lock in the sandbox's S3 and gave it back (no lease left is not
    // enough: a recipe whose ENVCTL_LOCK were ignored would leave none either).
    let (writes, deletes) = account.lock_calls();
    assert!(
        writes >= 2 && deletes >= 2,
        "the recipe's jobs never held the lock in {LOCK_BUCKET}: {writes} PutObject, {deletes} DeleteObject"
    );
}

#[test]
fn github_actions_recipe_runs_as_written() {
    let account = Account::new(true);
    let release = fake_release_for(false, Some(&account.endpoint()));
    let (failures, log) = run_github_recipe(&release, false);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let ran = log.iter().filter(|l| l.ends_with("exit Some(0)")).count();
    assert!(ran >= 9, "{log:#?}");
    assert!(log.iter().any(|l| l.contains("job teardown")), "{log:#?}");
    assert_torn_down_and_unlocked(&account);
}

#[test]
fn gitlab_ci_recipe_runs_as_written() {
    let account = Account::new(true);
    let release = fake_release_for(false, Some(&account.endpoint()));
    let (failures, log) = run_gitlab_recipe(&release, false);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(log.len(), 3, "{log:#?}");
    assert_torn_down_and_unlocked(&account);
}

/// Issue 26 item 5: without the lock bucket, the recipe stops at preflight with a message
/// that says what to do; no matrix runs, no results are announced, and the teardown job
/// (which always runs) fails on the same clear message instead of `NoSuchBucket` twice.
#[test]
fn without_the_lock_bucket_the_recipe_stops_at_preflight_saying_how_to_make_it() {
    let account = Account::new(false);
    let release = fake_release_for(false, Some(&account.endpoint()));
    let (failures, log) = run_github_recipe(&release, false);
    let text = failures.join("\n\n");
    let preflight = failures
        .iter()
        .find(|f| f.contains("(envctl preflight"))
        .unwrap_or_else(|| panic!("preflight did not fail: {text}\n{log:#?}"));
    assert!(
        preflight.contains("the lock bucket `perf-ci-locks` does not exist")
            && preflight.contains("create it once"),
        "{preflight}"
    );
    assert!(
        failures
            .iter()
            .any(|f| f.contains("(envctl matrix run") && f.contains("skipped")),
        "{text}"
    );
    assert!(!text.contains("results in"), "{text}");
    assert!(!text.contains("NoSuchBucket"), "{text}");
    assert!(log.iter().any(|l| l.contains("job teardown")), "{log:#?}");
}

#[test]
fn the_recipes_refuse_a_corrupted_download() {
    let release = fake_release(true);
    let (failures, _) = run_github_recipe(&release, true);
    assert!(
        failures.iter().any(|f| f.contains("FAILED")),
        "GitHub: the install step must fail on a bad checksum: {failures:#?}"
    );
    let (failures, _) = run_gitlab_recipe(&release, true);
    assert!(
        failures.iter().any(|f| f.contains("FAILED")),
        "GitLab: the install must fail on a bad checksum: {failures:#?}"
    );
}

#[test]
fn binstall_finds_the_archives_the_release_workflow_publishes() {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(repo())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{out:?}");
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let package = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "envctl-perf")
        .expect("the envctl-perf package");
    // The package's name on crates.io is this project's, and its binary is `envctl`.
    assert_eq!(package["name"], env!("CARGO_PKG_NAME"));
    assert!(
        package["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .any(|t| t["name"] == "envctl" && t["kind"][0] == "bin"),
        "{package}"
    );
    let binstall = &package["metadata"]["binstall"];
    let workflow = std::fs::read_to_string(repo().join(".github/workflows/release.yml"))
        .expect("release workflow");
    // The workflow names each archive after its directory: envctl-<target>(.tar.gz).
    assert!(workflow.contains(r#"name="envctl-$TARGET""#), "{workflow}");
    assert!(
        workflow.contains(r#"tar -czf "$name.tar.gz" "$name""#),
        "{workflow}"
    );
    assert_eq!(binstall["pkg-fmt"], "tgz");
    for target in release_targets() {
        let expand = |template: &str| {
            template
                .replace("{ repo }", env!("CARGO_PKG_REPOSITORY"))
                .replace("{ version }", env!("CARGO_PKG_VERSION"))
                .replace("{ name }", env!("CARGO_PKG_NAME"))
                .replace("{ target }", &target)
                .replace("{ bin }", "envctl")
                .replace("{ binary-ext }", "")
        };
        assert_eq!(
            expand(binstall["pkg-url"].as_str().expect("pkg-url")),
            format!(
                "{}/releases/download/v{}/envctl-{target}.tar.gz",
                env!("CARGO_PKG_REPOSITORY"),
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(
            expand(binstall["bin-dir"].as_str().expect("bin-dir")),
            format!("envctl-{target}/envctl")
        );
    }
    let mut targets = release_targets();
    targets.sort();
    assert_eq!(
        targets,
        [
            "aarch64-apple-darwin",
            "aarch64-unknown-linux-gnu",
            "x86_64-apple-darwin",
            "x86_64-unknown-linux-gnu"
        ]
    );
}

/// Issue 26 item 9: docs/editors.md's commands, as written, in a fresh clone (no `.envctl/`):
/// `envctl schema env > .envctl/env.schema.json` failed there, before envctl ran.
#[test]
fn editors_recipe_runs_in_a_fresh_clone() {
    let text = std::fs::read_to_string(repo().join("docs/editors.md")).expect("docs/editors.md");
    let commands = sh_commands(&text, "docs/editors.md");
    assert!(!commands.is_empty(), "docs/editors.md has no sh block");
    let clone = tempfile::tempdir().expect("a fresh clone");
    let bin = bin_dir();
    let mut shell = Shell::new(clone.path());
    shell.path.push(bin.path().to_path_buf());
    for command in &commands {
        assert!(matches!(command.kind, Kind::Run), "{}", command.origin);
        let ran = shell.run(&command.script);
        assert_eq!(
            ran.code,
            Some(0),
            "{}: {}\n{}",
            command.origin,
            command.written,
            ran.describe()
        );
    }
    for file in ["env.schema.json", "playbook.schema.json"] {
        let text = std::fs::read_to_string(clone.path().join(".envctl").join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let schema: Value = serde_json::from_str(&text).expect("JSON");
        assert!(schema.get("properties").is_some(), "{file}");
    }
}

/// Issue 26 item 2: docs/park.md's walk, as written and in order, against the embedded
/// sandbox: apply, park, status (parked), unpark right after the park (the DB instance still
/// stopping), status (in sync). Each command must exit 0, the unpark must bring the DB
/// back, and the last status must not call a stopped DB "in sync"; the park and the first
/// status print the money lines the doc shows.
#[test]
fn the_park_walk_runs_as_written() {
    let text = std::fs::read_to_string(repo().join("docs/park.md")).expect("docs/park.md");
    let commands = sh_commands(&text, "docs/park.md");
    assert_eq!(commands.len(), 5, "{commands:#?}");
    let work = project_copy();
    let bin = tempfile::tempdir().expect("bin dir");
    let real = env!("CARGO_BIN_EXE_envctl");
    write_executable(
        &bin.path().join("envctl"),
        &format!(
            "#!/bin/sh\n# The docs test's envctl: the binary under test against the embedded sandbox.\ncase \"$1 $2\" in\n  {}) exec '{real}' \"$@\" --sandbox ;;\nesac\nexec '{real}' \"$@\"\n",
            aws_command_patterns().join("|")
        ),
    );
    let mut shell = Shell::new(work.path());
    shell.path.push(bin.path().to_path_buf());
    let mut outputs = Vec::new();
    for command in &commands {
        assert!(matches!(command.kind, Kind::Run), "{}", command.origin);
        let ran = shell.run(&command.script);
        assert_eq!(
            ran.code,
            Some(0),
            "{}: {}\n{}",
            command.origin,
            command.written,
            ran.describe()
        );
        outputs.push(format!("{}{}", ran.stdout, ran.stderr));
    }
    assert!(outputs[2].contains("PARKED:"), "{}", outputs[2]);
    // Issue 26 item 3: the doc's money lines are what `park` and `status` print, one
    // computation shown the same way.
    let money = fenced_blocks(&text)
        .into_iter()
        .find(|b| b.body.starts_with("Money per day"))
        .expect("docs/park.md shows the money lines in a block starting with \"Money per day\"");
    for (i, what) in [(1, "park"), (2, "status")] {
        assert!(
            outputs[i].contains(&money.body),
            "docs/park.md:{} ({}) differs from what `{what}` prints:\n{}\n--- printed:\n{}",
            money.first_line,
            money.heading,
            money.body,
            outputs[i]
        );
    }
    assert!(
        outputs[3].contains("start rds/instance/qcp1-db once it is stopped")
            && outputs[3].contains("Unparked."),
        "{}",
        outputs[3]
    );
    assert!(
        outputs[4].contains("In sync with the spec") && !outputs[4].contains("PARKED"),
        "{}",
        outputs[4]
    );
}
