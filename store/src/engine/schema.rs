//! The schema's upkeep: applying this binary's migrations (under the database's migration lock), reading
//! which are applied, and copying an embedded database while it runs.

use std::path::Path;

use sqlx::migrate::MigrateError;

use super::SqlStore;
use crate::{
    Backend, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    migrations::{ANTEROOM_VERSION, AppliedMigration, KnownMigration, SchemaStatus},
    records::to_ms,
};

/// What `anteroom backup` says on PostgreSQL, where the database's own tool takes a consistent copy.
const USE_PG_DUMP: &str = "a PostgreSQL database is backed up with its own tools: pg_dump --format=custom \
     --file anteroom.dump \"$DATABASE_URL\" (restore with pg_restore --no-owner --dbname NEW_DATABASE_URL \
     anteroom.dump); see docs/operations.md#backup-and-restore";

impl<D: Dialect> SqlStore<D> {
    /// Applies the migrations the database lacks. sqlx takes the database's migration lock first (a
    /// PostgreSQL advisory lock) and reads what is applied under it, so instances starting together apply each
    /// migration once; a database a newer binary upgraded is refused before anything is applied.
    pub(super) async fn apply_migrations(&self) -> StoreResult<()> {
        let status = self.read_schema_status().await?;
        if let Some(refusal) = status.refusal() {
            return Err(refusal);
        }
        match D::migrate(&self.pool).await {
            Ok(()) => {
                self.execute(
                    Statement::new(
                        "INSERT INTO anteroom_releases (version, first_started_at_ms) VALUES ($1, $2) \
                         ON CONFLICT (version) DO NOTHING",
                    )
                    .bind(ANTEROOM_VERSION)
                    .bind(to_ms(self.clock_now())),
                )
                .await?;
                Ok(())
            }
            // A newer instance upgraded the database between the read above and the lock.
            Err(MigrateError::VersionMissing(_)) => Err(self
                .read_schema_status()
                .await?
                .refusal()
                .unwrap_or(StoreError::Migration(MigrateError::VersionMissing(0)))),
            Err(error) => Err(error.into()),
        }
    }

    pub(super) async fn read_schema_status(&self) -> StoreResult<SchemaStatus> {
        let known = D::migrator()
            .iter()
            .filter(|migration| migration.migration_type.is_up_migration())
            .map(|migration| KnownMigration {
                version: migration.version,
                description: migration.description.to_string(),
            })
            .collect();
        let applied = if self.has_table("_sqlx_migrations").await? {
            self.all::<(i64, String, String, bool)>(Statement::new(
                "SELECT version, description, CAST(installed_on AS TEXT), success \
                 FROM _sqlx_migrations ORDER BY version",
            ))
            .await?
            .into_iter()
            .map(
                |(version, description, applied_at, success)| AppliedMigration {
                    version,
                    description,
                    applied_at,
                    success,
                },
            )
            .collect()
        } else {
            Vec::new()
        };
        let newest_release = if self.has_table("anteroom_releases").await? {
            self.optional::<(String,)>(Statement::new(
                "SELECT version FROM anteroom_releases ORDER BY first_started_at_ms DESC, version DESC LIMIT 1",
            ))
            .await?
            .map(|(version,)| version)
        } else {
            None
        };
        Ok(SchemaStatus {
            known,
            applied,
            newest_release,
        })
    }

    /// Whether the table `name` (one of the store's own names, never input) exists in the current schema.
    async fn has_table(&self, name: &'static str) -> StoreResult<bool> {
        let sql = match D::BACKEND {
            Backend::Sqlite => {
                "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = $1"
            }
            Backend::Postgres => "SELECT to_regclass($1) IS NOT NULL",
        };
        let (exists,): (bool,) = self.one(Statement::new(sql).bind(name)).await?;
        Ok(exists)
    }

    pub(super) async fn read_schema_version(&self) -> StoreResult<Option<i64>> {
        let (version,): (Option<i64>,) = self
            .one(Statement::new(
                "SELECT MAX(version) FROM _sqlx_migrations WHERE success",
            ))
            .await?;
        Ok(version)
    }

    /// `VACUUM INTO` reads one snapshot of the database, as any reader does, so writers go on meanwhile (in
    /// WAL mode a reader never blocks a writer), and writes a compact copy that needs no WAL beside it.
    pub(super) async fn copy_into(&self, path: &Path) -> StoreResult<()> {
        if D::BACKEND != Backend::Sqlite {
            return Err(StoreError::NotOnThisBackend(USE_PG_DUMP));
        }
        let path = path.to_str().ok_or(StoreError::NotOnThisBackend(
            "the backup's path must be valid UTF-8",
        ))?;
        self.execute(Statement::new("VACUUM INTO $1").bind(path.to_owned()))
            .await?;
        Ok(())
    }
}
