//! Every response has a budget: the longest its route may legitimately hold a request (a producer's long-poll,
//! a hook waiting for a person, an MCP call) plus `ANTEROOM_RESPONSE_TIMEOUT_SECS` for the work. A response
//! not started by then is answered 503 and logged with its route, so a request can never hang silently. Only
//! the wait for the response's head is bounded: an event stream's body goes on as long as its reader stays.

use std::{future::Future, time::Duration};

use axum::{
    extract::{MatchedPath, Request, State},
    http::Method,
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    hooks::HookOptions,
};

/// The longest a producer's long-poll holds its request (`?wait=`, at most 30 s).
const LONG_POLL_MAX: Duration = Duration::from_secs(30);

/// How long `path` (with `query`) may hold a request before its response starts, beyond `slack`.
pub fn budget(path: &str, query: Option<&str>, slack: Duration) -> Duration {
    let held = if path.starts_with("/hooks/") {
        // The hook's own timeout says how long Anteroom holds it (less a margin): never cut it short.
        let options: HookOptions = query
            .and_then(|query| serde_urlencoded::from_str(query).ok())
            .unwrap_or_default();
        options.wait()
    } else if path == "/mcp" || path.starts_with("/mcp/") {
        crate::mcp::ASK_TIMEOUT_MAX
    } else if path.starts_with("/api/")
        && query.is_some_and(|query| query.split('&').any(|pair| pair.starts_with("wait=")))
    {
        LONG_POLL_MAX
    } else {
        Duration::ZERO
    };
    held + slack
}

/// Middleware: answers 503 for a response that has not started within its budget.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let limit = budget(
        request.uri().path(),
        request.uri().query(),
        state.config.connections.response_timeout,
    );
    // Kept for the log line a late response writes; a matched path is shared, not copied.
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = request.method().clone();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    answer_within(limit, route, &method, next.run(request)).await
}

/// `response`, or a logged 503 if it has not started within `limit`.
async fn answer_within(
    limit: Duration,
    route: &str,
    method: &Method,
    response: impl Future<Output = Response>,
) -> Response {
    match tokio::time::timeout(limit, response).await {
        Ok(response) => response,
        Err(_) => {
            tracing::error!(
                %method,
                route,
                budget_secs = limit.as_secs(),
                "a response did not start within its budget; answered 503"
            );
            ApiError::new(
                ErrorCode::Unavailable,
                format!(
                    "The server did not answer within {} s. Nothing is known to have been recorded: retry \
                     (with the same idempotency key, where there is one).",
                    limit.as_secs()
                ),
            )
            .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, http::StatusCode, routing::get};
    use tower::ServiceExt as _;

    use super::*;

    #[test]
    fn each_route_is_given_its_own_longest_wait() {
        let slack = Duration::from_secs(30);
        assert_eq!(budget("/", None, slack), slack);
        assert_eq!(budget("/sessions/a", None, slack), slack);
        assert_eq!(budget("/api/v1/sessions", None, slack), slack);
        assert_eq!(
            budget("/api/v1/s/ars_x/elicitations/r", Some("wait=30"), slack),
            Duration::from_secs(60)
        );
        // A hook's timeout of 600 s is held 570 s.
        assert_eq!(
            budget("/hooks/claude/pre-tool-use", Some("timeout=600"), slack),
            Duration::from_secs(600)
        );
        assert_eq!(
            budget(
                "/hooks/codex/pre-tool-use",
                Some("timeout=not-a-number"),
                slack
            ),
            HookOptions::default().wait() + slack
        );
        assert_eq!(
            budget("/mcp", None, slack),
            crate::mcp::ASK_TIMEOUT_MAX + slack
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_that_never_starts_is_a_503_at_its_budget() {
        let limit = Duration::from_secs(5);
        let app = Router::new()
            .route("/stuck", get(std::future::pending::<&'static str>))
            .route("/quick", get(|| async { "ok" }))
            .route_layer(axum::middleware::from_fn(
                move |request: Request, next: Next| async move {
                    answer_within(limit, "/test", &Method::GET, next.run(request)).await
                },
            ));
        let stuck = app
            .clone()
            .oneshot(Request::get("/stuck").body(Body::empty()).expect("request"))
            .await
            .expect("a response");
        assert_eq!(stuck.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = axum::body::to_bytes(stuck.into_body(), 4096)
            .await
            .expect("body");
        let body: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(body["error"], "unavailable");
        let quick = app
            .oneshot(Request::get("/quick").body(Body::empty()).expect("request"))
            .await
            .expect("a response");
        assert_eq!(quick.status(), StatusCode::OK);
    }
}
