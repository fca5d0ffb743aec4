//! The pulsemcp producer routes with the clean-room client: create, poll, replay and expiry.

use chrono::Duration;
use serde_json::{Value, json};

use anteroom_testkit::requests::{ask, expires_in_an_hour, json_of, schema};
use anteroom_testkit::{
    self as support, Backend, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

async fn pulsemcp_round_trip_accept_reaches_the_poller_every_time(db: Backend) {
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

async fn create_reply_has_201_request_id_poll_url_and_the_askers_deadline(db: Backend) {
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

async fn decline_and_dismiss_with_content_return_no_content(db: Backend) {
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

async fn retried_identical_create_returns_the_round_and_a_different_body_is_refused(db: Backend) {
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

async fn expired_question_polls_expired_and_the_late_answer_is_refused(db: Backend) {
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

anteroom_testkit::on_both_backends!(
    pulsemcp_round_trip_accept_reaches_the_poller_every_time,
    create_reply_has_201_request_id_poll_url_and_the_askers_deadline,
    decline_and_dismiss_with_content_return_no_content,
    retried_identical_create_returns_the_round_and_a_different_body_is_refused,
    expired_question_polls_expired_and_the_late_answer_is_refused,
);
