//! The store's behaviour, written once for every [`Dialect`]: each call loads records, lets the domain decide,
//! and writes the outcome back in one transaction.
//!
//! One file per concern of the contract ([`crate::contract`]); `rows` holds the record reads and writes they
//! share, `transitions` the way a change to a round or session is applied and its consequences recorded.

mod accounts;
mod audit;
pub(crate) mod creates;
mod gate;
mod identities;
mod outbox;
mod passkeys;
mod reach;
mod rounds;
mod rows;
mod runs;
mod schema;
mod sessions;
pub(crate) mod standing;
mod stats;
mod sweeps;
mod teams;
#[cfg(feature = "testing")]
mod testing;
mod transitions;
mod workers;

use std::{fmt, marker::PhantomData, sync::Arc};

use chrono::{DateTime, Utc};
use sqlx::{Pool, Transaction};

use crate::{
    Backend, Store, StoreContext, StoreError, StoreResult,
    dialect::{Dialect, Record, Statement},
    domain::{ManagedInputError, ids::SessionId},
    poll_states::Changed,
};

/// The store on the database of dialect `D` ([`crate::SqliteStore`], [`crate::PostgresStore`]).
pub struct SqlStore<D: Dialect> {
    pool: Pool<D::Db>,
    /// Where write transactions run: the same pool on PostgreSQL; on SQLite, one connection of its own, so a
    /// writer queues only behind writers, never behind the reads that fill the other pool.
    writer: Pool<D::Db>,
    ctx: Arc<StoreContext>,
    dialect: PhantomData<D>,
}

impl<D: Dialect> Clone for SqlStore<D> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            writer: self.writer.clone(),
            ctx: Arc::clone(&self.ctx),
            dialect: PhantomData,
        }
    }
}

impl<D: Dialect> fmt::Debug for SqlStore<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &D::BACKEND)
            .finish_non_exhaustive()
    }
}

/// A transaction that may write, opened the dialect's way; what it changed of pending rounds' poll state is
/// dropped from memory once it commits.
pub(crate) struct WriteTx<D: Dialect> {
    tx: Transaction<'static, D::Db>,
    ctx: Arc<StoreContext>,
    changed: Vec<Changed>,
}

impl<D: Dialect> WriteTx<D> {
    pub async fn execute(&mut self, statement: Statement) -> StoreResult<u64> {
        self.ctx.round_trip();
        Ok(D::execute(&mut self.tx, statement).await?)
    }

    pub async fn all<R: Record>(&mut self, statement: Statement) -> StoreResult<Vec<R>> {
        self.ctx.round_trip();
        Ok(D::fetch_all(&mut self.tx, statement).await?)
    }

    pub async fn optional<R: Record>(&mut self, statement: Statement) -> StoreResult<Option<R>> {
        self.ctx.round_trip();
        Ok(D::fetch_optional(&mut self.tx, statement).await?)
    }

    /// Writes `rows` through `sql`, a SQLite statement that reads them from one JSON array parameter
    /// (`json_each($1)`), [`sql::JSON_ROWS_BATCH`] rows a statement: SQLite binds each parameter of a multi-row
    /// VALUES separately, so large writes (an expiry sweep's audit entries and sessions) take one instead.
    /// `what` names the rows in the error a value JSON cannot hold would give.
    pub async fn execute_json_rows<T: serde::Serialize>(
        &mut self,
        sql: &'static str,
        rows: &[T],
        what: &str,
    ) -> StoreResult<()> {
        for chunk in rows.chunks(crate::sql::JSON_ROWS_BATCH) {
            let json = serde_json::to_string(chunk)
                .map_err(|error| StoreError::Corrupt(format!("{what}: {error}")))?;
            self.execute(Statement::new(sql).bind(json)).await?;
        }
        Ok(())
    }

    /// Notes a change that makes a poll's remembered state stale once this transaction commits.
    pub fn changed(&mut self, change: Changed) {
        self.changed.push(change);
    }

    pub async fn one<R: Record>(&mut self, statement: Statement) -> StoreResult<R> {
        self.optional(statement)
            .await?
            .ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }

    pub async fn commit(self) -> StoreResult<()> {
        let Self { tx, ctx, changed } = self;
        ctx.round_trip();
        let committed = tx.commit().await;
        ctx.wrote();
        // Even when the commit reports an error: a COMMIT whose reply was lost may still have applied, and
        // forgetting costs only a database read.
        ctx.poll_states.forget(&changed);
        Ok(committed?)
    }

    pub async fn rollback(self) -> StoreResult<()> {
        self.ctx.round_trip();
        Ok(self.tx.rollback().await?)
    }
}

impl<D: Dialect> SqlStore<D> {
    pub(crate) fn with_pool(pool: Pool<D::Db>, ctx: Arc<StoreContext>) -> Self {
        Self::with_pools(pool.clone(), pool, ctx)
    }

    pub(crate) fn with_pools(
        pool: Pool<D::Db>,
        writer: Pool<D::Db>,
        ctx: Arc<StoreContext>,
    ) -> Self {
        Self {
            pool,
            writer,
            ctx,
            dialect: PhantomData,
        }
    }

    /// The connection pool (tests reach the database through it).
    pub fn pool(&self) -> &Pool<D::Db> {
        &self.pool
    }

    fn clock_now(&self) -> DateTime<Utc> {
        self.ctx.now()
    }

