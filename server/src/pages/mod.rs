//! The browser side of the HTTP surface: sign-in with tower-sessions, the first-run admin link, the pages'
//! server functions, and the plain form posts that make answering work without JavaScript.

mod browser_sessions;
mod live;
mod passkeys;
mod provider;

use std::{net::SocketAddr, sync::Arc};

use anteroom_app::ui::{
    model::{AnswerNotice, AnswerPost, ThisBrowser, Viewer},
    page_data::PageData,
    server_fns::FlashNotice,
};
use anteroom_domain::{
    access::{Principal, Role, User, check_password, check_username, normalise_username},
    form::posted_value,
};
use anteroom_store::Store;
use axum::{
    Extension, Router,
    body::{Body, Bytes},
    extract::{ConnectInfo, FromRequest, Path, Request, State},
    http::{HeaderMap, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Redirect, Response},
    routing::post,
};
use leptos::prelude::provide_context;
use tower_sessions::{Expiry, Session, SessionManagerLayer, cookie::SameSite};

pub use browser_sessions::BrowserSessionStore;
pub use live::QueueFeed;
pub use provider::{ProviderConfig, SignInConfig, SignInSettings};

use crate::{AppState, credentials, passwords};

/// Session keys.
const USER_KEY: &str = "user_id";
/// When this browser signed in (epoch seconds): adding a passkey needs a recent sign-in.
const SIGNED_IN_AT_KEY: &str = "signed_in_at";

/// How long a browser session lasts unused once someone signed in on it.
const SIGNED_IN_FOR: time::Duration = time::Duration::days(7);
/// How long a session made only to carry a sign-in under way lasts unused: as long as that sign-in may take, so
/// a browser (or a script) starting sign-ins leaves no week-long rows behind.
const SIGNING_IN_FOR: time::Duration = time::Duration::minutes(15);
const CSRF_KEY: &str = "csrf";
const FLASH_KEY: &str = "flash";

/// Prefix of the first-run sign-in link's token.
const SIGN_IN_LINK_PREFIX: &str = "arl_";

/// What the pages' server functions and the form handlers reach.
/// The pages' page-data service, whose recorded answers are announced like any other.
pub fn services(state: &AppState) -> PageData {
    let announcer = state.clone();
    let changes = state.clone();
    let sessions = state.clone();
    PageData::new(
        state.store.clone(),
        Arc::new(move |round, submission| {
            crate::announce::answer_recorded(&announcer, round, submission);
        }),
        Arc::new(move |round| crate::announce::round_changed(&changes, round)),
        Arc::new(move |session| crate::announce::session_changed(&sessions, session)),
    )
}

/// The session cookie layer: `HttpOnly`, `SameSite=Lax`, `Secure` outside development, a week of inactivity.
pub fn session_layer(
    store: Arc<dyn Store>,
    secure: bool,
) -> SessionManagerLayer<BrowserSessionStore> {
    SessionManagerLayer::new(BrowserSessionStore::new(store))
        .with_name("anteroom_session")
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure)
        .with_expiry(Expiry::OnInactivity(SIGNED_IN_FOR))
}

/// Routes of the browser side (added to the main router); `feed` makes the queue's view for the live stream,
/// `sign_in` says how people sign in.
pub fn routes(feed: QueueFeed, sign_in: &SignInSettings) -> Router<AppState> {
    Router::new()
        .route(
            "/fn/live",
            axum::routing::get(live::live).layer(Extension(feed)),
        )
        .route(
            "/login",
            post(sign_in_with_password).layer(Extension(PasswordSignIn(sign_in.passwords))),
        )
        .merge(provider::routes(sign_in.provider.clone()))
        .merge(passkeys::routes(sign_in))
        .route("/logout", post(sign_out))
        .route("/setup", post(set_up_first_admin))
        .route("/sessions/{id}/answer", post(answer_without_javascript))
        .route("/profile/sign-ins/end", post(end_browser_sign_in))
        .route("/fn/{*name}", post(server_function))
}

