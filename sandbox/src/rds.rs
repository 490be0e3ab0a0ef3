//! Amazon RDS (awsQuery).
use crate::protocol::ApiError;
use crate::protocol::query::Params;
use crate::state::{Ctx, World};
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RdsState {}

impl RdsState {
    pub fn settle(&mut self, _ctx: &Ctx<'_>) {}
}

pub fn resource_of(p: &Params) -> Option<String> {
    p.get("DBInstanceIdentifier").map(str::to_string)
}

pub fn handle(_w: &mut World, _ctx: &Ctx<'_>, op: &str, _p: &Params) -> Result<String, ApiError> {
    Err(ApiError::bad(
        "InvalidAction",
        format!("{op} is not implemented yet"),
    ))
}
