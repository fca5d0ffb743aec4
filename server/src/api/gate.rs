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

/// What one probe result did to the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateChange {
    StillHealthy,
    /// The first failure of an outage: one incident opens.
    IncidentOpened,
    /// Another failing tick of the same outage: warn, but page nobody again.
    StillBroken,
    /// The first success after an outage: the incident closes.
    IncidentClosed,
}

impl Gate {
    pub fn current(&self) -> GateState {
        self.lock().clone()
    }

    /// Records a probe result taken at `now`.
    pub fn record(&self, healthy: bool, now: DateTime<Utc>) -> GateChange {
        let mut state = self.lock();
        let change = match (state.healthy, healthy) {
            (true, true) => GateChange::StillHealthy,
            (true, false) => GateChange::IncidentOpened,
            (false, false) => GateChange::StillBroken,
            (false, true) => GateChange::IncidentClosed,
        };
        if state.healthy != healthy {
            state.since = now;
        }
        state.healthy = healthy;
        state.last_checked = Some(now);
        state.prompt_line = if healthy {
            HEALTHY_PROMPT
        } else {
            BROKEN_PROMPT
        };
        change
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_opens_one_incident_and_recovery_closes_it() {
        let gate = Gate::default();
        let at = |s: i64| DateTime::from_timestamp(1_800_000_000 + s, 0).expect("time");
        assert_eq!(gate.record(true, at(0)), GateChange::StillHealthy);
        assert_eq!(gate.record(false, at(300)), GateChange::IncidentOpened);
        assert_eq!(gate.current().prompt_line, BROKEN_PROMPT);
        assert_eq!(gate.record(false, at(600)), GateChange::StillBroken);
        assert_eq!(
            gate.current().since,
            at(300),
            "the outage started at its first failure"
        );
        assert_eq!(gate.record(true, at(900)), GateChange::IncidentClosed);
        let state = gate.current();
        assert!(state.healthy);
        assert_eq!((state.since, state.last_checked), (at(900), Some(at(900))));
        assert_eq!(state.prompt_line, HEALTHY_PROMPT);
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
