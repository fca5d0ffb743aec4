//! Live events for browsers and orchestrators: an in-process broadcast with a short replay buffer, so a
//! client reconnecting with `Last-Event-ID` gets what it missed (or is told to re-read state).

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use anteroom_domain::{
    clock::{Clock, SystemClock},
    ids::RoundId,
};
use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::{broadcast, watch};

/// How many recent events a reconnecting client can catch up on.
const REPLAY: usize = 1024;

/// What changed, as an event names it on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    RoundCreated,
    RoundAnswered,
    RoundExpired,
    RoundUndelivered,
    RoundRevoked,
    SessionChanged,
    /// A session's run printed output (docs/runs.md); the queue does not change with it.
    RunOutput,
}

impl EventKind {
    pub const ALL: [Self; 7] = [
        Self::RoundCreated,
        Self::RoundAnswered,
        Self::RoundExpired,
        Self::RoundUndelivered,
        Self::RoundRevoked,
        Self::SessionChanged,
        Self::RunOutput,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::RoundCreated => "round.created",
            Self::RoundAnswered => "round.answered",
            Self::RoundExpired => "round.expired",
            Self::RoundUndelivered => "round.undelivered",
            Self::RoundRevoked => "round.revoked",
            Self::SessionChanged => "session.changed",
            Self::RunOutput => "run.output",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One change worth telling a watcher about.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// Increases by one per event in this instance.
    pub id: u64,
    #[serde(rename = "type")]
    pub kind: EventKind,
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(with = "anteroom_domain::wire::time")]
    pub at: DateTime<Utc>,
}

/// The hub every change is published to.
#[derive(Clone)]
pub struct EventHub {
    inner: Arc<Inner>,
}

struct Inner {
    sender: broadcast::Sender<Event>,
    next_id: AtomicU64,
    recent: Mutex<VecDeque<Event>>,
    subscribers: AtomicU64,
    closed: watch::Sender<bool>,
    /// Where events go to reach other instances (PostgreSQL `NOTIFY`), once a relay is attached.
    relay: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<Event>>,
    /// Where questions that end on their own are counted (`/metrics`), once the instance's state exists.
    metrics: std::sync::OnceLock<crate::metrics::Metrics>,
}

impl Default for EventHub {
    fn default() -> Self {
        let (sender, _) = broadcast::channel(REPLAY);
        Self {
            inner: Arc::new(Inner {
                sender,
                next_id: AtomicU64::new(1),
                recent: Mutex::new(VecDeque::with_capacity(REPLAY)),
                subscribers: AtomicU64::new(0),
                closed: watch::Sender::new(false),
                relay: std::sync::OnceLock::new(),
                metrics: std::sync::OnceLock::new(),
            }),
        }
    }
}

impl EventHub {
    /// Publishes a change made by this instance, to local watchers and, through the relay, to other instances.
    pub fn publish(
        &self,
        kind: EventKind,
        session_id: &str,
        round_id: Option<String>,
        request_id: Option<String>,
    ) {
        let event = self.deliver(kind, session_id, round_id, request_id);
        if let Some(relay) = self.inner.relay.get() {
            // A closed relay only means other instances stop hearing; local watchers already have it.
            let _ = relay.send(event);
        }
    }

    /// Counts the questions that end on their own in `metrics`.
    pub fn count_ends_in(&self, metrics: crate::metrics::Metrics) {
        let _ = self.inner.metrics.set(metrics);
    }

    /// Sends events published here to other instances through `sender`.
    pub fn attach_relay(&self, sender: tokio::sync::mpsc::UnboundedSender<Event>) {
        let _ = self.inner.relay.set(sender);
    }

    /// Hands a change made by another instance to local watchers.
    pub fn deliver_remote(
        &self,
        kind: &str,
        session_id: &str,
        round_id: Option<String>,
        request_id: Option<String>,
    ) {
        if let Some(kind) = EventKind::parse(kind) {
            self.deliver(kind, session_id, round_id, request_id);
        }
    }

