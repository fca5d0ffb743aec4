//! `GET /fn/live`: the pages' event stream — every event of `/api/v1/events`, plus the attention queue's view,
//! read once per burst of changes and sent to every open page, so live updates cost the database one reading
//! per change on each instance, however many pages are open.

use std::{
    sync::{Arc, Once},
    time::Duration,
};

use anteroom_app::ui::{model::Viewer, page_data::PageData};
use axum::{
    extract::{Request, State},
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, KeepAlive, Sse},
    },
};
use futures::{StreamExt, stream};
use tokio::sync::{broadcast::error::TryRecvError, watch};

use crate::{AppState, api::error::ApiError, events::EventHub};

/// How long one stream lives before the browser must connect again, which checks its sign-in again (a
/// person signed out or removed elsewhere stops receiving views within this time).
const STREAM_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// How long a reading waits after the first event of a burst: one change announces two or three events back to
/// back (`round.created`, then `session.changed`), and one reading should cover them all.
const GATHER: Duration = Duration::from_millis(5);

/// The queue's latest view as JSON, made by one task per instance for every page watching.
#[derive(Clone)]
pub struct QueueFeed {
    inner: Arc<FeedInner>,
}

struct FeedInner {
    views: watch::Sender<Option<Arc<str>>>,
    services: PageData,
    events: EventHub,
    started: Once,
}

impl QueueFeed {
    pub fn new(services: PageData, events: EventHub) -> Self {
        Self {
            inner: Arc::new(FeedInner {
                views: watch::Sender::new(None),
                services,
                events,
                started: Once::new(),
            }),
        }
    }

    /// The views made from now on; the task that makes them starts with the first watcher.
    fn subscribe(&self) -> watch::Receiver<Option<Arc<str>>> {
        let views = self.inner.views.subscribe();
        let inner = Arc::clone(&self.inner);
        self.inner.started.call_once(move || {
            tokio::spawn(make_views(inner));
        });
        views
    }
}

/// Reads the queue after each change while anyone watches. Events that arrive during a reading are
/// covered by the next one: a burst of changes costs one reading, not one per event.
async fn make_views(feed: Arc<FeedInner>) {
    let mut events = feed.events.subscribe();
    let mut closed = feed.events.closed();
    loop {
        tokio::select! {
            _ = closed.wait_for(|closed| *closed) => return,
            received = events.recv() => {
                if matches!(received, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                    return;
                }
            }
        }
        tokio::time::sleep(GATHER).await;
        loop {
            match events.try_recv() {
                Ok(_) | Err(TryRecvError::Lagged(_)) => {}
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Closed) => return,
            }
        }
        if feed.views.receiver_count() == 0 {
            // Nobody watches: a page that connects later reads the queue itself.
            continue;
        }
        match feed.services.queue().await {
            Ok(view) => match serde_json::to_string(&view) {
                Ok(json) => {
                    feed.views.send_replace(Some(Arc::from(json)));
                }
                Err(error) => tracing::warn!(%error, "live: cannot encode the queue"),
            },
            // The pages keep their last view; the next change tries again.
            Err(error) => tracing::warn!(%error, "live: cannot read the queue"),
        }
    }
}

/// The stream of one signed-in page (401 for anyone else).
pub async fn live(
    State(state): State<AppState>,
    axum::Extension(feed): axum::Extension<QueueFeed>,
    request: Request,
) -> Response {
    if request.extensions().get::<Viewer>().is_none() {
        return ApiError::unauthorized("Sign in first.").into_response();
    }
    let events = crate::api::stream::event_stream(&state, request.headers());
    let views = stream::unfold(feed.subscribe(), |mut views| async move {
        views.changed().await.ok()?;
        let json = views.borrow_and_update().clone();
        Some((json, views))
    })
    .filter_map(|json| async move {
        json.map(|json| SseEvent::default().event("queue").data(&*json))
    });
    let mut closed = state.events.closed();
    let ends = async move {
        tokio::select! {
            _ = closed.wait_for(|closed| *closed) => {}
            () = tokio::time::sleep(STREAM_LIFETIME) => {}
        }
    };
    let merged = stream::select(events, views)
        .take_until(Box::pin(ends))
        .map(Ok::<_, std::convert::Infallible>);
    Sse::new(merged)
        .keep_alive(KeepAlive::default())
        .into_response()
}
