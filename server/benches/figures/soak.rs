//! The soak: 10,000 askers polling every 5 s, 20 answers a second and 200 open page streams against the release
//! binary for minutes on end, sampling its memory, open files, database connections and poll latency every
//! 10 s — so a slow leak or a creeping tail shows as a trend, not hidden in one figure.
//!
//! It runs in two phases on the same instances: a minute of askers alone (the ceiling: the askers figure of
//! the bench, measured in the same run), then the soak itself with the answers and the streams added.

use std::{collections::BTreeMap, sync::Mutex};

use super::*;

const ASKERS: usize = 10_000;
/// Sessions the questions belong to (ten askers each).
const SESSIONS: usize = 1_000;
/// How often each asker polls, as the reference client does.
const POLL_EVERY: Duration = Duration::from_secs(5);
const ANSWERS_PER_SECOND: u64 = 20;
/// Signed-in pages holding the live queue open.
const STREAMS: usize = 200;
/// Connections the askers share (one process cannot open 10,000).
const ASKER_CONNECTIONS: usize = 200;
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The askers alone, before the answers and streams start: the soak's own ceiling.
const BASELINE: Duration = Duration::from_secs(60);

/// One asker: the question it is waiting on, replaced by a new one once it reads an answer.
struct Asker {
    base: String,
    token: String,
    request_id: Mutex<String>,
}

impl Asker {
    fn current(&self) -> String {
        self.request_id
            .lock()
            .map(|id| id.clone())
            .unwrap_or_default()
    }
}

/// What every task reports into, read and reset by the sampler each [`SAMPLE_EVERY`].
#[derive(Default)]
struct Tally {
    /// Poll latencies of the current window, each from when the poll was due.
    window: Mutex<Vec<Duration>>,
    answered: AtomicU64,
    delivered: AtomicU64,
    reconnects: AtomicU64,
    stream_events: AtomicU64,
    /// Failures by what failed (a status or an error kind): few distinct keys.
    errors: Mutex<BTreeMap<String, u64>>,
}

impl Tally {
    fn failed(&self, what: String) {
        if let Ok(mut errors) = self.errors.lock() {
            *errors.entry(what).or_default() += 1;
        }
    }

    fn error_count(&self) -> u64 {
        self.errors.lock().map(|e| e.values().sum()).unwrap_or(0)
    }
}

/// One sample of the instances and the askers' latency over the last window.
struct Sample {
    at: Duration,
    soaking: bool,
    rss_kib: Vec<u64>,
    files: Vec<usize>,
    connections: Vec<u64>,
    polls: Vec<Duration>,
}

/// Open file descriptors of a process.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// How many descriptors of `pid` open the SQLite file itself (one per connection; the `-wal` and `-shm` files
/// are not counted).
fn sqlite_connections(pid: u32, file: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| std::fs::read_link(entry.path()).is_ok_and(|target| target == file))
        .count() as u64
}

impl Fleet {
    /// Each instance's open connections to its database.
    #[expect(
        clippy::disallowed_methods,
        reason = "the soak reads PostgreSQL's own view of its connections, not Anteroom's data"
    )]
    async fn database_connections(&self, pids: &[u32]) -> Vec<u64> {
        match (&self.schema, &self.sqlite_file) {
            (Some(schema), _) => {
                let mut counts = Vec::new();
                for i in 0..self.servers.len() {
                    let count: i64 = sqlx::query_scalar(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                    )
                    .bind(format!("anteroom-soak-{i}"))
                    .fetch_one(&schema.pool)
                    .await
                    .unwrap_or(0);
                    counts.push(u64::try_from(count).unwrap_or(0));
                }
                counts
            }
            (None, Some(file)) => pids
                .iter()
                .map(|pid| sqlite_connections(*pid, file))
                .collect(),
            (None, None) => Vec::new(),
        }
    }
}