    async fn begin_write(&self) -> StoreResult<WriteTx<D>> {
        self.ctx.round_trip();
        Ok(WriteTx {
            tx: D::begin_write(&self.writer).await?,
            ctx: Arc::clone(&self.ctx),
            changed: Vec::new(),
        })
    }

    /// `sql` as a read that precedes a write in the same transaction.
    fn locked(sql: &str) -> String {
        format!("{sql}{}", D::ROW_LOCK)
    }

    // Each statement outside a transaction commits on its own: one that may write tells SQLite's checkpointer.

    async fn execute(&self, statement: Statement) -> StoreResult<u64> {
        let mut connection = self.pool.acquire().await?;
        self.ctx.round_trip();
        let writes = statement.may_write();
        let affected = D::execute(&mut connection, statement).await?;
        self.ctx.wrote_if(writes);
        Ok(affected)
    }

    async fn all<R: Record>(&self, statement: Statement) -> StoreResult<Vec<R>> {
        let mut connection = self.pool.acquire().await?;
        self.ctx.round_trip();
        let writes = statement.may_write();
        let rows = D::fetch_all(&mut connection, statement).await?;
        self.ctx.wrote_if(writes);
        Ok(rows)
    }

    async fn optional<R: Record>(&self, statement: Statement) -> StoreResult<Option<R>> {
        let mut connection = self.pool.acquire().await?;
        self.ctx.round_trip();
        let writes = statement.may_write();
        let row = D::fetch_optional(&mut connection, statement).await?;
        self.ctx.wrote_if(writes);
        Ok(row)
    }

    async fn one<R: Record>(&self, statement: Statement) -> StoreResult<R> {
        self.optional(statement)
            .await?
            .ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }
}

fn round_not_found(id: impl fmt::Display) -> StoreError {
    ManagedInputError::not_found(format!("No round {id} exists.")).into()
}

fn session_not_found(id: &SessionId) -> StoreError {
    ManagedInputError::not_found(format!(
        "No session {id} exists; register it first (POST /api/v1/sessions)."
    ))
    .into()
}

/// A unique-key violation becomes `conflict` with `message`; every other failure passes through.
fn conflict_on_unique(
    result: StoreResult<u64>,
    message: impl FnOnce() -> String,
) -> StoreResult<u64> {
    match result {
        Err(StoreError::Database(sqlx::Error::Database(error))) if error.is_unique_violation() => {
            Err(ManagedInputError::conflict(message()).into())
        }
        other => other,
    }
}

#[async_trait::async_trait]
impl<D: Dialect> Store for SqlStore<D> {
    fn backend(&self) -> Backend {
        D::BACKEND
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock_now()
    }

    fn round_trips(&self) -> u64 {
        self.ctx
            .round_trips
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn fact_rereads(&self) -> u64 {
        self.ctx.standing.rereads() + self.ctx.push_browsers.rereads()
    }

    async fn migrate(&self) -> StoreResult<()> {
        self.apply_migrations().await
    }

    async fn schema_status(&self) -> StoreResult<crate::migrations::SchemaStatus> {
        self.read_schema_status().await
    }

    async fn schema_version(&self) -> StoreResult<Option<i64>> {
        self.read_schema_version().await
    }

    async fn backup_to(&self, path: &std::path::Path) -> StoreResult<()> {
        self.copy_into(path).await
    }
}

/// How long this process trusts what it last saw of a [`RecentFact`]: a change made by another process
/// (another instance, the CLI) is seen here within this.
const FACT_FRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// A fact about the database as this process last saw it — where standing answers are in force, whether any
/// browser has push on — so that while it says no, a new question costs no read for it (measured for standing
/// answers: the read per create cost a tenth of the creates figure). A change made here is seen at once.
#[derive(Debug)]
pub(crate) struct RecentFact<T = bool> {
    seen: std::sync::Mutex<Option<(std::time::Instant, T)>>,
    /// How many times the fact was read again from the database because it had gone stale: at most once a
    /// second, whatever the traffic, so what an operation costs is counted without them.
    rereads: std::sync::atomic::AtomicU64,
}

impl<T> Default for RecentFact<T> {
    fn default() -> Self {
        Self {
            seen: std::sync::Mutex::new(None),
            rereads: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl<T: Clone> RecentFact<T> {
    fn seen(&self) -> std::sync::MutexGuard<'_, Option<(std::time::Instant, T)>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What was last seen, while it is fresh.
    pub(crate) fn known(&self) -> Option<T> {
        match &*self.seen() {
            Some((at, fact)) if at.elapsed() < FACT_FRESH => Some(fact.clone()),
            _ => None,
        }
    }

    pub(crate) fn set(&self, fact: T) {
        *self.seen() = Some((std::time::Instant::now(), fact));
    }

    /// Changes the fact as this process changed it in the database, keeping its age: a change made elsewhere
    /// is still seen within [`FACT_FRESH`].
    pub(crate) fn change(&self, change: impl FnOnce(&T) -> T) {
        if let Some((_, fact)) = &mut *self.seen() {
            *fact = change(fact);
        }
    }

    /// Sets the fact just read from the database, counting the read.
    pub(crate) fn read_again(&self, fact: T) {
        self.rereads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.set(fact);
    }

    pub(crate) fn rereads(&self) -> u64 {
        self.rereads.load(std::sync::atomic::Ordering::Relaxed)
    }
}
