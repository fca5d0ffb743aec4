//! An agent that speaks JSON-RPC over stdio (Codex's app server, an ACP agent), run as the run's agent: started
//! in a process group of its own, its messages read a line each (none longer than a bound), the last of its
//! stderr kept for when it dies, and the conversation driven until its turn ends — a Stop or Ctrl-C asking it to
//! end the turn, a second Ctrl-C or a turn that will not end killing it.

use std::{
    collections::VecDeque,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context;
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader},
    sync::mpsc,
};

use super::{Ended, Signals, anteroom::Client, output::Pending, output::keep_line, sleep_until};

/// How long a turn asked to end may take before the agent is killed.
const END_GRACE: Duration = Duration::from_secs(10);

/// The longest message read from the agent; a longer line is skipped, and said.
const MESSAGE_BYTES: u64 = 8 * 1024 * 1024;
/// How much of the agent's stderr is kept for when it dies.
const STDERR_KEPT: usize = 8 * 1024;

/// What the reader hands the bridge: a message, or why a line could not be one.
pub(super) enum Incoming {
    Message(Value),
    Unreadable(String),
}

/// Reads the agent's messages, a line each, none longer than [`MESSAGE_BYTES`].
async fn read_messages(from: impl AsyncRead + Unpin, to: mpsc::Sender<Incoming>) {
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MESSAGE_BYTES)
            .read_until(b'\n', &mut line)
            .await
            .unwrap_or(0);
        if read == 0 {
            return;
        }
        let incoming = if !line.ends_with(b"\n") && read as u64 == MESSAGE_BYTES {
            // The rest of the line is skipped, so the next message is read from its start.
            loop {
                line.clear();
                let more = (&mut reader)
                    .take(MESSAGE_BYTES)
                    .read_until(b'\n', &mut line)
                    .await
                    .unwrap_or(0);
                if more == 0 || line.ends_with(b"\n") {
                    break;
                }
            }
            Incoming::Unreadable(format!("a message over {} MiB", MESSAGE_BYTES >> 20))
        } else if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        } else {
            match serde_json::from_slice(&line) {
                Ok(message) => Incoming::Message(message),
                Err(error) => Incoming::Unreadable(format!("a line that is not JSON ({error})")),
            }
        };
        if to.send(incoming).await.is_err() {
            return;
        }
    }
}

/// Keeps the last [`STDERR_KEPT`] bytes of the agent's stderr, for when it dies.
async fn keep_stderr(mut from: impl AsyncRead + Unpin, kept: Arc<Mutex<VecDeque<u8>>>) {
    let mut buffer = vec![0u8; 4096];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let mut kept = kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.extend(buffer.iter().take(read));
        let over = kept.len().saturating_sub(STDERR_KEPT);
        kept.drain(..over);
    }
}

/// The agent's process and what it sends (its stdin is the conversation's, and closes with it).
pub(super) struct StdioPeer {
    child: tokio::process::Child,
    messages: mpsc::Receiver<Incoming>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    pid: Option<rustix::process::Pid>,
    /// How the run names it ("Codex's app server", "the agent") and its turn ("Codex's turn").
    name: &'static str,
    turn: &'static str,
}

impl StdioPeer {
    /// Starts `command` with its stdio piped, in a process group of its own: the terminal's Ctrl-C reaches
    /// `run`, which asks the agent to end its turn, not the agent itself. Returns the agent and its stdin.
    pub(super) fn start(
        mut command: tokio::process::Command,
        name: &'static str,
        turn: &'static str,
    ) -> anyhow::Result<(Self, tokio::process::ChildStdin)> {
        let mut child = command
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        let stdout = child.stdout.take().context("the agent's stdout")?;
        let stderr_pipe = child.stderr.take().context("the agent's stderr")?;
        let stdin = child.stdin.take().context("the agent's stdin")?;
        let (messages_in, messages) = mpsc::channel(64);
        tokio::spawn(read_messages(stdout, messages_in));
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        tokio::spawn(keep_stderr(stderr_pipe, Arc::clone(&stderr)));
        let pid = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(rustix::process::Pid::from_raw);
        let peer = Self {
            child,
            messages,
            stderr,
            pid,
            name,
            turn,
        };
        Ok((peer, stdin))
    }

    /// Kills the agent's whole process group.
    fn kill(&self) {
        if let Some(pid) = self.pid {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }

    /// How the run ended when the agent's stdout closed before its turn did: it died, or was ended. Its last
    /// words go to the session's output and the terminal.
    async fn died(&mut self, stopped: bool, tail: &Mutex<Pending>) -> Ended {
        let status = tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        let stderr = {
            let kept = self
                .stderr
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            String::from_utf8_lossy(&kept.iter().copied().collect::<Vec<u8>>()).into_owned()
        };
        for line in stderr.lines() {
            keep_line(line.as_bytes(), tail);
        }
        let how = status.map_or_else(
            || "without an exit status".to_owned(),
            |status| status.to_string(),
        );
        let mut said = format!("anteroom run: {} ended mid-turn ({how})", self.name);
        if !stderr.trim().is_empty() {
            said.push_str(&format!("; its last words:\n{}", stderr.trim_end()));
        }
        Ended {
            exit_code: Some(1),
            signal: None,
            stopped,
            said: Some(said),
        }
    }

    /// Done with (its stdin closed): it ends, or it is killed after five seconds.
    async fn close(mut self) {
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            self.kill();
        }
    }
}

/// Sends `message` to the agent as one line.
pub(super) async fn send_line(
    stdin: &mut tokio::process::ChildStdin,
    message: &Value,
) -> anyhow::Result<()> {
    let mut line = message.to_string();
    line.push('\n');
    stdin
        .write_all(line.as_bytes())
        .await
        .context("cannot write to the agent")?;
    stdin.flush().await.context("cannot write to the agent")
}

