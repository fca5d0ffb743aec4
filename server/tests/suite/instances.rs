//! Several instances on one PostgreSQL: an answer given on instance A reaches a poller and an event stream
//! on instance B (events travel by LISTEN/NOTIFY).

use anteroom_testkit as support;

use std::time::Duration as StdDuration;

use serde_json::{Value, json};
use support::{TestServer, pulsemcp::PulsemcpClient};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(anteroom_postgres_tests),
    ignore = "set ANTEROOM_TEST_POSTGRES_URL to run the PostgreSQL tests"
)]
async fn answer_on_one_instance_reaches_poller_and_stream_on_another() {
    let Some((a, b)) = TestServer::postgres_pair().await else {
        panic!("built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too");
    };
    let env = a.session("shared").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("shared"));
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let expires = (support::start_time() + chrono::Duration::hours(1)).to_rfc3339();
    let id = client
        .create(
            "req-pair",
            &client.body("req-pair", "Ship it?", schema, "deploy", &expires),
        )
        .await
        .expect("create on A");

    let mut stream = b
        .http
        .get(b.url("/api/v1/events"))
        .bearer_auth(&b.viewer_key)
        .send()
        .await
        .expect("stream on B");
    let poll_on_b = format!(
        "{}?wait=10",
        env.poll_url.replace(&a.base, &b.base) + "/" + &id
    );
    let http = b.http.clone();
    let poller = tokio::spawn(async move {
        http.get(poll_on_b)
            .send()
            .await
            .expect("long poll on B")
            .json::<Value>()
            .await
            .expect("JSON")
    });
    // Let the long poll and the stream settle before answering.
    tokio::time::sleep(StdDuration::from_millis(200)).await;

    let reply = a
        .respond(
            &a.responder_key,
            &id,
            json!({"action_type": "accept", "content": {"ok": true}}),
        )
        .await;
    assert_eq!(reply.status(), 200);

    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + StdDuration::from_secs(1);
    while !seen.contains("event: round.answered") {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            other => {
                panic!("B's stream did not see the answer within a second: {other:?}; saw {seen}")
            }
        }
    }
    let answer = tokio::time::timeout(StdDuration::from_secs(2), poller)
        .await
        .expect("poller answered")
        .expect("task");
    assert_eq!(answer["action"], "accept");
    assert_eq!(answer["content"], json!({"ok": true}));
    drop(stream);
    b.stop().await;
    a.stop().await;
}
