//! `cargo xtask bench`: Anteroom's hot paths measured against a ceiling measured in the same run on the same
//! machine (a constant JSON handler, a bare insert loop, a bare UPDATE, a loopback round trip), printed as one
//! table. Ratios, not absolute numbers, are what stay comparable on a noisy two-core machine.
//!
//! Arguments: `--binary PATH` (the release `anteroom`, for resident memory), `--site PATH` (the release site,
//! for the bundle size), `--postgres URL` (run on a PostgreSQL schema of its own instead of SQLite), `--only
//! NAME` (one figure: polls, creates, latency, queue, expiry, memory or bundle — for profiling).

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anteroom_domain::{
    access::{ApiKey, Role},
    clock::{Clock, ManualClock, SystemClock},
    ids::{RequestId, RequestKey, SessionId},
    round::{ElicitationRequest, NewRound, OperationKind},
    session::NewSession,
};
use anteroom_server::{
    credentials,
    instance::{Database, Instance, Settings},
    pages::add_user,
};
use anteroom_store::{PostgresStore, SqliteStore, Store, StoreOptions, testing::TestSchema};
use axum::{Json, Router, routing::get};
use serde_json::{Value, json};
use tokio::{net::TcpListener, sync::oneshot};

/// Connections of the load generator.
const CONNECTIONS: usize = 64;
/// How long each throughput run lasts (after a short warm-up).
const RUN: Duration = Duration::from_secs(3);
const WARM_UP: Duration = Duration::from_millis(500);
/// Samples per latency figure.
const SAMPLES: usize = 200;

struct Args {
    /// Run only the figure whose name contains this (for profiling one hot path).
    only: Option<String>,
    binary: Option<PathBuf>,
    site: PathBuf,
    postgres: Option<String>,
}

fn args() -> Args {
    let mut args = Args {
        only: None,
        binary: None,
        site: PathBuf::from("target/site"),
        postgres: None,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(arg) = raw.next() {
        match arg.as_str() {
            "--binary" => args.binary = raw.next().map(PathBuf::from),
            "--site" => args.site = raw.next().map(PathBuf::from).unwrap_or(args.site),
            "--postgres" => args.postgres = raw.next(),
            "--only" => args.only = raw.next(),
            // `cargo bench` passes `--bench`; anything else is ignored.
            _ => {}
        }
    }
    args
}

/// One row of the table.
struct Figure {
    name: String,
    value: String,
    ceiling: String,
    ratio: String,
    goal: String,
    met: Option<bool>,
}

impl Figure {
    fn new(
        name: &str,
        value: String,
        ceiling: String,
        ratio: String,
        goal: &str,
        met: Option<bool>,
    ) -> Self {
        Self {
            name: name.to_owned(),
            value,
            ceiling,
            ratio,
            goal: goal.to_owned(),
            met,
        }
    }
}

fn main() {
    let args = args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let figures = runtime.block_on(run(&args));
    print_table(&figures, &args);
}

async fn run(args: &Args) -> Vec<Figure> {
    let mut figures = Vec::new();
    let backend = if args.postgres.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    eprintln!(
        "bench: {backend}, {CONNECTIONS} connections, {} s per throughput run",
        RUN.as_secs()
    );

    let wanted = |name: &str| args.only.as_deref().is_none_or(|only| name.contains(only));
    let bench = Bench::start(args, Arc::new(SystemClock)).await;
    if wanted("polls") {
        figures.push(bench.polls().await);
    }
    if wanted("creates") {
        figures.push(bench.creates(args).await);
    }
    if wanted("latency") {
        figures.extend(bench.latencies().await);
    }
    bench.stop().await;
    if wanted("queue") {
        figures.push(queue_render(args).await);
    }
    if wanted("expiry") {
        figures.push(expiry_sweep(args).await);
    }
    if wanted("memory") {
        figures.extend(resident_memory(args).await);
    }
    if wanted("bundle") {
        figures.push(bundle_size(args));
    }
    figures
}

fn print_table(figures: &[Figure], args: &Args) {
    let backend = if args.postgres.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|name| name.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    println!();
    println!("Anteroom benchmarks: {backend}, release build, {cores} cores ({cpu})");
    println!();
    println!("| figure | measured | ceiling (same run) | ratio | goal | met |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for figure in figures {
        let met = match figure.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            figure.name, figure.value, figure.ceiling, figure.ratio, figure.goal, met
        );
    }
}

