//! The JSON API — producers (docs/protocol.md), rounds and workers (docs/lifecycle.md), management and
//! answers (docs/api.md), live events — and what every request shares: state, credentials, the event hub and
//! its PostgreSQL fan-out to other instances, the one announce path, metrics, rate limits, password hashing.
//!
//! A crate of its own so that the compiler keeps it apart from the pages: it depends on the domain and the
//! store, never on the Leptos app.

pub mod announce;
pub mod answers;
pub mod asking;
pub mod credentials;
pub mod error;
pub mod events;
pub mod extract;
pub mod gate;
pub mod hooks;
pub mod mcp;
pub mod metrics;
pub mod passwords;
pub mod people;
pub mod postgres_events;
pub mod producer;
pub mod rate_limit;
pub mod response_budget;
pub mod rules;
pub mod runs;
pub mod sessions;
pub mod standing;
pub mod state;
pub mod stats;
pub mod stream;
pub mod teams;
pub mod views;
pub mod workers;

use std::sync::Arc;

use axum::{Json, Router, extract::DefaultBodyLimit, http::Method, routing::get};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub use state::{ApiConfig, AppState, MailConfig, SlackConfig};

use error::ApiError;

/// The document's frame; every path in it comes from the handlers' own annotations.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Anteroom API",
        description = "Where headless AI agents wait for a human: producers post questions and poll; people and \
orchestrators answer. Errors are `{\"error\", \"message\", \"details\"?}` with the codes listed in docs/api.md#errors.",
    ),
    tags(
        (name = "producer", description = "pulsemcp-compatible question and poll routes (docs/protocol.md)"),
        (name = "rounds", description = "Multi-request rounds (docs/lifecycle.md#multi-request-rounds)"),
        (name = "workers", description = "Worker leases, compare-and-set (docs/lifecycle.md#worker-leases)"),
        (name = "sessions", description = "Session management (docs/api.md#sessions)"),
        (name = "answers", description = "Answering questions (docs/api.md#answers)"),
        (name = "teams", description = "Groups, and who answers a question (docs/teams.md)"),
        (name = "events", description = "Live events (docs/api.md#events)"),
        (name = "gate", description = "Gate health (docs/api.md#the-gate)"),
    )
)]
struct ApiDoc;

/// The whole API as generated from the routes below.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes_and_document().1
}

/// The routes and their document, which also says what the body limit answers wherever a body is read.
fn routes_and_document() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (routes, mut document) = documented_routes().split_for_parts();
    document_the_body_limit(&mut document);
    (routes, document)
}

/// Adds the body limit's 413 to every operation that reads a body: the limit stands in front of them all, so a
/// body longer than any field's own `maxLength` may be refused by it before the field is read.
fn document_the_body_limit(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::IntoResponses as _;
    for item in document.paths.paths.values_mut() {
        let operations = [
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ];
        for operation in operations.into_iter().flatten() {
            if operation.request_body.is_some() {
                operation
                    .responses
                    .responses
                    .extend(error::PayloadTooLarge::responses());
            }
        }
    }
}

fn documented_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(producer::routes())
        .merge(workers::routes())
        .merge(sessions::routes())
        .merge(runs::routes())
        .merge(answers::routes())
        .merge(teams::routes())
        .merge(stats::routes())
        .merge(rules::routes())
        .merge(stream::routes())
        .merge(gate::routes())
}

/// Every `/api/v1` route, with the body limit, the OpenAPI document, and JSON errors for unknown methods.
pub fn router(state: &AppState) -> Router<AppState> {
    let (routes, document) = routes_and_document();
    let document = Arc::new(document);
    routes
        .route(
            "/api/v1/openapi.json",
            get(move || {
                let document = document.clone();
                async move { Json(document.as_ref().clone()) }
            }),
        )
        .method_not_allowed_fallback(|method: Method| async move {
            ApiError::new(
                error::ErrorCode::MethodNotAllowed,
                format!("{method} is not allowed on this route."),
            )
        })
        .layer(DefaultBodyLimit::max(state.config.body_limit))
}

/// Unknown `/api/…` paths answer JSON, never the web app's HTML 404.
pub async fn not_found() -> ApiError {
    ApiError::not_found("No such API route; see /api/v1/openapi.json for the routes there are.")
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// Every response the document lists, as (method and path, status, response object).
    fn responses(document: &Value) -> Vec<(String, String, Value)> {
        let mut found = Vec::new();
        for (path, operations) in document["paths"].as_object().into_iter().flatten() {
            for (method, operation) in operations.as_object().into_iter().flatten() {
                for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                    found.push((format!("{method} {path}"), status.clone(), response.clone()));
                }
            }
        }
        found
    }

    #[test]
    fn every_operation_that_reads_a_body_lists_the_body_limits_413() {
        let document = serde_json::to_value(super::openapi()).expect("the document serialises");
        let mut with_body = 0;
        for (path, operations) in document["paths"].as_object().into_iter().flatten() {
            for (method, operation) in operations.as_object().into_iter().flatten() {
                if operation.get("requestBody").is_some() {
                    with_body += 1;
                    assert!(
                        operation["responses"].get("413").is_some(),
                        "{method} {path} reads a body but does not list 413"
                    );
                }
            }
        }
        assert!(with_body > 10, "{with_body} operations with a body");
    }

    #[test]
    fn the_document_describes_every_body_not_prose() {
        let document = serde_json::to_value(super::openapi()).expect("the document serialises");
        let responses = responses(&document);
        assert!(responses.len() > 60, "{} responses", responses.len());
        for (route, status, response) in responses {
            let content = &response["content"];
            let schema = content["application/json"]["schema"]
                .as_object()
                .or_else(|| content["text/event-stream"].as_object());
            assert!(
                schema.is_some(),
                "{route} {status} has no body schema: {response}"
            );
            if status.starts_with('4') {
                assert_eq!(
                    content["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                    "{route} {status}"
                );
            }
        }
        for named in [
            "Round",
            "Session",
            "PollReply",
            "QuestionCreated",
            "ErrorBody",
            "LeaseGranted",
        ] {
            assert!(
                document["components"]["schemas"][named].is_object(),
                "{named} is described"
            );
        }
    }

    #[test]
    fn request_bodies_are_described() {
        let document = serde_json::to_value(super::openapi()).expect("the document serialises");
        for (path, method) in [
            ("/api/v1/s/{token}/elicitations", "post"),
            ("/api/v1/s/{token}/rounds", "post"),
            ("/api/v1/sessions", "post"),
            ("/api/v1/rounds/{round_id}/responses", "post"),
        ] {
            let body = &document["paths"][path][method]["requestBody"]["content"]["application/json"]
                ["schema"];
            assert!(
                body.is_object(),
                "{method} {path} describes its request body"
            );
        }
    }
}
