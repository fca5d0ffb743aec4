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

/// The bytes a second the queue's views may cost an instance, summed over the pages watching. A view goes to
/// every open page, so its cost is its size times the pages: 200 pages watching a 75 KB view of 10,000 open
/// questions cost 15 MB a view, and at one view per change (40 a second in the soak) the streams alone took a
/// core and pushed the askers' poll p99 up tenfold. Past this budget the next reading waits: a busy queue
/// reaches its pages about once a second, a quiet one at once.
const FAN_OUT_BYTES_PER_SECOND: f64 = 16.0 * 1024.0 * 1024.0;

/// The longest the budget holds back the next view.
const MAX_FAN_OUT_PAUSE: Duration = Duration::from_secs(1);

/// How long after sending a view of `bytes` to `watchers` pages the next one may be read.
fn fan_out_pause(bytes: usize, watchers: usize) -> Duration {
    let cost = bytes as f64 * watchers as f64;
    Duration::from_secs_f64(cost / FAN_OUT_BYTES_PER_SECOND).min(MAX_FAN_OUT_PAUSE)
}

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
/// covered by the next one: a burst of changes costs one reading, not one per event, and the pages' byte
/// budget spaces the readings out under load.
async fn make_views(feed: Arc<FeedInner>) {
    let mut events = feed.events.subscribe();
    let mut closed = feed.events.closed();
    let mut next_reading = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = closed.wait_for(|closed| *closed) => return,
            received = events.recv() => match received {
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                // A run's output changes one session's page, never the queue.
                Ok(event) if event.kind == crate::events::EventKind::RunOutput => continue,
                _ => {}
            }
        }
        tokio::time::sleep_until(next_reading.max(tokio::time::Instant::now() + GATHER)).await;
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
                    let pause = fan_out_pause(json.len(), feed.views.receiver_count());
                    next_reading = tokio::time::Instant::now() + pause;
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
    // At a shutdown the events end with their "closing" word (how soon to reconnect), and the queue views
    // end with them, so the stream closes once that word is sent.
    let events = crate::api::stream::event_stream(&state, request.headers());
    let mut closed = state.events.closed();
    let views = stream::unfold(feed.subscribe(), |mut views| async move {
        views.changed().await.ok()?;
        let json = views.borrow_and_update().clone();
        Some((json, views))
    })
    .filter_map(
        |json| async move { json.map(|json| SseEvent::default().event("queue").data(&*json)) },
    )
    .take_until(Box::pin(async move {
        let _ = closed.wait_for(|closed| *closed).await;
    }));
    let merged = stream::select(events, views)
        .take_until(Box::pin(tokio::time::sleep(STREAM_LIFETIME)))
        .map(Ok::<_, std::convert::Infallible>);
    Sse::new(merged)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fan_out_budget_spaces_large_views_to_many_pages_and_leaves_small_ones_alone() {
        // The live figure: a small queue to 100 pages is read again almost at once.
        assert!(fan_out_pause(2_000, 100) < Duration::from_millis(15));
        // The soak: a 75 KB view to 200 pages waits most of a second.
        let busy = fan_out_pause(75_000, 200);
        assert!(
            busy > Duration::from_millis(800) && busy <= MAX_FAN_OUT_PAUSE,
            "{busy:?}"
        );
        // Never longer than the cap, however many pages watch.
        assert_eq!(fan_out_pause(1_000_000, 10_000), MAX_FAN_OUT_PAUSE);
        assert_eq!(fan_out_pause(0, 0), Duration::ZERO);
    }
}