/// Runs the pages' server functions with the store and the answer hook in reach.
async fn server_function(
    State(state): State<AppState>,
    request: Request<Body>,
) -> impl IntoResponse {
    let services = services(&state);
    leptos_axum::handle_server_fns_with_context(move || provide_context(services.clone()), request)
        .await
}

/// Puts the signed-in person (and a pending form-post notice) on the request; sends anyone else who asks
/// for a page to the sign-in page.
pub async fn attach_viewer(
    State(state): State<AppState>,
    session: Session,
    mut request: Request,
    next: Next,
) -> Response {
    // Assets, probes, the producer routes and the hooks (a session's token is their only credential), answer
    // links (the token is) and Slack's calls (its signature is) never need the person: skip the session read
    // the browser's cookie would cost, and never send them to sign in.
    let path = request.uri().path();
    if is_asset_or_probe(path)
        || path.starts_with("/api/v1/s/")
        || path.starts_with("/hooks/")
        || path.starts_with("/answer/")
        || path.starts_with("/integrations/")
    {
        return next.run(request).await;
    }
    let path = path.to_owned();
    let recheck = provider_recheck_due(&state, &session).await;
    let viewer = if recheck {
        None
    } else {
        signed_in_viewer(&state, &session).await
    };
    if let Some(viewer) = viewer {
        remember_browser(&state, &session, request.headers()).await;
        if let Some(id) = session.id() {
            request
                .extensions_mut()
                .insert(ThisBrowser(browser_sessions::handle(&id.to_string())));
        }
        // The API sees who is signed in as a principal and a CSRF token, never as the pages' view model.
        request.extensions_mut().insert(viewer.principal.clone());
        request
            .extensions_mut()
            .insert(credentials::CsrfToken(viewer.csrf.clone()));
        request.extensions_mut().insert(viewer);
        if request.method() == Method::GET
            && path.starts_with("/sessions/")
            && let Ok(Some(notice)) = session.remove::<AnswerNotice>(FLASH_KEY).await
        {
            request.extensions_mut().insert(FlashNotice(notice));
        }
    } else if request.method() == Method::GET && is_private_page(&path) {
        let next = match request.uri().query() {
            Some(query) => format!("{path}?{query}"),
            None => path,
        };
        // A provider sign-in that lasted its time goes through the provider again, which reads the person's
        // groups again; usually the provider still knows the browser and sends it straight back.
        let sign_in = if recheck {
            "/auth/oidc/start"
        } else {
            "/login"
        };
        return Redirect::to(&format!("{sign_in}?next={}", encode(&next))).into_response();
    }
    next.run(request).await
}

/// Keeps what the person's profile lists about this browser: its `User-Agent` (cut short) and when it was last
/// seen, refreshed at most every 5 minutes so a signed-in page does not cost a session write per request.
async fn remember_browser(state: &AppState, session: &Session, headers: &HeaderMap) {
    const REFRESH_SECONDS: i64 = 300;
    let now = state.store.now().timestamp();
    let seen = session
        .get::<i64>(browser_sessions::SEEN_AT_KEY)
        .await
        .ok()
        .flatten();
    if seen.is_some_and(|seen| (0..REFRESH_SECONDS).contains(&(now - seen))) {
        return;
    }
    let device = headers
        .get(header::USER_AGENT)
        .and_then(|agent| agent.to_str().ok())
        .map(|agent| agent.chars().take(160).collect::<String>());
    let mut remembered = session.insert(browser_sessions::SEEN_AT_KEY, now).await;
    if let (Ok(()), Some(device)) = (&remembered, device) {
        remembered = session.insert(browser_sessions::DEVICE_KEY, device).await;
    }
    if let Err(error) = remembered {
        tracing::warn!(%error, "cannot note when a browser was last seen");
    }
}

