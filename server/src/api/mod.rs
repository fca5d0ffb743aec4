//! The JSON API: producers (§5), rounds and workers (§5.3), management and answers (§6), live events.

pub mod answers;
pub mod error;
pub mod extract;
pub mod gate;
pub mod producer;
pub mod sessions;
pub mod stream;
pub mod views;
pub mod workers;

use axum::{Router, extract::DefaultBodyLimit, http::Method};

use crate::AppState;
use error::ApiError;

/// Every `/api/v1` route, with the body limit and JSON errors for unknown routes and methods.
pub fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .merge(producer::routes())
        .merge(workers::routes())
        .merge(sessions::routes())
        .merge(answers::routes())
        .merge(stream::routes())
        .merge(gate::routes())
        .method_not_allowed_fallback(|method: Method| async move {
            ApiError::new(
                "method_not_allowed",
                format!("{method} is not allowed on this route."),
            )
        })
        .layer(DefaultBodyLimit::max(state.config.body_limit))
}

/// Unknown `/api/…` paths answer JSON, never the web app's HTML 404.
pub async fn not_found() -> ApiError {
    ApiError::not_found("No such API route; see /api/v1/openapi.json for the routes there are.")
}
