//! Sessions and their producer tokens.

use super::{
    SqlStore,
    rows::rows_to_rounds,
    session_not_found,
    teams::{SettingsRow, assignee, settings_read},
};
use crate::{
    AgentSessionStore, AttentionItem, Backend, QueueEntry, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        audit::NewAuditEntry,
        ids::SessionId,
        responders::scope_for,
        round::Round,
        run::RunState,
        session::{NewSession, Session},
    },
    poll_states::Changed,
    records::{AttentionRow, QueueRow, RoundRow, SessionRow, from_ms, to_ms},
    sql,
};

#[async_trait::async_trait]
impl<D: Dialect> AgentSessionStore for SqlStore<D> {
    async fn register_session(&self, new: NewSession) -> StoreResult<Session> {
        new.validate()?;
        let id = new.id.clone();
        let row = SessionRow::of(&Session::new(new, self.clock_now()));
        self.execute(
            Statement::new(sql::INSERT_SESSION_IF_NEW.as_str()).bind_all(row.params_written(true)),
        )
        .await?;
        self.get_session(&id).await
    }

    async fn get_session(&self, id: &SessionId) -> StoreResult<Session> {
        self.expire_lazily(Some(id)).await?;
        self.optional::<SessionRow>(Statement::new(sql::SELECT_SESSION).bind(id.to_string()))
            .await?
            .ok_or_else(|| session_not_found(id))?
            .into_session()
    }

    async fn list_sessions(&self, limit: u32) -> StoreResult<Vec<QueueEntry>> {
        self.expire_lazily(None).await?;
        let rows = self
            .all::<QueueRow>(Statement::new(sql::SELECT_QUEUE).bind(i64::from(limit)))
            .await?;
        rows.into_iter().map(queue_entry).collect()
    }

    async fn attention_queue(&self, limit: u32) -> StoreResult<Vec<AttentionItem>> {
        let sql = match D::BACKEND {
            Backend::Sqlite => sql::SELECT_ATTENTION_QUEUE_SQLITE.as_str(),
            Backend::Postgres => sql::SELECT_ATTENTION_QUEUE_POSTGRES.as_str(),
        };
        let read = |now| Statement::new(sql).bind(to_ms(now)).bind(i64::from(limit));
        let mut rows = self.all::<AttentionRow>(read(self.clock_now())).await?;
        // Every row says the same; no row means no session, so nothing can be due.
        if rows.first().is_some_and(|row| row.any_due) {
            self.expire_lazily(None).await?;
            rows = self.all::<AttentionRow>(read(self.clock_now())).await?;
        }
        rows.into_iter()
            .map(|row| {
                let corrupt = |what: &str, error: serde_json::Error| {
                    StoreError::Corrupt(format!("the queue's {what}: {error}"))
                };
                let (oldest_open, responders) = match row.oldest_round {
                    Some(json) => {
                        let (round, assigned, reached): (RoundRow, Option<String>, i64) =
                            serde_json::from_str(&json)
                                .map_err(|error| corrupt("oldest question", error))?;
                        let round = self.seen(round.into_round()?);
                        let settings = match row.team_settings {
                            Some(json) => Some(settings_read(
                                serde_json::from_str::<SettingsRow>(&json)
                                    .map_err(|error| corrupt("session settings", error))?,
                            )?),
                            None => None,
                        };
                        let assigned = assigned.as_deref().map(assignee).transpose()?;
                        let responders = scope_for(
                            assigned.as_ref(),
                            settings.as_ref(),
                            round.server.as_deref(),
                            usize::try_from(reached).unwrap_or(0),
                        );
                        (Some(round), responders)
                    }
                    None => (None, Vec::new()),
                };
                Ok(AttentionItem {
                    run_state: row.run_state.as_deref().and_then(RunState::parse),
                    entry: queue_entry(row.queued)?,
                    oldest_open,
                    responders,
                })
            })
            .collect()
    }

    async fn resume_session(&self, id: &SessionId) -> StoreResult<Session> {
        self.mutate_session(id, |session, open, now| {
            session.resume(open > 0, now);
            Ok(())
        })
        .await
    }

