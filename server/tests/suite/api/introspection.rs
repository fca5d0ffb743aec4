//! What the server says about itself: its metrics and its OpenAPI document.

use serde_json::json;

use anteroom_testkit::requests::{ask, json_of};
use anteroom_testkit::{Backend, TestServer};

async fn metrics_show_requests_open_questions_and_answers(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (client, id) = ask(&server, "s1", "req-metrics").await;
    client.poll(&id).await.expect("poll");
    let text = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("text");
    assert!(text.contains("anteroom_open_questions 1"), "{text}");
    assert!(
        text.contains("route=\"/api/v1/s/{token}/elicitations\",method=\"POST\",status=\"201\"} 1"),
        "{text}"
    );
    assert!(!text.contains("ars_"), "tokens never reach the metrics");
    server
        .respond(
            &server.responder_key,
            &id,
            json!({"action_type": "accept", "content": {"env": "dev"}}),
        )
        .await;
    let text = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("text");
    assert!(
        text.contains("anteroom_answers_total{action=\"accept\"} 1"),
        "{text}"
    );
    assert!(text.contains("anteroom_open_questions 0"), "{text}");
    assert!(
        text.contains("anteroom_time_to_answer_seconds_count 1"),
        "{text}"
    );
    server.stop().await;
}

async fn openapi_document_describes_every_route(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (status, doc) = json_of(
        server
            .http
            .get(server.url("/api/v1/openapi.json"))
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().expect("version").starts_with("3."));
    let operations: Vec<String> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(path, methods)| {
            methods
                .as_object()
                .into_iter()
                .flat_map(|m| m.keys())
                .map(move |m| format!("{} {path}", m.to_uppercase()))
        })
        .collect();
    for expected in [
        "POST /api/v1/s/{token}/elicitations",
        "GET /api/v1/s/{token}/elicitations/{request_id}",
        "POST /api/v1/s/{token}/rounds/{round_id}/claim",
        "PATCH /api/v1/elicitations/{request_id}/respond",
        "POST /api/v1/rounds/{round_id}/responses",
        "DELETE /api/v1/sessions/{id}/token",
        "GET /api/v1/events",
        "GET /api/v1/gate",
        "PUT /api/v1/sessions/{id}/settings",
        "GET /api/v1/groups",
        "PUT /api/v1/groups/{name}/members/{username}",
        "PUT /api/v1/rounds/{round_id}/assignee",
        "POST /api/v1/rounds/{round_id}/deadline",
        "GET /api/v1/stats/response-times",
        "GET /api/v1/rules",
        "DELETE /api/v1/rules/{rule_id}",
        "POST /api/v1/s/{token}/run",
        "GET /api/v1/s/{token}/run/{run_id}/control",
        "POST /api/v1/sessions/{id}/stop",
        "GET /api/v1/sessions/{id}/output",
    ] {
        assert!(
            operations.iter().any(|op| op == expected),
            "{expected} missing from {operations:?}"
        );
    }
    assert_eq!(operations.len(), 49, "{operations:?}");
    server.stop().await;
}

anteroom_testkit::on_both_backends!(
    openapi_document_describes_every_route,
    metrics_show_requests_open_questions_and_answers,
);
