//! The relay: runs the wrapped server as a child and passes every line between it and the harness, except the
//! server's `elicitation/create` requests, which become Anteroom rounds a person answers (legacy era,
//! protocol 2025-11-25 and earlier).
//!
//! Each direction has one writer, so lines never interleave; each question is worked by a task of its own, so
//! concurrent tool calls that each elicit get their own rounds and answers.

use std::{
    collections::HashMap,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use anteroom_domain::{
    ids::RequestKey,
    round::{ElicitationRequest, OperationKind, ResponseAction, RoundStatus},
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    process::Command,
    sync::{mpsc, oneshot},
};

use crate::{
    anteroom::{Anteroom, AnteroomError, Ask, DeliveryStep, HeldLease, RoundState},
    wire::{Line, Outstanding, classify, declare_elicitation_in_initialize, elicitation_request},
};

/// How long a lease lasts; renewed every third of it while the wrapper waits (a long-poll takes up to 25 s).
const LEASE_SECONDS: i64 = 60;
/// How long the child has to exit after its stdin closes, before it is killed (SDK clients wait 2 s).
const EXIT_GRACE: Duration = Duration::from_millis(1500);
/// The JSON-RPC error code the wrapper answers a question with when no answer can be given.
const NO_ANSWER: i64 = -32001;

/// What the relay is started with.
#[derive(Debug, Clone)]
pub struct Wrapped {
    pub program: String,
    pub args: Vec<String>,
    /// The name questions carry ("the github server asks…").
    pub server: Option<String>,
    /// How often a harness that sent a `progressToken` hears that its call still waits for a person
    /// ([`PROGRESS_EVERY`]); clients that reset their timeout on progress keep waiting.
    pub progress_every: Duration,
}

/// How often the harness hears that a call waits for a person, by default: well inside the 60 s that SDK
/// clients wait without progress.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// A line to write, with the direction's single writer.
type Lines = mpsc::UnboundedSender<String>;

/// The harness's requests that may elicit, shared by both directions.
type Open = Arc<Mutex<Outstanding>>;

/// Runs `wrapped` between `harness_in`/`harness_out` until the harness closes its side; returns the child's exit
/// code when it had one.
pub async fn run(
    wrapped: Wrapped,
    anteroom: Anteroom,
    harness_in: impl AsyncRead + Unpin + Send + 'static,
    harness_out: impl AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<Option<i32>> {
    let mut child = Command::new(&wrapped.program)
        .args(&wrapped.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other(
            "the child's stdio could not be opened",
        ));
    };
    let to_child = writer(child_in);
    let to_harness = writer(harness_out);
    let open: Open = Arc::default();

    let from_child = tokio::spawn(pump_from_child(
        child_out,
        to_child.clone(),
        to_harness,
        Arc::clone(&open),
        Arc::new(anteroom),
        wrapped.server.clone(),
        wrapped.progress_every,
    ));
    pump_from_harness(harness_in, to_child, open).await;
    // The harness closed its side: the child's stdin closes with the writer; give it a moment to exit.
    let status = match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
        Ok(status) => status?.code(),
        Err(_) => {
            child.kill().await?;
            None
        }
    };
    from_child.abort();
    Ok(status)
}

/// One writer per direction: lines arrive on a channel and are written whole, each followed by a newline.
fn writer(mut sink: impl AsyncWrite + Unpin + Send + 'static) -> Lines {
    let (lines, mut pending) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(line) = pending.recv().await {
            if sink.write_all(line.as_bytes()).await.is_err()
                || sink.write_all(b"\n").await.is_err()
                || sink.flush().await.is_err()
            {
                break;
            }
        }
        let _ = sink.shutdown().await;
    });
    lines
}

/// Harness → server: declares elicitation in `initialize`, notes the calls that may elicit, passes the rest.
async fn pump_from_harness(harness_in: impl AsyncRead + Unpin, to_child: Lines, open: Open) {
    let mut lines = BufReader::new(harness_in).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(mut message) = serde_json::from_str::<Value>(&line) else {
            let _ = to_child.send(line);
            continue;
        };
        let out = if declare_elicitation_in_initialize(&mut message) {
            message.to_string()
        } else {
            line
        };
        if let Line::Request { id, method } = classify(&message)
            && let Ok(mut open) = open.lock()
        {
            open.started(&id, &method, message.get("params"));
        }
        if to_child.send(out).is_err() {
            break;
        }
    }
}

