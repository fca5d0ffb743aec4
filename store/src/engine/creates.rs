//! Question creates committed together (group commit): each create queues its round, and the create whose turn
//! it is commits every round queued by then in one transaction, so a burst of creates shares its round trips.
//!
//! A create's cost was its write transaction, not its CPU: on SQLite one transaction writes at a time, and each
//! of its statements is handed to the connection's own thread (about 100 µs each under load). Measured with
//! the bench's `--only creates` on two cores: one transaction per create gave 1,100–1,250 creates/s; batches of
//! about 30 give 2,800–3,300/s.

use std::{
    collections::HashSet,
    sync::{Mutex, PoisonError},
};

use tokio::sync::oneshot;

use super::{SqlStore, WriteTx, session_not_found};
use crate::{
    Backend, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError, audit::NewAuditEntry, ids::SessionId, round::Round,
        webhook::WebhookEvent,
    },
    records::{ROUND_COLUMNS, RoundRow},
    sql,
};

/// Rounds per batch: 33 parameters each, so a full batch binds about 1,000, cheap for both databases.
const MAX_BATCH: usize = 32;

/// The creates waiting to be committed, and the turn to commit them.
#[derive(Default)]
pub(crate) struct CreateQueue {
    waiting: Mutex<Vec<QueuedCreate>>,
    turn: tokio::sync::Mutex<()>,
}

/// A create whose turn ended without answering it (only a panic in the turn does that).
fn reply_lost() -> StoreError {
    StoreError::Database(sqlx::Error::WorkerCrashed)
}

struct QueuedCreate {
    round: Round,
    reply: oneshot::Sender<StoreResult<Round>>,
}

impl<D: Dialect> SqlStore<D> {
    /// Stores `round` (already checked) with the creates queued beside it; the session must exist and take
    /// new questions, and the request id must be new.
    pub(super) async fn create_in_batch(&self, round: Round) -> StoreResult<Round> {
        let (reply, outcome) = oneshot::channel();
        let queue = &self.ctx.creates;
        queue
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(QueuedCreate { round, reply });
        let mut outcome = outcome;
        tokio::select! {
            // Committed by an earlier turn: no need to wait for one.
            done = &mut outcome => return done.unwrap_or_else(|_| Err(reply_lost())),
            // Every create queues before it waits for a turn, so whatever is queued has a turn to come; the
            // turn commits what is queued by then, oldest first.
            _turn = queue.turn.lock() => {
                let batch: Vec<QueuedCreate> = {
                    let mut waiting = queue.waiting.lock().unwrap_or_else(PoisonError::into_inner);
                    let n = waiting.len().min(MAX_BATCH);
                    waiting.drain(..n).collect()
                };
                if !batch.is_empty() {
                    self.commit_batch(batch).await;
                }
            }
        }
        outcome.await.unwrap_or_else(|_| Err(reply_lost()))
    }

    async fn commit_batch(&self, batch: Vec<QueuedCreate>) {
        let rounds: Vec<&Round> = batch.iter().map(|queued| &queued.round).collect();
        match self.insert_batch(&rounds).await {
            Ok(outcomes) => {
                for (queued, outcome) in batch.into_iter().zip(outcomes) {
                    let _ = queued.reply.send(outcome);
                }
            }
            // The shared transaction failed as a whole (the database, not one create's input): each create
            // then runs alone, so each gets its own outcome.
            Err(_) if batch.len() > 1 => {
                for queued in batch {
                    let alone = self.insert_batch(&[&queued.round]).await;
                    let outcome = alone.and_then(|mut outcomes| {
                        outcomes.pop().unwrap_or_else(|| Err(reply_lost()))
                    });
                    let _ = queued.reply.send(outcome);
                }
            }
            // A batch of one already ran alone.
            Err(error) => {
                if let Some(queued) = batch.into_iter().next() {
                    let _ = queued.reply.send(Err(error));
                }
            }
        }
    }

    /// One transaction for `rounds`: their sessions read and locked in one statement, the rounds inserted in
    /// one, their sessions moved in one. Returns each round's outcome in order.
    async fn insert_batch(&self, rounds: &[&Round]) -> StoreResult<Vec<StoreResult<Round>>> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let mut ids: Vec<SessionId> = rounds
            .iter()
            .map(|round| round.session_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        let mut sessions = self.fetch_sessions(&mut tx, &ids).await?;
        let mut outcomes: Vec<StoreResult<()>> = rounds
            .iter()
            .map(|round| match sessions.get(&round.session_id) {
                None => Err(session_not_found(&round.session_id)),
                Some(session) => session.accepts_rounds().map_err(StoreError::from),
            })
            .collect();
        let accepted: Vec<&Round> = rounds
            .iter()
            .zip(&outcomes)
            .filter(|(_, outcome)| outcome.is_ok())
            .map(|(round, _)| *round)
            .collect();
        let inserted = self.insert_rounds(&mut tx, &accepted).await?;
        let mut created = Vec::new();
        let mut record = Vec::new();
        let mut moved: Vec<SessionId> = Vec::new();
        for (round, outcome) in rounds.iter().zip(outcomes.iter_mut()) {
            if outcome.is_err() {
                continue;
            }
            if !inserted.contains(&round.round_id.to_string()) {
                *outcome = Err(ManagedInputError::conflict(format!(
                    "The request id {} is already in use by another round.",
                    round.request_id
                ))
                .into());
                continue;
            }
            if let Some(session) = sessions.get_mut(&round.session_id) {
                session.on_round_opened(round.created_at);
                moved.push(round.session_id.clone());
            }
            created.push(WebhookEvent::question_created(round));
            record.push(NewAuditEntry::question_created(round));
        }
        if !created.is_empty() {
            self.enqueue(&mut tx, &created, now).await?;
            self.audit(&mut tx, &record, now).await?;
            moved.sort();
            moved.dedup();
            let moved: Vec<_> = moved.iter().filter_map(|id| sessions.get(id)).collect();
            self.save_sessions(&mut tx, &moved).await?;
        }
        tx.commit().await?;
        Ok(rounds
            .iter()
            .zip(outcomes)
            .map(|(round, outcome)| outcome.map(|()| (*round).clone()))
            .collect())
    }

    /// Inserts `rounds` in one statement; a round whose request id is taken (by a stored round or an earlier
    /// one of `rounds`) is skipped. Returns the ids of the rounds inserted.
    async fn insert_rounds(
        &self,
        tx: &mut WriteTx<D>,
        rounds: &[&Round],
    ) -> StoreResult<HashSet<String>> {
        if rounds.is_empty() {
            return Ok(HashSet::new());
        }
        let mut rows = Vec::with_capacity(rounds.len());
        for round in rounds {
            rows.push(RoundRow::of(round)?.params_written(true));
        }
        let statement = match D::BACKEND {
            Backend::Sqlite => {
                let params: Vec<_> = rows.into_iter().flatten().collect();
                Statement::new(sql::insert_new_rounds(rounds.len())).bind_all(params)
            }
            Backend::Postgres => {
                let columns = sql::written_by(ROUND_COLUMNS, true);
                Statement::from_records(
                    sql::INSERT_NEW_ROUNDS_FROM_RECORDS.as_str(),
                    &columns,
                    rows,
                    "new rounds",
                )?
            }
        };
        let rows: Vec<(String,)> = tx.all(statement).await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }
}