pub(super) async fn soak(args: &Args, minutes: u64) -> Vec<Figure> {
    let Some(binary) = args.binary.as_ref().filter(|binary| binary.exists()) else {
        eprintln!("soak: no --binary given");
        return Vec::new();
    };
    let run = Duration::from_secs(minutes * 60);
    let fleet = Fleet::start(args, binary, "soak").await;
    let store = fleet.store.clone();
    let admin_key = credentials::generate(credentials::API_KEY_PREFIX);
    store
        .create_api_key(
            &ApiKey {
                id: "soak".to_owned(),
                name: "soak".to_owned(),
                role: Role::Admin,
            },
            &credentials::hash(&admin_key),
            "bench",
        )
        .await
        .expect("api key");
    eprintln!("soak: {ASKERS} pending questions over {SESSIONS} sessions");
    let sessions = sessions_with_tokens(store.as_ref(), "soak", SESSIONS).await;
    let mut askers = Vec::new();
    let mut batch = Vec::new();
    for (s, (id, token)) in sessions.iter().enumerate() {
        for q in 0..ASKERS / SESSIONS {
            let request_id = uuid::Uuid::new_v4().to_string();
            batch.push(new_round(id, &request_id, "Which environment?"));
            // Askers alternate between the instances, as a load balancer would spread them.
            let index = s * (ASKERS / SESSIONS) + q;
            askers.push(Asker {
                base: fleet.servers[index % fleet.servers.len()].1.clone(),
                token: token.clone(),
                request_id: Mutex::new(request_id),
            });
        }
        if batch.len() >= 256 || s + 1 == sessions.len() {
            let futures = batch.drain(..).map(|round| store.create_round(round));
            for result in futures::future::join_all(futures).await {
                result.expect("round");
            }
        }
    }
    let askers = Arc::new(askers);
    let tally = Arc::new(Tally::default());
    let pids = fleet.pids();
    let started = Instant::now() + Duration::from_millis(200);
    let soak_starts = started + BASELINE;
    let ends = soak_starts + run;
    eprintln!(
        "soak: {} s of askers alone, then {minutes} min with {ANSWERS_PER_SECOND} answers/s and {STREAMS} page streams, {}",
        BASELINE.as_secs(),
        fleet.described()
    );

    let mut tasks = Vec::new();
    for connection in 0..ASKER_CONNECTIONS {
        tasks.push(tokio::spawn(poll_as_askers(
            askers.clone(),
            tally.clone(),
            connection,
            started,
            ends,
        )));
    }

    // The sampler runs here; the answers and streams start when the baseline ends.
    let mut samples = Vec::new();
    let mut next = started + SAMPLE_EVERY;
    let mut soaking = false;
    while next <= ends {
        tokio::time::sleep_until(next.into()).await;
        if !soaking && next >= soak_starts {
            soaking = true;
            let cookie = sign_in(&fleet.servers[0].1, store.as_ref()).await;
            for page in 0..STREAMS {
                let base = fleet.servers[page % fleet.servers.len()].1.clone();
                tasks.push(tokio::spawn(hold_stream(
                    base,
                    cookie.clone(),
                    tally.clone(),
                    ends,
                )));
            }
            tasks.push(tokio::spawn(answer_steadily(
                askers.clone(),
                tally.clone(),
                admin_key.clone(),
                ends,
            )));
        }
        let polls = tally
            .window
            .lock()
            .map(|mut window| std::mem::take(&mut *window))
            .unwrap_or_default();
        let sample = Sample {
            at: next.saturating_duration_since(started),
            soaking,
            rss_kib: pids.iter().map(|pid| rss_kib(*pid)).collect(),
            files: pids.iter().map(|pid| open_files(*pid)).collect(),
            connections: fleet.database_connections(&pids).await,
            polls,
        };
        eprintln!(
            "soak: {:>4} s {} rss {} · files {:?} · database connections {:?} · {} polls, p99 {} · answered {} · delivered {} · stream events {} · reconnects {} · errors {}",
            sample.at.as_secs(),
            if sample.soaking {
                "soak    "
            } else {
                "baseline"
            },
            sample
                .rss_kib
                .iter()
                .map(|kib| format!("{:.1} MiB", *kib as f64 / 1024.0))
                .collect::<Vec<_>>()
                .join(" + "),
            sample.files,
            sample.connections,
            sample.polls.len(),
            ms(percentile(&sample.polls, 99.0)),
            tally.answered.load(Ordering::Relaxed),
            tally.delivered.load(Ordering::Relaxed),
            tally.stream_events.load(Ordering::Relaxed),
            tally.reconnects.load(Ordering::Relaxed),
            tally.error_count(),
        );
        samples.push(sample);
        next += SAMPLE_EVERY;
    }
    for task in tasks {
        let _ = task.await;
    }
    let instances = fleet.described();
    fleet.stop().await;
    figures(&samples, &tally, minutes, &instances)
}

