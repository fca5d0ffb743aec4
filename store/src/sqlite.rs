//! The store on embedded SQLite: one file, WAL journal, a busy timeout, foreign keys on.

use std::{borrow::Cow, str::FromStr, sync::Arc, time::Duration as StdDuration};

use sqlx::{
    Sqlite, SqliteConnection, SqlitePool, Transaction,
    migrate::{MigrateError, Migrator},
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

use crate::{
    Backend, StoreContext, StoreOptions, StoreResult,
    dialect::{Dialect, Record, Statement, arguments},
    engine::SqlStore,
    wal_checkpoints::WalCheckpoints,
};

/// SQLite's way of running the store.
pub struct SqliteDialect;

/// The text SQLite is given for a statement: a batch prepared for its one use ([`Statement::kept_prepared`])
/// has its `$1 … $n` written as anonymous `?` placeholders when they appear once each and in order, as a
/// batch's value rows do.
///
/// SQLite keeps each named placeholder in a list it searches by name while parsing and by number while binding,
/// so a statement of n named placeholders costs O(n²) every time it is prepared and bound. A create batch of 32
/// rounds has 1,056: `perf` of the bench's creates found 10% of the process's CPU in `strncmp` and
/// `sqlite3_bind_parameter_name`. Anonymous placeholders are numbered as they come, with no name to look up.
fn driver_text(sql: Cow<'static, str>, kept: bool) -> Cow<'static, str> {
    if kept {
        return sql;
    }
    anonymous_placeholders(&sql).map_or(sql, Cow::Owned)
}

/// `sql` with `$1, $2, … $n` replaced by `?`, or `None` unless each of them appears exactly once, in order, outside
/// quoted text (and at least one does).
fn anonymous_placeholders(sql: &str) -> Option<String> {
    let bytes = sql.as_bytes();
    let mut text = String::with_capacity(sql.len());
    let mut expected = 1_usize;
    let mut quote: Option<u8> = None;
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        match quote {
            Some(open) if byte == open => quote = None,
            Some(_) => {}
            None if byte == b'\'' || byte == b'"' => quote = Some(byte),
            None if byte == b'$' => {
                let digits = bytes[at + 1..]
                    .iter()
                    .take_while(|digit| digit.is_ascii_digit())
                    .count();
                if digits > 0 {
                    let number: usize = sql.get(at + 1..at + 1 + digits)?.parse().ok()?;
                    if number != expected {
                        return None;
                    }
                    expected += 1;
                    text.push_str(sql.get(copied..at)?);
                    text.push('?');
                    at += 1 + digits;
                    copied = at;
                    continue;
                }
            }
            None => {}
        }
        at += 1;
    }
    if expected == 1 || quote.is_some() {
        return None;
    }
    text.push_str(sql.get(copied..)?);
    Some(text)
}

/// The store on SQLite. One instance per database file.
pub type SqliteStore = SqlStore<SqliteDialect>;

#[expect(
    clippy::disallowed_methods,
    reason = "the dialects are where the store's SQL text meets sqlx, and nowhere else"
)]
impl Dialect for SqliteDialect {
    type Db = Sqlite;

    const BACKEND: Backend = Backend::Sqlite;

    /// SQLite's write transaction already excludes every other writer.
    const ROW_LOCK: &'static str = "";

    /// Takes the write lock up front: a deferred transaction that reads and then writes can fail with
    /// "database is locked" when another writer got there in between.
    async fn begin_write(pool: &SqlitePool) -> sqlx::Result<Transaction<'static, Sqlite>> {
        pool.begin_with("BEGIN IMMEDIATE").await
    }

    async fn execute(connection: &mut SqliteConnection, statement: Statement) -> sqlx::Result<u64> {
        let (sql, params, kept) = statement.into_parts();
        let sql = driver_text(sql, kept);
        let done = sqlx::query_with::<Sqlite, _>(&sql, arguments::<Sqlite>(params)?)
            .persistent(kept)
            .execute(connection)
            .await?;
        Ok(done.rows_affected())
    }

    async fn fetch_all<R: Record>(
        connection: &mut SqliteConnection,
        statement: Statement,
    ) -> sqlx::Result<Vec<R>> {
        let (sql, params, kept) = statement.into_parts();
        let sql = driver_text(sql, kept);
        sqlx::query_as_with::<Sqlite, R, _>(&sql, arguments::<Sqlite>(params)?)
            .persistent(kept)
            .fetch_all(connection)
            .await
    }

    async fn fetch_optional<R: Record>(
        connection: &mut SqliteConnection,
        statement: Statement,
    ) -> sqlx::Result<Option<R>> {
        let (sql, params, kept) = statement.into_parts();
        let sql = driver_text(sql, kept);
        sqlx::query_as_with::<Sqlite, R, _>(&sql, arguments::<Sqlite>(params)?)
            .persistent(kept)
            .fetch_optional(connection)
            .await
    }

    async fn migrate(pool: &SqlitePool) -> Result<(), MigrateError> {
        Self::migrator().run(pool).await
    }

    fn migrator() -> &'static Migrator {
        static MIGRATOR: Migrator = sqlx::migrate!("../migrations/sqlite");
        &MIGRATOR
    }
}

