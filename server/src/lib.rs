//! The `anteroom` server: configuration, HTTP routes and the process lifecycle, as a library so that
//! integration tests can start the real server on a port of their own.

pub mod api;
pub mod ask;
pub mod config;
pub mod credentials;
pub mod events;
pub mod http;
pub mod jobs;
pub mod metrics;
pub mod rate_limit;
pub mod relay;
pub mod state;
pub mod web;

use std::future::Future;

use tokio::net::TcpListener;

pub use state::{ApiConfig, AppState};

/// Serves Anteroom on `listener` until `shutdown` completes, then lets in-flight requests finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let events = state.events.clone();
    let router = http::router(state);
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown.await;
        // Event streams never end by themselves; close them so the shutdown can finish.
        events.close();
    })
    .await
}
