//! Liveness and readiness probes for load balancers and orchestrators.

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use serde_json::json;

use crate::AppState;

/// `GET /healthz`: the process is up and serving HTTP.
pub async fn healthz() -> impl IntoResponse {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: the database answers, so requests can be served.
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let backend = state.store.backend().name();
    match state.store.ping().await {
        Ok(()) => (
            StatusCode::OK,
            Json(json!({ "status": "ready", "database": backend })),
        ),
        Err(error) => {
            tracing::warn!(%error, "readiness probe: database unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({
                    "error": "database_unavailable",
                    "message": format!("The {backend} database did not answer; check DATABASE_URL and that the database is running."),
                })),
            )
        }
    }
}
