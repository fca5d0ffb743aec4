//! Answering over HTTP: a second answer is a conflict naming the winner, a bad one is refused.

use serde_json::json;

use anteroom_testkit::requests::{ask, json_of};
use anteroom_testkit::{Backend, TestServer};

async fn second_answer_gets_409_naming_the_winner(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (_, id) = ask(&server, "s1", "req-w").await;
    server
        .respond(&server.admin_key, &id, json!({"action_type": "decline"}))
        .await;
    let (status, again) = json_of(
        server
            .respond(&server.admin_key, &id, json!({"action_type": "decline"}))
            .await,
    )
    .await;
    assert_eq!(
        (status, again["replayed"].as_bool()),
        (200, Some(true)),
        "the same answer again is a replay"
    );
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
        (409, Some("managed_input_conflict"))
    );
    assert_eq!(body["details"]["answered_by"], "api key admin");
    assert!(
        body["message"]
            .as_str()
            .expect("message")
            .contains("already answered")
    );
    server.stop().await;
}

async fn invalid_answer_gets_per_field_errors(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (_, id) = ask(&server, "s1", "req-v").await;
    let (status, body) = json_of(
        server
            .respond(
                &server.responder_key,
                &id,
                json!({"action_type": "accept", "content": {"env": "staging"}}),
            )
            .await,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["details"]["fields"]["env"][0],
        "must be one of: dev, prod"
    );
    server.stop().await;
}

anteroom_testkit::on_both_backends!(
    second_answer_gets_409_naming_the_winner,
    invalid_answer_gets_per_field_errors,
);
