//! The scheduled jobs, each tick driven directly with the server's manual clock (no sleeping): due questions
//! expire and others do not, vanished workers' rounds fail, and the gate probe opens one incident per outage.

use anteroom_testkit::{self as support, on_both_backends};

use anteroom_domain::gate::GateChange;
use std::net::SocketAddr;

use anteroom_server::{
    instance::{Database, Instance, Settings},
    jobs::{expire, gate_probe, recover},
};
use chrono::Duration;
use serde_json::{Value, json};
use support::{Backend, TestServer, pulsemcp::PulsemcpClient};

fn schema() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}})
}

async fn expire_job_expires_due_questions_only(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s1"));
    let soon = (support::start_time() + Duration::minutes(10)).to_rfc3339();
    let later = (support::start_time() + Duration::hours(2)).to_rfc3339();
    client
        .create("due", &client.body("due", "?", schema(), "t", &soon))
        .await
        .expect("create");
    client
        .create("later", &client.body("later", "?", schema(), "t", &later))
        .await
        .expect("create");
    assert_eq!(
        expire::run(server.state.clone()).await,
        0,
        "nothing is due yet"
    );
    server.clock.advance(Duration::minutes(11));
    assert_eq!(
        expire::run(server.state.clone()).await,
        1,
        "only the due question expires"
    );
    assert_eq!(
        expire::run(server.state.clone()).await,
        0,
        "one effect per round"
    );
    let rounds: Value = server
        .get_json("/api/v1/sessions/s1/rounds", &server.viewer_key)
        .await;
    let statuses: Vec<(&str, &str)> = rounds["rounds"]
        .as_array()
        .expect("rounds")
        .iter()
        .map(|r| {
            (
                r["request_id"].as_str().unwrap_or(""),
                r["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        statuses.contains(&("due", "failed")) && statuses.contains(&("later", "pending")),
        "{statuses:?}"
    );
    server.stop().await;
}

async fn recover_job_fails_rounds_whose_worker_vanished(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let base = format!("{}/api/v1/s/{}", server.base, env.token);
    let round: Value = server
        .http
        .post(format!("{base}/rounds"))
        .json(&json!({
            "logical_operation_id": "op", "operation_kind": "tool", "operation_name": "ship",
            "requests": {"a": {"mode": "form", "message": "?", "requestedSchema": schema()}}
        }))
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON");
    let id = round["round_id"].as_str().expect("round id").to_owned();
    let lease: Value = server
        .http
        .post(format!("{base}/rounds/{id}/claim"))
        .json(&json!({"owner_id": "w1", "lease_seconds": 30}))
        .send()
        .await
        .expect("claim")
        .json()
        .await
        .expect("JSON");
    let token = lease["lease_token"].as_str().expect("token").to_owned();
    server.http.post(server.url(&format!("/api/v1/rounds/{id}/responses"))).bearer_auth(&server.responder_key)
        .json(&json!({"responses": {"a": {"action": "accept", "content": {"ok": true}}}, "idempotency_key": "k"})).send().await.expect("answer");
    server
        .http
        .post(format!("{base}/rounds/{id}/start-delivery"))
        .json(&json!({"owner_id": "w1", "lease_token": token}))
        .send()
        .await
        .expect("start");
    assert_eq!(
        recover::run(server.state.clone()).await,
        0,
        "a live lease is left alone"
    );
    server.clock.advance(Duration::seconds(31));
    assert_eq!(recover::run(server.state.clone()).await, 1);
    let read: Value = server
        .http
        .get(format!("{base}/rounds/{id}"))
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    assert_eq!(read["failure"]["code"], "recovery_unavailable");
    let session: Value = server
        .get_json("/api/v1/sessions/s1", &server.viewer_key)
        .await;
    assert_eq!(session["status"], "failed");
    server.stop().await;
}

on_both_backends!(
    expire_job_expires_due_questions_only,
    recover_job_fails_rounds_whose_worker_vanished
);

/// A probe target that can be taken down and brought back on the same port.
async fn serve_on(addr: std::net::SocketAddr) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .expect("bind the probe target");
    tokio::spawn(async move {
        let _ = axum::serve(listener, axum::Router::new()).await;
    })
}

#[tokio::test]
async fn gate_probe_healthy_broken_broken_healthy_opens_exactly_one_incident() {
    let probe_target = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = probe_target.local_addr().expect("address");
    drop(probe_target);
    let dir = tempfile::tempdir().expect("temporary directory");
    // An instance whose public URL is the probe target; it is built, never served.
    let instance = Instance::build(Settings {
        database: Database::Url(format!(
            "sqlite://{}",
            dir.path().join("gate.sqlite3").display()
        )),
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        public_url: Some(format!("http://{addr}")),
        schedules: None,
        ..Settings::default()
    })
    .await
    .expect("instance");
    let state = instance.state.clone();

    let up = serve_on(addr).await;
    let mut changes = vec![gate_probe::run(state.clone()).await];
    up.abort();
    let _ = up.await;
    changes.push(gate_probe::run(state.clone()).await);
    let gate = state.store.gate_state().await.expect("gate");
    assert!(!gate.healthy);
    assert!(gate.prompt_line.contains("BROKEN"));
    changes.push(gate_probe::run(state.clone()).await);
    let back = serve_on(addr).await;
    changes.push(gate_probe::run(state.clone()).await);
    back.abort();

    assert_eq!(
        changes,
        [
            Some(GateChange::StillHealthy),
            Some(GateChange::IncidentOpened),
            Some(GateChange::StillBroken),
            Some(GateChange::IncidentClosed),
        ]
    );
    assert_eq!(
        changes
            .iter()
            .filter(|c| **c == Some(GateChange::IncidentOpened))
            .count(),
        1
    );
    assert!(state.store.gate_state().await.expect("gate").healthy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(anteroom_postgres_tests),
    ignore = "set ANTEROOM_TEST_POSTGRES_URL to run the PostgreSQL tests"
)]
async fn an_outage_seen_by_two_instances_opens_one_incident() {
    let Some((a, b)) = TestServer::postgres_pair().await else {
        panic!("built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too");
    };
    // Both instances probe an address where nothing listens.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = closed.local_addr().expect("address");
    drop(closed);
    let broken = |server: &TestServer| {
        let mut config = (*server.state.config).clone();
        config.public_url = format!("http://{addr}");
        server.state.with_config(config)
    };
    let (x, y) = tokio::join!(gate_probe::run(broken(&a)), gate_probe::run(broken(&b)));
    let changes = [x, y];
    assert_eq!(
        changes
            .iter()
            .filter(|c| **c == Some(GateChange::IncidentOpened))
            .count(),
        1,
        "{changes:?}"
    );
    assert_eq!(
        changes
            .iter()
            .filter(|c| **c == Some(GateChange::StillBroken))
            .count(),
        1,
        "{changes:?}"
    );
    let gate: Value = b.get_json("/api/v1/gate", &b.viewer_key).await;
    assert_eq!(
        gate["healthy"], false,
        "every instance reports the shared state"
    );
    b.stop().await;
    a.stop().await;
}
