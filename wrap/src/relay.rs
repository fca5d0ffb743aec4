//! The relay: runs the wrapped server as a child and passes every line between it and the harness, except what
//! the wrapper answers through Anteroom — a server's `elicitation/create` (legacy era), and a call's
//! `input_required` result or `-32042` URL consent error (held calls) — and what it adds: elicitation in the
//! client's capabilities, and progress while a person decides.
//!
//! Each direction has one writer, so lines never interleave; each question is worked by a task of its own, so
//! concurrent tool calls that each elicit get their own rounds and answers. The wrapper's own requests to the
//! server carry ids of its own (`anteroom-wrap-N`), so they never meet the harness's.

use std::{
    collections::HashMap,
    future::Future,
    process::Stdio,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    process::{Child, Command},
    sync::oneshot,
};

pub use crate::relay_state::MAX_OPEN_QUESTIONS;
use crate::{
    anteroom::Anteroom,
    held::HeldCall,
    jsonrpc::{
        Line, NeedsInput, classify, declare_elicitation_in_initialize, declare_elicitation_in_meta,
        id_key, is_modern_request, needs_input,
    },
    legacy::Question,
    person::{Withdraw, Withdrawal},
    progress::Progress,
    relay_state::{Lines, NO_ANSWER, RelayState, too_many_questions},
};

/// How long the child has to exit after its stdin closes or a signal, before it is killed (SDK clients wait
/// 2 s before they send SIGTERM).
const EXIT_GRACE: Duration = Duration::from_millis(1500);
/// How long the last lines of a direction have to be written once the relay ends.
const FLUSH_GRACE: Duration = Duration::from_millis(500);
/// How long a delivery under way (its answer handed over) has to finish its steps when the wrapper stops.
const DELIVERY_SETTLE: Duration = Duration::from_secs(1);
/// How long the wrapper waits, when it stops, for Anteroom to confirm that its open questions ended.
const ABANDON_GRACE: Duration = Duration::from_secs(4);
/// The longest line relayed, either way (a `resources/read` may carry a large blob); a longer one is dropped
/// whole and reported on stderr rather than held in memory without bound.
pub const MAX_LINE: usize = 64 * 1024 * 1024;
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

/// The child never inherits the session's credentials (`ELICITATION_REQUEST_URL`, `ELICITATION_POLL_URL`,
/// `ANTEROOM_SESSION_TOKEN`): it is third-party code, and the wrapper asks on its behalf. A server that can ask
/// over HTTP then asks through MCP instead, which the wrapper answers the same way.
/// Runs `wrapped` between `harness_in`/`harness_out` until the harness closes its side, the server exits, or
/// `stop` resolves with a signal to pass on; returns the child's exit code when it had one.
pub async fn run(
    wrapped: Wrapped,
    anteroom: Anteroom,
    harness_in: impl AsyncRead + Unpin + Send + 'static,
    harness_out: impl AsyncWrite + Unpin + Send + 'static,
    stop: impl Future<Output = i32>,
) -> std::io::Result<Option<i32>> {
    let mut child = Command::new(&wrapped.program)
        .args(&wrapped.args)
        .env_remove("ELICITATION_REQUEST_URL")
        .env_remove("ELICITATION_POLL_URL")
        .env_remove("ANTEROOM_SESSION_TOKEN")
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
    let to_child = Writer::spawn(child_in);
    let to_harness = Writer::spawn(harness_out);
    let relay = Arc::new(RelayState::new(
        anteroom,
        wrapped.server.clone(),
        wrapped.progress_every,
        to_child.lines.clone(),
        to_harness.lines.clone(),
    ));
    let mut from_child = tokio::spawn(pump_from_child(child_out, Arc::clone(&relay)));
    let status = tokio::select! {
        () = pump_from_harness(harness_in, Arc::clone(&relay)) => {
            // The harness closed its side: so does the server's stdin; it has a moment to exit.
            to_child.finish().await;
            wait_or_kill(&mut child).await
        }
        _ = &mut from_child => {
            // The server closed its stdout (it is exiting, or can no longer be heard): the relay is over.
            wait_or_kill(&mut child).await
        }
        signal = stop => {
            pass_signal(&child, signal);
            wait_or_kill(&mut child).await
        }
    };
    // The server is gone: its last lines reach the harness before the wrapper ends.
    if !from_child.is_finished()
        && tokio::time::timeout(FLUSH_GRACE, &mut from_child)
            .await
            .is_err()
    {
        from_child.abort();
    }
    relay.anteroom.stop_asking();
    // Questions still open can no longer reach anyone: they end now, saying why, not at their deadline.
    let abandoned = relay
        .anteroom
        .fail_all_held("wrapper_stopped", DELIVERY_SETTLE);
    if tokio::time::timeout(ABANDON_GRACE, abandoned)
        .await
        .is_err()
    {
        eprintln!("anteroom wrap: Anteroom did not confirm the end of the open questions in time");
    }
    to_harness.finish().await;
    status
}

