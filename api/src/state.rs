//! What every request handler can reach: the store, the settings read at run time, events, metrics, limits.

use std::sync::Arc;

use anteroom_store::Store;

use crate::{
    events::EventHub,
    hooks::{HeldHooks, RecentAllows},
    metrics::Metrics,
    passwords::HashingPool,
    rate_limit::RateLimiter,
};

/// Shared application state: one reference count per clone (every request clones it several times, once per
/// layer and extractor that takes it).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// What [`AppState`] holds.
#[derive(Clone)]
pub struct Shared {
    pub store: Arc<dyn Store>,
    pub config: Arc<ApiConfig>,
    pub events: EventHub,
    pub metrics: Metrics,
    pub limiter: RateLimiter,
    /// The threads that hash passwords (one per core); a sign-in beyond them is refused at once.
    pub password_hashing: HashingPool,
    /// Hook requests each session holds open now.
    pub held_hooks: HeldHooks,
    /// Calls a person allowed through Codex's `PreToolUse` hook, for Codex's own approval of them.
    pub recent_allows: RecentAllows,
    /// Round trips spent by waiting calls looking at their question again because their timer came (once a
    /// second), not because an event arrived: how many a call makes depends on how long it waits, not on what
    /// it does, so an operation's measured cost leaves them out.
    pub timed_look_trips: Arc<std::sync::atomic::AtomicU64>,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// State around `store`, whose options should name `events` as their observer so expiries are streamed.
    pub fn new(store: Arc<dyn Store>, config: ApiConfig, events: EventHub) -> Self {
        let metrics = Metrics::default();
        events.count_ends_in(metrics.clone());
        Self(Arc::new(Shared {
            store,
            config: Arc::new(config),
            events,
            metrics,
            limiter: RateLimiter::default(),
            password_hashing: HashingPool::per_core(),
            held_hooks: HeldHooks::default(),
            recent_allows: RecentAllows::default(),
            timed_look_trips: Arc::default(),
        }))
    }

    /// The same state read with other settings (everything else shared).
    pub fn with_config(&self, config: ApiConfig) -> Self {
        let mut shared = (*self.0).clone();
        shared.config = Arc::new(config);
        Self(Arc::new(shared))
    }
}

/// What the API and the pages read at run time; made from the server's `Settings`.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Where producers and browsers reach this instance, without a trailing slash.
    pub public_url: String,
    /// Accept anonymous calls on the bare producer routes (the original orchestrator's behaviour).
    pub allow_unauthenticated_producers: bool,
    /// The instance's default question window, in milliseconds (`ELICITATION_TTL_MS`).
    pub default_window_ms: i64,
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// Key of the `X-Anteroom-Signature` HMAC on outgoing webhooks (unsigned when absent).
    pub webhook_secret: Option<String>,
    /// How long resolved and failed rounds are kept.
    pub retention: chrono::Duration,
    /// Mark the sign-in cookie `Secure` (off only in development mode).
    pub secure_cookies: bool,
    /// Open connections and how long a request's headers may take.
    pub connections: ConnectionLimits,
    /// `Authorization: Bearer <token>` that admits a scraper to `/metrics` from anywhere. Without it,
    /// `/metrics` answers callers on this machine (loopback) and admin API keys only.
    pub metrics_token: Option<String>,
    /// The Slack app questions are posted to and answered from (docs/reach.md#slack), when configured.
    pub slack: Option<SlackConfig>,
    /// Where questions are mailed from (docs/reach.md#e-mail), when configured.
    pub mail: Option<MailConfig>,
    /// Development mode: a push service may be plain `http://` on loopback (a test's stand-in).
    pub development: bool,
    /// With an identity provider: how long after their last sign-in through it a person it vouches for may
    /// answer (outside a page, where no browser session's deadline sends them through the provider again).
    pub provider_answers_for: Option<chrono::Duration>,
}

/// The SMTP server questions are mailed through.
#[derive(Clone, PartialEq, Eq)]
pub struct MailConfig {
    /// `smtps://user:password@host:465`, `smtp://host:587?tls=required`, or plain `smtp://host:25`.
    pub smtp_url: String,
    /// The sender, `Anteroom <anteroom@example.com>`.
    pub from: String,
}

impl std::fmt::Debug for MailConfig {
    // The URL may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailConfig")
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

/// A Slack app's settings: its bot token posts and updates messages, its signing secret proves a button
/// click came from Slack.
#[derive(Clone, PartialEq, Eq)]
pub struct SlackConfig {
    pub bot_token: String,
    pub signing_secret: String,
    /// Where questions are posted.
    pub channel: String,
    /// The Web API's base, without a trailing slash (`https://slack.com/api`; a loopback stand-in in tests).
    pub api_url: String,
}

impl std::fmt::Debug for SlackConfig {
    // The token and the secret never reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackConfig")
            .field("channel", &self.channel)
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

/// Bounds on connections, so slow or numerous clients cannot exhaust the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once; more wait in the listen queue.
    pub max_connections: usize,
    /// Time a client has to send a request's headers (and an idle keep-alive connection to send the next).
    pub header_read_timeout: std::time::Duration,
    /// Time a response may take to start beyond its route's own longest wait (docs/api.md#errors): past it,
    /// a 503 and a log line naming the route.
    pub response_timeout: std::time::Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            // hyper's one timer covers idle keep-alive too, so it must outlast a producer's poll interval
            // (often 5 s): at 5 s a client reusing its connection raced the close and lost the request.
            header_read_timeout: std::time::Duration::from_secs(20),
            response_timeout: std::time::Duration::from_secs(30),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ConnectionLimits;

    #[test]
    fn idle_keep_alive_outlasts_a_producers_poll_interval() {
        // The pulsemcp client polls every few seconds on one kept-alive connection; closing it at the same
        // moment loses the poll (seen with a 5 s timeout). Twice the common 5 s interval leaves a margin.
        assert!(ConnectionLimits::default().header_read_timeout.as_secs() >= 10);
    }
}
