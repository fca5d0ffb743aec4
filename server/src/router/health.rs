//! Liveness and readiness probes for load balancers and orchestrators.

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use serde_json::json;

use crate::{AppState, build_info};

/// `GET /healthz`: the process is up and serving HTTP.
pub async fn healthz() -> impl IntoResponse {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: the database answers, so requests can be served; with this binary's version and the
/// database's schema version, so a rolling upgrade can be watched instance by instance.
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let backend = state.store.backend().name();
    match state.store.schema_version().await {
        Ok(migration) => (
            StatusCode::OK,
            Json(json!({
                "status": "ready",
                "database": backend,
                "version": build_info::VERSION,
                "commit": build_info::COMMIT,
                "migration": migration,
            })),
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
