//! The calls behind `park` and `unpark`, one resource at a time: few calls, paced by ECS's
//! token buckets, each retried on throttling, each journaled (intent, then done or failed).
//! No dependency graph is needed: park scales services down before stopping the databases
//! they use; unpark starts the databases, waits for them, then scales the services up and
//! waits until they are healthy.
use envctl_aws_model::operation::{EcsOp, RdsOp};
use envctl_aws_model::status::{DbInstanceStatus, DeploymentStatus, RolloutState};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{ParkPlan, ServiceStep, UnparkPlan};
use crate::aws::paced::retry as retrying;
use crate::aws::{AwsError, Clients, ecs, rds};
use crate::exec::Operation;
use crate::exec::journal::{Entry, Journal, Phase};
use crate::exec::wait::{PollInterval, Probe, await_condition};
use crate::exec::{Clock, RateLimits};
use crate::import::PARKED_COUNT_TAG;
use crate::plan::ResourceId;

/// How long unpark waits: RDS documents that a start can take "from minutes to hours".
pub const DB_START_DEADLINE: Duration = Duration::from_secs(60 * 60);
/// How long unpark waits for a stopping instance to be stopped before it can start it; a
/// stop, like a start, can take "from minutes to hours".
pub const DB_STOP_DEADLINE: Duration = Duration::from_secs(60 * 60);
/// Services reach their counts within a deployment; ECS's own is minutes.
pub const SERVICES_DEADLINE: Duration = Duration::from_secs(30 * 60);

pub struct Options {
    pub run_id: String,
    pub journal: Option<Arc<Journal>>,
    /// Set on SIGINT/SIGTERM: nothing new starts.
    pub cancel: crate::exec::cancel::Cancel,
}

/// How one call or wait ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub resource: String,
    pub operation: &'static str,
    pub result: Result<(), String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub steps: Vec<Step>,
    pub interrupted: bool,
}

impl Report {
    pub fn succeeded(&self) -> bool {
        !self.interrupted && self.steps.iter().all(|s| s.result.is_ok())
    }

    /// The resources of the failed steps, each with why: what did not get where it should.
    pub fn failures(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter_map(|s| match &s.result {
                Err(e) => Some(format!("{} ({}: {e})", s.resource, s.operation)),
                Ok(()) => None,
            })
            .collect()
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in &self.steps {
            let result = match &s.result {
                Ok(()) => "done".to_string(),
                Err(e) => format!("FAILED: {e}"),
            };
            out.push_str(&format!(
                "  {:<40} {:<16} {result}\n",
                s.resource, s.operation
            ));
        }
        if self.interrupted {
            out.push_str("  interrupted: the rest was not started; run the command again\n");
        }
        out
    }
}

struct Runner<'a> {
    clock: Arc<dyn Clock>,
    limits: RateLimits,
    options: &'a Options,
    report: Report,
}

impl Runner<'_> {
    fn journal(&self, resource: &str, operation: &str, phase: Phase, message: Option<String>) {
        if let Some(j) = &self.options.journal {
            // The journal is a record for the next run; failing to write it does not undo
            // a call that AWS already took.
            let _ = j.record(&Entry {
                time: self.clock.now(),
                run_id: self.options.run_id.clone(),
                resource: resource.to_string(),
                operation: operation.to_string(),
                phase,
                message,
            });
        }
    }

    fn cancelled(&mut self) -> bool {
        if self.options.cancel.load(Ordering::SeqCst) {
            self.report.interrupted = true;
        }
        self.report.interrupted
    }

    /// One mutating call: journaled, paced, retried on throttling. Returns whether it worked.
    async fn call<F, Fut>(&mut self, resource: &str, operation: Operation, f: F) -> bool
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<(), AwsError>>,
    {
        self.journal(resource, operation.name(), Phase::Intent, None);
        let limits = &self.limits;
        let result = retrying(self.clock.as_ref(), resource, || async {
            limits.acquire(operation).await;
            f().await
        })
        .await;
        let (phase, message) = match &result {
            Ok(()) => (Phase::Done, None),
            Err(e) => (Phase::Failed, Some(e.to_string())),
        };
        self.journal(resource, operation.name(), phase, message);
        let ok = result.is_ok();
        self.report.steps.push(Step {
            resource: resource.to_string(),
            operation: operation.name(),
            result: result.map_err(|e| e.to_string()),
        });
        ok
    }
}

