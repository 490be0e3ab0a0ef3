//! What a user gets with the binary besides the commands: `--version` naming the commit,
//! shell completions and the man page.
use std::path::Path;
use std::process::Command;

use crate::build_script::commit_of;
use crate::{Test, repo};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = Test::new().args(["--version"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Computed here with git directly, not with build.rs's function: a clean clone in CI is a
    // git work tree; a source tarball is not, and then the binary must say so.
    let head = Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(["rev-parse", "--show-toplevel", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let expected = match head.as_deref().map(|s| s.lines().collect::<Vec<_>>()) {
        Some(lines)
            if lines.len() == 2 && Path::new(lines[0]) == repo().canonicalize().expect("repo") =>
        {
            format!("commit {}", lines[1])
        }
        _ => "unknown commit".to_string(),
    };
    assert_eq!(
        out.stdout.trim(),
        format!("envctl {} ({expected})", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn without_its_own_git_work_tree_the_build_says_unknown_commit() {
    let dir = tempfile::tempdir().expect("temp dir");
    // An extracted tarball: no .git at all.
    assert_eq!(commit_of(dir.path()), "unknown commit");

    // The same tarball extracted inside another repository must not take that one's HEAD.
    git(dir.path(), &["init", "-q"]);
    git(
        dir.path(),
        &["commit", "-q", "--allow-empty", "-m", "outer"],
    );
    let nested = dir.path().join("envctl-0.1.0");
    std::fs::create_dir_all(&nested).expect("nested dir");
    assert_eq!(commit_of(&nested), "unknown commit");

    // Its own work tree: the short hash of HEAD.
    let hash = git(dir.path(), &["rev-parse", "--short=12", "HEAD"]);
    assert_eq!(commit_of(dir.path()), format!("commit {hash}"));
}

/// Every subcommand path, from the same clap types the binary parses with: ["plan"],
/// ["matrix", "run"], ...
fn subcommands() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands() {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
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

#[test]
fn completions_cover_every_subcommand_in_each_shell() {
    let top: Vec<String> = subcommands()
        .into_iter()
        .filter(|p| p.len() == 1)
        .map(|p| p[0].clone())
        .collect();
    assert!(top.contains(&"completions".to_string()) && top.contains(&"man".to_string()));
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = Test::new().args(["completions", shell]).run();
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        for name in &top {
            assert!(
                out.stdout.contains(name.as_str()),
                "{shell} completions lack `{name}`"
            );
        }
    }
    let out = Test::new().args(["completions", "tcsh"]).run();
    assert_eq!(out.code, 64, "an unknown shell is a usage error");
}

/// Completes `words` (the last one partial) with the bash script, as bash would on Tab.
fn bash_complete(words: &[&str]) -> Vec<String> {
    let script = Test::new().args(["completions", "bash"]).run().stdout;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("envctl.bash");
    std::fs::write(&path, script).expect("write script");
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let program = format!(
        "source {}; COMP_WORDS=({}); COMP_CWORD={cword}; _envctl envctl {} {}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        quoted.join(" "),
        quoted[cword],
        quoted[cword - 1],
    );
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_flags_and_values() {
    assert_eq!(bash_complete(&["envctl", "matrix", "r"]), ["run"]);
    assert!(bash_complete(&["envctl", "pl"]).contains(&"plan".to_string()));
    let flags = bash_complete(&["envctl", "plan", "--"]);
    for flag in ["--sandbox", "--detailed-exitcode", "--set", "--json"] {
        assert!(flags.contains(&flag.to_string()), "{flag} in {flags:?}");
    }
    let teardown = bash_complete(&["envctl", "matrix", "run", "--teardown", ""]);
    assert!(
        teardown.contains(&"keep-on-failure".to_string()),
        "{teardown:?}"
    );
}

#[test]
fn man_page_lists_every_command_and_out_dir_writes_one_per_command() {
    let out = Test::new().args(["man"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with(".ie"),
        "roff: {}",
        &out.stdout[..40.min(out.stdout.len())]
    );
    assert!(
        out.stdout.contains(&format!(
            ".TH envctl 1  \"envctl {}",
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        out.stdout
    );
    for path in subcommands().iter().filter(|p| p.len() == 1) {
        // roff escapes '-' as '\-'.
        let entry = format!("envctl\\-{}(1)", path[0].replace('-', "\\-"));
        assert!(out.stdout.contains(&entry), "man page lacks {entry}");
    }

    let keep = tempfile::tempdir().expect("temp dir");
    let dir = keep.path().join("man");
    let out = Test::new()
        .args(["man", "--out-dir"])
        .args([dir.display().to_string()])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    for path in subcommands() {
        let file = dir.join(format!("envctl-{}.1", path.join("-")));
        let page =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(page.contains(".SH SYNOPSIS"), "{}", file.display());
    }
    let plan = std::fs::read_to_string(dir.join("envctl-plan.1")).expect("plan page");
    assert!(plan.contains("detailed\\-exitcode"), "{plan}");
    assert!(dir.join("envctl.1").exists());
}
