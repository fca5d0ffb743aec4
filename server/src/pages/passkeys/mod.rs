//! Passkeys: a signed-in person adds one on their profile (`/profile/passkeys/start` then `…/finish`, driven by
//! `/passkeys.js`), lists and removes them there, and signs in with one in one touch (`/auth/passkeys/start`
//! then `…/finish`). Each ceremony's state waits in the browser's session and is used once.

mod relying_party;

use std::{net::SocketAddr, sync::Arc};

use anteroom_api::error::{ApiError, ErrorCode};
use anteroom_app::ui::model::Viewer;
use anteroom_domain::form::posted_value;
use anteroom_store::{NewPasskey, PASSKEYS_PER_PERSON_MAX, PasskeyAdded};
use axum::{
    Extension, Json, Router,
    extract::{ConnectInfo, FromRequest, Request, State},
    response::{IntoResponse, Redirect, Response},
    routing::post,
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tower_sessions::Session;

pub use relying_party::PasskeyParty;

use super::SameSiteForm;
use crate::AppState;

/// Session key of a passkey being added (the ceremony's state and whose it is).
pub(super) const ADDING_KEY: &str = "passkey_adding";
/// Session key of a sign-in with a passkey under way (the ceremony's state).
pub(super) const SIGNING_IN_KEY: &str = "passkey_signing_in";

/// How recent the browser's sign-in must be for it to add a passkey: a session cookie someone took, or a browser
/// left open, must not become a way in of its own.
const ADD_WITHIN_SECONDS: i64 = 10 * 60;

/// The largest ceremony answer read: a WebAuthn response is a few KB (an RSA key and attestation included).
const RESPONSE_BYTES_MAX: usize = 64 * 1024;
/// The longest name a person gives a passkey.
const NAME_CHARS_MAX: usize = 64;

/// A passkey being added, kept in the session until the browser answers.
#[derive(Serialize, Deserialize)]
struct Adding {
    state: String,
    /// The person it was started for: a browser signed in as someone else since cannot finish it.
    user_id: String,
}

/// What the passkey routes need: the relying party, and how long a provider sign-in lasts (when there is a
/// provider), which a passkey sign-in of someone the provider vouches for lasts too.
#[derive(Clone)]
struct Passkeys {
    party: Arc<PasskeyParty>,
    provider_recheck: Option<chrono::Duration>,
    /// Whether local passwords sign in: when they do not, only the provider's people may use passkeys.
    passwords: bool,
}

/// The routes, when the public URL lets browsers use passkeys here.
pub fn routes(sign_in: &super::SignInSettings) -> Router<AppState> {
    match &sign_in.passkeys {
        Some(party) => Router::new()
            .route("/profile/passkeys/start", post(start_adding))
            .route("/profile/passkeys/finish", post(finish_adding))
            .route("/profile/passkeys/remove", post(remove))
            .route("/auth/passkeys/start", post(start_sign_in))
            .route("/auth/passkeys/finish", post(finish_sign_in))
            .layer(Extension(Passkeys {
                party: Arc::clone(party),
                provider_recheck: sign_in.provider.as_ref().map(|provider| provider.recheck),
                passwords: sign_in.passwords,
            })),
        None => Router::new(),
    }
}

/// A JSON body posted by Anteroom's own page: refused when another site made the browser send it, when it is
/// larger than a ceremony's answer can be, or when it is not a JSON object.
struct CeremonyBody(serde_json::Map<String, Value>);

impl FromRequest<AppState> for CeremonyBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &AppState) -> Result<Self, Self::Rejection> {
        if super::cross_site(request.headers()) {
            return Err(ApiError::forbidden(
                "This request came from another site; open Anteroom and try again.",
            ));
        }
        let body = axum::body::to_bytes(request.into_body(), RESPONSE_BYTES_MAX)
            .await
            .map_err(|_| {
                ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    "A passkey's answer is at most 64 KiB.",
                )
            })?;
        if body.is_empty() {
            return Ok(Self(serde_json::Map::new()));
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(object)) => Ok(Self(object)),
            _ => Err(ApiError::validation("The body must be a JSON object.")),
        }
    }
}

/// The signed-in person of a profile call, whose page's CSRF token came in `X-CSRF-Token`.
fn signed_in_person(
    viewer: Option<Extension<Viewer>>,
    headers: &axum::http::HeaderMap,
) -> Result<Viewer, ApiError> {
    let Some(Extension(viewer)) = viewer else {
        return Err(ApiError::unauthorized(
            "Sign in first: passkeys are added to a signed-in person.",
        ));
    };
    let token = headers
        .get("x-csrf-token")
        .and_then(|value| value.to_str().ok());
    if token != Some(viewer.csrf.as_str()) {
        return Err(ApiError::forbidden(
            "Adding a passkey needs the page's CSRF token in `X-CSRF-Token`; reload the page and try again.",
        ));
    }
    Ok(viewer)
}

