//! Web Push against a local push service that does what a real one checks: the VAPID JWT verifies under the
//! key the instance publishes and names the service's origin, and the body decrypts (RFC 8291 `aes128gcm`)
//! with the browser's private key — to the question's notification, whose button answers it once as the
//! person ("rita via push"), and then to the message that closes it. A browser the service says is gone is
//! forgotten.

use std::sync::{Arc, Mutex};

use anteroom_domain::{access::Role, clock::Clock, ids::RequestId, reach::PushSubscription};
use anteroom_reach::outbox;
use anteroom_server::people::add_user;
use anteroom_testkit::{self as support, on_both_backends};
use axum::{Router, body::Bytes, extract::Path, http::HeaderMap, http::StatusCode, routing::post};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::Duration;
use p256::ecdsa::{Signature, VerifyingKey, signature::Verifier};
use serde_json::{Value, json};
use support::{
    Backend, Settings, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

/// What the push service received: (browser, authorization, content-encoding, ttl, body).
type Received = Arc<Mutex<Vec<(String, String, String, String, Vec<u8>)>>>;

/// A push service on loopback: `/push/gone` answers 410, every other browser 201.
async fn push_service() -> (String, Received) {
    let received: Received = Arc::default();
    let log = received.clone();
    let app = Router::new().route(
        "/push/{browser}",
        post(
            move |Path(browser): Path<String>, headers: HeaderMap, body: Bytes| {
                let log = log.clone();
                async move {
                    let header = |name: &str| {
                        headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_owned()
                    };
                    log.lock().expect("lock").push((
                        browser.clone(),
                        header("authorization"),
                        header("content-encoding"),
                        header("ttl"),
                        body.to_vec(),
                    ));
                    if browser == "gone" {
                        StatusCode::GONE
                    } else {
                        StatusCode::CREATED
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, received)
}

/// A browser's keys: its P-256 key pair and 16-byte auth secret.
struct BrowserKeys {
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl BrowserKeys {
    fn new() -> Self {
        Self {
            secret: p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng),
            auth: *uuid::Uuid::new_v4().as_bytes(),
        }
    }

    fn subscription(
        &self,
        id: &str,
        user_id: &str,
        endpoint: String,
        server: &TestServer,
    ) -> PushSubscription {
        PushSubscription {
            id: id.to_owned(),
            user_id: user_id.to_owned(),
            endpoint,
            p256dh: URL_SAFE_NO_PAD.encode(self.secret.public_key().to_sec1_bytes()),
            auth: URL_SAFE_NO_PAD.encode(self.auth),
            device: "Chromium on Linux".to_owned(),
            created_at: server.clock.now(),
        }
    }

    fn decrypt(&self, body: &[u8]) -> Value {
        let plain = web_push_native::decrypt(
            body.to_vec(),
            &self.secret,
            &web_push_native::Auth::clone_from_slice(&self.auth),
        )
        .expect("the body decrypts with the browser's key");
        serde_json::from_slice(&plain).expect("JSON")
    }
}

/// Checks the `vapid t=…, k=…` header as a push service does; returns the JWT's claims.
fn verify_vapid(authorization: &str, public_key: &str) -> Value {
    let (token, key) = authorization
        .strip_prefix("vapid t=")
        .and_then(|rest| rest.split_once(", k="))
        .expect("vapid t=…, k=…");
    assert_eq!(
        key, public_key,
        "signed with the key the instance publishes"
    );
    let key =
        VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(key).expect("b64")).expect("point");
    let (signed, signature) = token.rsplit_once('.').expect("a JWT");
    let signature =
        Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).expect("b64")).expect("r||s");
    key.verify(signed.as_bytes(), &signature)
        .expect("the JWT verifies");
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(signed.split('.').next().expect("header"))
            .expect("b64"),
    )
    .expect("json");
    assert_eq!(header["alg"], "ES256");
    serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(signed.split('.').nth(1).expect("claims"))
            .expect("b64"),
    )
    .expect("json")
}

