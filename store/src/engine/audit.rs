//! The record: entries written in the transaction of the change they record, then sealed into the hash chain.
//!
//! Writing an entry takes no lock, so creates and answers on several instances never wait on one another for
//! it; sealing takes the chain's head row, so entries are chained one sealer at a time, in order.

use chrono::{DateTime, Utc};

use super::{SqlStore, WriteTx};
use crate::{
    AuditStore, Backend, StoreResult,
    dialect::{Dialect, Param, Statement},
    domain::audit::{AuditEntry, NewAuditEntry, entry_hash},
    records::{from_ms, to_ms},
    sql,
};

/// Entries written on PostgreSQL as one JSON parameter at most; more are written as rows of parameters.
const AUDIT_RECORDS_UP_TO: usize = 64;

/// Entries sealed in one transaction at most.
const SEAL_BATCH: u32 = 2_000;

type PendingRow = (String, i64, String, String, String, String);
type LogRow = (i64, i64, String, String, String, String, String, String);

impl<D: Dialect> SqlStore<D> {
    /// Writes `entries` as pending, in the caller's transaction.
    pub(super) async fn audit(
        &self,
        tx: &mut WriteTx<D>,
        entries: &[NewAuditEntry],
        now: DateTime<Utc>,
    ) -> StoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let rows: Vec<PendingRow> = entries
            .iter()
            .map(|entry| {
                (
                    uuid::Uuid::now_v7().to_string(),
                    to_ms(now),
                    recordable(&entry.actor),
                    entry.action.to_owned(),
                    recordable(&entry.subject),
                    entry.detail.to_string(),
                )
            })
            .collect();
        match D::BACKEND {
            Backend::Sqlite => {
                tx.execute_json_rows(sql::INSERT_AUDIT_PENDING_FROM_JSON, &rows, "audit entries")
                    .await?;
            }
            // A few entries (a create batch's, an answer's) come as one JSON parameter, a text that stays
            // prepared; many (a sweep's) as rows of parameters, which PostgreSQL binds faster than it parses
            // JSON: 100k expired questions' entries took 9.3-9.9 s as rows against 9.7-10.4 s as JSON, while a
            // create cost PostgreSQL 323-332 µs of CPU with its entries as JSON against 350-387 µs as rows
            // (`--postgres --only expiry` and `--only creates`, three and two runs, 2026-12-07).
            Backend::Postgres if rows.len() <= AUDIT_RECORDS_UP_TO => {
                let statement = Statement::from_records(
                    sql::INSERT_AUDIT_PENDING_FROM_RECORDS.as_str(),
                    &sql::AUDIT_PENDING_COLUMN_NAMES,
                    rows.into_iter().map(|row| pending_params(row).into()),
                    "audit entries",
                )?;
                tx.execute(statement).await?;
            }
            Backend::Postgres => {
                let mut rows = rows.into_iter().peekable();
                while rows.peek().is_some() {
                    let chunk: Vec<PendingRow> = rows.by_ref().take(sql::BATCH).collect();
                    let count = chunk.len();
                    let params = chunk.into_iter().flat_map(pending_params);
                    tx.execute(Statement::new(sql::insert_audit_pending(count)).bind_all(params))
                        .await?;
                }
            }
        }
        Ok(())
    }
}

/// A pending row as its values, in the order of [`sql::AUDIT_PENDING_COLUMN_NAMES`] and of one row of
/// [`sql::insert_audit_pending`].
fn pending_params(
    (id, at_ms, actor, action, subject, detail): PendingRow,
) -> [Param; sql::AUDIT_PENDING_COLUMNS] {
    [
        id.into(),
        at_ms.into(),
        actor.into(),
        action.into(),
        subject.into(),
        detail.into(),
    ]
}

/// An actor or subject as the record keeps it: its first 300 characters, a NUL as U+FFFD (PostgreSQL's text
/// cannot hold one, and SQLite's JSON functions would end the text there).
fn recordable(text: &str) -> String {
    text.chars()
        .take(300)
        .map(|c| {
            if c == '\0' {
                char::REPLACEMENT_CHARACTER
            } else {
                c
            }
        })
        .collect()
}

