//! The store on PostgreSQL, for several Anteroom instances sharing one database.

use std::{sync::Arc, time::Duration as StdDuration};

use sqlx::{PgPool, Postgres, postgres::PgPoolOptions};

use super::{StoreContext, StoreOptions, engine::sql_store};

/// The PostgreSQL implementation of [`Store`].
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    ctx: Arc<StoreContext>,
}

impl PostgresStore {
    const BACKEND: crate::Backend = crate::Backend::Postgres;

    pub async fn connect(url: &str, options: StoreOptions) -> StoreResult<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(StdDuration::from_secs(5))
            .connect(url)
            .await?;
        Ok(Self::from_pool(pool, options))
    }

    /// Wraps an existing pool (tests use this to point a store at a schema of their own).
    pub fn from_pool(pool: PgPool, options: StoreOptions) -> Self {
        Self {
            pool,
            ctx: Arc::new(StoreContext::new(options)),
        }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn run_migrations(&self) -> StoreResult<()> {
        sqlx::migrate!("../migrations/postgres")
            .run(&self.pool)
            .await?;
        Ok(())
    }

    /// Rows read for writing are locked with `FOR UPDATE`, so concurrent writers queue per round.
    async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, Postgres>> {
        Ok(self.pool.begin().await?)
    }
}

sql_store!(PostgresStore, Postgres, lock = " FOR UPDATE");
