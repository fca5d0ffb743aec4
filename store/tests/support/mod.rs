//! Real databases for the store tests: a fresh SQLite file, or a PostgreSQL schema of the test's own,
//! each with a manual clock so expiry is tested without sleeping.

#![allow(dead_code, reason = "each suite uses only some of the helpers")]

use std::sync::Arc;

use anteroom_store::{
    domain::{clock::ManualClock, expiry::ExpiryPolicy, limits::Limits, webhook::WebhookEndpoint},
    {
        Backend, PostgresStore, SqliteStore, Store, StoreOptions,
        testing::{StoreTesting, TestSchema},
    },
};
use chrono::{DateTime, Utc};
use sqlx::Executor;

pub use anteroom_store::testing::postgres_url;

/// A fixed, readable start time for every test.
pub fn start_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z")
        .map(|at| at.with_timezone(&Utc))
        .expect("valid start time")
}

/// A store on a real database plus the clock it reads.
pub struct Harness {
    pub store: Arc<dyn StoreTesting>,
    pub clock: ManualClock,
    cleanup: Cleanup,
}

enum Cleanup {
    Sqlite {
        _dir: tempfile::TempDir,
        pool: sqlx::SqlitePool,
        url: String,
    },
    Postgres(TestSchema),
}

fn options(clock: &ManualClock, expiry: ExpiryPolicy) -> StoreOptions {
    StoreOptions {
        clock: Arc::new(clock.clone()),
        expiry,
        limits: Limits::default(),
        observer: None,
        webhooks: vec![
            WebhookEndpoint::parse("http://127.0.0.1:9/hook").expect("endpoint"),
            WebhookEndpoint::parse("slack:http://127.0.0.1:9/slack").expect("endpoint"),
        ],
    }
}

impl Harness {
    /// A store on `backend`; PostgreSQL needs `ANTEROOM_TEST_POSTGRES_URL`.
    pub async fn new(backend: Backend) -> Self {
        match backend {
            Backend::Sqlite => Self::sqlite().await,
            Backend::Postgres => Self::postgres()
                .await
                .expect("built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too"),
        }
    }

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
            cleanup: Cleanup::Sqlite {
                _dir: dir,
                pool,
                url,
            },
        }
    }

    /// A store on a schema of its own, or `None` when `ANTEROOM_TEST_POSTGRES_URL` is not set.
    pub async fn postgres() -> Option<Self> {
        Self::postgres_with(ExpiryPolicy::default()).await
    }

    pub async fn postgres_with(expiry: ExpiryPolicy) -> Option<Self> {
        let url = postgres_url()?;
        let clock = ManualClock::new(start_time());
        let schema = TestSchema::create(&url)
            .await
            .expect("create a test schema");
        let store = PostgresStore::from_pool(schema.pool.clone(), options(&clock, expiry));
        store.migrate().await.expect("migrate PostgreSQL");
        Some(Self {
            store: Arc::new(store),
            clock,
            cleanup: Cleanup::Postgres(schema),
        })
    }

    /// Runs raw SQL behind the store's back (to stage states only a crash or a race could leave).
    pub async fn raw(&self, statement: &str) {
        match &self.cleanup {
            Cleanup::Sqlite { pool, .. } => {
                pool.execute(statement).await.expect("raw SQL on SQLite");
            }
            Cleanup::Postgres(schema) => {
                schema
                    .pool
                    .execute(statement)
                    .await
                    .expect("raw SQL on PostgreSQL");
            }
        }
    }

    /// One nullable integer read behind the store's back: what the database holds, without the store's memory.
    #[expect(
        clippy::disallowed_methods,
        reason = "a test reads behind the store's back to see what the database itself holds"
    )]
    pub async fn raw_integer(&self, query: &str) -> Option<i64> {
        match &self.cleanup {
            Cleanup::Sqlite { pool, .. } => sqlx::query_scalar::<_, Option<i64>>(query)
                .fetch_one(pool)
                .await
                .expect("raw read on SQLite"),
            Cleanup::Postgres(schema) => sqlx::query_scalar::<_, Option<i64>>(query)
                .fetch_one(&schema.pool)
                .await
                .expect("raw read on PostgreSQL"),
        }
    }

    /// A second store on this harness's database, as a restarted process opens it: nothing of the first one's
    /// memory, the same clock.
    pub async fn reopened(&self) -> Arc<dyn StoreTesting> {
        let options = options(&self.clock, ExpiryPolicy::default());
        match &self.cleanup {
            Cleanup::Sqlite { url, .. } => Arc::new(
                SqliteStore::connect(url, options)
                    .await
                    .expect("open SQLite again"),
            ),
            Cleanup::Postgres(schema) => {
                Arc::new(PostgresStore::from_pool(schema.pool.clone(), options))
            }
        }
    }

    /// Another store on the same kind of database, built with another expiry policy.
    pub async fn like_with(&self, expiry: ExpiryPolicy) -> Self {
        match self.cleanup {
            Cleanup::Sqlite { .. } => Self::sqlite_with(expiry).await,
            Cleanup::Postgres(_) => Self::postgres_with(expiry)
                .await
                .expect("a PostgreSQL harness exists, so its URL is set"),
        }
    }

    pub async fn finish(self) {
        if let Cleanup::Postgres(schema) = self.cleanup {
            schema.drop_schema().await.expect("drop test schema");
        }
    }
}

/// Declares each listed `async fn name(h: &Harness)` as a test on SQLite and on PostgreSQL
/// (see `anteroom_store::on_both_backends!`).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        anteroom_store::on_both_backends!(|backend, test| {
            let harness = $crate::support::Harness::new(backend).await;
            test(&harness).await;
            harness.finish().await;
        }; $($name),*);
    };
}
