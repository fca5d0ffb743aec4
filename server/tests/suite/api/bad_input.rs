//! Bad input and too much of it: malformed requests get a 4xx JSON error, floods are throttled.

use serde_json::{Value, json};

use anteroom_testkit::requests::{ask, expires_in_an_hour, schema};
use anteroom_testkit::{
    Backend, Settings, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

async fn malformed_requests_get_json_4xx_and_the_server_keeps_working(db: Backend) {
    let Some(server) = TestServer::start_with(
        db,
        Settings {
            body_limit_kib: 64,
            ..Settings::default()
        },
    )
    .await
    else {
        return;
    };
    let env = server.session("s1").await;
    let create = env.request_url.clone();
    let meta = |id: &str| json!({"com.pulsemcp/request-id": id});
    let form =
        |schema: Value| json!({"message": "?", "requestedSchema": schema, "_meta": meta("bad-1")});
    let long = "x".repeat(200);
    let mut deep = json!({"type": "string"});
    for _ in 0..12 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let many: serde_json::Map<String, Value> = (0..150)
        .map(|i| (format!("f{i}"), json!({"type": "string"})))
        .collect();

    let bodies: Vec<(String, &str)> = vec![
        ("{".into(), "broken JSON"),
        ("".into(), "empty body"),
        ("null".into(), "null"),
        ("[]".into(), "array"),
        ("42".into(), "number"),
        ("\"text\"".into(), "string"),
        (json!({}).to_string(), "empty object"),
        (json!({"message": "?"}).to_string(), "no meta"),
        (json!({"message": "?", "_meta": {}}).to_string(), "no request id"),
        (json!({"message": "?", "_meta": {"com.pulsemcp/request-id": 5}}).to_string(), "numeric request id"),
        (json!({"message": "?", "_meta": {"com.pulsemcp/request-id": ""}}).to_string(), "empty request id"),
        (json!({"message": "?", "_meta": {"com.pulsemcp/request-id": long}}).to_string(), "long request id"),
        (json!({"message": "?", "_meta": {"com.pulsemcp/request-id": "a b"}}).to_string(), "space in id"),
        (json!({"message": "?", "_meta": {"com.pulsemcp/request-id": "a\u{0}b"}}).to_string(), "null byte in id"),
        (json!({"message": "?", "_meta": {"com.pulsemcp/request-id": "ü"}}).to_string(), "non-ascii id"),
        (json!({"message": "?", "_meta": "meta"}).to_string(), "meta string"),
        (json!({"_meta": meta("x")}).to_string(), "no message"),
        (json!({"message": 5, "_meta": meta("x")}).to_string(), "numeric message"),
        (json!({"message": null, "_meta": meta("x")}).to_string(), "null message"),
        (json!({"message": "", "requestedSchema": {"type": "object"}, "_meta": meta("x")}).to_string(), "empty message"),
        (json!({"message": "x".repeat(10_001), "requestedSchema": {"type": "object"}, "_meta": meta("x")}).to_string(), "long message"),
        (json!({"message": "?", "_meta": meta("x")}).to_string(), "no schema"),
        (json!({"message": "?", "requestedSchema": "schema", "_meta": meta("x")}).to_string(), "string schema"),
        (json!({"message": "?", "requestedSchema": [], "_meta": meta("x")}).to_string(), "array schema"),
        (form(json!({"type": "array"})).to_string(), "array type"),
        (form(json!({"type": "object", "properties": []})).to_string(), "properties array"),
        (form(json!({"type": "object", "properties": {"a": 1}})).to_string(), "property number"),
        (form(json!({"type": "object", "properties": {"a": {"type": "strung"}}})).to_string(), "unknown type"),
        (form(json!({"type": "object", "properties": {"a": {"type": "string", "enum": []}}})).to_string(), "empty enum"),
        (form(json!({"type": "object", "properties": {"a": {"type": "string", "minLength": "2"}}})).to_string(), "string minLength"),
        (form(json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"})).to_string(), "required string"),
        (form(json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]})).to_string(), "required unknown"),
        (form(json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/x.json"}}})).to_string(), "remote ref"),
        (form(deep.clone()).to_string(), "deep schema"),
        (form(json!({"type": "object", "properties": many})).to_string(), "too many properties"),
        (form(json!({"type": "object", "properties": {"a": {"type": "string", "description": "x".repeat(70_000)}}})).to_string(), "oversize body"),
        (json!({"mode": "url", "message": "?", "_meta": meta("x")}).to_string(), "url without url"),
        (json!({"mode": "url", "message": "?", "url": "javascript:alert(1)", "elicitationId": "e", "_meta": meta("x")}).to_string(), "javascript url"),
        (json!({"mode": "carrier-pigeon", "message": "?", "_meta": meta("x")}).to_string(), "unknown mode"),
        (json!({"mode": 7, "message": "?", "_meta": meta("x")}).to_string(), "numeric mode"),
        (json!({"message": "?", "requestedSchema": {"type": "object"}, "_meta": {"com.pulsemcp/request-id": "x", "com.pulsemcp/session-id": 5}}).to_string(), "numeric session id"),
        (json!({"message": "?", "requestedSchema": {"type": "object"}, "_meta": {"com.pulsemcp/request-id": "x", "com.pulsemcp/tool-name": []}}).to_string(), "array tool name"),
        ("\u{0}".into(), "null byte body"),
        ("{\"message\": \"\\ud800\"}".into(), "lone surrogate"),
    ];
    let mut checked = 0;
    for (body, what) in &bodies {
        let reply = server
            .http
            .post(&create)
            .header("Content-Type", "application/json")
            .body(body.clone())
            .send()
            .await
            .expect("POST");
        let status = reply.status().as_u16();
        let text = reply.text().await.expect("body");
        assert!((400..500).contains(&status), "{what}: {status} {text}");
        let json: Value =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{what}: not JSON: {text}"));
        assert!(
            json["error"].is_string() && json["message"].is_string(),
            "{what}: {json}"
        );
        checked += 1;
    }

    let other: Vec<(reqwest::RequestBuilder, &str)> = vec![
        (
            server
                .http
                .post(&create)
                .header("Content-Type", "text/plain")
                .body("{}"),
            "text/plain",
        ),
        (server.http.post(&create).body("{}"), "no content type"),
        (
            server.http.get(format!("{create}/{}", "x".repeat(300))),
            "long poll id",
        ),
        (
            server.http.get(format!("{create}/a%20b")),
            "space in poll id",
        ),
        (
            server.http.get(format!("{create}/%FF%FE")),
            "invalid utf-8 in path",
        ),
        (server.http.get(format!("{create}/x?wait=soon")), "bad wait"),
        (server.http.delete(&create), "wrong method"),
        (
            server.http.get(server.url("/api/v1/no-such-route")),
            "unknown route",
        ),
        (
            server
                .http
                .get(server.url("/api/v1/s/not-a-token/elicitations/x")),
            "malformed token",
        ),
        (
            server
                .http
                .get(server.url("/api/v1/rounds/not-a-uuid"))
                .bearer_auth(&server.viewer_key),
            "bad round id",
        ),
        (
            server
                .http
                .get(server.url("/api/v1/sessions/bad%20id"))
                .bearer_auth(&server.viewer_key),
            "bad session id",
        ),
        (
            server
                .http
                .post(server.url("/api/v1/sessions"))
                .bearer_auth(&server.admin_key)
                .json(&json!({"id": 5})),
            "numeric session id",
        ),
        (
            server
                .http
                .post(server.url("/api/v1/sessions"))
                .bearer_auth(&server.admin_key)
                .json(&json!({"id": "ok", "extra": 1})),
            "unknown field",
        ),
        (
            server
                .http
                .patch(server.url("/api/v1/elicitations/x/respond"))
                .bearer_auth(&server.admin_key)
                .json(&json!({"action_type": "maybe"})),
            "unknown action",
        ),
        (
            server
                .http
                .post(server.url("/api/v1/rounds/00000000-0000-0000-0000-000000000000/responses"))
                .bearer_auth(&server.admin_key)
                .json(&json!({"responses": {}, "idempotency_key": ""})),
            "empty idempotency key",
        ),
        (
            server
                .http
                .patch(server.url("/api/v1/sessions/s1"))
                .bearer_auth(&server.admin_key)
                .json(&json!({"action": "explode"})),
            "unknown session action",
        ),
        (
            server
                .http
                .get(server.url("/api/v1/sessions"))
                .header("Authorization", "Bearer"),
            "empty bearer",
        ),
        (
            server
                .http
                .post(format!("{}/api/v1/s/{}/rounds", server.base, env.token))
                .json(&json!({"requests": {}})),
            "round without fields",
        ),
        (
            server
                .http
                .post(format!(
                    "{}/api/v1/s/{}/rounds/00000000-0000-0000-0000-000000000000/claim",
                    server.base, env.token
                ))
                .json(&json!({"owner_id": "w", "lease_seconds": 0})),
            "zero lease",
        ),
    ];
    for (request, what) in other {
        let reply = request.send().await.expect("request");
        let status = reply.status().as_u16();
        let text = reply.text().await.expect("body");
        assert!((400..500).contains(&status), "{what}: {status} {text}");
        let json: Value =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{what}: not JSON: {text}"));
        assert!(json["error"].is_string(), "{what}: {json}");
        checked += 1;
    }
    assert!(checked >= 50, "{checked} malformed requests checked");

    // The battery spent this session's create budget; a fresh session shows the server itself is fine.
    let env = server.session("after").await;
    let (client, id) = {
        let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("after"));
        let id = client
            .create(
                "req-ok",
                &client.body(
                    "req-ok",
                    "Still fine?",
                    schema(),
                    "deploy",
                    &expires_in_an_hour(),
                ),
            )
            .await
            .expect("still works");
        (client, id)
    };
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Pending);
    assert_eq!(
        server
            .http
            .get(server.url("/healthz"))
            .send()
            .await
            .expect("healthz")
            .status(),
        200
    );
    server.stop().await;
}