/// The verdicts: memory, files and connections flat from the soak's first minute to its last; the soak's p99
/// within twice the askers-alone p99 of the same run; nothing failed.
fn figures(samples: &[Sample], tally: &Tally, minutes: u64, instances: &str) -> Vec<Figure> {
    let per_minute = usize::try_from(60 / SAMPLE_EVERY.as_secs()).unwrap_or(6);
    let soak: Vec<&Sample> = samples.iter().filter(|s| s.soaking).collect();
    let first = &soak[..per_minute.min(soak.len())];
    let last = &soak[soak.len().saturating_sub(per_minute)..];
    // The worst instance's highest reading in a minute.
    let peak = |window: &[&Sample], read: &dyn Fn(&Sample) -> Vec<u64>| {
        window
            .iter()
            .flat_map(|s| read(s))
            .max()
            .unwrap_or_default()
    };
    let rss = |s: &Sample| s.rss_kib.clone();
    let files = |s: &Sample| s.files.iter().map(|f| *f as u64).collect();
    let connections = |s: &Sample| s.connections.clone();
    let flat = |first: u64, last: u64| last as f64 <= first as f64 * 1.1;
    let (rss_first, rss_last) = (peak(first, &rss), peak(last, &rss));
    let (files_first, files_last) = (peak(first, &files), peak(last, &files));
    let (connections_first, connections_last) =
        (peak(first, &connections), peak(last, &connections));

    let polls_of = |soaking: bool| -> Vec<Duration> {
        samples
            .iter()
            .filter(|s| s.soaking == soaking)
            .flat_map(|s| s.polls.iter().copied())
            .collect()
    };
    let (baseline, soaked) = (polls_of(false), polls_of(true));
    let baseline_p99 = percentile(&baseline, 99.0);
    let soak_p99 = percentile(&soaked, 99.0);
    let worst_minute = soak
        .chunks(per_minute)
        .map(|minute| {
            let polls: Vec<Duration> = minute
                .iter()
                .flat_map(|s| s.polls.iter().copied())
                .collect();
            percentile(&polls, 99.0)
        })
        .max()
        .unwrap_or_default();
    let ratio = soak_p99.as_secs_f64() / baseline_p99.as_secs_f64().max(1e-6);
    let errors = tally
        .errors
        .lock()
        .map(|errors| {
            errors
                .iter()
                .map(|(what, n)| format!("{n} {what}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let answered = tally.answered.load(Ordering::Relaxed);
    let delivered = tally.delivered.load(Ordering::Relaxed);
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let load = format!("{minutes} min, {instances}");
    vec![
        Figure::new(
            &format!("soak: resident memory, {load}"),
            format!("last minute {}", mib(rss_last)),
            format!("first minute {}", mib(rss_first)),
            format!("{:.2}×", rss_last as f64 / rss_first.max(1) as f64),
            "≤ 1.1×",
            Some(flat(rss_first, rss_last)),
        ),
        Figure::new(
            &format!("soak: open files · database connections, {load}"),
            format!("last minute {files_last} · {connections_last}"),
            format!("first minute {files_first} · {connections_first}"),
            "—".to_owned(),
            "each ≤ 1.1× its first minute",
            Some(flat(files_first, files_last) && flat(connections_first, connections_last)),
        ),
        Figure::new(
            &format!(
                "soak: {ASKERS} askers' polls with {ANSWERS_PER_SECOND} answers/s and {STREAMS} page streams, {load}"
            ),
            format!(
                "p50 {} · p99 {} · worst minute p99 {} · {} polls",
                ms(percentile(&soaked, 50.0)),
                ms(soak_p99),
                ms(worst_minute),
                soaked.len()
            ),
            format!(
                "askers alone, first {} s: p99 {}",
                BASELINE.as_secs(),
                ms(baseline_p99)
            ),
            format!("p99 {ratio:.1}×"),
            "p99 ≤ 2×",
            Some(ratio <= 2.0),
        ),
        Figure::new(
            &format!("soak: failures, {load}"),
            if errors.is_empty() {
                "none".to_owned()
            } else {
                errors
            },
            format!(
                "{answered} answered, {delivered} read by their askers, {} stream events, {} stream reconnects",
                tally.stream_events.load(Ordering::Relaxed),
                tally.reconnects.load(Ordering::Relaxed)
            ),
            "—".to_owned(),
            "none",
            Some(tally.error_count() == 0),
        ),
    ]
}

/// One connection's share of the askers, each polling at its own offset within the 5 s until `ends`; an asker
/// that reads an answer asks a new question, as an agent's next tool call would.
async fn poll_as_askers(
    askers: Arc<Vec<Asker>>,
    tally: Arc<Tally>,
    connection: usize,
    started: Instant,
    ends: Instant,
) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mine: Vec<usize> = (connection..ASKERS).step_by(ASKER_CONNECTIONS).collect();
    let mut round = 0_u32;
    loop {
        for &index in &mine {
            let offset = POLL_EVERY.mul_f64(index as f64 / ASKERS as f64);
            let due = started + POLL_EVERY * round + offset;
            if due >= ends {
                return;
            }
            tokio::time::sleep_until(due.into()).await;
            let asker = &askers[index];
            let request_id = asker.current();
            let url = format!(
                "{}/api/v1/s/{}/elicitations/{request_id}",
                asker.base, asker.token
            );
            let reply = match client.get(&url).send().await {
                Ok(reply) if reply.status().is_success() => reply.json::<Value>().await,
                Ok(reply) => {
                    tally.failed(format!("polls answered {}", reply.status().as_u16()));
                    continue;
                }
                Err(error) => {
                    tally.failed(format!("polls failed ({})", error_kind(&error)));
                    continue;
                }
            };
            let Ok(reply) = reply else {
                tally.failed("poll replies unreadable".to_owned());
                continue;
            };
            // From when the poll was due, so a stalled server is not hidden by late sends.
            if let Ok(mut window) = tally.window.lock() {
                window.push(due.elapsed());
            }
            if reply["action"] != "pending" {
                tally.delivered.fetch_add(1, Ordering::Relaxed);
                ask_again(&client, asker, &tally).await;
            }
        }
        round += 1;
    }
}

/// The asker's next question, under a new request id.
async fn ask_again(client: &reqwest::Client, asker: &Asker, tally: &Tally) {
    let request_id = uuid::Uuid::new_v4().to_string();
    let created = client
        .post(format!("{}/api/v1/s/{}/elicitations", asker.base, asker.token))
        .json(&json!({
            "mode": "form",
            "message": "Which environment?",
            "requestedSchema": {"type": "object", "properties": {"env": {"type": "string", "enum": ["staging", "production"]}}, "required": ["env"]},
            "_meta": {"com.pulsemcp/request-id": request_id}
        }))
        .send()
        .await;
    match created {
        Ok(reply) if reply.status().is_success() => {
            if let Ok(mut current) = asker.request_id.lock() {
                *current = request_id;
            }
        }
        Ok(reply) => tally.failed(format!("creates answered {}", reply.status().as_u16())),
        Err(error) => tally.failed(format!("creates failed ({})", error_kind(&error))),
    }
}

/// Answers [`ANSWERS_PER_SECOND`] askers' questions through the API until `ends`, walking the askers in a
/// stride so consecutive answers land on different sessions and instances.
async fn answer_steadily(
    askers: Arc<Vec<Asker>>,
    tally: Arc<Tally>,
    admin_key: String,
    ends: Instant,
) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / ANSWERS_PER_SECOND));
    let mut n = 0_usize;
    while Instant::now() < ends {
        tick.tick().await;
        // 7919 is prime, so the stride visits every asker before repeating one.
        let asker = &askers[(n * 7919) % ASKERS];
        n += 1;
        let reply = client
            .patch(format!(
                "{}/api/v1/elicitations/{}/respond",
                asker.base,
                asker.current()
            ))
            .bearer_auth(&admin_key)
            .json(&json!({"action_type": "accept", "content": {"env": "staging"}}))
            .send()
            .await;
        match reply {
            Ok(reply) if reply.status().is_success() => {
                tally.answered.fetch_add(1, Ordering::Relaxed);
            }
            Ok(reply) => tally.failed(format!("answers refused {}", reply.status().as_u16())),
            Err(error) => tally.failed(format!("answers failed ({})", error_kind(&error))),
        }
    }
}

