//! Many askers at once: 10,000 pending questions each polled every 5 s (2,000 polls a second) for a minute
//! against the release binary — poll latency, the server's CPU and memory — on one instance (SQLite) or
//! spread over two instances sharing one PostgreSQL database (`--postgres`).

use super::*;

/// Askers, each waiting on one pending question.
const ASKERS: usize = 10_000;
/// Sessions the questions belong to (ten questions each).
const ASKER_SESSIONS: usize = 1_000;
/// How often each asker polls, as the reference client does.
const POLL_EVERY: Duration = Duration::from_secs(5);
const ASKERS_RUN: Duration = Duration::from_secs(60);
/// Connections the askers share (a real asker holds one of its own; one process cannot open 10,000).
const ASKER_CONNECTIONS: usize = 200;

/// CPU time (user + system) a process has used, from `/proc`.
pub(super) fn cpu_seconds(pid: u32) -> f64 {
    let ticks = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // The fields after the command name, which is in parentheses and may hold spaces.
            let rest = stat.rsplit_once(')')?.1.to_owned();
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let user: u64 = fields.get(11)?.parse().ok()?;
            let system: u64 = fields.get(12)?.parse().ok()?;
            Some(user + system)
        })
        .unwrap_or(0);
    // The kernel's clock ticks are 100 a second on every Linux this runs on.
    ticks as f64 / 100.0
}

/// The release binary over a throwaway database: one instance on SQLite, or two sharing one PostgreSQL schema
/// (`--postgres`), as a load balancer would put them; and a store on the same database to set up data.
pub(super) struct Fleet {
    /// Each instance and its base URL.
    pub(super) servers: Vec<(tokio::process::Child, String)>,
    pub(super) store: Arc<dyn Store>,
    /// The SQLite file, for counting its connections.
    pub(super) sqlite_file: Option<PathBuf>,
    pub(super) schema: Option<TestSchema>,
    _dir: tempfile::TempDir,
}

impl Fleet {
    /// Starts the instances; on PostgreSQL each names itself `anteroom-{name}-{i}` to the database, so its
    /// connections can be counted.
    pub(super) async fn start(args: &Args, binary: &std::path::Path, name: &str) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let sqlite_file = dir.path().join(format!("{name}.sqlite3"));
        let (urls, schema) = match &args.postgres {
            Some(url) => {
                let schema = TestSchema::create(url).await.expect("PostgreSQL schema");
                let separator = if url.contains('?') { "&" } else { "?" };
                let urls = (0..args.postgres_instances)
                    .map(|i| {
                        format!(
                            "{url}{separator}options=-c%20search_path%3D{}&application_name=anteroom-{name}-{i}",
                            schema.name()
                        )
                    })
                    .collect();
                (urls, Some(schema))
            }
            None => (vec![format!("sqlite://{}", sqlite_file.display())], None),
        };
        let channel = format!("anteroom_bench_{}", uuid::Uuid::now_v7().simple());
        let mut servers = Vec::new();
        for url in &urls {
            servers.push(
                start_release_binary_with(
                    binary,
                    &args.site,
                    url,
                    &[("ANTEROOM_EVENT_CHANNEL", channel.as_str())],
                )
                .await,
            );
        }
        let store: Arc<dyn Store> = match &schema {
            Some(schema) => Arc::new(PostgresStore::from_pool(
                schema.pool.clone(),
                StoreOptions::default(),
            )),
            None => Arc::new(
                SqliteStore::connect(&urls[0], StoreOptions::default())
                    .await
                    .expect("SQLite"),
            ),
        };
        Self {
            servers,
            store,
            sqlite_file: schema.is_none().then_some(sqlite_file),
            schema,
            _dir: dir,
        }
    }

    pub(super) fn pids(&self) -> Vec<u32> {
        self.servers
            .iter()
            .map(|(server, _)| server.id().expect("pid"))
            .collect()
    }

    /// The instances as `one instance` or `2 instances`.
    pub(super) fn described(&self) -> String {
        match self.servers.len() {
            1 => "one instance".to_owned(),
            n => format!("{n} instances"),
        }
    }

    pub(super) async fn stop(self) {
        for (mut server, _) in self.servers {
            let _ = server.kill().await;
        }
        if let Some(schema) = self.schema {
            let _ = schema.drop_schema().await;
        }
    }
}

