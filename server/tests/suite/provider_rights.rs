//! What people may do where sign-in goes through the identity provider: a person it vouches for answers outside
//! a page (mail and push answer links), where no browser session sends them through the provider again, for
//! `ANTEROOM_OIDC_ANSWER_ELSEWHERE_HOURS` after their last provider sign-in, then is refused with words saying to
//! sign in again, and after a new provider sign-in their links answer again; with `ANTEROOM_PASSWORD_SIGN_IN=false`
//! a correct password signs nobody in and the sign-in page offers no password form.

use anteroom_domain::{
    access::Role,
    clock::Clock,
    ids::{RequestId, RoundId},
    provider_people::{Granted, ProviderPerson},
    reach::{AnswerToken, ReachChannel},
};
use anteroom_server::{
    instance::Settings,
    pages::{ProviderConfig, SignInConfig},
};
use anteroom_testkit::{
    Backend, TestServer,
    browser::{PASSWORD, page, person, post_form},
    on_both_backends,
    pulsemcp::{Outcome, PulsemcpClient},
};
use chrono::Duration;
use reqwest::StatusCode;
use serde_json::{Value, json};

pub(crate) const ISSUER: &str = "http://127.0.0.1:9";

fn settings() -> Settings {
    provider_settings(2)
}

/// An Anteroom whose people sign in through a provider at [`ISSUER`] (never reached: these tests sign people in
/// through the store), `answer_elsewhere_hours` as given.
pub(crate) fn provider_settings(answer_elsewhere_hours: u32) -> Settings {
    Settings {
        sign_in: SignInConfig {
            provider: Some(ProviderConfig {
                issuer: ISSUER.to_owned(),
                client_id: "anteroom".to_owned(),
                client_secret: "secret".to_owned(),
                scopes: "openid".to_owned(),
                groups_claim: "groups".to_owned(),
                mapping: String::new(),
                default_role: "responder".to_owned(),
                name: "Acme SSO".to_owned(),
                recheck_minutes: 60,
                answer_elsewhere_hours,
                prompt: None,
                max_age_minutes: None,
            }),
            passwords: true,
        },
        ..Settings::default()
    }
}

async fn sign_in_at_provider(server: &TestServer) -> String {
    server
        .store
        .sign_in_from_provider(&ProviderPerson::new(
            ISSUER,
            "sub-rita",
            Some("rita@example.com"),
            true,
            Some("rita"),
            Granted {
                role: Role::Responder,
                groups: Vec::new(),
            },
        ))
        .await
        .expect("provider sign-in")
        .id
}

/// An answer link for `user_id` to the question's first choice (as a mail or a push carries it).
async fn answer_link(server: &TestServer, user_id: &str, round_id: RoundId, name: &str) -> String {
    let token = format!("arl_test_{name}_0123456789abcdef");
    server
        .store
        .create_answer_tokens(&[AnswerToken {
            token_hash: anteroom_server::credentials::hash(&token),
            user_id: user_id.to_owned(),
            round_id,
            choice: 0,
            channel: ReachChannel::Email,
            expires_at: server.clock.now() + Duration::days(30),
            used_at: None,
        }])
        .await
        .expect("token");
    token
}

async fn round_of(server: &TestServer, request_id: &str) -> RoundId {
    server
        .store
        .get_round_by_request_id(&RequestId::parse(request_id).expect("id"))
        .await
        .expect("round")
        .round_id
}

async fn follow(server: &TestServer, token: &str) -> (StatusCode, Value) {
    let reply = server
        .http
        .post(server.url(&format!("/answer/{token}")))
        .header("accept", "application/json")
        .send()
        .await
        .expect("POST");
    (reply.status(), reply.json().await.expect("json"))
}

async fn a_provider_persons_answer_links_last_as_long_as_configured(db: Backend) {
    let Some(server) = TestServer::start_with(db, settings()).await else {
        return;
    };
    let rita = sign_in_at_provider(&server).await;
    let env = server.session("deploys").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let expires = server.clock.now() + Duration::days(10);
    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    for id in ["req-1", "req-2"] {
        client
            .create(
                id,
                &client.body(
                    id,
                    "Deploy?",
                    schema.clone(),
                    "deploy",
                    &expires.to_rfc3339(),
                ),
            )
            .await
            .expect("create");
    }
    let first = answer_link(&server, &rita, round_of(&server, "req-1").await, "one").await;
    let second = answer_link(&server, &rita, round_of(&server, "req-2").await, "two").await;

    // Within the two hours after the provider sign-in, a link answers.
    server.clock.advance(Duration::minutes(90));
    let (status, reply) = follow(&server, &first).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(
        client.poll("req-1").await.expect("poll"),
        Outcome::Accept(Some(json!({"ok": true})))
    );

    // Past them, the provider may have removed Rita since: the link records nothing and says why.
    server.clock.advance(Duration::minutes(31));
    let (status, reply) = follow(&server, &second).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{reply}");
    assert!(
        reply.to_string().contains("sign in to Anteroom again"),
        "{reply}"
    );
    assert_eq!(client.poll("req-2").await.expect("poll"), Outcome::Pending);

    // A new provider sign-in (the provider still grants her the right) makes her links good again (a link
    // works once, refused or not: the next mail's).
    sign_in_at_provider(&server).await;
    let third = answer_link(&server, &rita, round_of(&server, "req-2").await, "three").await;
    let (status, reply) = follow(&server, &third).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    server.stop().await;
}

async fn with_passwords_off_a_password_signs_nobody_in(db: Backend) {
    let mut settings = settings();
    settings.sign_in.passwords = false;
    let Some(server) = TestServer::start_with(db, settings).await else {
        return;
    };
    person(&server, "admin", Role::Admin).await;
    let reply = post_form(
        &server,
        "/login",
        &[("username", "admin"), ("password", PASSWORD), ("next", "/")],
    )
    .await;
    assert_eq!(reply.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        reply.headers()[reqwest::header::LOCATION],
        "/login?error=passwords&next=%2F"
    );
    // Whatever cookie came back signs nobody in.
    let cookie = reply
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|cookie| cookie.to_str().ok())
        .and_then(|cookie| cookie.split(';').next())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(page(&server, "/", &cookie).await.0, StatusCode::SEE_OTHER);
    let (_, login) = page(&server, "/login", "").await;
    assert!(
        login.contains("data-testid=\"provider-sign-in\""),
        "{login}"
    );
    assert!(
        !login.contains("name=\"password\""),
        "no password form: {login}"
    );
    server.stop().await;
}

on_both_backends!(
    a_provider_persons_answer_links_last_as_long_as_configured,
    with_passwords_off_a_password_signs_nobody_in,
);
