//! How a change is applied: under the record's lock, after due rounds have ended, with the session moved and
//! the change's webhooks queued in the same transaction.

use chrono::{DateTime, Utc};

use super::{SqlStore, WriteTx, rows::rows_to_rounds};
use crate::{
    Backend, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError,
        audit::{ANTEROOM, NewAuditEntry},
        expiry::wire_time,
        ids::{RoundId, SessionId},
        round::{EXPIRED_MESSAGE, Round, RoundStatus},
        session::{Session, SessionEffect},
        webhook::{QUESTION_ANSWERED, WebhookEvent},
    },
    poll_states::Changed,
    records::{RoundRow, to_ms},
    sql,
};

impl<D: Dialect> SqlStore<D> {
    /// Moves each session by the effects of its rounds' changes
    /// (docs/lifecycle.md#how-rounds-move-a-session), in order.
    pub(super) async fn apply_session_effects(
        &self,
        tx: &mut WriteTx<D>,
        effects: Vec<(SessionId, SessionEffect)>,
        now: DateTime<Utc>,
    ) -> StoreResult<Vec<Session>> {
        if effects.is_empty() {
            return Ok(Vec::new());
        }
        let mut ids: Vec<SessionId> = effects.iter().map(|(id, _)| id.clone()).collect();
        ids.sort();
        ids.dedup();
        let mut sessions = self.fetch_sessions(tx, &ids).await?;
        let open = self.open_counts(tx, &ids, now).await?;
        for (id, effect) in effects {
            if let Some(session) = sessions.get_mut(&id) {
                let other_active = open.get(id.as_str()).copied().unwrap_or(0) > 0;
                session.apply(effect, other_active, now);
            }
        }
        let changed: Vec<&Session> = sessions.values().collect();
        self.save_sessions(tx, &changed).await?;
        Ok(sessions.into_values().collect())
    }

    /// Ends every due round (of one session, or all): unanswered ones expire, answers nobody picked up in
    /// time become undelivered (docs/deadlines.md). Moves their sessions. Expired rounds come back without
    /// their requests (nothing that announces an expiry reads them).
    pub(super) async fn expire_due_in(
        &self,
        tx: &mut WriteTx<D>,
        now: DateTime<Utc>,
        session: Option<&SessionId>,
    ) -> StoreResult<Vec<Round>> {
        let expired = self.expire_due_rounds_in(tx, now, session).await?;
        let answered = match session {
            Some(id) => Statement::new(Self::locked(sql::SELECT_ANSWERED_PAST_DEADLINE_IN_SESSION))
                .bind(to_ms(now))
                .bind(id.to_string()),
            None => {
                Statement::new(Self::locked(sql::SELECT_ANSWERED_PAST_DEADLINE)).bind(to_ms(now))
            }
        };
        let mut ended: Vec<(RoundStatus, Round)> = expired
            .into_iter()
            .map(|round| (RoundStatus::Pending, round))
            .collect();
        for before in rows_to_rounds(tx.all::<RoundRow>(answered).await?)? {
            let mut round = before.clone();
            if round.fail_undelivered_if_due(now) {
                self.save_round(tx, &before, &round).await?;
                ended.push((before.status, round));
            }
        }
        self.announce_ended(tx, ended, now).await
    }

