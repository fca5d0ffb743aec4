//! Shared helpers: the usual schema and deadline, one question asked, a reply read as JSON.

use chrono::Duration;
use serde_json::{Value, json};

use crate::{self as support, TestServer, pulsemcp::PulsemcpClient};

pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"env": {"type": "string", "enum": ["dev", "prod"]}, "note": {"type": "string"}},
        "required": ["env"]
    })
}

pub fn expires_in_an_hour() -> String {
    (support::start_time() + Duration::hours(1)).to_rfc3339()
}

pub async fn ask(server: &TestServer, session: &str, request_id: &str) -> (PulsemcpClient, String) {
    let env = server.session(session).await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let body = client.body(
        request_id,
        "Which environment?",
        schema(),
        "deploy",
        &expires_in_an_hour(),
    );
    let id = client
        .create(request_id, &body)
        .await
        .expect("create succeeds");
    (client, id)
}

pub async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let json =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status} body is JSON: {text}"));
    (status, json)
}
