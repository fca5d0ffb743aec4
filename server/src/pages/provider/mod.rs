//! Sign-in through the company's OpenID Connect provider: `/auth/oidc/start` sends the browser there with a
//! fresh `state`, `nonce` and PKCE challenge kept in its session; `/auth/oidc/callback` takes them back once,
//! redeems the code, and signs in the person the provider vouched for, with the role and groups their
//! provider groups map to. A provider sign-in lasts `ANTEROOM_OIDC_RECHECK_MINUTES`; then the browser goes
//! through the provider again, which reads the person's groups again.

mod relying_party;

use std::{net::SocketAddr, sync::Arc};

use anteroom_domain::{
    access::Role,
    provider_people::{GroupMapping, ProviderPerson, SUBJECT_CHARS_MAX},
    text::escape_html,
};
use axum::{
    Extension, Router,
    extract::{ConnectInfo, Query, State},
    http::StatusCode,
    response::{Html, IntoResponse, Redirect, Response},
    routing::get,
};
use serde::{Deserialize, Serialize};
use tower_sessions::Session;

pub use relying_party::{Reauthentication, RelyingParty};

use anteroom_app::ui::pages::login::SignInChoices;

use crate::AppState;

/// Session key of a sign-in under way (state, nonce, PKCE verifier, where to go next).
const PENDING_KEY: &str = "provider_pending";
/// Session key of when a provider sign-in must go through the provider again (epoch seconds).
pub(super) const RECHECK_AT_KEY: &str = "provider_recheck_at";

/// The most characters of a refusal's reason a page shows.
const REFUSAL_CHARS_MAX: usize = 300;

/// The longest return address kept (a longer one goes home instead).
pub(super) const NEXT_BYTES_MAX: usize = 2048;

/// How long a started sign-in may take at the provider.
const PENDING_FOR_SECONDS: i64 = 15 * 60;

/// How people sign in, as configured: through a provider, with local passwords, or both.
#[derive(Debug, Clone)]
pub struct SignInConfig {
    pub provider: Option<ProviderConfig>,
    pub passwords: bool,
}

impl Default for SignInConfig {
    fn default() -> Self {
        Self {
            provider: None,
            passwords: true,
        }
    }
}

/// How people sign in on one instance (its provider knows the instance's public URL).
#[derive(Clone)]
pub struct SignInSettings {
    pub provider: Option<Arc<ProviderSignIn>>,
    pub passwords: bool,
    /// Passkeys, when the public URL lets browsers use them (a domain name, over https or on localhost).
    pub passkeys: Option<Arc<super::passkeys::PasskeyParty>>,
}

impl SignInSettings {
    pub fn new(config: &SignInConfig, public_url: &str) -> anyhow::Result<Self> {
        Ok(Self {
            provider: config
                .provider
                .as_ref()
                .map(|provider| ProviderSignIn::new(provider, public_url).map(Arc::new))
                .transpose()?,
            passwords: config.passwords,
            passkeys: match super::passkeys::PasskeyParty::for_public_url(public_url) {
                Ok(party) => Some(Arc::new(party)),
                Err(why) => {
                    tracing::info!("passkeys are off: {why}");
                    None
                }
            },
        })
    }

    /// What the sign-in page offers.
    pub fn choices(&self) -> SignInChoices {
        SignInChoices {
            provider: self.provider.as_ref().map(|provider| provider.name.clone()),
            passwords: self.passwords,
            passkeys: self.passkeys.is_some(),
        }
    }
}

/// The configured provider: who it is, how its groups map, and how long its sign-ins last.
pub struct ProviderSignIn {
    pub relying_party: RelyingParty,
    pub mapping: GroupMapping,
    /// Shown on the sign-in button: "Sign in with NAME".
    pub name: String,
    pub recheck: chrono::Duration,
}

/// What the configuration names, checked at start (a mistake stops the start, not every sign-in).
#[derive(Clone)]
pub struct ProviderConfig {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    pub scopes: String,
    pub groups_claim: String,
    pub mapping: String,
    pub default_role: String,
    pub name: String,
    pub recheck_minutes: u32,
    /// How long after their last provider sign-in a person may answer outside a page.
    pub answer_elsewhere_hours: u32,
    /// `max_age`: how recently the person must have authenticated at the provider (`None`: no limit).
    pub max_age_minutes: Option<u32>,
    /// `prompt`: what the provider must ask at every sign-in (`login` makes everyone enter their credentials).
    pub prompt: Option<String>,
}

