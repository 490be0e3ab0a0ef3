//! How long a plan takes when its actions run as soon as their dependencies finish: the
//! longest chain of estimates through the dependency graph.
//!
//! One function for every planner (apply, destroy, gc, a matrix's restore), so an estimate
//! never depends on the order in which a planner happened to push its actions.
use std::collections::BTreeMap;

use super::action::Action;
use super::id::ResourceId;

/// The finish time of the latest action when every action starts the moment all of its
/// dependencies have finished (actions without dependencies start at 0).
///
/// Computed in one topological pass (memoised depth-first search), whatever the order of
/// `actions`. A dependency outside the plan finishes at 0 (it is done already); a cycle,
/// which `Plan::check` refuses anyway, is cut where it closes instead of looping.
pub fn critical_path(actions: &[Action]) -> f64 {
    let by_id: BTreeMap<&ResourceId, &Action> = actions.iter().map(|a| (&a.id, a)).collect();
    let mut finish: BTreeMap<&ResourceId, Visit> = BTreeMap::new();
    actions
        .iter()
        .map(|a| finish_of(&a.id, &by_id, &mut finish))
        .fold(0.0, f64::max)
}

#[derive(Clone, Copy)]
enum Visit {
    /// On the current path: reaching it again closes a cycle.
    InProgress,
    Done(f64),
}

fn finish_of<'a>(
    id: &'a ResourceId,
    by_id: &BTreeMap<&'a ResourceId, &'a Action>,
    finish: &mut BTreeMap<&'a ResourceId, Visit>,
) -> f64 {
    match finish.get(id) {
        Some(Visit::Done(t)) => return *t,
        Some(Visit::InProgress) => return 0.0,
        None => {}
    }
    let Some(action) = by_id.get(id) else {
        return 0.0;
    };
    finish.insert(id, Visit::InProgress);
    let start = action
        .deps
        .iter()
        .map(|d| finish_of(d, by_id, finish))
        .fold(0.0, f64::max);
    let done = start + action.estimate_secs;
    finish.insert(id, Visit::Done(done));
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ActionKind, Op};

    fn action(name: &str, secs: f64, deps: &[&str]) -> Action {
        Action::new(ResourceId::service(name), ActionKind::Create, Op::default())
            .estimate(secs)
            .deps(deps.iter().map(|d| ResourceId::service(*d)).collect())
    }

    #[test]
    fn a_chain_listed_backwards_adds_up_whatever_its_length() {
        // s9 depends on s8 ... on s0, listed last-first: a fixed number of passes over the
        // list (the old estimate did four) undercounts any chain longer than that.
        let actions: Vec<Action> = (0..10_u32)
            .rev()
            .map(|i| {
                let name = format!("s{i}");
                let dep = format!("s{}", i.wrapping_sub(1));
                if i == 0 {
                    action(&name, 10.0, &[])
                } else {
                    action(&name, 10.0, &[&dep])
                }
            })
            .collect();
        assert_eq!(critical_path(&actions), 100.0);
    }

    #[test]
    fn parallel_branches_take_the_longest_one() {
        let actions = vec![
            action("join", 5.0, &["a2", "b1"]),
            action("a2", 30.0, &["a1"]),
            action("a1", 30.0, &[]),
            action("b1", 40.0, &[]),
        ];
        assert_eq!(critical_path(&actions), 65.0);
    }

    #[test]
    fn dependencies_outside_the_plan_are_done_and_cycles_end() {
        let outside = vec![action("a", 7.0, &["not-in-plan"])];
        assert_eq!(critical_path(&outside), 7.0);
        let cycle = vec![action("a", 3.0, &["b"]), action("b", 4.0, &["a"])];
        assert_eq!(critical_path(&cycle), 7.0);
        assert_eq!(critical_path(&[]), 0.0);
    }
}
