//! Backups of an embedded (SQLite) database: a consistent copy taken while Anteroom serves, checked before it
//! is kept; putting one back while nothing serves; and the scheduled copies with their pruning
//! (docs/operations.md#backup-and-restore). PostgreSQL is backed up with its own `pg_dump`.

use std::{
    fs::File,
    path::{Path, PathBuf},
};

use anteroom_domain::clock::{Clock, SystemClock};
use anteroom_store::{
    Backend, SqliteFileReport, Store, checkpoint_sqlite_file, copy_sqlite_file, inspect_sqlite_file,
};
use anyhow::{Context, bail};
use sqlx::sqlite::SqliteConnectOptions;

/// The scheduled backups' names: `anteroom-20261204T031500Z.sqlite3`, which sort by time.
const SCHEDULED_PREFIX: &str = "anteroom-";
const SCHEDULED_SUFFIX: &str = ".sqlite3";

/// The scheduled backup (`ANTEROOM_BACKUP_CRON`, `ANTEROOM_BACKUP_DIR`, `ANTEROOM_BACKUP_KEEP`).
#[derive(Debug, Clone)]
pub struct BackupSchedule {
    /// Six fields, seconds first, like the other schedules.
    pub cron: String,
    pub folder: PathBuf,
    /// How many scheduled backups stay; older ones are removed after each new one.
    pub keep: usize,
}

/// What a backup holds, once checked.
#[derive(Debug)]
pub struct BackupReport {
    pub path: PathBuf,
    pub bytes: u64,
    pub file: SqliteFileReport,
}

impl std::fmt::Display for BackupReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} bytes, schema version {}, {} questions, integrity ok",
            self.path.display(),
            self.bytes,
            self.file
                .schema
                .database_version()
                .map_or_else(|| "none".to_owned(), |version| version.to_string()),
            self.file.rounds.unwrap_or(0)
        )
    }
}

/// The file a `sqlite:` URL names, or `None` for an in-memory database.
pub fn sqlite_file(database_url: &str) -> anyhow::Result<Option<PathBuf>> {
    use std::str::FromStr;
    let options = SqliteConnectOptions::from_str(database_url)
        .with_context(|| format!("{database_url:?} is not a SQLite database URL"))?;
    // sqlx renames an in-memory database to a made-up file name: the URL says what it is.
    if database_url.contains(":memory:") || database_url.contains("mode=memory") {
        return Ok(None);
    }
    let file = options.get_filename();
    Ok((!file.as_os_str().is_empty()).then(|| file.to_path_buf()))
}

/// The SQLite file `database_url` names, which must exist: a command that only reads a database must not
/// create an empty one at a mistyped path.
pub fn existing_sqlite_file(database_url: &str) -> anyhow::Result<PathBuf> {
    let path = sqlite_file(database_url)?.context("an in-memory database has no file")?;
    if !path.is_file() {
        bail!("there is no database at {}", path.display());
    }
    Ok(path)
}

/// Writes a consistent copy of `store`'s database to `to` (which must not exist), then checks it: the copy
/// is first written beside `to` under a temporary name, so a crash never leaves a half file under the name.
pub async fn back_up(store: &dyn Store, to: &Path) -> anyhow::Result<BackupReport> {
    if store.backend() != Backend::Sqlite {
        // The store's error says how (pg_dump).
        store.backup_to(to).await?;
    }
    if to.exists() {
        bail!(
            "{} already exists; a backup never overwrites a file",
            to.display()
        );
    }
    let partial = with_suffix(to, ".partial");
    // A partial file left by a crash is ours to replace.
    let _ = std::fs::remove_file(&partial);
    store
        .backup_to(&partial)
        .await
        .with_context(|| format!("cannot write {}", partial.display()))?;
    let file = checked_or_removed(&partial).await?;
    // `VACUUM INTO` does not sync what it wrote: the copy is on disk before its name says it is done.
    File::open(&partial)?.sync_all()?;
    std::fs::rename(&partial, to)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), to.display()))?;
    sync_folder_of(to)?;
    Ok(BackupReport {
        bytes: std::fs::metadata(to)?.len(),
        path: to.to_path_buf(),
        file,
    })
}