    fn deliver(
        &self,
        kind: EventKind,
        session_id: &str,
        round_id: Option<String>,
        request_id: Option<String>,
    ) -> Event {
        let event = Event {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            kind,
            session_id: session_id.to_owned(),
            round_id,
            request_id,
            // When this instance heard of it, by the wall clock: what a watcher compares with its own.
            at: SystemClock.now(),
        };
        {
            let mut recent = self.recent();
            if recent.len() == REPLAY {
                recent.pop_front();
            }
            recent.push_back(event.clone());
        }
        // No subscriber is not an error: nobody is watching right now.
        let _ = self.inner.sender.send(event.clone());
        event
    }

    /// Ends every live stream (the server is shutting down).
    pub fn close(&self) {
        self.inner.closed.send_replace(true);
    }

    /// Becomes `true` when the hub closes.
    pub fn closed(&self) -> watch::Receiver<bool> {
        self.inner.closed.subscribe()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.sender.subscribe()
    }

    /// Starts listening for changes to one round. Read the round after this call, so a change made in between
    /// is not missed.
    pub fn watch_round(&self, round_id: RoundId) -> RoundWatch {
        RoundWatch {
            events: self.subscribe(),
            closed: self.closed(),
            about: Watched::Round(round_id.to_string()),
        }
    }

    /// Starts listening for every change in one session (its run's stop, its end): a [`RoundWatch`] that wakes
    /// on any event of the session. Read the session after this call, as for a round.
    pub fn watch_session(&self, session_id: &str) -> RoundWatch {
        RoundWatch {
            events: self.subscribe(),
            closed: self.closed(),
            about: Watched::Session(session_id.to_owned()),
        }
    }

    /// Events after `last_id`, or `None` when some of them are no longer kept (the client must re-read).
    /// An id this hub never issued (from before a restart, or made up — `u64::MAX` included) also means
    /// re-read: nothing after it could be told apart.
    pub fn since(&self, last_id: u64) -> Option<Vec<Event>> {
        let recent = self.recent();
        let next = self.inner.next_id.load(Ordering::Relaxed);
        let oldest = recent.front().map_or(next, |e| e.id);
        if last_id >= next || last_id.saturating_add(1) < oldest {
            return None;
        }
        Some(recent.iter().filter(|e| e.id > last_id).cloned().collect())
    }

    /// Counts live SSE streams (for `/metrics`).
    pub fn subscriber_guard(&self) -> SubscriberGuard {
        self.inner.subscribers.fetch_add(1, Ordering::Relaxed);
        SubscriberGuard { hub: self.clone() }
    }