/// Relays one of the agent's questions to Anteroom's hook `route` as the session's producer (`token`), held as
/// long as Anteroom may hold it (the hook `timeout`, and a margin): the reply's `result` and its text under
/// `besides` (what the agent is told as well), or why no person could be asked — which the caller turns into a
/// refusal, never an allow.
pub(super) async fn ask_anteroom(
    client: &Client,
    token: &str,
    route: &str,
    timeout: u64,
    body: &Value,
    besides: &str,
) -> Result<(Value, Option<String>), String> {
    let wait = Duration::from_secs(timeout + 15);
    let reply = client
        .post_as_producer(&format!("{route}?timeout={timeout}"), token, body, wait)
        .await
        .map_err(|error| format!("could not ask a person ({error:#}), so nothing was allowed."))?;
    let result = reply
        .get("result")
        .cloned()
        .ok_or_else(|| "its reply carried no answer, so nothing was allowed.".to_owned())?;
    let said = reply
        .get(besides)
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok((result, said))
}

/// The run's side of a conversation with a [`StdioPeer`]: what to do with each message and each answer from
/// Anteroom, and how to ask the agent to end its turn.
pub(super) trait Conversation {
    /// A question's answer, back from Anteroom.
    type Answered;
    /// How the turn ended.
    type End;

    async fn on_message(&mut self, message: Value) -> anyhow::Result<Option<Self::End>>;

    async fn on_answered(&mut self, answered: Self::Answered) -> anyhow::Result<()>;

    /// Asks the agent to end its turn; `false` when there is no turn to end yet (the agent is then killed).
    async fn end_turn(&mut self) -> anyhow::Result<bool>;

    /// Stops waiting for Anteroom's answers (the turn is over).
    fn stop_waiting(&mut self);
}

/// Drives `conversation` with `peer` until the turn ends (its end, and whether a Stop asked for it), or the
/// agent dies (how the run ended): a Stop from Anteroom or a Ctrl-C asks it to end its turn, a second Ctrl-C or
/// a turn still going [`END_GRACE`] later kills it. The conversation, and with it the agent's stdin, is done
/// with once the turn ends.
pub(super) async fn converse<C: Conversation>(
    mut peer: StdioPeer,
    mut conversation: C,
    answered: &mut mpsc::Receiver<C::Answered>,
    stop: &tokio::sync::Notify,
    tail: &Mutex<Pending>,
) -> anyhow::Result<Result<(C::End, bool), Ended>> {
    let mut signals = Signals::new()?;
    let mut stopped = false;
    let mut ending = false;
    let mut kill_at: Option<tokio::time::Instant> = None;
    let end = loop {
        tokio::select! {
            incoming = peer.messages.recv() => match incoming {
                Some(Incoming::Message(message)) => {
                    if let Some(end) = conversation.on_message(message).await? {
                        break Some(end);
                    }
                }
                Some(Incoming::Unreadable(why)) => {
                    let line = format!("anteroom run: {} sent {why}; skipped", peer.name);
                    eprintln!("{line}");
                    keep_line(line.as_bytes(), tail);
                }
                None => break None,
            },
            Some(done) = answered.recv() => conversation.on_answered(done).await?,
            () = stop.notified(), if !stopped => {
                eprintln!("anteroom run: stopped from Anteroom; ending {}", peer.turn);
                stopped = true;
                if !ending {
                    ending = true;
                    kill_at = Some(ask_to_end(&mut conversation).await?);
                }
            }
            _ = signals.next() => {
                if ending {
                    peer.kill();
                } else {
                    eprintln!("anteroom run: ending {} (again to end it at once)", peer.turn);
                    ending = true;
                    kill_at = Some(ask_to_end(&mut conversation).await?);
                }
            }
            () = sleep_until(kill_at) => {
                eprintln!(
                    "anteroom run: {} did not end within {} s; ending {}",
                    peer.turn,
                    END_GRACE.as_secs(),
                    peer.name
                );
                kill_at = None;
                peer.kill();
            }
        }
    };
    conversation.stop_waiting();
    drop(conversation);
    match end {
        Some(end) => {
            peer.close().await;
            Ok(Ok((end, stopped)))
        }
        None => Ok(Err(peer.died(stopped, tail).await)),
    }
}

async fn ask_to_end<C: Conversation>(conversation: &mut C) -> anyhow::Result<tokio::time::Instant> {
    if conversation.end_turn().await? {
        Ok(tokio::time::Instant::now() + END_GRACE)
    } else {
        Ok(tokio::time::Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_read_as_messages_and_a_line_too_long_is_skipped_whole() {
        let long = format!(
            "{{\"x\": \"{}\"}}\n",
            "a".repeat(usize::try_from(MESSAGE_BYTES).unwrap_or(0))
        );
        let input = format!("{{\"method\": \"a\"}}\n\nnot json\n{long}{{\"method\": \"b\"}}\n");
        let (sender, mut receiver) = mpsc::channel(8);
        read_messages(input.as_bytes(), sender).await;
        let mut seen = Vec::new();
        while let Ok(incoming) = receiver.try_recv() {
            seen.push(match incoming {
                Incoming::Message(message) => message["method"].to_string(),
                Incoming::Unreadable(why) => why,
            });
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(seen[0], "\"a\"");
        assert!(seen[1].starts_with("a line that is not JSON"), "{seen:?}");
        assert_eq!(seen[2], "a message over 8 MiB");
        assert_eq!(seen[3], "\"b\"");
    }
}
