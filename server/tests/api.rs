//! The HTTP API over real HTTP, on SQLite and PostgreSQL: the pulsemcp round trip with a clean-room client,
//! authentication, rounds and workers, live events, and a battery of malformed requests.

mod support;

use std::time::Duration as StdDuration;

use chrono::Duration;
use serde_json::{Value, json};
use support::{
    Db, Options, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"env": {"type": "string", "enum": ["dev", "prod"]}, "note": {"type": "string"}},
        "required": ["env"]
    })
}

fn expires_in_an_hour() -> String {
    (support::start_time() + Duration::hours(1)).to_rfc3339()
}

async fn ask(server: &TestServer, session: &str, request_id: &str) -> (PulsemcpClient, String) {
    let env = server.session(session).await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let body = client.body(
        request_id,
        "Which environment?",
        schema(),
        "deploy",
        &expires_in_an_hour(),
    );
    let id = client
        .create(request_id, &body)
        .await
        .expect("create succeeds");
    (client, id)
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let json =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status} body is JSON: {text}"));
    (status, json)
}

// ---------------------------------------------------------------------------------------------------------

async fn pulsemcp_round_trip_accept_reaches_the_poller_every_time(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (client, id) = ask(&server, "s1", "req-accept").await;
    assert_eq!(id, "req-accept");
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Pending);
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Pending);

    let (status, body) = json_of(
        server
            .respond(
                &server.responder_key,
                &id,
                json!({"action_type": "accept", "content": {"env": "prod"}}),
            )
            .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answered_by"], "api key responder");

    let expected = Outcome::Accept(Some(json!({"env": "prod"})));
    assert_eq!(client.poll(&id).await.expect("poll"), expected);
    assert_eq!(
        client.poll(&id).await.expect("poll again"),
        expected,
        "the same terminal answer every time"
    );
    server.stop().await;
}

async fn create_reply_has_201_request_id_poll_url_and_the_askers_deadline(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s1"));
    let soon = (support::start_time() + Duration::seconds(20)).to_rfc3339();
    let body = client.body("req-1", "Sure?", schema(), "deploy", &soon);
    let reply = server
        .http
        .post(&env.request_url)
        .json(&body)
        .send()
        .await
        .expect("POST");
    let (status, json) = json_of(reply).await;
    assert_eq!(status, 201);
    assert_eq!(json["requestId"], "req-1");
    assert_eq!(json["action"], "pending");
    assert_eq!(json["_meta"]["com.pulsemcp/request-id"], "req-1");
    assert_eq!(
        json["_meta"]["com.pulsemcp/poll-url"],
        format!("{}/req-1", env.poll_url)
    );
    assert_eq!(
        json["_meta"]["com.pulsemcp/expires-at"], "2026-03-01T09:00:20.000Z",
        "the asker's own deadline, in the one wire format"
    );
    assert!(json["roundId"].is_string());

    // Through the session's own URL, a deadline that has already passed is refused, not stretched.
    let past = (support::start_time() - Duration::hours(1)).to_rfc3339();
    let body = client.body("req-2", "Sure?", schema(), "deploy", &past);
    let (status, json) = json_of(
        server
            .http
            .post(&env.request_url)
            .json(&body)
            .send()
            .await
            .expect("POST"),
    )
    .await;
    assert_eq!(
        (status, json["error"].as_str()),
        (422, Some("validation_error"))
    );
    assert!(
        json["message"]
            .as_str()
            .is_some_and(|m| m.contains("already passed")),
        "{json}"
    );
    server.stop().await;
}

