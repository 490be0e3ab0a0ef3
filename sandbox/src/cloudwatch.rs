//! Amazon CloudWatch (rpc-v2-cbor).
use crate::protocol::ApiError;
use crate::state::{Ctx, World};
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CloudWatchState {}

pub fn handle(
    _w: &mut World,
    _ctx: &Ctx<'_>,
    op: &str,
    _i: &ciborium::Value,
) -> Result<ciborium::Value, ApiError> {
    Err(ApiError::bad(
        "InvalidAction",
        format!("{op} is not implemented yet"),
    ))
}