/// Checks a backup file: intact, an Anteroom database, and not newer than this binary.
async fn check(path: &Path) -> anyhow::Result<SqliteFileReport> {
    let file = inspect_sqlite_file(path)
        .await
        .with_context(|| format!("{} is not a readable SQLite database", path.display()))?;
    if !file.is_intact() {
        bail!(
            "{} failed its integrity check: {}",
            path.display(),
            file.integrity.join("; ")
        );
    }
    if file.schema.database_version().is_none() {
        bail!("{} holds no Anteroom schema", path.display());
    }
    if let Some(refusal) = file.schema.refusal() {
        bail!("{}: {refusal}", path.display());
    }
    Ok(file)
}

/// [`check`]s a copy this command just wrote, removing it when it fails.
async fn checked_or_removed(copy: &Path) -> anyhow::Result<SqliteFileReport> {
    let checked = check(copy).await;
    if checked.is_err() {
        let _ = std::fs::remove_file(copy);
    }
    checked
}

/// Marks a SQLite database as served, with a shared `flock` on `FILE.lock` beside it, held from before the
/// first connection until the instance ends; a restore needs the lock alone, so it refuses while any instance
/// serves the database, and an instance refuses to start while a restore runs. The lock is on a file of its own,
/// never renamed and never opened by SQLite (closing another descriptor of the database would drop SQLite's own
/// locks).
#[derive(Debug)]
pub struct InUse(
    #[allow(
        dead_code,
        reason = "held, never read: the lock lasts as long as the file is open"
    )]
    File,
);

impl InUse {
    /// Marks `database_url`'s database as served (nothing for PostgreSQL or an in-memory database).
    pub fn mark(database_url: &str) -> anyhow::Result<Option<Self>> {
        if Backend::from_url(database_url)? != Backend::Sqlite {
            return Ok(None);
        }
        let Some(path) = sqlite_file(database_url)? else {
            return Ok(None);
        };
        let lock = open_lock_file(&path)?;
        match lock.try_lock_shared() {
            Ok(()) => Ok(Some(Self(lock))),
            Err(std::fs::TryLockError::WouldBlock) => bail!(
                "{} is being restored (`anteroom restore` holds {}); start again when it is done",
                path.display(),
                lock_path(&path).display()
            ),
            Err(std::fs::TryLockError::Error(error)) => {
                Err(error).with_context(|| format!("cannot lock {}", lock_path(&path).display()))
            }
        }
    }
}

fn lock_path(database: &Path) -> PathBuf {
    with_suffix(database, ".lock")
}