    /// Expires the due rounds (of one session, or all) and returns them expired, without their documents. The
    /// rounds come back as one JSON value, not a row each (see [`sql::EXPIRE_DUE_AS_JSON`]).
    async fn expire_due_rounds_in(
        &self,
        tx: &mut WriteTx<D>,
        now: DateTime<Utc>,
        session: Option<&SessionId>,
    ) -> StoreResult<Vec<Round>> {
        let parse = |json: &str| -> StoreResult<Vec<Round>> {
            let rows: Vec<RoundRow> = serde_json::from_str(json)
                .map_err(|error| StoreError::Corrupt(format!("expired rounds: {error}")))?;
            rows_to_rounds(rows)
        };
        match D::BACKEND {
            Backend::Sqlite => {
                // Read under the write lock the transaction holds, so the UPDATE ends exactly these; the
                // domain expires them in memory exactly as the UPDATE does in the table.
                let read = match session {
                    Some(id) => Statement::new(sql::SELECT_DUE_IN_SESSION_AS_JSON.as_str())
                        .bind(to_ms(now))
                        .bind(id.to_string()),
                    None => Statement::new(sql::SELECT_DUE_AS_JSON.as_str()).bind(to_ms(now)),
                };
                let (json,): (String,) = tx.one(read).await?;
                let mut due = parse(&json)?;
                if due.is_empty() {
                    return Ok(due);
                }
                for round in &mut due {
                    round.expire_if_due(now);
                }
                let expire = expire_statement(
                    sql::EXPIRE_DUE_IN_SESSION.as_str(),
                    sql::EXPIRE_DUE.as_str(),
                    now,
                    session,
                );
                tx.execute(expire).await?;
                Ok(due)
            }
            Backend::Postgres => {
                let expire = expire_statement(
                    sql::EXPIRE_DUE_IN_SESSION_AS_JSON.as_str(),
                    sql::EXPIRE_DUE_AS_JSON.as_str(),
                    now,
                    session,
                );
                let (json,): (String,) = tx.one(expire).await?;
                parse(&json)
            }
        }
    }

    /// Moves the sessions of rounds that just ended on their own (each with its status before), queues
    /// their webhooks and tells the observer. The latest deadline's marker wins when a session lost
    /// several questions at once.
    pub(super) async fn announce_ended(
        &self,
        tx: &mut WriteTx<D>,
        mut ended: Vec<(RoundStatus, Round)>,
        now: DateTime<Utc>,
    ) -> StoreResult<Vec<Round>> {
        ended.sort_by_key(|(_, round)| (round.deadline, round.round_id));
        let effects = ended
            .iter()
            .filter_map(|(before, round)| {
                round
                    .session_effect(Some(*before))
                    .map(|effect| (round.session_id.clone(), effect))
            })
            .collect();
        self.apply_session_effects(tx, effects, now).await?;
        let rounds: Vec<Round> = ended.into_iter().map(|(_, round)| round).collect();
        let record: Vec<NewAuditEntry> = rounds
            .iter()
            .filter_map(NewAuditEntry::question_ended)
            .collect();
        self.audit(tx, &record, now).await?;
        for round in &rounds {
            tx.changed(Changed::Round(round.request_id.clone()));
        }
        // Built only for endpoints that will receive them: a sweep may end 100k rounds.
        let announcements: Vec<WebhookEvent> = if !self.may_announce(tx).await? {
            Vec::new()
        } else {
            rounds
                .iter()
                .filter_map(WebhookEvent::round_ended)
                .collect()
        };
        self.enqueue(tx, &announcements, now).await?;
        for round in &rounds {
            self.ctx.askers.forget(&round.round_id);
        }
        if let (false, Some(observer)) = (rounds.is_empty(), &self.ctx.options.observer) {
            observer.rounds_ended(&rounds);
        }
        Ok(rounds)
    }

    /// Whether any round (of one session, or any) is due to end.
    pub(super) async fn any_due(
        &self,
        now: DateTime<Utc>,
        session: Option<&SessionId>,
    ) -> StoreResult<bool> {
        let probe = match session {
            Some(id) => Statement::new(sql::ANY_DUE_IN_SESSION)
                .bind(to_ms(now))
                .bind(id.to_string()),
            None => Statement::new(sql::ANY_DUE).bind(to_ms(now)),
        };
        Ok(self.optional::<(String,)>(probe).await?.is_some())
    }

    /// Lazy expiry on read: only takes a write transaction when something is actually due.
    pub(super) async fn expire_lazily(&self, session: Option<&SessionId>) -> StoreResult<()> {
        let now = self.clock_now();
        if self.any_due(now, session).await? {
            let mut tx = self.begin_write().await?;
            self.expire_due_in(&mut tx, now, session).await?;
            tx.commit().await?;
        }
        Ok(())
    }

    /// Loads a round for writing, expires it first if due, lets `op` decide, and saves the outcome.
    /// A refusal still commits the expiry: a deadline is final whatever the caller wanted.
    pub(super) async fn mutate_round<T, F>(&self, id: RoundId, op: F) -> StoreResult<(Round, T)>
    where
        F: FnOnce(&mut Round, DateTime<Utc>) -> Result<T, ManagedInputError> + Send,
        T: Send,
    {
        self.mutate_round_as(id, None, op).await
    }

