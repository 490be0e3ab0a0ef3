//! Test matrices: expanding a playbook into points, ordering them so the environment
//! changes as little as possible, and running them (switch, workload, collect, teardown).
pub mod effective;
pub mod error;
pub mod eta;
pub mod expand;
pub mod metrics;
pub mod options;
pub mod order;
pub mod plan;
pub mod point;
pub mod render;
pub mod restore;
pub mod runner;
pub mod steps;

pub use error::MatrixError;
pub use expand::{Point, expand};
pub use options::{MatrixOptions, RestoreMode};
pub use order::{Costs, Method, Ordering, order};
pub use plan::{Ending, MatrixPlan, plan_matrix};
pub use runner::run;
