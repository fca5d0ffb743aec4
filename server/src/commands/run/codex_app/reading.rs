//! What the app server sends, read as the bridge can bear it: its messages a line each, none longer than a
//! bound, and the last of its stderr kept for when it dies.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader},
    sync::mpsc,
};

/// The longest message read from the app server; a longer line is skipped, and said.
const MESSAGE_BYTES: u64 = 8 * 1024 * 1024;
/// How much of the app server's stderr is kept for when it dies.
pub(super) const STDERR_KEPT: usize = 8 * 1024;

/// What the reader hands the bridge: a message, or why a line could not be one.
pub(super) enum Incoming {
    Message(Value),
    Unreadable(String),
}

/// Reads the app server's messages, a line each, none longer than [`MESSAGE_BYTES`].
pub(super) async fn read_messages(from: impl AsyncRead + Unpin, to: mpsc::Sender<Incoming>) {
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

/// Keeps the last [`STDERR_KEPT`] bytes of the app server's stderr, for when it dies.
pub(super) async fn keep_stderr(mut from: impl AsyncRead + Unpin, kept: Arc<Mutex<VecDeque<u8>>>) {
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
