//! A team's queue over real HTTP, on SQLite and PostgreSQL: groups managed by admins, a session's responders
//! and a question handed to someone, and the one rule of who may answer applied by every caller (the API's two
//! answer routes and the page here; `/mcp` in `mcp.rs`; links in `mail.rs`).

use anteroom_domain::access::Role;
use anteroom_testkit::{
    Backend, TestServer,
    browser::{browser, input_value, page, person, sign_in},
    on_both_backends,
    pulsemcp::{Outcome, PulsemcpClient},
    requests::{self, json_of},
};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};

/// A request whose reply has no body: its status.
pub(crate) async fn status_of(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    key: &str,
) -> u16 {
    server
        .http
        .request(method, server.url(path))
        .bearer_auth(key)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

pub(crate) async fn send(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = server
        .http
        .request(method, server.url(path))
        .bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    json_of(request.send().await.expect("request")).await
}

async fn groups_are_managed_by_admins_only(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let post = reqwest::Method::POST;
    let (status, _) = send(
        &server,
        post.clone(),
        "/api/v1/groups",
        &server.responder_key,
        Some(json!({"name": "oncall"})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = send(
        &server,
        post.clone(),
        "/api/v1/groups",
        &server.admin_key,
        Some(json!({"name": "oncall", "members": ["rita"]})),
    )
    .await;
    assert_eq!(
        (status, &body),
        (201, &json!({"name": "oncall", "members": ["rita"]}))
    );
    let (status, body) = send(
        &server,
        post.clone(),
        "/api/v1/groups",
        &server.admin_key,
        Some(json!({"name": "oncall"})),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("managed_input_conflict"))
    );
    for hostile in [
        json!({"name": "<script>"}),
        json!({"name": ""}),
        json!({"name": "x".repeat(65)}),
        json!({"name": "ok", "extra": 1}),
    ] {
        let (status, body) = send(
            &server,
            post.clone(),
            "/api/v1/groups",
            &server.admin_key,
            Some(hostile.clone()),
        )
        .await;
        assert!((400..500).contains(&status), "{hostile} → {status} {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let put = reqwest::Method::PUT;
    let (status, _) = send(
        &server,
        put.clone(),
        "/api/v1/groups/oncall/members/nobody",
        &server.admin_key,
        None,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = send(
        &server,
        put.clone(),
        "/api/v1/groups/nowhere/members/rita",
        &server.admin_key,
        None,
    )
    .await;
    assert_eq!(status, 404);
    let listed = server.get_json("/api/v1/groups", &server.viewer_key).await;
    assert_eq!(
        listed,
        json!({"groups": [{"name": "oncall", "members": ["rita"]}]})
    );
    let delete = reqwest::Method::DELETE;
    let status = status_of(
        &server,
        delete.clone(),
        "/api/v1/groups/oncall/members/rita",
        &server.responder_key,
    )
    .await;
    assert_eq!(status, 403);
    let status = status_of(
        &server,
        delete.clone(),
        "/api/v1/groups/oncall/members/rita",
        &server.admin_key,
    )
    .await;
    assert_eq!(status, 200);
    let status = status_of(
        &server,
        delete.clone(),
        "/api/v1/groups/oncall",
        &server.admin_key,
    )
    .await;
    assert_eq!(status, 200);
    let status = status_of(&server, delete, "/api/v1/groups/oncall", &server.admin_key).await;
    assert_eq!(status, 404);
    server.stop().await;
}

async fn only_a_sessions_responders_answer_its_questions(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    person(&server, "sam", Role::Responder).await;
    let (producer, request_id) = requests::ask(&server, "team-s", "team-q1").await;
    let put = reqwest::Method::PUT;
    let (status, _) = send(
        &server,
        reqwest::Method::POST,
        "/api/v1/groups",
        &server.admin_key,
        Some(json!({"name": "oncall", "members": ["rita"]})),
    )
    .await;
    assert_eq!(status, 201);
    let settings = json!({"responders": ["group:oncall"]});
    let (status, _) = send(
        &server,
        put.clone(),
        "/api/v1/sessions/team-s/settings",
        &server.responder_key,
        Some(settings.clone()),
    )
    .await;
    assert_eq!(status, 403, "a responder cannot widen their own rights");
    for hostile in [
        json!({"responders": ["everyone"]}),
        json!({"responders": ["group:a b"]}),
        json!({"responders": (0..21).map(|i| format!("user:u{i}")).collect::<Vec<_>>()}),
    ] {
        let (status, body) = send(
            &server,
            put.clone(),
            "/api/v1/sessions/team-s/settings",
            &server.admin_key,
            Some(hostile.clone()),
        )
        .await;
        assert_eq!(status, 422, "{hostile} → {body}");
    }
    let (status, body) = send(
        &server,
        put.clone(),
        "/api/v1/sessions/team-s/settings",
        &server.admin_key,
        Some(settings),
    )
    .await;
    assert_eq!(
        (status, &body["responders"]),
        (200, &json!(["group:oncall"]))
    );

    // The API key "responder" is not named: both answer routes refuse it, and nothing is recorded.
    let refused = server
        .respond(
            &server.responder_key,
            &request_id,
            json!({"action_type": "decline"}),
        )
        .await;
    let (status, body) = json_of(refused).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("for oncall")),
        "{body}"
    );
    let rounds = server
        .get_json("/api/v1/sessions/team-s/rounds", &server.admin_key)
        .await;
    let round_id = rounds["rounds"][0]["round_id"]
        .as_str()
        .expect("round id")
        .to_owned();
    let field = format!(
        "{}/env",
        rounds["rounds"][0]["requests"]
            .as_object()
            .and_then(|requests| requests.keys().next())
            .expect("a request")
    );
    let (status, _) = send(
        &server,
        reqwest::Method::POST,
        &format!("/api/v1/rounds/{round_id}/responses"),
        &server.responder_key,
        Some(json!({"responses": {"q": {"action": "decline"}}, "idempotency_key": "k1"})),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(
        producer.poll(&request_id).await.expect("poll"),
        Outcome::Pending
    );

    // On the page: sam sees whose it is and cannot answer it, even by a hand-made post; "Mine" leaves it out.
    let sam = sign_in(&server, "sam").await;
    let (_, html) = page(&server, "/sessions/team-s", &sam).await;
    assert!(html.contains("for oncall"), "{html}");
    assert!(
        html.contains("This question is for oncall: you can see it but not answer it."),
        "{html}"
    );
    let (_, mine) = page(&server, "/", &sam).await;
    assert!(!mine.contains("queue-question"), "{mine}");
    assert!(mine.contains("1 question waits for others"), "{mine}");
    let (_, all) = page(&server, "/?show=all", &sam).await;
    assert!(
        all.contains("queue-question") && all.contains(" · for oncall"),
        "{all}"
    );
    let post = |cookie: &str, html: &str, attempt: &str| {
        browser()
            .post(server.url("/sessions/team-s/answer"))
            .header(header::COOKIE, cookie)
            .form(&[
                ("round", round_id.as_str()),
                ("csrf", input_value(html, "csrf").as_str()),
                ("attempt", attempt),
                ("action", "accept"),
                (field.as_str(), "prod"),
            ])
            .send()
    };
    let reply = post(&sam, &html, "sam-1").await.expect("POST");
    assert_eq!(reply.status(), StatusCode::SEE_OTHER);
    let (_, after) = page(&server, "/sessions/team-s", &sam).await;
    assert!(
        after.contains("This question is for oncall; you may not answer it."),
        "{after}"
    );
    assert_eq!(
        producer.poll(&request_id).await.expect("poll"),
        Outcome::Pending
    );

    // rita is in oncall: her answer is recorded.
    let rita = sign_in(&server, "rita").await;
    let (_, html) = page(&server, "/sessions/team-s", &rita).await;
    assert!(!html.contains("you can see it but not answer it"), "{html}");
    let (_, mine) = page(&server, "/", &rita).await;
    assert!(mine.contains("queue-question"), "{mine}");
    post(&rita, &html, "rita-1").await.expect("POST");
    assert!(matches!(
        producer.poll(&request_id).await.expect("poll"),
        Outcome::Accept(_)
    ));
    server.stop().await;
}

async fn an_admin_hands_a_question_to_someone(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (producer, request_id) = requests::ask(&server, "hand-s", "hand-q1").await;
    let rounds = server
        .get_json("/api/v1/sessions/hand-s/rounds", &server.admin_key)
        .await;
    let round_id = rounds["rounds"][0]["round_id"]
        .as_str()
        .expect("round id")
        .to_owned();
    let path = format!("/api/v1/rounds/{round_id}/assignee");
    let put = reqwest::Method::PUT;
    let (status, _) = send(
        &server,
        put.clone(),
        &path,
        &server.responder_key,
        Some(json!({"assignee": "key:responder"})),
    )
    .await;
    assert_eq!(status, 403, "only admins hand questions on");
    let (status, _) = send(
        &server,
        put.clone(),
        &path,
        &server.admin_key,
        Some(json!({"assignee": "root"})),
    )
    .await;
    assert_eq!(status, 422);
    let (status, body) = send(
        &server,
        put.clone(),
        &path,
        &server.admin_key,
        Some(json!({"assignee": "user:sam"})),
    )
    .await;
    assert_eq!(
        (status, &body["responders"]),
        (200, &json!(["user:sam"])),
        "{body}"
    );
    let (status, _) = json_of(
        server
            .respond(
                &server.responder_key,
                &request_id,
                json!({"action_type": "decline"}),
            )
            .await,
    )
    .await;
    assert_eq!(status, 403, "handed to sam, not to the key");
    let (status, _) = send(
        &server,
        put.clone(),
        &path,
        &server.admin_key,
        Some(json!({"assignee": "key:responder"})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = json_of(
        server
            .respond(
                &server.responder_key,
                &request_id,
                json!({"action_type": "decline"}),
            )
            .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        producer.poll(&request_id).await.expect("poll"),
        Outcome::Decline
    );
    let (status, _) = send(
        &server,
        put,
        &path,
        &server.admin_key,
        Some(json!({"assignee": null})),
    )
    .await;
    assert_eq!(status, 409, "an answered question is not handed on");
    server.stop().await;
}

async fn a_waiting_question_is_given_more_time(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    // A pulsemcp asker's own deadline is fixed.
    let env = server.session("more-time").await;
    let producer = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("more-time"));
    let body = producer.body(
        "fixed-q",
        "Fixed?",
        requests::schema(),
        "deploy",
        &requests::expires_in_an_hour(),
    );
    producer.create("fixed-q", &body).await.expect("create");
    // A wrapped server's question follows Anteroom's deadline.
    let managed = server
        .http
        .post(server.url(&format!("/api/v1/s/{}/rounds", env.token)))
        .json(&json!({
            "logical_operation_id": "op-1",
            "operation_kind": "tool",
            "operation_name": "deploy",
            "requests": {"q": {"mode": "form", "message": "Ship it?", "requestedSchema": {"type": "object", "properties": {}}}}
        }))
        .send()
        .await
        .expect("POST round");
    let (status, managed) = json_of(managed).await;
    assert_eq!(status, 201, "{managed}");
    let round_id = managed["round_id"].as_str().expect("round id").to_owned();
    let deadline = managed["deadline"].as_str().expect("deadline").to_owned();
    let path = format!("/api/v1/rounds/{round_id}/deadline");
    let post = reqwest::Method::POST;
    let (status, _) = send(
        &server,
        post.clone(),
        &path,
        &server.viewer_key,
        Some(json!({"extend_by_minutes": 30})),
    )
    .await;
    assert_eq!(status, 403);
    for bad in [
        json!({"extend_by_minutes": 0}),
        json!({"extend_by_minutes": 10081}),
        json!({"extend_by_minutes": "soon"}),
    ] {
        let (status, _) = send(
            &server,
            post.clone(),
            &path,
            &server.responder_key,
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, 422, "{bad}");
    }
    let (status, extended) = send(
        &server,
        post.clone(),
        &path,
        &server.responder_key,
        Some(json!({"extend_by_minutes": 30})),
    )
    .await;
    assert_eq!(status, 200, "{extended}");
    let before = chrono::DateTime::parse_from_rfc3339(&deadline).expect("time");
    let after =
        chrono::DateTime::parse_from_rfc3339(extended["deadline"].as_str().expect("deadline"))
            .expect("time");
    assert_eq!(after - before, chrono::Duration::minutes(30));

    // The page: "+1 hour" on a banner, without JavaScript; the fixed one says why it has none.
    let rita = sign_in(&server, "rita").await;
    let (_, html) = page(&server, "/sessions/more-time", &rita).await;
    assert!(html.contains("+1 hour"), "{html}");
    assert!(
        html.contains("The asking server set this deadline itself"),
        "{html}"
    );
    let reply = browser()
        .post(server.url("/fn/extend-deadline"))
        .header(header::COOKIE, &rita)
        .header(header::REFERER, server.url("/sessions/more-time"))
        .form(&[
            ("session_id", "more-time"),
            ("round_id", round_id.as_str()),
            ("csrf", input_value(&html, "csrf").as_str()),
        ])
        .send()
        .await
        .expect("POST extend");
    assert!(
        reply.status().is_success() || reply.status().is_redirection(),
        "{}",
        reply.status()
    );
    let round = server
        .get_json(&format!("/api/v1/rounds/{round_id}"), &server.viewer_key)
        .await;
    let last = chrono::DateTime::parse_from_rfc3339(round["deadline"].as_str().expect("deadline"))
        .expect("time");
    assert_eq!(last - after, chrono::Duration::hours(1));
    server.stop().await;
}

/// Sets session `id`'s settings as an admin; returns the status.
async fn configure(server: &TestServer, id: &str, settings: Value) -> (u16, Value) {
    send(
        server,
        reqwest::Method::PUT,
        &format!("/api/v1/sessions/{id}/settings"),
        &server.admin_key,
        Some(settings),
    )
    .await
}

async fn a_question_nobody_answers_climbs_its_ladder_and_ends_nobody_available(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "lead", Role::Responder).await;
    let post = reqwest::Method::POST;
    for group in [
        json!({"name": "oncall"}),
        json!({"name": "leads", "members": ["lead"]}),
    ] {
        let (status, _) = send(
            &server,
            post.clone(),
            "/api/v1/groups",
            &server.admin_key,
            Some(group),
        )
        .await;
        assert_eq!(status, 201);
    }
    let env = server.session("ladder").await;
    let producer = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("ladder"));
    let body = producer.body(
        "ladder-q",
        "Ship it?",
        requests::schema(),
        "deploy",
        &requests::expires_in_an_hour(),
    );
    let id = producer.create("ladder-q", &body).await.expect("create");
    for hostile in [
        json!({"escalation": [{"after_minutes": 0, "notify": ["group:leads"]}]}),
        json!({"escalation": [{"after_minutes": 5, "notify": []}]}),
        json!({"escalation": [{"after_minutes": 5, "notify": ["group:leads"]}], "nobody_available_after_minutes": 5}),
        json!({"escalation": [{"after_minutes": 5, "notify": ["group:leads"], "extra": 1}]}),
    ] {
        let (status, body) = configure(&server, "ladder", hostile.clone()).await;
        assert_eq!(status, 422, "{hostile} → {body}");
    }
    let (status, body) = configure(
        &server,
        "ladder",
        json!({
            "responders": ["group:oncall"],
            "escalation": [{"after_minutes": 5, "notify": ["group:leads"]}],
            "nobody_available_after_minutes": 20
        }),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let lead = sign_in(&server, "lead").await;
    let (_, html) = page(&server, "/sessions/ladder", &lead).await;
    assert!(
        html.contains("This question is for oncall: you can see it but not answer it."),
        "{html}"
    );
    server.clock.advance(chrono::Duration::minutes(6));
    assert_eq!(
        anteroom_server::jobs::escalate::run(server.state.clone()).await,
        (1, 0)
    );
    assert_eq!(
        anteroom_server::jobs::escalate::run(server.state.clone()).await,
        (0, 0),
        "once"
    );
    let (_, html) = page(&server, "/sessions/ladder", &lead).await;
    assert!(html.contains("oncall, leads"), "{html}");
    assert!(!html.contains("you can see it but not answer it"), "{html}");

    server.clock.advance(chrono::Duration::minutes(15));
    assert_eq!(
        anteroom_server::jobs::escalate::run(server.state.clone()).await,
        (0, 1)
    );
    let poll = server
        .http
        .get(format!("{}/{id}", env.poll_url))
        .send()
        .await
        .expect("poll");
    let (_, answer) = json_of(poll).await;
    assert_eq!(answer["action"], "expired", "{answer}");
    assert_eq!(
        answer["_meta"]["anteroom/failure"], "nobody_available",
        "{answer}"
    );
    let (_, html) = page(&server, "/sessions/ladder", &lead).await;
    assert!(html.contains("Nobody was available"), "{html}");
    server.stop().await;
}

/// Two instances on one PostgreSQL database tick at once: each step is taken, and announced, once.
#[tokio::test]
async fn two_instances_climb_a_ladder_once() {
    let Some((first, second)) = TestServer::postgres_pair().await else {
        return;
    };
    let env = first.session("pair-ladder").await;
    let producer = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("pair-ladder"));
    let body = producer.body(
        "pair-q",
        "Ship it?",
        requests::schema(),
        "deploy",
        &requests::expires_in_an_hour(),
    );
    producer.create("pair-q", &body).await.expect("create");
    let (status, body) = configure(
        &first,
        "pair-ladder",
        json!({
            "responders": ["user:nobody"],
            "escalation": [
                {"after_minutes": 5, "notify": ["user:a"]},
                {"after_minutes": 10, "notify": ["user:b"]}
            ]
        }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    first.clock.advance(chrono::Duration::minutes(11));
    let (a, b) = tokio::join!(
        anteroom_server::jobs::escalate::run(first.state.clone()),
        anteroom_server::jobs::escalate::run(second.state.clone())
    );
    assert_eq!(
        a.0 + b.0,
        2,
        "two steps, each taken by one instance: {a:?} {b:?}"
    );
    first.stop().await;
    second.stop().await;
}

async fn response_times_are_figures_for_admins_and_a_chart_without_script(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "ada", Role::Admin).await;
    person(&server, "rita", Role::Responder).await;
    let (producer, request_id) = requests::ask(&server, "times", "times-q").await;
    server.clock.advance(chrono::Duration::seconds(42));
    let answered = server
        .respond(
            &server.admin_key,
            &request_id,
            json!({"action_type": "decline"}),
        )
        .await;
    assert_eq!(answered.status(), StatusCode::OK);
    assert_eq!(
        producer.poll(&request_id).await.expect("poll"),
        Outcome::Decline
    );
    let get = reqwest::Method::GET;
    let (status, _) = send(
        &server,
        get.clone(),
        "/api/v1/stats/response-times",
        &server.responder_key,
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = send(
        &server,
        get.clone(),
        "/api/v1/stats/response-times?days=91",
        &server.admin_key,
        None,
    )
    .await;
    assert_eq!(status, 422);
    let (status, times) = send(
        &server,
        get,
        "/api/v1/stats/response-times?days=7",
        &server.admin_key,
        None,
    )
    .await;
    assert_eq!(status, 200, "{times}");
    assert_eq!(times["days"], 7);
    assert_eq!(times["daily"][0]["asked"], 1, "{times}");
    assert_eq!(times["daily"][0]["answered"], 1, "{times}");
    let median = times["daily"][0]["median_ms"].as_i64().expect("median");
    assert!((30_000..=60_000).contains(&median), "{median}");
    assert_eq!(times["people"][0]["key"], "api key admin", "{times}");
    assert_eq!(times["sessions"][0]["key"], "times");

    let ada = sign_in(&server, "ada").await;
    let (status, html) = page(&server, "/admin/response-times?days=7", &ada).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("<svg") && html.contains("Time to answer per day"),
        "{html}"
    );
    assert!(
        html.contains("By person") && html.contains("api key admin"),
        "{html}"
    );
    let rita = sign_in(&server, "rita").await;
    let (_, html) = page(&server, "/admin/response-times", &rita).await;
    assert!(
        html.contains("Only admins can read response times."),
        "{html}"
    );
    server.stop().await;
}

on_both_backends!(
    groups_are_managed_by_admins_only,
    only_a_sessions_responders_answer_its_questions,
    an_admin_hands_a_question_to_someone,
    a_waiting_question_is_given_more_time,
    a_question_nobody_answers_climbs_its_ladder_and_ends_nobody_available,
    response_times_are_figures_for_admins_and_a_chart_without_script,
);
