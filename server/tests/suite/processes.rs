//! Two `anteroom serve` processes on one PostgreSQL, with one-second schedules: 200 overdue questions give
//! 200 expiries and 200 expiry webhooks — not 400 — and every creation webhook is delivered once.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration as StdDuration,
};

use anteroom_domain::{
    clock::{Clock, ManualClock, SystemClock},
    ids::{RequestId, RequestKey, SessionId},
    round::{ElicitationRequest, NewRound, OperationKind, RoundStatus},
    session::NewSession,
    webhook::WebhookEndpoint,
};
use anteroom_store::{
    AgentSessionStore, PostgresStore, RoundStore, Store, StoreOptions,
    testing::{TestSchema, postgres_url},
};
use axum::{Router, http::HeaderMap, routing::post};
use chrono::Duration;
use serde_json::json;
use tokio::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_anteroom");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(anteroom_postgres_tests),
    ignore = "set ANTEROOM_TEST_POSTGRES_URL to run the PostgreSQL tests"
)]
async fn two_processes_expire_and_announce_each_round_once() {
    let Some(url) = postgres_url() else {
        panic!("built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too");
    };
    // The receiver counts events by kind.
    let seen: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap| {
            let log = log.clone();
            async move {
                let event = headers
                    .get("x-anteroom-event")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("?")
                    .to_owned();
                *log.lock().expect("lock").entry(event).or_default() += 1;
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind receiver");
    let hook = format!("http://{}/hook", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    // 200 questions whose deadlines passed a minute ago: created by a store whose clock is two minutes behind.
    let schema = TestSchema::create(&url).await.expect("schema");
    let two_minutes_ago = SystemClock.now() - Duration::minutes(2);
    let past = ManualClock::new(two_minutes_ago);
    let store = PostgresStore::from_pool(
        schema.pool.clone(),
        StoreOptions {
            clock: Arc::new(past),
            webhooks: vec![WebhookEndpoint::parse(&hook).expect("endpoint")],
            ..StoreOptions::default()
        },
    );
    store.migrate().await.expect("migrate");
    let session = SessionId::parse("many").expect("id");
    store
        .register_session(NewSession {
            id: session.clone(),
            title: None,
            agent: None,
        })
        .await
        .expect("session");
    for i in 0..200 {
        store
            .create_round(NewRound {
                session_id: session.clone(),
                request_id: Some(RequestId::parse(format!("p{i}")).expect("id")),
                logical_operation_id: format!("op{i}"),
                server: None,
                operation_kind: OperationKind::Tool,
                operation_name: "deploy".into(),
                requests: BTreeMap::from([(
                    RequestKey::parse("q").expect("key"),
                    ElicitationRequest::Form {
                        message: "Proceed?".into(),
                        requested_schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
                        meta: None,
                    },
                )]),
                request_state: None,
                round_index: 0,
                round_limit: 1,
                // The shortest deadline there is: one minute after creation, so a minute ago in real time.
                deadline: Some(two_minutes_ago + Duration::minutes(1)),
                fingerprint: None,
                asked_through: Default::default(),
            })
            .await
            .expect("create round");
    }

    let database_url = format!(
        "{url}{}options=-c%20search_path%3D{}",
        if url.contains('?') { "&" } else { "?" },
        schema.name()
    );
    let channel = format!("anteroom_test_{}", uuid::Uuid::now_v7().simple());
    let mut processes = Vec::new();
    for _ in 0..2 {
        let port = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("port")
            .local_addr()
            .expect("addr")
            .port();
        processes.push(
            Command::new(BINARY)
                .arg("serve")
                .env("DATABASE_URL", &database_url)
                .env("ANTEROOM_ADDR", format!("127.0.0.1:{port}"))
                .env("ANTEROOM_WEBHOOKS", &hook)
                .env("ANTEROOM_EVENT_CHANNEL", &channel)
                .env("ANTEROOM_EXPIRE_SCHEDULE", "* * * * * *")
                .env("ANTEROOM_WEBHOOK_SCHEDULE", "* * * * * *")
                .env("ANTEROOM_DEVELOPMENT", "true")
                .env("RUST_LOG", "warn")
                .kill_on_drop(true)
                .spawn()
                .expect("start anteroom serve"),
        );
    }

    let done = |seen: &BTreeMap<String, usize>| {
        seen.get("question.expired") == Some(&200) && seen.get("question.created") == Some(&200)
    };
    for _ in 0..60 {
        if done(&seen.lock().expect("lock")) {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(500)).await;
    }
    // A few more ticks of both processes: nothing may arrive twice.
    tokio::time::sleep(StdDuration::from_secs(3)).await;
    for mut process in processes {
        let _ = process.kill().await;
    }
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.get("question.expired"), Some(&200), "{seen:?}");
    assert_eq!(seen.get("question.created"), Some(&200), "{seen:?}");
    let rounds = store.list_rounds(&session).await.expect("rounds");
    assert_eq!(
        rounds
            .iter()
            .filter(|r| r.status == RoundStatus::Failed)
            .count(),
        200
    );
    schema.drop_schema().await.expect("drop schema");
}
