//! Anteroom as an OpenID Connect relying party: the provider's discovery document and keys (cached, fetched
//! again when a token names a key they lack), the authorization request, and the code exchanged for an ID
//! token whose signature, issuer, audience, expiry and nonce are checked by `openidconnect`.
//!
//! Every call to the provider is bounded: 5 s to connect, 10 s in all, 1 MiB of body, no redirect followed.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex, RwLock},
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};
use openidconnect::{
    AdditionalClaims, AsyncHttpClient, AuthorizationCode, ClientId, ClientSecret, CsrfToken,
    EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet, HttpRequest,
    HttpResponse, IdTokenFields, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope, StandardErrorResponse, StandardTokenResponse,
    core::{
        CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType,
        CoreGenderClaim, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm, CoreProviderMetadata, CoreRevocableToken,
        CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most bytes read from one provider response (a discovery document, the keys, a token response).
const RESPONSE_BYTES_MAX: usize = 1024 * 1024;

/// How long the discovery document and keys are used before they are fetched again.
const METADATA_FRESH_FOR: Duration = Duration::from_secs(3600);

/// The least time between two fetches forced by tokens naming an unknown key, so a stream of forged tokens
/// cannot make Anteroom hammer the provider.
const FORCED_REFRESH_EVERY: Duration = Duration::from_secs(30);

/// The ID token's claims beyond the standard ones, of which only the configured groups claim is read.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct OtherClaims {
    #[serde(flatten)]
    claims: HashMap<String, Value>,
}

impl AdditionalClaims for OtherClaims {}

type TokenResponse = StandardTokenResponse<
    IdTokenFields<
        OtherClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

type ProviderClient = openidconnect::Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    TokenResponse,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// What went wrong talking to the provider or with what it sent, in words for the person and the log.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the identity provider could not be reached or did not answer in time ({0})")]
    Unreachable(String),
    #[error("the identity provider sent a response larger than 1 MiB")]
    TooLarge,
    #[error("the identity provider's discovery document is not usable ({0})")]
    Discovery(String),
    #[error("the identity provider refused the sign-in code ({0})")]
    Exchange(String),
    #[error("the identity provider sent no ID token")]
    NoIdToken,
    #[error("the identity provider's ID token was refused: {0}")]
    Token(String),
    #[error("the identity provider's {0} claim is not a list of names")]
    Groups(String),
}

impl ProviderError {
    /// The status a refused sign-in's page carries: the provider's failures are a bad gateway; a code or a token
    /// Anteroom refuses (stale, forged, replayed) is the request's fault, not the server's.
    pub fn status(&self) -> axum::http::StatusCode {
        use axum::http::StatusCode;
        match self {
            Self::Exchange(_) => StatusCode::BAD_REQUEST,
            Self::Token(_) => StatusCode::FORBIDDEN,
            Self::Unreachable(_)
            | Self::TooLarge
            | Self::Discovery(_)
            | Self::NoIdToken
            | Self::Groups(_) => StatusCode::BAD_GATEWAY,
        }
    }
}

/// The HTTP client every provider call goes through: bounded in time and size, redirects not followed (a
/// redirect could point the server at an address of the attacker's choosing).
#[derive(Clone)]
pub struct ProviderHttp {
    client: reqwest::Client,
}

impl ProviderHttp {
    pub fn new() -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self { client })
    }

    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, ProviderError> {
        let (parts, body) = request.into_parts();
        let mut response = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(|error| ProviderError::Unreachable(error.to_string()))?;
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| ProviderError::Unreachable(error.to_string()))?
        {
            if bytes.len() + chunk.len() > RESPONSE_BYTES_MAX {
                return Err(ProviderError::TooLarge);
            }
            bytes.extend_from_slice(&chunk);
        }
        let mut reply = HttpResponse::new(bytes);
        *reply.status_mut() = response.status();
        *reply.headers_mut() = response.headers().clone();
        Ok(reply)
    }
}

impl<'c> AsyncHttpClient<'c> for ProviderHttp {
    type Error = ProviderError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, ProviderError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(self.send(request))
    }
}

/// The provider as configured, and its discovery document as last fetched.
pub struct RelyingParty {
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: ClientSecret,
    redirect: RedirectUrl,
    scopes: Vec<String>,
    groups_claim: String,
    /// How recently the person must have authenticated at the provider (`max_age`, and `auth_time` checked).
    max_age: Option<Duration>,
    /// What the provider must ask the person at every sign-in (`prompt`).
    prompt: Vec<CoreAuthPrompt>,
    http: ProviderHttp,
    /// The document and when it was fetched. Read and replaced under the lock, never held across a fetch.
    metadata: RwLock<Option<(Arc<CoreProviderMetadata>, Instant)>>,
    /// When a token naming an unknown key last forced a fetch.
    last_forced: Mutex<Option<Instant>>,
}

/// What the browser is sent to the provider with, and what must come back with it.
pub struct Authorization {
    pub url: String,
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
}