fn unavailable(error: impl std::fmt::Display) -> ApiError {
    tracing::error!(%error, "a passkey ceremony could not reach its storage");
    ApiError::new(
        ErrorCode::Unavailable,
        "Passkeys cannot be used just now; try again in a moment.",
    )
}

/// The credential part of a ceremony's answer, as the bytes the WebAuthn library reads.
fn credential_bytes(body: &serde_json::Map<String, Value>) -> Result<Vec<u8>, ApiError> {
    match body.get("credential") {
        Some(credential @ Value::Object(_)) => serde_json::to_vec(credential)
            .map_err(|_| ApiError::validation("`credential` could not be read.")),
        _ => Err(ApiError::validation(
            "`credential` must be the passkey's answer: the JSON of `PublicKeyCredential.toJSON()`.",
        )),
    }
}

/// Starts adding a passkey to the signed-in person: the options for `navigator.credentials.create`.
async fn start_adding(
    State(state): State<AppState>,
    Extension(passkeys): Extension<Passkeys>,
    viewer: Option<Extension<Viewer>>,
    session: Session,
    headers: axum::http::HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let viewer = signed_in_person(viewer, &headers)?;
    let signed_in_at = session
        .get::<i64>(super::SIGNED_IN_AT_KEY)
        .await
        .map_err(unavailable)?
        .unwrap_or(0);
    if state.store.now().timestamp() - signed_in_at > ADD_WITHIN_SECONDS {
        return Err(ApiError::forbidden(
            "Adding a passkey needs a sign-in in the last 10 minutes: sign out, sign in again, then add it.",
        ));
    }
    let id = &viewer.principal.id;
    let existing: Vec<String> = state
        .store
        .passkeys(id)
        .await
        .map_err(unavailable)?
        .into_iter()
        .map(|passkey| passkey.id)
        .collect();
    if i64::try_from(existing.len()).unwrap_or(i64::MAX) >= PASSKEYS_PER_PERSON_MAX {
        return Err(too_many());
    }
    let user_handle = state
        .store
        .passkey_user_handle(id, &PasskeyParty::new_user_handle())
        .await
        .map_err(unavailable)?
        .ok_or_else(|| ApiError::unauthorized("Sign in again."))?;
    let (options, kept) = passkeys
        .party
        .start_adding(&viewer.principal.name, &user_handle, &existing)
        .map_err(|refused| ApiError::validation(refused.to_string()))?;
    let adding = Adding {
        state: BASE64URL.encode(kept),
        user_id: id.clone(),
    };
    session
        .insert(ADDING_KEY, &adding)
        .await
        .map_err(unavailable)?;
    Ok(Json(options))
}

fn too_many() -> ApiError {
    ApiError::new(
        ErrorCode::Conflict,
        format!(
            "You have {PASSKEYS_PER_PERSON_MAX} passkeys, the most one person may have; remove one first."
        ),
    )
}

/// Checks the browser's new passkey and keeps it under the name the person gave it.
async fn finish_adding(
    State(state): State<AppState>,
    Extension(passkeys): Extension<Passkeys>,
    viewer: Option<Extension<Viewer>>,
    session: Session,
    headers: axum::http::HeaderMap,
    CeremonyBody(body): CeremonyBody,
) -> Result<Json<Value>, ApiError> {
    let viewer = signed_in_person(viewer, &headers)?;
    let name = passkey_name(body.get("name"))?;
    let credential = credential_bytes(&body)?;
    let adding = session
        .remove::<Adding>(ADDING_KEY)
        .await
        .map_err(unavailable)?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::State,
                "No passkey is being added in this browser (or it was already added); start again.",
            )
        })?;
    if adding.user_id != viewer.principal.id {
        return Err(ApiError::new(
            ErrorCode::State,
            "This passkey was started for someone else signed in on this browser; start again.",
        ));
    }
    let kept = BASE64URL
        .decode(&adding.state)
        .map_err(|_| ApiError::new(ErrorCode::State, "This passkey was not started here."))?;
    let added = passkeys
        .party
        .finish_adding(&kept, &credential)
        .map_err(|refused| ApiError::validation(refused.to_string()))?;
    let outcome = state
        .store
        .add_passkey(&NewPasskey {
            id: &added.id,
            user_id: &viewer.principal.id,
            name: &name,
            public_key: &added.public_key,
            counters: &added.counters,
        })
        .await
        .map_err(unavailable)?;
    match outcome {
        PasskeyAdded::Added => {
            tracing::info!(username = %viewer.principal.name, "added a passkey");
            Ok(Json(
                json!({ "message": format!("Passkey \u{201c}{name}\u{201d} added.") }),
            ))
        }
        PasskeyAdded::Taken => Err(ApiError::new(
            ErrorCode::Conflict,
            "This passkey is already known here.",
        )),
        PasskeyAdded::TooMany => Err(too_many()),
        PasskeyAdded::NoSuchPerson => Err(ApiError::unauthorized("Sign in again.")),
    }
}

