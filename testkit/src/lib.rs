//! A real `anteroom` server for tests: started on port 0 over a real database (a temporary SQLite file or
//! a PostgreSQL schema of its own), with a manual clock and one API key per role; request helpers, a browser
//! and a pulsemcp-style client. A dev-dependency only: the production binary never compiles it.

pub mod browser;
pub mod pulsemcp;
pub mod requests;

/// The store crate, for [`on_both_backends!`].
pub use anteroom_store;

use std::sync::Arc;

use anteroom_server::{
    ApiConfig, AppState, credentials, events::EventHub, state::ConnectionLimits,
};
use anteroom_store::{
    PostgresStore, SqliteStore, Store, StoreOptions,
    domain::{
        access::{ApiKey, Role},
        clock::ManualClock,
        webhook::WebhookEndpoint,
    },
    testing::{TestBackend, TestSchema, postgres_url},
};
use chrono::{DateTime, Utc};
use leptos::config::LeptosOptions;
use serde_json::{Value, json};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};

pub fn start_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z")
        .map(|at| at.with_timezone(&Utc))
        .expect("valid start time")
}

#[derive(Debug, Clone, Copy)]
pub enum Db {
    Sqlite,
    Postgres,
}

impl From<TestBackend> for Db {
    fn from(backend: TestBackend) -> Self {
        match backend {
            TestBackend::Sqlite => Self::Sqlite,
            TestBackend::Postgres => Self::Postgres,
        }
    }
}

enum Data {
    /// The database file's directory, removed when the server is dropped.
    Sqlite {
        _dir: tempfile::TempDir,
    },
    Postgres(TestSchema),
    /// Another instance owns the database.
    Shared,
}

fn store_options(clock: &ManualClock, events: &EventHub, options: &Options) -> StoreOptions {
    StoreOptions {
        clock: Arc::new(clock.clone()),
        observer: Some(Arc::new(events.clone())),
        webhooks: options.webhooks.clone(),
        ..StoreOptions::default()
    }
}

async fn open_store(
    db: Db,
    clock: &ManualClock,
    events: &EventHub,
    options: &Options,
) -> Option<(Arc<dyn Store>, Data)> {
    let (store, data): (Arc<dyn Store>, Data) = match db {
        Db::Sqlite => {
            let dir = tempfile::tempdir().expect("temporary directory");
            let url = format!("sqlite://{}", dir.path().join("anteroom.sqlite3").display());
            let store = SqliteStore::connect(&url, store_options(clock, events, options))
                .await
                .expect("open SQLite");
            (Arc::new(store), Data::Sqlite { _dir: dir })
        }
        Db::Postgres => {
            let url = postgres_url()?;
            let schema = TestSchema::create(&url).await.expect("test schema");
            let store = PostgresStore::from_pool(
                schema.pool.clone(),
                store_options(clock, events, options),
            );
            (Arc::new(store), Data::Postgres(schema))
        }
    };
    store.migrate().await.expect("migrate");
    Some((store, data))
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
            .create_api_key(&key, &credentials::hash(&secret))
            .await
            .expect("api key");
        keys.push(secret);
    }
    [keys[0].clone(), keys[1].clone(), keys[2].clone()]
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
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
    data: Data,
}

#[derive(Clone)]
pub struct Options {
    pub allow_unauthenticated_producers: bool,
    pub body_limit: usize,
    pub webhooks: Vec<WebhookEndpoint>,
    pub webhook_secret: Option<String>,
    pub connections: ConnectionLimits,
    pub metrics_token: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            allow_unauthenticated_producers: false,
            body_limit: 256 * 1024,
            webhooks: Vec::new(),
            webhook_secret: None,
            connections: ConnectionLimits::default(),
            metrics_token: None,
        }
    }
}

impl TestServer {
    /// A server on `db`, or `None` for PostgreSQL when `ANTEROOM_TEST_POSTGRES_URL` is not set.
    pub async fn start(db: Db) -> Option<Self> {
        Self::start_with(db, Options::default()).await
    }

    pub async fn start_with(db: Db, options: Options) -> Option<Self> {
        let clock = ManualClock::new(start_time());
        let events = EventHub::default();
        let (store, data) = open_store(db, &clock, &events, &options).await?;
        let keys = create_keys(&store).await;
        Some(Self::launch(store, data, clock, keys, options, None, events).await)
    }

    /// Two instances on one PostgreSQL schema, sharing events through LISTEN/NOTIFY.
    pub async fn postgres_pair() -> Option<(Self, Self)> {
        Self::postgres_pair_with(Options::default()).await
    }

    pub async fn postgres_pair_with(options: Options) -> Option<(Self, Self)> {
        let url = postgres_url()?;
        let clock = ManualClock::new(start_time());
        let (events_a, events_b) = (EventHub::default(), EventHub::default());
        let (store, data) = open_store(Db::Postgres, &clock, &events_a, &options).await?;
        let keys = create_keys(&store).await;
        let Data::Postgres(schema) = &data else {
            return None;
        };
        let channel = format!("anteroom_test_{}", uuid::Uuid::now_v7().simple());
        let second_pool = schema.another_pool(&url).await.expect("second pool");
        let relay_a = schema.another_pool(&url).await.expect("relay pool");
        let relay_b = schema.another_pool(&url).await.expect("relay pool");
        let second_store: Arc<dyn Store> = Arc::new(PostgresStore::from_pool(
            second_pool,
            store_options(&clock, &events_b, &options),
        ));
        let first = Self::launch(
            store,
            data,
            clock.clone(),
            keys.clone(),
            options.clone(),
            Some((relay_a, channel.clone())),
            events_a,
        )
        .await;
        let second = Self::launch(
            second_store,
            Data::Shared,
            clock,
            keys,
            options,
            Some((relay_b, channel)),
            events_b,
        )
        .await;
        Some((first, second))
    }

    async fn launch(
        store: Arc<dyn Store>,
        data: Data,
        clock: ManualClock,
        keys: [String; 3],
        options: Options,
        relay: Option<(sqlx::PgPool, String)>,
        events: EventHub,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind port 0");
        let addr = listener.local_addr().expect("local address");
        let base = format!("http://{addr}");
        let leptos_options = LeptosOptions::builder()
            .output_name("anteroom")
            .site_root("target/site")
            .site_addr(addr)
            .build();
        let mut config = ApiConfig::new(&base);
        config.allow_unauthenticated_producers = options.allow_unauthenticated_producers;
        config.body_limit = options.body_limit;
        config.webhook_secret = options.webhook_secret.clone();
        config.connections = options.connections;
        config.metrics_token = options.metrics_token.clone();
        let state = AppState::new(leptos_options, store.clone(), config, events);
        if let Some((pool, channel)) = relay {
            anteroom_server::relay::start(&state.events, pool, &channel)
                .await
                .expect("event relay");
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let running = state.clone();
        let task = tokio::spawn(anteroom_server::serve(listener, running, async move {
            let _ = stopped.await;
        }));
        let [admin_key, responder_key, viewer_key] = keys;
        Self {
            base,
            state,
            clock,
            store,
            admin_key,
            responder_key,
            viewer_key,
            // A request that hangs fails the test instead of the whole run.
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .expect("client"),
            stop,
            task,
            data,
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

/// Declares each listed `async fn name(db: Db)` as a test on SQLite and on PostgreSQL
/// (see `anteroom_store::on_both_backends!`).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        $crate::anteroom_store::on_both_backends!(|backend, test| test($crate::Db::from(backend)).await; $($name),*);
    };
}
