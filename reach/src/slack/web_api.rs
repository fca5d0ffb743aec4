//! The few Slack Web API methods Anteroom calls, with the bot token: `chat.postMessage`, `chat.update`,
//! `chat.postEphemeral` and `users.info`.

use std::time::Duration;

use serde_json::{Value, json};

use anteroom_api::SlackConfig;

/// Each call gives up after this long: a click's reply must reach Slack within three seconds.
const TIMEOUT: Duration = Duration::from_millis(2_500);

/// Why a call did not succeed: Slack could not be reached, answered with an HTTP error, or said `ok: false`.
#[derive(Debug, thiserror::Error)]
pub enum SlackError {
    #[error("could not reach Slack: {0}")]
    Unreachable(String),
    #[error("Slack answered HTTP {0}")]
    Status(u16),
    #[error("Slack refused {method}: {error}")]
    Refused { method: &'static str, error: String },
}

impl SlackError {
    /// The HTTP status, for the delivery log.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status(status) => Some(*status),
            _ => None,
        }
    }
}

/// A Slack Web API client for one app.
#[derive(Clone)]
pub struct SlackClient {
    http: reqwest::Client,
    api_url: String,
    bot_token: String,
}

impl SlackClient {
    pub fn new(config: &SlackConfig) -> Result<Self, SlackError> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .build()
            .map_err(|error| SlackError::Unreachable(error.to_string()))?;
        Ok(Self {
            http,
            api_url: config.api_url.clone(),
            bot_token: config.bot_token.clone(),
        })
    }

    async fn call(&self, method: &'static str, body: &Value) -> Result<Value, SlackError> {
        let response = self
            .http
            .post(format!("{}/{method}", self.api_url))
            .bearer_auth(&self.bot_token)
            .json(body)
            .send()
            .await
            .map_err(|error| SlackError::Unreachable(error.without_url().to_string()))?;
        Self::read(method, response).await
    }

    async fn read(method: &'static str, response: reqwest::Response) -> Result<Value, SlackError> {
        if !response.status().is_success() {
            return Err(SlackError::Status(response.status().as_u16()));
        }
        let reply: Value = response
            .json()
            .await
            .map_err(|error| SlackError::Unreachable(error.without_url().to_string()))?;
        if reply["ok"] == true {
            Ok(reply)
        } else {
            Err(SlackError::Refused {
                method,
                error: reply["error"]
                    .as_str()
                    .unwrap_or("no reason given")
                    .chars()
                    .take(200)
                    .collect(),
            })
        }
    }

    /// Posts a message; returns its channel id and `ts`, which name it for [`Self::update`].
    pub async fn post_message(
        &self,
        channel: &str,
        text: &str,
        blocks: Value,
    ) -> Result<(String, String), SlackError> {
        let reply = self
            .call(
                "chat.postMessage",
                &json!({"channel": channel, "text": text, "blocks": blocks, "unfurl_links": false}),
            )
            .await?;
        let field = |name: &str| reply[name].as_str().map(str::to_owned);
        match (field("channel"), field("ts")) {
            (Some(channel), Some(ts)) => Ok((channel, ts)),
            _ => Err(SlackError::Refused {
                method: "chat.postMessage",
                error: "the reply names no channel and ts".to_owned(),
            }),
        }
    }

    /// Replaces a message's text and blocks.
    pub async fn update(
        &self,
        channel: &str,
        ts: &str,
        text: &str,
        blocks: Value,
    ) -> Result<(), SlackError> {
        self.call(
            "chat.update",
            &json!({"channel": channel, "ts": ts, "text": text, "blocks": blocks}),
        )
        .await
        .map(drop)
    }

    /// A message only `user` sees, in `channel`.
    pub async fn post_ephemeral(
        &self,
        channel: &str,
        user: &str,
        text: &str,
    ) -> Result<(), SlackError> {
        self.call(
            "chat.postEphemeral",
            &json!({"channel": channel, "user": user, "text": text}),
        )
        .await
        .map(drop)
    }

    /// The e-mail address Slack has for `user`, if the app may read it (`users:read.email`).
    pub async fn user_email(&self, user: &str) -> Result<Option<String>, SlackError> {
        let response = self
            .http
            .get(format!("{}/users.info", self.api_url))
            .bearer_auth(&self.bot_token)
            .query(&[("user", user)])
            .send()
            .await
            .map_err(|error| SlackError::Unreachable(error.without_url().to_string()))?;
        let reply = Self::read("users.info", response).await?;
        Ok(reply["user"]["profile"]["email"]
            .as_str()
            .map(str::to_owned))
    }
}
