//! Anteroom's API as `anteroom run` calls it: the client, and taking a session for the run (a new one, or
//! `--session` checked for a live run and given a fresh token).

use std::{collections::BTreeMap, time::Duration};

use anteroom_server::config::RunArgs;
use anyhow::{Context, bail};
use serde_json::{Value, json};

/// Anteroom's API, as `run` calls it: every call bounded in time, every refusal read as its message.
#[derive(Clone)]
pub(super) struct Client {
    pub(super) base: String,
    api_key: String,
    http: reqwest::Client,
}

impl Client {
    pub(super) fn new(url: &str, api_key: &str) -> anyhow::Result<Self> {
        let parsed =
            url::Url::parse(url).with_context(|| format!("ANTEROOM_URL {url:?} is not a URL"))?;
        anyhow::ensure!(
            matches!(parsed.scheme(), "http" | "https"),
            "ANTEROOM_URL must be an http or https URL"
        );
        anyhow::ensure!(!api_key.is_empty(), "ANTEROOM_API_KEY is empty");
        Ok(Self {
            base: url.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .timeout(Duration::from_secs(45))
                .build()?,
        })
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        self.send_as(request, &self.api_key).await
    }

    async fn send_as(
        &self,
        request: reqwest::RequestBuilder,
        bearer: &str,
    ) -> anyhow::Result<Value> {
        let reply = request
            .bearer_auth(bearer)
            .send()
            .await
            // The run's URLs carry the session's token in their path: an error must not print it.
            .map_err(reqwest::Error::without_url)
            .context("Anteroom is not reachable")?;
        let status = reply.status();
        let body: Value = reply.json().await.unwrap_or_default();
        if !status.is_success() {
            return Err(Refused {
                status,
                message: body["message"]
                    .as_str()
                    .unwrap_or("no reason given")
                    .to_owned(),
            }
            .into());
        }
        Ok(body)
    }

    pub(super) async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    pub(super) async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    /// Posts `body` as the session's producer (its `token`), waiting up to `wait` for the reply: a hook's
    /// request, which Anteroom holds until a person answers.
    pub(super) async fn post_as_producer(
        &self,
        path: &str,
        token: &str,
        body: &Value,
        wait: Duration,
    ) -> anyhow::Result<Value> {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .timeout(wait)
            .json(body);
        self.send_as(request, token).await
    }
}

/// Anteroom's refusal of a request: its status and the reason it gave.
#[derive(Debug, thiserror::Error)]
#[error("{status}: {message}")]
pub(super) struct Refused {
    status: reqwest::StatusCode,
    message: String,
}

/// The session the run asks in: its id, producer token, environment block, and the URL people open it at.
pub(super) struct RunSession {
    pub(super) id: String,
    pub(super) token: String,
    pub(super) environment: BTreeMap<String, String>,
    pub(super) public_base: String,
}

pub(super) async fn take_session(
    client: &Client,
    args: &RunArgs,
    host: &str,
) -> anyhow::Result<RunSession> {
    let issued = match &args.session {
        Some(id) => match client.get(&format!("/api/v1/sessions/{id}")).await {
            Ok(existing) => {
                let live = matches!(
                    existing["run"]["state"].as_str(),
                    Some("running" | "needs_input")
                );
                if live {
                    bail!(
                        "session {id} already has a live run on {}; stop it first",
                        existing["run"]["host"]
                            .as_str()
                            .unwrap_or("another machine")
                    );
                }
                let query = args
                    .server_name
                    .as_ref()
                    .map(|server| {
                        format!(
                            "?server={}",
                            url::form_urlencoded::byte_serialize(server.as_bytes())
                                .collect::<String>()
                        )
                    })
                    .unwrap_or_default();
                client
                    .post(&format!("/api/v1/sessions/{id}/token{query}"), &json!({}))
                    .await?
            }
            Err(error)
                if error
                    .downcast_ref::<Refused>()
                    .is_some_and(|refused| refused.status == reqwest::StatusCode::NOT_FOUND) =>
            {
                register(client, args, id).await?
            }
            Err(error) => return Err(error),
        },
        None => {
            let id = new_session_id(host);
            register(client, args, &id).await?
        }
    };
    let token = issued["producer_token"]
        .as_str()
        .context("Anteroom's reply has no producer_token")?
        .to_owned();
    let environment: BTreeMap<String, String> = issued["environment"]
        .as_object()
        .context("Anteroom's reply has no environment block")?
        .iter()
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
        .collect();
    let id = environment
        .get("ELICITATION_SESSION_ID")
        .cloned()
        .context("the environment block names no session")?;
    let public_base = environment
        .get("ELICITATION_REQUEST_URL")
        .and_then(|url| url.split_once("/api/v1/s/"))
        .map(|(base, _)| base.to_owned())
        .context("the environment block has no request URL")?;
    Ok(RunSession {
        id,
        token,
        environment,
        public_base,
    })
}

async fn register(client: &Client, args: &RunArgs, id: &str) -> anyhow::Result<Value> {
    let command = run_command(args);
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| cut(&shown_command(&command), 200));
    let agent = command
        .first()
        .map(|program| cut(program.rsplit('/').next().unwrap_or(program), 100));
    client
        .post(
            "/api/v1/sessions",
            &json!({"id": id, "title": title, "agent": agent, "server": args.server_name}),
        )
        .await
}

/// A session id of the host, the time and a random part, within the ids Anteroom takes.
fn new_session_id(host: &str) -> String {
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(40)
        .collect();
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "run-{}-{}-{}",
        if host.is_empty() { "host" } else { &host },
        anteroom_domain::clock::Clock::now(&anteroom_domain::clock::SystemClock)
            .format("%Y%m%d-%H%M%S"),
        random.get(..6).unwrap_or_default()
    )
}

/// What the run runs, as words: the agent's command, or with `--codex` Codex's app server and the prompt.
pub(super) fn run_command(args: &RunArgs) -> Vec<String> {
    if args.codex {
        vec![
            args.codex_program.clone(),
            "app-server".to_owned(),
            "--".to_owned(),
            args.command.join(" "),
        ]
    } else {
        args.command.clone()
    }
}

pub(super) fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// The command line as Anteroom shows it: words quoted where a shell would need it (the server masks credentials).
pub(super) fn shown_command(command: &[String]) -> String {
    command
        .iter()
        .map(|word| {
            if !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
            {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) fn host_name() -> String {
    let name = rustix::system::uname();
    name.nodename().to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_shown_as_a_shell_would_read_it() {
        let words = ["claude", "-p", "deploy it", "--x=1", "it's"].map(str::to_owned);
        assert_eq!(
            shown_command(&words),
            r"claude -p 'deploy it' --x=1 'it'\''s'"
        );
    }

    #[test]
    fn new_session_ids_are_ids_anteroom_takes() {
        let id = new_session_id("build box.example/7");
        assert!(id.starts_with("run-buildboxexample7-"), "{id}");
        assert!(anteroom_domain::ids::SessionId::parse(id).is_ok());
        assert!(new_session_id("").starts_with("run-host-"));
    }
}
