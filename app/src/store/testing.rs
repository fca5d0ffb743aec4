//! Helpers for tests that need a real PostgreSQL: a schema of the test's own, dropped afterwards.

use std::str::FromStr;

use sqlx::{
    Executor, PgPool,
    postgres::{PgConnectOptions, PgPoolOptions},
};

/// The PostgreSQL server tests may use; `None` means the PostgreSQL tests are skipped.
pub fn postgres_url() -> Option<String> {
    std::env::var("ANTEROOM_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// A pool whose connections see only a freshly created schema.
pub struct TestSchema {
    pub pool: PgPool,
    admin: PgPool,
    name: String,
}

impl TestSchema {
    pub async fn create(url: &str) -> Result<Self, sqlx::Error> {
        let name = format!("anteroom_test_{}", uuid::Uuid::now_v7().simple());
        let admin = PgPoolOptions::new().max_connections(1).connect(url).await?;
        admin
            .execute(format!("CREATE SCHEMA {name}").as_str())
            .await?;
        let options = PgConnectOptions::from_str(url)?.options([("search_path", name.as_str())]);
        let pool = PgPoolOptions::new()
            .max_connections(12)
            .connect_with(options)
            .await?;
        Ok(Self { pool, admin, name })
    }

    /// The schema's name (for a `search_path` in another process's database URL).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Another pool on the same schema (a second server instance).
    pub async fn another_pool(&self, url: &str) -> Result<PgPool, sqlx::Error> {
        let options =
            PgConnectOptions::from_str(url)?.options([("search_path", self.name.as_str())]);
        PgPoolOptions::new()
            .max_connections(12)
            .connect_with(options)
            .await
    }

    pub async fn drop_schema(self) -> Result<(), sqlx::Error> {
        self.pool.close().await;
        self.admin
            .execute(format!("DROP SCHEMA {} CASCADE", self.name).as_str())
            .await?;
        Ok(())
    }
}