/// Waits [`EXIT_GRACE`] for the child, then kills it: it never outlives the wrapper. The exit code, or 128 +
/// the signal that ended it, as a shell reports it.
async fn wait_or_kill(child: &mut Child) -> std::io::Result<Option<i32>> {
    use std::os::unix::process::ExitStatusExt;
    let status = match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
        Ok(status) => status?,
        Err(_) => {
            child.kill().await?;
            child.wait().await?
        }
    };
    Ok(status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal)))
}

/// Passes the signal that stops the wrapper (SIGTERM, SIGINT) on to the child.
fn pass_signal(child: &Child, signal: i32) {
    let pid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw);
    let signal = rustix::process::Signal::from_named_raw(signal);
    if let (Some(pid), Some(signal)) = (pid, signal) {
        // The child has not been reaped (its `wait` has not returned), so the pid is still its own.
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// One direction's single writer: lines arrive on a channel and are written whole, each followed by a newline.
struct Writer {
    lines: Lines,
    /// Closes the sink once what is queued is written, even while tasks still hold senders of `lines`.
    close: oneshot::Sender<()>,
    done: tokio::task::JoinHandle<()>,
}

impl Writer {
    fn spawn(mut sink: impl AsyncWrite + Unpin + Send + 'static) -> Self {
        let (lines, mut pending, queued) = Lines::channel();
        let (close, mut closed) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            let mut closing = false;
            loop {
                let line = if closing {
                    // Closing: what is already queued still goes out, then the sink closes.
                    pending.try_recv().ok()
                } else {
                    tokio::select! {
                        line = pending.recv() => line,
                        _ = &mut closed => {
                            closing = true;
                            continue;
                        }
                    }
                };
                let Some(line) = line else { break };
                let written = sink.write_all(&line).await.is_ok()
                    && sink.write_all(b"\n").await.is_ok()
                    && sink.flush().await.is_ok();
                queued.send_modify(|queued| *queued = queued.saturating_sub(line.len() + 1));
                if !written {
                    break;
                }
            }
            // Nothing more is written: whoever waits for room stops waiting (and then finds the writer gone).
            queued.send_replace(0);
            let _ = sink.shutdown().await;
        });
        Self { lines, close, done }
    }

    /// Writes what is queued, closes the sink, and waits (briefly) until it is done.
    async fn finish(self) {
        let _ = self.close.send(());
        let _ = tokio::time::timeout(FLUSH_GRACE, self.done).await;
    }
}

/// One line read from a peer: its bytes without the newline, or the fact that it was longer than [`MAX_LINE`]
/// (skipped whole).
pub enum Read {
    Line,
    TooLong,
}

/// Reads the next line into `line` (a `\r` before the newline is kept: bytes pass as they came); `None` at the
/// end of the stream.
pub async fn next_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<Option<Read>> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Some(Read::TooLong),
                (false, true) => None,
                (false, false) => Some(Read::Line),
            });
        }
        let newline = available.iter().position(|byte| *byte == b'\n');
        let taken = newline.map_or(available.len(), |at| at + 1);
        if !too_long {
            if line.len() + taken > MAX_LINE + 1 {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(&available[..taken]);
            }
        }
        reader.consume(taken);
        if newline.is_some() {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            return Ok(Some(if too_long { Read::TooLong } else { Read::Line }));
        }
    }
}

