//! The agent's output on its way to Anteroom, and what comes back: its lines read as a person reads them and
//! kept bounded until sent, the reports that carry them (and the heartbeat), and the long-poll that hears a Stop.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use anteroom_domain::run::{
    HEARTBEAT_EVERY, LINE_CHARS, OUTPUT_KEPT, next_boundary, readable_line,
};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::anteroom::Client;

/// How often output is sent while the agent prints.
const REPORT_EVERY: Duration = Duration::from_secs(1);
/// The longest line read before it is taken as a line anyway (a harness's JSON event can be large).
const LINE_BYTES: usize = 256 * 1024;

/// Output read from the agent and not yet sent: whole readable lines, at most [`OUTPUT_KEPT`] bytes (older
/// lines give way), and how much gave way while Anteroom could not be reached.
#[derive(Default)]
pub(super) struct Pending {
    text: String,
    dropped: usize,
}

impl Pending {
    pub(super) fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
        // Trimmed only once it holds twice the tail: a flood of short lines costs one move per 64 KiB, not one
        // per line.
        if self.text.len() > 2 * OUTPUT_KEPT {
            self.trim();
        }
    }

    /// Puts back what could not be sent, before what came since.
    fn restore(&mut self, unsent: String) {
        let since = std::mem::replace(&mut self.text, unsent);
        self.text.push_str(&since);
        self.trim();
    }

    /// Keeps the last [`OUTPUT_KEPT`] bytes, in whole lines, and counts what gave way.
    fn trim(&mut self) {
        if self.text.len() <= OUTPUT_KEPT {
            return;
        }
        let from = next_boundary(&self.text, self.text.len() - OUTPUT_KEPT);
        let cut = self
            .text
            .get(from..)
            .and_then(|rest| rest.find('\n'))
            .map_or(self.text.len(), |at| from + at + 1);
        self.dropped += cut;
        self.text.drain(..cut);
    }

    /// What to send: the kept tail, after a line saying how much gave way since the last send.
    pub(super) fn take(&mut self) -> String {
        self.trim();
        let mut text = std::mem::take(&mut self.text);
        if self.dropped > 0 {
            text.insert_str(
                0,
                &format!(
                    "[anteroom run: {} bytes of output were not sent: more came in a second than the session keeps, or \
                     Anteroom could not be reached]\n",
                    std::mem::take(&mut self.dropped)
                ),
            );
        }
        text
    }
}

/// Copies one of the agent's streams to the terminal as it comes, and its lines, made readable, to `tail`.
pub(super) async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    tail: Arc<Mutex<Pending>>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut terminal_gone = false;
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let bytes = &buffer[..read];
        if !terminal_gone && (to.write_all(bytes).await.is_err() || to.flush().await.is_err()) {
            // Nobody reads `run`'s own output any more: the agent's still goes to Anteroom.
            terminal_gone = true;
        }
        for piece in bytes.split_inclusive(|byte| *byte == b'\n') {
            line.extend_from_slice(piece);
            if piece.ends_with(b"\n") || line.len() >= LINE_BYTES {
                keep_line(&line, &tail);
                line.clear();
            }
        }
    }
    if !line.is_empty() {
        keep_line(&line, &tail);
    }
}

pub(super) fn keep_line(line: &[u8], tail: &Mutex<Pending>) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    // Parsed before the lock is taken: the agent's output is not ours to trust with a held lock.
    if let Some(readable) = readable_line(text) {
        let readable: String = readable.chars().take(LINE_CHARS * 4).collect();
        tail.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(&readable);
    }
}

/// Sends the output each second while the agent prints, a heartbeat every 30 s when it does not, and hears
/// about a stop in each reply; while Anteroom cannot be reached it backs off and keeps the newest output. Ends
/// when `done` is notified, between sends: output taken for a send is never dropped halfway.
pub(super) async fn report(
    client: Client,
    run_path: String,
    tail: Arc<Mutex<Pending>>,
    stop: Arc<tokio::sync::Notify>,
    done: Arc<tokio::sync::Notify>,
) {
    let mut last_sent = tokio::time::Instant::now();
    let mut failures: u32 = 0;
    let mut next_try = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep(REPORT_EVERY) => {}
            () = done.notified() => return,
        }
        let now = tokio::time::Instant::now();
        if now < next_try {
            continue;
        }
        let output = tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if output.is_empty() && now.duration_since(last_sent) < HEARTBEAT_EVERY {
            continue;
        }
        match client
            .post(&format!("{run_path}/report"), &json!({"output": output}))
            .await
        {
            Ok(reply) => {
                if failures > 0 {
                    eprintln!("anteroom run: Anteroom is reachable again");
                }
                failures = 0;
                last_sent = now;
                if reply["stop_requested_by"].is_string() {
                    stop.notify_one();
                }
            }
            Err(error) => {
                if failures == 0 {
                    eprintln!(
                        "anteroom run: cannot report to Anteroom ({error:#}); the agent goes on, its questions \
                         cannot be asked until Anteroom is back, and its output is kept for then"
                    );
                }
                failures += 1;
                next_try = now + Duration::from_secs(1 << failures.min(5));
                tail.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .restore(output);
            }
        }
    }
}

/// Holds a long-poll open for a stop, so a Stop pressed anywhere reaches the agent within a second.
pub(super) async fn hear_stop(client: Client, run_path: String, stop: Arc<tokio::sync::Notify>) {
    let mut failures: u32 = 0;
    loop {
        match client.get(&format!("{run_path}/control?wait=25")).await {
            Ok(reply) if reply["stop_requested_by"].is_string() => {
                stop.notify_one();
                return;
            }
            Ok(reply)
                if reply["run"]["state"]
                    .as_str()
                    .is_some_and(|state| !matches!(state, "running" | "needs_input")) =>
            {
                return;
            }
            Ok(_) => failures = 0,
            Err(_) => {
                failures += 1;
                tokio::time::sleep(Duration::from_secs(1 << failures.min(5))).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_output_stays_bounded_and_says_what_gave_way() {
        let mut pending = Pending::default();
        let line = "x".repeat(999);
        for _ in 0..1_000 {
            pending.push(&line);
            assert!(pending.text.len() <= 2 * OUTPUT_KEPT);
        }
        let unsent = pending.take();
        assert!(unsent.len() <= OUTPUT_KEPT + 200);
        assert!(
            unsent.starts_with("[anteroom run: "),
            "{}",
            unsent.lines().next().unwrap_or_default()
        );
        pending.restore(unsent);
        assert!(pending.text.len() <= OUTPUT_KEPT);
        assert!(!pending.take().is_empty());
        assert!(pending.take().is_empty());
    }
}
