//! AWS's vocabulary is written once, in `aws-model`: no status or error code is compared as
//! a string literal in envctl's sources or the sandbox's. A literal comparison is how a
//! misspelt state ("INACTVE") or a state AWS renames goes unnoticed; the typed enums make the
//! compiler check the spelling.

use crate::repo;
use envctl_aws_model::{ErrorCode, status};
use std::path::Path;

/// The literals to look for (`"ACTIVE"`, quotes included) and the forms of comparison
/// around each: `==`/`!=` on either side and `Some("…")`.
struct Needles {
    quoted: Vec<String>,
    around: Vec<String>,
}

impl Needles {
    fn new(words: impl IntoIterator<Item = &'static str>) -> Self {
        let quoted: Vec<String> = words.into_iter().map(|w| format!("\"{w}\"")).collect();
        let around = quoted
            .iter()
            .flat_map(|q| {
                [
                    format!("== {q}"),
                    format!("!= {q}"),
                    format!("{q} =="),
                    format!("{q} !="),
                    format!("Some({q})"),
                ]
            })
            .collect();
        Needles { quoted, around }
    }

    /// How `line` compares a literal, if it does: one of the forms above, or a match arm that
    /// starts with it (`"ACTIVE" =>`, `"ACTIVE" | …`, `"ACTIVE" if …`).
    fn compared<'a>(&'a self, line: &str) -> Option<&'a str> {
        if !line.contains('"') {
            return None;
        }
        let line: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
        let arm = self.quoted.iter().find(|q| {
            line.strip_prefix(q.as_str()).is_some_and(|rest| {
                let rest = rest.trim_start();
                rest.starts_with("=>") || rest.starts_with('|') || rest.starts_with("if ")
            })
        });
        arm.or_else(|| self.around.iter().find(|p| line.contains(p.as_str())))
            .map(String::as_str)
    }
}

fn scan(dir: &Path, needles: &Needles, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            scan(&path, needles, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for (n, line) in text.lines().enumerate() {
                if let Some(w) = needles.compared(line) {
                    found.push(format!(
                        "{}:{}: {w}: {}",
                        path.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
}

#[test]
fn no_aws_status_or_error_code_is_compared_as_a_string_literal() {
    let needles = Needles::new(
        status::spellings()
            .into_iter()
            .chain(ErrorCode::ALL.iter().map(|c| c.as_str())),
    );
    let mut found = Vec::new();
    for dir in ["src", "sandbox/src"] {
        scan(&repo().join(dir), &needles, &mut found);
    }
    assert!(
        found.is_empty(),
        "compare with envctl_aws_model::status (or ErrorCode) instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_each_form_of_comparison() {
    let needles = Needles::new(["ACTIVE"]);
    for line in [
        r#"if s.status == "ACTIVE" {"#,
        r#".filter(|c| "ACTIVE" != c.status)"#,
        r#"Some("ACTIVE") => Ok(()),"#,
        r#"    "ACTIVE" | "DRAINING" => {"#,
        r#"    "ACTIVE" if token.is_some() => {"#,
    ] {
        assert!(needles.compared(line).is_some(), "{line}");
    }
    let quiet = [
        r#"let detail = "ACTIVE".to_string();"#,
        "s.status == ServiceStatus::Active",
    ];
    for line in quiet {
        assert_eq!(needles.compared(line), None, "{line}");
    }
}