async fn decline_and_dismiss_with_content_return_no_content(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s1"));
    for (id, action, outcome) in [
        ("req-d", "decline", Outcome::Decline),
        ("req-c", "cancel", Outcome::Cancel),
    ] {
        let body = client.body(id, "?", schema(), "deploy", &expires_in_an_hour());
        client.create(id, &body).await.expect("create");
        let reply = server
            .respond(
                &server.responder_key,
                id,
                json!({"action_type": action, "content": {"env": "prod"}}),
            )
            .await;
        assert_eq!(reply.status(), 200);
        let raw: Value = server
            .http
            .get(format!("{}/{id}", env.poll_url))
            .send()
            .await
            .expect("poll")
            .json()
            .await
            .expect("JSON");
        assert_eq!(raw["action"], action);
        assert!(raw["content"].is_null(), "content never replayed: {raw}");
        assert_eq!(client.poll(id).await.expect("poll"), outcome);
    }
    server.stop().await;
}

async fn retried_identical_create_returns_the_round_and_a_different_body_is_refused(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s1"));
    let body = client.body("req-r", "?", schema(), "deploy", &expires_in_an_hour());
    let first = server
        .http
        .post(&env.request_url)
        .json(&body)
        .send()
        .await
        .expect("POST");
    assert_eq!(first.status(), 201);
    let (status, again) = json_of(
        server
            .http
            .post(&env.request_url)
            .json(&body)
            .send()
            .await
            .expect("POST"),
    )
    .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["requestId"], "req-r");
    let different = client.body(
        "req-r",
        "Something else?",
        schema(),
        "deploy",
        &expires_in_an_hour(),
    );
    let (status, error) = json_of(
        server
            .http
            .post(&env.request_url)
            .json(&different)
            .send()
            .await
            .expect("POST"),
    )
    .await;
    assert_eq!(
        (status, error["error"].as_str()),
        (422, Some("validation_error"))
    );
    server.stop().await;
}

async fn expired_question_polls_expired_and_the_late_answer_is_refused(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (client, id) = ask(&server, "s1", "req-x").await;
    server.clock.advance(Duration::minutes(61));
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Expired);
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Expired);
    let (status, body) = json_of(
        server
            .respond(
                &server.responder_key,
                &id,
                json!({"action_type": "accept", "content": {"env": "dev"}}),
            )
            .await,
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("managed_input_state"))
    );
    let (_, session) = json_of(
        server
            .http
            .get(server.url("/api/v1/sessions/s1"))
            .bearer_auth(&server.viewer_key)
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(
        session["lost_elicitation"]["reason"], "asker_stopped",
        "the deadline was the asker's own"
    );
    assert_eq!(session["status"], "running");
    server.stop().await;
}

async fn second_answer_gets_409_naming_the_winner(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (_, id) = ask(&server, "s1", "req-w").await;
    server
        .respond(&server.admin_key, &id, json!({"action_type": "decline"}))
        .await;
    let (status, again) = json_of(
        server
            .respond(&server.admin_key, &id, json!({"action_type": "decline"}))
            .await,
    )
    .await;
    assert_eq!(
        (status, again["replayed"].as_bool()),
        (200, Some(true)),
        "the same answer again is a replay"
    );
    let (status, body) = json_of(
        server
            .respond(
                &server.responder_key,
                &id,
                json!({"action_type": "accept", "content": {"env": "dev"}}),
            )
            .await,
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("managed_input_conflict"))
    );
    assert_eq!(body["details"]["answered_by"], "api key admin");
    assert!(
        body["message"]
            .as_str()
            .expect("message")
            .contains("already answered")
    );
    server.stop().await;
}

