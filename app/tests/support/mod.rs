//! Real databases for the store tests: a fresh SQLite file, or a PostgreSQL schema of the test's own.

#![allow(dead_code)]

use std::{str::FromStr, sync::Arc};

use anteroom_app::store::{PostgresStore, SqliteStore, Store};
use sqlx::{
    Executor,
    postgres::{PgConnectOptions, PgPoolOptions},
};

/// The PostgreSQL server the tests may use; `None` means the PostgreSQL tests are skipped.
pub fn postgres_url() -> Option<String> {
    std::env::var("ANTEROOM_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// A store on a temporary SQLite file, deleted when the returned guard drops.
pub async fn sqlite_store() -> (Arc<dyn Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!("sqlite://{}", dir.path().join("anteroom.sqlite3").display());
    let store = SqliteStore::connect(&url).await.expect("open SQLite");
    (Arc::new(store), dir)
}

/// A store on a PostgreSQL schema created for this test alone, so tests run in parallel and leave nothing
/// behind (call [`PostgresSchema::drop`] at the end).
pub async fn postgres_store(url: &str) -> (Arc<dyn Store>, PostgresSchema) {
    let schema = format!("anteroom_test_{}", uuid::Uuid::now_v7().simple());
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .expect("connect to ANTEROOM_TEST_POSTGRES_URL");
    admin
        .execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .expect("create test schema");
    let options = PgConnectOptions::from_str(url)
        .expect("parse ANTEROOM_TEST_POSTGRES_URL")
        .options([("search_path", schema.as_str())]);
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .connect_with(options)
        .await
        .expect("connect to the test schema");
    (
        Arc::new(PostgresStore::from_pool(pool)),
        PostgresSchema { admin, schema },
    )
}

/// A test's own PostgreSQL schema.
pub struct PostgresSchema {
    admin: sqlx::PgPool,
    schema: String,
}

impl PostgresSchema {
    pub async fn drop(self) {
        self.admin
            .execute(format!("DROP SCHEMA {} CASCADE", self.schema).as_str())
            .await
            .expect("drop test schema");
    }
}
