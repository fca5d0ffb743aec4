//! `GET /metrics` in the OpenMetrics text format: requests and latency by route and status, open questions,
//! answers by action, time to answer, and live event streams.
//!
//! Every label set is bounded: routes are the router's templates (`unmatched` otherwise, never a raw path,
//! which may hold tokens), methods are the standard ones or `other`, statuses are three digits. The registry
//! is `prometheus-client`'s, one per instance.

use std::{net::SocketAddr, sync::Arc, time::Instant};

use axum::{
    extract::{ConnectInfo, MatchedPath, Request, State},
    http::{HeaderMap, Method, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use crate::{AppState, credentials, error::ApiError, extract::bearer};

/// Upper bounds (seconds) of the request-latency histogram.
const LATENCY_BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];
/// Upper bounds (seconds) of the time-to-answer histogram: seconds to hours.
const ANSWER_BUCKETS: [f64; 9] = [5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 14400.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Arc<str>,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: Arc<str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabels {
    action: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndLabels {
    reason: &'static str,
}

struct Instruments {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    answers: Family<ActionLabels, Counter>,
    ended: Family<EndLabels, Counter>,
    time_to_answer: Histogram,
    open_questions: Gauge,
    subscribers: Gauge,
    round_trips: Counter,
}

/// The instance's metrics.
#[derive(Clone)]
pub struct Metrics(Arc<Instruments>);

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "anteroom_http_requests",
            "HTTP requests by route, method and status",
            requests.clone(),
        );
        let latency = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            (|| Histogram::new(LATENCY_BUCKETS)) as fn() -> Histogram,
        );
        registry.register(
            "anteroom_http_request_duration_seconds",
            "Time to answer an HTTP request",
            latency.clone(),
        );
        let open_questions = Gauge::default();
        registry.register(
            "anteroom_open_questions",
            "Questions waiting for a person",
            open_questions.clone(),
        );
        let answers = Family::<ActionLabels, Counter>::default();
        registry.register(
            "anteroom_answers",
            "Answers recorded, by action",
            answers.clone(),
        );
        let ended = Family::<EndLabels, Counter>::default();
        registry.register(
            "anteroom_questions_ended",
            "Questions that ended on their own, by reason: expired, undelivered (answered, never picked up), revoked",
            ended.clone(),
        );
        let time_to_answer = Histogram::new(ANSWER_BUCKETS);
        registry.register(
            "anteroom_time_to_answer_seconds",
            "From question to answer",
            time_to_answer.clone(),
        );
        let subscribers = Gauge::default();
        registry.register(
            "anteroom_event_subscribers",
            "Live event streams",
            subscribers.clone(),
        );
        let round_trips = Counter::default();
        registry.register(
            "anteroom_store_round_trips",
            "Statements, BEGINs and COMMITs sent to the database",
            round_trips.clone(),
        );
        Self(Arc::new(Instruments {
            registry,
            requests,
            latency,
            answers,
            ended,
            time_to_answer,
            open_questions,
            subscribers,
            round_trips,
        }))
    }
}

/// A request method as a label: the standard ones by name, anything else as `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

impl Metrics {
    /// Counts one request; `route` must be a route template (or `unmatched`), never a raw path.
    pub fn record_request(&self, route: Arc<str>, method: &Method, status: u16, seconds: f64) {
        self.0
            .requests
            .get_or_create(&RequestLabels {
                route: route.clone(),
                method: method_label(method),
                status,
            })
            .inc();
        self.0
            .latency
            .get_or_create(&RouteLabels { route })
            .observe(seconds);
    }

    /// An answer was recorded, `seconds` after its question was asked.
    pub fn record_answer(&self, action: &'static str, seconds: f64) {
        self.0.answers.get_or_create(&ActionLabels { action }).inc();
        self.0.time_to_answer.observe(seconds.max(0.0));
    }

    /// A question ended on its own; `reason` is `expired`, `undelivered` or `revoked` (anything else is
    /// counted as `other`, so the label set stays bounded).
    pub fn record_ended(&self, reason: &str) {
        let reason = match reason {
            "expired" => "expired",
            "undelivered" => "undelivered",
            "revoked" => "revoked",
            _ => "other",
        };
        self.0.ended.get_or_create(&EndLabels { reason }).inc();
    }