async fn invalid_answer_gets_per_field_errors(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (_, id) = ask(&server, "s1", "req-v").await;
    let (status, body) = json_of(
        server
            .respond(
                &server.responder_key,
                &id,
                json!({"action_type": "accept", "content": {"env": "staging"}}),
            )
            .await,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["details"]["fields"]["env"][0],
        "must be one of: dev, prod"
    );
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Authentication

async fn producer_and_management_auth_rules(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (_, id) = ask(&server, "s1", "req-a").await;
    let other = server.session("s2").await;
    let http = &server.http;

    let wrong = http
        .get(server.url("/api/v1/s/ars_0000/elicitations/req-a"))
        .send()
        .await
        .expect("GET");
    assert_eq!(wrong.status(), 401, "wrong token");
    let (status, body) = json_of(
        http.get(format!("{}/{id}", other.poll_url))
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("not_found")),
        "another session's round is unknown"
    );

    let client = PulsemcpClient::new(&other.request_url, &other.poll_url, Some("s1"));
    let mismatched = client.body("req-m", "?", schema(), "deploy", &expires_in_an_hour());
    let reply = http
        .post(&other.request_url)
        .json(&mismatched)
        .send()
        .await
        .expect("POST");
    assert_eq!(reply.status(), 403, "_meta session names another session");

    assert_eq!(
        http.get(server.url("/api/v1/elicitations/req-a"))
            .send()
            .await
            .expect("GET")
            .status(),
        401,
        "bare route without key"
    );
    let bare = http
        .post(server.url("/api/v1/elicitations"))
        .json(&mismatched)
        .send()
        .await
        .expect("POST");
    assert_eq!(bare.status(), 401);
    let unauthenticated = http
        .patch(server.url("/api/v1/elicitations/req-a/respond"))
        .json(&json!({"action_type": "decline"}))
        .send()
        .await
        .expect("PATCH");
    assert_eq!(unauthenticated.status(), 401, "respond without key");
    assert_eq!(
        server
            .respond("ark_not-a-key", &id, json!({"action_type": "decline"}))
            .await
            .status(),
        401
    );
    let (status, body) = json_of(
        server
            .respond(&server.viewer_key, &id, json!({"action_type": "decline"}))
            .await,
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("forbidden")),
        "viewer cannot answer"
    );
    let create = http
        .post(server.url("/api/v1/sessions"))
        .bearer_auth(&server.responder_key)
        .json(&json!({"id": "s3"}))
        .send()
        .await
        .expect("POST");
    assert_eq!(create.status(), 403, "only admins register sessions");

    let revoke = http
        .delete(server.url("/api/v1/sessions/s2/token"))
        .bearer_auth(&server.admin_key)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(revoke.status(), 200);
    assert_eq!(
        http.get(format!("{}/anything", other.poll_url))
            .send()
            .await
            .expect("GET")
            .status(),
        401,
        "revoked token"
    );
    server.stop().await;
}

async fn bare_routes_take_a_producer_key_and_register_the_session(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let url = server.url("/api/v1/elicitations");
    let client = PulsemcpClient::new(&url, &url, Some("fresh-session"));
    let body = client.body("req-b", "?", schema(), "deploy", &expires_in_an_hour());
    let reply = server
        .http
        .post(&url)
        .bearer_auth(&server.admin_key)
        .json(&body)
        .send()
        .await
        .expect("POST");
    assert_eq!(reply.status(), 201);
    let poll = server
        .http
        .get(format!("{url}/req-b"))
        .bearer_auth(&server.responder_key)
        .send()
        .await
        .expect("GET");
    assert_eq!(poll.status(), 200);
    let session = server
        .http
        .get(server.url("/api/v1/sessions/fresh-session"))
        .bearer_auth(&server.viewer_key)
        .send()
        .await
        .expect("GET");
    assert_eq!(session.status(), 200, "registered on the fly");
    server.stop().await;
}

/// Attack: a responder's API key registered sessions and posted into any session on the bare route.
async fn responder_key_cannot_register_sessions_on_the_bare_route(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let url = server.url("/api/v1/elicitations");
    for session in ["brand-new", "s1"] {
        let client = PulsemcpClient::new(&url, &url, Some(session));
        let body = client.body("req-r", "?", schema(), "deploy", &expires_in_an_hour());
        let reply = server
            .http
            .post(&url)
            .bearer_auth(&server.responder_key)
            .json(&body)
            .send()
            .await
            .expect("POST");
        assert_eq!(reply.status(), 403, "{session}");
    }
    let session = server
        .http
        .get(server.url("/api/v1/sessions/brand-new"))
        .bearer_auth(&server.viewer_key)
        .send()
        .await
        .expect("GET");
    assert_eq!(session.status(), 404, "nothing was registered");
    server.stop().await;
}

