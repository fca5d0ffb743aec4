//! A real `anteroom` server for tests: started on port 0 over a real database (a temporary SQLite file or
//! a PostgreSQL schema of its own), with a manual clock and one API key per role; request helpers, a browser
//! and a pulsemcp-style client. A dev-dependency only: the production binary never compiles it.

pub mod browser;
pub mod budgets;
pub mod pulsemcp;
pub mod requests;
pub mod smtp;

/// The store crate, for [`on_both_backends!`].
pub use anteroom_store;

/// What a test may set of the instance it starts (the kit chooses the database, port, clock and jobs).
pub use anteroom_server::instance::Settings;

use std::{net::SocketAddr, sync::Arc};

use anteroom_server::{
    AppState, credentials,
    instance::{Database, Instance},
};
use anteroom_store::{
    Store,
    domain::{
        access::{ApiKey, Role},
        clock::ManualClock,
    },
    testing::{TestSchema, postgres_url},
};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio::{sync::oneshot, task::JoinHandle};

pub fn start_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z")
        .map(|at| at.with_timezone(&Utc))
        .expect("valid start time")
}

/// Which database a test server runs on.
pub use anteroom_store::Backend;

enum Data {
    /// The database file's directory, removed when the server is dropped.
    Sqlite {
        _dir: tempfile::TempDir,
    },
    Postgres(TestSchema),
    /// Another instance owns the database.
    Shared,
}

/// One API key per role: admin, responder, viewer.
async fn create_keys(store: &Arc<dyn Store>) -> [String; 3] {
    let mut keys = Vec::new();
    for role in [Role::Admin, Role::Responder, Role::Viewer] {
        let secret = credentials::generate(credentials::API_KEY_PREFIX);
        let key = ApiKey {
            id: format!("key-{}", role.as_str()),
            name: role.as_str().to_owned(),
            role,
        };
        store
            .create_api_key(&key, &credentials::hash(&secret), "test")
            .await
            .expect("api key");
        keys.push(secret);
    }
    [keys[0].clone(), keys[1].clone(), keys[2].clone()]
}

/// A lock on a test server's database, held by another connection until dropped.
pub enum DatabaseLock {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

pub struct TestServer {
    pub base: String,
    /// The running server's state, for driving its scheduled jobs directly.
    pub state: AppState,
    pub clock: ManualClock,
    pub store: Arc<dyn Store>,
    pub admin_key: String,
    pub responder_key: String,
    pub viewer_key: String,
    pub http: reqwest::Client,
    /// The database's URL, when the kit opened it by URL (SQLite).
    pub database_url: Option<String>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
    data: Data,
}

impl TestServer {
    /// A server on `db`, or `None` for PostgreSQL when `ANTEROOM_TEST_POSTGRES_URL` is not set.
    pub async fn start(db: Backend) -> Option<Self> {
        Self::start_with(db, Settings::default()).await
    }

    /// A server built from `settings`, except that the kit chooses the database, a free port, a manual clock
    /// and no scheduled jobs (tests run the jobs themselves through [`TestServer::state`]).
    pub async fn start_with(db: Backend, settings: Settings) -> Option<Self> {
        let clock = ManualClock::new(start_time());
        let (database, data) = match db {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temporary directory");
                let url = format!("sqlite://{}", dir.path().join("anteroom.sqlite3").display());
                (Database::Url(url), Data::Sqlite { _dir: dir })
            }
            Backend::Postgres => {
                let schema = TestSchema::create(&postgres_url()?)
                    .await
                    .expect("test schema");
                let database = Database::Postgres {
                    store: schema.pool.clone(),
                    relay: None,
                };
                (database, Data::Postgres(schema))
            }
        };
        let database_url = match &database {
            Database::Url(url) => Some(url.clone()),
            Database::Postgres { .. } => None,
        };
        let instance = Self::build(database, &clock, settings).await;
        let keys = create_keys(&instance.state.store).await;
        let mut server = Self::launch(instance, data, clock, keys);
        server.database_url = database_url;
        Some(server)
    }

