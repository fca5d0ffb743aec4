//! Live events: the event stream shows what happens within a second.

use std::time::Duration as StdDuration;

use chrono::Duration;
use serde_json::json;

use anteroom_testkit::requests::{expires_in_an_hour, schema};
use anteroom_testkit::{
    Backend, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

async fn event_stream_shows_created_and_answered_within_a_second(db: Backend) {
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

anteroom_testkit::on_both_backends!(event_stream_shows_created_and_answered_within_a_second);
