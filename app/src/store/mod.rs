//! Persistence: one store contract, implemented once for embedded SQLite and once for PostgreSQL.
//!
//! The backend is chosen from the database URL's scheme; each backend carries its own migrations
//! (`migrations/sqlite`, `migrations/postgres`).

mod postgres;
mod sqlite;

use std::sync::Arc;

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// Which database engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Picks the backend from a database URL's scheme.
    pub fn from_url(url: &str) -> Result<Self, StoreError> {
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres)
        } else {
            Err(StoreError::UnsupportedUrl)
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// What can go wrong talking to the database itself (as opposed to a refused state change).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the database URL must start with sqlite: or postgres://")]
    UnsupportedUrl,
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
}

/// The store contract shared by both backends.
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    fn backend(&self) -> Backend;

    /// Applies every migration not yet applied; running it again is a no-op.
    async fn migrate(&self) -> Result<(), StoreError>;

    /// A cheap round trip proving the database answers (for `/readyz`).
    async fn ping(&self) -> Result<(), StoreError>;

    /// How many migrations the database has recorded as applied.
    async fn applied_migrations(&self) -> Result<i64, StoreError>;
}

/// Opens a connection pool for `url` (creating an SQLite file if it does not exist yet). Does not migrate.
pub async fn connect(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match Backend::from_url(url)? {
        Backend::Sqlite => Arc::new(SqliteStore::connect(url).await?),
        Backend::Postgres => Arc::new(PostgresStore::connect(url).await?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_follows_the_url_scheme() {
        assert_eq!(
            Backend::from_url("sqlite://anteroom.db").ok(),
            Some(Backend::Sqlite)
        );
        assert_eq!(
            Backend::from_url("sqlite::memory:").ok(),
            Some(Backend::Sqlite)
        );
        assert_eq!(
            Backend::from_url("postgres://u@h/db").ok(),
            Some(Backend::Postgres)
        );
        assert_eq!(
            Backend::from_url("postgresql://u@h/db").ok(),
            Some(Backend::Postgres)
        );
        assert!(matches!(
            Backend::from_url("mysql://h/db"),
            Err(StoreError::UnsupportedUrl)
        ));
    }
}
