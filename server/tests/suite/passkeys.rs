//! Passkeys over real HTTP, on SQLite and PostgreSQL, with a software authenticator (a P-256 key, the
//! authenticator data and CBOR a real one sends, `none` attestation): a signed-in person adds one, signs in with
//! it in a fresh browser and removes it; replays, another site's origin, a removed passkey, a stale signature
//! counter and hostile bodies are each refused with a JSON error. Chromium's own authenticator does the same in
//! end2end/tests/passkeys.spec.ts.

use anteroom_domain::{
    access::Role,
    provider_people::{Granted, ProviderPerson},
};
use anteroom_server::instance::Settings;
use anteroom_testkit::{
    Backend, TestServer,
    browser::{browser, input_value, page, person, sign_in},
    on_both_backends,
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL};
use p256::ecdsa::{Signature, SigningKey, signature::Signer};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const RP_ID: &str = "anteroom.test";
const ORIGIN: &str = "https://anteroom.test";

fn settings() -> Settings {
    Settings {
        public_url: Some(ORIGIN.to_owned()),
        ..Settings::default()
    }
}

/// A CBOR head: major type and length (the short forms this authenticator needs).
fn cbor_head(major: u8, length: usize, out: &mut Vec<u8>) {
    let major = major << 5;
    match u8::try_from(length) {
        Ok(small) if small < 24 => out.push(major | small),
        Ok(byte) => out.extend([major | 24, byte]),
        Err(_) => {
            out.push(major | 25);
            out.extend(u16::try_from(length).expect("short").to_be_bytes());
        }
    }
}

fn cbor_int(value: i64, out: &mut Vec<u8>) {
    if value >= 0 {
        cbor_head(0, usize::try_from(value).expect("small"), out);
    } else {
        cbor_head(1, usize::try_from(-1 - value).expect("small"), out);
    }
}

fn cbor_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    cbor_head(2, bytes.len(), out);
    out.extend(bytes);
}

fn cbor_text(text: &str, out: &mut Vec<u8>) {
    cbor_head(3, text.len(), out);
    out.extend(text.as_bytes());
}

/// A platform authenticator holding one ES256 passkey.
struct SoftAuthenticator {
    key: SigningKey,
    credential_id: Vec<u8>,
    counter: u32,
    user_handle: String,
}

impl SoftAuthenticator {
    fn new(seed: u8) -> Self {
        Self {
            key: SigningKey::from_slice(&[seed; 32]).expect("a P-256 key"),
            credential_id: vec![seed; 16],
            counter: 0,
            user_handle: String::new(),
        }
    }

