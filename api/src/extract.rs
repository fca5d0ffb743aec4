//! Request extractors whose every rejection is a JSON error (docs/api.md#errors): bodies, path segments and callers.

use anteroom_domain::{
    access::{Principal, PrincipalKind, Role},
    limits::nul_at,
};
use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, Path, Query, Request},
    http::{HeaderMap, Method, StatusCode, header, request::Parts},
};
use serde::{Deserialize as _, de::DeserializeOwned};
use serde_json::Value;

use super::error::ApiError;
use crate::{
    AppState,
    credentials::{self, CsrfToken},
};

/// A JSON body: `Content-Type: application/json`, within the body limit, parsed into `T`.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let is_json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| {
                let mime = value.split(';').next().unwrap_or_default().trim();
                mime.eq_ignore_ascii_case("application/json") || mime.ends_with("+json")
            });
        if !is_json {
            return Err(ApiError::validation(
                "Send the body as JSON with `Content-Type: application/json`.",
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        super::error::ErrorCode::PayloadTooLarge,
                        format!(
                            "The request body is larger than {} KiB.",
                            state.config.body_limit / 1024
                        ),
                    )
                } else {
                    ApiError::validation(format!("The request body could not be read: {rejection}"))
                }
            })?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|error| {
            ApiError::validation(format!("The body is not valid JSON: {error}."))
        })?;
        refuse_nul(&value, "body")?;
        // Every body of this API is an object; serde would also read a struct from an array.
        if !value.is_object() {
            return Err(ApiError::validation("The body must be a JSON object."));
        }
        serde_json::from_value(value).map(ApiJson).map_err(|error| {
            ApiError::validation(format!(
                "The body does not have the expected shape: {error}."
            ))
        })
    }
}

/// Refuses a NUL character anywhere in a JSON value (strings and keys) with a 422 naming where.
pub fn refuse_nul(value: &Value, at: &str) -> Result<(), ApiError> {
    match nul_at(value) {
        None => Ok(()),
        Some(path) => {
            let property = format!("{at}{path}");
            Err(ApiError::validation(format!(
                "`{property}` holds a NUL character (\\u0000), which Anteroom does not store."
            ))
            .with_details(serde_json::json!({ "property": property })))
        }
    }
}

/// Refuses `%00` in a raw path or query string (422), before it is decoded into a NUL.
fn refuse_encoded_nul(raw: &str, what: &str) -> Result<(), ApiError> {
    if raw
        .as_bytes()
        .windows(3)
        .any(|w| w.eq_ignore_ascii_case(b"%00"))
    {
        Err(ApiError::validation(format!(
            "The {what} holds a NUL character (%00), which Anteroom does not store."
        )))
    } else {
        Ok(())
    }
}

/// Path segments; a segment that cannot be decoded is a 422, not axum's plain-text 400.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        refuse_encoded_nul(parts.uri.path(), "URL path")?;
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| ApiPath(value))
            .map_err(|rejection| {
                ApiError::validation(format!("The URL path is malformed: {rejection}"))
            })
    }
}

/// Query parameters; a malformed query string is a 422 JSON error.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        refuse_encoded_nul(parts.uri.query().unwrap_or_default(), "query string")?;
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| ApiQuery(value))
            .map_err(|rejection| {
                ApiError::validation(format!("The query string is malformed: {rejection}"))
            })
    }
}

/// Who is calling the management API: an API key (`Authorization: Bearer <api key>`), or a person signed in
/// to the web app in this browser.
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl Caller {
    /// How answers by this caller are recorded ("who answered").
    pub fn label(&self) -> String {
        self.0.label()
    }

    pub fn require(&self, allowed: impl Fn(Role) -> bool, doing: &str) -> Result<(), ApiError> {
        if allowed(self.0.role) {
            return Ok(());
        }
        let who = match self.0.kind {
            PrincipalKind::Person => format!("{} has", self.0.name),
            PrincipalKind::ApiKey => format!("The API key {} has", self.0.name),
        };
        Err(ApiError::forbidden(format!(
            "{who} the {} role, which may not {doing}.",
            self.0.role.as_str()
        )))
    }
}

/// The bearer token of a request, if it sent one.
/// Deserializes an integer field from any JSON number whose value is a whole number (`60`, and `60.0`, which
/// JSON Schema also calls an integer), so the body is read as its schema says.
pub fn integral<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    let number = serde_json::Number::deserialize(deserializer)?;
    let whole = number.as_i64().or_else(|| {
        number
            .as_f64()
            .filter(|value| value.fract() == 0.0 && value.abs() < 9.0e15)
            .map(
                #[allow(
                    clippy::cast_possible_truncation,
                    reason = "a whole number under 9e15 in magnitude: exact as an i64"
                )]
                |value| value as i64,
            )
    });
    whole
        .and_then(|whole| T::try_from(whole).ok())
        .ok_or_else(|| serde::de::Error::custom(format!("{number} is not a whole number in range")))
}

/// [`integral`] for an optional field (`null` or absent is `None`).
pub fn integral_option<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    let number = Option::<serde_json::Number>::deserialize(deserializer)?;
    number
        .map(|number| integral(number).map_err(serde::de::Error::custom))
        .transpose()
}

pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        match OptionalCaller::from_request_parts(parts, state).await? {
            OptionalCaller(Some(caller)) => Ok(caller),
            OptionalCaller(None) => Err(ApiError::unauthorized(
                "Send an API key as `Authorization: Bearer <key>` (create one with `anteroom apikey create`).",
            )),
        }
    }
}

/// A caller when credentials were sent; `None` when none were. Wrong credentials are still a 401.
pub struct OptionalCaller(pub Option<Caller>);

impl FromRequestParts<AppState> for OptionalCaller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Some(secret) = bearer(&parts.headers) else {
            return browser_caller(parts).map(OptionalCaller);
        };
        match state
            .store
            .api_key_for_hash(&credentials::hash(secret))
            .await?
        {
            Some(key) => Ok(OptionalCaller(Some(Caller(Principal::api_key(&key))))),
            None => Err(ApiError::unauthorized(
                "The API key is not valid or was revoked.",
            )),
        }
    }
}

/// The person signed in to the web app, when the request carries their browser session. A browser write needs
/// the session's CSRF token in `X-CSRF-Token`, so another site cannot make the browser write for them.
fn browser_caller(parts: &Parts) -> Result<Option<Caller>, ApiError> {
    let (Some(principal), Some(CsrfToken(csrf))) = (
        parts.extensions.get::<Principal>(),
        parts.extensions.get::<CsrfToken>(),
    ) else {
        return Ok(None);
    };
    let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
    let token = parts
        .headers
        .get("x-csrf-token")
        .and_then(|value| value.to_str().ok());
    if !safe && token != Some(csrf.as_str()) {
        return Err(ApiError::forbidden(
            "A browser write needs the page's CSRF token in `X-CSRF-Token` (or use an API key).",
        ));
    }
    Ok(Some(Caller(principal.clone())))
}