/// Harness → server: declares elicitation (in `initialize`, or in each modern request's `_meta`), notes the
/// calls that may need input, withdraws held calls the harness cancels, and passes everything on.
async fn pump_from_harness(harness_in: impl AsyncRead + Unpin, relay: Arc<RelayState>) {
    let mut reader = BufReader::new(harness_in);
    let mut line = Vec::new();
    loop {
        // A server that stops reading stops the wrapper reading the harness: back-pressure, not memory.
        relay.to_child.room().await;
        let Ok(Some(read)) = next_line(&mut reader, &mut line).await else {
            break;
        };
        if let Read::TooLong = read {
            eprintln!(
                "anteroom wrap: dropped a line from the harness longer than {MAX_LINE} bytes"
            );
            continue;
        }
        let Ok(mut message) = serde_json::from_slice::<Value>(&line) else {
            if relay.to_child.send(line.clone()).is_err() {
                break;
            }
            continue;
        };
        let rewritten = match classify(&message) {
            Line::Request { id, method } => {
                let declared = declare_elicitation_in_initialize(&mut message)
                    || (is_modern_request(&message) && declare_elicitation_in_meta(&mut message));
                relay
                    .books()
                    .outstanding
                    .started(&id, &method, message.get("params"));
                declared.then(|| message.to_string())
            }
            Line::Notification { method } if method == "notifications/cancelled" => {
                if let Some(id) = message.pointer("/params/requestId") {
                    // One lock for both: a result that crosses the cancel is then passed on, never held.
                    let mut books = relay.books();
                    books.outstanding.finished(id);
                    if let Some(withdraw) = books.held.remove(&id_key(id)) {
                        let _ = withdraw.send(true);
                    }
                }
                None
            }
            _ => None,
        };
        let sent = match rewritten {
            Some(rewritten) => relay.to_child.send(rewritten),
            None => relay.to_child.send(line.clone()),
        };
        if sent.is_err() {
            break;
        }
    }
}

/// Server → harness: answers the server's questions through Anteroom, holds calls that need input, routes the
/// responses to the wrapper's own requests, and passes the rest.
async fn pump_from_child(child_out: impl AsyncRead + Unpin, relay: Arc<RelayState>) {
    let mut reader = BufReader::new(child_out);
    let mut line = Vec::new();
    // Each question being worked, by the server's request id: how to tell its task the server withdrew it.
    let mut asking: HashMap<String, Withdraw> = HashMap::new();
    loop {
        // A harness that stops reading stops the wrapper reading the server: back-pressure, not memory.
        relay.to_harness.room().await;
        let Ok(Some(read)) = next_line(&mut reader, &mut line).await else {
            break;
        };
        if let Read::TooLong = read {
            eprintln!("anteroom wrap: dropped a line from the server longer than {MAX_LINE} bytes");
            continue;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            let _ = relay.to_harness.send(line.clone());
            continue;
        };
        match classify(&message) {
            Line::Request { id, method } if method == "elicitation/create" => {
                asking.retain(|_, withdraw| !withdraw.is_closed());
                ask_a_person(&relay, id, &message, &mut asking);
            }
            Line::Notification { method } if method == "notifications/cancelled" => {
                // The server withdrew one of its own questions: stop waiting for it (the harness never saw it).
                let withdrawn = message
                    .pointer("/params/requestId")
                    .and_then(|id| asking.remove(&id_key(id)));
                match withdrawn {
                    Some(withdraw) => {
                        let _ = withdraw.send(true);
                    }
                    None => {
                        let _ = relay.to_harness.send(line.clone());
                    }
                }
            }
            Line::Notification { method } if method == "notifications/elicitation/complete" => {
                // The completion of a URL elicitation the harness never saw is not the harness's to hear; a
                // held call may be waiting for it.
                let ours = message
                    .pointer("/params/elicitationId")
                    .and_then(Value::as_str)
                    .filter(|id| {
                        relay
                            .books()
                            .url_elicitations
                            .iter()
                            .any(|known| known == id)
                    })
                    .map(str::to_owned);
                match ours {
                    Some(id) => relay.note_url_complete(id),
                    None => {
                        let _ = relay.to_harness.send(line.clone());
                    }
                }
            }
            Line::Response { id } => route_response(&relay, id, message, line.clone()),
            _ => {
                let _ = relay.to_harness.send(line.clone());
            }
        }
    }
    // The server's stdout closed: nobody will answer the wrapper's own requests.
    relay.books().own.clear();
}