impl SqliteStore {
    pub async fn connect(url: &str, options: StoreOptions) -> StoreResult<Self> {
        let connect = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // With WAL, NORMAL survives an application crash; only a power loss can drop the last commits.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(StdDuration::from_secs(5))
            // Checkpoints run beside the writes, not inside a commit (crate::wal_checkpoints says why).
            .pragma("wal_autocheckpoint", "0")
            // A WAL that grew in a burst is cut back to 64 MiB when it starts over.
            .pragma("journal_size_limit", "67108864")
            .foreign_keys(true);
        // sqlx runs each SQLite connection on a thread of its own and hands every query over a channel; on a
        // small machine more connections mostly add context switches (measured with `cargo xtask bench`:
        // 3 connections poll ~1.5× and create ~1.6× as fast as 8). Write transactions have one connection of
        // their own: SQLite runs one at a time anyway, and in the shared pool a writer waited for a connection
        // behind every queued read (BEGIN took 1 ms under load, 0.2 ms on its own connection).
        let pool = SqlitePoolOptions::new()
            .max_connections(3)
            .connect_with(connect.clone())
            .await?;
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(connect.clone())
            .await?;
        let mut ctx = StoreContext::new(options);
        ctx.wal_checkpoints = Some(WalCheckpoints::start(connect, writer.clone()));
        Ok(Self::with_pools(pool, writer, Arc::new(ctx)))
    }
}

/// What a SQLite file holds, read without changing it: a backup's check before it is kept or restored.
#[derive(Debug, Clone)]
pub struct SqliteFileReport {
    /// `PRAGMA integrity_check`'s lines: exactly `["ok"]` for a sound file.
    pub integrity: Vec<String>,
    pub schema: crate::migrations::SchemaStatus,
    /// Questions in it (`None` before the first migration).
    pub rounds: Option<i64>,
}

impl SqliteFileReport {
    pub fn is_intact(&self) -> bool {
        self.integrity == ["ok"]
    }
}

/// Opens the SQLite file at `path` read-only and checks it: its integrity, its schema, how many questions.
#[expect(
    clippy::disallowed_methods,
    reason = "a file check reads pragmas and counts no store statement covers"
)]
pub async fn inspect_file(path: &std::path::Path) -> StoreResult<SqliteFileReport> {
    use crate::Store as _;
    let connect = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .create_if_missing(false);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(connect)
        .await?;
    let integrity: Vec<(String,)> = sqlx::query_as("PRAGMA integrity_check")
        .fetch_all(&pool)
        .await?;
    let store = SqliteStore::with_pools(
        pool.clone(),
        pool.clone(),
        Arc::new(StoreContext::new(crate::StoreOptions::default())),
    );
    let schema = store.schema_status().await?;
    let rounds = if schema.database_version().is_some() {
        let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM rounds")
            .fetch_one(&pool)
            .await?;
        Some(count)
    } else {
        None
    };
    pool.close().await;
    Ok(SqliteFileReport {
        integrity: integrity.into_iter().map(|(line,)| line).collect(),
        schema,
        rounds,
    })
}

/// Copies the SQLite database at `from` (with whatever its WAL holds) into the new file `to` through SQLite
/// itself (`VACUUM INTO` on a read-only connection): a copy of the main file alone would miss what is still in
/// the WAL.
#[expect(
    clippy::disallowed_methods,
    reason = "a file copy made by SQLite, outside any store"
)]
pub async fn copy_file(from: &std::path::Path, to: &std::path::Path) -> StoreResult<()> {
    let to = to.to_str().ok_or(crate::StoreError::NotOnThisBackend(
        "the copy's path must be valid UTF-8",
    ))?;
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(from)
                .read_only(true)
                .create_if_missing(false),
        )
        .await?;
    let copied = sqlx::query("VACUUM INTO $1").bind(to).execute(&pool).await;
    pool.close().await;
    copied?;
    Ok(())
}

/// Moves everything the WAL of the SQLite database at `path` holds into its main file and empties the WAL, so
/// the main file alone is the whole database (before it is renamed away by a restore).
#[expect(
    clippy::disallowed_methods,
    reason = "a checkpoint of a file no store has open"
)]
pub async fn checkpoint_file(path: &std::path::Path) -> StoreResult<()> {
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(false)
                .busy_timeout(StdDuration::from_secs(5)),
        )
        .await?;
    let checkpointed = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&pool)
        .await;
    pool.close().await;
    checkpointed?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::{anonymous_placeholders, driver_text};

    #[test]
    fn in_order_placeholders_become_anonymous() {
        assert_eq!(
            anonymous_placeholders("INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4) RETURNING a")
                .as_deref(),
            Some("INSERT INTO t (a, b) VALUES (?, ?), (?, ?) RETURNING a")
        );
        assert_eq!(
            anonymous_placeholders(
                "SELECT json_extract(value, '$[0]') FROM json_each($1) WHERE x = $2"
            )
            .as_deref(),
            Some("SELECT json_extract(value, '$[0]') FROM json_each(?) WHERE x = ?")
        );
        assert_eq!(
            anonymous_placeholders("SELECT $9, $10, $11").as_deref(),
            None,
            "numbering must start at 1"
        );
    }

    #[test]
    fn a_reused_or_reordered_or_quoted_placeholder_keeps_the_text() {
        assert_eq!(anonymous_placeholders("SELECT $1, $1"), None);
        assert_eq!(anonymous_placeholders("SELECT $2, $1"), None);
        assert_eq!(anonymous_placeholders("SELECT '$1'"), None);
        assert_eq!(anonymous_placeholders("SELECT 1"), None);
        assert_eq!(anonymous_placeholders("SELECT $1, 'unclosed"), None);
        assert_eq!(
            anonymous_placeholders("SELECT '$1', $1, \"$2\", $2").as_deref(),
            Some("SELECT '$1', ?, \"$2\", ?")
        );
    }

    #[test]
    fn only_a_batch_prepared_for_one_use_is_rewritten() {
        let sql = || Cow::Borrowed("SELECT $1, $2");
        assert_eq!(driver_text(sql(), true), "SELECT $1, $2");
        assert_eq!(driver_text(sql(), false), "SELECT ?, ?");
    }
}
