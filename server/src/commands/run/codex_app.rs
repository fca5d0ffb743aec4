//! `anteroom run --codex -- PROMPT`: Codex run through its app server (`codex app-server`, JSON-RPC in lines
//! over stdio), so that Codex's own approvals and its MCP servers' elicitations are asked in the run's session
//! (docs/runs.md#codex-through-its-app-server): one thread in the working folder, the prompt as one turn, each
//! server request relayed to Anteroom and the person's answer sent back, the turn's items written to the
//! terminal and the output tail, a Stop sent as `turn/interrupt`. What the app server sends is read as input
//! that may be wrong: each line bounded, every request answered (an error for kinds Anteroom does not answer),
//! the requests waiting for a person bounded.

#![allow(
    clippy::print_stdout,
    reason = "the turn's final message goes to stdout, as `codex exec` prints it"
)]

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
};

use anteroom_domain::hooks::{ASKED_METHODS, AppServerRequest, CodexAsk, CodexReply};
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

/// The Codex version this bridge is written against and checked with (docs/hooks.md).
const CHECKED_VERSION: &str = "0.171.";
/// Server requests waiting for a person at once, as many as a session holds for hooks; more are declined at
/// once, saying why.
const WAITING_AT_ONCE: usize = anteroom_api::hooks::HELD_PER_SESSION;
/// Announced file changes remembered until their approval arrives, and commands whose output is collected.
const ITEMS_KEPT: usize = 64;
/// How much of an announced change's diffs is kept, and how many of its files: more than a question shows.
const CHANGE_KEPT: usize = 16 * 1024;
const CHANGES_KEPT: usize = 51;
/// How much of one command's output is kept for the tail.
const COMMAND_OUTPUT_KEPT: usize = 16 * 1024;
/// JSON-RPC's codes for a method the client does not answer and for params it cannot read.
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// A server request's answer, back from Anteroom.
struct Answered {
    id: Value,
    turn: Option<String>,
    reply: CodexReply,
}

/// The bridge's own requests, by id, so their responses are read as what they answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Initialize,
    ThreadStart,
    /// Asked before the turn starts: Codex answers once the thread's MCP servers are connected, so their
    /// tools are the model's from the turn's first request.
    McpServers,
    TurnStart,
    Steer,
    Interrupt,
}

impl Sent {
    fn method(self) -> &'static str {
        match self {
            Self::Initialize => "initialize",
            Self::ThreadStart => "thread/start",
            Self::McpServers => "mcpServerStatus/list",
            Self::TurnStart => "turn/start",
            Self::Steer => "turn/steer",
            Self::Interrupt => "turn/interrupt",
        }
    }
}

/// How the turn ended.
enum TurnEnd {
    Completed,
    Interrupted,
    Failed(String),
}

/// Runs the prompt as one turn of a Codex thread and returns how it ended.
pub(super) async fn run(
    args: &RunArgs,
    client: &Client,
    session: &RunSession,
    tail: Arc<Mutex<Pending>>,
    stop: Arc<tokio::sync::Notify>,
) -> anyhow::Result<Ended> {
    let mut command = tokio::process::Command::new(&args.codex_program);
    command.arg("app-server");
    for setting in &args.codex_config {
        command.arg("-c").arg(setting);
    }
    command.envs(&session.environment);
    let (peer, stdin) = StdioPeer::start(command, "Codex's app server", "Codex's turn")?;
    let (answered_in, mut answered) = mpsc::channel(WAITING_AT_ONCE);
    let mut bridge = Bridge {
        args,
        client: client.clone(),
        token: session.token.clone(),
        stdin,
        next_id: 0,
        sent: HashMap::new(),
        thread: None,
        turn: None,
        announced: VecDeque::new(),
        outputs: HashMap::new(),
        waiting: HashMap::new(),
        answered_in,
        final_message: None,
        tail: Arc::clone(&tail),
    };
    bridge
        .request(
            Sent::Initialize,
            json!({"clientInfo": {"name": "anteroom", "title": "Anteroom", "version": env!("CARGO_PKG_VERSION")}}),
        )
        .await?;
    let (end, stopped) = match converse(peer, bridge, &mut answered, &stop, &tail).await? {
        Ok(ended) => ended,
        Err(died) => return Ok(died),
    };
    Ok(match end {
        TurnEnd::Completed => Ended {
            exit_code: Some(0),
            signal: None,
            stopped: false,
            said: None,
        },
        TurnEnd::Interrupted => Ended {
            exit_code: Some(130),
            signal: None,
            stopped,
            said: Some("anteroom run: Codex's turn was interrupted".to_owned()),
        },
        TurnEnd::Failed(why) => Ended {
            exit_code: Some(1),
            signal: None,
            stopped,
            said: Some(format!("anteroom run: Codex's turn failed: {why}")),
        },
    })
}

