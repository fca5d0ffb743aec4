//! The wrapper's Anteroom client against a real Anteroom over HTTP, on SQLite and PostgreSQL: a question it asks
//! reaches a person, and their answer comes back through the lease's steps; an unanswered one ends honestly.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use anteroom_domain::{
    ids::{OwnerId, RequestKey},
    round::{ElicitationRequest, FailureCode, OperationKind, ResponseAction, RoundStatus},
};
use anteroom_testkit::{Backend, TestServer, on_both_backends, start_time};
use anteroom_wrap::anteroom::{Anteroom, Ask, DeliveryStep};
use chrono::Duration;
use serde_json::json;

fn ask(deadline_seconds: i64) -> Ask {
    let request = ElicitationRequest::Form {
        message: "Which environment?".into(),
        requested_schema: json!({
            "type": "object",
            "properties": {"env": {"type": "string"}},
            "required": ["env"]
        }),
        meta: None,
    };
    Ask {
        logical_operation_id: "call-1".into(),
        server: Some("deployer".into()),
        operation_kind: OperationKind::Tool,
        operation_name: "deploy".into(),
        requests: BTreeMap::from([(RequestKey::parse("env").expect("key"), request)]),
        request_state: None,
        round_index: 0,
        round_limit: 1,
        deadline: Some(start_time() + Duration::seconds(deadline_seconds)),
    }
}

async fn client(server: &TestServer) -> Anteroom {
    let env = server.session("s1").await;
    Anteroom::new(
        &env.request_url,
        OwnerId::parse("wrap-test").expect("owner"),
    )
    .expect("capability URL")
}

async fn an_answer_comes_back_through_the_leases_steps(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let anteroom = client(&server).await;
    let round = anteroom.ask(&ask(600)).await.expect("asked");
    assert_eq!(round.status, RoundStatus::Pending);
    let lease = anteroom.claim(round.round_id, 60).await.expect("claimed");
    anteroom
        .renew(round.round_id, &lease, 60)
        .await
        .expect("renewed");

    let answer = server
        .respond(
            &server.responder_key,
            &round.round_id.to_string(),
            json!({"action_type": "accept", "content": {"env": "prod"}}),
        )
        .await;
    assert_eq!(answer.status(), 200);

    let answered = anteroom.wait(round.round_id).await.expect("waited");
    assert_eq!(answered.status, RoundStatus::ResponseValidated);
    let response = answered
        .responses
        .as_ref()
        .and_then(|responses| responses.values().next())
        .expect("one answer");
    assert_eq!(response.action, ResponseAction::Accept);
    assert_eq!(
        response
            .content
            .as_ref()
            .map(|content| content["env"].clone()),
        Some(json!("prod"))
    );

    for (step, status) in [
        (DeliveryStep::Start, RoundStatus::DeliveryStarted),
        (DeliveryStep::Delivered, RoundStatus::Delivered),
        (DeliveryStep::Resolve, RoundStatus::Resolved),
    ] {
        let moved = anteroom
            .step(round.round_id, &lease, step)
            .await
            .expect("step");
        assert_eq!(moved.status, status);
    }
    server.stop().await;
}

async fn an_unanswered_question_ends_expired_not_declined(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let anteroom = client(&server).await;
    let round = anteroom.ask(&ask(30)).await.expect("asked");
    let lease = anteroom.claim(round.round_id, 60).await.expect("claimed");
    server.clock.advance(Duration::seconds(31));
    let ended = anteroom.wait(round.round_id).await.expect("waited");
    assert_eq!(ended.status, RoundStatus::Failed);
    assert_eq!(
        ended.failure.map(|failure| failure.code),
        Some(FailureCode::Expired)
    );
    assert!(
        anteroom
            .step(round.round_id, &lease, DeliveryStep::Start)
            .await
            .is_err(),
        "an expired question cannot be delivered"
    );
    server.stop().await;
}