async fn a_question_is_pushed_answered_from_its_button_and_closed(db: Backend) {
    let (service, received) = push_service().await;
    // Mail on too: each channel's fan-out is its own outbox row (they once shared one key, and mail's won).
    let sink = anteroom_testkit::smtp::SmtpSink::start().await;
    let settings = Settings {
        development: true,
        mail: Some(anteroom_server::MailConfig {
            smtp_url: sink.url.clone(),
            from: "Anteroom <anteroom@example.com>".to_owned(),
        }),
        ..Settings::default()
    };
    let Some(server) = TestServer::start_with(db, settings).await else {
        return;
    };
    let rita = add_user(
        server.store.as_ref(),
        "rita",
        "correct horse battery",
        Role::Responder,
    )
    .await
    .expect("rita");
    let vic = add_user(
        server.store.as_ref(),
        "vic",
        "correct horse battery",
        Role::Viewer,
    )
    .await
    .expect("vic");
    let phone = BrowserKeys::new();
    let gone = BrowserKeys::new();
    let viewer = BrowserKeys::new();
    for subscription in [
        phone.subscription(
            "b-phone",
            &rita.id,
            format!("{service}/push/phone"),
            &server,
        ),
        gone.subscription("b-gone", &rita.id, format!("{service}/push/gone"), &server),
        viewer.subscription("b-vic", &vic.id, format!("{service}/push/vic"), &server),
    ] {
        server
            .store
            .save_push_subscription(&subscription)
            .await
            .expect("subscribe");
    }
    let public_key = server
        .get_json("/api/v1/push/key", &server.viewer_key)
        .await["public_key"]
        .as_str()
        .expect("key")
        .to_owned();

    let env = server.session("s-push").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s-push"));
    let expires = support::start_time() + Duration::hours(1);
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    client
        .create(
            "req-push",
            &client.body(
                "req-push",
                "Deploy to production?\nDetails follow.",
                schema,
                "deploy",
                &expires.to_rfc3339(),
            ),
        )
        .await
        .expect("create");
    outbox::run(server.state.clone()).await;

    let pushes = received.lock().expect("lock").clone();
    let browsers: Vec<&str> = pushes
        .iter()
        .map(|(browser, ..)| browser.as_str())
        .collect();
    assert_eq!(
        browsers.len(),
        2,
        "rita's two browsers, never the viewer's: {browsers:?}"
    );
    assert!(!browsers.contains(&"vic"));
    let (_, authorization, encoding, ttl, body) = pushes
        .iter()
        .find(|(browser, ..)| browser == "phone")
        .expect("phone")
        .clone();
    assert_eq!(encoding, "aes128gcm");
    assert!(ttl.parse::<i64>().expect("ttl") > 0);
    let claims = verify_vapid(&authorization, &public_key);
    assert_eq!(claims["aud"], service);
    assert!(claims["exp"].as_i64().expect("exp") > server.clock.now().timestamp());
    let shown = phone.decrypt(&body);
    let round = server
        .store
        .get_round_by_request_id(&RequestId::parse("req-push").expect("id"))
        .await
        .expect("round");
    assert_eq!(shown["kind"], "question");
    assert_eq!(shown["tag"], round.round_id.to_string());
    assert_eq!(shown["body"], "Deploy to production?");
    assert_eq!(shown["url"], "/sessions/s-push");
    let titles: Vec<&str> = shown["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|a| a["title"].as_str())
        .collect();
    assert_eq!(titles, ["Yes", "No"]);
    assert_eq!(
        server
            .store
            .push_subscription("b-gone")
            .await
            .expect("read"),
        None,
        "a gone browser is forgotten"
    );

    let yes = shown["actions"][0]["token"].as_str().expect("token");
    let answered = server
        .http
        .post(server.url(&format!("/answer/{yes}")))
        .header("accept", "application/json")
        .send()
        .await
        .expect("POST");
    assert_eq!(answered.status(), StatusCode::OK);
    assert_eq!(
        answered.json::<Value>().await.expect("json")["code"],
        "answered"
    );
    assert_eq!(
        client.poll("req-push").await.expect("poll"),
        Outcome::Accept(Some(json!({"ok": true})))
    );
    let round = server.store.get_round(round.round_id).await.expect("round");
    assert_eq!(round.responded_by.as_deref(), Some("rita via push"));
    let no = shown["actions"][1]["token"].as_str().expect("token");
    let late = server
        .http
        .post(server.url(&format!("/answer/{no}")))
        .header("accept", "application/json")
        .send()
        .await
        .expect("POST");
    assert_eq!(
        late.status(),
        StatusCode::CONFLICT,
        "answered elsewhere: the other button records nothing"
    );

    received.lock().expect("lock").clear();
    outbox::run(server.state.clone()).await;
    let closes = received.lock().expect("lock").clone();
    let (_, _, _, _, body) = closes
        .iter()
        .find(|(browser, ..)| browser == "phone")
        .expect("a second push");
    assert_eq!(
        phone.decrypt(body),
        json!({"kind": "close", "tag": round.round_id.to_string()})
    );
    server.stop().await;
}

async fn only_signed_in_people_turn_push_on(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let response = server
        .http
        .post(server.url("/api/v1/push/subscriptions"))
        .bearer_auth(&server.responder_key)
        .json(
            &json!({"endpoint": "https://push.example/x", "keys": {"p256dh": "BKey", "auth": "a"}}),
        )
        .send()
        .await
        .expect("POST");
    assert_eq!(
        response.status(),
        StatusCode::FORBIDDEN,
        "an API key has no browser"
    );
    let anonymous = server
        .http
        .get(server.url("/api/v1/push/subscriptions"))
        .send()
        .await
        .expect("GET");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    server.stop().await;
}

/// A server with rita (push on in one browser, at `{service}/push/phone`) and her session `s-{name}`'s
/// producer client.
async fn one_phone(
    db: Backend,
    service: &str,
    name: &str,
) -> Option<(TestServer, BrowserKeys, String, PulsemcpClient)> {
    let server = TestServer::start(db).await?;
    let rita = add_user(
        server.store.as_ref(),
        "rita",
        "correct horse battery",
        Role::Responder,
    )
    .await
    .expect("rita");
    let phone = BrowserKeys::new();
    server
        .store
        .save_push_subscription(&phone.subscription(
            "b-phone",
            &rita.id,
            format!("{service}/push/phone"),
            &server,
        ))
        .await
        .expect("subscribe");
    let session = format!("s-{name}");
    let env = server.session(&session).await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&session));
    Some((server, phone, rita.id, client))
}