/// The name a person gave a new passkey: trimmed, at most 64 characters, no control characters ("Passkey"
/// when none).
fn passkey_name(value: Option<&Value>) -> Result<String, ApiError> {
    let name = match value {
        None | Some(Value::Null) => "",
        Some(Value::String(name)) => name.trim(),
        Some(_) => return Err(ApiError::validation("`name` must be text.")),
    };
    if name.chars().any(char::is_control) {
        return Err(ApiError::validation(
            "A passkey's name cannot hold control characters.",
        ));
    }
    if name.chars().count() > NAME_CHARS_MAX {
        return Err(ApiError::validation(format!(
            "A passkey's name is at most {NAME_CHARS_MAX} characters."
        )));
    }
    Ok(if name.is_empty() { "Passkey" } else { name }.to_owned())
}

/// "Remove" on the profile's list of passkeys (a plain form: the page shows the list again).
async fn remove(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    SameSiteForm(pairs): SameSiteForm,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return Redirect::to("/login?next=%2Fprofile").into_response();
    };
    if viewer.csrf != posted_value(&pairs, "csrf") {
        return super::forbidden_cross_site();
    }
    match state
        .store
        .remove_passkey(&viewer.principal.id, &posted_value(&pairs, "id"))
        .await
    {
        Ok(_) => Redirect::to("/profile").into_response(),
        Err(error) => unavailable(error).into_response(),
    }
}

/// Starts a sign-in with a passkey: the options for `navigator.credentials.get`.
async fn start_sign_in(
    State(state): State<AppState>,
    Extension(passkeys): Extension<Passkeys>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    // Each start writes a session: the address's sign-in budget first, as for passwords.
    if let Err(seconds) = super::spend_sign_in_attempt(&state, peer, None) {
        return Err(ApiError::rate_limited(
            seconds,
            "Too many sign-in attempts from this address; wait and try again.",
        ));
    }
    let (options, kept) = passkeys
        .party
        .start_sign_in()
        .map_err(|refused| ApiError::validation(refused.to_string()))?;
    super::expire_soon_unless_signed_in(&session).await;
    session
        .insert(SIGNING_IN_KEY, BASE64URL.encode(kept))
        .await
        .map_err(unavailable)?;
    Ok(Json(options))
}

/// Checks the passkey's answer and signs its person in; says where to go next.
async fn finish_sign_in(
    State(state): State<AppState>,
    Extension(passkeys): Extension<Passkeys>,
    session: Session,
    CeremonyBody(body): CeremonyBody,
) -> Result<Json<Value>, ApiError> {
    let credential = credential_bytes(&body)?;
    let next = body
        .get("next")
        .and_then(Value::as_str)
        .filter(|next| next.len() <= super::provider::NEXT_BYTES_MAX)
        .map_or("/", super::local_path)
        .to_owned();
    let kept = session
        .remove::<String>(SIGNING_IN_KEY)
        .await
        .map_err(unavailable)?
        .and_then(|kept| BASE64URL.decode(kept).ok())
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::State,
                "This sign-in was not started in this browser, or was already used; start again.",
            )
        })?;
    let response = PasskeyParty::read_sign_in(&credential)
        .map_err(|refused| ApiError::validation(refused.to_string()))?;
    let credential_id = response.credential_id();
    let stored = state
        .store
        .passkey_for_sign_in(&credential_id)
        .await
        .map_err(unavailable)?
        .filter(|stored| stored.user_handle == response.user_handle())
        .ok_or_else(|| {
            ApiError::unauthorized(
                "This passkey is not known here (it may have been removed); sign in another way.",
            )
        })?;
    let counters = passkeys
        .party
        .finish_sign_in(
            &kept,
            &response,
            &stored.user_handle,
            &stored.public_key,
            &stored.counters,
        )
        .map_err(|refused| ApiError::unauthorized(refused.to_string()))?;
    let user = state
        .store
        .get_user(&stored.user_id)
        .await
        .map_err(unavailable)?
        .ok_or_else(|| ApiError::unauthorized("This passkey's person no longer exists."))?;
    // Only over the counters this answer was checked against: of two sign-ins racing with one passkey (a clone,
    // a replay into another ceremony), one wins.
    if !state
        .store
        .passkey_used(&credential_id, &stored.counters, &counters)
        .await
        .map_err(unavailable)?
    {
        return Err(ApiError::unauthorized(
            "This passkey signed in somewhere else at the same moment; try again.",
        ));
    }
    let provider_sign_in = match passkeys.provider_recheck {
        Some(_) => state
            .store
            .provider_signed_in_at(&user.id)
            .await
            .map_err(unavailable)?,
        None => None,
    };
    let recheck_at = match admission(&passkeys, provider_sign_in, state.store.now()) {
        Admission::Local => None,
        Admission::Until(deadline) => Some(deadline.timestamp()),
        Admission::ThroughProvider => {
            tracing::info!(username = %user.username, "a passkey sign-in goes through the identity provider first");
            let through_provider = format!("/auth/oidc/start?next={}", super::encode(&next));
            return Ok(Json(json!({ "next": through_provider })));
        }
        Admission::Refused => {
            return Err(ApiError::forbidden(
                "Here people sign in through the company's identity provider; this passkey's person never has.",
            ));
        }
    };
    sign_in_locally(&state, &session, &user, recheck_at, &next).await
}

