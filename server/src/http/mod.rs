//! The HTTP surface: probes, the API, the server-rendered web app and its static files, browser sessions,
//! with one log line per request.

mod health;

use std::time::Duration;

use anteroom_app::{App, shell};
use axum::{Router, body::Body, http::Request, http::Response, routing::get};
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, file_and_error_handler, generate_route_list};
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::AppState;

/// Builds the whole router for one server instance.
pub fn router(state: AppState) -> Router {
    let leptos_routes = generate_route_list(App);
    let services = crate::web::services(&state);
    let options = state.leptos_options.clone();
    let sessions = crate::web::session_layer(state.store.clone(), state.config.secure_cookies);

    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .merge(crate::api::router(&state))
        .route("/api/{*rest}", axum::routing::any(crate::api::not_found))
        .merge(crate::web::routes())
        .leptos_routes_with_context(
            &state,
            leptos_routes,
            move || provide_context(services.clone()),
            move || shell(options.clone()),
        )
        .route("/metrics", get(crate::metrics::render))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::metrics::track,
        ))
        .fallback(file_and_error_handler::<AppState, _>(shell))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::web::attach_viewer,
        ))
        .layer(sessions)
        // One `tracing` line per request, written when the response is ready.
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<Body>| {
                    tracing::info_span!("request", method = %request.method(), path = %request.uri().path())
                })
                .on_request(())
                .on_response(|response: &Response<Body>, latency: Duration, _span: &Span| {
                    tracing::info!(
                        status = response.status().as_u16(),
                        latency_ms = latency.as_secs_f64() * 1000.0,
                        "served"
                    );
                })
                .on_failure(()),
        )
        .with_state(state)
}
