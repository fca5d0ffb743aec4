//! `anteroom session create`: registers a session and prints the environment block its MCP servers need.

#![allow(
    clippy::print_stdout,
    reason = "what this command prints on stdout is its output"
)]

use anteroom_domain::{
    ids::SessionId,
    responders::Responder,
    session::{NewSession, SessionSettings},
};
use anteroom_server::{
    api::views::environment_block,
    config::{DatabaseArgs, PublicArgs},
    credentials,
    instance::Settings,
};
use anteroom_store::StoreOptions;

use super::{expiry_policy, open_store};

/// Registers session `(id, title, agent)`, with its own Slack channel and responders if given.
pub async fn create(
    (id, title, agent): (String, Option<String>, Option<String>),
    server: Option<String>,
    (slack_channel, responders): (Option<String>, Vec<String>),
    public: &PublicArgs,
    database: &DatabaseArgs,
) -> anyhow::Result<()> {
    let responders = responders
        .iter()
        .map(|raw| Responder::parse(raw.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let store = open_store(database, StoreOptions::default()).await?;
    let id = SessionId::parse(id)?;
    store
        .register_session(NewSession {
            id: id.clone(),
            title,
            agent,
        })
        .await?;
    if slack_channel.is_some() || !responders.is_empty() {
        let settings = SessionSettings {
            slack_channel,
            responders,
            ..SessionSettings::default()
        };
        store.set_session_settings(&id, &settings, "cli").await?;
    }
    for (key, value) in issue_block(store.as_ref(), &id, server.as_deref(), public).await? {
        println!("{key}={value}");
    }
    Ok(())
}

/// Issues session `id` a new producer token (the old one stops working) and returns its environment block.
pub async fn issue_block(
    store: &dyn anteroom_store::Store,
    id: &SessionId,
    server: Option<&str>,
    public: &PublicArgs,
) -> anyhow::Result<Vec<(&'static str, String)>> {
    let token = credentials::generate(credentials::SESSION_TOKEN_PREFIX);
    store
        .set_producer_token(id, Some(&credentials::hash(&token)), "cli")
        .await?;
    Ok(block_with(id, &token, server, public))
}

/// Session `id`'s environment block for `token` (one the session already has, or a placeholder).
pub fn block_with(
    id: &SessionId,
    token: &str,
    server: Option<&str>,
    public: &PublicArgs,
) -> Vec<(&'static str, String)> {
    let config = Settings {
        expiry: expiry_policy(public.expiration_minutes.as_deref()),
        ..Settings::default()
    }
    .api_config(&public.public_url());
    environment_block(&config, id.as_str(), token, server)
}
