//! Managed rounds and worker leases over HTTP, from creation to resolution.

use serde_json::{Value, json};

use anteroom_testkit::requests::json_of;
use anteroom_testkit::{Backend, TestServer};

async fn managed_rounds_and_worker_leases_over_http(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let base = format!("{}/api/v1/s/{}", server.base, env.token);
    let http = &server.http;
    let (status, round) = json_of(http.post(format!("{base}/rounds")).json(&json!({
        "logical_operation_id": "op-1", "server": "shipping", "operation_kind": "tool", "operation_name": "book_shipment",
        "requests": {
            "address": {"mode": "form", "message": "Where?", "requestedSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            "confirm": {"mode": "form", "message": "Sure?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}
        },
        "request_state": "opaque", "round_index": 0, "round_limit": 2
    })).send().await.expect("POST rounds")).await;
    assert_eq!(status, 201, "{round}");
    let round_id = round["round_id"].as_str().expect("round id").to_owned();
    let (_, pending) = json_of(
        http.get(format!("{base}/pending"))
            .send()
            .await
            .expect("GET pending"),
    )
    .await;
    assert_eq!(pending["round_id"], round_id.as_str());

    let (status, lease) = json_of(
        http.post(format!("{base}/rounds/{round_id}/claim"))
            .json(&json!({"owner_id": "w1", "lease_seconds": 60}))
            .send()
            .await
            .expect("claim"),
    )
    .await;
    assert_eq!(status, 200, "{lease}");
    let token = lease["lease_token"]
        .as_str()
        .expect("lease token")
        .to_owned();
    let (status, _) = json_of(
        http.post(format!("{base}/rounds/{round_id}/claim"))
            .json(&json!({"owner_id": "w2"}))
            .send()
            .await
            .expect("claim"),
    )
    .await;
    assert_eq!(status, 409, "one lease at a time");
    let read: Value = http
        .get(format!("{base}/rounds/{round_id}"))
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    assert!(
        read["lease"]["lease_token"].is_null(),
        "the lease secret is never shown"
    );
    let (status, early) = json_of(
        http.post(format!("{base}/rounds/{round_id}/start-delivery"))
            .json(&json!({"owner_id": "w1", "lease_token": token}))
            .send()
            .await
            .expect("start"),
    )
    .await;
    assert_eq!(
        (status, early["error"].as_str()),
        (409, Some("managed_input_state"))
    );

    let (status, _) = json_of(http.post(server.url(&format!("/api/v1/rounds/{round_id}/responses"))).bearer_auth(&server.responder_key).json(&json!({
        "responses": {"address": {"action": "accept", "content": {"city": "Pune"}}, "confirm": {"action": "decline"}},
        "idempotency_key": "answer-1"
    })).send().await.expect("responses")).await;
    assert_eq!(status, 200);
    for step in ["start-delivery", "delivered", "resolve"] {
        let (status, body) = json_of(
            http.post(format!("{base}/rounds/{round_id}/{step}"))
                .json(&json!({"owner_id": "w1", "lease_token": token}))
                .send()
                .await
                .expect(step),
        )
        .await;
        assert_eq!(status, 200, "{step}: {body}");
    }
    let (_, redacted) = json_of(
        http.get(format!("{base}/rounds/{round_id}/redacted"))
            .send()
            .await
            .expect("redacted"),
    )
    .await;
    assert_eq!(redacted["status"], "resolved");
    assert!(!redacted.to_string().contains("Pune"));
    let (status, _) = json_of(
        http.post(format!("{base}/rounds/{round_id}/fail"))
            .json(&json!({"owner_id": "w1", "lease_token": token, "code": "x"}))
            .send()
            .await
            .expect("fail"),
    )
    .await;
    assert_eq!(status, 409, "nothing writes to a resolved round");
    server.stop().await;
}

anteroom_testkit::on_both_backends!(managed_rounds_and_worker_leases_over_http);
