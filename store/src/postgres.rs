//! The store on PostgreSQL, for several Anteroom instances sharing one database.

use std::{str::FromStr, sync::Arc, time::Duration as StdDuration};

use sqlx::{
    PgConnection, PgPool, Postgres, Transaction,
    migrate::{MigrateError, Migrator},
    postgres::{PgConnectOptions, PgPoolOptions},
};

use crate::{
    Backend, StoreContext, StoreOptions, StoreResult,
    dialect::{Dialect, Record, Statement, arguments},
    engine::SqlStore,
};

/// PostgreSQL's way of running the store.
pub struct PostgresDialect;

/// The store on PostgreSQL.
pub type PostgresStore = SqlStore<PostgresDialect>;

#[expect(
    clippy::disallowed_methods,
    reason = "the dialects are where the store's SQL text meets sqlx, and nowhere else"
)]
impl Dialect for PostgresDialect {
    type Db = Postgres;

    const BACKEND: Backend = Backend::Postgres;

    /// Rows read for writing are locked, so concurrent writers queue per round.
    const ROW_LOCK: &'static str = " FOR UPDATE";

    async fn begin_write(pool: &PgPool) -> sqlx::Result<Transaction<'static, Postgres>> {
        pool.begin().await
    }

    async fn execute(connection: &mut PgConnection, statement: Statement) -> sqlx::Result<u64> {
        let (sql, params, kept) = statement.into_parts();
        let done = sqlx::query_with::<Postgres, _>(&sql, arguments::<Postgres>(params)?)
            .persistent(kept)
            .execute(connection)
            .await?;
        Ok(done.rows_affected())
    }

    async fn fetch_all<R: Record>(
        connection: &mut PgConnection,
        statement: Statement,
    ) -> sqlx::Result<Vec<R>> {
        let (sql, params, kept) = statement.into_parts();
        sqlx::query_as_with::<Postgres, R, _>(&sql, arguments::<Postgres>(params)?)
            .persistent(kept)
            .fetch_all(connection)
            .await
    }

    async fn fetch_optional<R: Record>(
        connection: &mut PgConnection,
        statement: Statement,
    ) -> sqlx::Result<Option<R>> {
        let (sql, params, kept) = statement.into_parts();
        sqlx::query_as_with::<Postgres, R, _>(&sql, arguments::<Postgres>(params)?)
            .persistent(kept)
            .fetch_optional(connection)
            .await
    }

    async fn migrate(pool: &PgPool) -> Result<(), MigrateError> {
        Self::migrator().run(pool).await
    }

    fn migrator() -> &'static Migrator {
        static MIGRATOR: Migrator = sqlx::migrate!("../migrations/postgres");
        &MIGRATOR
    }
}

/// Server settings every connection of the store starts with: no wait on a lock and no transaction left open
/// can last for ever (a stuck writer becomes an error a caller sees, and its locks are released).
pub const SESSION_LIMITS: [(&str, &str); 2] = [
    ("lock_timeout", "30s"),
    ("idle_in_transaction_session_timeout", "60s"),
];

/// Sends `payload` to every connection listening on `channel` (`NOTIFY`): how instances on one database tell
/// each other about events.
#[expect(
    clippy::disallowed_methods,
    reason = "the store is where SQL runs; other instances hear events through this one statement"
)]
pub async fn notify(pool: &PgPool, channel: &str, payload: &str) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(channel)
        .bind(payload)
        .execute(pool)
        .await
        .map(|_| ())
}

impl PostgresStore {
    pub async fn connect(url: &str, options: StoreOptions) -> StoreResult<Self> {
        let connect = PgConnectOptions::from_str(url)?.options(SESSION_LIMITS);
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(StdDuration::from_secs(5))
            .connect_with(connect)
            .await?;
        Ok(Self::from_pool(pool, options))
    }

    /// Wraps an existing pool (tests use this to point a store at a schema of their own).
    pub fn from_pool(pool: PgPool, options: StoreOptions) -> Self {
        Self::with_pool(pool, Arc::new(StoreContext::new(options)))
    }
}
