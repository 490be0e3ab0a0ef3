//! Choosing the order of a matrix's points so the environment changes as little as
//! possible: expensive changes (an MSK replacement, a broker type change, an RDS class
//! change) happen as rarely as the matrix allows.
//!
//! Points that need the same environment form one group and run back to back (free
//! transitions). With a ramp axis, a group is every point sharing the other axes, in the
//! ramp's declared order. Groups are then ordered as an open travelling-salesman path from
//! the empty account, with transition costs from the planner's own estimates: exact
//! (Held-Karp dynamic programming) up to 12 groups, nearest neighbour plus 2-opt beyond,
//! with a lower bound (every group entered by its cheapest edge) reported next to it.
use std::collections::BTreeMap;

use super::expand::Point;
use crate::model::DesiredState;
use crate::model::live::{LiveState, converged};
use crate::plan::{ActionKind, DiffOptions, Estimates, Plan, destroy_plan, diff};

/// Above this many groups the exact search (2^n n^2) gives way to the heuristic.
pub const EXACT_LIMIT: usize = 12;

/// Estimated transitions between environment configurations.
pub struct Costs {
    /// Config keys in order of first appearance; index = config id.
    pub keys: Vec<String>,
    pub from_empty: Vec<f64>,
    /// `between[a][b]`: seconds to go from config a to config b.
    pub between: Vec<Vec<f64>>,
    /// Create from empty plus destroy, per config.
    pub rebuild: Vec<f64>,
    /// Destroying each config (a teardown's estimate).
    pub destroy: Vec<f64>,
    /// A short description of each transition, `[a][b]` and from empty (`usize::MAX`).
    pub summaries: BTreeMap<(usize, usize), String>,
}

pub const EMPTY: usize = usize::MAX;

/// One line about a plan: what changes, how many of each kind.
pub fn summarize(plan: &Plan) -> String {
    let mut kinds: BTreeMap<ActionKind, usize> = BTreeMap::new();
    for a in plan.changes() {
        *kinds.entry(a.kind).or_default() += 1;
    }
    if kinds.is_empty() {
        return "no change".into();
    }
    let mut parts: Vec<String> = kinds
        .iter()
        .map(|(k, n)| format!("{n} {}", k.verb()))
        .collect();
    let mut fields: Vec<String> = plan
        .changes()
        .flat_map(|a| a.changes.iter().map(|c| c.field.clone()))
        .collect();
    fields.sort();
    fields.dedup();
    if !fields.is_empty() {
        let shown: Vec<String> = fields.iter().take(4).cloned().collect();
        parts.push(format!(
            "({}{})",
            shown.join(", "),
            if fields.len() > 4 { ", ..." } else { "" }
        ));
    }
    parts.join(", ")
}

impl Costs {
    /// Plans every transition between the given configurations (desired states by key).
    pub fn estimate(configs: &[(String, DesiredState)], est: &Estimates) -> Costs {
        let opts = DiffOptions::default();
        let lives: Vec<LiveState> = configs.iter().map(|(_, d)| converged(d)).collect();
        let n = configs.len();
        let mut summaries = BTreeMap::new();
        let mut from_empty = Vec::with_capacity(n);
        let mut rebuild = Vec::with_capacity(n);
        let mut destroys = Vec::with_capacity(n);
        for (i, (_, d)) in configs.iter().enumerate() {
            let create = diff(d, &LiveState::default(), est, &opts);
            summaries.insert((EMPTY, i), summarize(&create));
            from_empty.push(create.estimate_secs);
            let registered = d
                .services
                .values()
                .map(|s| (s.task_definition.family.clone(), Default::default()))
                .collect();
            // A converged environment's revisions are all its own.
            let owned = lives[i]
                .services
                .values()
                .map(|s| s.task_definition.clone())
                .collect();
            let destroy = destroy_plan(d, &lives[i], &registered, &owned, est);
            rebuild.push(create.estimate_secs + destroy.estimate_secs);
            destroys.push(destroy.estimate_secs);
        }
        let mut between = vec![vec![0.0; n]; n];
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    let plan = diff(&configs[b].1, &lives[a], est, &opts);
                    between[a][b] = plan.estimate_secs;
                    summaries.insert((a, b), summarize(&plan));
                }
            }
        }
        Costs {
            keys: configs.iter().map(|(k, _)| k.clone()).collect(),
            from_empty,
            between,
            rebuild,
            destroy: destroys,
            summaries,
        }
    }

    /// Starts from what exists instead of an empty account: the first point's cost is the
    /// plan from `live` to its configuration (an adopted environment being restored, a
    /// matrix planned against the sandbox's world).
    pub fn start_from(
        &mut self,
        configs: &[(String, DesiredState)],
        live: &LiveState,
        est: &Estimates,
    ) {
        let opts = DiffOptions::default();
        for (i, (_, d)) in configs.iter().enumerate() {
            let plan = diff(d, live, est, &opts);
            if let Some(cost) = self.from_empty.get_mut(i) {
                *cost = plan.estimate_secs;
            }
            self.summaries.insert((EMPTY, i), summarize(&plan));
        }
    }

    pub fn index(&self, key: &str) -> usize {
        self.keys.iter().position(|k| k == key).unwrap_or(0)
    }

    /// Seconds to switch from config `from` ([`EMPTY`]: where the run starts) to `to`.
    pub fn step(&self, from: usize, to: usize) -> f64 {
        if from == EMPTY {
            self.from_empty[to]
        } else if from == to {
            0.0
        } else {
            self.between[from][to]
        }
    }
}