fn open_lock_file(database: &Path) -> anyhow::Result<File> {
    let path = lock_path(database);
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// Makes renames in `path`'s folder durable.
fn sync_folder_of(path: &Path) -> anyhow::Result<()> {
    let folder = path
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(folder)?.sync_all()?;
    Ok(())
}

/// What a restore did.
#[derive(Debug)]
pub struct RestoreReport {
    pub restored: BackupReport,
    /// Where the database it replaced was kept (checkpointed: the one file is all of it), if there was one.
    pub kept: Option<PathBuf>,
}

/// Puts the backup `from` in place of the SQLite database `database_url` names, after checking it; refuses
/// while any instance serves that database. The replaced database is kept beside it, renamed.
pub async fn restore(from: &Path, database_url: &str) -> anyhow::Result<RestoreReport> {
    if Backend::from_url(database_url)? != Backend::Sqlite {
        bail!(
            "a PostgreSQL database is restored with its own tools: pg_restore --no-owner --dbname \
             NEW_DATABASE_URL anteroom.dump (docs/operations.md#backup-and-restore)"
        );
    }
    let target =
        sqlite_file(database_url)?.context("an in-memory database cannot be restored into")?;
    check(from).await?;

    // Held until the new file is in place: no instance serves the database meanwhile, nor starts.
    let lock = open_lock_file(&target)?;
    if lock.try_lock().is_err() {
        bail!(
            "{} is in use by a running Anteroom; stop it first (a restore replaces the file)",
            target.display()
        );
    }
    let incoming = with_suffix(&target, ".restoring");
    let _ = std::fs::remove_file(&incoming);
    // Through SQLite, so whatever the backup's own WAL holds comes too; then the copy itself is checked.
    copy_sqlite_file(from, &incoming)
        .await
        .with_context(|| format!("cannot copy {} to {}", from.display(), incoming.display()))?;
    let file = checked_or_removed(&incoming).await?;
    File::open(&incoming)?.sync_all()?;

    let kept = if target.exists() {
        // The WAL's contents into the main file first: the kept file is then the whole old database, and no
        // old WAL is left for the restored file to replay.
        checkpoint_sqlite_file(&target)
            .await
            .with_context(|| format!("cannot checkpoint {}", target.display()))?;
        // The real clock, as a store would read it: no store is open during a restore.
        let stamp = SystemClock.now().format("%Y%m%dT%H%M%SZ");
        let kept = with_suffix(&target, &format!(".before-restore-{stamp}"));
        std::fs::rename(&target, &kept)?;
        Some(kept)
    } else {
        None
    };
    // Emptied by the checkpoint, or stale: they belong to no file now.
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(with_suffix(&target, suffix));
    }
    std::fs::rename(&incoming, &target)?;
    sync_folder_of(&target)?;
    drop(lock);
    Ok(RestoreReport {
        restored: BackupReport {
            bytes: std::fs::metadata(&target)?.len(),
            path: target,
            file,
        },
        kept,
    })
}

/// A scheduled backup into `folder`, then the oldest scheduled backups beyond `keep` removed.
pub async fn scheduled(
    store: &dyn Store,
    folder: &Path,
    keep: usize,
) -> anyhow::Result<BackupReport> {
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let name = format!(
        "{SCHEDULED_PREFIX}{}{SCHEDULED_SUFFIX}",
        store.now().format("%Y%m%dT%H%M%S%.3fZ")
    );
    let report = back_up(store, &folder.join(name)).await?;
    let mut taken: Vec<PathBuf> = std::fs::read_dir(folder)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(is_scheduled_backup_name)
        })
        .collect();
    taken.sort();
    let surplus = taken.len().saturating_sub(keep.max(1));
    for old in taken.into_iter().take(surplus) {
        if let Err(error) = std::fs::remove_file(&old) {
            tracing::warn!(%error, file = %old.display(), "backup: cannot remove an old backup");
        }
    }
    Ok(report)
}

/// Whether `name` is one the scheduled backup gives (`anteroom-20261204T031500.000Z.sqlite3`) and nothing else:
/// the pruning removes only those.
fn is_scheduled_backup_name(name: &str) -> bool {
    let Some(stamp) = name
        .strip_prefix(SCHEDULED_PREFIX)
        .and_then(|rest| rest.strip_suffix(SCHEDULED_SUFFIX))
    else {
        return false;
    };
    stamp.len() == "20261204T031500.000Z".len()
        && stamp.char_indices().all(|(at, c)| match at {
            8 => c == 'T',
            15 => c == '.',
            19 => c == 'Z',
            _ => c.is_ascii_digit(),
        })
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_scheduled_backups_own_names_are_pruned_and_memory_has_no_file() {
        assert!(is_scheduled_backup_name(
            "anteroom-20261204T031500.000Z.sqlite3"
        ));
        for other in [
            "anteroom-1.sqlite3",
            "anteroom.sqlite3",
            "anteroom-20261204T031500.000Z.sqlite3-wal",
            "anteroom-before-upgrade.sqlite3",
            "anteroom-2026120XT031500.000Z.sqlite3",
        ] {
            assert!(!is_scheduled_backup_name(other), "{other}");
        }
        assert_eq!(sqlite_file("sqlite::memory:").expect("url"), None);
        assert_eq!(
            sqlite_file("sqlite://data/anteroom.sqlite3").expect("url"),
            Some(PathBuf::from("data/anteroom.sqlite3"))
        );
    }
}