pub(super) async fn askers(args: &Args) -> Vec<Figure> {
    let Some(binary) = args.binary.as_ref().filter(|binary| binary.exists()) else {
        eprintln!("bench: no --binary given; askers skipped");
        return Vec::new();
    };
    let rate = ASKERS as f64 / POLL_EVERY.as_secs_f64();
    eprintln!(
        "bench: {ASKERS} askers polling every {} s ({rate:.0}/s) for {} s",
        POLL_EVERY.as_secs(),
        ASKERS_RUN.as_secs()
    );
    let fleet = Fleet::start(args, binary, "askers").await;
    let (servers, store) = (&fleet.servers, &fleet.store);
    let sessions = sessions_with_tokens(store.as_ref(), "asker", ASKER_SESSIONS).await;
    let per_session = ASKERS / ASKER_SESSIONS;
    let mut polls = Vec::new();
    let mut batch = Vec::new();
    for (s, (id, token)) in sessions.iter().enumerate() {
        for q in 0..per_session {
            let request_id = format!("{id}-q{q}");
            batch.push(new_round(id, &request_id, "Which environment?"));
            // Askers alternate between the instances, as a load balancer would spread them.
            let base = &servers[(s * per_session + q) % servers.len()].1;
            polls.push(format!("{base}/api/v1/s/{token}/elicitations/{request_id}"));
        }
        if batch.len() >= 256 || s + 1 == sessions.len() {
            let futures = batch.drain(..).map(|round| store.create_round(round));
            for result in futures::future::join_all(futures).await {
                result.expect("round");
            }
        }
    }

    let pids = fleet.pids();
    let cpu_before: Vec<f64> = pids.iter().map(|pid| cpu_seconds(*pid)).collect();
    let started = Instant::now() + Duration::from_millis(200);
    let failed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let polls = Arc::new(polls);
    for connection in 0..ASKER_CONNECTIONS {
        let (polls, failed) = (polls.clone(), failed.clone());
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .expect("client");
            // This connection's askers, each at its own offset within the 5 s.
            let mine: Vec<usize> = (connection..ASKERS).step_by(ASKER_CONNECTIONS).collect();
            let mut samples = Vec::new();
            let mut round = 0_u32;
            'run: loop {
                for &asker in &mine {
                    let offset = POLL_EVERY.mul_f64(asker as f64 / ASKERS as f64);
                    let due = started + POLL_EVERY * round + offset;
                    if due >= started + ASKERS_RUN {
                        break 'run;
                    }
                    tokio::time::sleep_until(due.into()).await;
                    let ok = match client.get(&polls[asker]).send().await {
                        Ok(reply) => reply.status().is_success() && reply.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    if ok {
                        // From when the poll was due, so a stalled server is not hidden by late sends.
                        samples.push(due.elapsed());
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                round += 1;
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.unwrap_or_default());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu: Vec<f64> = pids
        .iter()
        .zip(&cpu_before)
        .map(|(pid, before)| (cpu_seconds(*pid) - before) / elapsed * 100.0)
        .collect();
    let rss: Vec<u64> = pids.iter().map(|pid| rss_kib(*pid)).collect();
    let instances = fleet.described();
    fleet.stop().await;
    let failed = failed.load(Ordering::Relaxed);
    let (p50, p99) = (percentile(&samples, 50.0), percentile(&samples, 99.0));
    let served = samples.len() as f64 / elapsed;
    let each = |values: Vec<String>| values.join(" + ");
    vec![Figure::new(
        &format!("{ASKERS} askers polling every 5 s for 60 s, {instances}"),
        format!(
            "p50 {} · p99 {} · {served:.0} polls/s · {failed} failed",
            ms(p50),
            ms(p99)
        ),
        format!(
            "CPU {} of one core · RSS {}",
            each(cpu.iter().map(|c| format!("{c:.0}%")).collect()),
            each(
                rss.iter()
                    .map(|kib| format!("{:.1} MiB", *kib as f64 / 1024.0))
                    .collect()
            )
        ),
        "—".to_owned(),
        "p99 ≤ 50 ms, none failed",
        Some(p99 <= Duration::from_millis(50) && failed == 0),
    )]
}
