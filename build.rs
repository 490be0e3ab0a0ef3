//! Names the commit envctl is built from, for `envctl --version`, so a binary found on a CI
//! runner or a laptop can be traced to its source. Built from a source tarball (no `.git`),
//! or inside some other repository, it says "unknown commit" rather than guess.
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set by packagers who build without `.git` but know the commit; wins over git.
const OVERRIDE: &str = "ENVCTL_BUILD_COMMIT";

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed={OVERRIDE}");
    let commit = match std::env::var(OVERRIDE) {
        Ok(value) if !value.trim().is_empty() => value.trim().to_string(),
        _ => {
            // Rebuild when HEAD moves: on a commit (the branch's ref file, or packed-refs)
            // and on a checkout (HEAD itself). `--git-path` resolves worktrees' shared refs.
            for path in watched_git_paths(&manifest_dir) {
                println!("cargo:rerun-if-changed={}", path.display());
            }
            commit_of(&manifest_dir)
        }
    };
    println!("cargo:rustc-env=ENVCTL_COMMIT={commit}");
}

/// The first 12 hex digits of HEAD when `dir` is the top of a git work tree, else
/// "unknown commit".
pub fn commit_of(dir: &Path) -> String {
    let toplevel = git(dir, &["rev-parse", "--show-toplevel"]);
    // An extracted tarball inside another repository would otherwise report that one's HEAD.
    let ours = toplevel.is_some_and(|top| same_dir(Path::new(&top), dir));
    ours.then(|| git(dir, &["rev-parse", "--short=12", "HEAD"]))
        .flatten()
        .map(|hash| format!("commit {hash}"))
        .unwrap_or_else(|| "unknown commit".to_string())
}

fn watched_git_paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut add = |name: &str| {
        if let Some(p) = git(dir, &["rev-parse", "--git-path", name]) {
            let p = dir.join(p);
            if p.exists() {
                paths.push(p);
            }
        }
    };
    add("HEAD");
    add("packed-refs");
    if let Some(reference) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        add(&reference);
    }
    paths
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}
