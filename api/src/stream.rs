//! `GET /api/v1/events`: Server-Sent Events of rounds created, answered and expired and sessions changed.
//! A client reconnecting with `Last-Event-ID` gets what it missed, or a `resync` event telling it to re-read.

use std::convert::Infallible;

use axum::{
    extract::State,
    http::HeaderMap,
    response::sse::{Event as SseEvent, KeepAlive, Sse},
};
use futures::{Stream, StreamExt, stream};
use tokio::sync::broadcast::error::RecvError;

use super::extract::Caller;
use crate::error::Unauthorized;
use crate::{AppState, events::Event};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(events))
}

fn to_sse(event: &Event) -> SseEvent {
    SseEvent::default()
        .id(event.id.to_string())
        .event(event.kind.as_str())
        .json_data(event)
        .unwrap_or_else(|_| SseEvent::default().event(event.kind.as_str()))
}

fn resync() -> SseEvent {
    SseEvent::default()
        .event("resync")
        .data("Some events were missed; read the current state again.")
}

#[utoipa::path(
    get,
    path = "/api/v1/events",
    tag = "events",
    responses((status = 200, description = "Server-Sent Events: round.created, round.answered, round.expired, session.changed; resumable with Last-Event-ID", content_type = "text/event-stream"), Unauthorized)
)]
async fn events(
    State(state): State<AppState>,
    _caller: Caller,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    Sse::new(event_stream(&state, &headers).map(Ok)).keep_alive(KeepAlive::default())
}

/// The events a watcher sees: what it missed since its `Last-Event-ID` (or `resync`, or `ready` on a first
/// connection), then every event as it happens, until the instance shuts down. The pages' own stream
/// (`/fn/live`) is this one with the queue's view added.
pub fn event_stream(
    state: &AppState,
    headers: &HeaderMap,
) -> impl Stream<Item = SseEvent> + Send + use<> {
    let receiver = state.events.subscribe();
    let last_id = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    let backlog: Vec<SseEvent> = match last_id.map(|id| state.events.since(id)) {
        Some(Some(missed)) => missed.iter().map(to_sse).collect(),
        Some(None) => vec![resync()],
        None => vec![SseEvent::default().event("ready").data("connected")],
    };
    let guard = state.events.subscriber_guard();
    let closed = state.events.closed();
    // The last word before a shutdown is said once, whichever comes first: the closing or an event.
    let live = stream::unfold(
        (receiver, closed, guard, false),
        |(mut receiver, mut closed, guard, said_closing)| async move {
            if said_closing {
                return None;
            }
            let closing = || {
                // The browser reconnects (to whichever instance serves) after this instead of its default.
                SseEvent::default()
                    .event("closing")
                    .data("Anteroom is restarting")
                    .retry(RECONNECT_AFTER_SHUTDOWN)
            };
            if *closed.borrow() {
                return Some((closing(), (receiver, closed, guard, true)));
            }
            tokio::select! {
                biased;
                _ = closed.changed() => Some((closing(), (receiver, closed, guard, true))),
                received = receiver.recv() => match received {
                    Ok(event) => Some((to_sse(&event), (receiver, closed, guard, false))),
                    Err(RecvError::Lagged(_)) => Some((resync(), (receiver, closed, guard, false))),
                    Err(RecvError::Closed) => None,
                },
            }
        },
    );
    stream::iter(backlog).chain(live)
}

/// How soon a browser reconnects once a shutdown ended its stream.
const RECONNECT_AFTER_SHUTDOWN: std::time::Duration = std::time::Duration::from_secs(2);
