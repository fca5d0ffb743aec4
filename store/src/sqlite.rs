//! The store on embedded SQLite: one file, WAL journal, a busy timeout, foreign keys on.

use std::{str::FromStr, sync::Arc, time::Duration as StdDuration};

use sqlx::{
    Sqlite, SqlitePool,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

use super::{StoreContext, StoreOptions, engine::sql_store};

/// The SQLite implementation of [`Store`]. One instance per database file.
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    ctx: Arc<StoreContext>,
}

impl SqliteStore {
    const BACKEND: crate::Backend = crate::Backend::Sqlite;

    pub async fn connect(url: &str, options: StoreOptions) -> StoreResult<Self> {
        let connect = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // With WAL, NORMAL survives an application crash; only a power loss can drop the last commits.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(StdDuration::from_secs(5))
            .foreign_keys(true);
        // sqlx runs each SQLite connection on a thread of its own and hands every query over a channel; on a
        // small machine more connections mostly add context switches (measured with `cargo xtask bench`:
        // 3 connections poll ~1.5× and create ~1.6× as fast as 8). Writers queue on the write lock anyway.
        let pool = SqlitePoolOptions::new()
            .max_connections(3)
            .connect_with(connect)
            .await?;
        Ok(Self {
            pool,
            ctx: Arc::new(StoreContext::new(options)),
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn run_migrations(&self) -> StoreResult<()> {
        sqlx::migrate!("../migrations/sqlite")
            .run(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes the write lock up front: a deferred transaction that reads and then writes can fail with
    /// "database is locked" when another writer got there in between.
    async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, Sqlite>> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }
}

sql_store!(SqliteStore, Sqlite, lock = "");