async fn ask(client: &PulsemcpClient, id: &str, message: &str) {
    let expires = support::start_time() + Duration::hours(1);
    client
        .create(
            id,
            &client.body(
                id,
                message,
                json!({"type": "object"}),
                "deploy",
                &expires.to_rfc3339(),
            ),
        )
        .await
        .expect("create");
}

async fn a_burst_of_questions_is_one_digest_notification(db: Backend) {
    let (service, received) = push_service().await;
    let Some((server, phone, rita, client)) = one_phone(db, &service, "burst").await else {
        return;
    };
    assert!(server.store.set_digest_after(&rita, 1).await.expect("set"));
    for n in 1..=3 {
        ask(&client, &format!("req-burst-{n}"), &format!("Burst {n}?")).await;
        outbox::run(server.state.clone()).await;
    }
    let shown: Vec<Value> = received
        .lock()
        .expect("lock")
        .iter()
        .map(|(.., body)| phone.decrypt(body))
        .collect();
    assert_eq!(shown.len(), 1, "one a minute one by one: {shown:?}");
    assert_eq!(shown[0]["body"], "Burst 1?");
    received.lock().expect("lock").clear();
    server.clock.advance(Duration::seconds(60));
    outbox::run(server.state.clone()).await;
    let digests: Vec<Value> = received
        .lock()
        .expect("lock")
        .iter()
        .map(|(.., body)| phone.decrypt(body))
        .collect();
    assert_eq!(digests.len(), 1, "{digests:?}");
    let digest = &digests[0];
    assert_eq!(digest["tag"], "anteroom-digest");
    assert_eq!(digest["title"], "2 questions wait for you in Anteroom");
    assert_eq!(digest["body"], "Burst 2? · Burst 3?");
    assert_eq!(digest["url"], "/");

    // A person whose digest is off is sent every question of a burst alone, as the bench's pushes are.
    received.lock().expect("lock").clear();
    assert!(server.store.set_digest_after(&rita, 0).await.expect("set"));
    for n in 1..=7 {
        ask(&client, &format!("req-alone-{n}"), &format!("Alone {n}?")).await;
        outbox::run(server.state.clone()).await;
    }
    let bodies: Vec<Value> = received
        .lock()
        .expect("lock")
        .iter()
        .map(|(.., body)| phone.decrypt(body)["body"].clone())
        .collect();
    assert_eq!(
        bodies,
        (1..=7)
            .map(|n| json!(format!("Alone {n}?")))
            .collect::<Vec<_>>()
    );
    server.stop().await;
}