    /// [`Self::mutate_round`] on behalf of `actor`, whom the record names for what nobody else is named for
    /// (an extended deadline).
    pub(super) async fn mutate_round_as<T, F>(
        &self,
        id: RoundId,
        actor: Option<&str>,
        op: F,
    ) -> StoreResult<(Round, T)>
    where
        F: FnOnce(&mut Round, DateTime<Utc>) -> Result<T, ManagedInputError> + Send,
        T: Send,
    {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let mut round = self.fetch_round(&mut tx, id).await?;
        if round.is_due(now) || round.is_undeliverable(now) {
            self.expire_due_in(&mut tx, now, Some(&round.session_id))
                .await?;
            round = self.fetch_round(&mut tx, id).await?;
        }
        let before = round.clone();
        match op(&mut round, now) {
            Err(refusal) => {
                tx.commit().await?;
                Err(refusal.into())
            }
            Ok(outcome) => {
                if round.version != before.version {
                    self.save_round(&mut tx, &before, &round).await?;
                    let mut record = Vec::new();
                    if before.responded_at.is_none() && round.responded_at.is_some() {
                        record.push(NewAuditEntry::question_answered(&round));
                    }
                    if before.status != RoundStatus::Failed {
                        record.extend(NewAuditEntry::question_ended(&round));
                        // An ending the job decides (nobody available) is announced like an expiry.
                        if let Some(ended) = WebhookEvent::round_ended(&round)
                            && self.announced(ended.event)
                        {
                            self.enqueue(&mut tx, &[ended], now).await?;
                        }
                    }
                    if round.deadline != before.deadline {
                        record.push(NewAuditEntry::new(
                            actor.unwrap_or(ANTEROOM),
                            "question.deadline_extended",
                            round.round_id.to_string(),
                            serde_json::json!({
                                "from": wire_time(before.deadline),
                                "to": wire_time(round.deadline),
                            }),
                        ));
                    }
                    self.audit(&mut tx, &record, now).await?;
                    if before.responded_at.is_none()
                        && round.responded_at.is_some()
                        && self.announced(QUESTION_ANSWERED)
                    {
                        let answered = WebhookEvent::question_answered(&round);
                        self.enqueue(&mut tx, &[answered], now).await?;
                    }
                    if let Some(effect) = round.session_effect(Some(before.status)) {
                        self.apply_session_effects(
                            &mut tx,
                            vec![(round.session_id.clone(), effect)],
                            now,
                        )
                        .await?;
                    }
                }
                tx.commit().await?;
                Ok((round, outcome))
            }
        }
    }

    /// Applies a session-level change under the session's lock, after expiring its due rounds.
    pub(super) async fn mutate_session<F>(&self, id: &SessionId, op: F) -> StoreResult<Session>
    where
        F: FnOnce(&mut Session, usize, DateTime<Utc>) -> Result<(), ManagedInputError> + Send,
    {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let mut session = self.fetch_session(&mut tx, id).await?;
        self.expire_due_in(&mut tx, now, Some(id)).await?;
        // Expiry may have moved the session; read it again.
        session = self
            .fetch_sessions(&mut tx, std::slice::from_ref(id))
            .await?
            .remove(id)
            .unwrap_or(session);
        let open = self
            .open_counts(&mut tx, std::slice::from_ref(id), now)
            .await?
            .get(id.as_str())
            .copied()
            .unwrap_or(0);
        match op(
            &mut session,
            usize::try_from(open).unwrap_or(usize::MAX),
            now,
        ) {
            Err(refusal) => {
                tx.commit().await?;
                Err(refusal.into())
            }
            Ok(()) => {
                self.save_sessions(&mut tx, &[&session]).await?;
                tx.commit().await?;
                Ok(session)
            }
        }
    }
}

/// An expiry statement (`$1` now, `$2` the message) over one session's rounds (`$3`) or over all.
fn expire_statement(
    in_session: &'static str,
    everywhere: &'static str,
    now: DateTime<Utc>,
    session: Option<&SessionId>,
) -> Statement {
    let statement = |sql: &'static str| Statement::new(sql).bind(to_ms(now)).bind(EXPIRED_MESSAGE);
    match session {
        Some(id) => statement(in_session).bind(id.to_string()),
        None => statement(everywhere),
    }
}
