//! Delivery truth, end to end (docs/deadlines.md): the clean-room pulsemcp client waits as the real library
//! does (polls at once, then every interval, gives up at its own deadline without a final poll) while a person
//! answers early, late or in the last poll interval. An answer counts as delivered only when a poll carries it;
//! every other ending is said plainly in the API, the page, the event stream, the webhooks and the metrics.

use anteroom_testkit::{self as support, on_both_backends};

use anteroom_domain::{access::Role, webhook::WebhookEndpoint};
use anteroom_server::jobs::expire;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use support::{
    Backend, Settings, TestServer,
    browser::{page, person, sign_in},
    pulsemcp::{Outcome, PulsemcpClient, Wait},
    start_time,
};

fn schema() -> Value {
    json!({"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]})
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "test times are a few seconds with at most a tenth"
)]
fn at(seconds: f64) -> DateTime<Utc> {
    start_time() + Duration::milliseconds((seconds * 1000.0) as i64)
}

fn with_webhooks() -> Settings {
    Settings {
        webhooks: vec![WebhookEndpoint::parse("http://127.0.0.1:9/hook").expect("endpoint")],
        ..Settings::default()
    }
}

/// A session, a client on its environment block, a question whose asker waits `ttl_seconds`, and the client's
/// wait for it (polling every 5 s from the start).
async fn ask(server: &TestServer, ttl_seconds: i64) -> (PulsemcpClient, String, Wait) {
    let env = server.session("s1").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let expires = (start_time() + Duration::seconds(ttl_seconds)).to_rfc3339();
    let body = client.body("req-1", "Which environment?", schema(), "deploy", &expires);
    let id = client.create("req-1", &body).await.expect("created");
    let wait = Wait::new(&id, at(0.0), Duration::seconds(5), at(ttl_seconds as f64));
    (client, id, wait)
}

/// GETs `url` without credentials (a producer's own URL) and returns the JSON body.
async fn get_json(server: &TestServer, url: &str) -> Value {
    server
        .http
        .get(url)
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON")
}

async fn answer(server: &TestServer, id: &str) -> (u16, Value) {
    let reply = server
        .respond(
            &server.responder_key,
            id,
            json!({"action_type": "accept", "content": {"env": "prod"}}),
        )
        .await;
    let status = reply.status().as_u16();
    (status, reply.json().await.expect("JSON"))
}

async fn session_json(server: &TestServer) -> Value {
    server
        .get_json("/api/v1/sessions/s1", &server.viewer_key)
        .await
}

async fn session_page(server: &TestServer) -> String {
    person(server, "rita", Role::Responder).await;
    let cookie = sign_in(server, "rita").await;
    let (status, html) = page(server, "/sessions/s1", &cookie).await;
    assert_eq!(status, 200);
    html
}

async fn a_late_answer_after_a_short_ttl_is_refused_and_the_page_says_why(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (client, id, mut wait) = ask(&server, 20).await;
    let outcome = wait.run_until(&client, &server.clock, at(29.0)).await;
    assert!(matches!(outcome, Some(Ok(Outcome::Expired))), "{outcome:?}");
    assert_eq!(wait.polls, vec![at(0.0), at(5.0), at(10.0), at(15.0)]);

    let (status, refused) = answer(&server, &id).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("managed_input_state"))
    );
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped waiting")),
        "{refused}"
    );
    let session = session_json(&server).await;
    assert_eq!(session["lost_elicitation"]["reason"], "asker_stopped");
    let html = session_page(&server).await;
    assert!(
        html.contains(r#"data-reason="asker_stopped""#),
        "lost banner"
    );
    assert!(html.contains("The asking server stopped waiting"));
    server.stop().await;
}

