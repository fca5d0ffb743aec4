//! What the relay's tasks share: the two directions' writers, Anteroom, the bookkeeping of requests in flight,
//! and the bound on questions worked at once. The relay (`relay.rs`), the held calls (`held.rs`), the legacy
//! questions (`legacy.rs`) and the progress notes (`progress.rs`) all reach each other only through here.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use anteroom_domain::clock::{Clock, SystemClock};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::{
    anteroom::Anteroom,
    jsonrpc::{Outstanding, id_key},
    person::Withdraw,
};

/// How many questions the wrapper works at once; a server asking more is answered at once that it must wait.
pub const MAX_OPEN_QUESTIONS: usize = 16;

/// The JSON-RPC error code the wrapper answers with when no answer can be given.
pub const NO_ANSWER: i64 = -32001;
/// How many answered URL elicitations the wrapper remembers, to consume their completion notices.
const URL_ELICITATIONS_KEPT: usize = 256;
/// Bytes a direction may have queued for its writer before the pump that feeds it stops reading: a peer that
/// stops reading slows the other peer down (its pipe fills) instead of growing the wrapper's memory.
pub const QUEUE_BYTES: usize = 8 * 1024 * 1024;

/// Where a direction's lines go: its single writer. A line is bytes, so what is not UTF-8 passes unchanged.
/// Sending never waits (the wrapper's own few messages must not block on a slow peer); what is queued is
/// counted, and the pump relaying the other peer's lines waits for [`Lines::room`] before it reads the next.
#[derive(Clone)]
pub(crate) struct Lines {
    queue: mpsc::UnboundedSender<Vec<u8>>,
    /// Bytes queued and not yet written.
    queued: Arc<watch::Sender<usize>>,
}

/// The writer of a direction is gone.
#[derive(Debug)]
pub(crate) struct Closed;

impl Lines {
    /// A direction's sending side and its writer's receiving side.
    pub(crate) fn channel() -> (
        Self,
        mpsc::UnboundedReceiver<Vec<u8>>,
        Arc<watch::Sender<usize>>,
    ) {
        let (queue, pending) = mpsc::unbounded_channel();
        let queued = Arc::new(watch::Sender::new(0));
        (
            Self {
                queue,
                queued: Arc::clone(&queued),
            },
            pending,
            queued,
        )
    }

    pub(crate) fn send(&self, line: impl Into<Vec<u8>>) -> Result<(), Closed> {
        let line = line.into();
        let bytes = line.len() + 1;
        // Counted before it is queued: the writer may write it and take it off the count at once, and a
        // count added after that would never come off again.
        self.queued.send_modify(|queued| *queued += bytes);
        self.queue.send(line).map_err(|_| {
            self.queued
                .send_modify(|queued| *queued = queued.saturating_sub(bytes));
            Closed
        })
    }

    /// Waits until what is queued is under [`QUEUE_BYTES`] (at once if the writer is gone).
    pub(crate) async fn room(&self) {
        let mut queued = self.queued.subscribe();
        let _ = queued.wait_for(|bytes| *bytes < QUEUE_BYTES).await;
    }

    /// Bytes queued and not yet written.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        *self.queued.borrow()
    }
}

/// What the relay's tasks share: where lines go, Anteroom, and the bookkeeping of both directions.
pub(crate) struct RelayState {
    pub anteroom: Anteroom,
    pub server: Option<String>,
    pub progress_every: Duration,
    pub to_child: Lines,
    pub to_harness: Lines,
    books: Mutex<Books>,
    numbers: AtomicU64,
    /// Questions and held calls being worked, against [`MAX_OPEN_QUESTIONS`].
    open_questions: AtomicUsize,
    /// Tells the wrapper's own requests from the harness's: the process and its start, in every id.
    id_prefix: String,
    /// Bumped on every `notifications/elicitation/complete`, so held calls waiting for one look again.
    url_completed: tokio::sync::watch::Sender<u64>,
}

/// Both directions' bookkeeping; held only for map updates, never across a wait.
#[derive(Default)]
pub(crate) struct Books {
    /// The harness's calls the server has not answered yet that may need input.
    pub(crate) outstanding: Outstanding,
    /// Calls the wrapper holds while a person answers what the server needs, by the harness's id: how to tell
    /// their task the harness cancelled.
    pub(crate) held: HashMap<String, Withdraw>,
    /// The wrapper's own requests to the server, by id: where each response goes.
    pub(crate) own: HashMap<String, oneshot::Sender<Value>>,
    /// URL elicitations the wrapper answered, whose `notifications/elicitation/complete` it consumes.
    pub(crate) url_elicitations: VecDeque<String>,
    /// Of those, the ones the server said are complete (bounded the same way).
    url_completed: VecDeque<String>,
}

