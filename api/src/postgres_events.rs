//! Several instances on one PostgreSQL: every event published here is sent with `NOTIFY`, and every event
//! another instance sent arrives by `LISTEN`, so an answer given on one instance reaches pollers, streams and
//! browsers on all of them.

use std::sync::Arc;

use anteroom_domain::ids::SessionId;
use anteroom_store::Store;
use serde::{Deserialize, Serialize};
use sqlx::{PgPool, postgres::PgListener};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::events::{Event, EventHub};

/// An event as it travels between instances.
#[derive(Debug, Serialize, Deserialize)]
struct WireEvent {
    origin: String,
    kind: String,
    session_id: String,
    round_id: Option<String>,
    request_id: Option<String>,
}

/// Starts the tasks that carry events between `hub` and the other instances on `channel`. They end when the hub closes or the pool is closed. Every
/// event from another instance also drops what `store` remembers of the polls it touches.
pub async fn start(
    hub: &EventHub,
    pool: PgPool,
    channel: &str,
    store: Arc<dyn Store>,
) -> Result<(), sqlx::Error> {
    let origin = Uuid::new_v4().to_string();
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(channel).await?;

    let (outbox, mut pending) = mpsc::unbounded_channel::<Event>();
    hub.attach_relay(outbox);

    let notify_channel = channel.to_owned();
    let notify_origin = origin.clone();
    let notify_pool = pool.clone();
    tokio::spawn(async move {
        while let Some(event) = pending.recv().await {
            let wire = WireEvent {
                origin: notify_origin.clone(),
                kind: event.kind.as_str().to_owned(),
                session_id: event.session_id,
                round_id: event.round_id,
                request_id: event.request_id,
            };
            let payload = serde_json::to_string(&wire).unwrap_or_default();
            if let Err(error) =
                anteroom_store::postgres::notify(&notify_pool, &notify_channel, &payload).await
            {
                tracing::warn!(%error, "could not tell other instances about an event");
            }
        }
    });

    let hub = hub.clone();
    let mut closed = hub.closed();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = closed.changed() => break,
                // `try_recv`, not `recv`: a connection lost and quietly re-made comes back as `Ok(None)`, and
                // events sent meanwhile are lost, so nothing remembered of a poll can be trusted after it.
                received = listener.try_recv() => match received {
                    Ok(None) => {
                        store.forget_all_poll_states();
                        tracing::warn!("event listener lost its connection; reconnecting");
                    }
                    Ok(Some(notification)) => {
                        match serde_json::from_str::<WireEvent>(notification.payload()) {
                            Ok(wire) if wire.origin != origin => {
                                if let Ok(session) = SessionId::parse(wire.session_id.as_str()) {
                                    store.forget_poll_states(&session, wire.request_id.as_deref());
                                }
                                hub.deliver_remote(
                                    &wire.kind,
                                    &wire.session_id,
                                    wire.round_id,
                                    wire.request_id,
                                );
                            }
                            Ok(_) => {}
                            Err(error) => tracing::warn!(%error, "ignoring a malformed event notification"),
                        }
                    }
                    Err(error) => {
                        // PgListener reconnects by itself on the next call; pause so a dead database is not spun on.
                        store.forget_all_poll_states();
                        tracing::warn!(%error, "event listener lost its connection; retrying");
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    }
                },
            }
        }
    });
    Ok(())
}
