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

/// Polls `url` every 50 ms (well inside the per-question poll limit) until `done` holds for the reply, for at most `within`; the reply and the time taken.
async fn poll_until(
    http: &reqwest::Client,
    url: &str,
    within: StdDuration,
    done: impl Fn(reqwest::StatusCode, &Value) -> bool,
) -> (reqwest::StatusCode, Value, StdDuration) {
    let started = tokio::time::Instant::now();
    loop {
        let reply = http.get(url).send().await.expect("poll");
        let status = reply.status();
        let body: Value = reply.json().await.unwrap_or(Value::Null);
        if done(status, &body) || started.elapsed() >= within {
            return (status, body, started.elapsed());
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
}

/// Instance B answers polls of a pending question from memory; an answer given on A, and a token revoked on
/// A, still reach B's pollers at once (well inside the 2 s an entry is trusted: the relay's event drops it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(anteroom_postgres_tests),
    ignore = "set ANTEROOM_TEST_POSTGRES_URL to run the PostgreSQL tests"
)]
async fn polls_remembered_on_one_instance_see_an_answer_and_a_revocation_on_another() {
    let Some((a, b)) = TestServer::postgres_pair().await else {
        panic!("built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too");
    };
    // Well under the 2 s a remembered poll is trusted, so only the relay's event can explain a pass.
    let within = StdDuration::from_millis(500);
    let env = a.session("remembered").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("remembered"));
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let expires = (support::start_time() + chrono::Duration::hours(1)).to_rfc3339();
    let mut polls_on_b = Vec::new();
    for request in ["req-remembered-1", "req-remembered-2"] {
        let id = client
            .create(
                request,
                &client.body(request, "Ship it?", schema.clone(), "deploy", &expires),
            )
            .await
            .expect("create on A");
        let url = env.poll_url.replace(&a.base, &b.base) + "/" + &id;
        // Twice: the first reads the database, the second is answered from B's memory.
        for _ in 0..2 {
            let pending: Value = b
                .http
                .get(&url)
                .send()
                .await
                .expect("poll")
                .json()
                .await
                .expect("JSON");
            assert_eq!(pending["action"], "pending");
        }
        polls_on_b.push((id, url));
    }

    let (answered_id, answered_url) = &polls_on_b[0];
    let reply = a
        .respond(
            &a.responder_key,
            answered_id,
            json!({"action_type": "accept", "content": {"ok": true}}),
        )
        .await;
    assert_eq!(reply.status(), 200);
    let (_, answer, took) = poll_until(&b.http, answered_url, within, |_, body| {
        body["action"] == "accept"
    })
    .await;
    assert_eq!(
        answer["action"], "accept",
        "B still said {answer} after {took:?}"
    );

    let revoked = a
        .http
        .delete(a.url("/api/v1/sessions/remembered/token"))
        .bearer_auth(&a.admin_key)
        .send()
        .await
        .expect("revoke on A");
    assert_eq!(revoked.status(), 200);
    let (_, still_pending_url) = &polls_on_b[1];
    let (status, body, took) = poll_until(&b.http, still_pending_url, within, |status, _| {
        status == reqwest::StatusCode::UNAUTHORIZED
    })
    .await;
    assert_eq!(
        status,
        reqwest::StatusCode::UNAUTHORIZED,
        "B still answered the revoked token after {took:?}: {body}"
    );
    b.stop().await;
    a.stop().await;
}