/// Server → harness: answers the server's questions through Anteroom, forgets finished calls, passes the rest.
async fn pump_from_child(
    child_out: impl AsyncRead + Unpin,
    to_child: Lines,
    to_harness: Lines,
    open: Open,
    anteroom: Arc<Anteroom>,
    server: Option<String>,
    progress_every: Duration,
) {
    let mut lines = BufReader::new(child_out).lines();
    // Each question being worked, by the server's request id: how to tell its task the server withdrew it.
    let mut asking: HashMap<String, oneshot::Sender<()>> = HashMap::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            let _ = to_harness.send(line);
            continue;
        };
        match classify(&message) {
            Line::Request { id, method } if method == "elicitation/create" => {
                let operation = open.lock().ok().and_then(|open| open.current().cloned());
                // Both sides may be timing the wait: the harness its call, the server its own question.
                let progress = Progress::default();
                if let Some(token) = operation.as_ref().and_then(|o| o.progress_token.clone()) {
                    progress.keep_alive(token, to_harness.clone(), progress_every);
                }
                if let Some(token) = message
                    .pointer("/params/_meta/progressToken")
                    .filter(|token| token.is_string() || token.is_number())
                    .cloned()
                {
                    progress.keep_alive(token, to_child.clone(), progress_every);
                }
                let question = Question {
                    id: id.clone(),
                    params: message.get("params").cloned().unwrap_or(Value::Null),
                    operation_kind: operation.as_ref().map(|o| o.kind),
                    operation_name: operation.map(|o| o.name),
                    server: server.clone(),
                };
                let (anteroom, to_child) = (Arc::clone(&anteroom), to_child.clone());
                let (withdraw, withdrawn) = oneshot::channel();
                asking.insert(id.to_string(), withdraw);
                tokio::spawn(async move {
                    question
                        .answer(&anteroom, &to_child, withdrawn, &progress)
                        .await;
                    progress.stop();
                });
            }
            Line::Notification { method } if method == "notifications/cancelled" => {
                // The server withdrew one of its own questions: stop waiting for it (the harness never saw it).
                let withdrawn = message
                    .pointer("/params/requestId")
                    .map(ToString::to_string)
                    .and_then(|id| asking.remove(&id));
                match withdrawn {
                    Some(withdraw) => {
                        let _ = withdraw.send(());
                    }
                    None => {
                        let _ = to_harness.send(line);
                    }
                }
            }
            Line::Response { id } => {
                if let Ok(mut open) = open.lock() {
                    open.finished(&id);
                }
                let _ = to_harness.send(line);
            }
            _ => {
                let _ = to_harness.send(line);
            }
        }
        asking.retain(|_, withdraw| !withdraw.is_closed());
    }
}

/// One `elicitation/create` from the server, on its way to a person.
struct Question {
    id: Value,
    params: Value,
    operation_kind: Option<OperationKind>,
    operation_name: Option<String>,
    server: Option<String>,
}

/// The progress notes a question keeps sending while a person decides. Stopping them waits for a note being
/// written, so no note for the question can follow its reply.
#[derive(Default)]
struct Progress {
    stopped: Arc<Mutex<bool>>,
}

impl Progress {
    /// Tells one side (the harness about its call, or the server about its question), every `every`, that a
    /// person is still deciding: `notifications/progress` with strictly increasing progress.
    fn keep_alive(&self, token: Value, to: Lines, every: Duration) {
        let stopped = Arc::clone(&self.stopped);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            for progress in 1_u64.. {
                ticks.tick().await;
                let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                    "progressToken": token,
                    "progress": progress,
                    "message": "Waiting for a person to answer in Anteroom",
                }});
                // Written under the lock `stop` takes: a note is either before the reply or never.
                let Ok(stopped) = stopped.lock() else { return };
                if *stopped || to.send(note.to_string()).is_err() {
                    return;
                }
            }
        });
    }

    fn stop(&self) {
        if let Ok(mut stopped) = self.stopped.lock() {
            *stopped = true;
        }
    }
}

/// Why a question got no answer from the wrapper.
enum NoAnswer {
    /// The server withdrew it (`notifications/cancelled`): it expects no reply.
    Withdrawn,
    /// Nobody answered, or Anteroom could not be asked: the server gets an error saying so.
    Because(String),
}

impl From<String> for NoAnswer {
    fn from(message: String) -> Self {
        Self::Because(message)
    }
}

impl Question {
    /// Answers the server: the person's answer, or an error that says why there is none (nothing when the server
    /// withdrew the question).
    async fn answer(
        self,
        anteroom: &Anteroom,
        to_child: &Lines,
        withdrawn: oneshot::Receiver<()>,
        progress: &Progress,
    ) {
        let id = self.id.clone();
        match self
            .ask_and_deliver(anteroom, to_child, withdrawn, progress)
            .await
        {
            Ok(()) | Err(NoAnswer::Withdrawn) => {}
            Err(NoAnswer::Because(message)) => {
                progress.stop();
                eprintln!("anteroom wrap: {message}");
                let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": NO_ANSWER, "message": message}});
                let _ = to_child.send(error.to_string());
            }
        }
    }