fn runner(clock: Arc<dyn Clock>, options: &Options) -> Runner<'_> {
    Runner {
        limits: RateLimits::ecs(clock.clone()),
        clock,
        options,
        report: Report::default(),
    }
}

/// Scales services to 0 (the count kept in a tag first, so it is never lost), then stops the
/// DB instances.
pub async fn park(
    clients: &Clients,
    clock: Arc<dyn Clock>,
    cluster: &str,
    plan: &ParkPlan,
    options: &Options,
) -> Report {
    let mut r = runner(clock, options);
    for s in &plan.services {
        if r.cancelled() {
            return r.report;
        }
        let resource = ResourceId::service(&s.name).to_string();
        let tags = BTreeMap::from([(PARKED_COUNT_TAG.to_string(), s.count.to_string())]);
        let ecs_client = &clients.ecs;
        if !r
            .call(&resource, Operation::Ecs(EcsOp::TagResource), || {
                ecs::tag_resource(ecs_client, &s.arn, &tags)
            })
            .await
        {
            continue;
        }
        r.call(&resource, Operation::Ecs(EcsOp::UpdateService), || async {
            ecs::update_service(ecs_client, cluster, &s.name, None, Some(0))
                .await
                .map(|_| ())
        })
        .await;
    }
    for id in &plan.databases {
        if r.cancelled() {
            return r.report;
        }
        let rds_client = &clients.rds;
        r.call(
            &ResourceId::db_instance(id).to_string(),
            Operation::Rds(RdsOp::StopDBInstance),
            || rds::stop_instance(rds_client, id),
        )
        .await;
    }
    r.report
}

/// Brings the DB instances back to `available` (a stopping one is waited for until it is
/// stopped, then started), then restores the service counts and waits until every service
/// runs them with a completed deployment. A resource that does not come back is a failed
/// step naming it.
pub async fn unpark(
    clients: &Clients,
    clock: Arc<dyn Clock>,
    cluster: &str,
    plan: &UnparkPlan,
    options: &Options,
) -> Report {
    let mut r = runner(clock.clone(), options);
    if !plan.databases.is_empty() {
        if r.cancelled() {
            return r.report;
        }
        // RDS starts only a stopped instance: one still stopping (unpark right after park)
        // must get there first.
        let settled = wait_dbs(
            clients,
            clock.as_ref(),
            &plan.databases,
            DB_STOP_DEADLINE,
            |status| status != DbInstanceStatus::Stopping,
        )
        .await;
        let statuses = match settled {
            Ok(statuses) => statuses,
            Err(e) => {
                r.report.steps.push(Step {
                    resource: db_resources(&plan.databases),
                    operation: "wait stopped",
                    result: Err(e),
                });
                return r.report;
            }
        };
        for (id, status) in &statuses {
            if status != DbInstanceStatus::Stopped {
                continue; // starting or available already
            }
            if r.cancelled() {
                return r.report;
            }
            let rds_client = &clients.rds;
            r.call(
                &ResourceId::db_instance(id).to_string(),
                Operation::Rds(RdsOp::StartDBInstance),
                || rds::start_instance(rds_client, id),
            )
            .await;
        }
        if !r.report.succeeded() || r.cancelled() {
            return r.report;
        }
        let result = wait_dbs(
            clients,
            clock.as_ref(),
            &plan.databases,
            DB_START_DEADLINE,
            |status| status == DbInstanceStatus::Available,
        )
        .await
        .map(|_| ());
        r.report.steps.push(Step {
            resource: db_resources(&plan.databases),
            operation: "wait available",
            result,
        });
        if !r.report.succeeded() {
            // Services without their database would only fail their health checks.
            return r.report;
        }
    }
    let mut scaled: Vec<ServiceStep> = Vec::new();
    for s in &plan.services {
        if r.cancelled() {
            return r.report;
        }
        let resource = ResourceId::service(&s.name).to_string();
        let ecs_client = &clients.ecs;
        if !r
            .call(&resource, Operation::Ecs(EcsOp::UpdateService), || async {
                ecs::update_service(ecs_client, cluster, &s.name, None, Some(s.count))
                    .await
                    .map(|_| ())
            })
            .await
        {
            continue;
        }
        let keys = [PARKED_COUNT_TAG];
        r.call(&resource, Operation::Ecs(EcsOp::UntagResource), || {
            ecs::untag_resource(ecs_client, &s.arn, &keys)
        })
        .await;
        scaled.push(s.clone());
    }
    if !scaled.is_empty() && !r.cancelled() {
        let result = wait_services(clients, clock.as_ref(), &r.limits, cluster, &scaled).await;
        r.report.steps.push(Step {
            resource: format!(
                "ecs ({})",
                crate::plan::estimate::plural(scaled.len(), "service", "services")
            ),
            operation: "wait healthy",
            result,
        });
    }
    r.report
}

