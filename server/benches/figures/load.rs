//! The load generators and the arithmetic of samples: throughput over many connections, bare inserts, percentiles.

use super::*;

/// Questions created per second over [`RUN`] from [`CONNECTIONS`] connections, each posting to its own URLs
/// in turn, a new request id each time.
pub(super) async fn create_throughput(urls: Vec<Vec<String>>) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let measure_from = start + WARM_UP;
    let end = measure_from + RUN;
    let mut tasks = Vec::new();
    for (connection, mine) in urls.into_iter().enumerate() {
        let (done, failed) = (done.clone(), failed.clone());
        tasks.push(tokio::spawn(async move {
            let client = kept_alive_client();
            let mut n: usize = 0;
            while Instant::now() < end {
                let url = &mine[n % mine.len()];
                let id = format!("c{connection}-{n}-{}", uuid::Uuid::new_v4().simple());
                let sent = client
                    .post(url)
                    .json(&json!({
                        "mode": "form",
                        "message": "Which environment?",
                        "requestedSchema": {"type": "object", "properties": {"env": {"type": "string", "enum": ["staging", "production"]}, "note": {"type": "string"}}, "required": ["env"]},
                        "_meta": {"com.pulsemcp/request-id": id, "com.pulsemcp/tool-name": "deploy"}
                    }))
                    .send()
                    .await;
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

/// One client per load task: one kept-alive connection each.
fn kept_alive_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .expect("client")
}

/// Slices of [`interleaved_throughput`]: each side runs alone for [`SLICE`], counted after [`SETTLE`] (the
/// other side's last requests are still finishing then), [`ROUNDS`] times.
const SLICE: Duration = Duration::from_millis(500);
const SETTLE: Duration = Duration::from_millis(100);
const ROUNDS: u32 = 8;

/// Which side of an interleaved run may send, since when.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Turn {
    side: usize,
    since: Instant,
}

/// GETs per second of `measured` and of `ceiling`, each from its own kept-alive connections, in alternating
/// slices. The machine's speed drifts (other tenants, clock frequency): run one after the other, the two
/// figures once differed by half between runs of the same build, and their ratio with them. Alternating,
/// a drift falls on both sides alike.
pub(super) async fn interleaved_throughput(
    measured: Vec<Vec<String>>,
    ceiling: Vec<Vec<String>>,
) -> (f64, f64) {
    const STOP: usize = usize::MAX;
    let (turn, _) = tokio::sync::watch::channel(Turn {
        side: STOP - 1,
        since: Instant::now(),
    });
    let counts = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
    let failed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (side, lists) in [measured, ceiling].into_iter().enumerate() {
        for mine in lists {
            // Parsed once: the client's cost per request stays the same on both sides, whatever the URL's
            // length (a poll's carries a 68-character token), so the ratio prices the servers.
            let mine: Vec<reqwest::Url> = mine
                .iter()
                .map(|url| reqwest::Url::parse(url).expect("URL"))
                .collect();
            let mut turns = turn.subscribe();
            let (done, failed) = (counts[side].clone(), failed.clone());
            tasks.push(tokio::spawn(async move {
                let client = kept_alive_client();
                let mut n: usize = 0;
                loop {
                    let Ok(turn) = turns
                        .wait_for(|turn| turn.side == side || turn.side == STOP)
                        .await
                        .map(|turn| *turn)
                    else {
                        return;
                    };
                    if turn.side != side {
                        return;
                    }
                    let since = turn.since;
                    let ok = match client.get(mine[n % mine.len()].clone()).send().await {
                        Ok(reply) => reply.status().is_success() && reply.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    n += 1;
                    let still = *turns.borrow();
                    if still.side == side && still.since == since && since.elapsed() >= SETTLE {
                        if ok {
                            done.fetch_add(1, Ordering::Relaxed);
                        } else {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
    }
    for _ in 0..ROUNDS {
        for side in 0..2 {
            turn.send_replace(Turn {
                side,
                since: Instant::now(),
            });
            tokio::time::sleep(SLICE).await;
        }
    }
    turn.send_replace(Turn {
        side: STOP,
        since: Instant::now(),
    });
    for task in tasks {
        let _ = task.await;
    }
    let failures = failed.load(Ordering::Relaxed);
    if failures > 0 {
        eprintln!("bench: {failures} requests failed during the run (not counted)");
    }
    let counted = SLICE.saturating_sub(SETTLE).as_secs_f64() * f64::from(ROUNDS);
    let rate = |count: &AtomicU64| count.load(Ordering::Relaxed) as f64 / counted;
    (rate(&counts[0]), rate(&counts[1]))
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
#[expect(
    clippy::disallowed_methods,
    reason = "the ceiling is a bare statement beside the store's, so it is written here, not in the store"
)]
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
            // The store's own pool: its connection count and settings (WAL, synchronous NORMAL, a busy timeout).
            let url = format!("sqlite://{}", dir.path().join("bench.sqlite3").display());
            let store = SqliteStore::connect(&url, StoreOptions::default())
                .await
                .expect("SQLite");
            run_on!(store.pool().clone());
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