/// Starts working a server's `elicitation/create`: a task of its own, with progress for whoever waits.
fn ask_a_person(
    relay: &Arc<RelayState>,
    id: Value,
    message: &Value,
    asking: &mut HashMap<String, Withdraw>,
) {
    let Some(slot) = relay.open_question() else {
        let error = json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": NO_ANSWER, "message": too_many_questions()}});
        eprintln!("anteroom wrap: {}", too_many_questions());
        let _ = relay.to_child.send(error.to_string());
        return;
    };
    let operation = relay.books().outstanding.current().cloned();
    // Both sides may be timing the wait: the harness its call, the server its own question.
    let progress = Progress::default();
    if let Some(operation) = &operation
        && let Some(token) = operation.progress_token.clone()
    {
        progress.keep_alive(
            token,
            relay.to_harness.clone(),
            relay.progress_every,
            &operation.progress,
            Some(Arc::clone(&operation.open)),
        );
    }
    if let Some(token) = message
        .pointer("/params/_meta/progressToken")
        .filter(|token| token.is_string() || token.is_number())
        .cloned()
    {
        progress.keep_alive(
            token,
            relay.to_child.clone(),
            relay.progress_every,
            &Arc::default(),
            None,
        );
    }
    let question = Question {
        id: id.clone(),
        params: message.get("params").cloned().unwrap_or(Value::Null),
        operation,
    };
    let (withdraw, withdrawn) = Withdrawal::new();
    asking.insert(id_key(&id), withdraw);
    let relay = Arc::clone(relay);
    tokio::spawn(async move {
        question.answer(relay, withdrawn, progress).await;
        drop(slot);
    });
}

/// A response from the server: to the wrapper's own request, a call the wrapper holds, or the harness.
fn route_response(relay: &Arc<RelayState>, id: Value, message: Value, line: Vec<u8>) {
    let key = id_key(&id);
    let mut books = relay.books();
    if let Some(own) = books.own.remove(&key) {
        drop(books);
        let _ = own.send(message);
        return;
    }
    let Some(operation) = books.outstanding.finished(&id) else {
        drop(books);
        let _ = relay.to_harness.send(line);
        return;
    };
    let Some(needs) = needs_input(&message) else {
        drop(books);
        let _ = relay.to_harness.send(line);
        return;
    };
    let Some(slot) = relay.open_question() else {
        drop(books);
        let error = json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": NO_ANSWER, "message": too_many_questions()}});
        let _ = relay.to_harness.send(error.to_string());
        return;
    };
    // Known before the next line is read: the server may say at once that a URL visit is complete.
    if let NeedsInput::UrlRequired { elicitations, .. } = &needs {
        for id in elicitations
            .iter()
            .filter_map(|elicitation| elicitation.get("elicitationId").and_then(Value::as_str))
        {
            books.remember_url(id);
        }
    }
    // The harness still waits for this call: the wrapper holds it until the server's final answer.
    operation.open.store(true, Ordering::Relaxed);
    let (withdraw, cancelled) = Withdrawal::new();
    books.held.insert(key, withdraw);
    drop(books);
    let call = HeldCall {
        harness_id: id,
        operation,
    };
    let relay = Arc::clone(relay);
    tokio::spawn(async move {
        call.finish(relay, needs, cancelled).await;
        drop(slot);
    });
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;
    use crate::relay_state::QUEUE_BYTES;

    /// Whether `future` completes at its first poll.
    fn is_ready(future: impl Future<Output = ()>) -> bool {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        future.as_mut().poll(&mut context).is_ready()
    }

    /// A peer that stops reading: the writer's queue fills to its bound and the pump feeding it is told to
    /// wait; when the peer reads again, there is room again.
    #[tokio::test]
    async fn a_peer_that_stops_reading_makes_the_pump_wait_not_the_queue_grow() {
        let (sink, mut peer) = tokio::io::duplex(64 * 1024);
        let writer = Writer::spawn(sink);
        let line = vec![b'x'; 1024 * 1024];
        let mut sent = 0_usize;
        // What a pump does: wait for room, then send the next line.
        while is_ready(writer.lines.room()) {
            writer.lines.send(line.clone()).expect("the writer runs");
            sent += line.len() + 1;
            // The writer gets its turn: it takes what the peer's buffer holds, then waits on the peer.
            tokio::task::yield_now().await;
            assert!(
                sent <= QUEUE_BYTES + line.len() + 1,
                "unbounded: {sent} bytes queued"
            );
        }
        assert!(writer.lines.queued() >= QUEUE_BYTES);
        let reader = tokio::spawn(async move {
            let mut buffer = vec![0; 1024 * 1024];
            while peer.read(&mut buffer).await.is_ok_and(|read| read > 0) {}
        });
        tokio::time::timeout(Duration::from_secs(30), writer.lines.room())
            .await
            .expect("room once the peer reads again");
        writer.finish().await;
        reader.abort();
    }
}
