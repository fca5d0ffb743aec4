//! Hostile input over real HTTP, on SQLite and PostgreSQL: each test replays one attack from the attack run
//! (named after it) and checks what must hold afterwards — no stall, no unbounded memory, no script run, no
//! 5xx.

use anteroom_testkit::{self as support, on_both_backends};

use std::time::{Duration as StdDuration, Instant};

use anteroom_domain::access::Role;
use chrono::Duration;
use reqwest::{Method, StatusCode, header};
use serde_json::{Value, json};
use support::{
    Backend, Settings, TestServer,
    browser::{PASSWORD, browser, page, person, post_form, sign_in},
    pulsemcp::PulsemcpClient,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

const XSS: &str = "Deploy</title><img src=x onerror=alert(1)><title>";

/// Sends `attempt(0)`, `attempt(1)`, … until one is answered `429`, which must carry `Retry-After`; every reply
/// before it must be `before`. Fails (saying `what`) if none of `tries` attempts is refused.
async fn first_refusal(
    tries: usize,
    before: StatusCode,
    what: &str,
    mut attempt: impl AsyncFnMut(usize) -> reqwest::Response,
) -> reqwest::Response {
    for n in 0..tries {
        let reply = attempt(n).await;
        if reply.status() == StatusCode::TOO_MANY_REQUESTS {
            assert!(reply.headers().contains_key(header::RETRY_AFTER), "{what}");
            eprintln!("{what}: refused at attempt {n}");
            return reply;
        }
        assert_eq!(reply.status(), before, "{what}: attempt {n}");
    }
    panic!("{what}: none of {tries} attempts was refused");
}

fn expires_in_an_hour() -> String {
    (support::start_time() + Duration::hours(1)).to_rfc3339()
}

/// Posts a question with `schema` through the session's token; returns the reply's status and body.
async fn post_question(
    server: &TestServer,
    session: &str,
    id: &str,
    message: &str,
    schema: Value,
) -> (StatusCode, Value) {
    let env = server.session(session).await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let body = client.body(id, message, schema, "deploy", &expires_in_an_hour());
    let reply = server
        .http
        .post(&env.request_url)
        .json(&body)
        .send()
        .await
        .expect("POST question");
    let status = reply.status();
    (status, reply.json().await.unwrap_or(Value::Null))
}

async fn backtracking_patterns_are_refused_at_create_naming_the_property(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (status, body) = post_question(
        &server,
        "s1",
        "req-backref",
        "Code?",
        json!({"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a|a)*\\1$"}}}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"], "validation_error");
    assert!(
        body.to_string()
            .contains("requestedSchema.properties.code.pattern"),
        "{body}"
    );
    server.stop().await;
}

async fn backtracking_pattern_answered_with_a_near_miss_stalls_nothing(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let near_miss = format!("{}!", "a".repeat(20_000));
    let (status, body) = post_question(
        &server,
        "s1",
        "req-nested",
        "Code?",
        json!({
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^(a+)+$", "default": near_miss}},
            "patternProperties": {"^(a+)+$": {"type": "string"}}
        }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let answered = tokio::time::timeout(
        StdDuration::from_secs(20),
        server.respond(
            &server.admin_key,
            "req-nested",
            json!({"action_type": "accept", "content": {"code": near_miss}}),
        ),
    )
    .await
    .expect("a near-miss answer is checked at once");
    assert_eq!(answered.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // The database was never locked for it: another session asks at once.
    let (status, _) = post_question(
        &server,
        "s2",
        "req-other",
        "Other?",
        json!({"type": "object"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    server.stop().await;
}

async fn unbounded_metric_labels_collapse_to_other(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    for n in 0..200 {
        let method = Method::from_bytes(format!("M{n:0>300}").as_bytes()).expect("method");
        let _ = server
            .http
            .request(method, server.url("/healthz"))
            .send()
            .await
            .expect("request");
    }
    let text = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("text");
    assert!(text.contains("method=\"other\""), "{text}");
    assert!(!text.contains("M000"), "no raw method name is a label");
    assert!(text.len() < 64 * 1024, "{} bytes", text.len());
    server.stop().await;
}

async fn metrics_are_closed_to_strangers_when_a_token_is_set(db: Backend) {
    let options = Settings {
        metrics_token: Some("scrape-secret".to_owned()),
        ..Settings::default()
    };
    let Some(server) = TestServer::start_with(db, options).await else {
        return;
    };
    let status = |key: Option<String>| {
        let mut request = server.http.get(server.url("/metrics"));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        async move { request.send().await.expect("GET /metrics").status() }
    };
    assert_eq!(status(None).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        status(Some(server.responder_key.clone())).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status(Some("scrape-secret".to_owned())).await,
        StatusCode::OK
    );
    assert_eq!(status(Some(server.admin_key.clone())).await, StatusCode::OK);
    server.stop().await;
}

async fn sign_in_flood_is_refused_at_once_with_retry_after(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let names: Vec<String> = (0..48).map(|n| format!("nobody-{n}")).collect();
    let shared = &server;
    let attempts = names.iter().map(|name| async move {
        post_form(
            shared,
            "/login",
            &[("username", name), ("password", "wrong password")],
        )
        .await
    });
    let replies = futures::future::join_all(attempts).await;
    let refused: Vec<_> = replies
        .iter()
        .filter(|reply| reply.status() == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert!(
        !refused.is_empty(),
        "more sign-ins at once than hashing threads"
    );
    assert!(
        refused
            .iter()
            .all(|reply| reply.headers().contains_key(header::RETRY_AFTER))
    );
    server.stop().await;
}

async fn first_run_setup_flood_is_refused_before_hashing(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    // Each guess that gets through hashes a password (tens of milliseconds in a debug build) while the budget
    // refills 5 a second, so the refusal comes some way after the burst of 30: at the 39th to 41st guess on a
    // two-core machine (40 tries failed there). 200 tries leave room for a machine several times slower.
    first_refusal(
        200,
        StatusCode::SEE_OTHER,
        "guessing setup links is limited like signing in",
        async |n| {
            let token = format!("arl_guess-{n}");
            post_form(
                &server,
                "/setup",
                &[
                    ("token", &token),
                    ("username", "mallory"),
                    ("password", "a long enough password"),
                ],
            )
            .await
        },
    )
    .await;
    server.stop().await;
}

async fn sign_in_limit_bypass_with_whitespace_is_one_bucket(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let attempt = async |username: &'static str, password: &'static str| {
        post_form(
            &server,
            "/login",
            &[("username", username), ("password", password)],
        )
        .await
    };
    // Spaces around the name are the same person and the same limit.
    let signed_in = attempt("   rita\t", PASSWORD).await;
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    assert_eq!(signed_in.headers()[header::LOCATION], "/");
    first_refusal(
        20,
        StatusCode::SEE_OTHER,
        "the per-name limit holds whatever the spacing",
        async |n| attempt(if n % 2 == 0 { " rita" } else { "rita " }, "wrong password").await,
    )
    .await;
    server.stop().await;
}

async fn open_redirect_and_newlines_in_next_go_home(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    for next in [
        "/\t/evil.example/phish",
        "/sessions/a\nSet-Cookie: x=1",
        "//evil.example",
    ] {
        let reply = post_form(
            &server,
            "/login",
            &[("username", "rita"), ("password", PASSWORD), ("next", next)],
        )
        .await;
        assert_eq!(reply.status(), StatusCode::SEE_OTHER, "{next:?}");
        assert_eq!(reply.headers()[header::LOCATION], "/", "{next:?}");
    }
    // A newline in the plain form post's hidden round field is a redirect with a message, not a 500.
    let cookie = sign_in(&server, "rita").await;
    let reply = browser()
        .post(server.url("/sessions/s1/answer"))
        .header(header::COOKIE, &cookie)
        .form(&[("round", "r\nX-Injected: 1"), ("action", "accept")])
        .send()
        .await
        .expect("POST answer");
    assert_eq!(reply.status(), StatusCode::SEE_OTHER);
    server.stop().await;
}

async fn stored_xss_in_every_producer_text_stays_text(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let reply = server
        .http
        .post(server.url("/api/v1/sessions"))
        .bearer_auth(&server.admin_key)
        .json(&json!({"id": "xss", "title": XSS, "agent": XSS}))
        .send()
        .await
        .expect("POST session");
    assert_eq!(reply.status(), StatusCode::CREATED);
    let token = reply.json::<Value>().await.expect("JSON")["producer_token"]
        .as_str()
        .expect("token")
        .to_owned();
    let url = server.url(&format!("/api/v1/s/{token}/elicitations"));
    let client = PulsemcpClient::new(&url, &url, Some("xss"));
    let schema = json!({
        "type": "object",
        "properties": {
            "env": {"type": "string", "title": XSS, "description": XSS, "enum": ["a", "b"], "enumNames": [XSS, "</script><script>alert(2)</script>"]},
            "note": {"type": "string", "title": "</script><script>alert(3)</script>", "default": XSS}
        }
    });
    let body = client.body("req-xss", XSS, schema, XSS, &expires_in_an_hour());
    client.create("req-xss", &body).await.expect("question");
    let cookie = sign_in(&server, "rita").await;
    for path in ["/", "/sessions/xss"] {
        let reply = browser()
            .get(server.url(path))
            .header(header::COOKIE, &cookie)
            .send()
            .await
            .expect("GET page");
        let headers = reply.headers().clone();
        let html = reply.text().await.expect("HTML");
        assert!(html.contains("Deploy"), "{path} shows the title");
        assert!(!html.contains("<img src=x"), "{path}: {html}");
        assert!(!html.contains("<script>alert"), "{path}: {html}");
        let policy = headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .expect("policy");
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        let nonce = policy
            .split("'nonce-")
            .nth(1)
            .and_then(|rest| rest.split('\'').next())
            .expect("a nonce for the page's own scripts");
        assert!(html.contains(&format!("nonce=\"{nonce}\"")), "{path}");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(headers[header::REFERRER_POLICY], "same-origin");
    }
    server.stop().await;
}

/// A response held up by the database past its budget is a 503 naming the route, never a silent hang; and the
/// server answers again once the lock is gone.
async fn a_response_stuck_on_the_database_is_a_503_not_a_hang(db: Backend) {
    let options = Settings {
        connections: anteroom_server::state::ConnectionLimits {
            response_timeout: StdDuration::from_secs(1),
            ..Default::default()
        },
        ..Settings::default()
    };
    let Some(server) = TestServer::start_with(db, options).await else {
        return;
    };
    let register = |id: &str| {
        server
            .http
            .post(server.url("/api/v1/sessions"))
            .bearer_auth(&server.admin_key)
            .json(&json!({"id": id}))
            .send()
    };
    let lock = server.lock_database().await;
    let started = std::time::Instant::now();
    let stuck = register("s-stuck").await.expect("a response, not a hang");
    let waited = started.elapsed();
    assert_eq!(stuck.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = stuck.json().await.expect("a JSON error");
    assert_eq!(body["error"], "unavailable", "{body}");
    assert!(
        waited < StdDuration::from_secs(4),
        "answered at its 1 s budget, not the database's own timeout: {waited:?}"
    );
    drop(lock);
    let after = register("s-after").await.expect("POST");
    assert_eq!(after.status(), StatusCode::CREATED);
    server.stop().await;
}

async fn slowloris_connections_are_shed_at_the_header_timeout(db: Backend) {
    let options = Settings {
        connections: anteroom_server::state::ConnectionLimits {
            max_connections: 8,
            header_read_timeout: StdDuration::from_secs(1),
            ..Default::default()
        },
        ..Settings::default()
    };
    let Some(server) = TestServer::start_with(db, options).await else {
        return;
    };
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut slow = Vec::new();
    for _ in 0..8 {
        let mut stream = TcpStream::connect(&address).await.expect("connect");
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .expect("partial headers");
        slow.push(stream);
    }
    // Every slot is held by a slow client; a normal request waits for the first to be shed, not for ever.
    let started = Instant::now();
    let healthz = tokio::time::timeout(
        StdDuration::from_secs(10),
        server.http.get(server.url("/healthz")).send(),
    )
    .await
    .expect("answered once a slow connection is shed")
    .expect("GET /healthz");
    assert_eq!(healthz.status(), StatusCode::OK);
    assert!(started.elapsed() < StdDuration::from_secs(5));
    for mut stream in slow {
        let mut buffer = [0_u8; 512];
        let read = tokio::time::timeout(StdDuration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("the server closes a connection that never finishes its headers");
        assert!(
            matches!(read, Ok(0) | Err(_)) || buffer.starts_with(b"HTTP/1.1 408"),
            "{read:?}"
        );
    }
    server.stop().await;
}

async fn url_mode_host_spoofing_is_refused(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    for url in [
        "https://evil.example\\@docs.github.com/login",
        "https://docs.github.com@evil.example/login",
    ] {
        let reply = server
            .http
            .post(server.url(&format!("/api/v1/s/{}/rounds", env.token)))
            .json(&json!({
                "logical_operation_id": "op-1",
                "operation_kind": "tool",
                "operation_name": "login",
                "requests": {"r1": {"mode": "url", "message": "Sign in", "url": url, "elicitationId": "e1"}}
            }))
            .send()
            .await
            .expect("POST round");
        assert_eq!(reply.status(), StatusCode::UNPROCESSABLE_ENTITY, "{url}");
    }
    server.stop().await;
}

async fn managed_rounds_route_flood_is_rate_limited(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    first_refusal(
        60,
        StatusCode::CREATED,
        "a flood of rounds is limited like a flood of questions",
        async |n| {
            server
                .http
                .post(server.url(&format!("/api/v1/s/{}/rounds", env.token)))
                .json(&json!({
                    "logical_operation_id": format!("op-{n}"),
                    "operation_kind": "tool",
                    "operation_name": "deploy",
                    "requests": {"r1": {"mode": "form", "message": "Go?", "requestedSchema": {"type": "object"}}}
                }))
                .send()
                .await
                .expect("POST round")
        },
    )
    .await;
    server.stop().await;
}

async fn a_session_page_pages_its_history(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let env = server.session("busy").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("busy"));
    for n in 0..55 {
        let id = format!("req-{n}");
        let body = client.body(
            &id,
            "Go?",
            json!({"type": "object"}),
            "deploy",
            &expires_in_an_hour(),
        );
        if let Err(failed) = client.create(&id, &body).await {
            panic!("question {n}: {failed:?}");
        }
        server.clock.advance(Duration::milliseconds(10));
        if n % 25 == 24 {
            // Stay under the per-session create limit (5 a second, bursts of 30).
            tokio::time::sleep(StdDuration::from_secs(5)).await;
        }
    }
    let cookie = sign_in(&server, "rita").await;
    let (status, first) = page(&server, "/sessions/busy", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first.matches("class=\"history-entry\"").count(), 50);
    let older = first
        .split("data-testid=\"history-older\"")
        .next()
        .and_then(|before| before.rsplit("href=\"").next())
        .and_then(|href| href.split('"').next())
        .expect("a link to older questions")
        .replace("&amp;", "&");
    let (status, second) = page(&server, &older, &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(second.matches("class=\"history-entry\"").count(), 5);
    assert!(!second.contains("data-testid=\"history-older\""));
    server.stop().await;
}

async fn last_event_id_at_the_top_of_the_range_resyncs(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut reply = server
        .http
        .get(server.url("/api/v1/events"))
        .bearer_auth(&server.viewer_key)
        .header("Last-Event-ID", "18446744073709551615")
        .send()
        .await
        .expect("GET events");
    assert_eq!(reply.status(), StatusCode::OK);
    let chunk = tokio::time::timeout(StdDuration::from_secs(5), reply.chunk())
        .await
        .expect("the stream speaks")
        .expect("chunk")
        .expect("some bytes");
    assert!(
        String::from_utf8_lossy(&chunk).contains("resync"),
        "{chunk:?}"
    );
    server.stop().await;
}

async fn nul_characters_are_refused_with_422_on_every_backend(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (status, body) = post_question(
        &server,
        "s1",
        "req-nul",
        "Go\u{0}?",
        json!({"type": "object"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"], "validation_error");
    let env = server.session("s2").await;
    let poll = server
        .http
        .get(format!("{}/req%00x", env.poll_url))
        .send()
        .await
        .expect("GET poll");
    assert_eq!(poll.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = post_question(
        &server,
        "s3",
        "req-ok",
        "Go?",
        json!({"type": "object", "properties": {"x": {"type": "string"}}}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let answer = server
        .respond(
            &server.admin_key,
            "req-ok",
            json!({"action_type": "accept", "content": {"x": "a\u{0}b"}}),
        )
        .await;
    assert_eq!(answer.status(), StatusCode::UNPROCESSABLE_ENTITY);
    server.stop().await;
}

on_both_backends!(
    a_response_stuck_on_the_database_is_a_503_not_a_hang,
    backtracking_patterns_are_refused_at_create_naming_the_property,
    backtracking_pattern_answered_with_a_near_miss_stalls_nothing,
    unbounded_metric_labels_collapse_to_other,
    metrics_are_closed_to_strangers_when_a_token_is_set,
    sign_in_flood_is_refused_at_once_with_retry_after,
    first_run_setup_flood_is_refused_before_hashing,
    sign_in_limit_bypass_with_whitespace_is_one_bucket,
    open_redirect_and_newlines_in_next_go_home,
    stored_xss_in_every_producer_text_stays_text,
    slowloris_connections_are_shed_at_the_header_timeout,
    url_mode_host_spoofing_is_refused,
    managed_rounds_route_flood_is_rate_limited,
    a_session_page_pages_its_history,
    last_event_id_at_the_top_of_the_range_resyncs,
    nul_characters_are_refused_with_422_on_every_backend,
);