/// "Sign out" on the profile's list of browsers: ends that browser's session (this one's too, which then goes
/// to the sign-in page).
async fn end_browser_sign_in(
    State(state): State<AppState>,
    session: Session,
    viewer: Option<Extension<Viewer>>,
    this_browser: Option<Extension<ThisBrowser>>,
    SameSiteForm(pairs): SameSiteForm,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return Redirect::to("/login?next=%2Fprofile").into_response();
    };
    if viewer.csrf != posted_value(&pairs, "csrf") {
        return forbidden_cross_site();
    }
    let handle = posted_value(&pairs, "handle");
    if let Err(error) = state
        .store
        .end_browser_sign_in(&viewer.principal.id, &handle)
        .await
    {
        tracing::error!(%error, "cannot sign a browser out");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "The browser could not be signed out just now; try again in a moment.",
        )
            .into_response();
    }
    if this_browser.is_some_and(|Extension(ThisBrowser(this))| this == handle) {
        if let Err(error) = session.flush().await {
            tracing::warn!(%error, "cannot end a browser session");
        }
        return Redirect::to("/login?signed_out=1").into_response();
    }
    Redirect::to("/profile").into_response()
}

/// Whether this browser signed in through the provider longer ago than a provider sign-in lasts; its session
/// is ended then, so nothing it asks for is answered with the role and groups of the last sign-in.
async fn provider_recheck_due(state: &AppState, session: &Session) -> bool {
    let Ok(Some(recheck_at)) = session.get::<i64>(provider::RECHECK_AT_KEY).await else {
        return false;
    };
    if state.store.now().timestamp() < recheck_at {
        return false;
    }
    if let Err(error) = session.flush().await {
        tracing::warn!(%error, "cannot end a provider sign-in that lasted its time");
    }
    true
}

async fn signed_in_viewer(state: &AppState, session: &Session) -> Option<Viewer> {
    let user_id = session.get::<String>(USER_KEY).await.ok().flatten()?;
    // The person, their zone and their groups in one reading: this runs on every signed-in request.
    let signed_in = match state.store.signed_in(&user_id).await {
        Ok(user) => user?,
        Err(error) => {
            tracing::warn!(%error, "cannot read the signed-in user");
            return None;
        }
    };
    let csrf = session.get::<String>(CSRF_KEY).await.ok().flatten()?;
    Some(Viewer {
        principal: Principal::person(&signed_in.user),
        csrf,
        time_zone: signed_in.time_zone,
        groups: signed_in.groups,
    })
}

/// The browser bundle, public files and the operators' probes.
fn is_asset_or_probe(path: &str) -> bool {
    path.starts_with("/pkg/")
        || [
            "/favicon.svg",
            "/manifest.webmanifest",
            "/sw.js",
            "/reach.js",
            "/passkeys.js",
            "/robots.txt",
            "/healthz",
            "/readyz",
            "/metrics",
        ]
        .contains(&path)
}

/// Pages that show questions or answers: everything but the sign-in pages, the API, assets and probes.
fn is_private_page(path: &str) -> bool {
    !(is_asset_or_probe(path)
        || ["/login", "/setup"].contains(&path)
        || path.starts_with("/auth/")
        || path.starts_with("/api/")
        || path.starts_with("/fn/"))
}

/// Percent-encodes a value for a query string.
fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// Name/value pairs of a form body, repeated names kept in order.
fn form_pairs(body: &Bytes) -> Vec<(String, String)> {
    form_urlencoded::parse(body)
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect()
}

/// A same-site redirect target: one leading `/` and then no `/` or `\\` straight after it, no `\\` anywhere,
/// no control characters (a browser drops tabs and newlines, so `/\t/evil.example` would be `//evil.example`);
/// anything else is `/`.
fn local_path(next: &str) -> &str {
    let same_origin = next
        .strip_prefix('/')
        .is_some_and(|rest| !rest.starts_with(['/', '\\']))
        && !next.contains('\\')
        && !next.chars().any(char::is_control);
    if same_origin { next } else { "/" }
}

/// Refuses a form post another site made the browser send (the cookie is `SameSite=Lax` too).
fn cross_site(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    origin == "null" || !origin_host.eq_ignore_ascii_case(host)
}

