//! Webhooks against a local receiver: signed, retried after failures with backoff, delivered exactly once per
//! event even when the receiver is slow and two instances tick at once; and on PostgreSQL, 200 due questions on
//! two instances give 200 expiries and 200 expiry webhooks, not 400.

use anteroom_testkit::{self as support, on_both_backends};

use std::{
    sync::{Arc, Mutex, OnceLock},
    time::Duration as StdDuration,
};

use std::collections::BTreeMap;

use anteroom_domain::{
    clock::ManualClock,
    ids::{RequestId, RequestKey, SessionId},
    round::{ElicitationRequest, NewRound, OperationKind},
    webhook::WebhookEndpoint,
};
use anteroom_reach::outbox;
use anteroom_server::jobs::expire;
use axum::{Router, body::Bytes, http::HeaderMap, http::StatusCode, routing::post};
use chrono::Duration;
use serde_json::{Value, json};
use support::{Backend, Settings, TestServer, pulsemcp::PulsemcpClient};

const SECRET: &str = "webhook-test-secret";

/// What the receiver saw: (event header, signature header, body).
type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

/// A receiver that fails the first `failures` calls with 500, and takes `delay` to answer each.
async fn receiver(failures: usize, delay: StdDuration) -> (String, Seen) {
    receiver_calling(failures, delay, Arc::new(|| {})).await
}

/// [`receiver`], running `on_call` as each call arrives.
async fn receiver_calling(
    failures: usize,
    delay: StdDuration,
    on_call: Arc<dyn Fn() + Send + Sync>,
) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let log = log.clone();
            let on_call = on_call.clone();
            async move {
                on_call();
                tokio::time::sleep(delay).await;
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned()
                };
                let mut calls = log.lock().expect("lock");
                calls.push((
                    header("x-anteroom-event"),
                    header("x-anteroom-signature"),
                    String::from_utf8_lossy(&body).into_owned(),
                ));
                if calls.len() <= failures {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::OK
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind receiver");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, seen)
}

fn options(url: &str) -> Settings {
    Settings {
        webhooks: vec![WebhookEndpoint::parse(url).expect("endpoint")],
        webhook_secret: Some(SECRET.to_owned()),
        ..Settings::default()
    }
}

async fn ask(server: &TestServer, session: &str, id: &str, expires: chrono::DateTime<chrono::Utc>) {
    let env = server.session(session).await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(session));
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    client
        .create(
            id,
            &client.body(id, "Proceed?", schema, "deploy", &expires.to_rfc3339()),
        )
        .await
        .expect("create");
}

/// Attack: a receiver answering after 8 s got 51 POSTs for 24 deliveries, because one claim covered a whole
/// batch and ran out while the batch was still being sent, so an overlapping tick claimed it again. Here each
/// call moves the clock 8 s; ticks start while others are still sending.
async fn duplicate_webhooks_to_a_slow_receiver(db: Backend) {
    let clock: Arc<OnceLock<ManualClock>> = Arc::default();
    let slot = clock.clone();
    let (url, seen) = receiver_calling(
        0,
        StdDuration::from_millis(40),
        Arc::new(move || {
            if let Some(clock) = slot.get() {
                clock.advance(Duration::seconds(8));
            }
        }),
    )
    .await;
    let Some(server) = TestServer::start_with(db, options(&url)).await else {
        return;
    };
    let deliveries = 12;
    for n in 0..deliveries {
        ask(
            &server,
            &format!("slow-{n}"),
            &format!("req-slow-{n}"),
            support::start_time() + Duration::hours(1),
        )
        .await;
    }
    let _ = clock.set(server.clock.clone());
    let mut ticks = Vec::new();
    for _ in 0..4 {
        ticks.push(tokio::spawn(outbox::run(server.state.clone())));
        tokio::time::sleep(StdDuration::from_millis(150)).await;
    }
    let mut delivered = 0;
    for tick in ticks {
        delivered += tick.await.expect("tick");
    }
    delivered += outbox::run(server.state.clone()).await;
    let calls = seen.lock().expect("lock").clone();
    let bodies: std::collections::BTreeSet<&String> =
        calls.iter().map(|(_, _, body)| body).collect();
    assert_eq!(delivered, deliveries);
    assert_eq!(bodies.len(), deliveries, "every delivery arrived");
    assert_eq!(calls.len(), deliveries, "and none twice");
    server.stop().await;
}

