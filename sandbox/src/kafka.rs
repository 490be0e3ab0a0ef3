//! Amazon MSK (restJson1).
use crate::protocol::ApiError;
use crate::state::{Ctx, World};
use axum::http::Method;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct KafkaState {}

impl KafkaState {
    pub fn settle(&mut self, _ctx: &Ctx<'_>) {}
}

pub struct Route {
    pub operation: &'static str,
}

impl Route {
    pub fn resource(&self) -> Option<String> {
        None
    }
}

pub fn route(_m: &Method, _path: &str, _q: Option<&str>, _body: &[u8]) -> Result<Route, ApiError> {
    Err(ApiError::new(
        404,
        "NotFoundException",
        "not implemented yet",
    ))
}

pub fn handle(
    _w: &mut World,
    _ctx: &Ctx<'_>,
    _r: &Route,
) -> Result<(u16, serde_json::Value), ApiError> {
    Err(ApiError::new(
        404,
        "NotFoundException",
        "not implemented yet",
    ))
}
