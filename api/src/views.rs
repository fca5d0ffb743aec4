//! What the API shows of stored records: rounds without their lease secret, and a session's environment block.

use anteroom_domain::round::Round;
use serde_json::{Value, json};

use crate::ApiConfig;

/// A round as JSON, with the lease's owner and expiry but never its token.
pub fn round_json(round: &Round) -> Value {
    let mut value = serde_json::to_value(round).unwrap_or_else(|_| json!({}));
    if let Some(lease) = value.get_mut("lease").and_then(Value::as_object_mut) {
        lease.remove("lease_token");
    }
    value
}

/// The one shape of a producer's URL: where its session's questions are posted and polled.
pub fn producer_collection(public_url: &str, token: &str, server: Option<&str>) -> String {
    match server {
        Some(server) => format!("{public_url}/api/v1/s/{token}/servers/{server}/elicitations"),
        None => format!("{public_url}/api/v1/s/{token}/elicitations"),
    }
}

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
    ]
}

/// The environment block as a JSON object.
pub fn environment_json(block: &[(&'static str, String)]) -> Value {
    Value::Object(
        block
            .iter()
            .map(|(key, value)| ((*key).to_owned(), Value::String(value.clone())))
            .collect(),
    )
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