/// What a passkey that checked out lets its person do.
#[derive(Debug, PartialEq, Eq)]
enum Admission {
    /// Sign in as anyone local does.
    Local,
    /// Sign in until their last provider sign-in's deadline.
    Until(chrono::DateTime<chrono::Utc>),
    /// Go through the provider first: their last provider sign-in is over (or the provider refused them).
    ThroughProvider,
    /// Not at all: passwords are off, so only the provider's people sign in, and it never vouched for them.
    Refused,
}

/// Someone whose rights come from the identity provider keeps them only as long as their last provider sign-in
/// lasts: a passkey signs them in for what remains of it and sends them through the provider (which reads their
/// groups again) once it is over, so a passkey never gets round the provider's decisions.
fn admission(
    passkeys: &Passkeys,
    provider_sign_in: Option<chrono::DateTime<chrono::Utc>>,
    now: chrono::DateTime<chrono::Utc>,
) -> Admission {
    let Some(recheck) = passkeys.provider_recheck else {
        return Admission::Local;
    };
    match provider_sign_in {
        None if passkeys.passwords => Admission::Local,
        None => Admission::Refused,
        Some(at) if now >= at + recheck => Admission::ThroughProvider,
        Some(at) => Admission::Until(at + recheck),
    }
}

/// Starts the browser's session for `user` (with the provider's deadline, when they are the provider's) and says
/// where to go next.
async fn sign_in_locally(
    state: &AppState,
    session: &Session,
    user: &anteroom_domain::access::User,
    recheck_at: Option<i64>,
    next: &str,
) -> Result<Json<Value>, ApiError> {
    super::start_session(state, session, user)
        .await
        .map_err(unavailable)?;
    if let Some(recheck_at) = recheck_at {
        session
            .insert(super::provider::RECHECK_AT_KEY, recheck_at)
            .await
            .map_err(unavailable)?;
    }
    tracing::info!(username = %user.username, "signed in with a passkey");
    Ok(Json(json!({ "next": next })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passkey_admits_for_as_long_as_the_provider_would() {
        let party =
            Arc::new(PasskeyParty::for_public_url("https://anteroom.example").expect("party"));
        let now = chrono::DateTime::from_timestamp(1_000_000, 0).expect("time");
        let hour = chrono::Duration::hours(1);
        let with = |provider_recheck, passwords| Passkeys {
            party: Arc::clone(&party),
            provider_recheck,
            passwords,
        };
        assert_eq!(admission(&with(None, true), None, now), Admission::Local);
        assert_eq!(
            admission(&with(Some(hour), true), None, now),
            Admission::Local
        );
        assert_eq!(
            admission(&with(Some(hour), false), None, now),
            Admission::Refused
        );
        let recent = now - chrono::Duration::minutes(10);
        assert_eq!(
            admission(&with(Some(hour), false), Some(recent), now),
            Admission::Until(recent + hour)
        );
        assert_eq!(
            admission(&with(Some(hour), true), Some(now - hour), now),
            Admission::ThroughProvider
        );
        let refused = chrono::DateTime::from_timestamp(0, 0).expect("epoch");
        assert_eq!(
            admission(&with(Some(hour), true), Some(refused), now),
            Admission::ThroughProvider
        );
    }

    #[test]
    fn a_passkey_name_is_short_plain_text() {
        assert_eq!(passkey_name(None).expect("none"), "Passkey");
        assert_eq!(
            passkey_name(Some(&json!("  My phone "))).expect("name"),
            "My phone"
        );
        assert!(passkey_name(Some(&json!("a\u{0}b"))).is_err());
        assert!(passkey_name(Some(&json!("x".repeat(65)))).is_err());
        assert!(passkey_name(Some(&json!(7))).is_err());
    }
}
