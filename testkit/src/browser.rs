//! A browser over real HTTP for tests: people made with the real `add_user`, the sign-in form, pages read with
//! the session cookie, redirects shown rather than followed.

use anteroom_server::people::add_user;
use anteroom_store::domain::access::{Role, User};
use reqwest::{StatusCode, header};

use super::TestServer;

pub const PASSWORD: &str = "a long enough password";

/// A client that shows redirects instead of following them.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        // A page that never finishes fails its test instead of hanging the run.
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("client")
}

/// The value of the first `name="…" value="…"` input in `html` (a form's hidden CSRF token, say).
pub fn input_value(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker).map(|at| at + marker.len()).expect(name);
    html.get(start..)
        .and_then(|rest| rest.split('"').next())
        .expect("value")
        .to_owned()
}

/// Posts a form as a browser without a session would (redirects shown, not followed).
pub async fn post_form(
    server: &TestServer,
    path: &str,
    pairs: &[(&str, &str)],
) -> reqwest::Response {
    browser()
        .post(server.url(path))
        .form(pairs)
        .send()
        .await
        .unwrap_or_else(|error| panic!("POST {path}: {error}"))
}

/// Adds a person with the test password; returns them.
pub async fn person(server: &TestServer, username: &str, role: Role) -> User {
    add_user(server.store.as_ref(), username, PASSWORD, role)
        .await
        .expect("add user")
}

/// Signs in with the form; returns the `Cookie` header value of the browser session.
pub async fn sign_in(server: &TestServer, username: &str) -> String {
    let reply = post_form(
        server,
        "/login",
        &[
            ("username", username),
            ("password", PASSWORD),
            ("next", "/"),
        ],
    )
    .await;
    assert_eq!(reply.status(), StatusCode::SEE_OTHER);
    assert_eq!(reply.headers()[header::LOCATION], "/");
    let cookie = reply.headers()[header::SET_COOKIE]
        .to_str()
        .expect("cookie")
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/"] {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
    cookie.split(';').next().expect("name=value").to_owned()
}

pub async fn page(server: &TestServer, path: &str, cookie: &str) -> (StatusCode, String) {
    let reply = browser()
        .get(server.url(path))
        .header(header::COOKIE, cookie)
        .send()
        .await
        .expect("GET page");
    (reply.status(), reply.text().await.expect("body"))
}

/// Reads `stream` until an SSE event named `name` arrives (5 s at most); its `data` line.
pub async fn next_event(stream: &mut reqwest::Response, buffer: &mut String, name: &str) -> String {
    let wanted = format!("event: {name}\n");
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            if event.starts_with(&wanted) || event.contains(&format!("\n{wanted}")) {
                return event
                    .lines()
                    .find_map(|line| line.strip_prefix("data: "))
                    .unwrap_or_default()
                    .to_owned();
            }
        }
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(5), stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("no `{name}` event within 5 s"))
            .expect("chunk")
            .expect("the stream is open");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// `count` signed-in page streams (`/fn/live`, as the browser opens it) with `cookie`, each past its `ready`
/// event: the stream and what was read of it beyond that.
pub async fn open_live_pages(
    server: &TestServer,
    cookie: &str,
    count: usize,
) -> Vec<(reqwest::Response, String)> {
    let mut pages = Vec::new();
    for _ in 0..count {
        let mut stream = browser()
            .get(server.url("/fn/live"))
            .header(header::COOKIE, cookie)
            .send()
            .await
            .expect("GET /fn/live");
        assert_eq!(stream.status(), StatusCode::OK);
        let mut buffer = String::new();
        assert_eq!(
            next_event(&mut stream, &mut buffer, "ready").await,
            "connected"
        );
        pages.push((stream, buffer));
    }
    pages
}
