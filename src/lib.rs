//! envctl: declarative performance-test environments on AWS and automatic test matrices.
//!
//! The pipeline (see docs/architecture.md): `spec` (YAML with source positions) ->
//! `model` (desired state) -> `plan` (pure diff against the live state `account` observes)
//! -> `apply` (AWS calls through the `aws` adapters, on `exec`'s clocks and buckets).
//! `matrix` runs playbooks, `load` their engines, `report` renders results.
pub mod account;
pub mod apply;
pub mod aws;
pub mod cli;
pub mod commands;
pub mod compile;
pub mod converge;
pub mod exec;
pub mod import;
pub mod load;
pub mod lock;
pub mod matrix;
pub mod model;
pub mod park;
pub mod plan;
pub mod preflight;
pub mod redact;
pub mod report;
pub mod results;
pub mod run;
pub mod session;
pub mod spec;
pub mod time;
