//! Sign-in through a real OpenID Connect provider (npm `oidc-provider` on loopback, `wrap/tests/sdk/
//! oidc_provider.mjs`), over real HTTP on SQLite and PostgreSQL: a person made at first sign-in with the role
//! and groups their provider groups map to, the groups read again when the sign-in has lasted its time, and
//! the attacks on the callback refused with a clear page.

use std::{
    collections::{BTreeMap, HashMap},
    process::Stdio,
    time::Duration as StdDuration,
};

use anteroom_domain::access::Role;
use anteroom_server::{
    instance::Settings,
    pages::{ProviderConfig, SignInConfig},
};
use anteroom_testkit::{Backend, TestServer};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

const CLIENT_ID: &str = "anteroom";
const CLIENT_SECRET: &str = "a-test-client-secret-of-enough-length";

/// The provider process, and its issuer URL.
struct IdentityProvider {
    _process: Child,
    issuer: String,
}

impl IdentityProvider {
    async fn start(accounts: &Value) -> Self {
        let folder = std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
            "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
        );
        let mut process = Command::new("node")
            .arg(format!("{folder}/oidc_provider.mjs"))
            .env("OIDC_TEST_ACCOUNTS", accounts.to_string())
            .current_dir(&folder)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("run the OpenID provider");
        let mut lines = BufReader::new(process.stdout.take().expect("stdout")).lines();
        let line = tokio::time::timeout(StdDuration::from_secs(30), lines.next_line())
            .await
            .expect("the provider starts within 30 s")
            .expect("read")
            .expect("a line");
        let started: Value = serde_json::from_str(&line).expect("JSON");
        Self {
            _process: process,
            issuer: started["issuer"].as_str().expect("issuer").to_owned(),
        }
    }

    async fn put(&self, path: &str, body: &Value) {
        let reply = reqwest::Client::new()
            .put(format!("{}{path}", self.issuer))
            .json(body)
            .send()
            .await
            .expect("PUT to the provider");
        assert_eq!(reply.status(), StatusCode::NO_CONTENT, "{path}");
    }

    /// Registers the Anteroom at `server` as the provider's one client.
    async fn register(&self, server: &TestServer) {
        let body = json!({
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "redirect_uri": server.url("/auth/oidc/callback"),
        });
        self.put("/test/client", &body).await;
    }
}

/// The settings of an Anteroom that signs people in through `issuer`.
fn settings(issuer: &str, mapping: &str, default_role: &str) -> Settings {
    Settings {
        sign_in: SignInConfig {
            provider: Some(ProviderConfig {
                issuer: issuer.to_owned(),
                client_id: CLIENT_ID.to_owned(),
                client_secret: CLIENT_SECRET.to_owned(),
                scopes: "openid email profile groups".to_owned(),
                groups_claim: "groups".to_owned(),
                mapping: mapping.to_owned(),
                default_role: default_role.to_owned(),
                name: "Acme SSO".to_owned(),
                recheck_minutes: 60,
                answer_elsewhere_hours: 168,
                prompt: None,
                max_age_minutes: None,
            }),
            passwords: true,
        },
        ..Settings::default()
    }
}

/// A browser: redirects shown, not followed; cookies kept per port (the provider and Anteroom both live on
/// 127.0.0.1).
struct Browser {
    client: reqwest::Client,
    jar: HashMap<u16, BTreeMap<String, String>>,
}

impl Browser {
    fn new() -> Self {
        Self {
            client: anteroom_testkit::browser::browser(),
            jar: HashMap::new(),
        }
    }

    fn port(url: &str) -> u16 {
        reqwest::Url::parse(url)
            .expect("URL")
            .port_or_known_default()
            .expect("port")
    }