fn db_resources(ids: &[String]) -> String {
    ids.iter()
        .map(|id| ResourceId::db_instance(id).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits until every instance of `ids` has a status `reached` accepts; returns each one's
/// status then. A status RDS does not leave by itself, or an instance gone, fails at once,
/// naming the instance.
async fn wait_dbs(
    clients: &Clients,
    clock: &dyn Clock,
    ids: &[String],
    deadline: Duration,
    reached: impl Fn(&str) -> bool,
) -> Result<Vec<(String, String)>, String> {
    let reached = &reached;
    let outcome = await_condition(
        clock,
        deadline,
        PollInterval::growing(Duration::from_secs(15), Duration::from_secs(60)),
        || async move {
            let all = match retrying(clock, "rds", || rds::describe_instances(&clients.rds)).await {
                Ok(all) => all,
                Err(e) => {
                    return Probe::Failed {
                        reason: e.to_string(),
                    };
                }
            };
            let mut pending = Vec::new();
            let mut statuses = Vec::new();
            for id in ids {
                match all.iter().find(|d| &d.identifier == id) {
                    Some(d) if reached(&d.status) => {
                        statuses.push((id.clone(), d.status.clone()));
                    }
                    Some(d) if envctl_aws_model::state::db_instance::needs_operator(&d.status) => {
                        return Probe::Failed {
                            reason: format!("rds/instance/{id} is {}", d.status),
                        };
                    }
                    Some(d) => pending.push(format!("rds/instance/{id} {}", d.status)),
                    None => {
                        return Probe::Failed {
                            reason: format!("rds/instance/{id} no longer exists"),
                        };
                    }
                }
            }
            if pending.is_empty() {
                Probe::Done(statuses)
            } else {
                Probe::Pending {
                    status: pending.join(", "),
                }
            }
        },
    )
    .await;
    outcome.into_result("DB instances")
}

async fn wait_services(
    clients: &Clients,
    clock: &dyn Clock,
    limits: &RateLimits,
    cluster: &str,
    services: &[ServiceStep],
) -> Result<(), String> {
    let names: Vec<String> = services.iter().map(|s| s.name.clone()).collect();
    let outcome = await_condition(
        clock,
        SERVICES_DEADLINE,
        PollInterval::growing(Duration::from_secs(5), Duration::from_secs(30)),
        || async {
            let mut pending = 0;
            let mut example = String::new();
            for chunk in names.chunks(ecs::DESCRIBE_SERVICES_BATCH) {
                let batch = retrying(clock, cluster, || async {
                    limits
                        .acquire(Operation::Ecs(EcsOp::DescribeServices))
                        .await;
                    ecs::describe_services(&clients.ecs, cluster, chunk).await
                })
                .await;
                let batch = match batch {
                    Ok(b) => b,
                    Err(e) => {
                        return Probe::Failed {
                            reason: e.to_string(),
                        };
                    }
                };
                for s in batch {
                    let primary = s
                        .deployments
                        .iter()
                        .find(|d| d.status == DeploymentStatus::Primary);
                    if primary.is_some_and(|d| d.rollout_state == RolloutState::Failed) {
                        return Probe::Failed {
                            reason: format!("{}: deployment failed", s.name),
                        };
                    }
                    let done = s.running_count == s.desired_count
                        && s.deployments.len() <= 1
                        && primary.is_none_or(|d| d.rollout_state == RolloutState::Completed);
                    if !done {
                        pending += 1;
                        if example.is_empty() {
                            example = format!("{} {}/{}", s.name, s.running_count, s.desired_count);
                        }
                    }
                }
            }
            if pending == 0 {
                Probe::Done(())
            } else {
                Probe::Pending {
                    status: format!(
                        "{} starting (e.g. {example})",
                        crate::plan::estimate::plural(pending, "service", "services")
                    ),
                }
            }
        },
    )
    .await;
    outcome.into_result("services healthy")
}