    async fn finish_session(&self, id: &SessionId) -> StoreResult<Session> {
        self.mutate_session(id, |session, open, now| session.finish(open, now))
            .await
    }

    async fn cancel_session(&self, id: &SessionId) -> StoreResult<Session> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let mut session = self.fetch_session(&mut tx, id).await?;
        let unfinished = tx
            .all::<RoundRow>(
                Statement::new(Self::locked(sql::SELECT_UNFINISHED_ROUNDS)).bind(id.to_string()),
            )
            .await?;
        for before in rows_to_rounds(unfinished)? {
            let mut round = before.clone();
            if round.cancel(now) {
                self.save_round(&mut tx, &before, &round).await?;
                let ended: Vec<_> = NewAuditEntry::question_ended(&round).into_iter().collect();
                self.audit(&mut tx, &ended, now).await?;
            }
        }
        session.cancel(now);
        self.save_sessions(&mut tx, &[&session]).await?;
        tx.commit().await?;
        Ok(session)
    }

    async fn set_producer_token(
        &self,
        id: &SessionId,
        token_hash: Option<&str>,
        actor: &str,
    ) -> StoreResult<Vec<Round>> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let previous = tx
            .optional::<(Option<String>,)>(
                Statement::new(Self::locked(sql::SELECT_PRODUCER_TOKEN)).bind(id.to_string()),
            )
            .await?;
        let Some((previous,)) = previous else {
            return Err(session_not_found(id));
        };
        tx.execute(
            Statement::new(sql::SET_PRODUCER_TOKEN)
                .bind(id.to_string())
                .bind(token_hash)
                .bind(to_ms(now)),
        )
        .await?;
        // A poll remembered with the old token must not be answered once this commits.
        tx.changed(Changed::Session(id.clone()));
        let action = if token_hash.is_some() {
            "token.issued"
        } else {
            "token.revoked"
        };
        let entry = NewAuditEntry::new(actor, action, id.to_string(), serde_json::json!({}));
        self.audit(&mut tx, &[entry], now).await?;
        let replaced = previous.is_some() && previous.as_deref() != token_hash;
        if !replaced {
            tx.commit().await?;
            return Ok(Vec::new());
        }
        // A question already past its deadline expired before the token changed: say so, not "revoked".
        let mut ended = self.expire_due_in(&mut tx, now, Some(id)).await?;
        let open = tx
            .all::<RoundRow>(
                Statement::new(Self::locked(sql::SELECT_TOKEN_ROUNDS_OPEN)).bind(id.to_string()),
            )
            .await?;
        let mut revoked = Vec::new();
        for before in rows_to_rounds(open)? {
            let mut round = before.clone();
            if round.end_for_revoked_token(now) {
                self.save_round(&mut tx, &before, &round).await?;
                revoked.push((before.status, round));
            }
        }
        ended.extend(self.announce_ended(&mut tx, revoked, now).await?);
        tx.commit().await?;
        Ok(ended)
    }

    async fn session_for_token(&self, token_hash: &str) -> StoreResult<Option<Session>> {
        self.optional::<SessionRow>(Statement::new(sql::SELECT_SESSION_BY_TOKEN).bind(token_hash))
            .await?
            .map(SessionRow::into_session)
            .transpose()
    }

    async fn session_id_for_token(&self, token_hash: &str) -> StoreResult<Option<SessionId>> {
        let states = &self.ctx.poll_states;
        self.check_token_changes().await;
        if let Some(known) = states.session_of_token(token_hash) {
            return Ok(Some(known));
        }
        // Read before the query: a token change committed while it runs keeps this read out of memory.
        let generation = states.generation();
        let session = self.session_for_token(token_hash).await?;
        if let Some(session) = &session {
            states.fill_token(generation, token_hash, &session.id);
        }
        Ok(session.map(|session| session.id))
    }
}

fn queue_entry(row: QueueRow) -> StoreResult<QueueEntry> {
    Ok(QueueEntry {
        session: row.session.into_session()?,
        open_rounds: u32::try_from(row.open_rounds).unwrap_or(u32::MAX),
        oldest_open_at: row.oldest_open_ms.map(from_ms).transpose()?,
    })
}