    fn cookie(&self, url: &str) -> String {
        self.jar
            .get(&Self::port(url))
            .map(|cookies| {
                cookies
                    .iter()
                    .map(|(name, value)| format!("{name}={value}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default()
    }

    fn keep(&mut self, url: &str, reply: &reqwest::Response) {
        let cookies = self.jar.entry(Self::port(url)).or_default();
        for set in reply.headers().get_all(header::SET_COOKIE) {
            let set = set.to_str().expect("cookie");
            let pair = set.split(';').next().unwrap_or_default();
            if let Some((name, value)) = pair.split_once('=') {
                cookies.insert(name.trim().to_owned(), value.trim().to_owned());
            }
        }
    }

    async fn get(&mut self, url: &str) -> reqwest::Response {
        let reply = self
            .client
            .get(url)
            .header(header::COOKIE, self.cookie(url))
            .send()
            .await
            .unwrap_or_else(|error| panic!("GET {url}: {error}"));
        self.keep(url, &reply);
        reply
    }

    async fn post_form(&mut self, url: &str, pairs: &[(&str, &str)]) -> reqwest::Response {
        let reply = self
            .client
            .post(url)
            .header(header::COOKIE, self.cookie(url))
            .form(pairs)
            .send()
            .await
            .unwrap_or_else(|error| panic!("POST {url}: {error}"));
        self.keep(url, &reply);
        reply
    }

    /// GETs `url` and follows redirects until one leads to `stop_at` (not fetched) or a page answers; returns
    /// that URL, or the page's URL and reply.
    async fn follow(&mut self, url: &str, stop_at: &str) -> (String, Option<reqwest::Response>) {
        let mut url = url.to_owned();
        for _ in 0..20 {
            if url.starts_with(stop_at) {
                return (url, None);
            }
            let reply = self.get(&url).await;
            if !reply.status().is_redirection() {
                return (url, Some(reply));
            }
            let location = reply.headers()[header::LOCATION]
                .to_str()
                .expect("location");
            url = reqwest::Url::parse(&url)
                .and_then(|base| base.join(location))
                .expect("redirect URL")
                .to_string();
        }
        panic!("more than 20 redirects");
    }
}

/// Starts a sign-in at Anteroom and goes through the provider (its login form when it does not know the
/// browser yet) up to Anteroom's callback; returns the callback URL, not yet fetched.
async fn through_the_provider(
    browser: &mut Browser,
    server: &TestServer,
    login: &str,
    next: &str,
) -> String {
    let start = format!(
        "{}?next={}",
        server.url("/auth/oidc/start"),
        form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
    );
    let callback = server.url("/auth/oidc/callback");
    let (url, page) = browser.follow(&start, &callback).await;
    let Some(page) = page else {
        return url;
    };
    let html = page.text().await.expect("the provider's login page");
    let action = html
        .split("action=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("a login form: {html}"))
        .replace("&amp;", "&");
    let action = reqwest::Url::parse(&url)
        .and_then(|base| base.join(&action))
        .expect("form URL")
        .to_string();
    let posted = browser
        .post_form(
            &action,
            &[("prompt", "login"), ("login", login), ("password", "any")],
        )
        .await;
    assert!(posted.status().is_redirection(), "{}", posted.status());
    let location = posted.headers()[header::LOCATION]
        .to_str()
        .expect("location");
    let resume = reqwest::Url::parse(&action)
        .and_then(|base| base.join(location))
        .expect("URL")
        .to_string();
    let (url, page) = browser.follow(&resume, &callback).await;
    assert!(page.is_none(), "the provider sent the browser back");
    url
}

/// Signs in all the way: through the provider, then Anteroom's callback; returns the callback's reply.
async fn sign_in(
    browser: &mut Browser,
    server: &TestServer,
    login: &str,
    next: &str,
) -> reqwest::Response {
    let callback = through_the_provider(browser, server, login, next).await;
    browser.get(&callback).await
}

async fn role_and_groups(server: &TestServer, username: &str) -> (Role, Vec<String>) {
    let (user, _) = server
        .store
        .user_with_password(username)
        .await
        .expect("read")
        .expect("the person");
    let signed_in = server
        .store
        .signed_in(&user.id)
        .await
        .expect("read")
        .expect("the person");
    (signed_in.user.role, signed_in.groups)
}

fn accounts() -> Value {
    json!({
        "alice": {"email": "alice@example.com", "email_verified": true, "preferred_username": "alice", "groups": ["sre"]},
        "bob": {"email": "bob@example.com", "email_verified": true, "preferred_username": "bob", "groups": ["finance"]},
    })
}

async fn the_providers_groups_decide_the_role_and_are_read_again(db: Backend) {
    let provider = IdentityProvider::start(&accounts()).await;
    let Some(server) = TestServer::start_with(
        db,
        settings(
            &provider.issuer,
            "sre=responder:sre, platform=admin",
            "viewer",
        ),
    )
    .await
    else {
        return;
    };
    provider.register(&server).await;
    // Alice already has a local account here, her e-mail set by an admin, and signs in with her password.
    anteroom_testkit::browser::person(&server, "alice", Role::Viewer).await;
    let (local, _) = server
        .store
        .user_with_password("alice")
        .await
        .expect("read")
        .expect("alice");
    server
        .store
        .set_user_email(&local.id, Some("alice@example.com"))
        .await
        .expect("email");
    assert!(
        server
            .store
            .vouch_for_email(&local.id)
            .await
            .expect("vouch")
    );
    let password = || {
        anteroom_testkit::browser::post_form(
            &server,
            "/login",
            &[
                ("username", "alice"),
                ("password", anteroom_testkit::browser::PASSWORD),
                ("next", "/"),
            ],
        )
    };
    assert_eq!(password().await.headers()[header::LOCATION], "/");
    let mut browser = Browser::new();

    let login = browser.get(&server.url("/login?next=/sessions/s1")).await;
    let html = login.text().await.expect("sign-in page");
    assert!(
        html.contains("href=\"/auth/oidc/start?next=%2Fsessions%2Fs1\"")
            && html.contains("Acme SSO"),
        "{html}"
    );

    let signed_in = sign_in(&mut browser, &server, "alice", "/sessions/s1").await;
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    assert_eq!(signed_in.headers()[header::LOCATION], "/sessions/s1");
    assert_eq!(
        role_and_groups(&server, "alice").await,
        (Role::Responder, vec!["sre".to_owned()])
    );
    // Linked by her vouched e-mail: the same person, whose password no longer signs in (her rights come from
    // the provider now and must not outlive it).
    let (linked, _) = server
        .store
        .user_with_password("alice")
        .await
        .expect("read")
        .expect("alice");
    assert_eq!(linked.id, local.id);
    assert_eq!(
        password().await.headers()[header::LOCATION],
        "/login?error=invalid&next=%2F"
    );
    let home = browser.get(&server.url("/")).await;
    assert_eq!(home.status(), StatusCode::OK, "signed in");

    // Bob is in no mapped group: a viewer, in no group.
    let mut bobs = Browser::new();
    sign_in(&mut bobs, &server, "bob", "/").await;
    assert_eq!(
        role_and_groups(&server, "bob").await,
        (Role::Viewer, Vec::new())
    );

    // Alice leaves the provider's sre group. Within the hour her sign-in keeps what it had; after it, her
    // next page sends her through the provider again, which knows her browser and sends her straight back
    // with her groups as they are now.
    let mut moved = accounts()["alice"].clone();
    moved["groups"] = json!(["platform"]);
    provider.put("/test/accounts/alice", &moved).await;
    server.clock.advance(chrono::Duration::minutes(61));
    let page = browser.get(&server.url("/?show=all")).await;
    assert_eq!(page.status(), StatusCode::SEE_OTHER);
    let location = page.headers()[header::LOCATION]
        .to_str()
        .expect("location")
        .to_owned();
    assert_eq!(location, "/auth/oidc/start?next=%2F%3Fshow%3Dall");
    let callback = server.url("/auth/oidc/callback");
    let (url, page) = browser.follow(&server.url(&location), &callback).await;
    assert!(
        page.is_none(),
        "no login form: the provider still knows the browser"
    );
    let back = browser.get(&url).await;
    assert_eq!(back.headers()[header::LOCATION], "/?show=all");
    assert_eq!(
        role_and_groups(&server, "alice").await,
        (Role::Admin, Vec::new())
    );
    assert_eq!(server.store.count_users().await.expect("count"), 2);
    server.stop().await;
}

async fn attacks_on_the_callback_are_refused(db: Backend) {
    let mut accounts = accounts();
    let many: Vec<String> = (0..10_000).map(|n| format!("group-{n}")).collect();
    accounts["mallory"] =
        json!({"email": "m@example.com", "preferred_username": "mallory", "groups": many});
    let provider = IdentityProvider::start(&accounts).await;
    let Some(server) =
        TestServer::start_with(db, settings(&provider.issuer, "sre=responder:sre", "none")).await
    else {
        return;
    };
    provider.register(&server).await;
    let page_says = |reply: reqwest::Response, status: StatusCode, words: &'static str| async move {
        assert_eq!(reply.status(), status);
        let html = reply.text().await.expect("page");
        assert!(html.contains(words), "{words:?} in {html}");
    };

    // A callback this browser never started.
    let mut stranger = Browser::new();
    let forged = format!("{}?code=abc&state=xyz", server.url("/auth/oidc/callback"));
    page_says(
        stranger.get(&forged).await,
        StatusCode::BAD_REQUEST,
        "not started in this browser",
    )
    .await;

    // A state that does not match, then the right one replayed: the sign-in was used up by the first.
    let mut browser = Browser::new();
    let callback = through_the_provider(&mut browser, &server, "alice", "/").await;
    let tampered = callback.replace("state=", "state=x");
    page_says(
        browser.get(&tampered).await,
        StatusCode::BAD_REQUEST,
        "does not match",
    )
    .await;
    page_says(
        browser.get(&callback).await,
        StatusCode::BAD_REQUEST,
        "already used",
    )
    .await;

    // A good sign-in whose callback is replayed afterwards; and the return address cannot leave the site.
    let callback =
        through_the_provider(&mut browser, &server, "alice", "//evil.example/phish").await;
    let done = browser.get(&callback).await;
    assert_eq!(
        done.headers()[header::LOCATION],
        "/",
        "an open redirect went home"
    );
    page_says(
        browser.get(&callback).await,
        StatusCode::BAD_REQUEST,
        "already used",
    )
    .await;

    // Someone in no mapped group, with no default role; someone with 10,000 groups: nobody is made.
    let users = server.store.count_users().await.expect("count");
    let mut bobs = Browser::new();
    page_says(
        sign_in(&mut bobs, &server, "bob", "/").await,
        StatusCode::FORBIDDEN,
        "none of the groups",
    )
    .await;
    let mut mallorys = Browser::new();
    page_says(
        sign_in(&mut mallorys, &server, "mallory", "/").await,
        StatusCode::FORBIDDEN,
        "reads at most 1,000",
    )
    .await;
    assert_eq!(server.store.count_users().await.expect("count"), users);

    server.stop().await;
}

/// A provider that refuses connections, or accepts and never answers: a clear page, within the bound.
async fn a_provider_down_or_silent_gets_a_clear_page_in_bounded_time(db: Backend) {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listener");
    let silent_issuer = format!("http://{}", silent.local_addr().expect("address"));
    let keep = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = silent.accept().await {
            held.push(connection);
        }
    });
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let down_issuer = format!("http://{}", closed.local_addr().expect("address"));
    drop(closed);
    for (issuer, bound) in [(down_issuer, 5), (silent_issuer, 15)] {
        let Some(server) = TestServer::start_with(db, settings(&issuer, "", "viewer")).await else {
            return;
        };
        let started = std::time::Instant::now();
        let mut browser = Browser::new();
        let reply = browser.get(&server.url("/auth/oidc/start?next=/")).await;
        assert_eq!(reply.status(), StatusCode::BAD_GATEWAY);
        assert!(
            started.elapsed() < StdDuration::from_secs(bound),
            "{:?}",
            started.elapsed()
        );
        let html = reply.text().await.expect("page");
        assert!(
            html.contains("could not be reached or did not answer in time"),
            "{html}"
        );
        assert_eq!(server.store.count_users().await.expect("count"), 0);
        server.stop().await;
    }
    keep.abort();
}

anteroom_testkit::on_both_backends_with_mcp_sdks!(
    the_providers_groups_decide_the_role_and_are_read_again,
    attacks_on_the_callback_are_refused,
    a_provider_down_or_silent_gets_a_clear_page_in_bounded_time,
);
