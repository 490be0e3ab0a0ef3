//! The spec language: YAML files read into typed values that remember their source
//! positions, merged (`extends`, defaults, overrides), decoded and linted.
//!
//! source -> node (serde-saphyr) -> merge -> decode -> lint
pub mod catalog;
pub mod copy;
pub mod decode;
pub mod deferred;
pub mod diagnostic;
pub mod env;
pub mod lint;
pub mod load;
pub mod lock_url;
pub mod merge;
pub mod node;
pub mod playbook;
pub mod secrets;
pub mod source;

pub use diagnostic::{Diagnostic, Diagnostics, Severity};
pub use env::EnvSpec;
pub use load::{LoadedEnv, Loader};
pub use playbook::Playbook;
