//! `cargo xtask bench`: Anteroom's hot paths measured against a ceiling measured in the same run on the same
//! machine (a constant JSON handler, a bare insert loop, a bare UPDATE, a loopback round trip), printed as one
//! table. Ratios, not absolute numbers, are what stay comparable on a noisy two-core machine.
//!
//! Arguments: `--binary PATH` (the release `anteroom`, for resident memory), `--site PATH` (the release site,
//! for the bundle size), `--postgres URL` (run on a PostgreSQL schema of its own instead of SQLite), `--only
//! NAME` (the figures whose name contains it, from [`FIGURES`] — for profiling), `--soak-minutes N` (the soak of
//! [`soak`] instead of the figures), `--instances N` (how many instances share the PostgreSQL schema in the
//! askers figure and the soak; 2 unless given).

#![allow(
    clippy::print_stdout,
    reason = "the benchmark reports its table on stdout"
)]

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
    people::add_user,
};
use anteroom_store::{PostgresStore, SqliteStore, Store, StoreOptions, testing::TestSchema};
use axum::{Json, Router, routing::get};
use serde_json::{Value, json};
use tokio::{net::TcpListener, sync::oneshot};

mod askers;
mod hot_paths;
mod instance;
mod live;
mod load;
mod process;
mod scale;
mod soak;

use askers::*;
use instance::*;
use load::*;
use process::*;
use scale::*;
use soak::*;

/// The binary's allocator (server/src/main.rs), so the in-process server costs what the binary's does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Run the soak of this many minutes instead of the figures.
    soak_minutes: Option<u64>,
    /// Instances on one PostgreSQL schema for the askers and the soak (SQLite runs one).
    postgres_instances: usize,
}

/// The figures `--only` can pick, in the order they run.
const FIGURES: [&str; 14] = [
    "polls",
    "creates",
    "rule-cost",
    "latency",
    "hook",
    "push",
    "live",
    "queue",
    "expiry",
    "response-times",
    "memory",
    "bundle",
    "wire",
    "askers",
];

/// The arguments, or what is wrong with them: `cargo xtask bench -- ARGS` passes them through, and a typo
/// should not silently cost a full run.
fn args() -> Result<Args, String> {
    let mut args = Args {
        only: None,
        binary: None,
        site: PathBuf::from("target/site"),
        postgres: None,
        soak_minutes: None,
        postgres_instances: 2,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(arg) = raw.next() {
        let mut value = || raw.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--binary" => args.binary = Some(PathBuf::from(value()?)),
            "--site" => args.site = PathBuf::from(value()?),
            "--postgres" => args.postgres = Some(value()?),
            "--soak-minutes" => {
                let minutes = value()?;
                args.soak_minutes = Some(
                    minutes
                        .parse()
                        .ok()
                        .filter(|minutes| *minutes > 0)
                        .ok_or_else(|| {
                            format!("--soak-minutes {minutes} is not a whole number of minutes")
                        })?,
                );
            }
            "--instances" => {
                let instances = value()?;
                args.postgres_instances = instances
                    .parse()
                    .ok()
                    .filter(|instances| (1..=8).contains(instances))
                    .ok_or_else(|| format!("--instances {instances} is not 1 to 8"))?;
            }
            "--only" => {
                let only = value()?;
                if !FIGURES.iter().any(|name| name.contains(only.as_str())) {
                    return Err(format!(
                        "--only {only} names no figure; one of: {}",
                        FIGURES.join(", ")
                    ));
                }
                args.only = Some(only);
            }
            // `cargo bench` passes it to every bench binary.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
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

#[expect(
    clippy::disallowed_methods,
    reason = "main decides the exit: a mistyped argument must not run the whole 12-minute table"
)]
fn main() {
    let args = args().unwrap_or_else(|problem| {
        eprintln!("bench: {problem}");
        std::process::exit(2);
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let figures = runtime.block_on(run(&args));
    print_table(&figures, &args);
}

async fn run(args: &Args) -> Vec<Figure> {
    if let Some(minutes) = args.soak_minutes {
        return soak(args, minutes).await;
    }
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
    if wanted("rule-cost") {
        // On an instance of its own: a rule made here stays in force for the figures after it.
        let fresh = Bench::start(args, Arc::new(SystemClock)).await;
        figures.push(fresh.creates_with_a_rule().await);
        fresh.stop().await;
    }
    if wanted("latency") {
        figures.extend(bench.latencies().await);
    }
    if wanted("hook") {
        figures.push(bench.hook_pass_through().await);
    }
    if wanted("push") {
        // On an instance of its own: a browser with push on makes every later question a push.
        let fresh = Bench::start(args, Arc::new(SystemClock)).await;
        figures.push(fresh.push_arrival().await);
        fresh.stop().await;
    }
    if wanted("live") {
        // On an instance of its own: the figures before leave thousands of older open questions, which would
        // fill the queue's first 200 sessions ahead of these.
        let fresh = Bench::start(args, Arc::new(SystemClock)).await;
        figures.extend(fresh.live_updates().await);
        fresh.stop().await;
    }
    bench.stop().await;
    if wanted("queue") {
        figures.push(queue_render(args).await);
    }
    if wanted("expiry") {
        figures.push(expiry_sweep(args).await);
    }
    if wanted("response-times") {
        figures.push(response_times_page(args).await);
    }
    if wanted("memory") {
        figures.extend(resident_memory(args).await);
    }
    if wanted("bundle") {
        figures.push(bundle_size(args));
    }
    if wanted("wire") {
        figures.push(first_visit_bytes(args).await);
    }
    if wanted("askers") {
        figures.extend(askers(args).await);
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
