//! Why a point's figures are not those of a whole, passing workload, in a few words: what
//! the report marks on them wherever they appear (tables, charts, CSV, JSON). A point where
//! one of three engines died generates a third less load; unmarked, a comparison against it
//! reads like an improvement (issue 35).
use crate::results::{PointRecord, Status, StepRecord};

/// `failed: engines lost in step smoke (engine-03: exit code 1; 1 of 3 engines)`, or `None`
/// for a point that passed.
pub fn of(record: &PointRecord) -> Option<String> {
    let status = match record.status {
        Status::Passed => return None,
        Status::Failed => "failed",
        Status::Interrupted => "interrupted",
        Status::Skipped => "skipped",
        Status::Pending | Status::Running => "unfinished",
    };
    let why = match record.steps.iter().find(|s| s.status != Status::Passed) {
        Some(step) => step_shortfall(step),
        None if record.steps.is_empty() => record
            .failure
            .as_deref()
            .map(first_clause)
            .unwrap_or_else(|| "its workload did not run".to_owned()),
        None => "a step did not run".to_owned(),
    };
    Some(format!("{status}: {why}"))
}

fn step_shortfall(step: &StepRecord) -> String {
    let name = &step.name;
    if step.status == Status::Interrupted {
        return format!("interrupted in step {name}");
    }
    if step.timed_out {
        return format!("step {name} timed out");
    }
    let Some(engines) = &step.engines else {
        return match step.exit_code {
            Some(code) => format!("step {name} failed (exit {code})"),
            None => format!("step {name} failed"),
        };
    };
    if engines.start_s.is_none() || engines.started < engines.requested {
        return format!(
            "the engines of step {name} did not start ({} of {} started)",
            engines.started, engines.requested
        );
    }
    // Engines envctl stopped because another failed are not lost: they ran until then.
    let lost: Vec<String> = engines
        .engines
        .iter()
        .filter(|e| e.exit_code != Some(0))
        .filter(|e| {
            !e.stopped_reason
                .as_deref()
                .is_some_and(|r| r.starts_with("envctl:"))
        })
        .map(|e| match e.exit_code {
            Some(code) => format!("{}: exit code {code}", e.name),
            None => format!("{}: no exit code", e.name),
        })
        .collect();
    if lost.is_empty() {
        return format!("step {name} failed");
    }
    format!(
        "engines lost in step {name} ({}; {} of {} engines)",
        lost.join(", "),
        lost.len(),
        engines.requested
    )
}

/// The first clause of a long failure (`the environment did not converge: ...`).
fn first_clause(failure: &str) -> String {
    failure
        .split([':', ';', '\n'])
        .next()
        .unwrap_or(failure)
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{EngineRecord, EnginesRecord};

    fn engine(name: &str, exit_code: i32, stopped_reason: &str) -> EngineRecord {
        EngineRecord {
            name: name.into(),
            task_arn: format!("arn:{name}"),
            last_status: "STOPPED".into(),
            exit_code: Some(exit_code),
            stopped_reason: Some(stopped_reason.into()),
            jtl_file: None,
            log_file: None,
            first_sample_ms: None,
            max_cpu_percent: None,
        }
    }

    fn point(status: Status, steps: Vec<StepRecord>) -> PointRecord {
        serde_json::from_value::<PointRecord>(serde_json::json!({
            "id": "users=u3", "axes": {"users": "u3"}, "repeat": 1, "vars": {},
            "status": "passed", "started_at": 0.0, "finished_at": 1.0,
            "transition": {"changes": [], "estimated_s": 0.0, "actual_s": 0.0, "mutating_calls": 0},
            "steps": [], "effective_file": "effective.json", "metrics_file": null,
            "failure": "the environment did not converge: ecs/service/a: rolled back"
        }))
        .map(|mut p| {
            p.status = status;
            p.steps = steps;
            p
        })
        .expect("a point record")
    }

    #[test]
    fn a_lost_engine_is_named_and_the_engines_envctl_stopped_are_not() {
        let mut step = StepRecord::not_run("smoke", "load", "jmeter".into(), 0.0);
        step.engines = Some(EnginesRecord {
            requested: 3,
            started: 3,
            start_s: Some(45.0),
            engines: vec![
                engine(
                    "engine-01",
                    143,
                    "envctl: another engine of the step failed",
                ),
                engine(
                    "engine-02",
                    143,
                    "envctl: another engine of the step failed",
                ),
                engine("engine-03", 1, "Essential container in task exited"),
            ],
            ..EnginesRecord::default()
        });
        assert_eq!(
            of(&point(Status::Failed, vec![step])).as_deref(),
            Some("failed: engines lost in step smoke (engine-03: exit code 1; 1 of 3 engines)")
        );
    }

    #[test]
    fn other_shortfalls_say_their_step_or_the_switch() {
        let mut run = StepRecord::not_run("export", "run", "x".into(), 0.0);
        run.exit_code = Some(137);
        assert_eq!(
            of(&point(Status::Failed, vec![run])).as_deref(),
            Some("failed: step export failed (exit 137)")
        );
        assert_eq!(
            of(&point(Status::Failed, vec![])).as_deref(),
            Some("failed: the environment did not converge")
        );
        assert_eq!(of(&point(Status::Passed, vec![])), None);
    }
}
