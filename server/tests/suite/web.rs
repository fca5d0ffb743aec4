//! The browser side over real HTTP, on SQLite and PostgreSQL: signing in (sessions kept in the database),
//! cross-site posts refused, answering by plain form post, and the API and event stream for a signed-in person.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use anteroom_testkit::{self as support, on_both_backends};

use anteroom_domain::access::Role;
use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use support::{
    Backend, TestServer,
    browser::{
        PASSWORD, browser, input_value, next_event, open_live_pages, page, person, post_form,
        sign_in,
    },
    pulsemcp::{Outcome, PulsemcpClient},
};

/// A session with one open question; returns the producer client and the question's id.
async fn question(server: &TestServer, session: &str) -> (PulsemcpClient, String) {
    let env = server.session(session).await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let schema = json!({
        "type": "object",
        "properties": {"env": {"type": "string", "enum": ["dev", "prod"]}, "replicas": {"type": "integer", "maximum": 5}},
        "required": ["env"]
    });
    let expires = (support::start_time() + chrono::Duration::hours(1)).to_rfc3339();
    let body = client.body("q-1", "Which environment?", schema, "deploy", &expires);
    let id = client.create("q-1", &body).await.expect("question created");
    (client, id)
}

// ---------------------------------------------------------------------------------------------------------

async fn people_sign_in_and_their_session_lives_in_the_database(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;

    let anonymous = browser()
        .get(server.url("/sessions/x"))
        .send()
        .await
        .expect("GET");
    assert_eq!(anonymous.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        anonymous.headers()[header::LOCATION],
        "/login?next=%2Fsessions%2Fx"
    );

    let wrong = post_form(
        &server,
        "/login",
        &[("username", "rita"), ("password", "nope nope nope")],
    )
    .await;
    assert_eq!(wrong.status(), StatusCode::SEE_OTHER);
    assert!(
        wrong.headers()[header::LOCATION]
            .to_str()
            .expect("location")
            .starts_with("/login?error=invalid")
    );

    let cookie = sign_in(&server, "rita").await;
    let id = cookie.split_once('=').expect("cookie").1;
    let stored = server
        .store
        .load_web_session(id)
        .await
        .expect("read")
        .expect("the browser session is in the database");
    assert!(stored.0.contains("user_id"), "{}", stored.0);

    let (status, html) = page(&server, "/", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("rita"), "the header names who is signed in");

    // Signing out deletes it.
    let csrf = input_value(&html, "csrf");
    let out = browser()
        .post(server.url("/logout"))
        .header(header::COOKIE, &cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .expect("POST /logout");
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    assert_eq!(server.store.load_web_session(id).await.expect("read"), None);
    let (status, _) = page(&server, "/", &cookie).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    server.stop().await;
}

async fn posts_from_another_site_are_refused(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let forged = browser()
        .post(server.url("/login"))
        .header(header::ORIGIN, "https://evil.example")
        .form(&[("username", "rita"), ("password", PASSWORD)])
        .send()
        .await
        .expect("POST /login");
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);

    let cookie = sign_in(&server, "rita").await;
    let logout = browser()
        .post(server.url("/logout"))
        .header(header::COOKIE, &cookie)
        .form(&[("csrf", "not the token")])
        .send()
        .await
        .expect("POST /logout");
    assert_eq!(logout.status(), StatusCode::FORBIDDEN);
    server.stop().await;
}