async fn floods_are_rate_limited_but_steady_polling_never_is(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (client, id) = ask(&server, "s1", "req-rate").await;
    for _ in 0..15 {
        assert_eq!(
            client
                .poll(&id)
                .await
                .expect("a poll per question is never refused"),
            Outcome::Pending
        );
    }
    let env = server.session("flood").await;
    let flood = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("flood"));
    let mut limited = None;
    for i in 0..60 {
        let body = flood.body(
            &format!("f{i}"),
            "?",
            schema(),
            "deploy",
            &expires_in_an_hour(),
        );
        let reply = server
            .http
            .post(&env.request_url)
            .json(&body)
            .send()
            .await
            .expect("POST");
        if reply.status() == 429 {
            limited = Some(reply.json::<Value>().await.expect("JSON"));
            break;
        }
    }
    let limited = limited.expect("a flood of creates is throttled");
    assert_eq!(limited["error"], "rate_limited");
    server.stop().await;
}

/// Found by Schemathesis, held here deterministically: a body is read as its documented schema says.
async fn bodies_are_read_as_their_schema_says(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let post = |path: String, body: Value| {
        server
            .http
            .post(path)
            .bearer_auth(&server.admin_key)
            .json(&body)
            .send()
    };
    let sessions = server.url("/api/v1/sessions");
    // An array is not an object, though serde would read a struct from one.
    let array = post(sessions.clone(), json!([])).await.expect("POST");
    assert_eq!(array.status(), 422);
    let array: Value = array.json().await.expect("JSON");
    assert_eq!(array["message"], "The body must be a JSON object.");
    // Registering a session that exists still checks the body.
    let long = post(sessions, json!({"id": "s1", "title": "t".repeat(201)}))
        .await
        .expect("POST");
    assert_eq!(long.status(), 422);
    // A whole number written with a fraction of zero is a whole number, as JSON Schema says.
    let base = format!("{}/api/v1/s/{}", server.base, env.token);
    let round = post(
        format!("{base}/rounds"),
        json!({
            "logical_operation_id": "op-float", "operation_kind": "tool", "operation_name": "deploy",
            "requests": {"ok": {"mode": "form", "message": "Sure?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}},
            "round_index": 0.0, "round_limit": 1.0
        }),
    )
    .await
    .expect("POST rounds");
    assert_eq!(round.status(), 201);
    let round: Value = round.json().await.expect("JSON");
    let claim = format!(
        "{base}/rounds/{}/claim",
        round["round_id"].as_str().expect("id")
    );
    let fraction = post(
        claim.clone(),
        json!({"owner_id": "w1", "lease_seconds": 1.5}),
    )
    .await
    .expect("claim");
    assert_eq!(
        fraction.status(),
        422,
        "1.5 is not a whole number of seconds"
    );
    let whole = post(claim, json!({"owner_id": "w1", "lease_seconds": 60.0}))
        .await
        .expect("claim");
    assert_eq!(whole.status(), 200);
    server.stop().await;
}

anteroom_testkit::on_both_backends!(
    bodies_are_read_as_their_schema_says,
    floods_are_rate_limited_but_steady_polling_never_is,
    malformed_requests_get_json_4xx_and_the_server_keeps_working,
);
