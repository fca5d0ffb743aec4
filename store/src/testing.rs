//! What only tests use of the store: reads kept off the production contract ([`StoreTesting`]), a PostgreSQL
//! schema of the test's own (dropped afterwards), and the both-backends test macro.

use std::str::FromStr;

use crate::{
    Store, StoreResult,
    domain::{ids::SessionId, round::Round},
};

use sqlx::{
    Executor, PgPool,
    postgres::{PgConnectOptions, PgPoolOptions},
};

/// Reads only tests need, kept off the production [`Store`] contract; implemented by every store.
#[async_trait::async_trait]
pub trait StoreTesting: Store {
    /// How many migrations the database has recorded as applied.
    async fn applied_migrations(&self) -> StoreResult<i64>;

    /// The oldest pending round of each of `sessions` that has one.
    async fn oldest_open_rounds(&self, sessions: &[SessionId]) -> StoreResult<Vec<Round>>;

    /// How many statements the store's open connections keep prepared, summed over them.
    async fn kept_prepared_statements(&self) -> StoreResult<usize>;
}

/// The PostgreSQL server tests may use; `None` means the PostgreSQL tests are skipped.
pub fn postgres_url() -> Option<String> {
    std::env::var("ANTEROOM_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// A pool whose connections see only a freshly created schema.
/// Dropped at the end of its test with [`TestSchema::drop_schema`], or — when the test panicked before that — by
/// its `Drop`, so a failing test leaves no schema behind.
pub struct TestSchema {
    pub pool: PgPool,
    admin: PgPool,
    name: String,
    url: String,
    dropped: bool,
}

impl TestSchema {
    pub async fn create(url: &str) -> Result<Self, sqlx::Error> {
        let name = format!("anteroom_test_{}", uuid::Uuid::now_v7().simple());
        let admin = PgPoolOptions::new().max_connections(1).connect(url).await?;
        admin
            .execute(format!("CREATE SCHEMA {name}").as_str())
            .await?;
        let options = PgConnectOptions::from_str(url)?
            .options([("search_path", name.as_str())])
            .options(crate::postgres::SESSION_LIMITS);
        let pool = PgPoolOptions::new()
            .max_connections(12)
            .connect_with(options)
            .await?;
        Ok(Self {
            pool,
            admin,
            name,
            url: url.to_owned(),
            dropped: false,
        })
    }

    /// The schema's name (for a `search_path` in another process's database URL).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Another pool on the same schema (a second server instance).
    pub async fn another_pool(&self, url: &str) -> Result<PgPool, sqlx::Error> {
        let options = PgConnectOptions::from_str(url)?
            .options([("search_path", self.name.as_str())])
            .options(crate::postgres::SESSION_LIMITS);
        PgPoolOptions::new()
            .max_connections(12)
            .connect_with(options)
            .await
    }

    pub async fn drop_schema(mut self) -> Result<(), sqlx::Error> {
        self.pool.close().await;
        self.admin
            .execute(format!("DROP SCHEMA {} CASCADE", self.name).as_str())
            .await?;
        self.dropped = true;
        Ok(())
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        // The test ended without dropping its schema (it panicked): drop it on a thread of its own, since this
        // may run inside the test's runtime, which cannot block on its own futures.
        let (url, name) = (self.url.clone(), self.name.clone());
        let dropping = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                if let Ok(admin) = PgPoolOptions::new().max_connections(1).connect(&url).await {
                    let _ = admin
                        .execute(format!("DROP SCHEMA IF EXISTS {name} CASCADE").as_str())
                        .await;
                    admin.close().await;
                }
            });
        });
        let _ = dropping.join();
    }
}

/// Declares each listed test function twice, as `sqlite::name` and `postgres::name`, each running `$run` with
/// `$backend` bound to its [`crate::Backend`] and `$test` to the function. The PostgreSQL twin is reported as
/// ignored (skipped, never passed) when the crate was built without `ANTEROOM_TEST_POSTGRES_URL` (the
/// `anteroom_postgres_tests` cfg of `store/build.rs`), and fails when the URL was there at build time but not
/// at run time.
///
/// Each suite wraps it once, e.g. `on_both_backends!(|backend, test| test(&Harness::new(backend).await).await; a, b)`.
/// Tests that need more than a database name it first: `requires(cfg, "why", "why, and PostgreSQL")` ignores
/// both twins unless `cfg` holds (the two reasons are the SQLite twin's and the PostgreSQL twin's).
#[macro_export]
macro_rules! on_both_backends {
    (|$backend:ident, $test:ident| $run:expr; $($name:ident),* $(,)?) => {
        $crate::on_both_backends!(
            requires(all(), "", "set ANTEROOM_TEST_POSTGRES_URL to run the PostgreSQL tests")
            |$backend, $test| $run; $($name),*
        );
    };
    (
        requires($needs:meta, $why_sqlite:literal, $why_postgres:literal)
        |$backend:ident, $test:ident| $run:expr; $($name:ident),* $(,)?
    ) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(not($needs), ignore = $why_sqlite)]
                async fn $name() {
                    let $backend = $crate::Backend::Sqlite;
                    let $test = super::$name;
                    $run;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(not(all(anteroom_postgres_tests, $needs)), ignore = $why_postgres)]
                async fn $name() {
                    assert!(
                        $crate::testing::postgres_url().is_some(),
                        "built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too"
                    );
                    let $backend = $crate::Backend::Postgres;
                    let $test = super::$name;
                    $run;
                }
            )*
        }
    };
}