async fn an_answer_in_the_last_poll_interval_ends_undelivered_everywhere(db: Backend) {
    let Some(server) = TestServer::start_with(db, with_webhooks()).await else {
        return;
    };
    let mut events = server.state.events.subscribe();
    let (client, id, mut wait) = ask(&server, 60).await;
    assert!(
        wait.run_until(&client, &server.clock, at(57.2))
            .await
            .is_none()
    );
    let (status, recorded) = answer(&server, &id).await;
    assert_eq!(status, 200, "answered before every deadline: {recorded}");
    let outcome = wait.run_until(&client, &server.clock, at(61.0)).await;
    assert!(
        matches!(outcome, Some(Ok(Outcome::Expired))),
        "the library never polls at its deadline: {outcome:?}"
    );
    assert_eq!(wait.polls.last(), Some(&at(55.0)));

    server.clock.advance(Duration::milliseconds(500));
    assert_eq!(
        expire::run(server.state.clone()).await,
        1,
        "the sweep ends it"
    );

    let round_id = recorded["round_id"].as_str().expect("round id");
    let round = server
        .get_json(&format!("/api/v1/rounds/{round_id}"), &server.viewer_key)
        .await;
    assert_eq!(round["status"], "failed");
    assert_eq!(round["failure"]["code"], "undelivered");
    let detail = "api key responder answered at 09:00:57 UTC, but the asking server had stopped waiting at \
                  09:01:00 UTC — the agent never received this answer.";
    assert_eq!(round["failure"]["message"], detail);
    let session = session_json(&server).await;
    assert_eq!(session["lost_elicitation"]["reason"], "undelivered");
    assert_eq!(session["lost_elicitation"]["detail"], detail);

    let html = session_page(&server).await;
    assert!(html.contains(r#"data-reason="undelivered""#), "lost banner");
    assert!(html.contains("Answered — not delivered"), "history");

    let mut kinds = Vec::new();
    while let Ok(event) = events.try_recv() {
        kinds.push(event.kind.as_str());
    }
    assert!(kinds.contains(&"round.undelivered"), "{kinds:?}");
    let outbox = server
        .store
        .list_webhook_deliveries(50)
        .await
        .expect("outbox");
    let undelivered = outbox
        .iter()
        .find(|d| d.event == "question.undelivered")
        .expect("webhook queued");
    assert_eq!(undelivered.payload["data"]["detail"], detail);
    let metrics = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains(r#"anteroom_questions_ended_total{reason="undelivered"} 1"#),
        "{metrics}"
    );
    // A poll after all this says what the asker would have seen: the question expired.
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Expired);
    server.stop().await;
}

async fn revoking_the_token_ends_a_pending_question(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (client, id, mut wait) = ask(&server, 600).await;
    assert!(
        wait.run_until(&client, &server.clock, at(2.0))
            .await
            .is_none()
    );
    // A poll now reads the database's count of token changes, so the next read of it is a second away: the
    // create below is refused by this instance's own note of the change, not by that count.
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Pending);
    let revoked: Value = server
        .http
        .delete(server.url("/api/v1/sessions/s1/token"))
        .bearer_auth(&server.admin_key)
        .send()
        .await
        .expect("DELETE token")
        .json()
        .await
        .expect("JSON");
    assert_eq!(revoked["ended_rounds"].as_array().map(Vec::len), Some(1));
    // The create above left the token's session in memory: a new question with the revoked token is refused at
    // once, not once that memory ages out.
    let expires = (start_time() + Duration::seconds(600)).to_rfc3339();
    let body = client.body("req-2", "And now?", schema(), "deploy", &expires);
    let refused = client.create("req-2", &body).await;
    assert!(
        matches!(&refused, Err(failed) if failed.0.contains("401")),
        "a revoked token asks nothing: {refused:?}"
    );
    let outcome = wait.run_until(&client, &server.clock, at(30.0)).await;
    assert!(
        matches!(&outcome, Some(Err(failed)) if failed.0.contains("401")),
        "the client stops at the first 401: {outcome:?}"
    );
    let (status, refused) = answer(&server, &id).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("managed_input_state")),
        "nobody answers into a void"
    );
    let session = session_json(&server).await;
    assert_eq!(session["lost_elicitation"]["reason"], "revoked");
    server.stop().await;
}

