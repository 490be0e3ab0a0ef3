//! The deployment configuration a service can roll with, from its spare capacity.
//!
//! ECS starts up to `maximumPercent` of the desired count before stopping old tasks and
//! keeps at least `minimumHealthyPercent` running; the minimum is rounded up and the maximum
//! down (Amazon ECS Developer Guide, "Deployment configuration" of the rolling update
//! deployment type). With fixed host ports (host mode, bridge with a hostPort) a new task
//! needs an instance where the port is free, so the ECS defaults (100/200) deadlock once
//! every instance runs one task: the old tasks must stop first. `spare` is how many more of
//! the service's tasks fit beside the running ones (`envctl_aws_model::placement::spare_tasks`).

use std::collections::BTreeMap;

use envctl_aws_model::placement::{self, TaskNeeds};

use super::DesiredState;
use crate::spec::catalog;

/// minimumHealthyPercent and maximumPercent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rolling {
    pub minimum_healthy_percent: u32,
    pub maximum_percent: u32,
}

/// ECS's defaults: every new task starts before an old one stops.
pub const ECS_DEFAULT: Rolling = Rolling {
    minimum_healthy_percent: 100,
    maximum_percent: 200,
};

/// The configuration that lets a service of `count` tasks roll with room for `spare` more.
pub fn rolling_for(count: u32, spare: u32) -> Rolling {
    if count == 0 || spare >= count {
        return ECS_DEFAULT;
    }
    if spare > 0 {
        // Start `spare` new tasks at a time, keep every old one until they run. The maximum
        // is rounded down by ECS, so floor here keeps it within the room.
        return Rolling {
            minimum_healthy_percent: 100,
            maximum_percent: 100 + spare * 100 / count,
        };
    }
    // No room: old tasks stop first. With one task nothing can stay up; otherwise half stop
    // at a time (the minimum is rounded up, so at least one old task stops per step).
    Rolling {
        minimum_healthy_percent: if count == 1 { 0 } else { 50 },
        maximum_percent: 100,
    }
}

/// Tasks ECS may start beyond the running ones (maximum rounded down) and tasks it may stop
/// (minimum rounded up): a configuration can make progress only if one of them is > 0 and
/// the new tasks fit.
pub fn step(count: u32, r: Rolling) -> (u32, u32) {
    let max_tasks = count * r.maximum_percent / 100;
    let min_tasks = (count * r.minimum_healthy_percent).div_ceil(100);
    (
        max_tasks.saturating_sub(count),
        count.saturating_sub(min_tasks),
    )
}

/// The configuration each service of `state` deploys with: the services are placed on the
/// cluster's instances as the capacity lint places them (same model, same order: most
/// memory first), then each service's spare room beside everything else decides
/// ([`rolling_for`]). An instance type the catalogue does not know keeps ECS's defaults.
pub fn rolling_settings(
    state: &DesiredState,
    tasks: &BTreeMap<String, TaskNeeds>,
) -> BTreeMap<String, Rolling> {
    let Some(size) = catalog::ec2_instance(&state.cluster.instance_type) else {
        return state
            .services
            .keys()
            .map(|n| (n.clone(), ECS_DEFAULT))
            .collect();
    };
    let mut fleet = placement::uniform_fleet(
        state.cluster.instances,
        state.subnets.len(),
        size.cpu_units(),
        size.task_memory_mib(),
    );
    let order = placement::packing_order(
        state
            .services
            .iter()
            .filter_map(|(name, s)| tasks.get(name).map(|t| (name, t, s.desired_count))),
    );
    let mut spreads: BTreeMap<&String, BTreeMap<String, u32>> = BTreeMap::new();
    for (name, task, count) in &order {
        let spread = spreads.entry(name).or_default();
        placement::place(&mut fleet, task, *count, spread);
    }
    state
        .services
        .iter()
        .map(|(name, s)| {
            let rolling = match tasks.get(name) {
                Some(task) => {
                    let spread = spreads.get(name).cloned().unwrap_or_default();
                    let spare = placement::spare_tasks(&fleet, task, s.desired_count, &spread);
                    rolling_for(s.desired_count, spare)
                }
                None => ECS_DEFAULT,
            };
            (name.clone(), rolling)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration is usable when each step starts no more tasks than fit, and the
    /// deployment advances (it can start or stop at least one task).
    fn progresses(count: u32, spare: u32, r: Rolling) -> bool {
        let (start, stop) = step(count, r);
        start <= spare.max(stop) && (start > 0 || stop > 0)
    }

    #[test]
    fn room_for_every_new_task_keeps_ecs_defaults() {
        assert_eq!(rolling_for(5, 5), ECS_DEFAULT);
        assert_eq!(rolling_for(2, 9), ECS_DEFAULT);
    }

    #[test]
    fn host_mode_omb_workers_without_room_stop_half_first() {
        // kafka-omb: 5 workers on 5 instances, port 8080 taken on each.
        let r = rolling_for(5, 0);
        assert_eq!(
            r,
            Rolling {
                minimum_healthy_percent: 50,
                maximum_percent: 100
            }
        );
        assert_eq!(step(5, r), (0, 2));
        assert!(progresses(5, 0, r));
        // The defaults would start 5 new tasks that have nowhere to go, and stop none.
        assert_eq!(step(5, ECS_DEFAULT), (5, 0));
        assert!(!progresses(5, 0, ECS_DEFAULT));
    }

    #[test]
    fn partial_room_limits_the_surge() {
        let r = rolling_for(4, 1);
        assert_eq!(r.maximum_percent, 125);
        assert_eq!(step(4, r), (1, 0));
        assert!(progresses(4, 1, r));
        // 3 tasks, room for 2: 100 + 66 = 166%, floor(3 * 1.66) = 4, one new task at a time.
        assert_eq!(step(3, rolling_for(3, 2)), (1, 0));
    }

    #[test]
    fn a_single_task_without_room_must_stop_first() {
        let r = rolling_for(1, 0);
        assert_eq!(step(1, r), (0, 1));
        assert!(progresses(1, 0, r));
    }
}

#[cfg(test)]
mod settings_tests {
    use std::path::PathBuf;

    use super::*;
    use crate::compile::compile_env;
    use crate::model::task_needs;
    use crate::spec::Loader;

    fn settings(env: &str) -> BTreeMap<String, Rolling> {
        let mut loader = Loader::new();
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("envs")
            .join(format!("{env}.yaml"));
        let Some(c) = compile_env(&mut loader, &path, &[]) else {
            panic!("{}", loader.diagnostics.render(&loader.sources));
        };
        rolling_settings(&c.desired, &task_needs(&c.desired))
    }

    #[test]
    fn omb_workers_with_a_port_on_every_instance_stop_half_first() {
        // 5 host-mode workers on 5 c6i.4xlarge: port 8080 is taken on each.
        assert_eq!(
            settings("kafka-omb").get("omb-worker"),
            Some(&Rolling {
                minimum_healthy_percent: 50,
                maximum_percent: 100
            })
        );
    }

    #[test]
    fn services_with_room_keep_ecs_defaults() {
        let pcp1 = settings("pcp1");
        assert!(!pcp1.is_empty());
        assert!(pcp1.values().all(|r| *r == ECS_DEFAULT), "{pcp1:?}");
    }
}
