//! The Slack app against a loopback stand-in of Slack's Web API: a question reaches the channel as a
//! message with buttons, a signed click answers it as the person Slack's e-mail names (and the asker's next
//! poll gets the answer), the message then says who answered; and every click that must not answer — unsigned,
//! stale, replayed, from a stranger or a viewer, for a closed question or an unknown button — records nothing
//! and tells the clicker why.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use anteroom_domain::{access::Role, clock::Clock};
use anteroom_reach::{outbox, slack::sign};
use anteroom_server::{SlackConfig, jobs::expire, people::add_user};
use anteroom_testkit::{self as support, on_both_backends};
use axum::{
    Json, Router,
    extract::Query,
    http::{HeaderMap, StatusCode},
    routing::{get, post},
};
use chrono::Duration;
use serde_json::{Value, json};
use support::{
    Backend, Settings, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

const SECRET: &str = "slack-signing-secret-for-tests";
const TOKEN: &str = "xoxb-test-token";
const CHANNEL: &str = "C0QUESTIONS";

/// What the stand-in was asked: (method, body).
type Calls = Arc<Mutex<Vec<(String, Value)>>>;

/// A stand-in of the Web API methods Anteroom calls; `users.info` knows the e-mails in `emails`.
async fn slack_stand_in(emails: &[(&str, &str)]) -> (String, Calls) {
    let calls: Calls = Arc::default();
    let emails: Arc<HashMap<String, String>> = Arc::new(
        emails
            .iter()
            .map(|(user, email)| ((*user).to_owned(), (*email).to_owned()))
            .collect(),
    );
    let authorised = |headers: &HeaderMap| {
        headers.get("authorization").and_then(|v| v.to_str().ok())
            == Some(&format!("Bearer {TOKEN}"))
    };
    let method = |name: &'static str, calls: Calls| {
        post(move |headers: HeaderMap, Json(body): Json<Value>| {
            let calls = calls.clone();
            async move {
                if !authorised(&headers) {
                    return Json(json!({"ok": false, "error": "invalid_auth"}));
                }
                let mut calls = calls.lock().expect("lock");
                calls.push((name.to_owned(), body.clone()));
                let ts = format!("1700000000.{:06}", calls.len());
                Json(
                    json!({"ok": true, "channel": body["channel"], "ts": body.get("ts").cloned().unwrap_or(json!(ts))}),
                )
            }
        })
    };
    let users = emails.clone();
    let app = Router::new()
        .route("/chat.postMessage", method("chat.postMessage", calls.clone()))
        .route("/chat.update", method("chat.update", calls.clone()))
        .route("/chat.postEphemeral", method("chat.postEphemeral", calls.clone()))
        .route(
            "/users.info",
            get(move |headers: HeaderMap, Query(query): Query<HashMap<String, String>>| {
                let users = users.clone();
                async move {
                    if !authorised(&headers) {
                        return Json(json!({"ok": false, "error": "invalid_auth"}));
                    }
                    let user = query.get("user").cloned().unwrap_or_default();
                    match users.get(&user) {
                        Some(email) => Json(json!({"ok": true, "user": {"id": user, "profile": {"email": email}}})),
                        None => Json(json!({"ok": true, "user": {"id": user, "profile": {}}})),
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, calls)
}

fn calls_of(calls: &Calls, method: &str) -> Vec<Value> {
    calls
        .lock()
        .expect("lock")
        .iter()
        .filter(|(name, _)| name == method)
        .map(|(_, body)| body.clone())
        .collect()
}

async fn start(db: Backend, api_url: &str) -> Option<TestServer> {
    let server = TestServer::start_with(
        db,
        Settings {
            slack: Some(SlackConfig {
                bot_token: TOKEN.to_owned(),
                signing_secret: SECRET.to_owned(),
                channel: CHANNEL.to_owned(),
                api_url: api_url.to_owned(),
            }),
            ..Settings::default()
        },
    )
    .await?;
    for (name, role, email) in [
        ("rita", Role::Responder, "Rita@Example.com"),
        ("vic", Role::Viewer, "vic@example.com"),
    ] {
        let user = add_user(server.store.as_ref(), name, "correct horse battery", role)
            .await
            .expect("add user");
        server
            .store
            .set_user_email(&user.id, Some(email))
            .await
            .expect("email");
    }
    Some(server)
}

/// Asks a question through the pulsemcp client in a new session; returns the client.
async fn ask(
    server: &TestServer,
    session: &str,
    id: &str,
    message: &str,
    schema: Value,
) -> PulsemcpClient {
    let env = server.session(session).await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(session));
    ask_again(&client, id, message, schema).await;
    client
}

/// Asks another question in the client's session.
async fn ask_again(client: &PulsemcpClient, id: &str, message: &str, schema: Value) {
    let expires = support::start_time() + Duration::hours(1);
    client
        .create(
            id,
            &client.body(id, message, schema, "deploy", &expires.to_rfc3339()),
        )
        .await
        .expect("create");
}

/// A `block_actions` body as Slack sends it: form-encoded, the JSON in `payload`.
fn click_body(user: &str, action_id: &str) -> String {
    let payload = json!({
        "type": "block_actions",
        "user": {"id": user, "username": user},
        "container": {"type": "message", "channel_id": CHANNEL, "message_ts": "1700000000.000001"},
        "channel": {"id": CHANNEL},
        "actions": [{"action_id": action_id, "type": "button", "value": "0"}],
    });
    form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload.to_string())
        .finish()
}

/// POSTs `body` to the actions route signed at `timestamp` (Unix seconds).
async fn post_signed(
    server: &TestServer,
    body: &str,
    timestamp: i64,
    secret: &str,
) -> (StatusCode, Value) {
    let response = server
        .http
        .post(server.url("/integrations/slack/actions"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp.to_string())
        .header(
            "x-slack-signature",
            sign(secret, timestamp, body.as_bytes()),
        )
        .body(body.to_owned())
        .send()
        .await
        .expect("POST actions");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A click by `user`, signed now.
async fn click(server: &TestServer, user: &str, action_id: &str) -> (StatusCode, Value) {
    post_signed(
        server,
        &click_body(user, action_id),
        server.clock.now().timestamp(),
        SECRET,
    )
    .await
}

/// The action ids of the buttons in a posted message.
fn buttons(message: &Value) -> Vec<(String, String)> {
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|block| block["elements"].as_array().cloned().unwrap_or_default())
        .filter(|element| element["type"] == "button")
        .map(|button| {
            (
                button["text"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                button["action_id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn action_labelled(message: &Value, label: &str) -> String {
    buttons(message)
        .into_iter()
        .find(|(text, _)| text == label)
        .map(|(_, id)| id)
        .expect("button")
}

async fn a_question_is_answered_from_its_slack_message(db: Backend) {
    let (api_url, calls) = slack_stand_in(&[("U0RITA", "rita@example.com")]).await;
    let Some(server) = start(db, &api_url).await else {
        return;
    };
    let hostile = format!(
        "<!channel> *Deploy* <https://evil.example|approve> now?\n{}",
        "x".repeat(9_000)
    );
    let client = ask(
        &server,
        "s-slack",
        "req-slack",
        &hostile,
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
    )
    .await;
    assert_eq!(
        outbox::run(server.state.clone()).await,
        1,
        "the question is posted"
    );
    let posted = calls_of(&calls, "chat.postMessage");
    assert_eq!(posted.len(), 1);
    let message = &posted[0];
    assert_eq!(message["channel"], CHANNEL);
    let section = &message["blocks"][0]["text"];
    assert_eq!(
        section["type"], "plain_text",
        "a producer's text is never mrkdwn: {section}"
    );
    assert!(
        section["text"].as_str().expect("text").chars().count() <= 2_900,
        "cut"
    );
    let labels: Vec<String> = buttons(message)
        .into_iter()
        .map(|(label, _)| label)
        .collect();
    assert_eq!(labels, ["Yes", "No", "Decline", "Open in Anteroom"]);

    let yes = action_labelled(message, "Yes");
    let body = click_body("U0RITA", &yes);
    let timestamp = server.clock.now().timestamp();
    let (status, reply) = post_signed(&server, &body, timestamp, SECRET).await;
    assert_eq!(
        (status, &reply["ok"]),
        (StatusCode::OK, &json!(true)),
        "{reply}"
    );
    assert_eq!(
        client.poll("req-slack").await.expect("poll"),
        Outcome::Accept(Some(json!({"ok": true})))
    );
    let round = server
        .store
        .get_round_by_request_id(&anteroom_domain::ids::RequestId::parse("req-slack").expect("id"))
        .await
        .expect("round");
    assert_eq!(round.responded_by.as_deref(), Some("rita via Slack"));
    let updates = calls_of(&calls, "chat.update");
    let last = updates.last().expect("the message is updated at once");
    assert!(
        last.to_string().contains("Answered by rita via Slack: Yes"),
        "{last}"
    );
    assert_eq!(
        outbox::run(server.state.clone()).await,
        1,
        "the answered event updates it again"
    );

    let (status, _) = post_signed(&server, &body, timestamp, SECRET).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "the same signed request twice is a replay"
    );
    let (status, reply) = click(&server, "U0RITA", &action_labelled(message, "No")).await;
    assert_eq!(
        (status, reply["error"].as_str()),
        (StatusCode::OK, Some("closed")),
        "{reply}"
    );
    assert!(
        reply["message"]
            .as_str()
            .expect("message")
            .contains("Answered by rita via Slack"),
        "{reply}"
    );
    let told = calls_of(&calls, "chat.postEphemeral");
    assert_eq!(
        told.last().map(|call| call["user"].clone()),
        Some(json!("U0RITA"))
    );
    let round = server.store.get_round(round.round_id).await.expect("round");
    assert_eq!(
        round
            .responses
            .expect("answer")
            .values()
            .next()
            .expect("one")
            .content,
        Some(json!({"ok": true}).as_object().cloned().expect("map"))
    );
    server.stop().await;
}

async fn clicks_that_must_not_answer_record_nothing(db: Backend) {
    let (api_url, calls) =
        slack_stand_in(&[("U0RITA", "rita@example.com"), ("U0VIC", "vic@example.com")]).await;
    let Some(server) = start(db, &api_url).await else {
        return;
    };
    let schema = json!({"type": "object", "properties": {"env": {"type": "string", "enum": ["dev", "stage", "prod"]}}});
    let client = ask(
        &server,
        "s-refuse",
        "req-refuse",
        "Which environment?",
        schema.clone(),
    )
    .await;
    outbox::run(server.state.clone()).await;
    let message = calls_of(&calls, "chat.postMessage").pop().expect("posted");
    let prod = action_labelled(&message, "prod");
    let body = click_body("U0RITA", &prod);
    let now = server.clock.now().timestamp();

    let unsigned = server
        .http
        .post(server.url("/integrations/slack/actions"))
        .body(body.clone())
        .send()
        .await
        .expect("POST");
    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        unsigned.json::<Value>().await.expect("json")["error"],
        "unauthorized"
    );
    assert_eq!(
        post_signed(&server, &body, now, "not-the-secret").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post_signed(&server, &body, now - 6 * 60, SECRET).await.0,
        StatusCode::UNAUTHORIZED,
        "stale"
    );
    let not_form = post_signed(&server, "payload=%7Bnot json", now, SECRET).await;
    assert_eq!(not_form.0, StatusCode::BAD_REQUEST, "{}", not_form.1);

    for (user, error, says) in [
        ("U0STRANGER", "no_account", "You have no Anteroom account"),
        ("U0VIC", "forbidden", "may read questions but not answer"),
    ] {
        let (status, reply) = click(&server, user, &prod).await;
        assert_eq!(
            (status, reply["error"].as_str()),
            (StatusCode::OK, Some(error)),
            "{reply}"
        );
        let told = calls_of(&calls, "chat.postEphemeral").pop().expect("told");
        assert_eq!(told["user"], user);
        assert!(
            told["text"].as_str().expect("text").contains(says),
            "{told}"
        );
    }
    let (_, reply) = click(
        &server,
        "U0RITA",
        &format!("answer:{}:0", uuid::Uuid::now_v7()),
    )
    .await;
    assert_eq!(reply["error"], "not_found");
    let (_, reply) = click(&server, "U0RITA", "delete:everything").await;
    assert_eq!(reply["error"], "unknown_action");
    let out_of_range = prod.replace(":2", ":7");
    let (_, reply) = click(&server, "U0RITA", &out_of_range).await;
    assert_eq!(reply["error"], "unknown_action");
    assert_eq!(
        client.poll("req-refuse").await.expect("poll"),
        Outcome::Pending,
        "nothing was recorded"
    );

    // Answered on the page (the API) first: the click is told who answered, and changes nothing.
    let page = server
        .respond(
            &server.responder_key,
            "req-refuse",
            json!({"action_type": "accept", "content": {"env": "dev"}}),
        )
        .await;
    assert_eq!(page.status(), StatusCode::OK);
    let (_, reply) = click(&server, "U0RITA", &prod).await;
    assert_eq!(reply["error"], "closed", "{reply}");
    assert!(
        reply["message"]
            .as_str()
            .expect("message")
            .contains("Answered by api key"),
        "{reply}"
    );
    assert_eq!(
        client.poll("req-refuse").await.expect("poll"),
        Outcome::Accept(Some(json!({"env": "dev"})))
    );

    // A question nobody answers: its message says it expired.
    ask_again(
        &client,
        "req-late",
        "Still there?",
        json!({"type": "object"}),
    )
    .await;
    outbox::run(server.state.clone()).await;
    server.clock.advance(Duration::hours(2));
    expire::run(server.state.clone()).await;
    outbox::run(server.state.clone()).await;
    let updates = calls_of(&calls, "chat.update");
    assert!(
        updates
            .iter()
            .any(|update| update.to_string().contains("Expired: nobody answered")),
        "{updates:?}"
    );
    server.stop().await;
}

/// Calls a profile server function as the signed-in browser does.
async fn server_fn(
    server: &TestServer,
    cookie: &str,
    endpoint: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    support::browser::browser()
        .post(server.url(&format!("/fn/{endpoint}")))
        .header("cookie", cookie)
        .header("accept", "application/json")
        .form(form)
        .send()
        .await
        .expect("POST server function")
}

async fn a_slack_account_slack_cannot_match_is_linked_by_hand_and_then_answers(db: Backend) {
    let (api_url, calls) = slack_stand_in(&[("U0SAM", "sam@elsewhere.example")]).await;
    let Some(server) = start(db, &api_url).await else {
        return;
    };
    support::browser::person(&server, "sam", Role::Responder).await;
    support::browser::person(&server, "tom", Role::Responder).await;
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let client = ask(&server, "s-link", "req-link", "Ship it?", schema).await;
    outbox::run(server.state.clone()).await;
    let message = calls_of(&calls, "chat.postMessage").pop().expect("posted");
    let yes = action_labelled(&message, "Yes");

    let (_, reply) = click(&server, "U0SAM", &yes).await;
    assert_eq!(reply["error"], "no_account", "{reply}");
    let told = calls_of(&calls, "chat.postEphemeral").pop().expect("told");
    let text = told["text"].as_str().expect("text");
    let link = text
        .split_whitespace()
        .find(|word| word.contains("/profile?slack_link="))
        .expect("a link offer");
    let path = link
        .strip_prefix(&server.base)
        .expect("on this instance")
        .to_owned();
    let token = path.split_once("slack_link=").expect("token").1.to_owned();
    assert!(token.starts_with("arl_"), "{token}");

    // Not signed in: the sign-in page, which comes back here.
    let (status, _) = support::browser::page(&server, &path, "").await;
    assert_eq!(status, StatusCode::SEE_OTHER);

    let cookie = support::browser::sign_in(&server, "sam").await;
    let (status, html) = support::browser::page(&server, &path, &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("Link this Slack account"),
        "the offer is shown"
    );
    assert!(html.contains("U0SAM"), "naming the Slack account");
    let csrf = support::browser::input_value(&html, "csrf");

    let forged = server_fn(
        &server,
        &cookie,
        "link-slack",
        &[("token", "arl_forged"), ("csrf", &csrf)],
    )
    .await;
    assert!(
        !forged.status().is_success(),
        "a forged offer links nothing"
    );
    let wrong_csrf = server_fn(
        &server,
        &cookie,
        "link-slack",
        &[("token", &token), ("csrf", "nope")],
    )
    .await;
    assert!(!wrong_csrf.status().is_success());
    let linked = server_fn(
        &server,
        &cookie,
        "link-slack",
        &[("token", &token), ("csrf", &csrf)],
    )
    .await;
    assert!(linked.status().is_success(), "{:?}", linked.text().await);
    let tom = support::browser::sign_in(&server, "tom").await;
    let (_, tom_html) = support::browser::page(&server, "/profile", &tom).await;
    let again = server_fn(
        &server,
        &tom,
        "link-slack",
        &[
            ("token", &token),
            ("csrf", &support::browser::input_value(&tom_html, "csrf")),
        ],
    )
    .await;
    assert!(!again.status().is_success(), "an offer is taken once");

    // Slack signs each click anew: a second click is a new signature.
    server.clock.advance(Duration::seconds(1));
    let (status, reply) = click(&server, "U0SAM", &yes).await;
    assert_eq!(
        (status, reply["answered_by"].as_str()),
        (StatusCode::OK, Some("sam")),
        "{reply}"
    );
    assert_eq!(
        client.poll("req-link").await.expect("poll"),
        Outcome::Accept(Some(json!({"ok": true})))
    );
    let (_, profile) = support::browser::page(&server, "/profile", &cookie).await;
    assert!(
        profile.contains("U0SAM"),
        "the link is listed on the profile"
    );
    let unlinked = server_fn(
        &server,
        &cookie,
        "unlink-slack",
        &[("slack_user", "U0SAM"), ("csrf", &csrf)],
    )
    .await;
    assert!(unlinked.status().is_success());
    assert_eq!(
        server.store.slack_linked_user("U0SAM").await.expect("read"),
        None
    );
    server.stop().await;
}

async fn a_session_with_its_own_channel_is_posted_there(db: Backend) {
    let (api_url, calls) = slack_stand_in(&[]).await;
    let Some(server) = start(db, &api_url).await else {
        return;
    };
    let env = server.session("s-own-channel").await;
    let settings = |key: &str, body: Value| {
        server
            .http
            .put(server.url("/api/v1/sessions/s-own-channel/settings"))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    let refused = settings(&server.responder_key, json!({"slack_channel": "deploys"}))
        .await
        .expect("PUT");
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let hostile = settings(&server.admin_key, json!({"slack_channel": "<!channel>"}))
        .await
        .expect("PUT");
    assert_eq!(hostile.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let unknown = settings(&server.admin_key, json!({"slack": "deploys"}))
        .await
        .expect("PUT");
    assert!(unknown.status().is_client_error());
    let set = settings(&server.admin_key, json!({"slack_channel": "#deploys"}))
        .await
        .expect("PUT");
    assert_eq!(set.status(), StatusCode::OK);
    assert_eq!(
        set.json::<Value>().await.expect("json")["slack_channel"],
        "deploys"
    );
    let read = server
        .http
        .get(server.url("/api/v1/sessions/s-own-channel/settings"))
        .bearer_auth(&server.viewer_key)
        .send()
        .await
        .expect("GET");
    assert_eq!(
        read.json::<Value>().await.expect("json")["slack_channel"],
        "deploys"
    );

    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s-own-channel"));
    ask_again(&client, "req-own", "Deploy?", json!({"type": "object"})).await;
    ask(
        &server,
        "s-default",
        "req-default",
        "Deploy too?",
        json!({"type": "object"}),
    )
    .await;
    outbox::run(server.state.clone()).await;
    let mut channels: Vec<String> = calls_of(&calls, "chat.postMessage")
        .iter()
        .map(|message| message["channel"].as_str().unwrap_or_default().to_owned())
        .collect();
    channels.sort();
    assert_eq!(channels, vec![CHANNEL.to_owned(), "deploys".to_owned()]);
    server.stop().await;
}

on_both_backends!(
    a_question_is_answered_from_its_slack_message,
    clicks_that_must_not_answer_record_nothing,
    a_slack_account_slack_cannot_match_is_linked_by_hand_and_then_answers,
    a_session_with_its_own_channel_is_posted_there
);