/// The bridge's side of the conversation with the app server.
struct Bridge<'a> {
    args: &'a RunArgs,
    client: Client,
    token: String,
    stdin: tokio::process::ChildStdin,
    next_id: i64,
    sent: HashMap<i64, Sent>,
    thread: Option<String>,
    turn: Option<String>,
    /// File changes Codex announced (`item/started`): their approval requests name them only by id.
    announced: VecDeque<(String, Value)>,
    /// Each running command's output so far, bounded.
    outputs: HashMap<String, String>,
    /// Requests waiting for a person, by the request's id as text.
    waiting: HashMap<String, tokio::task::AbortHandle>,
    answered_in: mpsc::Sender<Answered>,
    final_message: Option<String>,
    tail: Arc<Mutex<Pending>>,
}

impl Bridge<'_> {
    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        send_line(&mut self.stdin, message).await
    }

    async fn request(&mut self, kind: Sent, params: Value) -> anyhow::Result<()> {
        self.next_id += 1;
        self.sent.insert(self.next_id, kind);
        self.send(&json!({"id": self.next_id, "method": kind.method(), "params": params}))
            .await
    }

    /// A line for the terminal and the session's output tail.
    fn say(&self, line: &str) {
        eprintln!("{line}");
        keep_line(line.as_bytes(), &self.tail);
    }

    /// One message from the app server; the turn's end when it is that.
    async fn take_message(&mut self, message: Value) -> anyhow::Result<Option<TurnEnd>> {
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(method), Some(id)) => {
                let method = method.to_owned();
                self.on_request(id.clone(), &method, message.get("params").cloned())
                    .await?;
                Ok(None)
            }
            (Some(method), None) => {
                let method = method.to_owned();
                Ok(self.on_notification(&method, message.get("params").unwrap_or(&Value::Null)))
            }
            (None, Some(id)) => {
                self.on_response(id, &message).await?;
                Ok(None)
            }
            (None, None) => {
                self.say("anteroom run: Codex sent a message that is neither a request, a notification nor a response; skipped");
                Ok(None)
            }
        }
    }

    async fn on_response(&mut self, id: &Value, message: &Value) -> anyhow::Result<()> {
        let Some(kind) = id.as_i64().and_then(|id| self.sent.remove(&id)) else {
            return Ok(());
        };
        if let Some(error) = message.get("error") {
            let why = cut(
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given"),
                500,
            );
            match kind {
                Sent::Initialize | Sent::ThreadStart | Sent::TurnStart => {
                    bail!("Codex's app server refused `{}`: {why}", kind.method())
                }
                Sent::Steer | Sent::Interrupt => {
                    self.say(&format!(
                        "anteroom run: Codex refused `{}`: {why}",
                        kind.method()
                    ));
                    return Ok(());
                }
                Sent::McpServers => {
                    self.say(&format!(
                        "anteroom run: Codex did not list its MCP servers ({why}); starting the turn"
                    ));
                    return self.start_turn().await;
                }
            }
        }
        let result = message.get("result").unwrap_or(&Value::Null);
        match kind {
            Sent::Initialize => {
                let agent = result.get("userAgent").and_then(Value::as_str);
                let (Some(agent), Some(_)) =
                    (agent, result.get("codexHome").and_then(Value::as_str))
                else {
                    bail!(
                        "Codex's app server answered `initialize` with something this Anteroom does not understand \
                         (it was written against Codex {CHECKED_VERSION}x): {}",
                        cut(&result.to_string(), 300)
                    );
                };
                // "anteroom/0.171.0 (Debian …)": the client's name, then Codex's version.
                let version = agent
                    .split_once('/')
                    .and_then(|(_, rest)| rest.split_whitespace().next())
                    .unwrap_or_default();
                if !version.starts_with(CHECKED_VERSION) {
                    self.say(&format!(
                        "anteroom run: this is Codex {}, and Anteroom was checked with {CHECKED_VERSION}x; going on",
                        cut(version, 40)
                    ));
                }
                self.send(&json!({"method": "initialized"})).await?;
                let cwd = std::env::current_dir().context("cannot read the working folder")?;
                let mut params = json!({
                    "cwd": cwd,
                    "approvalPolicy": self.args.ask_for_approval,
                });
                if let Some(model) = &self.args.model {
                    params["model"] = json!(model);
                }
                if let Some(sandbox) = &self.args.sandbox {
                    params["sandbox"] = json!(sandbox);
                }
                self.request(Sent::ThreadStart, params).await
            }
            Sent::ThreadStart => {
                let thread = result
                    .pointer("/thread/id")
                    .and_then(Value::as_str)
                    .context("Codex's app server started a thread without an id")?
                    .to_owned();
                self.say(&format!("anteroom run: Codex thread {thread}"));
                self.request(Sent::McpServers, json!({"threadId": thread}))
                    .await?;
                self.thread = Some(thread);
                Ok(())
            }
            Sent::McpServers => self.start_turn().await,
            Sent::TurnStart => {
                if let Some(turn) = result.pointer("/turn/id").and_then(Value::as_str) {
                    self.turn = Some(turn.to_owned());
                }
                Ok(())
            }
            Sent::Steer | Sent::Interrupt => Ok(()),
        }
    }

    /// Sends the prompt as the thread's one turn.
    async fn start_turn(&mut self) -> anyhow::Result<()> {
        let thread = self
            .thread
            .clone()
            .context("Codex's thread is not started")?;
        let prompt = self.args.command.join(" ");
        self.request(
            Sent::TurnStart,
            json!({"threadId": thread, "input": [{"type": "text", "text": prompt, "text_elements": []}]}),
        )
        .await
    }

    async fn on_request(
        &mut self,
        id: Value,
        method: &str,
        params: Option<Value>,
    ) -> anyhow::Result<()> {
        let shown = cut(method, 80);
        if !ASKED_METHODS.contains(&method) {
            self.say(&format!(
                "anteroom run: Codex asked `{}`, which Anteroom does not answer; told it so",
                anteroom_domain::hooks::clean(&shown)
            ));
            return self
                .send(&json!({"id": id, "error": {"code": METHOD_NOT_FOUND,
                    "message": format!("Anteroom does not answer {shown}")}}))
                .await;
        }
        let params = params.unwrap_or(Value::Null);
        let item = params
            .get("itemId")
            .and_then(Value::as_str)
            .and_then(|item| {
                self.announced
                    .iter()
                    .find(|(announced, _)| announced == item)
            })
            .map(|(_, item)| item.clone());
        let request = AppServerRequest {
            method: method.to_owned(),
            params,
            item,
        };
        let ask = match CodexAsk::read(&request) {
            Ok(ask) => ask,
            Err(error) => {
                self.say(&format!(
                    "anteroom run: Codex's `{shown}` could not be read ({error}); told it so"
                ));
                return self
                    .send(&json!({"id": id, "error": {"code": INVALID_PARAMS, "message": error.to_string()}}))
                    .await;
            }
        };
        // An entry leaves when its answer is sent (or Codex resolves the request itself): one whose task has
        // finished may still have its answer in the channel, and must still be sent.
        if self.waiting.len() >= WAITING_AT_ONCE {
            let reply = ask.refused(&format!(
                "{WAITING_AT_ONCE} of Codex's questions already wait for a person, so this one was not asked and \
                 nothing was allowed"
            ));
            return self.answer(&id, ask.thread().turn.clone(), reply).await;
        }
        let relay = relay(
            self.client.clone(),
            self.token.clone(),
            self.args.hook_timeout,
            request,
            ask,
            id.clone(),
            self.answered_in.clone(),
        );
        let task = tokio::spawn(relay);
        self.waiting.insert(id.to_string(), task.abort_handle());
        Ok(())
    }

    async fn take_answer(&mut self, answered: Answered) -> anyhow::Result<()> {
        if self.waiting.remove(&answered.id.to_string()).is_none() {
            // Codex resolved the request itself meanwhile (its turn ended): nothing to send.
            return Ok(());
        }
        self.answer(&answered.id, answered.turn, answered.reply)
            .await
    }

    /// Sends Codex a request's result, after steering into the turn what the model should read besides
    /// (Codex itself tells it only "rejected by user").
    async fn answer(
        &mut self,
        id: &Value,
        turn: Option<String>,
        reply: CodexReply,
    ) -> anyhow::Result<()> {
        if let (Some(steer), Some(thread), Some(turn)) = (&reply.steer, self.thread.clone(), turn) {
            self.request(
                Sent::Steer,
                json!({"threadId": thread, "expectedTurnId": turn,
                    "input": [{"type": "text", "text": steer, "text_elements": []}]}),
            )
            .await?;
        }
        if let Some(steer) = &reply.steer {
            self.say(&format!("anteroom run: {steer}"));
        }
        self.send(&json!({"id": id, "result": reply.result})).await
    }

    fn on_notification(&mut self, method: &str, params: &Value) -> Option<TurnEnd> {
        let text = |value: &Value, key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match method {
            "item/started" => {
                let item = params.get("item")?;
                if item.get("type").and_then(Value::as_str) == Some("fileChange") {
                    if self.announced.len() >= ITEMS_KEPT {
                        self.announced.pop_front();
                    }
                    self.announced
                        .push_back((text(item, "id"), kept_change(item)));
                }
            }
            "item/commandExecution/outputDelta" => {
                let item = text(params, "itemId");
                if self.outputs.len() < ITEMS_KEPT || self.outputs.contains_key(&item) {
                    let output = self.outputs.entry(item).or_default();
                    if output.len() < COMMAND_OUTPUT_KEPT {
                        output.push_str(&cut(&text(params, "delta"), COMMAND_OUTPUT_KEPT));
                    }
                }
            }
            "item/completed" => {
                let item = params.get("item")?;
                let id = text(item, "id");
                self.announced.retain(|(announced, _)| *announced != id);
                let output = self.outputs.remove(&id);
                self.show_item(item, output);
            }
            "serverRequest/resolved" => {
                // Codex no longer waits for the answer (its turn ended): the question stops waiting too.
                if let Some(waiting) = params
                    .get("requestId")
                    .and_then(|id| self.waiting.remove(&id.to_string()))
                {
                    waiting.abort();
                }
            }
            "error" => {
                let message = params
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                self.say(&format!("codex: error: {}", cut(message, 1_000)));
            }
            "turn/completed" => {
                let turn = params.get("turn")?;
                if self.turn.is_some()
                    && turn.get("id").and_then(Value::as_str) != self.turn.as_deref()
                {
                    return None;
                }
                if let Some(message) = &self.final_message {
                    println!("{message}");
                }
                return Some(match turn.get("status").and_then(Value::as_str) {
                    Some("completed") => TurnEnd::Completed,
                    Some("interrupted") => TurnEnd::Interrupted,
                    _ => TurnEnd::Failed(cut(
                        turn.pointer("/error/message")
                            .and_then(Value::as_str)
                            .unwrap_or("Codex gave no reason"),
                        1_000,
                    )),
                });
            }
            _ => {}
        }
        None
    }

    /// A finished item as a person reads it: the agent's words, a command with its output and exit code, the
    /// files a change touched, an MCP tool's call.
    fn show_item(&mut self, item: &Value, output: Option<String>) {
        let text = |key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let status = text("status");
        match item.get("type").and_then(Value::as_str) {
            Some("agentMessage") => {
                let message = text("text");
                self.say(&format!("codex: {message}"));
                self.final_message = Some(message);
            }
            Some("commandExecution") => {
                let exit = item
                    .get("exitCode")
                    .and_then(Value::as_i64)
                    .map(|code| format!(", exit {code}"))
                    .unwrap_or_default();
                self.say(&format!("$ {} ({status}{exit})", text("command")));
                let output = output.filter(|output| !output.is_empty()).or_else(|| {
                    item.get("aggregatedOutput")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
                for line in output.unwrap_or_default().lines() {
                    self.say(line);
                }
            }
            Some("fileChange") => {
                for change in item
                    .get("changes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .take(ITEMS_KEPT)
                {
                    let kind = change
                        .pointer("/kind/type")
                        .and_then(Value::as_str)
                        .unwrap_or("update");
                    let path = change
                        .get("path")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    self.say(&format!("codex: {kind} {path} ({status})"));
                }
            }
            Some("mcpToolCall") => {
                self.say(&format!(
                    "codex: {}.{} ({status})",
                    text("server"),
                    text("tool")
                ));
            }
            _ => {}
        }
    }
}

impl Conversation for Bridge<'_> {
    type Answered = Answered;
    type End = TurnEnd;

    async fn on_message(&mut self, message: Value) -> anyhow::Result<Option<TurnEnd>> {
        self.take_message(message).await
    }

    async fn on_answered(&mut self, answered: Answered) -> anyhow::Result<()> {
        self.take_answer(answered).await
    }

    /// `turn/interrupt`, once the turn is known.
    async fn end_turn(&mut self) -> anyhow::Result<bool> {
        let (Some(thread), Some(turn)) = (self.thread.clone(), self.turn.clone()) else {
            return Ok(false);
        };
        self.request(Sent::Interrupt, json!({"threadId": thread, "turnId": turn}))
            .await?;
        Ok(true)
    }

    fn stop_waiting(&mut self) {
        for waiting in self.waiting.values() {
            waiting.abort();
        }
    }
}

/// A file change as remembered until its approval arrives: its paths and kinds, and no more of its diffs than
/// a question shows ([`CHANGE_KEPT`] characters in all), so the changes remembered stay within a few megabytes
/// however large the app server's items are.
fn kept_change(item: &Value) -> Value {
    let mut budget = CHANGE_KEPT;
    let changes: Vec<Value> = item
        .get("changes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(CHANGES_KEPT)
        .map(|change| {
            let diff = cut(
                change
                    .get("diff")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                budget,
            );
            budget = budget.saturating_sub(diff.len());
            json!({"path": change.get("path"), "kind": change.get("kind"), "diff": diff})
        })
        .collect();
    json!({"id": item.get("id"), "changes": changes})
}

/// Relays one server request to Anteroom and hands back what Codex is to read. When Anteroom cannot be
/// asked, the reply refuses — nothing is allowed by default.
async fn relay(
    client: Client,
    token: String,
    timeout: u64,
    request: AppServerRequest,
    ask: CodexAsk,
    id: Value,
    answered: mpsc::Sender<Answered>,
) {
    let body = json!({"method": request.method, "params": request.params, "item": request.item});
    let asked = ask_anteroom(
        &client,
        &token,
        "/hooks/codex/app-server",
        timeout,
        &body,
        "steer",
    )
    .await;
    let reply = match asked {
        Ok((result, steer)) => CodexReply { result, steer },
        Err(why) => ask.refused(&why),
    };
    let turn = ask.thread().turn.clone();
    let _ = answered.send(Answered { id, turn, reply }).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_change_keeps_what_a_question_shows_and_no_more() {
        let huge = "x".repeat(1_000_000);
        let item = json!({"type": "fileChange", "id": "call_p", "status": "inProgress", "changes":
            (0..500).map(|n| json!({"path": format!("/f{n}"), "kind": {"type": "add"}, "diff": huge}))
                .collect::<Vec<_>>()});
        let kept = kept_change(&item);
        assert_eq!(kept["id"], "call_p");
        let changes = kept["changes"].as_array().expect("changes");
        assert_eq!(changes.len(), CHANGES_KEPT);
        assert_eq!(changes[0]["kind"]["type"], "add");
        assert!(
            kept.to_string().len() < CHANGE_KEPT + 10_000,
            "{}",
            kept.to_string().len()
        );
        // What the question is built from still reads it.
        let request = AppServerRequest {
            method: "item/fileChange/requestApproval".to_owned(),
            params: json!({"threadId": "t", "turnId": "u", "itemId": "call_p"}),
            item: Some(kept),
        };
        let question = CodexAsk::read(&request)
            .expect("read")
            .question()
            .expect("question");
        assert!(question.request.message().contains("/f0"));
    }
}