// ---------------------------------------------------------------------------------------------------------
// The server under test, in this process, next to a constant JSON handler on the same runtime.

enum Data {
    Sqlite(tempfile::TempDir),
    Postgres(TestSchema),
}

/// A throwaway database: a PostgreSQL schema of its own (`--postgres`) or a SQLite file.
async fn throwaway_database(args: &Args) -> (Database, Data) {
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
async fn open_store(args: &Args, clock: Arc<dyn Clock>) -> (Arc<dyn Store>, Data) {
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

async fn drop_data(data: Data) {
    if let Data::Postgres(schema) = data {
        let _ = schema.drop_schema().await;
    }
}

/// The body a poll of a pending question gets, used by the constant handler too.
fn pending_reply() -> Value {
    json!({"action": "pending", "content": null, "_meta": {
        "com.pulsemcp/request-id": "00000000-0000-0000-0000-000000000000",
        "com.pulsemcp/expires-at": "2026-03-01T10:00:00.000+00:00"
    }})
}

struct Bench {
    base: String,
    constant: String,
    store: Arc<dyn Store>,
    admin_key: String,
    data: Data,
    stops: Vec<oneshot::Sender<()>>,
}

fn form_request(message: &str) -> ElicitationRequest {
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

fn new_round(session: &str, request_id: &str, message: &str) -> NewRound {
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

async fn register(store: &dyn Store, id: &str) {
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
async fn sessions_with_tokens(store: &dyn Store, prefix: &str, n: usize) -> Vec<(String, String)> {
    let mut sessions = Vec::new();
    for i in 0..n {
        let id = format!("{prefix}-{i}");
        register(store, &id).await;
        let token = credentials::generate(credentials::SESSION_TOKEN_PREFIX);
        store
            .set_producer_token(
                &SessionId::parse(&id).expect("id"),
                Some(&credentials::hash(&token)),
            )
            .await
            .expect("token");
        sessions.push((id, token));
    }
    sessions
}

impl Bench {
    async fn start(args: &Args, clock: Arc<dyn Clock>) -> Self {
        let (database, data) = throwaway_database(args).await;
        let instance = Instance::build(Settings {
            database,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            site_root: args.site.clone(),
            development: true,
            schedules: None,
            clock,
            ..Settings::default()
        })
        .await
        .expect("build the instance");
        let store = instance.state.store.clone();
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
        let reply = pending_reply();
        let router = Router::new().route(
            "/constant",
            get(move || {
                let reply = reply.clone();
                async move { Json(reply) }
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
            base,
            constant,
            store,
            admin_key: secret,
            data,
            stops: vec![stop, constant_stop],
        }
    }

    async fn stop(self) {
        for stop in self.stops {
            let _ = stop.send(());
        }
        drop_data(self.data).await;
    }

    async fn polls(&self) -> Figure {
        eprintln!("bench: polls of pending questions");
        // Many questions, so the per-question poll limit (a real client polls once a second) never bites.
        let sessions = sessions_with_tokens(self.store.as_ref(), "poll", CONNECTIONS).await;
        let mut urls = Vec::new();
        for (id, token) in &sessions {
            let mut mine = Vec::new();
            for q in 0..32 {
                let request_id = format!("{id}-q{q}");
                self.store
                    .create_round(new_round(id, &request_id, "Which environment?"))
                    .await
                    .expect("round");
                mine.push(format!(
                    "{}/api/v1/s/{token}/elicitations/{request_id}",
                    self.base
                ));
            }
            urls.push(mine);
        }
        let polls = throughput(urls, Method::Get).await;
        let constant =
            throughput(vec![vec![self.constant.clone()]; CONNECTIONS], Method::Get).await;
        let ratio = polls / constant;
        Figure::new(
            "polls/s of a pending question (token route)",
            format!("{polls:.0}/s"),
            format!("{constant:.0}/s constant JSON handler"),
            format!("{ratio:.2}"),
            "≥ 0.6",
            Some(ratio >= 0.6),
        )
    }

    async fn creates(&self, args: &Args) -> Figure {
        eprintln!("bench: question creates");
        // Sixteen sessions per connection, so the per-session create limit never bites.
        let sessions = sessions_with_tokens(self.store.as_ref(), "create", CONNECTIONS * 16).await;
        let urls: Vec<Vec<String>> = sessions
            .chunks(16)
            .map(|chunk| {
                chunk
                    .iter()
                    .map(|(_, token)| {
                        format!(
                            "{}/api/v1/s/{token}/servers/bench-mcp/elicitations",
                            self.base
                        )
                    })
                    .collect()
            })
            .collect();
        let creates = throughput(urls, Method::PostQuestion).await;
        let row_bytes = self.round_row_bytes().await;
        let bare = bare_inserts(args, row_bytes).await;
        let ratio = creates / bare;
        Figure::new(
            "creates/s (token route)",
            format!("{creates:.0}/s"),
            format!("{bare:.0}/s bare insert of a {row_bytes}-byte row"),
            format!("{ratio:.2}"),
            "≥ 0.5",
            Some(ratio >= 0.5),
        )
    }

    /// The stored size of one created question (requests, summary and ids), for the bare insert loop.
    async fn round_row_bytes(&self) -> usize {
        let round = self
            .store
            .oldest_open_rounds(&[SessionId::parse("create-0").expect("id")])
            .await
            .ok()
            .and_then(|mut rounds| rounds.pop());
        round.map_or(600, |round| {
            serde_json::to_string(&round.requests).map_or(0, |r| r.len())
                + round.summary.len()
                + round.round_id.to_string().len() * 2
                + round.request_id.as_str().len()
                + round.session_id.as_str().len()
                + 120
        })
    }

    async fn latencies(&self) -> Vec<Figure> {
        eprintln!("bench: answer latencies");
        let client = reqwest::Client::new();
        let (id, token) = sessions_with_tokens(self.store.as_ref(), "latency", 1)
            .await
            .pop()
            .expect("a session");

        // Long-poll: the poller waits; the clock runs from sending the answer to the poller's reply.
        let mut long_poll = Vec::new();
        for i in 0..SAMPLES {
            let request_id = format!("lp-{i}");
            self.store
                .create_round(new_round(&id, &request_id, "Go?"))
                .await
                .expect("round");
            let poll_url = format!(
                "{}/api/v1/s/{token}/elicitations/{request_id}?wait=30",
                self.base
            );
            let poller = client.get(&poll_url).send();
            let waiting = tokio::spawn(async move { poller.await.map(|_| Instant::now()) });
            tokio::time::sleep(Duration::from_millis(15)).await;
            let sent = Instant::now();
            self.answer(&client, &request_id).await;
            if let Ok(Ok(received)) = waiting.await {
                long_poll.push(received.saturating_duration_since(sent));
            }
        }

        // The event stream: the clock runs from sending the answer to the `round.answered` event.
        let (events_tx, mut events_rx) =
            tokio::sync::mpsc::unbounded_channel::<(String, Instant)>();
        let mut stream = client
            .get(format!("{}/api/v1/events", self.base))
            .bearer_auth(&self.admin_key)
            .send()
            .await
            .expect("event stream");
        tokio::spawn(async move {
            let mut buffer = String::new();
            while let Ok(Some(chunk)) = stream.chunk().await {
                let at = Instant::now();
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buffer.find("\n\n") {
                    let event: String = buffer.drain(..end + 2).collect();
                    if event.contains("event: round.answered") {
                        let _ = events_tx.send((event, at));
                    }
                }
            }
        });
        let mut sse = Vec::new();
        for i in 0..SAMPLES {
            let request_id = format!("sse-{i}");
            self.store
                .create_round(new_round(&id, &request_id, "Go?"))
                .await
                .expect("round");
            let sent = Instant::now();
            self.answer(&client, &request_id).await;
            while let Ok(Some((event, at))) =
                tokio::time::timeout(Duration::from_secs(5), events_rx.recv()).await
            {
                if event.contains(&format!("\"request_id\":\"{request_id}\"")) {
                    sse.push(at.saturating_duration_since(sent));
                    break;
                }
            }
        }

        // The ceiling: one loopback HTTP round trip to the constant handler.
        let mut loopback = Vec::new();
        for _ in 0..SAMPLES * 5 {
            let sent = Instant::now();
            if client.get(&self.constant).send().await.is_ok() {
                loopback.push(sent.elapsed());
            }
        }
        let (lp50, lp99) = (percentile(&loopback, 50.0), percentile(&loopback, 99.0));
        let row = |name: &str, samples: &[Duration]| {
            let (p50, p99) = (percentile(samples, 50.0), percentile(samples, 99.0));
            let ratio = p99.as_secs_f64() / lp99.as_secs_f64();
            Figure::new(
                name,
                format!("p50 {} · p99 {}", ms(p50), ms(p99)),
                format!("loopback round trip p50 {} · p99 {}", ms(lp50), ms(lp99)),
                format!("p99 {ratio:.1}×"),
                "p99 ≤ 10×",
                Some(ratio <= 10.0),
            )
        };
        vec![
            row("answer → waiting long-poll", &long_poll),
            row("answer → SSE subscriber", &sse),
        ]
    }

    async fn answer(&self, client: &reqwest::Client, request_id: &str) {
        let reply = client
            .patch(format!(
                "{}/api/v1/elicitations/{request_id}/respond",
                self.base
            ))
            .bearer_auth(&self.admin_key)
            .json(&json!({"action_type": "accept", "content": {"env": "staging"}}))
            .send()
            .await
            .expect("answer");
        assert!(
            reply.status().is_success(),
            "answer refused: {}",
            reply.status()
        );
    }
}

#[derive(Clone, Copy)]
enum Method {
    Get,
    /// A pulsemcp question with a fresh request id each time.
    PostQuestion,
}

/// Requests per second over [`RUN`] from [`CONNECTIONS`] connections, each cycling through its own URLs.
async fn throughput(urls: Vec<Vec<String>>, method: Method) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let measure_from = start + WARM_UP;
    let end = measure_from + RUN;
    let mut tasks = Vec::new();
    for (connection, mine) in urls.into_iter().enumerate() {
        let (done, failed) = (done.clone(), failed.clone());
        tasks.push(tokio::spawn(async move {
            // One client each: one kept-alive connection per task.
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .expect("client");
            let mut n: usize = 0;
            while Instant::now() < end {
                let url = &mine[n % mine.len()];
                let sent = match method {
                    Method::Get => client.get(url).send().await,
                    Method::PostQuestion => {
                        let id = format!("c{connection}-{n}-{}", uuid::Uuid::new_v4().simple());
                        client
                            .post(url)
                            .json(&json!({
                                "mode": "form",
                                "message": "Which environment?",
                                "requestedSchema": {"type": "object", "properties": {"env": {"type": "string", "enum": ["staging", "production"]}, "note": {"type": "string"}}, "required": ["env"]},
                                "_meta": {"com.pulsemcp/request-id": id, "com.pulsemcp/tool-name": "deploy"}
                            }))
                            .send()
                            .await
                    }
                };
                let ok = match sent {
                    Ok(reply) => reply.status().is_success() && reply.bytes().await.is_ok(),
                    Err(_) => false,
                };
                let now = Instant::now();
                if now >= measure_from && now < end {
                    if ok {
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                n += 1;
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let failures = failed.load(Ordering::Relaxed);
    if failures > 0 {
        eprintln!("bench: {failures} requests failed during the run (not counted)");
    }
    done.load(Ordering::Relaxed) as f64 / RUN.as_secs_f64()
}

/// Single-row insert transactions of `row_bytes` from [`CONNECTIONS`] tasks, on a fresh database with the
/// store's own connection settings.
async fn bare_inserts(args: &Args, row_bytes: usize) -> f64 {
    let (store, data) = open_store(args, Arc::new(SystemClock)).await;
    drop(store);
    let payload = "x".repeat(row_bytes);
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let measure_from = start + WARM_UP;
    let end = measure_from + RUN;
    macro_rules! run_on {
        ($pool:expr) => {{
            let pool = $pool;
            sqlx::query("CREATE TABLE bare (id TEXT PRIMARY KEY, body TEXT NOT NULL)")
                .execute(&pool)
                .await
                .expect("create table");
            let mut tasks = Vec::new();
            for connection in 0..CONNECTIONS {
                let (pool, done, payload) = (pool.clone(), done.clone(), payload.clone());
                tasks.push(tokio::spawn(async move {
                    let mut n = 0u64;
                    while Instant::now() < end {
                        let inserted = sqlx::query("INSERT INTO bare (id, body) VALUES ($1, $2)")
                            .bind(format!("{connection}-{n}"))
                            .bind(&payload)
                            .execute(&pool)
                            .await;
                        let now = Instant::now();
                        if inserted.is_ok() && now >= measure_from && now < end {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        n += 1;
                    }
                }));
            }
            for task in tasks {
                let _ = task.await;
            }
        }};
    }
    match &data {
        Data::Postgres(schema) => run_on!(schema.pool.clone()),
        Data::Sqlite(dir) => {
            // The store's settings: WAL, synchronous NORMAL, a busy timeout, eight connections.
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(dir.path().join("bench.sqlite3"))
                .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(5));
            let pool = sqlx::sqlite::SqlitePoolOptions::new()
                .max_connections(8)
                .connect_with(options)
                .await
                .expect("SQLite pool");
            run_on!(pool);
        }
    }
    drop_data(data).await;
    done.load(Ordering::Relaxed) as f64 / RUN.as_secs_f64()
}

fn percentile(samples: &[Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a rank between 0 and the last index, rounded"
    )]
    let index = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

// ---------------------------------------------------------------------------------------------------------
// Data at scale.

/// `rounds` questions over `sessions` sessions: every session's newest question open, the rest answered.
async fn populate(store: &dyn Store, sessions: usize, rounds: usize, prefix: &str) {
    let per_session = rounds.div_ceil(sessions);
    for s in 0..sessions {
        register(store, &format!("{prefix}-{s}")).await;
    }
    let mut created = 0;
    let mut batch = Vec::new();
    for s in 0..sessions {
        for q in 0..per_session {
            if created == rounds {
                break;
            }
            created += 1;
            batch.push(new_round(
                &format!("{prefix}-{s}"),
                &format!("{prefix}-{s}-{q}"),
                "Deploy this release to which environment?",
            ));
        }
        if batch.len() >= 256 || s + 1 == sessions {
            let futures = batch.drain(..).map(|round| store.create_round(round));
            for result in futures::future::join_all(futures).await {
                result.expect("round");
            }
        }
    }
}

/// Marks all but each session's newest pending question answered, in one statement.
fn answer_all_but_newest_sql() -> &'static str {
    "UPDATE rounds SET status = 'resolved', resolved_at_ms = updated_at_ms, responded_at_ms = updated_at_ms, \
     responses = '{}', version = version + 1 WHERE status = 'pending' AND round_id NOT IN \
     (SELECT MAX(round_id) FROM rounds GROUP BY session_id)"
}

/// Runs one statement on the bench's database and times the statement alone.
async fn execute(data: &Data, sql: &str, bind_ms: Option<i64>) -> Duration {
    macro_rules! timed {
        ($pool:expr) => {{
            let mut query = sqlx::query(sql);
            if let Some(ms) = bind_ms {
                query = query.bind(ms);
            }
            let started = Instant::now();
            query.execute($pool).await.expect("statement");
            started.elapsed()
        }};
    }
    match data {
        Data::Postgres(schema) => timed!(&schema.pool),
        Data::Sqlite(dir) => {
            let url = format!("sqlite://{}", dir.path().join("bench.sqlite3").display());
            let pool = sqlx::sqlite::SqlitePoolOptions::new()
                .max_connections(1)
                .connect(&url)
                .await
                .expect("SQLite");
            timed!(&pool)
        }
    }
}

/// Renders `/` for a signed-in person `times` times; the median time.
async fn render_queue(base: &str, cookie: &str, times: usize) -> Duration {
    let client = reqwest::Client::new();
    let mut samples = Vec::new();
    for _ in 0..times {
        let started = Instant::now();
        let reply = client
            .get(format!("{base}/"))
            .header("cookie", cookie)
            .send()
            .await
            .expect("GET /");
        assert!(
            reply.status().is_success(),
            "queue page: {}",
            reply.status()
        );
        let _ = reply.text().await;
        samples.push(started.elapsed());
    }
    percentile(&samples, 50.0)
}

async fn sign_in(base: &str, store: &dyn Store) -> String {
    if store
        .user_with_password("bench")
        .await
        .ok()
        .flatten()
        .is_none()
    {
        add_user(store, "bench", "bench password", Role::Responder)
            .await
            .expect("user");
    }
    let reply = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .post(format!("{base}/login"))
        .form(&[
            ("username", "bench"),
            ("password", "bench password"),
            ("next", "/"),
        ])
        .send()
        .await
        .expect("sign in");
    reply
        .headers()
        .get("set-cookie")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .expect("a session cookie")
        .to_owned()
}

async fn queue_render(args: &Args) -> Figure {
    eprintln!("bench: attention queue render at 1k and 100k questions (populating takes a while)");
    let mut medians = Vec::new();
    for (sessions, rounds) in [(100, 1_000), (10_000, 100_000)] {
        let bench = Bench::start(args, Arc::new(SystemClock)).await;
        populate(bench.store.as_ref(), sessions, rounds, "q").await;
        execute(&bench.data, answer_all_but_newest_sql(), None).await;
        let cookie = sign_in(&bench.base, bench.store.as_ref()).await;
        render_queue(&bench.base, &cookie, 3).await;
        medians.push(render_queue(&bench.base, &cookie, 20).await);
        bench.stop().await;
    }
    let ratio = medians[1].as_secs_f64() / medians[0].as_secs_f64();
    Figure::new(
        "attention queue render, 100k questions over 10k sessions (median)",
        ms(medians[1]),
        format!("{} with 1k questions", ms(medians[0])),
        format!("{ratio:.2}×"),
        "≤ 2×",
        Some(ratio <= 2.0),
    )
}

async fn expiry_sweep(args: &Args) -> Figure {
    eprintln!("bench: expiry sweep of 100k due questions");
    let clock = ManualClock::new(chrono::Utc::now());
    let (store, data) = open_store(args, Arc::new(clock.clone())).await;
    populate(store.as_ref(), 10_000, 100_000, "x").await;
    clock.advance(chrono::Duration::hours(2));
    let started = Instant::now();
    let mut expired = 0;
    loop {
        let batch = store.expire_due_rounds().await.expect("sweep").len();
        if batch == 0 {
            break;
        }
        expired += batch;
    }
    let sweep = started.elapsed();
    assert_eq!(expired, 100_000, "every question expired");

    // The same rows due again, then one bare UPDATE of them.
    execute(
        &data,
        "UPDATE rounds SET status = 'pending', failure_code = NULL, failure_message = NULL, failed_at_ms = NULL",
        None,
    )
    .await;
    let now_ms = clock.now().timestamp_millis();
    let bare = execute(
        &data,
        "UPDATE rounds SET status = 'failed', failure_code = 'expired', failure_message = 'expired', \
         failed_at_ms = $1, updated_at_ms = $1, version = version + 1 WHERE status = 'pending' AND deadline_ms <= $1",
        Some(now_ms),
    )
    .await;
    drop(store);
    drop_data(data).await;
    let ratio = sweep.as_secs_f64() / bare.as_secs_f64();
    Figure::new(
        "expiry sweep of 100k due questions",
        ms(sweep),
        format!("{} one bare UPDATE", ms(bare)),
        format!("{ratio:.2}×"),
        "≤ 3× and < 5 s",
        Some(ratio <= 3.0 && sweep < Duration::from_secs(5)),
    )
}

/// Resident memory of the real release binary, idle and after serving 100k pending questions.
async fn resident_memory(args: &Args) -> Vec<Figure> {
    let Some(binary) = args.binary.as_ref().filter(|binary| binary.exists()) else {
        eprintln!("bench: no --binary given; resident memory skipped");
        return Vec::new();
    };
    eprintln!("bench: resident memory of {}", binary.display());
    let dir = tempfile::tempdir().expect("temporary directory");
    if args.postgres.is_some() {
        eprintln!("bench: resident memory is measured on SQLite only");
        return Vec::new();
    }
    let url = format!("sqlite://{}", dir.path().join("rss.sqlite3").display());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("port")
        .port();
    let mut server = tokio::process::Command::new(binary)
        .arg("serve")
        .env("DATABASE_URL", &url)
        .env("ANTEROOM_ADDR", format!("127.0.0.1:{port}"))
        .env("ANTEROOM_SITE_ROOT", &args.site)
        .env("ANTEROOM_DEVELOPMENT", "true")
        .env("RUST_LOG", "error")
        .kill_on_drop(true)
        .spawn()
        .expect("start the release binary");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for _ in 0..100 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pid = server.id().expect("pid");
    let idle = rss_kib(pid);

    let store = SqliteStore::connect(&url, StoreOptions::default())
        .await
        .expect("SQLite");
    populate(&store, 10_000, 100_000, "m").await;
    let cookie = sign_in(&base, &store).await;
    render_queue(&base, &cookie, 5).await;
    for s in (0..10_000).step_by(500) {
        let _ = client
            .get(format!("{base}/sessions/m-{s}"))
            .header("cookie", &cookie)
            .send()
            .await;
    }
    render_queue(&base, &cookie, 5).await;
    let loaded = rss_kib(pid);
    let _ = server.kill().await;
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    vec![
        Figure::new(
            "resident memory, idle",
            mib(idle),
            "—".to_owned(),
            "—".to_owned(),
            "≤ 40 MB",
            Some(idle <= 40 * 1000 * 1000 / 1024),
        ),
        Figure::new(
            "resident memory, 100k pending questions",
            mib(loaded),
            "—".to_owned(),
            "—".to_owned(),
            "≤ 200 MB",
            Some(loaded <= 200 * 1000 * 1000 / 1024),
        ),
    ]
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}

fn bundle_size(args: &Args) -> Figure {
    let pkg = args.site.join("pkg");
    let gzip = |name: &str| -> Option<usize> {
        let path = pkg.join(name);
        if !path.exists() {
            return None;
        }
        let out = std::process::Command::new("gzip")
            .arg("-9")
            .arg("-c")
            .arg(path)
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout.len())
    };
    match (gzip("anteroom_bg.wasm"), gzip("anteroom.js")) {
        (Some(wasm), Some(js)) => {
            let total = wasm + js;
            Figure::new(
                "hydrate bundle (wasm + js), gzip -9",
                format!("{:.1} KiB", total as f64 / 1024.0),
                "—".to_owned(),
                "—".to_owned(),
                "≤ 350 KB",
                Some(total <= 350 * 1000),
            )
        }
        _ => Figure::new(
            "hydrate bundle, gzip",
            format!("not built in {}", pkg.display()),
            "—".to_owned(),
            "—".to_owned(),
            "≤ 350 KB",
            None,
        ),
    }
}