    /// Two instances on one PostgreSQL schema, sharing events through LISTEN/NOTIFY.
    pub async fn postgres_pair() -> Option<(Self, Self)> {
        Self::postgres_pair_with(Settings::default()).await
    }

    pub async fn postgres_pair_with(settings: Settings) -> Option<(Self, Self)> {
        let url = postgres_url()?;
        let clock = ManualClock::new(start_time());
        let schema = TestSchema::create(&url).await.expect("test schema");
        let pool = || async {
            schema
                .another_pool(&url)
                .await
                .expect("a pool on the test schema")
        };
        let settings = Settings {
            event_channel: format!("anteroom_test_{}", uuid::Uuid::now_v7().simple()),
            ..settings
        };
        let first = Database::Postgres {
            store: schema.pool.clone(),
            relay: Some(pool().await),
        };
        let second = Database::Postgres {
            store: pool().await,
            relay: Some(pool().await),
        };
        let first = Self::build(first, &clock, settings.clone()).await;
        let second = Self::build(second, &clock, settings).await;
        let keys = create_keys(&first.state.store).await;
        Some((
            Self::launch(first, Data::Postgres(schema), clock.clone(), keys.clone()),
            Self::launch(second, Data::Shared, clock, keys),
        ))
    }

    async fn build(database: Database, clock: &ManualClock, settings: Settings) -> Instance {
        Instance::build(Settings {
            database,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            site_root: Some("target/site".into()),
            schedules: None,
            clock: Arc::new(clock.clone()),
            ..settings
        })
        .await
        .expect("build the instance")
    }

    fn launch(instance: Instance, data: Data, clock: ManualClock, keys: [String; 3]) -> Self {
        let base = format!("http://{}", instance.local_addr);
        let state = instance.state.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(instance.run(async move {
            let _ = stopped.await;
        }));
        let [admin_key, responder_key, viewer_key] = keys;
        Self {
            base,
            store: state.store.clone(),
            state,
            clock,
            admin_key,
            responder_key,
            viewer_key,
            // A request that hangs fails the test instead of the whole run.
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .expect("client"),
            database_url: None,
            stop,
            task,
            data,
        }
    }