fn entry_of(row: LogRow) -> StoreResult<AuditEntry> {
    let (seq, at_ms, actor, action, subject, detail, prev_hash, hash) = row;
    Ok(AuditEntry {
        seq,
        at: from_ms(at_ms)?,
        actor,
        action,
        subject,
        detail,
        prev_hash,
        hash,
    })
}

#[async_trait::async_trait]
impl<D: Dialect> AuditStore for SqlStore<D> {
    async fn record_audit(&self, entries: &[NewAuditEntry]) -> StoreResult<()> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        self.audit(&mut tx, entries, now).await?;
        tx.commit().await
    }

    async fn seal_audit(&self) -> StoreResult<u64> {
        let mut sealed = 0;
        loop {
            let mut tx = self.begin_write().await?;
            // The head row is the chain's lock: one sealer at a time, on every instance.
            let (mut seq, mut hash) = tx
                .one::<(i64, String)>(Statement::new(Self::locked(sql::SELECT_AUDIT_HEAD)))
                .await?;
            let pending = tx
                .all::<PendingRow>(
                    Statement::new(sql::SELECT_AUDIT_PENDING).bind(i64::from(SEAL_BATCH)),
                )
                .await?;
            if pending.is_empty() {
                tx.commit().await?;
                return Ok(sealed);
            }
            let mut rows: Vec<[Param; sql::AUDIT_LOG_COLUMNS]> = Vec::with_capacity(pending.len());
            let mut ids = Vec::with_capacity(pending.len());
            for (id, at_ms, actor, action, subject, detail) in &pending {
                seq += 1;
                let next = entry_hash(&hash, seq, *at_ms, actor, action, subject, detail);
                rows.push([
                    seq.into(),
                    (*at_ms).into(),
                    actor.as_str().into(),
                    action.as_str().into(),
                    subject.as_str().into(),
                    detail.as_str().into(),
                    hash.as_str().into(),
                    next.as_str().into(),
                ]);
                hash = next;
                ids.push(id.clone());
            }
            for chunk in rows.chunks(sql::BATCH) {
                let statement = Statement::new(sql::insert_audit_log(chunk.len()))
                    .bind_all(chunk.iter().flat_map(|row| row.iter().cloned()));
                tx.execute(statement).await?;
            }
            for chunk in ids.chunks(sql::BATCH) {
                let statement = Statement::new(sql::delete_audit_pending(chunk.len()))
                    .bind_all(chunk.iter().map(|id| Param::from(id.as_str())));
                tx.execute(statement).await?;
            }
            tx.execute(Statement::new(sql::UPDATE_AUDIT_HEAD).bind(seq).bind(hash))
                .await?;
            tx.commit().await?;
            sealed += pending.len() as u64;
            if pending.len() < SEAL_BATCH as usize {
                return Ok(sealed);
            }
        }
    }

    async fn audit_entries(
        &self,
        after_seq: i64,
        since: Option<DateTime<Utc>>,
        limit: u32,
    ) -> StoreResult<Vec<AuditEntry>> {
        self.all::<LogRow>(
            Statement::new(sql::SELECT_AUDIT_LOG)
                .bind(after_seq)
                .bind(since.map_or(i64::MIN, to_ms))
                .bind(i64::from(limit)),
        )
        .await?
        .into_iter()
        .map(entry_of)
        .collect()
    }

    async fn audit_head(&self) -> StoreResult<(i64, String, i64)> {
        let (seq, hash) = self
            .one::<(i64, String)>(Statement::new(sql::SELECT_AUDIT_HEAD))
            .await?;
        let (pending,) = self
            .one::<(i64,)>(Statement::new(sql::COUNT_AUDIT_PENDING))
            .await?;
        Ok((seq, hash, pending))
    }
}