async fn a_plain_form_post_answers_and_records_who_answered(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    person(&server, "vic", Role::Viewer).await;
    let (producer, id) = question(&server, "web-form").await;

    // A viewer's post is refused and changes nothing.
    let viewer = sign_in(&server, "vic").await;
    let (_, html) = page(&server, "/sessions/web-form", &viewer).await;
    let round = input_value(&html, "round");
    let refused = browser()
        .post(server.url("/sessions/web-form/answer"))
        .header(header::COOKIE, &viewer)
        .form(&[
            ("round", round.as_str()),
            ("csrf", input_value(&html, "csrf").as_str()),
            ("attempt", "a1"),
            ("action", "accept"),
            ("q-1/env", "prod"),
        ])
        .send()
        .await
        .expect("POST answer");
    assert_eq!(refused.status(), StatusCode::SEE_OTHER);
    let (_, html) = page(&server, "/sessions/web-form", &viewer).await;
    assert!(html.contains("You have the viewer role"), "{html}");
    assert_eq!(producer.poll(&id).await.expect("poll"), Outcome::Pending);

    // An invalid value is refused with the field's message; a valid one is recorded under the username.
    let rita = sign_in(&server, "rita").await;
    let (_, html) = page(&server, "/sessions/web-form", &rita).await;
    let csrf = input_value(&html, "csrf");
    let post = |replicas: &'static str| {
        browser()
            .post(server.url("/sessions/web-form/answer"))
            .header(header::COOKIE, &rita)
            .form(&[
                ("round", round.as_str()),
                ("csrf", csrf.as_str()),
                ("attempt", "a2"),
                ("action", "accept"),
                ("q-1/env", "prod"),
                ("q-1/replicas", replicas),
            ])
            .send()
    };
    let reply = post("9").await.expect("POST answer");
    assert_eq!(reply.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        reply.headers()[header::LOCATION],
        format!("/sessions/web-form#round-{round}").as_str()
    );
    let (_, html) = page(&server, "/sessions/web-form", &rita).await;
    assert!(html.contains("must be at most 5"), "{html}");
    post("2").await.expect("POST answer");
    let (_, html) = page(&server, "/sessions/web-form", &rita).await;
    assert!(html.contains("Your answer was recorded"), "{html}");

    assert_eq!(
        producer.poll(&id).await.expect("poll"),
        Outcome::Accept(Some(json!({"env": "prod", "replicas": 2})))
    );
    let rounds = server
        .get_json("/api/v1/sessions/web-form/rounds", &server.admin_key)
        .await;
    assert_eq!(rounds["rounds"][0]["responded_by"], "rita", "{rounds}");
    assert_eq!(
        rounds["rounds"][0]["responses"]["q-1"]["content"],
        json!({"env": "prod", "replicas": 2})
    );
    server.stop().await;
}

async fn a_signed_in_browser_reads_the_event_stream_and_writes_only_with_its_csrf_token(
    db: Backend,
) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let (producer, id) = question(&server, "web-api").await;
    let cookie = sign_in(&server, "rita").await;

    let mut stream = browser()
        .get(server.url("/api/v1/events"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .expect("GET events");
    assert_eq!(stream.status(), StatusCode::OK);
    let first = stream.chunk().await.expect("chunk").expect("some bytes");
    assert!(String::from_utf8_lossy(&first).contains("event: ready"));
    drop(stream);

    let respond = |token: Option<String>| {
        let mut request = browser()
            .patch(server.url(&format!("/api/v1/elicitations/{id}/respond")))
            .header(header::COOKIE, &cookie)
            .json(&json!({"action_type": "decline"}));
        if let Some(token) = token {
            request = request.header("x-csrf-token", token);
        }
        request.send()
    };
    let without = respond(None).await.expect("PATCH");
    assert_eq!(without.status(), StatusCode::FORBIDDEN);
    let body: Value = without.json().await.expect("JSON error");
    assert_eq!(body["error"], "forbidden");

    let (_, html) = page(&server, "/", &cookie).await;
    let with = respond(Some(input_value(&html, "csrf")))
        .await
        .expect("PATCH");
    assert_eq!(with.status(), StatusCode::OK);
    let body: Value = with.json().await.expect("JSON");
    assert_eq!(body["answered_by"], "rita");
    assert_eq!(producer.poll(&id).await.expect("poll"), Outcome::Decline);
    server.stop().await;
}

async fn every_open_page_gets_the_queue_from_one_reading_per_change(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let anonymous = browser()
        .get(server.url("/fn/live"))
        .send()
        .await
        .expect("GET /fn/live");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let body: Value = anonymous.json().await.expect("JSON error");
    assert_eq!(body["error"], "unauthorized");

    person(&server, "rita", Role::Responder).await;
    let (_producer, _id) = question(&server, "live-pages").await;
    let cookie = sign_in(&server, "rita").await;
    let mut pages = open_live_pages(&server, &cookie, 3).await;

    // What one reading of the queue costs, read directly.
    let services = anteroom_server::pages::services(&server.state);
    let before = server.store.round_trips();
    services.queue().await.expect("queue");
    let one_reading = server.store.round_trips() - before;
    assert!(one_reading >= 1);

    let before = server.store.round_trips();
    server.state.events.publish(
        anteroom_server::events::EventKind::SessionChanged,
        "live-pages",
        None,
        None,
    );
    for (stream, buffer) in &mut pages {
        let view: Value = serde_json::from_str(&next_event(stream, buffer, "queue").await)
            .expect("the queue as JSON");
        let item = &view["items"][0];
        assert_eq!(item["session_id"], "live-pages");
        assert_eq!(item["question"]["message"], "Which environment?");
    }
    // Three pages, one reading.
    assert_eq!(server.store.round_trips() - before, one_reading);
    server.stop().await;
}

/// A person sees the browsers they are signed in on, "this browser" among them, and signs another one out; an
/// admin's `anteroom user sign-out` ends the rest.
async fn a_person_sees_their_browsers_and_signs_one_out(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let laptop = sign_in(&server, "rita").await;
    let phone = sign_in(&server, "rita").await;
    let visit = |cookie: &str, agent: &'static str| {
        browser()
            .get(server.url("/profile"))
            .header(header::COOKIE, cookie.to_owned())
            .header(header::USER_AGENT, agent)
            .send()
    };
    // A browser's pages note what it is (the session is written after the page, so it is listed from the next).
    visit(&phone, "Phone Browser/1.0").await.expect("GET");
    visit(&laptop, "Laptop <b>Browser</b>/2.0")
        .await
        .expect("GET");
    let html = visit(&laptop, "Laptop <b>Browser</b>/2.0")
        .await
        .expect("GET")
        .text()
        .await
        .expect("page");
    assert!(html.contains("Phone Browser/1.0"), "{html}");
    assert!(
        html.contains("Laptop &lt;b&gt;Browser&lt;/b&gt;/2.0"),
        "escaped: {html}"
    );
    assert_eq!(html.matches("(this browser)").count(), 1);
    let rows: Vec<&str> = html.split("<li>").skip(1).collect();
    let phone_row = rows
        .iter()
        .find(|row| row.contains("Phone Browser"))
        .expect("the phone's row");
    let handle = input_value(phone_row, "handle");
    assert!(!phone.contains(&handle), "a handle is not the session's id");
    let csrf = input_value(&html, "csrf");
    let ended = browser()
        .post(server.url("/profile/sign-ins/end"))
        .header(header::COOKIE, &laptop)
        .form(&[("handle", handle.as_str()), ("csrf", csrf.as_str())])
        .send()
        .await
        .expect("POST");
    assert_eq!(ended.headers()[header::LOCATION], "/profile");
    assert_eq!(
        page(&server, "/", &phone).await.0,
        StatusCode::SEE_OTHER,
        "the phone is signed out"
    );
    assert_eq!(
        page(&server, "/", &laptop).await.0,
        StatusCode::OK,
        "the laptop is not"
    );

    // Without the page's CSRF token nothing is ended.
    let forged = browser()
        .post(server.url("/profile/sign-ins/end"))
        .header(header::COOKIE, &laptop)
        .form(&[("handle", handle.as_str()), ("csrf", "guess")])
        .send()
        .await
        .expect("POST");
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);

    let (rita, _) = server
        .store
        .user_with_password("rita")
        .await
        .expect("read")
        .expect("rita");
    assert_eq!(
        server
            .store
            .end_every_browser_sign_in(&rita.id)
            .await
            .expect("all"),
        1
    );
    assert_eq!(page(&server, "/", &laptop).await.0, StatusCode::SEE_OTHER);
    server.stop().await;
}

