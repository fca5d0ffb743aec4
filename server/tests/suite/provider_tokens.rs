//! ID tokens a real provider would never send: forged, expired, for another client, replayed from another
//! sign-in, signed with a key the provider does not publish. A stand-in provider on loopback (discovery, keys,
//! token endpoint) signs whatever the test asks with RSA keys from `tests/fixtures/oidc/`, and Anteroom's
//! callback must refuse each one with a clear page and make nobody; a key the provider rotated in is fetched
//! and accepted.

use std::sync::{Arc, Mutex};

use anteroom_domain::clock::Clock;
use anteroom_server::{
    instance::Settings,
    pages::{ProviderConfig, SignInConfig},
};
use anteroom_testkit::{Backend, TestServer, browser::browser};
use axum::{Json, Router, extract::State, routing::get, routing::post};
use chrono::{DateTime, Duration, Utc};
use openidconnect::{
    Audience, EmptyAdditionalClaims, IssuerUrl, JsonWebKeyId, Nonce, PrivateSigningKey,
    StandardClaims, SubjectIdentifier,
    core::{CoreIdToken, CoreIdTokenClaims, CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey},
};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};

const CLIENT_ID: &str = "anteroom";

fn key(name: &str, kid: &str) -> CoreRsaPrivateSigningKey {
    let pem = std::fs::read_to_string(format!(
        "{}/tests/fixtures/oidc/{name}.pem",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("a test key");
    CoreRsaPrivateSigningKey::from_pem(&pem, Some(JsonWebKeyId::new(kid.to_owned())))
        .expect("an RSA key")
}

/// What the stand-in publishes and hands out.
struct Published {
    keys: Vec<Value>,
    id_token: String,
}

type Shared = Arc<Mutex<Published>>;

/// The stand-in provider: its issuer URL and what it publishes.
struct StandIn {
    issuer: String,
    published: Shared,
}

impl StandIn {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("listener");
        let issuer = format!("http://{}", listener.local_addr().expect("address"));
        let published: Shared = Arc::new(Mutex::new(Published {
            keys: Vec::new(),
            id_token: String::new(),
        }));
        let discovery = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "jwks_uri": format!("{issuer}/jwks"),
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        });
        let app = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(move || {
                    let discovery = discovery.clone();
                    async move { Json(discovery) }
                }),
            )
            .route(
                "/jwks",
                get(|State(published): State<Shared>| async move {
                    let keys = published.lock().expect("lock").keys.clone();
                    Json(json!({"keys": keys}))
                }),
            )
            .route(
                "/token",
                post(|State(published): State<Shared>| async move {
                    let id_token = published.lock().expect("lock").id_token.clone();
                    Json(
                        json!({"access_token": "at", "token_type": "Bearer", "id_token": id_token}),
                    )
                }),
            )
            .with_state(published.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { issuer, published }
    }

    fn publish(&self, keys: &[&CoreRsaPrivateSigningKey]) {
        self.published.lock().expect("lock").keys = keys
            .iter()
            .map(|key| serde_json::to_value(key.as_verification_key()).expect("JWK"))
            .collect();
    }

    fn hand_out(&self, id_token: String) {
        self.published.lock().expect("lock").id_token = id_token;
    }
}

/// An Anteroom that signs people in through the stand-in at `issuer`.
fn settings(issuer: &str, max_age_minutes: Option<u32>) -> Settings {
    Settings {
        sign_in: SignInConfig {
            provider: Some(ProviderConfig {
                issuer: issuer.to_owned(),
                client_id: CLIENT_ID.to_owned(),
                client_secret: "secret".to_owned(),
                scopes: "openid".to_owned(),
                groups_claim: "groups".to_owned(),
                mapping: String::new(),
                default_role: "viewer".to_owned(),
                name: "Stand-in".to_owned(),
                recheck_minutes: 60,
                answer_elsewhere_hours: 168,
                prompt: None,
                max_age_minutes,
            }),
            passwords: true,
        },
        ..Settings::default()
    }
}

