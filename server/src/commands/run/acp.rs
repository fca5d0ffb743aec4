//! `anteroom run --acp -- AGENT… PROMPT`: an Agent Client Protocol agent (`gemini --acp`, `opencode acp`,
//! `copilot --acp --stdio`, `goose acp`…) run with Anteroom as its host (docs/runs.md#agents-over-acp): one ACP
//! session in the working folder, the prompt as its turn, each `session/request_permission` asked in the run's
//! session and answered with the agent's option of the matching kind, the agent's updates written to the
//! terminal and the output tail, a Stop sent as `session/cancel`. ACP has no place for a person's reason, so a
//! decline's reason, and why nothing was allowed, are the agent's next prompt once its turn ends. What the agent
//! sends is read as input that may be wrong: each line bounded, every request answered, the requests waiting for a
//! person bounded.

#![allow(
    clippy::print_stdout,
    reason = "the agent's final message goes to stdout, as its own headless mode prints it"
)]

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use anteroom_domain::hooks::{AcpPermission, AcpReply, acp_update_line, clean};
use anteroom_server::config::RunArgs;
use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{
    Ended,
    anteroom::{Client, RunSession, cut},
    output::{Pending, keep_line},
    stdio_peer::{Conversation, StdioPeer, ask_anteroom, converse, send_line},
};

/// The protocol version Anteroom speaks as a host.
const PROTOCOL_VERSION: i64 = 1;
/// Permission requests waiting for a person at once, as many as a session holds for hooks; more are rejected
/// at once, saying why.
const WAITING_AT_ONCE: usize = anteroom_api::hooks::HELD_PER_SESSION;
/// How many times the agent is told, as a new prompt, what a person said when declining.
const FOLLOW_UPS_MAX: usize = 3;
/// How much of the agent's current message is gathered before it is written out.
const MESSAGE_KEPT: usize = 64 * 1024;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// The host's own requests, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Initialize,
    NewSession,
    Prompt,
}

impl Sent {
    fn method(self) -> &'static str {
        match self {
            Self::Initialize => "initialize",
            Self::NewSession => "session/new",
            Self::Prompt => "session/prompt",
        }
    }
}

/// A permission request's answer, back from Anteroom.
struct Answered {
    id: Value,
    reply: AcpReply,
}

/// Runs the prompt as the agent's turn (and the follow-ups a person's reasons make) and returns how it ended.
pub(super) async fn run(
    args: &RunArgs,
    client: &Client,
    session: &RunSession,
    tail: Arc<Mutex<Pending>>,
    stop: Arc<tokio::sync::Notify>,
) -> anyhow::Result<Ended> {
    let (prompt, agent_words) = args
        .command
        .split_last()
        .filter(|(_, agent)| !agent.is_empty())
        .context("with --acp, name the agent's command and then the prompt after `--`")?;
    let (program, agent_args) = agent_words
        .split_first()
        .context("with --acp, name the agent's command after `--`")?;
    let agent = agent_name(args.server_name.as_deref(), program);
    let mut command = tokio::process::Command::new(program);
    command.args(agent_args).envs(&session.environment);
    let (peer, stdin) = StdioPeer::start(command, "the agent", "the agent's turn")?;
    let (answered_in, mut answered) = mpsc::channel(WAITING_AT_ONCE);
    let mut host = Host {
        args,
        agent,
        client: client.clone(),
        token: session.token.clone(),
        stdin,
        next_id: 0,
        sent: HashMap::new(),
        session: None,
        prompt: prompt.clone(),
        waiting: HashMap::new(),
        answered_in,
        cancelled: false,
        notes: Vec::new(),
        follow_ups: 0,
        message: String::new(),
        tail: Arc::clone(&tail),
    };
    host.request(
        Sent::Initialize,
        json!({"protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": "anteroom", "title": "Anteroom", "version": env!("CARGO_PKG_VERSION")}}),
    )
    .await?;
    let (stop_reason, stopped) = match converse(peer, host, &mut answered, &stop, &tail).await? {
        Ok(ended) => ended,
        Err(died) => return Ok(died),
    };
    let (exit_code, said) = match stop_reason.as_str() {
        "end_turn" => (0, None),
        "cancelled" => (
            130,
            Some("anteroom run: the agent's turn was cancelled".to_owned()),
        ),
        other => (
            1,
            Some(format!(
                "anteroom run: the agent's turn ended with `{}`",
                clean(&cut(other, 60))
            )),
        ),
    };
    Ok(Ended {
        exit_code: Some(exit_code),
        signal: None,
        stopped,
        said,
    })
}

/// The agent as banners name it: `--server-name`, else its program's name (`gemini`, `opencode`…), cut to what
/// a server name may hold.
fn agent_name(named: Option<&str>, program: &str) -> String {
    let name: String = named
        .unwrap_or_else(|| program.rsplit('/').next().unwrap_or(program))
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(60)
        .collect();
    if name.is_empty() {
        "agent".to_owned()
    } else {
        name
    }
}