    /// How many rows `table` holds now, read beside the server (for counts a budget holds).
    #[expect(
        clippy::disallowed_methods,
        reason = "a test's count beside the server: one statement both databases read alike"
    )]
    pub async fn count_rows(&self, table: &str) -> i64 {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        match &self.data {
            Data::Sqlite { _dir } => {
                let mut connection = sqlite_beside(_dir).await;
                sqlx::query_scalar(&sql)
                    .fetch_one(&mut connection)
                    .await
                    .expect("count")
            }
            Data::Postgres(schema) => {
                let pool = postgres_beside(schema).await;
                sqlx::query_scalar(&sql)
                    .fetch_one(&pool)
                    .await
                    .expect("count")
            }
            Data::Shared => panic!("count through the instance that owns the database"),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Registers a session through the management API; returns its environment block.
    pub async fn session(&self, id: &str) -> Environment {
        let reply = self
            .http
            .post(self.url("/api/v1/sessions"))
            .bearer_auth(&self.admin_key)
            .json(&json!({"id": id, "title": format!("Session {id}")}))
            .send()
            .await
            .expect("POST /api/v1/sessions");
        assert_eq!(reply.status(), 201, "session created");
        let body: Value = reply.json().await.expect("JSON");
        Environment {
            request_url: body["environment"]["ELICITATION_REQUEST_URL"]
                .as_str()
                .expect("request url")
                .to_owned(),
            poll_url: body["environment"]["ELICITATION_POLL_URL"]
                .as_str()
                .expect("poll url")
                .to_owned(),
            session_id: body["environment"]["ELICITATION_SESSION_ID"]
                .as_str()
                .expect("session id")
                .to_owned(),
            token: body["producer_token"].as_str().expect("token").to_owned(),
            body,
        }
    }

    /// GETs `path` with an API key and returns the JSON body.
    pub async fn get_json(&self, path: &str, key: &str) -> Value {
        self.http
            .get(self.url(path))
            .bearer_auth(key)
            .send()
            .await
            .unwrap_or_else(|error| panic!("GET {path}: {error}"))
            .json()
            .await
            .unwrap_or_else(|error| panic!("GET {path} is not JSON: {error}"))
    }

    /// Answers a question the way the original orchestrator's API does.
    pub async fn respond(&self, key: &str, request_id: &str, answer: Value) -> reqwest::Response {
        self.http
            .patch(self.url(&format!("/api/v1/elicitations/{request_id}/respond")))
            .bearer_auth(key)
            .json(&answer)
            .send()
            .await
            .expect("PATCH respond")
    }

    /// Session `session`'s rounds, oldest first, once it has at least `count`: for questions another process
    /// (a wrapper, an agent) asks. Waits up to 60 s (a Python or Node harness starting on a loaded two-core
    /// machine has taken over 20), then fails the test. A session not registered yet has none so far (a process
    /// such as `anteroom run` registers its own).
    pub async fn rounds_once(
        &self,
        session: &str,
        count: usize,
    ) -> Vec<anteroom_store::domain::round::Round> {
        let session = anteroom_store::domain::ids::SessionId::parse(session).expect("session id");
        for _ in 0..3000 {
            let mut rounds = match self.store.list_rounds(&session).await {
                Ok(rounds) => rounds,
                Err(error) if error.is_not_found() => Vec::new(),
                Err(error) => panic!("rounds of {session}: {error:?}"),
            };
            if rounds.len() >= count {
                rounds.sort_by_key(|round| (round.created_at, round.round_id));
                return rounds;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("session {session} never had {count} question(s)");
    }

    /// Session `session`'s first round (oldest first) that is not one of `seen`, once it exists: the next
    /// question a harness asks in a session that already has some.
    pub async fn new_round_once(
        &self,
        session: &str,
        seen: &[anteroom_store::domain::ids::RoundId],
    ) -> anteroom_store::domain::round::Round {
        self.rounds_once(session, seen.len() + 1)
            .await
            .into_iter()
            .find(|round| !seen.contains(&round.round_id))
            .expect("a round not seen before")
    }

    /// Round `id` once `ready` holds of it. Waits up to 60 s, then fails the test with the round as it stood.
    pub async fn round_once(
        &self,
        id: anteroom_store::domain::ids::RoundId,
        ready: impl Fn(&anteroom_store::domain::round::Round) -> bool,
    ) -> anteroom_store::domain::round::Round {
        let mut round = self.store.get_round(id).await.expect("round");
        for _ in 0..3000 {
            if ready(&round) {
                return round;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            round = self.store.get_round(id).await.expect("round");
        }
        panic!(
            "round {id} never got there: {:?} {:?}",
            round.status, round.failure
        );
    }

    /// Answers each request of a round on its own (`{key: {action, content?}}`), as the web app's banner does.
    pub async fn respond_each(
        &self,
        key: &str,
        round_id: &str,
        responses: Value,
    ) -> reqwest::Response {
        self.http
            .post(self.url(&format!("/api/v1/rounds/{round_id}/responses")))
            .bearer_auth(key)
            .json(&serde_json::json!({
                "responses": responses,
                "idempotency_key": format!("test-{}", uuid::Uuid::now_v7()),
            }))
            .send()
            .await
            .expect("POST responses")
    }

    /// Takes the database's write lock (SQLite: `BEGIN IMMEDIATE` on its file) or an exclusive lock on the
    /// sessions table (PostgreSQL) from outside the server, held until the returned guard is dropped: what a
    /// stuck migration, a long transaction or an operator's session looks like to the server.
    pub async fn lock_database(&self) -> DatabaseLock {
        use sqlx::Executor as _;
        match &self.data {
            Data::Sqlite { _dir } => {
                let mut connection = sqlite_beside(_dir).await;
                connection
                    .execute("BEGIN IMMEDIATE")
                    .await
                    .expect("the write lock");
                DatabaseLock::Sqlite(connection)
            }
            Data::Postgres(schema) => {
                let pool = postgres_beside(schema).await;
                let mut transaction = pool.begin().await.expect("a transaction");
                transaction
                    .execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
                    .await
                    .expect("the table lock");
                DatabaseLock::Postgres(transaction)
            }
            Data::Shared => panic!("lock the database through the instance that owns it"),
        }
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task
            .await
            .expect("server task")
            .expect("server stops cleanly");
        if let Data::Postgres(schema) = self.data {
            schema.drop_schema().await.expect("drop schema");
        }
    }
}

/// What an orchestrator hands an MCP server.
pub struct Environment {
    pub request_url: String,
    pub poll_url: String,
    pub session_id: String,
    pub token: String,
    pub body: Value,
}

/// Declares each listed `async fn name(backend: Backend)` as a test on SQLite and on PostgreSQL
/// (see `anteroom_store::on_both_backends!`).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        $crate::anteroom_store::on_both_backends!(|backend, test| test(backend).await; $($name),*);
    };
}

/// Like [`on_both_backends!`], for tests that need the MCP SDK test packages (`cargo xtask test` installs them
/// and sets `ANTEROOM_TEST_MCP_SDKS`): reported as ignored, never as passed, when they are not installed.
#[macro_export]
macro_rules! on_both_backends_with_mcp_sdks {
    ($($name:ident),* $(,)?) => {
        $crate::anteroom_store::on_both_backends!(
            requires(
                anteroom_mcp_sdk_tests,
                "run through `cargo xtask test`, which installs the MCP SDKs",
                "needs the MCP SDKs (cargo xtask test) and ANTEROOM_TEST_POSTGRES_URL"
            )
            |backend, test| test(backend).await; $($name),*
        );
    };
}

/// Declares each listed `async fn name(backend: Backend)` that drives a real harness or MCP SDK (Claude Code,
/// Codex, Gemini CLI and the others, the SDKs under `anteroom wrap`: node and Python processes, the suite's
/// costliest tests) as one test, on SQLite, in a `sqlite` module as [`on_both_backends!`] names them. What such
/// a test checks is the conversation between the harness and Anteroom's routes, which the database does not
/// change: every route it takes runs on PostgreSQL in the rest of the suite, and the store's behaviour runs on
/// both in the store's suite. Running each once took a quarter of the server suite's time away (issue 48).
/// Reported as ignored, never as passed, when the packages are not installed.
#[macro_export]
macro_rules! with_real_harnesses {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(
                    not(anteroom_mcp_sdk_tests),
                    ignore = "run through `cargo xtask test`, which installs the MCP SDKs"
                )]
                async fn $name() {
                    super::$name($crate::Backend::Sqlite).await;
                }
            )*
        }
    };
}

/// A second connection to the test's SQLite file, beside the server's own.
async fn sqlite_beside(dir: &tempfile::TempDir) -> sqlx::SqliteConnection {
    use sqlx::Connection as _;
    let url = format!("sqlite://{}", dir.path().join("anteroom.sqlite3").display());
    sqlx::SqliteConnection::connect(&url)
        .await
        .expect("a second connection to the database file")
}

/// A pool of its own on the test's PostgreSQL schema, beside the server's.
async fn postgres_beside(schema: &TestSchema) -> sqlx::PgPool {
    schema
        .another_pool(&postgres_url().expect("the PostgreSQL URL"))
        .await
        .expect("a pool on the test schema")
}