/// Who the provider says signed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vouched {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub preferred_username: Option<String>,
    pub groups: Vec<String>,
}

/// When the provider must make the person authenticate again rather than vouch for them from its own session.
#[derive(Debug, Clone, Default)]
pub struct Reauthentication {
    /// `max_age`: how recently they must have authenticated there (their ID token's `auth_time` is checked).
    pub max_age: Option<Duration>,
    /// `prompt`: what the provider must ask at every sign-in (`login`, `consent`, `select_account`).
    pub prompt: Vec<CoreAuthPrompt>,
}

impl Reauthentication {
    /// `ANTEROOM_OIDC_PROMPT`'s words, space-separated; `none` is refused (it would fail every first sign-in).
    pub fn prompts(words: &str) -> anyhow::Result<Vec<CoreAuthPrompt>> {
        words
            .split_whitespace()
            .map(|word| match word {
                "login" => Ok(CoreAuthPrompt::Login),
                "consent" => Ok(CoreAuthPrompt::Consent),
                "select_account" => Ok(CoreAuthPrompt::SelectAccount),
                other => Err(anyhow::anyhow!(
                    "ANTEROOM_OIDC_PROMPT: {other:?} is not login, consent or select_account"
                )),
            })
            .collect()
    }
}

impl RelyingParty {
    pub fn new(
        issuer: &str,
        client_id: &str,
        client_secret: &str,
        redirect: &str,
        scopes: &[String],
        groups_claim: &str,
        reauthentication: Reauthentication,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            // As written: an issuer is compared character for character, a trailing `/` included (Auth0's has one).
            issuer: IssuerUrl::new(issuer.to_owned())
                .map_err(|error| anyhow::anyhow!("ANTEROOM_OIDC_ISSUER: {error}"))?,
            client_id: ClientId::new(client_id.to_owned()),
            client_secret: ClientSecret::new(client_secret.to_owned()),
            redirect: RedirectUrl::new(redirect.to_owned())
                .map_err(|error| anyhow::anyhow!("the sign-in redirect URL: {error}"))?,
            scopes: scopes.to_vec(),
            groups_claim: groups_claim.to_owned(),
            max_age: reauthentication.max_age,
            prompt: reauthentication.prompt,
            http: ProviderHttp::new()?,
            metadata: RwLock::new(None),
            last_forced: Mutex::new(None),
        })
    }

    pub fn issuer(&self) -> &str {
        self.issuer.as_str()
    }

    /// The discovery document: the cached one while fresh, else fetched; `forced` (a token named a key the
    /// cached keys lack) fetches it anyway, unless a forced fetch happened in the last 30 s.
    async fn metadata(&self, forced: bool) -> Result<Arc<CoreProviderMetadata>, ProviderError> {
        let cached = self
            .metadata
            .read()
            .ok()
            .and_then(|cached| cached.as_ref().map(|(doc, at)| (Arc::clone(doc), *at)));
        if let Some((doc, fetched_at)) = &cached {
            let keep = if forced {
                let mut last = self
                    .last_forced
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let recent = last.is_some_and(|at| at.elapsed() < FORCED_REFRESH_EVERY);
                if !recent {
                    *last = Some(Instant::now());
                }
                recent
            } else {
                fetched_at.elapsed() < METADATA_FRESH_FOR
            };
            if keep {
                return Ok(Arc::clone(doc));
            }
        }
        let fetched = CoreProviderMetadata::discover_async(self.issuer.clone(), &self.http)
            .await
            .map_err(|error| match error {
                openidconnect::DiscoveryError::Request(inner) => inner,
                other => ProviderError::Discovery(other.to_string()),
            })?;
        let fetched = Arc::new(fetched);
        if let Ok(mut slot) = self.metadata.write() {
            *slot = Some((Arc::clone(&fetched), Instant::now()));
        }
        Ok(fetched)
    }

    fn client(&self, metadata: &CoreProviderMetadata) -> ProviderClient {
        ProviderClient::from_provider_metadata(
            metadata.clone(),
            self.client_id.clone(),
            Some(self.client_secret.clone()),
        )
        .set_redirect_uri(self.redirect.clone())
    }

    /// Where to send the browser: the authorization endpoint with a fresh `state`, `nonce` and PKCE challenge.
    pub async fn authorize(&self) -> Result<Authorization, ProviderError> {
        let metadata = self.metadata(false).await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let client = self.client(&metadata);
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in self
            .scopes
            .iter()
            .filter(|scope| scope.as_str() != "openid")
        {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        if let Some(max_age) = self.max_age {
            request = request.set_max_age(max_age);
        }
        for prompt in &self.prompt {
            request = request.add_prompt(prompt.clone());
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Ok(Authorization {
            url: url.to_string(),
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
        })
    }

    /// Exchanges `code` for an ID token and checks it (signature, issuer, audience, expiry against `now`,
    /// `nonce`); a token signed with a key the cached keys lack is checked again once against freshly fetched
    /// keys.
    pub async fn redeem(
        &self,
        code: String,
        pkce_verifier: String,
        nonce: &str,
        now: DateTime<Utc>,
    ) -> Result<Vouched, ProviderError> {
        let metadata = self.metadata(false).await?;
        let client = self.client(&metadata);
        let response = client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|error| ProviderError::Discovery(error.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier))
            .request_async(&self.http)
            .await
            .map_err(|error| ProviderError::Exchange(error.to_string()))?;
        let id_token = response
            .extra_fields()
            .id_token()
            .ok_or(ProviderError::NoIdToken)?;
        let nonce = Nonce::new(nonce.to_owned());
        let max_age = self.max_age;
        let verifier = client
            .id_token_verifier()
            .require_issuer_match(true)
            .require_audience_match(true)
            .set_time_fn(move || now)
            .set_auth_time_verifier_fn(move |auth_time| recent_enough(auth_time, max_age, now));
        let claims = match id_token.claims(&verifier, &nonce) {
            Ok(claims) => claims.clone(),
            Err(openidconnect::ClaimsVerificationError::SignatureVerification(
                openidconnect::SignatureVerificationError::NoMatchingKey,
            )) => {
                // The provider may have rotated its keys since they were fetched.
                let fresh = self.metadata(true).await?;
                let fresh_client = self.client(&fresh);
                let verifier = fresh_client
                    .id_token_verifier()
                    .set_time_fn(move || now)
                    .set_auth_time_verifier_fn(move |auth_time| {
                        recent_enough(auth_time, max_age, now)
                    });
                id_token
                    .claims(&verifier, &nonce)
                    .map_err(|error| ProviderError::Token(error.to_string()))?
                    .clone()
            }
            Err(error) => return Err(ProviderError::Token(error.to_string())),
        };
        Ok(Vouched {
            subject: claims.subject().as_str().to_owned(),
            email: claims.email().map(|email| email.as_str().to_owned()),
            email_verified: claims.email_verified().unwrap_or(false),
            preferred_username: claims
                .preferred_username()
                .map(|name| name.as_str().to_owned()),
            groups: groups_of(
                claims.additional_claims().claims.get(&self.groups_claim),
                &self.groups_claim,
            )?,
        })
    }
}