/// The host's side of the conversation with the agent.
struct Host<'a> {
    args: &'a RunArgs,
    agent: String,
    client: Client,
    token: String,
    stdin: tokio::process::ChildStdin,
    next_id: i64,
    sent: HashMap<i64, Sent>,
    session: Option<String>,
    prompt: String,
    /// Requests waiting for a person, by the request's id as text.
    waiting: HashMap<String, tokio::task::AbortHandle>,
    answered_in: mpsc::Sender<Answered>,
    /// The turn was cancelled: no follow-up prompt is sent.
    cancelled: bool,
    /// What a person said that the agent is to be told once its turn ends.
    notes: Vec<String>,
    follow_ups: usize,
    /// The agent's message so far (it arrives in chunks).
    message: String,
    tail: Arc<Mutex<Pending>>,
}

impl Host<'_> {
    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        send_line(&mut self.stdin, message).await
    }

    async fn request(&mut self, kind: Sent, params: Value) -> anyhow::Result<()> {
        self.next_id += 1;
        self.sent.insert(self.next_id, kind);
        self.send(&json!({"jsonrpc": "2.0", "id": self.next_id, "method": kind.method(), "params": params}))
            .await
    }

    fn say(&self, line: &str) {
        eprintln!("{line}");
        keep_line(line.as_bytes(), &self.tail);
    }

    /// Writes out the agent's message gathered so far, and returns it.
    fn flush_message(&mut self) -> Option<String> {
        let message = std::mem::take(&mut self.message);
        let message = message.trim();
        if message.is_empty() {
            return None;
        }
        self.say(&format!("{}: {message}", self.agent));
        Some(message.to_owned())
    }

    /// One message from the agent; the turn's stop reason once the last turn has ended.
    async fn take_message(&mut self, message: Value) -> anyhow::Result<Option<String>> {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (method, message.get("id").cloned()) {
            (Some(method), Some(id)) => {
                self.on_request(
                    id,
                    &method,
                    message.get("params").cloned().unwrap_or(Value::Null),
                )
                .await?;
                Ok(None)
            }
            (Some(method), None) => {
                if method == "session/update"
                    && let Some(update) =
                        message.pointer("/params/update").and_then(Value::as_object)
                {
                    self.on_update(update);
                }
                Ok(None)
            }
            (None, Some(id)) => self.on_response(&id, &message).await,
            (None, None) => {
                self.say("anteroom run: the agent sent a message that is neither a request, a notification nor a response; skipped");
                Ok(None)
            }
        }
    }

    fn on_update(&mut self, update: &serde_json::Map<String, Value>) {
        if update.get("sessionUpdate").and_then(Value::as_str) == Some("agent_message_chunk") {
            if let Some(text) = update
                .get("content")
                .and_then(|content| content.get("text"))
                .and_then(Value::as_str)
                && self.message.len() < MESSAGE_KEPT
            {
                self.message.push_str(&cut(text, MESSAGE_KEPT));
            }
            return;
        }
        if let Some(line) = acp_update_line(&self.agent, update) {
            self.flush_message();
            self.say(&line);
        }
    }

    async fn on_response(&mut self, id: &Value, message: &Value) -> anyhow::Result<Option<String>> {
        let Some(kind) = id.as_i64().and_then(|id| self.sent.remove(&id)) else {
            return Ok(None);
        };
        if let Some(error) = message.get("error") {
            let why = cut(
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given"),
                500,
            );
            bail!("the agent refused `{}`: {}", kind.method(), clean(&why));
        }
        let result = message.get("result").unwrap_or(&Value::Null);
        match kind {
            Sent::Initialize => {
                let version = result.get("protocolVersion").and_then(Value::as_i64);
                if version != Some(PROTOCOL_VERSION) {
                    bail!(
                        "the agent speaks ACP version {}, and Anteroom hosts version {PROTOCOL_VERSION}",
                        result
                            .get("protocolVersion")
                            .map_or_else(|| "none".to_owned(), |v| cut(&v.to_string(), 40))
                    );
                }
                let cwd = std::env::current_dir().context("cannot read the working folder")?;
                self.request(Sent::NewSession, json!({"cwd": cwd, "mcpServers": []}))
                    .await?;
                Ok(None)
            }
            Sent::NewSession => {
                let session = result
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .context("the agent opened a session without an id")?
                    .to_owned();
                self.say(&format!(
                    "anteroom run: {} session {}",
                    self.agent,
                    clean(&cut(&session, 80))
                ));
                self.session = Some(session);
                let prompt = self.prompt.clone();
                self.prompt_turn(&prompt).await?;
                Ok(None)
            }
            Sent::Prompt => {
                let last_words = self.flush_message();
                let stop_reason = result
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .unwrap_or("end_turn")
                    .to_owned();
                // What a person said while declining reaches the agent as its next prompt: ACP has no place
                // for it in the answer itself.
                if stop_reason == "end_turn"
                    && !self.cancelled
                    && !self.notes.is_empty()
                    && self.follow_ups < FOLLOW_UPS_MAX
                {
                    self.follow_ups += 1;
                    let notes = std::mem::take(&mut self.notes).join("\n");
                    self.say(&format!("anteroom run: telling the agent: {notes}"));
                    self.prompt_turn(&notes).await?;
                    return Ok(None);
                }
                if let Some(message) = last_words {
                    println!("{message}");
                }
                Ok(Some(stop_reason))
            }
        }
    }

    async fn prompt_turn(&mut self, text: &str) -> anyhow::Result<()> {
        let session = self
            .session
            .clone()
            .context("the agent's session is not open")?;
        self.request(
            Sent::Prompt,
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    async fn on_request(&mut self, id: Value, method: &str, params: Value) -> anyhow::Result<()> {
        let shown = clean(&cut(method, 80));
        if method != "session/request_permission" {
            self.say(&format!(
                "anteroom run: the agent asked `{shown}`, which Anteroom does not offer as a host; told it so"
            ));
            return self
                .send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": METHOD_NOT_FOUND,
                    "message": format!("Anteroom offers no {shown}: it hosts no file system or terminal")}}))
                .await;
        }
        let permission = match AcpPermission::read(&self.agent, &params) {
            Ok(permission) => permission,
            Err(error) => {
                self.say(&format!(
                    "anteroom run: the agent's permission request could not be read ({error}); told it so"
                ));
                return self
                    .send(&json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": INVALID_PARAMS, "message": error.to_string()}}))
                    .await;
            }
        };
        // An entry leaves when its answer is sent (or the turn is cancelled): one whose task has finished may
        // still have its answer in the channel, and must still be sent.
        if self.waiting.len() >= WAITING_AT_ONCE {
            let reply = permission.refused(&format!(
                "{WAITING_AT_ONCE} of the agent's questions already wait for a person, so this one was not asked \
                 and nothing was allowed."
            ));
            return self.answer(&id, reply).await;
        }
        let task = tokio::spawn(relay(
            self.client.clone(),
            self.token.clone(),
            self.args.hook_timeout,
            self.agent.clone(),
            params,
            permission,
            id.clone(),
            self.answered_in.clone(),
        ));
        self.waiting.insert(id.to_string(), task.abort_handle());
        Ok(())
    }

    async fn take_answer(&mut self, answered: Answered) -> anyhow::Result<()> {
        if self.waiting.remove(&answered.id.to_string()).is_none() {
            // Answered as cancelled meanwhile (the turn was cancelled).
            return Ok(());
        }
        self.answer(&answered.id, answered.reply).await
    }

    async fn answer(&mut self, id: &Value, reply: AcpReply) -> anyhow::Result<()> {
        if let Some(note) = reply.note {
            self.say(&format!("anteroom run: {note}"));
            if self.notes.len() < 8 {
                self.notes.push(note);
            }
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": reply.result}))
            .await
    }
}