impl ProviderSignIn {
    /// The provider for an Anteroom reached at `public_url` (its callback is `PUBLIC_URL/auth/oidc/callback`).
    pub fn new(config: &ProviderConfig, public_url: &str) -> anyhow::Result<Self> {
        let default_role = match config.default_role.trim() {
            "none" => None,
            role => Some(Role::parse(role).ok_or_else(|| {
                anyhow::anyhow!(
                    "ANTEROOM_OIDC_DEFAULT_ROLE: {role:?} is not viewer, responder, admin or none"
                )
            })?),
        };
        let mapping = GroupMapping::parse(&config.mapping, default_role)
            .map_err(|error| anyhow::anyhow!("ANTEROOM_OIDC_GROUPS: {error}"))?;
        let scopes: Vec<String> = config
            .scopes
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let redirect = format!("{}/auth/oidc/callback", public_url.trim_end_matches('/'));
        Ok(Self {
            relying_party: RelyingParty::new(
                &config.issuer,
                &config.client_id,
                &config.client_secret,
                &redirect,
                &scopes,
                &config.groups_claim,
                Reauthentication {
                    max_age: config
                        .max_age_minutes
                        .map(|minutes| std::time::Duration::from_secs(u64::from(minutes) * 60)),
                    prompt: Reauthentication::prompts(
                        config.prompt.as_deref().unwrap_or_default(),
                    )?,
                },
            )?,
            mapping,
            name: config.name.trim().to_owned(),
            recheck: chrono::Duration::minutes(i64::from(config.recheck_minutes.max(1))),
        })
    }
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &"(hidden)")
            .field("scopes", &self.scopes)
            .field("mapping", &self.mapping)
            .finish_non_exhaustive()
    }
}

/// A sign-in under way, kept in the browser's session until the provider sends it back (once).
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    nonce: String,
    pkce_verifier: String,
    next: String,
    started_at: i64,
}

/// The routes, when a provider is configured.
pub fn routes(provider: Option<Arc<ProviderSignIn>>) -> Router<AppState> {
    match provider {
        Some(provider) => Router::new()
            .route("/auth/oidc/start", get(start))
            .route("/auth/oidc/callback", get(callback))
            .layer(Extension(provider)),
        None => Router::new(),
    }
}

#[derive(Deserialize)]
struct StartQuery {
    next: Option<String>,
}

/// Sends the browser to the provider, remembering in its session what must come back.
async fn start(
    State(state): State<AppState>,
    Extension(provider): Extension<Arc<ProviderSignIn>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    Query(query): Query<StartQuery>,
) -> Response {
    // Each start writes a session and may fetch the provider's documents: the address's sign-in budget first.
    if let Err(seconds) = super::spend_sign_in_attempt(&state, peer, None) {
        return super::too_many_sign_ins(seconds);
    }
    let next = query
        .next
        .as_deref()
        .filter(|next| next.len() <= NEXT_BYTES_MAX)
        .map_or("/", super::local_path)
        .to_owned();
    let authorization = match provider.relying_party.authorize().await {
        Ok(authorization) => authorization,
        Err(error) => {
            tracing::warn!(%error, "cannot start a sign-in through the identity provider");
            return refused(StatusCode::BAD_GATEWAY, &error.to_string());
        }
    };
    let pending = Pending {
        state: authorization.state,
        nonce: authorization.nonce,
        pkce_verifier: authorization.pkce_verifier,
        next,
        started_at: state.store.now().timestamp(),
    };
    super::expire_soon_unless_signed_in(&session).await;
    if let Err(error) = session.insert(PENDING_KEY, &pending).await {
        tracing::error!(%error, "cannot keep a sign-in under way");
        return refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "Signing in is not possible just now",
        );
    }
    Redirect::to(&authorization.url).into_response()
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    /// The provider's error code; its `error_description` is not shown (the provider's words on Anteroom's page
    /// could be anyone's, reaching here through a link).
    error: Option<String>,
}

