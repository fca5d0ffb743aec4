//! Authentication: producer tokens, API keys by role, and the bare routes.

use serde_json::json;

use anteroom_testkit::requests::{ask, expires_in_an_hour, json_of, schema};
use anteroom_testkit::{
    Backend, Settings, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

async fn producer_and_management_auth_rules(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (_, id) = ask(&server, "s1", "req-a").await;
    let other = server.session("s2").await;
    let http = &server.http;

    let wrong = http
        .get(server.url("/api/v1/s/ars_0000/elicitations/req-a"))
        .send()
        .await
        .expect("GET");
    assert_eq!(wrong.status(), 401, "wrong token");
    let (status, body) = json_of(
        http.get(format!("{}/{id}", other.poll_url))
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("not_found")),
        "another session's round is unknown"
    );

    let client = PulsemcpClient::new(&other.request_url, &other.poll_url, Some("s1"));
    let mismatched = client.body("req-m", "?", schema(), "deploy", &expires_in_an_hour());
    let reply = http
        .post(&other.request_url)
        .json(&mismatched)
        .send()
        .await
        .expect("POST");
    assert_eq!(reply.status(), 403, "_meta session names another session");

    assert_eq!(
        http.get(server.url("/api/v1/elicitations/req-a"))
            .send()
            .await
            .expect("GET")
            .status(),
        401,
        "bare route without key"
    );
    let bare = http
        .post(server.url("/api/v1/elicitations"))
        .json(&mismatched)
        .send()
        .await
        .expect("POST");
    assert_eq!(bare.status(), 401);
    let unauthenticated = http
        .patch(server.url("/api/v1/elicitations/req-a/respond"))
        .json(&json!({"action_type": "decline"}))
        .send()
        .await
        .expect("PATCH");
    assert_eq!(unauthenticated.status(), 401, "respond without key");
    assert_eq!(
        server
            .respond("ark_not-a-key", &id, json!({"action_type": "decline"}))
            .await
            .status(),
        401
    );
    let (status, body) = json_of(
        server
            .respond(&server.viewer_key, &id, json!({"action_type": "decline"}))
            .await,
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("forbidden")),
        "viewer cannot answer"
    );
    let create = http
        .post(server.url("/api/v1/sessions"))
        .bearer_auth(&server.responder_key)
        .json(&json!({"id": "s3"}))
        .send()
        .await
        .expect("POST");
    assert_eq!(create.status(), 403, "only admins register sessions");

    let revoke = http
        .delete(server.url("/api/v1/sessions/s2/token"))
        .bearer_auth(&server.admin_key)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(revoke.status(), 200);
    assert_eq!(
        http.get(format!("{}/anything", other.poll_url))
            .send()
            .await
            .expect("GET")
            .status(),
        401,
        "revoked token"
    );
    server.stop().await;
}

async fn bare_routes_take_a_producer_key_and_register_the_session(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let url = server.url("/api/v1/elicitations");
    let client = PulsemcpClient::new(&url, &url, Some("fresh-session"));
    let body = client.body("req-b", "?", schema(), "deploy", &expires_in_an_hour());
    let reply = server
        .http
        .post(&url)
        .bearer_auth(&server.admin_key)
        .json(&body)
        .send()
        .await
        .expect("POST");
    assert_eq!(reply.status(), 201);
    let poll = server
        .http
        .get(format!("{url}/req-b"))
        .bearer_auth(&server.responder_key)
        .send()
        .await
        .expect("GET");
    assert_eq!(poll.status(), 200);
    let session = server
        .http
        .get(server.url("/api/v1/sessions/fresh-session"))
        .bearer_auth(&server.viewer_key)
        .send()
        .await
        .expect("GET");
    assert_eq!(session.status(), 200, "registered on the fly");
    server.stop().await;
}

/// Attack: a responder's API key registered sessions and posted into any session on the bare route.
async fn responder_key_cannot_register_sessions_on_the_bare_route(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let url = server.url("/api/v1/elicitations");
    for session in ["brand-new", "s1"] {
        let client = PulsemcpClient::new(&url, &url, Some(session));
        let body = client.body("req-r", "?", schema(), "deploy", &expires_in_an_hour());
        let reply = server
            .http
            .post(&url)
            .bearer_auth(&server.responder_key)
            .json(&body)
            .send()
            .await
            .expect("POST");
        assert_eq!(reply.status(), 403, "{session}");
    }
    let session = server
        .http
        .get(server.url("/api/v1/sessions/brand-new"))
        .bearer_auth(&server.viewer_key)
        .send()
        .await
        .expect("GET");
    assert_eq!(session.status(), 404, "nothing was registered");
    server.stop().await;
}

async fn anonymous_bare_routes_only_when_the_operator_opts_in(db: Backend) {
    let Some(server) = TestServer::start_with(
        db,
        Settings {
            allow_unauthenticated_producers: true,
            ..Settings::default()
        },
    )
    .await
    else {
        return;
    };
    server.session("known").await;
    let url = server.url("/api/v1/elicitations");
    let known = PulsemcpClient::new(&url, &url, Some("known"));
    let id = known
        .create(
            "req-n",
            &known.body("req-n", "?", schema(), "deploy", &expires_in_an_hour()),
        )
        .await
        .expect("anonymous create");
    assert_eq!(
        known.poll(&id).await.expect("anonymous poll"),
        Outcome::Pending
    );
    let unknown = PulsemcpClient::new(&url, &url, Some("nobody"));
    let reply = server
        .http
        .post(&url)
        .json(&unknown.body("req-u", "?", schema(), "deploy", &expires_in_an_hour()))
        .send()
        .await
        .expect("POST");
    assert_eq!(
        reply.status(),
        404,
        "an unknown session is not registered anonymously"
    );
    server.stop().await;
}

anteroom_testkit::on_both_backends!(
    producer_and_management_auth_rules,
    bare_routes_take_a_producer_key_and_register_the_session,
    responder_key_cannot_register_sessions_on_the_bare_route,
    anonymous_bare_routes_only_when_the_operator_opts_in,
);