/// How the order was found.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    Exact,
    /// With the lower bound the heuristic's result is compared against.
    Heuristic {
        lower_bound_s: f64,
    },
}

#[derive(Debug, Clone)]
pub struct Ordering {
    /// Indices into the points, in run order.
    pub order: Vec<usize>,
    pub envctl_s: f64,
    pub declared_s: f64,
    pub rebuild_s: f64,
    pub method: Method,
    pub groups: usize,
}

/// A maximal run of points that must stay together, in this order.
struct Group {
    points: Vec<usize>,
    first: usize,
    last: usize,
    internal: f64,
}

fn path_cost(costs: &Costs, seq: impl Iterator<Item = usize>) -> f64 {
    let mut total = 0.0;
    let mut at = EMPTY;
    for c in seq {
        total += costs.step(at, c);
        at = c;
    }
    total
}

/// Orders the points; `ramp` names the ramp axis, whose declared order is kept.
/// With `shuffle_seed`, the points of each group (one environment configuration, so no
/// extra transitions) run in a seeded random order instead of the declared one: repeats and
/// workload-only variants interleave, which exposes drift over time.
pub fn order(
    points: &[Point],
    ramp: Option<&str>,
    costs: &Costs,
    shuffle_seed: Option<u64>,
) -> Ordering {
    let config_of = |i: usize| costs.index(&points[i].config_key);
    // Groups, in order of first appearance.
    let mut keys: Vec<String> = Vec::new();
    let mut members: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, p) in points.iter().enumerate() {
        let key = match ramp {
            Some(r) => p
                .axes
                .iter()
                .filter(|(a, _)| a != r)
                .map(|(a, v)| format!("{a}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            None => p.config_key.clone(),
        };
        if !members.contains_key(&key) {
            keys.push(key.clone());
        }
        members.entry(key).or_default().push(i);
    }
    let groups: Vec<Group> = keys
        .iter()
        .map(|k| {
            let mut pts = members.get(k).cloned().unwrap_or_default();
            if let (Some(seed), None) = (shuffle_seed, ramp) {
                shuffle(&mut pts, seed ^ hash(k));
            }
            let cfgs: Vec<usize> = pts.iter().map(|&i| config_of(i)).collect();
            let internal = cfgs.windows(2).map(|w| costs.step(w[0], w[1])).sum();
            Group {
                first: cfgs.first().copied().unwrap_or(0),
                last: cfgs.last().copied().unwrap_or(0),
                points: pts,
                internal,
            }
        })
        .collect();
    let n = groups.len();
    let edge = |from: Option<usize>, to: usize| -> f64 {
        match from {
            None => costs.step(EMPTY, groups[to].first),
            Some(f) => costs.step(groups[f].last, groups[to].first),
        }
    };
    let internal: f64 = groups.iter().map(|g| g.internal).sum();
    let declared: Vec<usize> = (0..n).collect();
    let (seq, method) = if n <= EXACT_LIMIT {
        let best = held_karp(n, &edge);
        // Among equally good orders, the one the user wrote.
        if sequence_cost(&declared, &edge) <= sequence_cost(&best, &edge) + 1e-6 {
            (declared, Method::Exact)
        } else {
            (best, Method::Exact)
        }
    } else {
        let seq = two_opt(nearest_neighbour(n, &edge), &edge);
        // Every group is entered once, by some edge no cheaper than its cheapest.
        let lower: f64 = (0..n)
            .map(|b| {
                std::iter::once(None)
                    .chain((0..n).filter(|&a| a != b).map(Some))
                    .map(|a| edge(a, b))
                    .fold(f64::INFINITY, f64::min)
            })
            .sum::<f64>()
            + internal;
        (
            seq,
            Method::Heuristic {
                lower_bound_s: lower,
            },
        )
    };
    let order: Vec<usize> = seq
        .iter()
        .flat_map(|&g| groups[g].points.iter().copied())
        .collect();
    let envctl_s = path_cost(costs, order.iter().map(|&i| config_of(i)));
    let declared_s = path_cost(costs, (0..points.len()).map(config_of));
    let rebuild_s = (0..points.len()).map(|i| costs.rebuild[config_of(i)]).sum();
    Ordering {
        order,
        envctl_s,
        declared_s,
        rebuild_s,
        method,
        groups: n,
    }
}

pub fn hash(text: &str) -> u64 {
    // FNV-1a: a stable hash (std's is randomized per process).
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Fisher-Yates with splitmix64: deterministic for a seed.
fn shuffle(items: &mut [usize], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn sequence_cost(seq: &[usize], edge: &dyn Fn(Option<usize>, usize) -> f64) -> f64 {
    let mut prev = None;
    let mut total = 0.0;
    for &g in seq {
        total += edge(prev, g);
        prev = Some(g);
    }
    total
}

/// Exact shortest open path from the empty account through every group (Held-Karp).
fn held_karp(n: usize, edge: &dyn Fn(Option<usize>, usize) -> f64) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let full = 1usize << n;
    let mut best = vec![vec![f64::INFINITY; n]; full];
    let mut parent = vec![vec![usize::MAX; n]; full];
    for g in 0..n {
        best[1 << g][g] = edge(None, g);
    }
    for mask in 1..full {
        for last in 0..n {
            let here = best[mask][last];
            if mask & (1 << last) == 0 || !here.is_finite() {
                continue;
            }
            for next in 0..n {
                if mask & (1 << next) != 0 {
                    continue;
                }
                let m = mask | (1 << next);
                let cost = here + edge(Some(last), next);
                // Ties go to the lower index: the declared order wins among equals.
                if cost < best[m][next] - 1e-9 {
                    best[m][next] = cost;
                    parent[m][next] = last;
                }
            }
        }
    }
    let mut last = (0..n)
        .min_by(|&a, &b| best[full - 1][a].total_cmp(&best[full - 1][b]))
        .unwrap_or(0);
    let mut mask = full - 1;
    let mut seq = Vec::with_capacity(n);
    while last != usize::MAX {
        seq.push(last);
        let p = parent[mask][last];
        mask &= !(1 << last);
        last = p;
    }
    seq.reverse();
    seq
}

fn nearest_neighbour(n: usize, edge: &dyn Fn(Option<usize>, usize) -> f64) -> Vec<usize> {
    let mut seq = Vec::with_capacity(n);
    let mut used = vec![false; n];
    let mut prev = None;
    for _ in 0..n {
        let next = (0..n)
            .filter(|&g| !used[g])
            .min_by(|&a, &b| edge(prev, a).total_cmp(&edge(prev, b)))
            .unwrap_or(0);
        used[next] = true;
        seq.push(next);
        prev = Some(next);
    }
    seq
}

/// Reverses segments while that shortens the path (costs may be asymmetric, so each move is
/// evaluated on the whole path).
fn two_opt(mut seq: Vec<usize>, edge: &dyn Fn(Option<usize>, usize) -> f64) -> Vec<usize> {
    let mut best = sequence_cost(&seq, edge);
    let mut improved = true;
    while improved {
        improved = false;
        for i in 0..seq.len() {
            for j in i + 1..seq.len() {
                seq[i..=j].reverse();
                let cost = sequence_cost(&seq, edge);
                if cost < best - 1e-9 {
                    best = cost;
                    improved = true;
                } else {
                    seq[i..=j].reverse();
                }
            }
        }
    }
    seq
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random cost matrix (splitmix64).
    fn random_costs(n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut state = seed;
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) % 3000) as f64
        };
        (0..=n).map(|_| (0..n).map(|_| next()).collect()).collect()
    }

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for i in 0..=p.len() {
                let mut q = p.clone();
                q.insert(i, n - 1);
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn held_karp_equals_brute_force_on_random_matrices() {
        for seed in 0..40 {
            let n = 1 + (seed as usize % 7);
            let m = random_costs(n, seed);
            // Row n holds the costs from the empty account.
            let edge = |from: Option<usize>, to: usize| m[from.unwrap_or(n)][to];
            let exact = sequence_cost(&held_karp(n, &edge), &edge);
            let brute = permutations(n)
                .iter()
                .map(|p| sequence_cost(p, &edge))
                .fold(f64::INFINITY, f64::min);
            assert!(
                (exact - brute).abs() < 1e-6,
                "seed {seed}: {exact} vs {brute}"
            );
        }
    }

    #[test]
    fn the_heuristic_is_never_below_the_lower_bound_and_close_to_exact() {
        for seed in 0..20 {
            let n = 9;
            let m = random_costs(n, seed + 100);
            let edge = |from: Option<usize>, to: usize| m[from.unwrap_or(n)][to];
            let heuristic = sequence_cost(&two_opt(nearest_neighbour(n, &edge), &edge), &edge);
            let exact = sequence_cost(&held_karp(n, &edge), &edge);
            assert!(heuristic >= exact - 1e-6);
            let lower: f64 = (0..n)
                .map(|b| {
                    std::iter::once(None)
                        .chain((0..n).filter(|&a| a != b).map(Some))
                        .map(|a| edge(a, b))
                        .fold(f64::INFINITY, f64::min)
                })
                .sum();
            assert!(lower <= exact + 1e-6, "the bound is a bound");
        }
    }
}