/// Takes the provider's answer back: the sign-in under way is used up whatever happens next.
async fn callback(
    State(state): State<AppState>,
    Extension(provider): Extension<Arc<ProviderSignIn>>,
    session: Session,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let pending = match session.remove::<Pending>(PENDING_KEY).await {
        Ok(pending) => pending,
        Err(error) => {
            tracing::error!(%error, "cannot read a sign-in under way");
            return refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "Signing in is not possible just now",
            );
        }
    };
    let Some(pending) = pending else {
        return refused(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started in this browser, or was already used",
        );
    };
    // The state first: until it matches, nothing in the query (an error's words included) came from the provider.
    if !query
        .state
        .as_deref()
        .is_some_and(|returned| same_state(returned, &pending.state))
    {
        return refused(
            StatusCode::BAD_REQUEST,
            "This sign-in's state does not match the one this browser started",
        );
    }
    if let Some(error) = query.error {
        let error: String = error.chars().take(64).collect();
        return refused(
            StatusCode::FORBIDDEN,
            &format!("The identity provider did not sign you in ({error})"),
        );
    }
    let Some(code) = query.code else {
        return refused(
            StatusCode::BAD_REQUEST,
            "The identity provider sent no sign-in code",
        );
    };
    let now = state.store.now();
    if now.timestamp() - pending.started_at > PENDING_FOR_SECONDS {
        return refused(
            StatusCode::BAD_REQUEST,
            "This sign-in took longer than 15 minutes",
        );
    }
    let vouched = match provider
        .relying_party
        .redeem(code, pending.pkce_verifier, &pending.nonce, now)
        .await
    {
        Ok(vouched) => vouched,
        Err(error) => {
            tracing::warn!(%error, "a sign-in through the identity provider failed");
            return refused(error.status(), &error.to_string());
        }
    };
    if vouched.subject.chars().count() > SUBJECT_CHARS_MAX {
        return refused(
            StatusCode::BAD_GATEWAY,
            "The identity provider sent a subject longer than 255 characters",
        );
    }
    let issuer = provider.relying_party.issuer();
    let granted = match provider.mapping.grant(&vouched.groups) {
        Ok(granted) => granted,
        Err(refusal) => {
            // Someone the provider once admitted and now does not keeps nothing it granted.
            if let Err(error) = state
                .store
                .withdraw_provider_access(issuer, &vouched.subject)
                .await
            {
                tracing::error!(%error, "cannot withdraw what the identity provider no longer grants");
            }
            return refused(StatusCode::FORBIDDEN, &refusal.to_string());
        }
    };
    let person = ProviderPerson::new(
        issuer,
        &vouched.subject,
        vouched.email.as_deref(),
        vouched.email_verified,
        vouched.preferred_username.as_deref(),
        granted,
    );
    let user = match state.store.sign_in_from_provider(&person).await {
        Ok(user) => user,
        // A rule of the store's (a team limit) refused the grant: its words say what to do.
        Err(anteroom_store::StoreError::Refused(refusal)) => {
            return refused(StatusCode::FORBIDDEN, refusal.message());
        }
        Err(error) => {
            tracing::error!(%error, "cannot record a sign-in through the identity provider");
            return refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "Signing in is not possible just now",
            );
        }
    };
    let recheck_at = (now + provider.recheck).timestamp();
    let started = super::start_session(&state, &session, &user).await;
    if let Err(error) = match started {
        Ok(()) => session.insert(RECHECK_AT_KEY, recheck_at).await,
        Err(error) => Err(error),
    } {
        tracing::error!(%error, "cannot start a browser session");
        return refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "Signing in is not possible just now",
        );
    }
    tracing::info!(username = %user.username, role = user.role.as_str(), "signed in through the identity provider");
    Redirect::to(&pending.next).into_response()
}

/// A page saying why the sign-in did not happen, and a way back.
fn refused(status: StatusCode, why: &str) -> Response {
    // The provider's words can reach here (a token endpoint's error, up to the 1 MiB a response may be): a
    // sentence's worth is shown.
    let why = escape_html(&why.chars().take(REFUSAL_CHARS_MAX).collect::<String>());
    (
        status,
        Html(format!(
            "<!DOCTYPE html><html lang=\"en\"><meta charset=\"utf-8\"><title>Not signed in · Anteroom</title>\
             <main><h1>Not signed in</h1><p role=\"alert\">{why}.</p><p><a href=\"/login\">Back to sign-in</a></p></main></html>"
        )),
    )
        .into_response()
}

/// Whether the state that came back is the one this browser started with, compared through their hashes so
/// the time taken says nothing about how much of it matched.
fn same_state(returned: &str, expected: &str) -> bool {
    crate::credentials::hash(returned) == crate::credentials::hash(expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refusal_escapes_what_the_provider_sent() {
        let page = refused(StatusCode::FORBIDDEN, "<script>alert(1)</script>");
        assert_eq!(page.status(), StatusCode::FORBIDDEN);
        let body = axum::body::to_bytes(page.into_body(), 1 << 20)
            .await
            .expect("body");
        let body = String::from_utf8_lossy(&body);
        assert!(
            body.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !body.contains("<script>")
        );
    }

    #[tokio::test]
    async fn a_refusal_shows_a_sentence_of_what_the_provider_sent() {
        let page = refused(StatusCode::BAD_REQUEST, &"x".repeat(100_000));
        let body = axum::body::to_bytes(page.into_body(), 1 << 20)
            .await
            .expect("body");
        assert!(body.len() < 1_000, "{} bytes", body.len());
    }

    #[test]
    fn only_the_same_state_matches() {
        assert!(same_state("abc", "abc"));
        assert!(!same_state("abc", "abd") && !same_state("", "abc"));
    }
}