/// An ID token's claims, each one a test may spoil.
struct Claims {
    issuer: String,
    audience: String,
    expires: DateTime<Utc>,
    nonce: String,
    auth_time: Option<DateTime<Utc>>,
}

fn sign(claims: &Claims, key: &CoreRsaPrivateSigningKey, now: DateTime<Utc>) -> String {
    let standard = StandardClaims::new(SubjectIdentifier::new("sub-1".to_owned()));
    let claims = CoreIdTokenClaims::new(
        IssuerUrl::new(claims.issuer.clone()).expect("issuer"),
        vec![Audience::new(claims.audience.clone())],
        claims.expires,
        now,
        standard,
        EmptyAdditionalClaims {},
    )
    .set_nonce(Some(Nonce::new(claims.nonce.clone())))
    .set_auth_time(claims.auth_time);
    let token = CoreIdToken::new(
        claims,
        key,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
        None,
        None,
    )
    .expect("signed");
    serde_json::to_value(&token)
        .expect("token")
        .as_str()
        .expect("a compact JWT")
        .to_owned()
}

/// Starts a sign-in at Anteroom; returns the cookie, the `state` and the `nonce` it sent to the provider.
async fn start(server: &TestServer) -> (String, String, String) {
    let reply = browser()
        .get(server.url("/auth/oidc/start?next=/"))
        .send()
        .await
        .expect("start");
    assert_eq!(reply.status(), StatusCode::SEE_OTHER);
    let cookie = reply.headers()[header::SET_COOKIE]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    let location = reqwest::Url::parse(
        reply.headers()[header::LOCATION]
            .to_str()
            .expect("location"),
    )
    .expect("URL");
    let param = |name: &str| {
        location
            .query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
            .expect("a query parameter")
    };
    (cookie, param("state"), param("nonce"))
}

async fn callback(server: &TestServer, cookie: &str, state: &str) -> (StatusCode, String) {
    let reply = browser()
        .get(server.url(&format!("/auth/oidc/callback?code=c&state={state}")))
        .header(header::COOKIE, cookie)
        .send()
        .await
        .expect("callback");
    (reply.status(), reply.text().await.expect("page"))
}

async fn forged_expired_misaddressed_and_replayed_tokens_are_refused(db: Backend) {
    let stand_in = StandIn::start().await;
    let Some(server) = TestServer::start_with(db, settings(&stand_in.issuer, None)).await else {
        return;
    };
    let now = server.clock.now();
    let first = key("first", "k1");
    let second = key("second", "k2");
    let impostor = key("third", "k1");
    stand_in.publish(&[&first]);
    let good = |nonce: &str| Claims {
        issuer: stand_in.issuer.clone(),
        audience: CLIENT_ID.to_owned(),
        expires: now + Duration::minutes(5),
        nonce: nonce.to_owned(),
        auth_time: None,
    };

    // Each spoiled token: what is wrong with it, its claims made from the good ones, whether an impostor signs.
    type Spoil = fn(Claims) -> Claims;
    let spoiled: [(&str, Spoil, bool); 5] = [
        ("forged (another key, the same kid)", |claims| claims, true),
        (
            "expired",
            |claims| Claims {
                expires: claims.expires - Duration::minutes(6),
                ..claims
            },
            false,
        ),
        (
            "for another client",
            |claims| Claims {
                audience: "someone-else".to_owned(),
                ..claims
            },
            false,
        ),
        (
            "from another issuer",
            |claims| Claims {
                issuer: "https://evil.example".to_owned(),
                ..claims
            },
            false,
        ),
        (
            "replayed from another sign-in",
            |claims| Claims {
                nonce: "an-older-nonce".to_owned(),
                ..claims
            },
            false,
        ),
    ];
    for (what, spoil, forged) in spoiled {
        let (cookie, state, nonce) = start(&server).await;
        let signer = if forged { &impostor } else { &first };
        stand_in.hand_out(sign(&spoil(good(&nonce)), signer, now));
        let (status, page) = callback(&server, &cookie, &state).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{what}");
        assert!(page.contains("ID token was refused"), "{what}: {page}");
    }
    assert_eq!(
        server.store.count_users().await.expect("count"),
        0,
        "nobody was made"
    );

    // The provider rotates to a key Anteroom has not seen: fetched once, then accepted.
    stand_in.publish(&[&first, &second]);
    let (cookie, state, nonce) = start(&server).await;
    stand_in.hand_out(sign(&good(&nonce), &second, now));
    let (status, page) = callback(&server, &cookie, &state).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");
    assert_eq!(server.store.count_users().await.expect("count"), 1);

    // A key the provider does not publish at all is refused.
    let unknown = key("third", "k3");
    let (cookie, state, nonce) = start(&server).await;
    stand_in.hand_out(sign(&good(&nonce), &unknown, now));
    let (status, page) = callback(&server, &cookie, &state).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("ID token was refused"), "{page}");
    server.stop().await;
}