    async fn ask_and_deliver(
        self,
        anteroom: &Anteroom,
        to_child: &Lines,
        mut withdrawn: oneshot::Receiver<()>,
        progress: &Progress,
    ) -> Result<(), NoAnswer> {
        let request = elicitation_request(&self.params).map_err(|error| error.to_string())?;
        let key = RequestKey::parse("answer").map_err(|error| error.to_string())?;
        let ask = Ask {
            // A string id as itself, not as JSON text with quotes.
            logical_operation_id: format!(
                "elicitation-{}",
                self.id
                    .as_str()
                    .map_or_else(|| self.id.to_string(), str::to_owned)
            ),
            server: self.server,
            operation_kind: self.operation_kind.unwrap_or(OperationKind::Tool),
            operation_name: self.operation_name.unwrap_or_else(|| "unknown".to_owned()),
            requests: [(key.clone(), request.clone())].into(),
            request_state: None,
            round_index: 0,
            round_limit: 1,
            deadline: None,
        };
        let unreachable = |error: AnteroomError| format!("no answer: {error}");
        let round = anteroom.ask(&ask).await.map_err(unreachable)?;
        let lease = anteroom
            .claim(round.round_id, LEASE_SECONDS)
            .await
            .map_err(unreachable)?;
        let answered = tokio::select! {
            answered = wait_for_person(anteroom, &round, &lease) => answered?,
            Ok(()) = &mut withdrawn => {
                let ended = anteroom
                    .fail(round.round_id, &lease, "cancelled", "The asking server withdrew the question.")
                    .await;
                if let Err(error) = ended {
                    eprintln!("anteroom wrap: the server withdrew its question, but {error}");
                }
                return Err(NoAnswer::Withdrawn);
            }
        };
        let response = answered
            .responses
            .as_ref()
            .and_then(|responses| responses.get(&key))
            .ok_or_else(|| "no answer: the round was answered without this request".to_owned())?;
        let result = match (response.action, &request) {
            (ResponseAction::Accept, ElicitationRequest::Form { .. }) => {
                json!({"action": "accept", "content": response.content.clone().unwrap_or_default()})
            }
            (action, _) => json!({"action": action.as_str()}),
        };
        anteroom
            .step(round.round_id, &lease, DeliveryStep::Start)
            .await
            .map_err(unreachable)?;
        let reply = json!({"jsonrpc": "2.0", "id": self.id, "result": result});
        progress.stop();
        if to_child.send(reply.to_string()).is_err() {
            let _ = anteroom
                .fail(
                    round.round_id,
                    &lease,
                    "delivery_failed",
                    "The wrapped server had exited.",
                )
                .await;
            return Err(NoAnswer::Withdrawn);
        }
        // The server has what it asked for: the round is delivered and, with nothing left to do, resolved.
        for step in [DeliveryStep::Delivered, DeliveryStep::Resolve] {
            if let Err(error) = anteroom.step(round.round_id, &lease, step).await {
                eprintln!("anteroom wrap: the answer was given to the server, but {error}");
            }
        }
        Ok(())
    }
}

/// Waits for a person's answer, renewing the lease as it goes; an ended round is an honest error.
async fn wait_for_person(
    anteroom: &Anteroom,
    round: &RoundState,
    lease: &HeldLease,
) -> Result<RoundState, String> {
    let renew_every = Duration::from_secs(u64::try_from(LEASE_SECONDS / 3).unwrap_or(20));
    let mut renewed = tokio::time::Instant::now();
    loop {
        let state = anteroom
            .wait(round.round_id)
            .await
            .map_err(|error| format!("no answer: {error}"))?;
        match state.status {
            RoundStatus::Pending => {}
            RoundStatus::Failed => {
                let why = state
                    .failure
                    .map(|failure| format!("{} ({})", failure.message, failure.code.as_str()))
                    .unwrap_or_else(|| "the question ended without an answer".to_owned());
                return Err(format!("no answer: {why}"));
            }
            _ => return Ok(state),
        }
        if renewed.elapsed() >= renew_every {
            anteroom
                .renew(round.round_id, lease, LEASE_SECONDS)
                .await
                .map_err(|error| format!("no answer: {error}"))?;
            renewed = tokio::time::Instant::now();
        }
    }
}
