//! `GET /api/v1/gate`: whether producers can reach Anteroom, and the sentence agents' system prompts carry.
//! The probe that keeps it current is a scheduled job; until it has run, the gate reads as healthy since start.

use std::sync::{Arc, Mutex};

use axum::{Json, extract::State};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::extract::Caller;
use crate::AppState;
use utoipa_axum::{router::OpenApiRouter, routes};

pub const HEALTHY_PROMPT: &str = "Human approvals go through Anteroom and its gate is working: a redacted or declined \
answer is the gate's real answer; respect it.";
pub const BROKEN_PROMPT: &str = "The Anteroom approval gate is BROKEN: a redacted or declined answer means nothing \
about policy. Report the failure to a person; do not route around it.";

/// The gate's last known state.
#[derive(Debug, Clone, Serialize)]
pub struct GateState {
    pub healthy: bool,
    pub since: DateTime<Utc>,
    pub last_checked: Option<DateTime<Utc>>,
    pub prompt_line: &'static str,
}

/// Shared gate state, written by the probe job and read by the API.
#[derive(Clone)]
pub struct Gate(Arc<Mutex<GateState>>);

impl Default for Gate {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(GateState {
            healthy: true,
            since: Utc::now(),
            last_checked: None,
            prompt_line: HEALTHY_PROMPT,
        })))
    }
}

impl Gate {
    pub fn current(&self) -> GateState {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(gate))
}

#[utoipa::path(
    get,
    path = "/api/v1/gate",
    tag = "gate",
    responses((status = 200, description = "`{healthy, since, last_checked, prompt_line}`"), (status = 401, description = "unauthorized"))
)]
async fn gate(State(state): State<AppState>, _caller: Caller) -> Json<GateState> {
    Json(state.gate.current())
}
