//! `GET /metrics` in Prometheus text format: requests and latency by route and status, open questions, answers
//! by action, time to answer, and live event streams.

use std::{
    collections::BTreeMap,
    fmt::Write,
    sync::{Arc, Mutex},
    time::Instant,
};

use axum::{
    extract::{MatchedPath, Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::AppState;

/// Upper bounds (seconds) of the request-latency histogram.
const LATENCY_BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];
/// Upper bounds (seconds) of the time-to-answer histogram: seconds to hours.
const ANSWER_BUCKETS: [f64; 9] = [5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 14400.0];

#[derive(Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    total: u64,
}

impl Histogram {
    fn observe(&mut self, bounds: &[f64], value: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; bounds.len()];
        }
        for (count, bound) in self.counts.iter_mut().zip(bounds) {
            if value <= *bound {
                *count += 1;
            }
        }
        self.sum += value;
        self.total += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str, bounds: &[f64]) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (count, bound) in self.counts.iter().zip(bounds) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {count}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.total
        );
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braces} {}", self.total);
    }
}

#[derive(Default)]
struct Counters {
    requests: BTreeMap<(String, String, u16), u64>,
    latency: BTreeMap<String, Histogram>,
    answers: BTreeMap<&'static str, u64>,
    time_to_answer: Histogram,
}

/// The instance's metrics.
#[derive(Clone, Default)]
pub struct Metrics(Arc<Mutex<Counters>>);

impl Metrics {
    fn counters(&self) -> std::sync::MutexGuard<'_, Counters> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn record_request(&self, route: &str, method: &str, status: u16, seconds: f64) {
        let mut counters = self.counters();
        *counters
            .requests
            .entry((route.to_owned(), method.to_owned(), status))
            .or_default() += 1;
        counters
            .latency
            .entry(route.to_owned())
            .or_default()
            .observe(&LATENCY_BUCKETS, seconds);
    }

    /// An answer was recorded, `seconds` after its question was asked.
    pub fn record_answer(&self, action: &'static str, seconds: f64) {
        let mut counters = self.counters();
        *counters.answers.entry(action).or_default() += 1;
        counters
            .time_to_answer
            .observe(&ANSWER_BUCKETS, seconds.max(0.0));
    }

    pub fn render(&self, open_questions: i64, subscribers: u64) -> String {
        let counters = self.counters();
        let mut out = String::new();
        out.push_str(
            "# HELP anteroom_http_requests_total HTTP requests by route, method and status.\n",
        );
        out.push_str("# TYPE anteroom_http_requests_total counter\n");
        for ((route, method, status), count) in &counters.requests {
            let _ = writeln!(
                out,
                "anteroom_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}} {count}"
            );
        }
        out.push_str(
            "# HELP anteroom_http_request_duration_seconds Time to answer an HTTP request.\n",
        );
        out.push_str("# TYPE anteroom_http_request_duration_seconds histogram\n");
        for (route, histogram) in &counters.latency {
            histogram.render(
                &mut out,
                "anteroom_http_request_duration_seconds",
                &format!("route=\"{route}\""),
                &LATENCY_BUCKETS,
            );
        }
        out.push_str("# HELP anteroom_open_questions Questions waiting for a person.\n");
        out.push_str("# TYPE anteroom_open_questions gauge\n");
        let _ = writeln!(out, "anteroom_open_questions {open_questions}");
        out.push_str("# HELP anteroom_answers_total Answers recorded, by action.\n");
        out.push_str("# TYPE anteroom_answers_total counter\n");
        for (action, count) in &counters.answers {
            let _ = writeln!(out, "anteroom_answers_total{{action=\"{action}\"}} {count}");
        }
        out.push_str("# HELP anteroom_time_to_answer_seconds From question to answer.\n");
        out.push_str("# TYPE anteroom_time_to_answer_seconds histogram\n");
        counters.time_to_answer.render(
            &mut out,
            "anteroom_time_to_answer_seconds",
            "",
            &ANSWER_BUCKETS,
        );
        out.push_str("# HELP anteroom_event_subscribers Live event streams.\n");
        out.push_str("# TYPE anteroom_event_subscribers gauge\n");
        let _ = writeln!(out, "anteroom_event_subscribers {subscribers}");
        out
    }
}

/// Middleware: counts every request under its route template (never the raw path, which holds tokens).
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = request.method().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    state.metrics.record_request(
        &route,
        &method,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// `GET /metrics`.
pub async fn render(State(state): State<AppState>) -> Response {
    let open = match state.store.open_round_count().await {
        Ok(open) => open,
        Err(error) => {
            tracing::warn!(%error, "metrics: cannot count open questions");
            -1
        }
    };
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(open, state.events.subscribers()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_histograms() {
        let metrics = Metrics::default();
        metrics.record_request("/api/v1/elicitations", "POST", 201, 0.002);
        metrics.record_request("/api/v1/elicitations", "POST", 201, 0.2);
        metrics.record_answer("accept", 42.0);
        let text = metrics.render(3, 1);
        assert!(text.contains("anteroom_http_requests_total{route=\"/api/v1/elicitations\",method=\"POST\",status=\"201\"} 2"));
        assert!(text.contains("anteroom_http_request_duration_seconds_bucket{route=\"/api/v1/elicitations\",le=\"0.0025\"} 1"));
        assert!(text.contains("anteroom_http_request_duration_seconds_bucket{route=\"/api/v1/elicitations\",le=\"+Inf\"} 2"));
        assert!(text.contains("anteroom_open_questions 3"));
        assert!(text.contains("anteroom_answers_total{action=\"accept\"} 1"));
        assert!(text.contains("anteroom_time_to_answer_seconds_bucket{le=\"60\"} 1"));
        assert!(text.contains("anteroom_event_subscribers 1"));
    }
}
