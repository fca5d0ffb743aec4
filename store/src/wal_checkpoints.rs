//! SQLite's WAL checkpoints, run beside the writes on a connection of their own instead of inside a commit.
//!
//! By default SQLite checkpoints from whichever connection commits past 1,000 pages of WAL, inside that COMMIT:
//! it syncs the WAL, copies its pages into the main file and syncs that, and the COMMIT returns only then. That
//! commit was a question's answer or its delivery about once in thirty questions, and it made the tail of
//! answer → agent. `cargo xtask bench -- --only latency --runs 3` (2026-12-07, 2 cores), long-poll p99 and
//! SSE p99 in ms:
//!
//! | checkpoints | long-poll p99 | SSE p99 |
//! | --- | --- | --- |
//! | SQLite's own, in the commit | 6.65; 6.56; 6.75 | 4.81; 5.50; 6.10 |
//! | none at all | 3.82; 3.20; 3.65 | 2.90; 2.80; 2.93 |
//! | this task, 100 ms after a write | 5.11; 4.96; 3.83 | 4.12; 3.64; 2.97 |
//! | this task, 500 ms after a write | 3.70; 3.84; 4.09 | 2.77; 2.37; 3.35 |
//!
//! So the store turns them off (`wal_autocheckpoint = 0` on every connection) and this task checkpoints
//! instead: woken by a committed write, it waits [`GATHER`] for the writes that follow, then runs a PASSIVE
//! checkpoint, which neither waits for nor blocks readers and writers. The WAL starts over only when a write
//! begins with all of it copied, which a checkpoint beside steady writes may never leave it: when one finds the
//! WAL longer than [`LARGE_WAL_PAGES`] (it has not started over since), the next runs on the writers' one connection, so no write commits
//! until it is done (as SQLite's own did, but once per [`LARGE_WAL_PAGES`] rather than per 1,000). Whatever is
//! left when the store closes, SQLite checkpoints as the last connection closes.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use sqlx::{Connection, SqliteConnection, SqlitePool, sqlite::SqliteConnectOptions};
use tokio::sync::Notify;

/// How long the checkpointer lets writes gather after the one that woke it: a burst is checkpointed once, and a
/// checkpoint every 100 ms still showed in the tail (the table above).
const GATHER: Duration = Duration::from_millis(500);

/// The WAL's length in pages (four times SQLite's own threshold) past which the next checkpoint holds the
/// writers off, so the WAL can start over.
const LARGE_WAL_PAGES: i64 = 4_000;

/// The store's end of the checkpointer: tells it of writes, and stops it when the store goes.
pub(crate) struct WalCheckpoints {
    wrote: Arc<Notify>,
    closed: Arc<AtomicBool>,
}

impl WalCheckpoints {
    /// Starts the checkpointer (on the current tokio runtime) of the database `options` open, whose write
    /// transactions run on `writer`'s one connection. It never creates the file: a file moved away (a restore)
    /// is not made again beside the new one.
    pub(crate) fn start(options: SqliteConnectOptions, writer: SqlitePool) -> Self {
        let wrote = Arc::new(Notify::new());
        let closed = Arc::new(AtomicBool::new(false));
        tokio::spawn(checkpoint_after_writes(
            options.create_if_missing(false),
            writer,
            Arc::clone(&wrote),
            Arc::clone(&closed),
        ));
        Self { wrote, closed }
    }

    /// A write was committed: its pages are in the WAL, to be checkpointed soon.
    pub(crate) fn wrote(&self) {
        self.wrote.notify_one();
    }
}

impl Drop for WalCheckpoints {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        self.wrote.notify_one();
    }
}

async fn checkpoint_after_writes(
    options: SqliteConnectOptions,
    writer: SqlitePool,
    wrote: Arc<Notify>,
    closed: Arc<AtomicBool>,
) {
    let mut connection: Option<SqliteConnection> = None;
    let mut hold_writers_off = false;
    loop {
        wrote.notified().await;
        if closed.load(Ordering::Acquire) {
            break;
        }
        tokio::time::sleep(GATHER).await;
        if closed.load(Ordering::Acquire) {
            break;
        }
        if hold_writers_off {
            hold_writers_off = false;
            let checkpointed = match writer.acquire().await {
                Ok(mut on_writer) => checkpoint(&mut on_writer).await.map(|_| ()),
                Err(error) => Err(error),
            };
            if let Err(error) = checkpointed {
                tracing::warn!(%error, "SQLite checkpoint on the writers' connection failed");
            }
            continue;
        }
        if connection.is_none() {
            match SqliteConnection::connect_with(&options).await {
                Ok(opened) => connection = Some(opened),
                Err(error) => {
                    tracing::warn!(%error, "SQLite checkpoints: cannot open a connection; the next write tries again");
                    continue;
                }
            }
        }
        let Some(open) = connection.as_mut() else {
            continue;
        };
        match checkpoint(open).await {
            Ok((_, wal_pages, _)) => {
                // A WAL this long has not started over since writes went on through the last checkpoints: the
                // next one lets none commit while it copies, so the write after it starts the WAL over.
                hold_writers_off = wal_pages > LARGE_WAL_PAGES;
                if hold_writers_off {
                    wrote.notify_one();
                }
            }
            Err(error) => {
                tracing::warn!(%error, "SQLite checkpoint failed; the next write tries again");
                connection = None;
            }
        }
    }
    if let Some(open) = connection {
        let _ = open.close().await;
    }
}

/// One PASSIVE checkpoint: whether it was blocked, the WAL's pages, and how many of them are copied.
#[expect(
    clippy::disallowed_methods,
    reason = "a checkpoint is no store statement: it is the file's upkeep, and counts in no operation's budget"
)]
async fn checkpoint(connection: &mut SqliteConnection) -> sqlx::Result<(i64, i64, i64)> {
    sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
        .fetch_one(connection)
        .await
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::{
        Store as _, StoreOptions,
        contract::AgentSessionStore as _,
        domain::{ids::SessionId, session::NewSession},
        sqlite::SqliteStore,
    };

    fn main_file_bytes(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).map_or(0, |meta| meta.len())
    }

    #[tokio::test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test reads the connection's pragma, which no store statement does"
    )]
    async fn commits_leave_the_checkpoint_to_the_checkpointer() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("checkpoints.sqlite3");
        let store = SqliteStore::connect(
            &format!("sqlite://{}", path.display()),
            StoreOptions::default(),
        )
        .await
        .expect("store");
        store.migrate().await.expect("migrate");
        let (pages,): (i64,) = sqlx::query_as("PRAGMA wal_autocheckpoint")
            .fetch_one(store.pool())
            .await
            .expect("pragma");
        assert_eq!(pages, 0, "no commit checkpoints on its own");

        // Everything written so far (the schema) is in the WAL: no commit copied it into the main file.
        let before = main_file_bytes(&path);
        for i in 0..50 {
            store
                .register_session(NewSession {
                    id: SessionId::parse(format!("checkpointed-{i}")).expect("id"),
                    title: Some("x".repeat(150)),
                    agent: None,
                })
                .await
                .expect("session");
        }
        // The checkpointer, woken by those commits, copies them into the main file.
        let give_up = Instant::now() + Duration::from_secs(30);
        while main_file_bytes(&path) <= before && Instant::now() < give_up {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            main_file_bytes(&path) > before,
            "the main file grew from {before} bytes: the checkpointer never ran"
        );
    }
}
