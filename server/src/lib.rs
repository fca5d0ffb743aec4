//! The `anteroom` server: configuration, HTTP routes and the process lifecycle, as a library so that
//! integration tests can start the real server on a port of their own.

pub mod ask;
pub mod backup;
pub mod build_info;
pub mod config;
pub mod instance;
pub mod jobs;
pub mod pages;
pub mod router;

/// The JSON API and what every request shares live in their own crate, which knows nothing of the pages.
pub use anteroom_api::{
    self as api, ApiConfig, AppState, MailConfig, SlackConfig, announce, credentials, events,
    metrics, passwords, people, postgres_events, rate_limit, state,
};

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
};
use leptos::config::LeptosOptions;
use tokio::{net::TcpListener, sync::Semaphore};
use tower::ServiceExt;

/// How long a shutdown waits for open requests (long-polls, streams) before closing their connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves Anteroom on `listener` until `shutdown` completes, then lets in-flight requests finish.
///
/// Each connection must send a request's headers within `header_read_timeout` (idle keep-alive connections
/// included), and at most `max_connections` are open at once: past that, new connections wait in the
/// listen queue until one closes, so a slow client can hold a slot only briefly and never exhaust the
/// process's file descriptors.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    (leptos_options, site, sign_in): (
        LeptosOptions,
        router::site_files::SiteFiles,
        pages::SignInSettings,
    ),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let events = state.events.clone();
    let limits = state.config.connections;
    let router = router::router(state, leptos_options, site, &sign_in);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    // HTTP/1.1 only: browsers speak HTTP/2 only over TLS, which a proxy in front terminates, and a cleartext
    // HTTP/2 connection could idle without ever being asked for headers.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);

    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors or a connection reset before accept: wait a moment, keep serving.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<_>| {
            request
                .extensions_mut()
                .insert(ConnectInfo::<SocketAddr>(peer));
            router.clone().oneshot(request)
        });
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _slot = slot;
            if let Err(error) = connection.await {
                tracing::debug!(%error, %peer, "connection ended with an error");
            }
        });
    }

    // Event streams never end by themselves; close them so the shutdown can finish.
    events.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("shutdown: some connections were still open after the grace period");
    }
    Ok(())
}