/// Whether the person authenticated at the provider recently enough (`max_age`, with a minute for clocks
/// that disagree); without a `max_age`, any `auth_time` or none.
fn recent_enough(
    auth_time: Option<DateTime<Utc>>,
    max_age: Option<Duration>,
    now: DateTime<Utc>,
) -> Result<(), String> {
    let Some(max_age) = max_age else {
        return Ok(());
    };
    let Some(auth_time) = auth_time else {
        return Err("it does not say when the person signed in at the provider".to_owned());
    };
    let allowed = chrono::Duration::from_std(max_age).unwrap_or(chrono::Duration::MAX)
        + chrono::Duration::minutes(1);
    if now - auth_time > allowed {
        return Err(
            "the person signed in at the provider longer ago than ANTEROOM_OIDC_MAX_AGE_MINUTES allows"
                .to_owned(),
        );
    }
    Ok(())
}

/// The groups claim as names: absent is none, one name is one group, anything else is refused.
fn groups_of(claim: Option<&Value>, name: &str) -> Result<Vec<String>, ProviderError> {
    match claim {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(group)) => Ok(vec![group.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ProviderError::Groups(name.to_owned()))
            })
            .collect(),
        Some(_) => Err(ProviderError::Groups(name.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_or_missing_auth_time_is_refused_only_under_a_max_age() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let hour = Some(Duration::from_secs(3600));
        let ago = |minutes| Some(now - chrono::Duration::minutes(minutes));
        assert!(recent_enough(None, None, now).is_ok());
        assert!(recent_enough(ago(600), None, now).is_ok());
        assert!(recent_enough(ago(30), hour, now).is_ok());
        assert!(
            recent_enough(ago(60), hour, now).is_ok(),
            "a minute of clock skew"
        );
        assert!(recent_enough(ago(62), hour, now).is_err());
        assert!(recent_enough(None, hour, now).is_err());
    }

    #[test]
    fn a_groups_claim_is_names_or_refused() {
        assert_eq!(groups_of(None, "groups").ok(), Some(Vec::new()));
        assert_eq!(
            groups_of(Some(&serde_json::json!("sre")), "groups").ok(),
            Some(vec!["sre".to_owned()])
        );
        assert_eq!(
            groups_of(Some(&serde_json::json!(["sre", "ops"])), "groups").ok(),
            Some(vec!["sre".to_owned(), "ops".to_owned()])
        );
        for bad in [serde_json::json!([1]), serde_json::json!({"sre": true})] {
            assert!(groups_of(Some(&bad), "groups").is_err(), "{bad}");
        }
    }
}