/// Where the start of a sign-in sends the browser: the provider's authorization address, with its query.
async fn provider_address(server: &TestServer) -> String {
    let asked = browser()
        .get(server.url("/auth/oidc/start?next=/"))
        .send()
        .await
        .expect("start");
    asked.headers()[header::LOCATION]
        .to_str()
        .expect("location")
        .to_owned()
}

/// With `ANTEROOM_OIDC_MAX_AGE_MINUTES`, the provider is asked for `max_age`, and a token that does not say when
/// the person authenticated, or says it was longer ago, is refused.
async fn a_max_age_refuses_an_old_or_unstated_sign_in_at_the_provider(db: Backend) {
    let stand_in = StandIn::start().await;
    let Some(server) = TestServer::start_with(db, settings(&stand_in.issuer, Some(60))).await
    else {
        return;
    };
    let now = server.clock.now();
    let first = key("first", "k1");
    stand_in.publish(&[&first]);
    let location = provider_address(&server).await;
    assert!(location.contains("max_age=3600"), "{location}");
    for (auth_time, signed_in) in [
        (None, false),
        (Some(now - Duration::hours(2)), false),
        (Some(now - Duration::minutes(5)), true),
    ] {
        let (cookie, state, nonce) = start(&server).await;
        let claims = Claims {
            issuer: stand_in.issuer.clone(),
            audience: CLIENT_ID.to_owned(),
            expires: now + Duration::minutes(5),
            nonce,
            auth_time,
        };
        stand_in.hand_out(sign(&claims, &first, now));
        let (status, page) = callback(&server, &cookie, &state).await;
        if signed_in {
            assert_eq!(status, StatusCode::SEE_OTHER, "{page}");
        } else {
            assert_eq!(status, StatusCode::FORBIDDEN, "{auth_time:?}");
            assert!(page.contains("signed in at the provider"), "{page}");
        }
    }
    server.stop().await;
}

/// `ANTEROOM_OIDC_PROMPT=login` asks the provider for the person's credentials at every sign-in, whatever its own
/// session; a word the protocol does not have stops the start instead of every sign-in.
#[tokio::test]
async fn a_prompt_is_sent_with_every_sign_in() {
    let stand_in = StandIn::start().await;
    let mut settings = settings(&stand_in.issuer, None);
    if let Some(provider) = settings.sign_in.provider.as_mut() {
        provider.prompt = Some("login".to_owned());
    }
    let Some(server) = TestServer::start_with(Backend::Sqlite, settings.clone()).await else {
        return;
    };
    let location = provider_address(&server).await;
    assert!(location.contains("prompt=login"), "{location}");
    server.stop().await;

    if let Some(provider) = settings.sign_in.provider.as_mut() {
        provider.prompt = Some("none".to_owned());
    }
    let Err(refused) =
        anteroom_server::pages::SignInSettings::new(&settings.sign_in, "http://127.0.0.1:1")
    else {
        panic!("`none` is refused at start");
    };
    assert!(
        refused.to_string().contains("ANTEROOM_OIDC_PROMPT"),
        "{refused}"
    );
}

anteroom_testkit::on_both_backends!(
    forged_expired_misaddressed_and_replayed_tokens_are_refused,
    a_max_age_refuses_an_old_or_unstated_sign_in_at_the_provider,
);