on_both_backends!(
    a_person_sees_their_browsers_and_signs_one_out,
    people_sign_in_and_their_session_lives_in_the_database,
    posts_from_another_site_are_refused,
    a_plain_form_post_answers_and_records_who_answered,
    a_signed_in_browser_reads_the_event_stream_and_writes_only_with_its_csrf_token,
    every_open_page_gets_the_queue_from_one_reading_per_change,
);

/// Building an instance walks the app's routes, and a page resource first polled during a walk used to wait
/// forever (leptos-rs/leptos#4773): the routes are walked once per process, so pages keep answering while more
/// instances start beside them, as they do in these tests and in the benchmark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_keep_answering_while_other_instances_start() {
    let Some(server) = TestServer::start(Backend::Sqlite).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let cookie = sign_in(&server, "rita").await;
    let starting = AtomicBool::new(true);
    let pages = async {
        let mut answered = 0;
        while starting.load(Ordering::Relaxed) {
            let (status, html) =
                tokio::time::timeout(Duration::from_secs(10), page(&server, "/", &cookie))
                    .await
                    .unwrap_or_else(|_| {
                        panic!("page {answered} did not answer within 10 s while instances started")
                    });
            assert_eq!(status, StatusCode::OK);
            assert!(html.contains("rita"), "the header shows who is signed in");
            answered += 1;
        }
        answered
    };
    let starts = async {
        for _ in 0..20 {
            let other = TestServer::start(Backend::Sqlite)
                .await
                .expect("another instance");
            other.stop().await;
        }
        starting.store(false, Ordering::Relaxed);
    };
    let (answered, ()) = tokio::join!(pages, starts);
    assert!(answered > 20, "only {answered} pages were asked for");
    server.stop().await;
}
