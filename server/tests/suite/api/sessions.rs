//! Sessions over HTTP: the token and environment block, server routes, the queue and actions.

use serde_json::json;

use anteroom_testkit::requests::{ask, expires_in_an_hour, json_of, schema};
use anteroom_testkit::{
    Backend, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

async fn session_create_returns_token_once_and_the_environment_block(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    assert!(env.token.starts_with("ars_"));
    assert_eq!(
        env.body["environment"]["ELICITATION_PREFER_HTTP_FALLBACK"],
        "true"
    );
    assert_eq!(env.body["environment"]["ELICITATION_TTL_MS"], "3600000");
    assert!(env.body["environment"].get("ELICITATION_ENABLED").is_none());
    assert_eq!(
        env.request_url,
        format!("{}/api/v1/s/{}/elicitations", server.base, env.token)
    );
    let (status, again) = json_of(
        server
            .http
            .post(server.url("/api/v1/sessions"))
            .bearer_auth(&server.admin_key)
            .json(&json!({"id": "s1"}))
            .send()
            .await
            .expect("POST"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        again["producer_token"].is_null(),
        "the token is shown only once"
    );
    let (_, rotated) = json_of(
        server
            .http
            .post(server.url("/api/v1/sessions/s1/token?server=github"))
            .bearer_auth(&server.admin_key)
            .send()
            .await
            .expect("POST"),
    )
    .await;
    let url = rotated["environment"]["ELICITATION_REQUEST_URL"]
        .as_str()
        .expect("url");
    assert!(url.ends_with("/servers/github/elicitations"), "{url}");
    server.stop().await;
}

async fn server_route_names_the_asking_server(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let url = format!(
        "{}/api/v1/s/{}/servers/github/elicitations",
        server.base, env.token
    );
    let client = PulsemcpClient::new(&url, &url, Some("s1"));
    let id = client
        .create(
            "req-g",
            &client.body("req-g", "?", schema(), "create_pr", &expires_in_an_hour()),
        )
        .await
        .expect("create");
    assert_eq!(client.poll(&id).await.expect("poll"), Outcome::Pending);
    let (_, rounds) = json_of(
        server
            .http
            .get(server.url("/api/v1/sessions/s1/rounds"))
            .bearer_auth(&server.viewer_key)
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(rounds["rounds"][0]["server"], "github");
    assert_eq!(rounds["rounds"][0]["operation_name"], "create_pr");
    server.stop().await;
}

async fn attention_queue_and_session_actions(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    server.session("quiet").await;
    ask(&server, "waiting", "req-q").await;
    let (_, queue) = json_of(
        server
            .http
            .get(server.url("/api/v1/sessions"))
            .bearer_auth(&server.viewer_key)
            .send()
            .await
            .expect("GET"),
    )
    .await;
    assert_eq!(queue["sessions"][0]["session"]["id"], "waiting");
    assert_eq!(queue["sessions"][0]["open_rounds"], 1);
    let (status, finish) = json_of(
        server
            .http
            .patch(server.url("/api/v1/sessions/waiting"))
            .bearer_auth(&server.responder_key)
            .json(&json!({"action": "finish"}))
            .send()
            .await
            .expect("PATCH"),
    )
    .await;
    assert_eq!(
        (status, finish["error"].as_str()),
        (409, Some("managed_input_state"))
    );
    let (status, cancelled) = json_of(
        server
            .http
            .post(server.url("/api/v1/sessions/waiting/cancel"))
            .bearer_auth(&server.admin_key)
            .send()
            .await
            .expect("POST"),
    )
    .await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled"))
    );
    server.stop().await;
}

anteroom_testkit::on_both_backends!(
    session_create_returns_token_once_and_the_environment_block,
    server_route_names_the_asking_server,
    attention_queue_and_session_actions,
);