fn forbidden_cross_site() -> Response {
    (
        StatusCode::FORBIDDEN,
        "This form was posted from another site; open Anteroom and try again.",
    )
        .into_response()
}

/// A form posted from one of Anteroom's own pages: its name/value pairs, repeated names kept in order.
/// Posts another site made the browser send are refused (403), and so are bodies over the body limit (413).
struct SameSiteForm(Vec<(String, String)>);

impl FromRequest<AppState> for SameSiteForm {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        if cross_site(request.headers()) {
            return Err(forbidden_cross_site());
        }
        match axum::body::to_bytes(request.into_body(), state.config.body_limit).await {
            Ok(body) => {
                let pairs = form_pairs(&body);
                if pairs
                    .iter()
                    .any(|(name, value)| name.contains('\0') || value.contains('\0'))
                {
                    return Err((
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "The form holds a NUL character, which Anteroom does not store.",
                    )
                        .into_response());
                }
                Ok(Self(pairs))
            }
            Err(_) => Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                "The form is larger than the body limit.",
            )
                .into_response()),
        }
    }
}

/// Signs `user` in on this browser: a fresh session id (no fixation) and a fresh CSRF token.
async fn start_session(
    state: &AppState,
    session: &Session,
    user: &User,
) -> Result<(), tower_sessions::session::Error> {
    session.cycle_id().await?;
    session.set_expiry(Some(Expiry::OnInactivity(SIGNED_IN_FOR)));
    // A provider sign-in's deadline belongs to that sign-in; the caller sets a new one when it is one. Passkey
    // ceremonies started before belong to whoever started them.
    session.remove::<i64>(provider::RECHECK_AT_KEY).await?;
    session.remove_value(passkeys::ADDING_KEY).await?;
    session.remove_value(passkeys::SIGNING_IN_KEY).await?;
    session.insert(USER_KEY, &user.id).await?;
    session
        .insert(SIGNED_IN_AT_KEY, state.store.now().timestamp())
        .await?;
    session
        .insert(CSRF_KEY, credentials::generate("csrf_"))
        .await
}

/// Makes a session that nobody is signed in on last only as long as a sign-in under way may take.
async fn expire_soon_unless_signed_in(session: &Session) {
    if session
        .get::<String>(USER_KEY)
        .await
        .ok()
        .flatten()
        .is_none()
    {
        session.set_expiry(Some(Expiry::OnInactivity(SIGNING_IN_FOR)));
    }
}

/// Whether local passwords sign in on this instance (`ANTEROOM_PASSWORD_SIGN_IN`).
#[derive(Clone, Copy)]
struct PasswordSignIn(bool);

async fn sign_in_with_password(
    State(state): State<AppState>,
    Extension(PasswordSignIn(allowed)): Extension<PasswordSignIn>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    SameSiteForm(pairs): SameSiteForm,
) -> Response {
    let username = normalise_username(&posted_value(&pairs, "username")).to_owned();
    let password = posted_value(&pairs, "password");
    let next = local_path(&posted_value(&pairs, "next")).to_owned();
    let again = |error: &str| {
        Redirect::to(&format!("/login?error={error}&next={}", encode(&next))).into_response()
    };
    if !allowed {
        return again("passwords");
    }
    // Limits before any work: per address, then per (normalised) username, then a free hashing slot.
    if let Err(seconds) = spend_sign_in_attempt(&state, peer, Some(&username)) {
        return too_many_sign_ins(seconds);
    }
    let found = match state.store.user_with_password(&username).await {
        Ok(found) => found,
        Err(error) => {
            tracing::error!(%error, "cannot read users for a sign-in");
            return again("unavailable");
        }
    };
    // A person made by the identity provider has no password (an empty hash): they cost the same hashing as
    // a wrong username, so the time taken does not say who signs in through the provider.
    let stored = found
        .as_ref()
        .map(|(_, hash)| hash.clone())
        .filter(|hash| !hash.is_empty());
    // A wrong username costs the same hashing as a wrong password, off the async executor either way.
    let verified = state
        .password_hashing
        .try_run(move || match &stored {
            Some(hash) => passwords::verify(&password, hash),
            None => passwords::verify(&password, passwords::decoy()),
        })
        .await;
    let Ok(matches) = verified else {
        return too_many_sign_ins(1);
    };
    match found {
        Some((user, hash)) if matches && !hash.is_empty() => {
            match start_session(&state, &session, &user).await {
                Ok(()) => {
                    tracing::info!(username = %user.username, "signed in");
                    Redirect::to(&next).into_response()
                }
                Err(error) => {
                    tracing::error!(%error, "cannot start a browser session");
                    again("unavailable")
                }
            }
        }
        _ => again("invalid"),
    }
}