/// Whether any browser has push on is remembered for a second; a create after that reads it again. That read
/// once decoded PostgreSQL's INT4 `1` as an i64 and failed every create with a 503 while anyone had push on.
async fn a_create_reads_again_whether_anyone_has_push_on(db: Backend) {
    let (service, received) = push_service().await;
    let Some((server, phone, _, client)) = one_phone(db, &service, "stale").await else {
        return;
    };
    // The fact goes stale by wall time (domain::clock has no say in it): wait it out.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    ask(&client, "req-stale", "After a second?").await;
    outbox::run(server.state.clone()).await;
    let shown: Vec<Value> = received
        .lock()
        .expect("lock")
        .iter()
        .map(|(.., body)| phone.decrypt(body)["body"].clone())
        .collect();
    assert_eq!(shown, vec![json!("After a second?")]);
    server.stop().await;
}

/// RFC 8291's decrypt as written by others: PyPI `http-ece` (aes128gcm), given only the browser's private key
/// and auth secret, reads what Anteroom encrypted — a check that does not share a line of code with the sender.
async fn a_push_decrypts_with_an_independent_implementation(db: Backend) {
    let (service, received) = push_service().await;
    let Some((server, phone, _, client)) = one_phone(db, &service, "ece").await else {
        return;
    };
    ask(&client, "req-ece", "Decrypt me <b>&amp;</b> 💥?").await;
    outbox::run(server.state.clone()).await;
    let (.., body) = received
        .lock()
        .expect("lock")
        .first()
        .cloned()
        .expect("a push");
    let folder = tempfile::tempdir().expect("temp dir");
    let file = folder.path().join("body");
    std::fs::write(&file, &body).expect("write");
    let python = std::env::var("ANTEROOM_TEST_MCP_PYTHON").expect("ANTEROOM_TEST_MCP_PYTHON");
    let script = "import base64, sys, http_ece\n\
        from cryptography.hazmat.primitives.asymmetric import ec\n\
        b64 = lambda s: base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))\n\
        key = ec.derive_private_key(int.from_bytes(b64(sys.argv[2]), 'big'), ec.SECP256R1())\n\
        plain = http_ece.decrypt(open(sys.argv[1], 'rb').read(), private_key=key, auth_secret=b64(sys.argv[3]), version='aes128gcm')\n\
        sys.stdout.write(plain.decode('utf-8'))\n";
    let output = tokio::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(&file)
        .arg(URL_SAFE_NO_PAD.encode(phone.secret.to_bytes()))
        .arg(URL_SAFE_NO_PAD.encode(phone.auth))
        .output()
        .await
        .expect("run python");
    assert!(
        output.status.success(),
        "http-ece decrypts: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let independent: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(independent, phone.decrypt(&body), "both decrypts agree");
    assert_eq!(independent["body"], "Decrypt me <b>&amp;</b> 💥?");
    server.stop().await;
}

on_both_backends!(
    a_question_is_pushed_answered_from_its_button_and_closed,
    only_signed_in_people_turn_push_on,
    a_burst_of_questions_is_one_digest_notification,
    a_create_reads_again_whether_anyone_has_push_on
);

/// Needs the Python test packages `cargo xtask test` installs (reported as ignored without them).
mod independent {
    use super::*;

    support::on_both_backends_with_mcp_sdks!(a_push_decrypts_with_an_independent_implementation);
}