    fn client_data(kind: &str, challenge: &str, origin: &str) -> Vec<u8> {
        json!({"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false})
            .to_string()
            .into_bytes()
    }

    /// Authenticator data: the RP ID's hash, user present and verified (and the attested credential when
    /// registering), the counter.
    fn authenticator_data(&self, attested: bool) -> Vec<u8> {
        let mut data = Sha256::digest(RP_ID.as_bytes()).to_vec();
        data.push(if attested { 0x45 } else { 0x05 });
        data.extend(self.counter.to_be_bytes());
        if attested {
            data.extend([0_u8; 16]);
            data.extend(
                u16::try_from(self.credential_id.len())
                    .expect("short")
                    .to_be_bytes(),
            );
            data.extend(&self.credential_id);
            let point = self.key.verifying_key().to_encoded_point(false);
            // COSE_Key: {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}
            cbor_head(5, 5, &mut data);
            cbor_int(1, &mut data);
            cbor_int(2, &mut data);
            cbor_int(3, &mut data);
            cbor_int(-7, &mut data);
            cbor_int(-1, &mut data);
            cbor_int(1, &mut data);
            cbor_int(-2, &mut data);
            cbor_bytes(point.x().expect("x"), &mut data);
            cbor_int(-3, &mut data);
            cbor_bytes(point.y().expect("y"), &mut data);
        }
        data
    }

    /// `navigator.credentials.create(options)` as `toJSON()` shows it.
    fn create(&mut self, options: &Value, origin: &str) -> Value {
        self.user_handle = options["user"]["id"].as_str().expect("user.id").to_owned();
        let challenge = options["challenge"].as_str().expect("challenge");
        let auth_data = self.authenticator_data(true);
        let mut attestation = Vec::new();
        cbor_head(5, 3, &mut attestation);
        cbor_text("fmt", &mut attestation);
        cbor_text("none", &mut attestation);
        cbor_text("attStmt", &mut attestation);
        cbor_head(5, 0, &mut attestation);
        cbor_text("authData", &mut attestation);
        cbor_bytes(&auth_data, &mut attestation);
        let id = BASE64URL.encode(&self.credential_id);
        json!({
            "id": id, "rawId": id, "type": "public-key", "authenticatorAttachment": "platform",
            "response": {
                "clientDataJSON": BASE64URL.encode(Self::client_data("webauthn.create", challenge, origin)),
                "attestationObject": BASE64URL.encode(attestation),
                "transports": ["internal"],
            },
            "clientExtensionResults": {},
        })
    }

    /// `navigator.credentials.get(options)` as `toJSON()` shows it; the counter goes up first.
    fn get(&mut self, options: &Value, origin: &str) -> Value {
        self.counter += 1;
        let challenge = options["challenge"].as_str().expect("challenge");
        let client_data = Self::client_data("webauthn.get", challenge, origin);
        let auth_data = self.authenticator_data(false);
        let mut signed = auth_data.clone();
        signed.extend(Sha256::digest(&client_data));
        let signature: Signature = self.key.sign(&signed);
        let id = BASE64URL.encode(&self.credential_id);
        json!({
            "id": id, "rawId": id, "type": "public-key", "authenticatorAttachment": "platform",
            "response": {
                "clientDataJSON": BASE64URL.encode(client_data),
                "authenticatorData": BASE64URL.encode(auth_data),
                "signature": BASE64URL.encode(signature.to_der().as_bytes()),
                "userHandle": self.user_handle,
            },
            "clientExtensionResults": {},
        })
    }
}

/// A browser's cookie jar of one session cookie, updated from each reply.
struct Visitor {
    cookie: Option<String>,
    csrf: Option<String>,
    /// The `Max-Age` of the last session cookie set.
    max_age: Option<i64>,
}

impl Visitor {
    async fn post(&mut self, server: &TestServer, path: &str, body: &Value) -> (StatusCode, Value) {
        let mut request = browser()
            .post(server.url(path))
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(cookie) = &self.cookie {
            request = request.header(header::COOKIE, cookie);
        }
        if let Some(csrf) = &self.csrf {
            request = request.header("x-csrf-token", csrf);
        }
        let reply = request.send().await.expect("POST");
        if let Some(seconds) = max_age(&reply) {
            self.max_age = Some(seconds);
        }
        if let Some(cookie) = reply.headers().get(header::SET_COOKIE) {
            let cookie = cookie.to_str().expect("cookie");
            self.cookie = Some(cookie.split(';').next().expect("name=value").to_owned());
        }
        let status = reply.status();
        let text = reply.text().await.expect("body");
        let json =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: JSON, not {text:?}"));
        (status, json)
    }
}

async fn signed_in_visitor(server: &TestServer, username: &str) -> Visitor {
    let cookie = sign_in(server, username).await;
    let (_, html) = page(server, "/profile", &cookie).await;
    Visitor {
        csrf: Some(input_value(&html, "csrf")),
        cookie: Some(cookie),
        max_age: None,
    }
}

async fn add_passkey(
    server: &TestServer,
    visitor: &mut Visitor,
    authenticator: &mut SoftAuthenticator,
    name: &str,
) {
    let (status, options) = visitor
        .post(server, "/profile/passkeys/start", &json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{options}");
    assert_eq!(options["rp"]["id"], RP_ID, "{options}");
    let credential = authenticator.create(&options, ORIGIN);
    let (status, reply) = visitor
        .post(
            server,
            "/profile/passkeys/finish",
            &json!({"name": name, "credential": credential}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
}

/// "Remove" on the profile's passkey list, as `visitor`'s browser posts it.
async fn remove_passkey(server: &TestServer, visitor: &Visitor, id: &str) -> reqwest::Response {
    browser()
        .post(server.url("/profile/passkeys/remove"))
        .header(header::COOKIE, visitor.cookie.as_deref().expect("cookie"))
        .form(&[("id", id), ("csrf", visitor.csrf.as_deref().expect("csrf"))])
        .send()
        .await
        .expect("POST")
}

/// The `Max-Age` of the session cookie a reply set, in seconds.
fn max_age(reply: &reqwest::Response) -> Option<i64> {
    let cookie = reply.headers().get(header::SET_COOKIE)?.to_str().ok()?;
    cookie
        .split(';')
        .find_map(|part| part.trim().strip_prefix("Max-Age="))
        .and_then(|seconds| seconds.parse().ok())
}

/// A fresh browser signs in with the passkey; the reply and the visitor (with its new session).
async fn sign_in_with(
    server: &TestServer,
    authenticator: &mut SoftAuthenticator,
    origin: &str,
    next: &str,
) -> (StatusCode, Value, Visitor) {
    let mut visitor = Visitor {
        cookie: None,
        csrf: None,
        max_age: None,
    };
    let (status, options) = visitor
        .post(server, "/auth/passkeys/start", &json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{options}");
    assert_eq!(options["rpId"], RP_ID, "{options}");
    let credential = authenticator.get(&options, origin);
    let (status, reply) = visitor
        .post(
            server,
            "/auth/passkeys/finish",
            &json!({"credential": credential, "next": next}),
        )
        .await;
    (status, reply, visitor)
}

async fn a_person_adds_a_passkey_signs_in_with_it_and_removes_it(db: Backend) {
    let Some(server) = TestServer::start_with(db, settings()).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let mut laptop = signed_in_visitor(&server, "rita").await;
    let mut phone = SoftAuthenticator::new(7);
    add_passkey(&server, &mut laptop, &mut phone, "Rita's <phone>").await;
    let (_, html) = page(
        &server,
        "/profile",
        laptop.cookie.as_deref().expect("cookie"),
    )
    .await;
    assert!(
        html.contains("Rita&#x27;s &lt;phone&gt;") || html.contains("Rita's &lt;phone&gt;"),
        "{html}"
    );

    // A sign-in started and never finished leaves a session of 15 minutes, not the week a signed-in one lasts.
    let started = browser()
        .post(server.url("/auth/passkeys/start"))
        .send()
        .await
        .expect("POST");
    assert_eq!(max_age(&started), Some(15 * 60));

    // A push's "open" link sends a signed-out phone to sign in with `next`: the passkey lands it there.
    let (status, reply, visitor) =
        sign_in_with(&server, &mut phone, ORIGIN, "/sessions/s-1?round=r").await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["next"], "/sessions/s-1?round=r");
    assert_eq!(visitor.max_age, Some(7 * 24 * 60 * 60), "signed in: a week");
    let cookie = visitor.cookie.expect("a session cookie");
    let (status, _) = page(&server, "/", &cookie).await;
    assert_eq!(status, StatusCode::OK, "signed in");
    let (status, reply, _) = sign_in_with(&server, &mut phone, ORIGIN, "//evil.example").await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["next"], "/", "no open redirect through next");

    // The same answer twice: the ceremony it answered was used up.
    let mut replayer = Visitor {
        cookie: None,
        csrf: None,
        max_age: None,
    };
    let (_, options) = replayer
        .post(&server, "/auth/passkeys/start", &json!({}))
        .await;
    let answer = phone.get(&options, ORIGIN);
    let (first, _) = replayer
        .post(
            &server,
            "/auth/passkeys/finish",
            &json!({"credential": answer}),
        )
        .await;
    assert_eq!(first, StatusCode::OK);
    let (again, reply) = replayer
        .post(
            &server,
            "/auth/passkeys/finish",
            &json!({"credential": answer}),
        )
        .await;
    assert_eq!(again, StatusCode::CONFLICT, "{reply}");
    assert_eq!(reply["error"], "managed_input_state");

    // An answer made for another site (a phishing page relaying the challenge) is refused.
    let (status, reply, _) = sign_in_with(
        &server,
        &mut phone,
        "https://anteroom.test.evil.example",
        "/",
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{reply}");

    // A cloned authenticator whose counter went back is refused.
    phone.counter = 0;
    let (status, reply, _) = sign_in_with(&server, &mut phone, ORIGIN, "/").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{reply}");
    phone.counter = 100;

    // Removed, it signs no one in.
    let (_, html) = page(
        &server,
        "/profile",
        laptop.cookie.as_deref().expect("cookie"),
    )
    .await;
    let id = BASE64URL.encode(&phone.credential_id);
    assert!(html.contains(&id), "listed by its id: {html}");
    let removed = remove_passkey(&server, &laptop, &id).await;
    assert_eq!(removed.headers()[header::LOCATION], "/profile");
    let (status, reply, _) = sign_in_with(&server, &mut phone, ORIGIN, "/").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{reply}");
    assert!(
        reply["message"]
            .as_str()
            .expect("message")
            .contains("not known"),
        "{reply}"
    );
    server.stop().await;
}

async fn passkey_calls_refuse_bad_input_with_json(db: Backend) {
    let Some(server) = TestServer::start_with(db, settings()).await else {
        return;
    };
    person(&server, "rita", Role::Responder).await;
    let mut stranger = Visitor {
        cookie: None,
        csrf: None,
        max_age: None,
    };
    let (status, reply) = stranger
        .post(&server, "/profile/passkeys/start", &json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{reply}");

    let mut rita = signed_in_visitor(&server, "rita").await;
    let csrf = rita.csrf.take();
    let (status, reply) = rita
        .post(&server, "/profile/passkeys/start", &json!({}))
        .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "without the CSRF token: {reply}"
    );
    rita.csrf = csrf;

    // Nothing started: nothing to finish.
    let (status, reply) = rita
        .post(
            &server,
            "/profile/passkeys/finish",
            &json!({"credential": {"id": "x"}}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{reply}");
    // A started ceremony answered with garbage, then with a name too long, then with no credential.
    rita.post(&server, "/profile/passkeys/start", &json!({}))
        .await;
    let (status, reply) = rita
        .post(
            &server,
            "/profile/passkeys/finish",
            &json!({"credential": {"id": 1, "response": "no"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    let (status, reply) = rita
        .post(
            &server,
            "/profile/passkeys/finish",
            &json!({"name": "x".repeat(65), "credential": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    let (status, reply) = rita
        .post(&server, "/profile/passkeys/finish", &json!({"name": "a"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");

    // Bodies: not an object, not JSON, too large, from another site.
    let (status, reply) = stranger
        .post(&server, "/auth/passkeys/finish", &json!([1, 2]))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    for (body, origin, expected) in [
        (
            "{not json".to_owned(),
            None,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            format!("{{\"credential\": \"{}\"}}", "x".repeat(70_000)),
            None,
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            "{}".to_owned(),
            Some("https://evil.example"),
            StatusCode::FORBIDDEN,
        ),
    ] {
        let mut request = browser()
            .post(server.url("/auth/passkeys/finish"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        let reply = request.send().await.expect("POST");
        assert_eq!(reply.status(), expected);
        let json: Value = reply.json().await.expect("a JSON error");
        assert!(json["message"].is_string(), "{json}");
    }

    // An answer naming a passkey nobody has.
    let mut ghost = SoftAuthenticator::new(9);
    ghost.user_handle = BASE64URL.encode([9_u8; 16]);
    let (status, reply, _) = sign_in_with(&server, &mut ghost, ORIGIN, "/").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{reply}");
    server.stop().await;
}

/// The attacks a stolen cookie or a shared browser would try: replaying a captured answer into a new ceremony,
/// claiming another person's user handle, finishing as someone else what one person started, adding a passkey
/// long after signing in, and removing someone else's passkey.
async fn passkeys_resist_replays_and_borrowed_browsers(db: Backend) {
    let Some(server) = TestServer::start_with(db, settings()).await else {
        return;
    };
    let rita = person(&server, "rita", Role::Responder).await;
    person(&server, "sam", Role::Responder).await;
    let mut laptop = signed_in_visitor(&server, "rita").await;
    let mut phone = SoftAuthenticator::new(3);
    add_passkey(&server, &mut laptop, &mut phone, "Phone").await;

    // An answer captured from one ceremony does not sign in through another (its challenge is that ceremony's).
    let mut thief = Visitor {
        cookie: None,
        csrf: None,
        max_age: None,
    };
    let (_, options) = thief
        .post(&server, "/auth/passkeys/start", &json!({}))
        .await;
    let captured = phone.get(&options, ORIGIN);
    let (_, _) = thief
        .post(&server, "/auth/passkeys/start", &json!({}))
        .await;
    let (status, reply) = thief
        .post(
            &server,
            "/auth/passkeys/finish",
            &json!({"credential": captured}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{reply}");

    // The right passkey with another user handle than its person's is refused.
    let handle = std::mem::replace(&mut phone.user_handle, BASE64URL.encode([1_u8; 16]));
    let (status, reply, _) = sign_in_with(&server, &mut phone, ORIGIN, "/").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{reply}");
    phone.user_handle = handle;

    // Rita starts adding a passkey, then Sam signs in on the same browser: the ceremony is not his to finish.
    let (status, options) = laptop
        .post(&server, "/profile/passkeys/start", &json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{options}");
    let signed_in = browser()
        .post(server.url("/login"))
        .header(header::COOKIE, laptop.cookie.as_deref().expect("cookie"))
        .form(&[
            ("username", "sam"),
            ("password", anteroom_testkit::browser::PASSWORD),
            ("next", "/profile"),
        ])
        .send()
        .await
        .expect("POST");
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    let sams_cookie = signed_in.headers()[header::SET_COOKIE]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("name=value")
        .to_owned();
    let (_, html) = page(&server, "/profile", &sams_cookie).await;
    let mut sam = Visitor {
        cookie: Some(sams_cookie),
        csrf: Some(input_value(&html, "csrf")),
        max_age: None,
    };
    let mut ritas_new_key = SoftAuthenticator::new(4);
    let credential = ritas_new_key.create(&options, ORIGIN);
    let (status, reply) = sam
        .post(
            &server,
            "/profile/passkeys/finish",
            &json!({"name": "Borrowed", "credential": credential}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{reply}");

    // Sam cannot remove Rita's passkey.
    let id = BASE64URL.encode(&phone.credential_id);
    let removed = remove_passkey(&server, &sam, &id).await;
    assert_eq!(removed.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        server.store.passkeys(&rita.id).await.expect("list").len(),
        1
    );

    // Eleven minutes after signing in, a browser no longer adds passkeys (a taken cookie adds no way in).
    server.clock.advance(chrono::Duration::minutes(11));
    let (status, reply) = sam
        .post(&server, "/profile/passkeys/start", &json!({}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{reply}");
    assert!(
        reply["message"]
            .as_str()
            .expect("message")
            .contains("10 minutes"),
        "{reply}"
    );
    server.stop().await;
}

/// Someone whose rights come from the identity provider: a passkey signs them in only for what remains of their
/// last provider sign-in (`ANTEROOM_OIDC_RECHECK_MINUTES`), then sends them through the provider first.
async fn a_passkey_does_not_outlast_a_provider_sign_in(db: Backend) {
    let issuer = super::provider_rights::ISSUER;
    let settings = Settings {
        public_url: Some(ORIGIN.to_owned()),
        ..super::provider_rights::provider_settings(168)
    };
    let Some(server) = TestServer::start_with(db, settings).await else {
        return;
    };
    let rita = person(&server, "rita", Role::Responder).await;
    let mut laptop = signed_in_visitor(&server, "rita").await;
    let mut phone = SoftAuthenticator::new(5);
    add_passkey(&server, &mut laptop, &mut phone, "Phone").await;
    // Rita's e-mail, vouched for by an admin, links her first provider sign-in to her.
    server
        .store
        .set_user_email(&rita.id, Some("rita@example.com"))
        .await
        .expect("e-mail");
    assert!(server.store.vouch_for_email(&rita.id).await.expect("vouch"));
    let granted = Granted {
        role: Role::Responder,
        groups: Vec::new(),
    };
    let linked = server
        .store
        .sign_in_from_provider(&ProviderPerson::new(
            issuer,
            "sub-rita",
            Some("rita@example.com"),
            true,
            Some("rita"),
            granted,
        ))
        .await
        .expect("provider sign-in");
    assert_eq!(linked.id, rita.id);

    server.clock.advance(chrono::Duration::minutes(30));
    let (status, reply, visitor) = sign_in_with(&server, &mut phone, ORIGIN, "/").await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["next"], "/");
    let cookie = visitor.cookie.expect("a session cookie");
    assert_eq!(page(&server, "/", &cookie).await.0, StatusCode::OK);

    // The provider sign-in's hour is over: the session the passkey made ends with it, and a passkey sends the
    // browser through the provider, which reads Rita's groups again.
    server.clock.advance(chrono::Duration::minutes(31));
    let reply = browser()
        .get(server.url("/"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .expect("GET");
    assert_eq!(reply.status(), StatusCode::SEE_OTHER);
    assert!(
        reply.headers()[header::LOCATION]
            .to_str()
            .expect("location")
            .starts_with("/auth/oidc/start?next="),
    );
    let (status, reply, visitor) = sign_in_with(&server, &mut phone, ORIGIN, "/sessions/s-1").await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["next"], "/auth/oidc/start?next=%2Fsessions%2Fs-1");
    let cookie = visitor.cookie.expect("the start's session cookie");
    assert_eq!(
        page(&server, "/", &cookie).await.0,
        StatusCode::SEE_OTHER,
        "not signed in by the passkey alone"
    );

    // Signed in through the provider again, then refused by it (out of every mapped group): the passkey sends
    // her straight back to the provider instead of signing her in for the rest of the hour.
    server
        .store
        .sign_in_from_provider(&ProviderPerson::new(
            issuer,
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
        .expect("provider sign-in");
    let (_, reply, _) = sign_in_with(&server, &mut phone, ORIGIN, "/").await;
    assert_eq!(reply["next"], "/", "within the new sign-in's hour");
    assert!(
        server
            .store
            .withdraw_provider_access(issuer, "sub-rita")
            .await
            .expect("withdraw")
    );
    let (_, reply, _) = sign_in_with(&server, &mut phone, ORIGIN, "/").await;
    assert_eq!(reply["next"], "/auth/oidc/start?next=%2F", "{reply}");
    server.stop().await;
}

/// Browsers offer passkeys only to a domain over https (or localhost): at an address, the routes are not there
/// and the sign-in page offers none.
#[tokio::test]
async fn at_an_address_passkeys_are_not_offered() {
    let Some(server) = TestServer::start(Backend::Sqlite).await else {
        return;
    };
    let reply = browser()
        .post(server.url("/auth/passkeys/start"))
        .send()
        .await
        .expect("POST");
    assert_eq!(reply.status(), StatusCode::NOT_FOUND);
    let login = browser()
        .get(server.url("/login"))
        .send()
        .await
        .expect("GET")
        .text()
        .await
        .expect("page");
    assert!(!login.contains("passkey-sign-in"), "{login}");
    server.stop().await;
}

on_both_backends!(
    a_person_adds_a_passkey_signs_in_with_it_and_removes_it,
    passkey_calls_refuse_bad_input_with_json,
    passkeys_resist_replays_and_borrowed_browsers,
    a_passkey_does_not_outlast_a_provider_sign_in,
);
