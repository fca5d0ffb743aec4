//! The load generators and the arithmetic of samples: throughput over many connections, bare inserts, percentiles.

use super::*;

#[derive(Clone, Copy)]
pub(super) enum Method {
    Get,
    /// A pulsemcp question with a fresh request id each time.
    PostQuestion,
}

/// Requests per second over [`RUN`] from [`CONNECTIONS`] connections, each cycling through its own URLs.
pub(super) async fn throughput(urls: Vec<Vec<String>>, method: Method) -> f64 {
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

/// One GET of every URL, a connection per list, before a measured run.
pub(super) async fn poll_each_once(urls: &[Vec<String>]) {
    let mut tasks = Vec::new();
    for mine in urls {
        let mine = mine.clone();
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            for url in &mine {
                let polled = client.get(url).send().await.expect("warm poll");
                assert!(
                    polled.status().is_success(),
                    "warm poll: {}",
                    polled.status()
                );
            }
        }));
    }
    for task in tasks {
        task.await.expect("warm pass");
    }
}

/// Single-row insert transactions of `row_bytes` from [`CONNECTIONS`] tasks, on a fresh database with the
/// store's own connection settings.
pub(super) async fn bare_inserts(args: &Args, row_bytes: usize) -> f64 {
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

pub(super) fn percentile(samples: &[Duration], p: f64) -> Duration {
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

pub(super) fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}