    pub fn render(&self, open_questions: i64, subscribers: u64, round_trips: u64) -> String {
        self.0.open_questions.set(open_questions);
        // The store keeps the running total; the counter catches up to it.
        let counted = self.0.round_trips.get();
        self.0
            .round_trips
            .inc_by(round_trips.saturating_sub(counted));
        self.0
            .subscribers
            .set(i64::try_from(subscribers).unwrap_or(i64::MAX));
        let mut out = String::new();
        if let Err(error) = encode(&mut out, &self.0.registry) {
            tracing::warn!(%error, "metrics: cannot encode");
        }
        out
    }
}

/// The route template a response was served by, for the request's log line.
#[derive(Clone)]
pub struct RouteTemplate(pub Arc<str>);

/// Middleware: counts every request under its route template.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route: Arc<str> = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| Arc::from("unmatched"), |path| Arc::from(path.as_str()));
    let method = request.method().clone();
    let started = Instant::now();
    let mut response = next.run(request).await;
    // The request's log line is written outside the router, where the template is no longer known.
    response
        .extensions_mut()
        .insert(RouteTemplate(route.clone()));
    state.metrics.record_request(
        route,
        &method,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// Whether this caller may read the metrics: a scraper with the configured token, an admin API key, or (when
/// no token is configured) any caller on this machine.
async fn may_read(state: &AppState, peer: SocketAddr, headers: &HeaderMap) -> bool {
    let token = state.config.metrics_token.as_deref();
    let Some(secret) = bearer(headers) else {
        return token.is_none() && peer.ip().is_loopback();
    };
    let hashed = credentials::hash(secret);
    // Compared as hashes, so the comparison's timing says nothing about the token.
    if token.is_some_and(|token| credentials::hash(token) == hashed) {
        return true;
    }
    matches!(
        state.store.api_key_for_hash(&hashed).await,
        Ok(Some(key)) if key.role.can_manage()
    )
}

/// `GET /metrics`.
pub async fn render(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if !may_read(&state, peer, &headers).await {
        return ApiError::unauthorized(
            "Reading /metrics needs `Authorization: Bearer` with ANTEROOM_METRICS_TOKEN or an admin API key \
             (callers on this machine need none while no token is set).",
        )
        .into_response();
    }
    let open = match state.store.open_round_count().await {
        Ok(open) => open,
        Err(error) => {
            tracing::warn!(%error, "metrics: cannot count open questions");
            -1
        }
    };
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state
            .metrics
            .render(open, state.events.subscribers(), state.store.round_trips()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_histograms() {
        let metrics = Metrics::default();
        let route: Arc<str> = Arc::from("/api/v1/elicitations");
        metrics.record_request(route.clone(), &Method::POST, 201, 0.002);
        metrics.record_request(route, &Method::POST, 201, 0.2);
        metrics.record_answer("accept", 42.0);
        let text = metrics.render(3, 1, 7);
        assert!(text.contains("anteroom_http_requests_total{route=\"/api/v1/elicitations\",method=\"POST\",status=\"201\"} 2"), "{text}");
        assert!(text.contains("anteroom_http_request_duration_seconds_bucket{le=\"0.0025\",route=\"/api/v1/elicitations\"} 1") || text.contains("anteroom_http_request_duration_seconds_bucket{route=\"/api/v1/elicitations\",le=\"0.0025\"} 1"), "{text}");
        assert!(text.contains("anteroom_open_questions 3"), "{text}");
        assert!(
            text.contains("anteroom_answers_total{action=\"accept\"} 1"),
            "{text}"
        );
        assert!(text.contains("anteroom_event_subscribers 1"), "{text}");
        assert!(
            text.contains("anteroom_store_round_trips_total 7"),
            "{text}"
        );
        let later = metrics.render(3, 1, 10);
        assert!(
            later.contains("anteroom_store_round_trips_total 10"),
            "{later}"
        );
    }

    #[test]
    fn unbounded_method_names_share_one_label() {
        let metrics = Metrics::default();
        for n in 0..1000 {
            let method = Method::from_bytes(format!("X{n:0>200}").as_bytes()).expect("method");
            metrics.record_request(Arc::from("unmatched"), &method, 405, 0.0);
        }
        let text = metrics.render(0, 0, 0);
        assert!(
            text.contains("route=\"unmatched\",method=\"other\",status=\"405\"} 1000"),
            "{text}"
        );
        assert!(text.len() < 8 * 1024, "{} bytes", text.len());
    }
}
