//! envctl-aws-model: one model of AWS behaviour, shared by envctl and its emulator.
//!
//! envctl predicts what AWS will do before it calls it: the capacity lint and `preflight`
//! place tasks the way ECS does, the rollout settings check that a deployment's tasks fit
//! beside the running ones, the rate limiter paces calls by ECS's token buckets, and tags
//! and JTL timestamps need civil dates. The sandbox (`envctl-sandbox`) emulates the same
//! behaviour. Both take these facts from this crate, so that `envctl validate` predicts
//! what the sandbox does, and the tool does not depend on its own test emulator for facts
//! about AWS (envctl depends on the sandbox only to run `--sandbox`).
//!
//! Data and pure functions only: no I/O, no async, no dependencies.
//!
//! - [`placement`]: where ECS puts a service's tasks on EC2 container instances.
//! - [`ec2`]: EC2 instance sizes and families.
//! - [`api`]: which AWS operations mutate, and the ECS API's token buckets.
//! - [`operation`]: operation names as types, one enum per API, each ECS one with its bucket.
//! - [`arn`]: Amazon Resource Names, parsed once.
//! - [`error_code`]: the AWS error codes envctl acts on.
//! - [`state`]: resource states, and which need an operator.
//! - [`status`]: every status field compared, as an enum with AWS's spelling.
//! - [`civil`]: proleptic Gregorian dates as days since 1970-01-01.
//! - [`engine`]: the load engines' protocol and Fargate's task launch limits.
//! - [`msk`]: what MSK accepts of an in-place change (broker types, storage cool-down).
//! - [`sizing`]: report 003's producer throughput ceiling from the brokers' storage.

pub mod api;
pub mod arn;
pub mod civil;
pub mod ec2;
pub mod engine;
pub mod error_code;
pub mod msk;
pub mod operation;
pub mod placement;
pub mod sizing;
pub mod state;
pub mod status;

pub use api::{ecs_rate_limit, is_mutating};
pub use civil::{civil_from_days, days_from_civil};
pub use ec2::{
    EC2_FAMILIES, EC2_NETWORK_INTERFACES, EC2_SIZES, OS_AND_AGENT_MEMORY_MIB, awsvpc_task_slots,
};
pub use error_code::ErrorCode;