    pub fn subscribers(&self) -> u64 {
        self.inner.subscribers.load(Ordering::Relaxed)
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, VecDeque<Event>> {
        self.inner
            .recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl anteroom_store::StoreObserver for EventHub {
    fn rounds_ended(&self, rounds: &[anteroom_domain::round::Round]) {
        use anteroom_domain::round::FailureCode;
        for round in rounds {
            let code = round.failure.as_ref().map(|failure| &failure.code);
            if let (Some(metrics), Some(code)) = (self.inner.metrics.get(), code) {
                metrics.record_ended(code.as_str());
            }
            let kind = match code {
                Some(FailureCode::Undelivered) => Some(EventKind::RoundUndelivered),
                Some(FailureCode::Revoked) => Some(EventKind::RoundRevoked),
                // Ended with its agent's run: the session's own change says so (docs/runs.md).
                Some(FailureCode::AgentEnded) => None,
                _ => Some(EventKind::RoundExpired),
            };
            if let Some(kind) = kind {
                self.publish(
                    kind,
                    round.session_id.as_str(),
                    Some(round.round_id.to_string()),
                    Some(round.request_id.to_string()),
                );
            }
            self.publish(
                EventKind::SessionChanged,
                round.session_id.as_str(),
                None,
                None,
            );
        }
    }
}

/// Everyone who waits for one round (a long-poll, `ask_person`, a held hook request) waits through this: it wakes
/// on an event about that round only, and at the caller's next look anyway, since a deadline can pass with no
/// event at all and a lagging or closed hub may have lost one.
pub struct RoundWatch {
    events: broadcast::Receiver<Event>,
    /// The hub's closing: the server shuts down, and whoever waits should answer now.
    closed: watch::Receiver<bool>,
    about: Watched,
}

/// What a [`RoundWatch`] wakes for.
enum Watched {
    Round(String),
    Session(String),
}

impl Watched {
    fn is_about(&self, event: &Event) -> bool {
        match self {
            Self::Round(id) => event.round_id.as_deref() == Some(id.as_str()),
            Self::Session(id) => event.session_id == *id,
        }
    }
}

/// Why a [`RoundWatch`] woke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundWake {
    /// An event about the round arrived.
    Event(EventKind),
    /// Time to look again: the caller's instant came, or an event may have been missed.
    Look,
    /// The server is shutting down: answer the caller now (it asks again, of whichever instance serves).
    Closing,
}

impl RoundWatch {
    /// Waits for an event about the round, or until `look_at`.
    pub async fn next(&mut self, look_at: tokio::time::Instant) -> RoundWake {
        if *self.closed.borrow() {
            return RoundWake::Closing;
        }
        loop {
            let received = tokio::select! {
                received = tokio::time::timeout_at(look_at, self.events.recv()) => received,
                _ = self.closed.changed() => return RoundWake::Closing,
            };
            match received {
                Ok(Ok(event)) if self.about.is_about(&event) => {
                    return RoundWake::Event(event.kind);
                }
                Ok(Ok(_)) => {}
                Ok(Err(broadcast::error::RecvError::Lagged(_))) => return RoundWake::Look,
                // The hub is gone (shutting down): nothing more will come, so only the clock can wake us.
                Ok(Err(broadcast::error::RecvError::Closed)) => {
                    tokio::time::sleep_until(look_at).await;
                    return RoundWake::Look;
                }
                Err(_elapsed) => return RoundWake::Look,
            }
        }
    }
}

/// Decrements the subscriber count when a stream ends.
pub struct SubscriberGuard {
    hub: EventHub,
}

impl Drop for SubscriberGuard {
    fn drop(&mut self) {
        self.hub.inner.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_returns_what_a_client_missed() {
        let hub = EventHub::default();
        hub.publish(EventKind::RoundCreated, "s1", None, None);
        hub.publish(EventKind::RoundAnswered, "s1", None, None);
        let missed = hub.since(1).expect("kept");
        assert_eq!(
            missed.iter().map(|e| e.kind).collect::<Vec<_>>(),
            [EventKind::RoundAnswered]
        );
        assert_eq!(hub.since(2).expect("kept").len(), 0);
    }

    #[tokio::test]
    async fn a_round_watch_wakes_for_its_round_only_and_at_its_look() {
        let hub = EventHub::default();
        let round = RoundId(uuid::Uuid::new_v4());
        let mut watch = hub.watch_round(round);
        hub.publish(
            EventKind::RoundAnswered,
            "s1",
            Some("another".to_owned()),
            None,
        );
        hub.publish(
            EventKind::RoundAnswered,
            "s1",
            Some(round.to_string()),
            None,
        );
        let soon = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        assert_eq!(
            watch.next(soon).await,
            RoundWake::Event(EventKind::RoundAnswered)
        );
        let now = tokio::time::Instant::now();
        assert_eq!(watch.next(now).await, RoundWake::Look);
    }

    #[test]
    fn last_event_id_at_the_top_of_the_range_asks_for_a_re_read() {
        let hub = EventHub::default();
        hub.publish(EventKind::RoundCreated, "s1", None, None);
        assert!(hub.since(u64::MAX).is_none());
        assert!(hub.since(u64::MAX - 1).is_none());
    }
}