/// A signed-in page's live stream, held open until `ends`; a stream the server ends is opened again, as a
/// browser's `EventSource` would.
async fn hold_stream(base: String, cookie: String, tally: Arc<Tally>, ends: Instant) {
    let client = reqwest::Client::new();
    let mut opened = false;
    while Instant::now() < ends {
        if opened {
            tally.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        opened = true;
        let stream = client
            .get(format!("{base}/fn/live"))
            .header("cookie", &cookie)
            .send()
            .await;
        let mut stream = match stream {
            Ok(stream) if stream.status().is_success() => stream,
            Ok(stream) => {
                tally.failed(format!("streams refused {}", stream.status().as_u16()));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(error) => {
                tally.failed(format!("streams failed ({})", error_kind(&error)));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        loop {
            let chunk = tokio::time::timeout_at(ends.into(), stream.chunk()).await;
            match chunk {
                // The soak is over.
                Err(_) => return,
                Ok(Ok(Some(chunk))) => {
                    let events = chunk.windows(2).filter(|pair| pair == b"\n\n").count();
                    tally
                        .stream_events
                        .fetch_add(events as u64, Ordering::Relaxed);
                }
                Ok(Ok(None)) => break,
                Ok(Err(error)) => {
                    tally.failed(format!("streams broke ({})", error_kind(&error)));
                    break;
                }
            }
        }
    }
}

fn error_kind(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timeout"
    } else if error.is_connect() {
        "connect"
    } else if error.is_body() || error.is_decode() {
        "body"
    } else {
        "request"
    }
}
