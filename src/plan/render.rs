//! The plan as people read it: actions grouped when many services change the same way
//! ("LOG_LEVEL: INFO -> WARN on 74 services"), the reason for each replacement, and
//! estimated durations.
use std::collections::BTreeMap;
use std::fmt::Write;

use super::action::{Action, ActionKind, Change};
use super::diff::Plan;
use super::estimate::human;

/// How many names to list for a group before "and N more".
const NAMES_SHOWN: usize = 6;

pub fn render(plan: &Plan) -> String {
    render_with(plan, "No changes: the environment matches the spec.")
}

/// A destroy plan: with nothing to delete it says so, not that the environment "matches
/// the spec" (there is no environment).
pub fn render_destroy(plan: &Plan) -> String {
    render_with(
        plan,
        "Nothing to destroy: envctl owns no resource of this env in this account and Region.",
    )
}

fn render_with(plan: &Plan, nothing: &str) -> String {
    let mut out = String::new();
    let count = |k: ActionKind| plan.actions.iter().filter(|a| a.kind == k).count();
    let _ = writeln!(
        out,
        "Plan for {}: {} to create, {} to update in place, {} rolling, {} to replace, {} to delete, {} unchanged.",
        plan.env,
        count(ActionKind::Create),
        count(ActionKind::UpdateInPlace),
        count(ActionKind::RollingUpdate),
        count(ActionKind::Replace),
        count(ActionKind::Delete),
        count(ActionKind::NoOp)
    );
    for c in &plan.conflicts {
        let _ = writeln!(out, "\n  ! {}: {}", c.resource, c.message);
    }
    // Unchanged resources with something to say (AWS moved a version on its own).
    for a in plan
        .actions
        .iter()
        .filter(|a| a.kind == ActionKind::NoOp && !a.reasons.is_empty())
    {
        let _ = writeln!(out, "\n  note: {}: {}", a.id, a.reasons.join("; "));
    }
    if !plan.has_changes() {
        let _ = writeln!(out, "\n{nothing}");
        return out;
    }
    let _ = writeln!(out, "Estimated time: {}.\n", human(plan.estimate_secs));

    // Identical actions on several services print once.
    let mut groups: Vec<(Vec<&Action>, &Action)> = Vec::new();
    for a in plan.changes() {
        let groupable = a.id.is_service();
        match groups.iter_mut().find(|(members, first)| {
            groupable && first.id.is_service() && same_change(first, a) && !members.is_empty()
        }) {
            Some((members, _)) => members.push(a),
            None => groups.push((vec![a], a)),
        }
    }
    for (members, first) in &groups {
        let title = if members.len() == 1 {
            first.id.to_string()
        } else {
            let names: Vec<&str> = members.iter().map(|a| a.id.name()).collect();
            format!("{} services: {}", members.len(), list(&names))
        };
        let each = if members.len() > 1 { " each" } else { "" };
        let _ = writeln!(
            out,
            "  {} {title}  ({}, ~{}{each})",
            first.kind.symbol(),
            first.kind.verb(),
            human(first.estimate_secs)
        );
        if let Some(reason) = first.reason_text() {
            let _ = writeln!(out, "        why: {reason}");
        }
        if first.kind == ActionKind::Create || first.kind == ActionKind::Delete {
            // New and deleted resources: their settings on one line, so a 144-service create
            // stays readable.
            if !first.changes.is_empty() {
                let _ = writeln!(
                    out,
                    "        {}",
                    first
                        .changes
                        .iter()
                        .map(change_line)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        } else {
            for c in &first.changes {
                let _ = writeln!(out, "        {}", change_line(c));
            }
        }
        if !first.deps.is_empty() {
            let deps: Vec<String> = first.deps.iter().map(ToString::to_string).collect();
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            let _ = writeln!(out, "        after: {}", list(&deps));
        }
    }

    // Changes shared by many services even when their actions differ otherwise.
    let mut shared: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for a in plan.changes().filter(|a| a.id.is_service()) {
        for c in &a.changes {
            shared.entry(change_line(c)).or_default().push(a.id.name());
        }
    }
    let repeated: Vec<(&String, &Vec<&str>)> =
        shared.iter().filter(|(_, v)| v.len() >= 3).collect();
    if !repeated.is_empty() {
        let _ = writeln!(out, "\nRepeated changes:");
        for (line, names) in repeated {
            let _ = writeln!(out, "  {line} on {} services", names.len());
        }
    }
    out
}

fn same_change(a: &Action, b: &Action) -> bool {
    a.kind == b.kind && a.changes == b.changes && a.reasons == b.reasons && a.deps == b.deps
}

/// One change as `field: old -> new`, values masked as [`Change`]'s JSON masks them: a
/// secret a template or a foreign task definition carries never reaches the terminal.
fn change_line(c: &Change) -> String {
    let (old, new) = c.shown();
    match (&old, &new) {
        (None, Some(new)) => format!("{}: {new}", c.field),
        (Some(old), None) => format!("{}: {old} -> (removed)", c.field),
        (Some(old), Some(new)) => format!("{}: {old} -> {new}", c.field),
        (None, None) => c.field.clone(),
    }
}

fn list(names: &[&str]) -> String {
    if names.len() <= NAMES_SHOWN {
        names.join(", ")
    } else {
        format!(
            "{} and {} more",
            names[..NAMES_SHOWN].join(", "),
            names.len() - NAMES_SHOWN
        )
    }
}
