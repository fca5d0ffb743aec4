//! The server under test, in this process, built by `Instance::build` next to a constant JSON handler on the same
//! runtime, and the throwaway databases it runs on.

use super::*;

pub(super) enum Data {
    Sqlite(tempfile::TempDir),
    Postgres(TestSchema),
}

/// A throwaway database: a PostgreSQL schema of its own (`--postgres`) or a SQLite file.
pub(super) async fn throwaway_database(args: &Args) -> (Database, Data) {
    match &args.postgres {
        Some(url) => {
            let schema = TestSchema::create(url).await.expect("PostgreSQL schema");
            let database = Database::Postgres {
                store: schema.pool.clone(),
                relay: None,
            };
            (database, Data::Postgres(schema))
        }
        None => {
            let dir = tempfile::tempdir().expect("temporary directory");
            let url = format!("sqlite://{}", dir.path().join("bench.sqlite3").display());
            (Database::Url(url), Data::Sqlite(dir))
        }
    }
}

/// A store alone (no server) on a throwaway database.
pub(super) async fn open_store(args: &Args, clock: Arc<dyn Clock>) -> (Arc<dyn Store>, Data) {
    let options = StoreOptions {
        clock,
        ..StoreOptions::default()
    };
    let (store, data): (Arc<dyn Store>, Data) = match &args.postgres {
        Some(url) => {
            let schema = TestSchema::create(url).await.expect("PostgreSQL schema");
            let store = PostgresStore::from_pool(schema.pool.clone(), options);
            (Arc::new(store), Data::Postgres(schema))
        }
        None => {
            let dir = tempfile::tempdir().expect("temporary directory");
            let url = format!("sqlite://{}", dir.path().join("bench.sqlite3").display());
            let store = SqliteStore::connect(&url, options).await.expect("SQLite");
            (Arc::new(store), Data::Sqlite(dir))
        }
    };
    store.migrate().await.expect("migrate");
    (store, data)
}

pub(super) async fn drop_data(data: Data) {
    if let Data::Postgres(schema) = data {
        let _ = schema.drop_schema().await;
    }
}

/// The body a poll of a pending question gets, used by the constant handler too.
pub(super) fn pending_reply() -> Value {
    json!({"action": "pending", "content": null, "_meta": {
        "com.pulsemcp/request-id": "00000000-0000-0000-0000-000000000000",
        "com.pulsemcp/expires-at": "2026-03-01T10:00:00.000+00:00"
    }})
}

pub(super) struct Bench {
    pub(super) state: anteroom_server::AppState,
    pub(super) base: String,
    pub(super) constant: String,
    /// `GET` waits until a `POST` to the same path wakes it: a long-poll with no database behind it, the
    /// ceiling the answer latencies compare against.
    pub(super) parked: String,
    pub(super) store: Arc<dyn Store>,
    pub(super) admin_key: String,
    pub(super) data: Data,
    stops: Vec<oneshot::Sender<()>>,
}

pub(super) fn form_request(message: &str) -> ElicitationRequest {
    ElicitationRequest::Form {
        message: message.to_owned(),
        requested_schema: json!({
            "type": "object",
            "properties": {"env": {"type": "string", "enum": ["staging", "production"]}, "note": {"type": "string"}},
            "required": ["env"]
        }),
        meta: None,
    }
}

pub(super) fn new_round(session: &str, request_id: &str, message: &str) -> NewRound {
    NewRound {
        session_id: SessionId::parse(session).expect("session id"),
        request_id: Some(RequestId::parse(request_id).expect("request id")),
        logical_operation_id: request_id.to_owned(),
        server: Some("bench-mcp".to_owned()),
        operation_kind: OperationKind::Tool,
        operation_name: "deploy".to_owned(),
        requests: BTreeMap::from([(
            RequestKey::parse(request_id).expect("key"),
            form_request(message),
        )]),
        request_state: None,
        round_index: 0,
        round_limit: 1,
        deadline: None,
        fingerprint: None,
        asked_through: Default::default(),
    }
}

pub(super) async fn register(store: &dyn Store, id: &str) {
    store
        .register_session(NewSession {
            id: SessionId::parse(id).expect("session id"),
            title: Some(format!("Bench {id}")),
            agent: None,
        })
        .await
        .expect("session");
}

/// Sessions `prefix-0 … prefix-(n-1)`, each with a producer token; returns the tokens.
pub(super) async fn sessions_with_tokens(
    store: &dyn Store,
    prefix: &str,
    n: usize,
) -> Vec<(String, String)> {
    let mut sessions = Vec::new();
    for i in 0..n {
        let id = format!("{prefix}-{i}");
        register(store, &id).await;
        let token = credentials::generate(credentials::SESSION_TOKEN_PREFIX);
        store
            .set_producer_token(
                &SessionId::parse(&id).expect("id"),
                Some(&credentials::hash(&token)),
                "bench",
            )
            .await
            .expect("token");
        sessions.push((id, token));
    }
    sessions
}

impl Bench {
    pub(super) async fn start(args: &Args, clock: Arc<dyn Clock>) -> Self {
        let (database, data) = throwaway_database(args).await;
        let instance = Instance::build(Settings {
            database,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            site_root: Some(args.site.clone()),
            development: true,
            schedules: None,
            clock,
            ..Settings::default()
        })
        .await
        .expect("build the instance");
        let store = instance.state.store.clone();
        let state = instance.state.clone();
        let base = format!("http://{}", instance.local_addr);
        let secret = credentials::generate(credentials::API_KEY_PREFIX);
        store
            .create_api_key(
                &ApiKey {
                    id: "bench".to_owned(),
                    name: "bench".to_owned(),
                    role: Role::Admin,
                },
                &credentials::hash(&secret),
                "bench",
            )
            .await
            .expect("api key");

        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(instance.run(async move {
            let _ = stopped.await;
        }));

        // The ceiling: the cheapest JSON handler axum can serve, on the same runtime.
        let constant_listener = TcpListener::bind("127.0.0.1:0").await.expect("port");
        let constant = format!(
            "http://{}/constant",
            constant_listener.local_addr().expect("address")
        );
        let parked = format!(
            "http://{}/parked",
            constant_listener.local_addr().expect("address")
        );
        let reply = pending_reply();
        let parked_reply = reply.clone();
        let wake = Arc::new(tokio::sync::Notify::new());
        let woken = wake.clone();
        let router = Router::new()
            .route(
                "/constant",
                get(move || {
                    let reply = reply.clone();
                    async move { Json(reply) }
                }),
            )
            .route(
                "/parked",
                get(move || {
                    let (reply, woken) = (parked_reply.clone(), woken.clone());
                    async move {
                        woken.notified().await;
                        Json(reply)
                    }
                })
                .post(move || {
                    wake.notify_one();
                    async { Json(json!({"woken": true})) }
                }),
            );
        let (constant_stop, constant_stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(constant_listener, router)
                .with_graceful_shutdown(async move {
                    let _ = constant_stopped.await;
                })
                .await;
        });
        Self {
            state,
            base,
            constant,
            parked,
            store,
            admin_key: secret,
            data,
            stops: vec![stop, constant_stop],
        }
    }

    pub(super) async fn stop(self) {
        for stop in self.stops {
            let _ = stop.send(());
        }
        drop_data(self.data).await;
    }
}