impl Conversation for Host<'_> {
    type Answered = Answered;
    type End = String;

    async fn on_message(&mut self, message: Value) -> anyhow::Result<Option<String>> {
        self.take_message(message).await
    }

    async fn on_answered(&mut self, answered: Answered) -> anyhow::Result<()> {
        self.take_answer(answered).await
    }

    /// `session/cancel`, and every request still waiting answered as cancelled, as ACP asks of a host (Gemini
    /// CLI ends its turn only then).
    async fn end_turn(&mut self) -> anyhow::Result<bool> {
        let Some(session) = self.session.clone() else {
            return Ok(false);
        };
        self.cancelled = true;
        self.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}))
            .await?;
        let waiting: Vec<(String, tokio::task::AbortHandle)> = self.waiting.drain().collect();
        for (id, task) in waiting {
            task.abort();
            let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
            self.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "cancelled"}}}))
                .await?;
        }
        Ok(true)
    }

    fn stop_waiting(&mut self) {
        for waiting in self.waiting.values() {
            waiting.abort();
        }
    }
}

/// Relays one permission request to Anteroom and hands back what the agent is to read. When Anteroom cannot be
/// asked, the reply rejects — nothing is allowed by default.
#[expect(
    clippy::too_many_arguments,
    reason = "one task's inputs, each moved into it; a struct of them would only name them again"
)]
async fn relay(
    client: Client,
    token: String,
    timeout: u64,
    agent: String,
    params: Value,
    permission: AcpPermission,
    id: Value,
    answered: mpsc::Sender<Answered>,
) {
    let body = json!({"agent": agent, "params": params});
    let asked = ask_anteroom(
        &client,
        &token,
        "/hooks/acp/permission",
        timeout,
        &body,
        "note",
    )
    .await;
    let reply = match asked {
        Ok((result, note)) => AcpReply { result, note },
        Err(why) => permission.refused(&why),
    };
    let _ = answered.send(Answered { id, reply }).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_is_named_by_its_program_or_as_asked() {
        assert_eq!(
            agent_name(None, "/usr/lib/node_modules/.bin/gemini"),
            "gemini"
        );
        assert_eq!(agent_name(Some("copilot cli"), "node"), "copilotcli");
        assert_eq!(agent_name(None, "/x/\u{1b}[2J"), "2J");
        assert_eq!(agent_name(None, "/"), "agent");
    }
}