async fn a_wrong_token_is_refused_with_what_anteroom_said(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let anteroom = Anteroom::new(
        &server.url("/api/v1/s/ars_not_a_token/elicitations"),
        OwnerId::parse("wrap-test").expect("owner"),
    )
    .expect("shaped like a capability URL");
    let refused = anteroom.ask(&ask(600)).await.expect_err("refused");
    assert!(refused.to_string().contains("401"), "{refused}");
    server.stop().await;
}

/// A proxy in front of Anteroom that forwards every request, but loses the reply the first time a step ending in
/// `lost_step` is posted: the step reaches Anteroom and commits, and the reply is cut off after its status line,
/// as when a server is killed right after committing. Returns the proxy's base and how many such posts it saw.
async fn lossy_proxy(target: String, lost_step: &'static str) -> (String, Arc<AtomicUsize>) {
    use axum::{body::Body, extract::Request, response::Response};
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    let client = reqwest::Client::new();
    let forward = move |request: Request| {
        let (client, target, counted) = (client.clone(), target.clone(), counted.clone());
        async move {
            let (parts, body) = request.into_parts();
            let bytes = axum::body::to_bytes(body, 1 << 20)
                .await
                .unwrap_or_default();
            let path = parts
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_owned();
            let lose = parts.method == "POST"
                && parts.uri.path().ends_with(lost_step)
                && counted.fetch_add(1, Ordering::SeqCst) == 0;
            let reply = client
                .request(parts.method, format!("{target}{path}"))
                .header("content-type", "application/json")
                .body(bytes)
                .send()
                .await
                .expect("Anteroom behind the proxy");
            let status = reply.status();
            let body = if lose {
                // Committed upstream; the reply breaks off.
                Body::from_stream(futures::stream::once(async {
                    Err::<Vec<u8>, _>(std::io::Error::other("the server went away"))
                }))
            } else {
                Body::from(reply.bytes().await.unwrap_or_default())
            };
            Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(body)
                .expect("response")
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("port");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, axum::Router::new().fallback(forward)).await;
    });
    (base, seen)
}

async fn a_step_whose_reply_is_lost_is_found_done_and_not_reported_lost(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let (proxy, seen) = lossy_proxy(server.base.clone(), "/delivered").await;
    let through_proxy = env.request_url.replacen(&server.base, &proxy, 1);
    let anteroom = Anteroom::new(&through_proxy, OwnerId::parse("wrap-test").expect("owner"))
        .expect("capability URL");
    let round = anteroom.ask(&ask(600)).await.expect("asked");
    let lease = anteroom.claim(round.round_id, 60).await.expect("claimed");
    let answer = server
        .respond(
            &server.responder_key,
            &round.round_id.to_string(),
            json!({"action_type": "accept", "content": {"env": "prod"}}),
        )
        .await;
    assert_eq!(answer.status(), 200);
    anteroom.wait(round.round_id).await.expect("waited");
    anteroom
        .step(round.round_id, &lease, DeliveryStep::Start)
        .await
        .expect("started");

    // `delivered` commits but its reply is lost: the round says it was done, so it is not sent again…
    let delivered = anteroom
        .step(round.round_id, &lease, DeliveryStep::Delivered)
        .await
        .expect("found delivered");
    assert_eq!(delivered.status, RoundStatus::Delivered);
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "the step was not sent twice"
    );
    // …and the round resolves, rather than staying `delivery_started` for the recovery job to call lost.
    let resolved = anteroom
        .step(round.round_id, &lease, DeliveryStep::Resolve)
        .await
        .expect("resolved");
    assert_eq!(resolved.status, RoundStatus::Resolved);
    server.stop().await;
}

on_both_backends!(
    a_step_whose_reply_is_lost_is_found_done_and_not_reported_lost,
    an_answer_comes_back_through_the_leases_steps,
    an_unanswered_question_ends_expired_not_declined,
    a_wrong_token_is_refused_with_what_anteroom_said,
);
