//! Standing answers over real HTTP, on SQLite and PostgreSQL: a rule made from a banner never answers more than
//! its maker may at the moment it answers, and the API lists, pauses and revokes rules.

use anteroom_domain::access::Role;
use anteroom_testkit::{
    Backend, TestServer,
    browser::{browser, page, person, sign_in},
    on_both_backends,
    pulsemcp::{Outcome, PulsemcpClient},
    requests,
};
use reqwest::{StatusCode, header};
use serde_json::json;

use super::teams::{send, status_of};
use anteroom_testkit::browser::input_value;

/// Asks "Deploy to staging?" again through `producer`; returns the question's id.
async fn ask_again(producer: &PulsemcpClient, id: &str) -> String {
    let body = producer.body(
        id,
        "Deploy to staging?",
        requests::schema(),
        "deploy",
        &requests::expires_in_an_hour(),
    );
    producer.create(id, &body).await.expect("create")
}

async fn a_standing_answer_never_widens_its_makers_rights_and_is_looked_after_by_api(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let env = server.session("rules").await;
    let producer = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("rules"));
    let first = ask_again(&producer, "rules-1").await;
    let rounds = server
        .get_json("/api/v1/sessions/rules/rounds", &server.admin_key)
        .await;
    let round_id = rounds["rounds"][0]["round_id"]
        .as_str()
        .expect("round")
        .to_owned();
    let field = format!(
        "{}/env",
        rounds["rounds"][0]["requests"]
            .as_object()
            .and_then(|r| r.keys().next())
            .expect("key")
    );
    // rita answers on the page and makes the answer stand, in every session, at most 5 times.
    let rita = sign_in(&server, "rita").await;
    let (_, html) = page(&server, "/sessions/rules", &rita).await;
    let reply = browser()
        .post(server.url("/sessions/rules/answer"))
        .header(header::COOKIE, &rita)
        .form(&[
            ("round", round_id.as_str()),
            ("csrf", input_value(&html, "csrf").as_str()),
            ("attempt", "rita-rule"),
            ("action", "accept"),
            (field.as_str(), "dev"),
            ("standing", "on"),
            ("standing_minutes", "1440"),
            ("standing_scope", "every_session"),
            ("standing_limit", "5"),
        ])
        .send()
        .await
        .expect("POST");
    assert_eq!(reply.status(), StatusCode::SEE_OTHER);
    assert!(matches!(
        producer.poll(&first).await.expect("poll"),
        Outcome::Accept(_)
    ));
    let listed = server.get_json("/api/v1/rules", &server.viewer_key).await;
    let rule = &listed["rules"][0];
    assert_eq!(
        (rule["created_by"].as_str(), rule["use_limit"].as_i64()),
        (Some("rita"), Some(5)),
        "{listed}"
    );
    assert!(rule["session_id"].is_null(), "every session: {rule}");
    let id = rule["id"].as_i64().expect("id");

    // The same question again is answered by the rule at once.
    let second = ask_again(&producer, "rules-2").await;
    assert!(matches!(
        producer.poll(&second).await.expect("poll"),
        Outcome::Accept(_)
    ));

    // The session now names another group: rita may no longer answer it, so neither may her rule.
    let (status, _) = send(
        &server,
        reqwest::Method::POST,
        "/api/v1/groups",
        &server.admin_key,
        Some(json!({"name": "others"})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _) = send(
        &server,
        reqwest::Method::PUT,
        "/api/v1/sessions/rules/settings",
        &server.admin_key,
        Some(json!({"responders": ["group:others"]})),
    )
    .await;
    assert_eq!(status, 200);
    let third = ask_again(&producer, "rules-3").await;
    assert_eq!(
        producer.poll(&third).await.expect("poll"),
        Outcome::Pending,
        "the rule does not widen rita's rights"
    );

    // Paused and revoked through the API; a viewer may do neither.
    let path = format!("/api/v1/rules/{id}");
    let patch = reqwest::Method::PATCH;
    let (status, _) = send(
        &server,
        patch.clone(),
        &path,
        &server.viewer_key,
        Some(json!({"paused": true})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, paused) = send(
        &server,
        patch.clone(),
        &path,
        &server.responder_key,
        Some(json!({"paused": true})),
    )
    .await;
    assert_eq!((status, &paused["paused"]), (200, &json!(true)), "{paused}");
    let (status, _) = send(
        &server,
        patch,
        &path,
        &server.responder_key,
        Some(json!({"paused": "yes"})),
    )
    .await;
    assert_eq!(status, 422);
    let status = status_of(
        &server,
        reqwest::Method::DELETE,
        &path,
        &server.responder_key,
    )
    .await;
    assert_eq!(status, 200);
    let listed = server.get_json("/api/v1/rules", &server.viewer_key).await;
    assert_eq!(listed["rules"], json!([]));
    let status = status_of(
        &server,
        reqwest::Method::DELETE,
        "/api/v1/rules/999999",
        &server.responder_key,
    )
    .await;
    assert_eq!(status, 404);
    server.stop().await;
}

on_both_backends!(a_standing_answer_never_widens_its_makers_rights_and_is_looked_after_by_api);