async fn a_normal_answer_is_delivered_and_nothing_is_lost(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (client, id, mut wait) = ask(&server, 60).await;
    assert!(
        wait.run_until(&client, &server.clock, at(7.0))
            .await
            .is_none()
    );
    let (status, recorded) = answer(&server, &id).await;
    assert_eq!(status, 200);
    let outcome = wait.run_until(&client, &server.clock, at(61.0)).await;
    assert!(
        matches!(&outcome, Some(Ok(Outcome::Accept(Some(content)))) if content["env"] == "prod"),
        "{outcome:?}"
    );
    assert_eq!(wait.polls.last(), Some(&at(10.0)));
    server.clock.advance(Duration::minutes(5));
    assert_eq!(expire::run(server.state.clone()).await, 0);
    let round_id = recorded["round_id"].as_str().expect("round id");
    let round = server
        .get_json(&format!("/api/v1/rounds/{round_id}"), &server.viewer_key)
        .await;
    assert_eq!(round["status"], "delivered");
    assert!(session_json(&server).await["lost_elicitation"].is_null());
    server.stop().await;
}

async fn the_page_shows_when_the_asker_last_checked(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (client, _, mut wait) = ask(&server, 600).await;
    assert!(
        wait.run_until(&client, &server.clock, at(8.0))
            .await
            .is_none()
    );
    let html = session_page(&server).await;
    assert!(
        html.contains("checked 3 s ago · every ~5 s"),
        "the banner says when the asker last polled"
    );
    assert!(html.contains("the asking server stops waiting in 9 min 52 s"));
    server.stop().await;
}

async fn every_reply_reports_exactly_the_stored_record(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    server.clock.advance(Duration::nanoseconds(123_456_789));
    let env = server.session("s1").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let body = client.body(
        "req-1",
        "Which environment?",
        schema(),
        "deploy",
        "2026-03-01T09:30:00.987654321Z",
    );
    let created: Value = server
        .http
        .post(&env.request_url)
        .json(&body)
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON");
    let expires = created["_meta"]["com.pulsemcp/expires-at"].clone();
    assert_eq!(expires, "2026-03-01T09:30:00.987Z");
    let polled = get_json(&server, &format!("{}/req-1", env.poll_url)).await;
    assert_eq!(polled["_meta"]["com.pulsemcp/expires-at"], expires);

    server.clock.advance(Duration::nanoseconds(987_654_321));
    let (_, first) = answer(&server, "req-1").await;
    let (_, replayed) = answer(&server, "req-1").await;
    assert_eq!(replayed["replayed"], true);
    assert_eq!(first["answered_at"], "2026-03-01T09:00:01.111Z");
    assert_eq!(replayed["answered_at"], first["answered_at"]);
    let round_id = first["round_id"].as_str().expect("round id");
    let round = server
        .get_json(&format!("/api/v1/rounds/{round_id}"), &server.viewer_key)
        .await;
    assert_eq!(round["responded_at"], first["answered_at"]);
    assert_eq!(round["created_at"], "2026-03-01T09:00:00.123Z");
    let picked = get_json(&server, &format!("{}/req-1", env.poll_url)).await;
    assert_eq!(
        picked["_meta"]["com.pulsemcp/responded-at"],
        first["answered_at"]
    );
    server.stop().await;
}

on_both_backends!(
    a_late_answer_after_a_short_ttl_is_refused_and_the_page_says_why,
    an_answer_in_the_last_poll_interval_ends_undelivered_everywhere,
    revoking_the_token_ends_a_pending_question,
    a_normal_answer_is_delivered_and_nothing_is_lost,
    the_page_shows_when_the_asker_last_checked,
    every_reply_reports_exactly_the_stored_record,
);
