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