async fn signed_delivery_retried_after_500s(db: Backend) {
    let (url, seen) = receiver(2, StdDuration::ZERO).await;
    let Some(server) = TestServer::start_with(db, options(&url)).await else {
        return;
    };
    ask(
        &server,
        "s1",
        "req-hook",
        support::start_time() + Duration::hours(1),
    )
    .await;

    assert_eq!(
        outbox::run(server.state.clone()).await,
        0,
        "first attempt: 500"
    );
    assert_eq!(
        outbox::run(server.state.clone()).await,
        0,
        "not retried before the backoff"
    );
    server.clock.advance(Duration::seconds(10));
    assert_eq!(
        outbox::run(server.state.clone()).await,
        0,
        "second attempt: 500"
    );
    server.clock.advance(Duration::seconds(20));
    assert_eq!(
        outbox::run(server.state.clone()).await,
        1,
        "third attempt delivered"
    );
    server.clock.advance(Duration::hours(2));
    assert_eq!(
        outbox::run(server.state.clone()).await,
        0,
        "nothing is sent twice"
    );

    let calls = seen.lock().expect("lock").clone();
    assert_eq!(calls.len(), 3);
    let (event, signature, body) = &calls[2];
    assert_eq!(event, "question.created");
    assert_eq!(
        signature,
        &outbox::signature(SECRET, body.as_bytes()),
        "the signature verifies"
    );
    let payload: Value = serde_json::from_str(body).expect("JSON body");
    assert_eq!(payload["data"]["request_id"], "req-hook");

    let log: Value = server
        .get_json("/api/v1/webhooks/deliveries", &server.admin_key)
        .await;
    assert_eq!(log["deliveries"][0]["status"], "delivered");
    assert_eq!(log["deliveries"][0]["attempts"], 3);
    let viewer = server
        .http
        .get(server.url("/api/v1/webhooks/deliveries"))
        .bearer_auth(&server.viewer_key)
        .send()
        .await
        .expect("GET");
    assert_eq!(viewer.status(), 403);
    server.stop().await;
}

async fn slow_receiver_gets_each_event_once_with_two_ticks_at_once(db: Backend) {
    let (url, seen) = receiver(0, StdDuration::from_millis(400)).await;
    let Some(server) = TestServer::start_with(db, options(&url)).await else {
        return;
    };
    ask(
        &server,
        "s1",
        "req-slow",
        support::start_time() + Duration::hours(1),
    )
    .await;
    let (a, b) = tokio::join!(
        outbox::run(server.state.clone()),
        outbox::run(server.state.clone())
    );
    assert_eq!(a + b, 1);
    assert_eq!(outbox::run(server.state.clone()).await, 0);
    assert_eq!(seen.lock().expect("lock").len(), 1, "exactly one delivery");
    server.stop().await;
}

on_both_backends!(
    signed_delivery_retried_after_500s,
    slow_receiver_gets_each_event_once_with_two_ticks_at_once,
    duplicate_webhooks_to_a_slow_receiver
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(anteroom_postgres_tests),
    ignore = "set ANTEROOM_TEST_POSTGRES_URL to run the PostgreSQL tests"
)]
async fn two_instances_give_one_expiry_and_one_webhook_per_round() {
    let (url, seen) = receiver(0, StdDuration::ZERO).await;
    let Some((a, b)) = TestServer::postgres_pair_with(options(&url)).await else {
        panic!("built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too");
    };
    a.session("many").await;
    // Straight through the store: the API's per-session create limit is not what this test is about.
    for i in 0..200 {
        let key = RequestKey::parse(format!("r{i}")).expect("key");
        let request = ElicitationRequest::Form {
            message: "Proceed?".into(),
            requested_schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
            meta: None,
        };
        a.store
            .create_round(NewRound {
                session_id: SessionId::parse("many").expect("id"),
                request_id: Some(RequestId::parse(format!("r{i}")).expect("id")),
                logical_operation_id: format!("op{i}"),
                server: None,
                operation_kind: OperationKind::Tool,
                operation_name: "deploy".into(),
                requests: BTreeMap::from([(key, request)]),
                request_state: None,
                round_index: 0,
                round_limit: 1,
                deadline: Some(support::start_time() + Duration::minutes(5)),
                fingerprint: None,
                asked_through: Default::default(),
            })
            .await
            .expect("create round");
    }
    a.clock.advance(Duration::minutes(6));
    let (expired_a, expired_b) =
        tokio::join!(expire::run(a.state.clone()), expire::run(b.state.clone()));
    assert_eq!(expired_a + expired_b, 200, "200 expiries, not 400");

    let mut delivered = 0;
    for _ in 0..20 {
        let (x, y) = tokio::join!(outbox::run(a.state.clone()), outbox::run(b.state.clone()));
        delivered += x + y;
        if x + y == 0 {
            break;
        }
    }
    let calls = seen.lock().expect("lock").clone();
    let expiries = calls
        .iter()
        .filter(|(event, _, _)| event == "question.expired")
        .count();
    assert_eq!(expiries, 200, "200 expiry webhooks, not 400");
    assert_eq!(
        calls
            .iter()
            .filter(|(event, _, _)| event == "question.created")
            .count(),
        200
    );
    assert_eq!(delivered, 400);
    b.stop().await;
    a.stop().await;
}
