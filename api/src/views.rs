//! Every reply body the API sends, typed, so the OpenAPI document describes what is sent: rounds (whose
//! lease never shows its token), sessions with their environment block, leases, answers, and the lists.

use anteroom_domain::{
    expiry::wire_time,
    ids::{OwnerId, RequestId, RoundId, SessionId},
    round::{Lease, ResponseAction, Round, RoundStatus},
    session::Session,
    webhook::WebhookDelivery,
};
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::ApiConfig;

/// The variables of a session's environment block, by name, in the block's order
/// (docs/api.md#the-environment-block).
pub type EnvironmentJson = serde_json::Map<String, serde_json::Value>;

/// A new producer token and the environment block built around it.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedToken {
    /// Shown once; Anteroom keeps only its hash.
    pub producer_token: String,
    #[schema(value_type = std::collections::BTreeMap<String, String>)]
    pub environment: EnvironmentJson,
    /// Questions asked through the replaced token, now ended (docs/deadlines.md).
    pub ended_rounds: Vec<RoundId>,
}

/// A registered session, its token and environment block.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionRegistered {
    #[serde(flatten)]
    pub token: IssuedToken,
    pub session: Session,
}

/// A session that already existed: its token is not shown again.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionExists {
    pub session: Session,
    /// Always null.
    #[schema(value_type = Option<String>)]
    pub producer_token: Option<String>,
    pub message: &'static str,
}

/// One session in the attention queue.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueuedSession {
    pub session: Session,
    pub open_rounds: u32,
    #[serde(with = "anteroom_domain::wire::time::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub oldest_open_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<QueuedSession>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RoundList {
    pub rounds: Vec<Round>,
}

/// A revoked producer token.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenRevoked {
    pub session_id: SessionId,
    /// Always null.
    #[schema(value_type = Option<String>)]
    pub producer_token: Option<String>,
    pub revoked: bool,
    pub ended_rounds: Vec<RoundId>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<WebhookDelivery>,
}

/// A round after answers were submitted, and whether this request repeated an earlier one.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoundAnswered {
    #[serde(flatten)]
    pub round: Round,
    pub replayed: bool,
}

/// One question answered through the management API.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnswerRecorded {
    pub request_id: RequestId,
    pub round_id: RoundId,
    pub action: ResponseAction,
    pub status: RoundStatus,
    pub answered_by: Option<String>,
    #[serde(with = "anteroom_domain::wire::time::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub answered_at: Option<DateTime<Utc>>,
    pub replayed: bool,
}

/// A lease just granted: the token proves it from now on.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseGranted {
    pub owner_id: OwnerId,
    pub lease_token: String,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: String,
}

/// A lease just extended (its token is the one the worker already holds).
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseExtended {
    pub owner_id: OwnerId,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: String,
}

impl From<&Lease> for LeaseGranted {
    fn from(lease: &Lease) -> Self {
        Self {
            owner_id: lease.owner_id.clone(),
            lease_token: lease.lease_token.expose().to_owned(),
            expires_at: wire_time(lease.expires_at),
        }
    }
}

impl From<&Lease> for LeaseExtended {
    fn from(lease: &Lease) -> Self {
        Self {
            owner_id: lease.owner_id.clone(),
            expires_at: wire_time(lease.expires_at),
        }
    }
}

/// The one shape of a producer's URL: where its session's questions are posted and polled.
pub fn producer_collection(public_url: &str, token: &str, server: Option<&str>) -> String {
    match server {
        Some(server) => format!("{public_url}/api/v1/s/{token}/servers/{server}/elicitations"),
        None => format!("{public_url}/api/v1/s/{token}/elicitations"),
    }
}

/// The environment variable that carries a session's token by itself.
pub const SESSION_TOKEN_VARIABLE: &str = "ANTEROOM_SESSION_TOKEN";

/// The variables an orchestrator writes into an agent's and each stdio MCP server's environment (docs/api.md#the-environment-block).
/// `ELICITATION_ENABLED` is deliberately absent: whether to ask is each server's decision.
pub fn environment_block(
    config: &ApiConfig,
    session_id: &str,
    token: &str,
    server: Option<&str>,
) -> Vec<(&'static str, String)> {
    let url = producer_collection(&config.public_url, token, server);
    vec![
        ("ELICITATION_REQUEST_URL", url.clone()),
        ("ELICITATION_POLL_URL", url),
        ("ELICITATION_PREFER_HTTP_FALLBACK", "true".to_owned()),
        ("ELICITATION_TTL_MS", config.default_window_ms.to_string()),
        ("ELICITATION_SESSION_ID", session_id.to_owned()),
        // The token alone, for what sends it as `Authorization: Bearer` (Claude Code's hooks).
        (SESSION_TOKEN_VARIABLE, token.to_owned()),
    ]
}

/// The environment block as a JSON object.
pub fn environment_json(block: &[(&'static str, String)]) -> EnvironmentJson {
    block
        .iter()
        .map(|(key, value)| ((*key).to_owned(), serde_json::Value::String(value.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_block_points_both_urls_at_the_session_route_and_never_enables() {
        let config = ApiConfig {
            public_url: "https://anteroom.example".to_owned(),
            allow_unauthenticated_producers: false,
            default_window_ms: 60 * 60 * 1000,
            body_limit: 256 * 1024,
            webhook_secret: None,
            retention: chrono::Duration::days(30),
            secure_cookies: true,
            connections: crate::state::ConnectionLimits::default(),
            metrics_token: None,
            slack: None,
            mail: None,
            development: false,
            provider_answers_for: None,
        };
        let block = environment_block(&config, "s1", "ars_x", None);
        let get = |key: &str| {
            block
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(
            get("ELICITATION_REQUEST_URL"),
            Some("https://anteroom.example/api/v1/s/ars_x/elicitations")
        );
        assert_eq!(get("ELICITATION_POLL_URL"), get("ELICITATION_REQUEST_URL"));
        assert_eq!(get("ELICITATION_PREFER_HTTP_FALLBACK"), Some("true"));
        assert_eq!(get("ELICITATION_TTL_MS"), Some("3600000"));
        assert_eq!(get("ELICITATION_SESSION_ID"), Some("s1"));
        assert_eq!(get("ELICITATION_ENABLED"), None);
        let named = environment_block(&config, "s1", "ars_x", Some("github"));
        assert!(
            named[0]
                .1
                .ends_with("/api/v1/s/ars_x/servers/github/elicitations")
        );
    }
}
