//! Backups of an embedded (SQLite) database: a consistent copy taken while Anteroom serves, checked before it
//! is kept; putting one back while nothing serves; and the scheduled copies with their pruning
//! (docs/operations.md#backup-and-restore). PostgreSQL is backed up with its own `pg_dump`.

use std::{
    fs::File,
    path::{Path, PathBuf},
};

use anteroom_store::{Backend, SqliteFileReport, Store, inspect_sqlite_file};
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
    let file = options.get_filename();
    Ok((!file.as_os_str().is_empty() && file != Path::new(":memory:")).then(|| file.to_path_buf()))
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
    let file = match check(&partial).await {
        Ok(file) => file,
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            return Err(error);
        }
    };
    std::fs::rename(&partial, to)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), to.display()))?;
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

/// Holds a shared lock on a SQLite database's file while an instance serves it, so that a restore (which
/// needs the lock alone) refuses to replace a database in use. SQLite's own locks are POSIX record locks on
/// the same file; these are `flock` locks, which Linux keeps apart from them.
#[derive(Debug)]
pub struct InUse(
    #[allow(
        dead_code,
        reason = "held, never read: the lock lasts as long as the file is open"
    )]
    File,
);

impl InUse {
    /// Marks `database_url`'s file as in use, when it names a file that exists.
    pub fn mark(database_url: &str) -> anyhow::Result<Option<Self>> {
        let Some(path) = sqlite_file(database_url)? else {
            return Ok(None);
        };
        let Ok(file) = File::open(&path) else {
            return Ok(None);
        };
        file.lock_shared()
            .with_context(|| format!("cannot mark {} as in use", path.display()))?;
        Ok(Some(Self(file)))
    }
}

/// What a restore did.
#[derive(Debug)]
pub struct RestoreReport {
    pub restored: BackupReport,
    /// Where the database it replaced was kept (with its WAL), if there was one.
    pub kept: Option<PathBuf>,
}

/// Puts the backup `from` in place of the SQLite database `database_url` names, after checking it; refuses
/// while any instance serves that database. The replaced database is kept beside it, renamed.
#[expect(
    clippy::disallowed_methods,
    reason = "the kept file's name carries the wall-clock time of the restore; no store is open to ask"
)]
pub async fn restore(from: &Path, database_url: &str) -> anyhow::Result<RestoreReport> {
    if Backend::from_url(database_url)? != Backend::Sqlite {
        bail!(
            "a PostgreSQL database is restored with its own tools: pg_restore --no-owner --dbname \
             NEW_DATABASE_URL anteroom.dump (docs/operations.md#backup-and-restore)"
        );
    }
    let target =
        sqlite_file(database_url)?.context("an in-memory database cannot be restored into")?;
    let file = check(from).await?;

    // Held until the new file is in place: a server starting meanwhile waits for nothing, but a restore
    // never replaces a file a running server has open.
    let _exclusive = match File::open(&target) {
        Ok(existing) => {
            if existing.try_lock().is_err() {
                bail!(
                    "{} is in use by a running Anteroom; stop it first (a restore replaces the file)",
                    target.display()
                );
            }
            Some(existing)
        }
        Err(_) => None,
    };
    let incoming = with_suffix(&target, ".restoring");
    std::fs::copy(from, &incoming)
        .with_context(|| format!("cannot copy {} to {}", from.display(), incoming.display()))?;
    File::open(&incoming)?.sync_all()?;

    let kept = if target.exists() {
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let kept = with_suffix(&target, &format!(".before-restore-{stamp}"));
        // The WAL and its index travel with their database, or the next open would apply the old WAL to
        // the restored file.
        for suffix in ["-wal", "-shm"] {
            let companion = with_suffix(&target, suffix);
            if companion.exists() {
                std::fs::rename(&companion, with_suffix(&kept, suffix))?;
            }
        }
        std::fs::rename(&target, &kept)?;
        Some(kept)
    } else {
        None
    };
    std::fs::rename(&incoming, &target)?;
    if let Some(folder) = target
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
    {
        // The renames are durable once the folder is.
        File::open(folder)?.sync_all()?;
    }
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
                .is_some_and(|name| {
                    name.starts_with(SCHEDULED_PREFIX) && name.ends_with(SCHEDULED_SUFFIX)
                })
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

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
