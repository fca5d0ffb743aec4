//! Real databases for the store tests: a fresh SQLite file, or a PostgreSQL schema of the test's own,
//! each with a manual clock so expiry is tested without sleeping.

#![allow(dead_code)]

use std::{str::FromStr, sync::Arc};

use anteroom_app::{
    domain::{clock::ManualClock, expiry::ExpiryPolicy, limits::Limits},
    store::{PostgresStore, SqliteStore, Store, StoreOptions},
};
use chrono::{DateTime, Utc};
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

/// A fixed, readable start time for every test.
pub fn start_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z")
        .map(|at| at.with_timezone(&Utc))
        .expect("valid start time")
}

/// A store on a real database plus the clock it reads.
pub struct Harness {
    pub store: Arc<dyn Store>,
    pub clock: ManualClock,
    cleanup: Cleanup,
}

enum Cleanup {
    Sqlite {
        _dir: tempfile::TempDir,
        pool: sqlx::SqlitePool,
    },
    Postgres {
        admin: sqlx::PgPool,
        pool: sqlx::PgPool,
        schema: String,
    },
}

fn options(clock: &ManualClock, expiry: ExpiryPolicy) -> StoreOptions {
    StoreOptions {
        clock: Arc::new(clock.clone()),
        expiry,
        limits: Limits::default(),
    }
}

impl Harness {
    pub async fn sqlite() -> Self {
        Self::sqlite_with(ExpiryPolicy::default()).await
    }

    pub async fn sqlite_with(expiry: ExpiryPolicy) -> Self {
        let clock = ManualClock::new(start_time());
        let dir = tempfile::tempdir().expect("temporary directory");
        let url = format!("sqlite://{}", dir.path().join("anteroom.sqlite3").display());
        let store = SqliteStore::connect(&url, options(&clock, expiry))
            .await
            .expect("open SQLite");
        store.migrate().await.expect("migrate SQLite");
        let pool = store.pool().clone();
        Self {
            store: Arc::new(store),
            clock,
            cleanup: Cleanup::Sqlite { _dir: dir, pool },
        }
    }

    /// A store on a schema of its own, or `None` when `ANTEROOM_TEST_POSTGRES_URL` is not set.
    pub async fn postgres() -> Option<Self> {
        Self::postgres_with(ExpiryPolicy::default()).await
    }

    pub async fn postgres_with(expiry: ExpiryPolicy) -> Option<Self> {
        let url = postgres_url()?;
        let clock = ManualClock::new(start_time());
        let (pool, admin, schema) = postgres_schema(&url).await;
        let store = PostgresStore::from_pool(pool.clone(), options(&clock, expiry));
        store.migrate().await.expect("migrate PostgreSQL");
        Some(Self {
            store: Arc::new(store),
            clock,
            cleanup: Cleanup::Postgres {
                admin,
                pool,
                schema,
            },
        })
    }

    /// Runs raw SQL behind the store's back (to stage states only a crash or a race could leave).
    pub async fn raw(&self, statement: &str) {
        match &self.cleanup {
            Cleanup::Sqlite { pool, .. } => {
                pool.execute(statement).await.expect("raw SQL on SQLite");
            }
            Cleanup::Postgres { pool, .. } => {
                pool.execute(statement)
                    .await
                    .expect("raw SQL on PostgreSQL");
            }
        }
    }

    pub async fn finish(self) {
        if let Cleanup::Postgres {
            admin,
            pool,
            schema,
        } = self.cleanup
        {
            pool.close().await;
            admin
                .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
                .await
                .expect("drop test schema");
        }
    }
}

/// A pool whose connections see only a schema created for this test.
pub async fn postgres_schema(url: &str) -> (sqlx::PgPool, sqlx::PgPool, String) {
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
        .max_connections(12)
        .connect_with(options)
        .await
        .expect("connect to the test schema");
    (pool, admin, schema)
}

/// Declares each listed `async fn name(h: &Harness)` as a test on SQLite and on PostgreSQL.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let harness = $crate::support::Harness::sqlite().await;
                    super::$name(&harness).await;
                    harness.finish().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(harness) = $crate::support::Harness::postgres().await else {
                        return;
                    };
                    super::$name(&harness).await;
                    harness.finish().await;
                }
            )*
        }
    };
}
