//! Reading and writing whole round and session records, shared by every concern.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{SqlStore, WriteTx, round_not_found, session_not_found};
use crate::{
    Backend, StoreResult,
    dialect::{Dialect, Param, Statement},
    domain::{
        ManagedInputError,
        ids::{RoundId, SessionId},
        round::Round,
        session::Session,
    },
    poll_states::Changed,
    records::{RoundRow, SESSION_COLUMNS, SessionRow, to_ms},
    sql,
};

pub(super) fn rows_to_rounds(rows: Vec<RoundRow>) -> StoreResult<Vec<Round>> {
    rows.into_iter().map(RoundRow::into_round).collect()
}

impl<D: Dialect> SqlStore<D> {
    /// A round read for writing (locked where the dialect locks rows).
    pub(super) async fn fetch_round(&self, tx: &mut WriteTx<D>, id: RoundId) -> StoreResult<Round> {
        tx.optional::<RoundRow>(
            Statement::new(Self::locked(sql::SELECT_ROUND)).bind(id.to_string()),
        )
        .await?
        .ok_or_else(|| round_not_found(id))?
        .into_round()
    }

    /// A round as stored, outside any transaction.
    pub(super) async fn read_round(&self, id: RoundId) -> StoreResult<Option<Round>> {
        self.optional::<RoundRow>(Statement::new(sql::SELECT_ROUND).bind(id.to_string()))
            .await?
            .map(RoundRow::into_round)
            .transpose()
    }

    /// Writes `after` over `before`, only if nobody changed the round in between.
    pub(super) async fn save_round(
        &self,
        tx: &mut WriteTx<D>,
        before: &Round,
        after: &Round,
    ) -> StoreResult<()> {
        let old = RoundRow::of(before)?;
        let statement = Statement::new(sql::UPDATE_ROUND.as_str())
            .bind_all(RoundRow::of(after)?.params_written(false))
            .bind(old.round_id)
            .bind(old.version)
            .bind(old.status)
            .bind(old.lease_owner.unwrap_or_default())
            .bind(old.lease_token.unwrap_or_default());
        if tx.execute(statement).await? == 1 {
            tx.changed(Changed::Round(after.request_id.clone()));
            Ok(())
        } else {
            Err(ManagedInputError::conflict(format!(
                "Round {} was changed by someone else at the same time; read it again and retry.",
                after.round_id
            ))
            .into())
        }
    }

    /// Sessions read for writing, by id.
    pub(super) async fn fetch_sessions(
        &self,
        tx: &mut WriteTx<D>,
        ids: &[SessionId],
    ) -> StoreResult<HashMap<SessionId, Session>> {
        let mut found = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(sql::BATCH) {
            let statement = Statement::new(sql::select_sessions(chunk.len(), D::ROW_LOCK))
                .bind_all(chunk.iter().map(|id| id.to_string().into()));
            for row in tx.all::<SessionRow>(statement).await? {
                let session = row.into_session()?;
                found.insert(session.id.clone(), session);
            }
        }
        Ok(found)
    }

    pub(super) async fn fetch_session(
        &self,
        tx: &mut WriteTx<D>,
        id: &SessionId,
    ) -> StoreResult<Session> {
        self.fetch_sessions(tx, std::slice::from_ref(id))
            .await?
            .remove(id)
            .ok_or_else(|| session_not_found(id))
    }

    /// Writes whole sessions back, many per statement.
    pub(super) async fn save_sessions(
        &self,
        tx: &mut WriteTx<D>,
        sessions: &[&Session],
    ) -> StoreResult<()> {
        if D::BACKEND == Backend::Sqlite {
            let rows: Vec<Vec<serde_json::Value>> = sessions
                .iter()
                .map(|session| {
                    SessionRow::of(session)
                        .params_written(true)
                        .into_iter()
                        .map(Param::into_json)
                        .collect()
                })
                .collect();
            return tx
                .execute_json_rows(sql::UPSERT_SESSIONS_FROM_JSON.as_str(), &rows, "sessions")
                .await;
        }
        let columns = sql::written_by(SESSION_COLUMNS, true);
        for chunk in sessions.chunks(sql::JSON_ROWS_BATCH) {
            let rows = chunk
                .iter()
                .map(|session| SessionRow::of(session).params_written(true));
            let statement = Statement::from_records(
                sql::UPSERT_SESSIONS_FROM_RECORDS.as_str(),
                &columns,
                rows,
                "sessions",
            )?;
            tx.execute(statement).await?;
        }
        Ok(())
    }

    /// How many rounds of each session still wait for a person.
    pub(super) async fn open_counts(
        &self,
        tx: &mut WriteTx<D>,
        ids: &[SessionId],
        now: DateTime<Utc>,
    ) -> StoreResult<HashMap<String, i64>> {
        let mut counts = HashMap::new();
        for chunk in ids.chunks(sql::BATCH) {
            let statement = Statement::new(sql::count_open_by_session(chunk.len()))
                .bind(to_ms(now))
                .bind_all(chunk.iter().map(|id| id.to_string().into()));
            counts.extend(tx.all::<(String, i64)>(statement).await?);
        }
        Ok(counts)
    }

    /// A round as this instance knows it: the stored record with the asker's latest poll from memory.
    pub(super) fn seen(&self, mut round: Round) -> Round {
        self.ctx.askers.overlay(&mut round);
        round
    }

    pub(super) fn seen_all(&self, rows: Vec<RoundRow>) -> StoreResult<Vec<Round>> {
        rows.into_iter()
            .map(|row| Ok(self.seen(row.into_round()?)))
            .collect()
    }
}
