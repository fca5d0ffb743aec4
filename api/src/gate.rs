//! `GET /api/v1/gate`: whether producers can reach Anteroom, and the sentence agents' system prompts carry.
//! The state is shared by all instances (kept in the database) and written by the gate-probe job.

use anteroom_domain::gate::GateState;
use axum::{Json, extract::State};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{error::ApiResult, extract::Caller};
use crate::AppState;
use crate::error::Unauthorized;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(gate))
}

#[utoipa::path(
    get,
    path = "/api/v1/gate",
    tag = "gate",
    responses((status = 200, description = "The gate's state and the prompt line for agents", body = GateState), Unauthorized)
)]
/// The gate's state and the prompt line for agents.
async fn gate(State(state): State<AppState>, _caller: Caller) -> ApiResult<Json<GateState>> {
    Ok(Json(state.store.gate_state().await?))
}
