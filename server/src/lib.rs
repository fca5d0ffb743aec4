//! The `anteroom` server: configuration, HTTP routes and the process lifecycle, as a library so that
//! integration tests can start the real server on a port of their own.

pub mod config;
pub mod http;
pub mod state;

use std::future::Future;

use tokio::net::TcpListener;

pub use state::AppState;

/// Serves Anteroom on `listener` until `shutdown` completes, then lets in-flight requests finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = http::router(state);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