impl Books {
    pub(crate) fn remember_url(&mut self, elicitation_id: &str) {
        if self
            .url_elicitations
            .iter()
            .any(|known| known == elicitation_id)
        {
            return;
        }
        if self.url_elicitations.len() >= URL_ELICITATIONS_KEPT {
            self.url_elicitations.pop_front();
        }
        self.url_elicitations.push_back(elicitation_id.to_owned());
    }
}

impl RelayState {
    pub(crate) fn new(
        anteroom: Anteroom,
        server: Option<String>,
        progress_every: Duration,
        to_child: Lines,
        to_harness: Lines,
    ) -> Self {
        let started = SystemClock.now().timestamp_subsec_nanos();
        Self {
            anteroom,
            server,
            progress_every,
            to_child,
            to_harness,
            books: Mutex::default(),
            numbers: AtomicU64::new(0),
            open_questions: AtomicUsize::new(0),
            id_prefix: format!("anteroom-wrap-{}-{started:x}", std::process::id()),
            url_completed: tokio::sync::watch::Sender::new(0),
        }
    }

    pub(crate) fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        // A panic elsewhere cannot leave the maps half-written (each update is one call): keep going.
        self.books
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A number no other of the wrapper's ids uses.
    pub(crate) fn next_number(&self) -> u64 {
        self.numbers.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Sends `method` to the server under an id of the wrapper's own; its response arrives on the receiver.
    /// `None` when the server's stdin is gone.
    pub(crate) fn request_child(
        &self,
        method: &str,
        params: Value,
    ) -> Option<(Value, oneshot::Receiver<Value>)> {
        let id = Value::String(format!("{}-{}", self.id_prefix, self.next_number()));
        let (respond, response) = oneshot::channel();
        self.books().own.insert(id_key(&id), respond);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.to_child.send(request.to_string()).is_err() {
            self.books().own.remove(&id_key(&id));
            return None;
        }
        Some((id, response))
    }

    /// Notes a URL elicitation the wrapper answers, so its completion notice is not passed on.
    pub(crate) fn remember_url_elicitation(&self, elicitation_id: &str) {
        self.books().remember_url(elicitation_id);
    }

    /// Forgets a held call once the harness has its answer.
    pub(crate) fn release(&self, harness_id: &Value) {
        self.books().held.remove(&id_key(harness_id));
    }

    /// Forgets one of the wrapper's own requests whose answer nobody waits for any more.
    pub(crate) fn forget_request(&self, own_id: &Value) {
        self.books().own.remove(&id_key(own_id));
    }

    /// Whether the server said URL elicitation `elicitation_id` is complete.
    pub(crate) fn url_is_complete(&self, elicitation_id: &str) -> bool {
        self.books()
            .url_completed
            .iter()
            .any(|known| known == elicitation_id)
    }

    /// Notes that the server said URL elicitation `elicitation_id` (one the wrapper answered) is complete, and
    /// wakes the held calls that wait for one.
    pub(crate) fn note_url_complete(&self, elicitation_id: String) {
        {
            let mut books = self.books();
            if books.url_completed.len() >= URL_ELICITATIONS_KEPT {
                books.url_completed.pop_front();
            }
            books.url_completed.push_back(elicitation_id);
        }
        self.url_completed.send_modify(|count| *count += 1);
    }

    /// A receiver that changes whenever a URL elicitation completes.
    pub(crate) fn url_completions(&self) -> tokio::sync::watch::Receiver<u64> {
        self.url_completed.subscribe()
    }

    /// Takes a place for one more question, or says there is none ([`MAX_OPEN_QUESTIONS`]).
    pub(crate) fn open_question(self: &Arc<Self>) -> Option<QuestionSlot> {
        let taken = self.open_questions.fetch_add(1, Ordering::AcqRel);
        let slot = QuestionSlot(Arc::clone(self));
        (taken < MAX_OPEN_QUESTIONS).then_some(slot)
    }
}

/// One question's place among the [`MAX_OPEN_QUESTIONS`]; given back when dropped.
pub(crate) struct QuestionSlot(Arc<RelayState>);

impl Drop for QuestionSlot {
    fn drop(&mut self) {
        self.0.open_questions.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a server that asks too much at once is told.
pub(crate) fn too_many_questions() -> String {
    format!(
        "no answer: this server already has {MAX_OPEN_QUESTIONS} questions waiting for a person; ask again \
         once one is answered"
    )
}