async fn anonymous_bare_routes_only_when_the_operator_opts_in(db: Db) {
    let Some(server) = TestServer::start_with(
        db,
        Options {
            allow_unauthenticated_producers: true,
            ..Options::default()
        },
    )
    .await
    else {
        return;
    };
    server.session("known").await;
    let url = server.url("/api/v1/elicitations");
    let known = PulsemcpClient::new(&url, &url, Some("known"));
    let id = known
        .create(
            "req-n",
            &known.body("req-n", "?", schema(), "deploy", &expires_in_an_hour()),
        )
        .await
        .expect("anonymous create");
    assert_eq!(
        known.poll(&id).await.expect("anonymous poll"),
        Outcome::Pending
    );
    let unknown = PulsemcpClient::new(&url, &url, Some("nobody"));
    let reply = server
        .http
        .post(&url)
        .json(&unknown.body("req-u", "?", schema(), "deploy", &expires_in_an_hour()))
        .send()
        .await
        .expect("POST");
    assert_eq!(
        reply.status(),
        404,
        "an unknown session is not registered anonymously"
    );
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Sessions, rounds and workers

async fn session_create_returns_token_once_and_the_environment_block(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    assert!(env.token.starts_with("ars_"));
    assert_eq!(
        env.body["environment"]["ELICITATION_PREFER_HTTP_FALLBACK"],
        "true"
    );
    assert_eq!(env.body["environment"]["ELICITATION_TTL_MS"], "3600000");
    assert!(env.body["environment"].get("ELICITATION_ENABLED").is_none());
    assert_eq!(
        env.request_url,
        format!("{}/api/v1/s/{}/elicitations", server.base, env.token)
    );
    let (status, again) = json_of(
        server
            .http
            .post(server.url("/api/v1/sessions"))
            .bearer_auth(&server.admin_key)
            .json(&json!({"id": "s1"}))
            .send()
            .await
            .expect("POST"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        again["producer_token"].is_null(),
        "the token is shown only once"
    );
    let (_, rotated) = json_of(
        server
            .http
            .post(server.url("/api/v1/sessions/s1/token?server=github"))
            .bearer_auth(&server.admin_key)
            .send()
            .await
            .expect("POST"),
    )
    .await;
    let url = rotated["environment"]["ELICITATION_REQUEST_URL"]
        .as_str()
        .expect("url");
    assert!(url.ends_with("/servers/github/elicitations"), "{url}");
    server.stop().await;
}

async fn server_route_names_the_asking_server(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let url = format!(
        "{}/api/v1/s/{}/servers/github/elicitations",
        server.base, env.token
    );
    let client = PulsemcpClient::new(&url, &url, Some("s1"));
    let id = client
        .create(
            "req-g",
            &client.body("req-g", "?", schema(), "create_pr", &expires_in_an_hour()),
        )
        .await
        .expect("create");
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Pending);
    let (_, rounds) = json_of(
        server
            .http
            .get(server.url("/api/v1/sessions/s1/rounds"))
            .bearer_auth(&server.viewer_key)
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(rounds["rounds"][0]["server"], "github");
    assert_eq!(rounds["rounds"][0]["operation_name"], "create_pr");
    server.stop().await;
}

async fn managed_rounds_and_worker_leases_over_http(db: Db) {
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

async fn attention_queue_and_session_actions(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    server.session("quiet").await;
    ask(&server, "waiting", "req-q").await;
    let (_, queue) = json_of(
        server
            .http
            .get(server.url("/api/v1/sessions"))
            .bearer_auth(&server.viewer_key)
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(queue["sessions"][0]["session"]["id"], "waiting");
    assert_eq!(queue["sessions"][0]["open_rounds"], 1);
    let (status, finish) = json_of(
        server
            .http
            .patch(server.url("/api/v1/sessions/waiting"))
            .bearer_auth(&server.responder_key)
            .json(&json!({"action": "finish"}))
            .send()
            .await
            .expect("PATCH"),
    )
    .await;
    assert_eq!(
        (status, finish["error"].as_str()),
        (409, Some("managed_input_state"))
    );
    let (status, cancelled) = json_of(
        server
            .http
            .post(server.url("/api/v1/sessions/waiting/cancel"))
            .bearer_auth(&server.admin_key)
            .send()
            .await
            .expect("POST"),
    )
    .await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled"))
    );
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Live events

async fn event_stream_shows_created_and_answered_within_a_second(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let stream = server
        .http
        .get(server.url("/api/v1/events"))
        .bearer_auth(&server.viewer_key)
        .send()
        .await
        .expect("GET events");
    assert_eq!(stream.status(), 200);
    let mut stream = stream;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s1"));
    let id = client
        .create(
            "req-e",
            &client.body("req-e", "?", schema(), "deploy", &expires_in_an_hour()),
        )
        .await
        .expect("create");
    server
        .respond(
            &server.responder_key,
            &id,
            json!({"action_type": "decline"}),
        )
        .await;

    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + StdDuration::from_secs(1);
    while !(seen.contains("event: round.created") && seen.contains("event: round.answered")) {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("no created+answered events within a second: {other:?}; saw {seen}"),
        }
    }
    assert!(seen.contains("\"request_id\":\"req-e\""), "{seen}");

    // An expiry found by a poll is streamed too.
    let id = client
        .create(
            "req-late",
            &client.body("req-late", "?", schema(), "deploy", &expires_in_an_hour()),
        )
        .await
        .expect("create");
    server.clock.advance(Duration::minutes(61));
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Expired);
    let deadline = tokio::time::Instant::now() + StdDuration::from_secs(1);
    while !seen.contains("event: round.expired") {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("no expired event within a second: {other:?}; saw {seen}"),
        }
    }
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Bad input: every malformed request gets a 4xx JSON error and the server keeps working

async fn malformed_requests_get_json_4xx_and_the_server_keeps_working(db: Db) {
    let Some(server) = TestServer::start_with(
        db,
        Options {
            body_limit: 64 * 1024,
            ..Options::default()
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

async fn metrics_show_requests_open_questions_and_answers(db: Db) {
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

async fn floods_are_rate_limited_but_steady_polling_never_is(db: Db) {
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

async fn openapi_document_describes_every_route(db: Db) {
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
    ] {
        assert!(
            operations.iter().any(|op| op == expected),
            "{expected} missing from {operations:?}"
        );
    }
    assert_eq!(operations.len(), 30, "{operations:?}");
    server.stop().await;
}

on_both_backends!(
    openapi_document_describes_every_route,
    metrics_show_requests_open_questions_and_answers,
    floods_are_rate_limited_but_steady_polling_never_is,
    pulsemcp_round_trip_accept_reaches_the_poller_every_time,
    create_reply_has_201_request_id_poll_url_and_the_askers_deadline,
    decline_and_dismiss_with_content_return_no_content,
    retried_identical_create_returns_the_round_and_a_different_body_is_refused,
    expired_question_polls_expired_and_the_late_answer_is_refused,
    second_answer_gets_409_naming_the_winner,
    invalid_answer_gets_per_field_errors,
    producer_and_management_auth_rules,
    bare_routes_take_a_producer_key_and_register_the_session,
    responder_key_cannot_register_sessions_on_the_bare_route,
    anonymous_bare_routes_only_when_the_operator_opts_in,
    session_create_returns_token_once_and_the_environment_block,
    server_route_names_the_asking_server,
    managed_rounds_and_worker_leases_over_http,
    attention_queue_and_session_actions,
    event_stream_shows_created_and_answered_within_a_second,
    malformed_requests_get_json_4xx_and_the_server_keeps_working,
);