/// Spends one attempt from the address's sign-in budget (and the username's, when given), or says in how many
/// seconds to try again.
fn spend_sign_in_attempt(
    state: &AppState,
    peer: SocketAddr,
    username: Option<&str>,
) -> Result<(), u64> {
    let limits = &state.limiter;
    limits
        .sign_ins_per_address
        .check_seconds(&peer.ip().to_string())
        .and_then(|()| username.map_or(Ok(()), |name| limits.sign_ins_per_name.check_seconds(name)))
}

/// `429 Too Many Requests` for a sign-in, with `Retry-After`, answered before any password is hashed.
fn too_many_sign_ins(retry_after: u64) -> Response {
    let seconds = retry_after.max(1);
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (header::RETRY_AFTER, seconds.to_string()),
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()),
        ],
        format!(
            "<!DOCTYPE html><title>Slow down · Anteroom</title><p>Too many sign-in attempts. Wait {seconds} \
             s, then <a href=\"/login\">try again</a>.</p>"
        ),
    )
        .into_response()
}

async fn sign_out(session: Session, SameSiteForm(pairs): SameSiteForm) -> Response {
    let expected = session.get::<String>(CSRF_KEY).await.ok().flatten();
    if expected.is_none_or(|token| token != posted_value(&pairs, "csrf")) {
        return forbidden_cross_site();
    }
    if let Err(error) = session.flush().await {
        tracing::warn!(%error, "cannot end a browser session");
    }
    Redirect::to("/login?signed_out=1").into_response()
}

/// Creates the first admin from the one-time link printed at first start, only while nobody exists.
async fn set_up_first_admin(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    SameSiteForm(pairs): SameSiteForm,
) -> Response {
    let token = posted_value(&pairs, "token");
    let username = normalise_username(&posted_value(&pairs, "username")).to_owned();
    let password = posted_value(&pairs, "password");
    let again = |error: &str| {
        Redirect::to(&format!("/setup?token={}&error={error}", encode(&token))).into_response()
    };
    // Check the choices before using up the link, so a typo does not cost the link.
    if check_username(&username).is_err() {
        return again("username");
    }
    if check_password(&password).is_err() {
        return again("password");
    }
    // Anyone can post here: the same per-address budget as signing in, before any hashing.
    if let Err(seconds) = spend_sign_in_attempt(&state, peer, None) {
        return too_many_sign_ins(seconds);
    }
    let hashed = state
        .password_hashing
        .try_run(move || passwords::hash(&password))
        .await;
    let hash = match hashed {
        Ok(Ok(hash)) => hash,
        Ok(Err(error)) => {
            tracing::error!(%error, "cannot hash the first admin's password");
            return again("unavailable");
        }
        Err(_busy) => return too_many_sign_ins(1),
    };
    let user = User {
        id: uuid::Uuid::now_v7().to_string(),
        username,
        role: Role::Admin,
    };
    match state
        .store
        .create_first_admin(&credentials::hash(&token), &user, &hash)
        .await
    {
        Ok(true) => {
            tracing::info!(username = %user.username, "first admin created from the sign-in link");
            match start_session(&state, &session, &user).await {
                Ok(()) => Redirect::to("/").into_response(),
                Err(error) => {
                    tracing::error!(%error, "cannot start a browser session");
                    Redirect::to("/login").into_response()
                }
            }
        }
        Ok(false) => again("link"),
        Err(error) => {
            tracing::error!(%error, "cannot create the first admin");
            again("unavailable")
        }
    }
}

