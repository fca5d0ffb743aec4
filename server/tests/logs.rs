//! No secret reaches the log. Every line this test binary's server writes, at every level, is captured while a
//! full round trip runs — a producer asking and polling with its session token, a person signing in and
//! answering through the page, a worker driving a managed round with its lease, API keys on the management
//! API, a setup-link token in a query string — and then searched for each secret used.

#![allow(
    clippy::string_slice,
    reason = "a test that slices a string wrongly fails, as it should"
)]

use anteroom_testkit::{self as support, on_both_backends};

use std::{
    io::Write,
    sync::{Arc, Mutex, OnceLock},
};

use anteroom_domain::access::Role;
use reqwest::header;
use serde_json::{Value, json};
use support::{
    Backend, TestServer,
    browser::{PASSWORD, browser, input_value, page, person, sign_in},
    pulsemcp::{Outcome, PulsemcpClient},
};

/// Everything logged by this process, once the capture is installed.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        let bytes = self.0.lock().map(|bytes| bytes.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut bytes) = self.0.lock() {
            bytes.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the capture as this process's subscriber, at TRACE for every target (once per test binary).
fn capture() -> Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let writer = captured.clone();
            tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(
                    "trace,reqwest=off,hyper_util::client=off",
                ))
                .with_writer(move || writer.clone())
                .with_ansi(false)
                .init();
            captured
        })
        .clone()
}

async fn no_secret_used_in_a_full_round_trip_is_logged(db: Backend) {
    let log = capture();
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let before = log.text().len();
    let env = server.session("secrets").await;
    let mut secrets: Vec<(&str, String)> = vec![
        ("producer token", env.token.clone()),
        ("admin key", server.admin_key.clone()),
        ("responder key", server.responder_key.clone()),
        ("viewer key", server.viewer_key.clone()),
        ("password", PASSWORD.to_owned()),
    ];

    // A producer asks and polls through its session's URL.
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let expires = (support::start_time() + chrono::Duration::minutes(10)).to_rfc3339();
    let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}});
    let body = client.body("req-secret", "Which?", schema, "deploy", &expires);
    let id = client.create("req-secret", &body).await.expect("create");
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Pending);

    // A person signs in and answers through the page.
    person(&server, "rita", Role::Responder).await;
    let cookie = sign_in(&server, "rita").await;
    let (_, html) = page(&server, "/sessions/secrets", &cookie).await;
    let csrf = input_value(&html, "csrf");
    let answered = browser()
        .post(server.url("/sessions/secrets/answer"))
        .header(header::COOKIE, &cookie)
        .form(&[
            ("round", input_value(&html, "round").as_str()),
            ("csrf", csrf.as_str()),
            ("attempt", "a1"),
            ("action", "accept"),
            ("req-secret/env", "prod"),
        ])
        .send()
        .await
        .expect("POST answer");
    assert_eq!(answered.status(), 303);
    assert!(matches!(
        client.poll(&id).await.expect("poll"),
        Outcome::Accept(_)
    ));
    let cookie_value = cookie
        .split_once('=')
        .map(|(_, v)| v.to_owned())
        .expect("value");
    secrets.push(("cookie value", cookie_value));
    secrets.push(("csrf token", csrf));

    // A worker drives a managed round with its lease; an API key answers it.
    let base = format!("{}/api/v1/s/{}", server.base, env.token);
    let round: Value = server
        .http
        .post(format!("{base}/rounds"))
        .json(&json!({
            "logical_operation_id": "op-1", "operation_kind": "tool", "operation_name": "ship",
            "requests": {"q": {"mode": "form", "message": "Go?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}},
            "round_index": 0, "round_limit": 1
        }))
        .send()
        .await
        .expect("create round")
        .json()
        .await
        .expect("JSON");
    let round_id = round["round_id"].as_str().expect("round id").to_owned();
    let lease: Value = server
        .http
        .post(format!("{base}/rounds/{round_id}/claim"))
        .json(&json!({"owner_id": "w1", "lease_seconds": 60}))
        .send()
        .await
        .expect("claim")
        .json()
        .await
        .expect("JSON");
    let lease_token = lease["lease_token"]
        .as_str()
        .expect("lease token")
        .to_owned();
    let answered = server
        .http
        .post(server.url(&format!("/api/v1/rounds/{round_id}/responses")))
        .bearer_auth(&server.responder_key)
        .json(&json!({"responses": {"q": {"action": "decline"}}, "idempotency_key": "k1"}))
        .send()
        .await
        .expect("answer");
    assert_eq!(answered.status(), 200);
    for step in ["start-delivery", "delivered", "resolve"] {
        let reply = server
            .http
            .post(format!("{base}/rounds/{round_id}/{step}"))
            .json(&json!({"owner_id": "w1", "lease_token": lease_token}))
            .send()
            .await
            .expect(step);
        assert_eq!(reply.status(), 200, "{step}");
    }
    secrets.push(("lease token", lease_token));

    // Management calls with API keys, a rotated token, and a setup-link token in a query string.
    server.get_json("/api/v1/sessions", &server.admin_key).await;
    let rotated: Value = server
        .http
        .post(server.url("/api/v1/sessions/secrets/token"))
        .bearer_auth(&server.admin_key)
        .send()
        .await
        .expect("rotate")
        .json()
        .await
        .expect("JSON");
    secrets.push((
        "rotated token",
        rotated["producer_token"]
            .as_str()
            .expect("token")
            .to_owned(),
    ));
    let setup_token = "setup-link-token-that-must-not-be-logged";
    browser()
        .get(server.url(&format!("/setup?token={setup_token}")))
        .send()
        .await
        .expect("GET /setup");
    secrets.push(("setup link token", setup_token.to_owned()));
    // A token sent in the wrong place is still a secret.
    server
        .http
        .get(server.url(&format!(
            "/api/v1/s/{}/elicitations/unknown",
            server.admin_key
        )))
        .send()
        .await
        .expect("GET");
    server.stop().await;

    let text = log.text();
    let written = &text[before.min(text.len())..];
    assert!(
        written.contains(r#"route="/api/v1/s/{token}/elicitations/{request_id}""#),
        "request lines name their route template:\n{written}"
    );
    assert!(
        written.contains("/api/v1/s/ars_…/elicitations"),
        "and a redacted path"
    );
    for (what, secret) in &secrets {
        assert!(
            !written.contains(secret.as_str()),
            "the {what} appears in the log:\n{written}"
        );
    }
}

on_both_backends!(no_secret_used_in_a_full_round_trip_is_logged);
