//! The pure half of `--restore`: the plan back to a baseline pins the recorded revision and
//! count, and verification names what differs.
use std::collections::BTreeMap;

use super::*;
use crate::model::live::LiveService;

const REV1: &str = "arn:aws:ecs:us-east-1:123456789012:task-definition/pcp1-mod-users:1";
const REV3: &str = "arn:aws:ecs:us-east-1:123456789012:task-definition/pcp1-mod-users:3";

fn baseline() -> Baseline {
    Baseline {
        env: "pcp1".into(),
        recorded_at: 0.0,
        services: BTreeMap::from([(
            "mod-users".to_string(),
            ServiceBaseline {
                task_definition: REV1.into(),
                content_hash: "h".into(),
                desired_count: 2,
            },
        )]),
        kafka: BTreeMap::new(),
        db_instances: BTreeMap::new(),
        parameter_groups: BTreeMap::new(),
    }
}

fn live(revision: &str, count: u32) -> LiveState {
    let mut live = LiveState::default();
    live.services.insert(
        "mod-users".into(),
        LiveService {
            name: "mod-users".into(),
            arn: "arn:aws:ecs:us-east-1:123456789012:service/pcp1-pvt/mod-users".into(),
            status: "ACTIVE".into(),
            desired_count: count,
            running_count: count,
            task_definition: revision.into(),
            deployments: Vec::new(),
            tags: BTreeMap::new(),
            problems: Vec::new(),
            events: Vec::new(),
            placement: None,
        },
    );
    live
}

#[test]
fn the_way_back_runs_the_recorded_revision_and_count() {
    let plan = restore_plan(&baseline(), &live(REV3, 3), &Estimates::default());
    assert_eq!(plan.actions.len(), 1);
    assert_eq!(
        plan.actions[0].op,
        Op::EcsServiceRestore {
            // The fixture's live state has no cluster record.
            cluster: String::new(),
            running: REV3.into(),
            revision: REV1.into(),
            count: Some(2),
        }
    );
    assert!(plan.estimate_secs > 0.0);
    let checked = verify(&baseline(), &live(REV3, 3));
    assert_eq!(
        checked[0].differences,
        [
            "task_definition: pcp1-mod-users:3, baseline pcp1-mod-users:1",
            "desired_count: 3, baseline 2"
        ]
    );
    assert!(!checked[0].ok);
}

#[test]
fn nothing_to_do_when_the_baseline_runs() {
    let plan = restore_plan(&baseline(), &live(REV1, 2), &Estimates::default());
    assert!(plan.actions.is_empty());
    assert_eq!(plan.estimate_secs, 0.0);
    assert!(verify(&baseline(), &live(REV1, 2)).iter().all(|v| v.ok));
}