/// At first start (nobody can sign in yet), prints a one-time link that creates the first admin.
pub async fn announce_first_run(store: &dyn Store, public_url: &str) -> anyhow::Result<()> {
    if store.count_users().await? > 0 {
        return Ok(());
    }
    let token = credentials::generate(SIGN_IN_LINK_PREFIX);
    let valid_for = chrono::Duration::hours(24);
    store
        .create_sign_in_link(&credentials::hash(&token), store.now() + valid_for)
        .await?;
    tracing::warn!(
        "Nobody can sign in yet. Open this one-time link within 24 hours to create the first admin: \
         {public_url}/setup?token={token}  (or run `anteroom user add`)"
    );
    Ok(())
}

/// The banner form posted without JavaScript: record the answer, then show the session page again.
async fn answer_without_javascript(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    session: Session,
    viewer: Option<Extension<Viewer>>,
    SameSiteForm(pairs): SameSiteForm,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return Redirect::to(&format!(
            "/login?next={}",
            encode(&format!("/sessions/{session_id}"))
        ))
        .into_response();
    };
    let post = AnswerPost::from_pairs(&session_id, pairs);
    let round_id = post.round_id.clone();
    let notice = services(&state).answer(&viewer, post).await;
    if let Err(error) = session.insert(FLASH_KEY, &notice).await {
        tracing::warn!(%error, "cannot keep the answer's outcome for the next page");
    }
    let target = format!(
        "/sessions/{}#round-{}",
        encode(&session_id),
        encode(&round_id)
    );
    Redirect::to(&target).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_stay_on_this_site() {
        assert_eq!(local_path("/sessions/a"), "/sessions/a");
        assert_eq!(local_path("//evil.example"), "/");
        assert_eq!(local_path("https://evil.example"), "/");
        assert_eq!(local_path("/\\evil.example"), "/");
    }

    #[test]
    fn open_redirect_through_next_goes_home() {
        for next in [
            "/\t/evil.example/phish",
            "/\n/evil.example",
            "\\\\evil.example",
            "/a\\b",
            "evil.example",
            "",
            "/sessions/a\nSet-Cookie: x=1",
        ] {
            assert_eq!(local_path(next), "/", "{next:?}");
        }
        for kept in ["/sessions/a?x=1#y", "/%09/still-here"] {
            assert_eq!(local_path(kept), kept);
        }
    }

    #[test]
    fn pages_need_sign_in_but_assets_and_sign_in_do_not() {
        assert!(is_private_page("/"));
        assert!(is_private_page("/sessions/a"));
        assert!(is_private_page("/admin/webhooks"));
        assert!(!is_private_page("/login"));
        assert!(!is_private_page("/pkg/anteroom.js"));
        assert!(!is_private_page("/api/v1/sessions"));
        // Assets and probes are served without reading the browser session; the API needs it.
        assert!(is_asset_or_probe("/pkg/anteroom_bg.wasm") && is_asset_or_probe("/healthz"));
        assert!(!is_private_page("/robots.txt"));
        assert!(!is_asset_or_probe("/api/v1/events") && !is_asset_or_probe("/fn/answer"));
    }

    #[test]
    fn cross_site_posts_are_recognised() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:3000".parse().expect("header"));
        assert!(
            !cross_site(&headers),
            "no Origin: a same-site form or a script"
        );
        headers.insert(
            header::ORIGIN,
            "http://127.0.0.1:3000".parse().expect("header"),
        );
        assert!(!cross_site(&headers));
        headers.insert(
            header::ORIGIN,
            "https://evil.example".parse().expect("header"),
        );
        assert!(cross_site(&headers));
    }
}
