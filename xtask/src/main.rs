//! Anteroom's task runner: builds the site without cargo-leptos, runs the server, and runs every test.
//!
//! `cargo xtask run` and `cargo xtask test` are the two commands a newcomer needs (see README.md). Everything
//! they depend on beyond the Rust toolchain is installed here on first use, from the package registries only:
//! the wasm target through rustup, Playwright and wasm-opt through npm. wasm-bindgen is linked into this
//! program as a library, so no separate `wasm-bindgen-cli` install is needed.

#![allow(clippy::print_stdout, reason = "a task runner reports to its terminal")]

mod architecture;
mod assets;
mod background;
mod budgets;
mod check;
mod container;
mod conventions;
mod dist;
mod fuzz;
mod runs;
mod site;
mod tools;

use std::{
    env,
    path::{Path, PathBuf},
    process::{Command, ExitCode},
};

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  run [--release] [-- ARGS]   build the site and the server, then run `anteroom ARGS` (default: serve)
  build [--release]           build the browser bundle into target/site and the anteroom binary
  dist [--musl]               release build, then dist/anteroom-<version>-x86_64-linux: one file holding the
                              server and the site, its SHA-256 beside it, checked from an empty folder
                              (--musl: statically linked; needs Debian's musl-tools)
  container [-- PODMAN_FLAGS]  dist --musl, then build the Containerfile's image with Podman and run it: /readyz
                              through the published port, the HEALTHCHECK, a non-root user (PODMAN_FLAGS go
                              before podman's sub-command, e.g. --runtime runc --cgroup-manager cgroupfs)
  test                        run every check: fmt, clippy, unit and integration tests (SQLite, and
                              PostgreSQL when ANTEROOM_TEST_POSTGRES_URL is set), Playwright in Chromium
  architecture                write docs/architecture.md from cargo metadata: the crates, each one's job and
                              the arrows between them (`test` fails when the page is stale)
  budgets                     the release-profile bundle, then the byte budgets of budgets.toml against it
                              (the debug binary `cargo xtask test` built serves it; `test` runs them too)
  lint                        cargo fmt --check and clippy for the server and the browser builds (compiled
                              as the tests compile them, so a later `test` reuses the build)
  bench [--postgres] [-- ARGS]
                              release build, then every benchmark figure against its ceiling, as a table
                              (SQLite; --postgres uses ANTEROOM_TEST_POSTGRES_URL or the local test database;
                              ARGS such as --only polls pass through), then Lighthouse on the queue and a
                              session page (--only lighthouse: Lighthouse alone); --runs N among ARGS does
                              it N times, then prints each row with every run's figure and how many runs
                              met its goal
  fuzz [--seconds S] [-- TARGET…]
                              every cargo-fuzz target of fuzz/ for S seconds (default 60; nightly, installs
                              cargo-fuzz when missing), then Schemathesis against a live server (target `api`)
  faults [--postgres] [--minutes N] [-- ARGS]
                              release binary, then producers and responders against it while it is SIGKILLed
                              and restarted (scripts/faults.py; default 1 minute, 5 kills; ARGS such as
                              --kills 10 pass through); checks nothing acknowledged was lost or doubled
  soak [--postgres] [--minutes N]
                              release binary, then 10,000 askers, 20 answers/s and 200 page streams against it
                              for N minutes (default 10; two instances on PostgreSQL, `-- --instances 1` for
                              one), sampling memory, files, database connections and poll latency every 10 s
  attack [--postgres] [-- ARGS]
                              release build, then replay the security review's attacks against it with
                              bounded loops (scripts/attack.py; ARGS such as --only slowloris pass through)
";

fn main() -> ExitCode {
    match run_task(env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_task(args: Vec<String>) -> Result<()> {
    let (task, rest) = match args.split_first() {
        Some((task, rest)) => (task.as_str(), rest),
        None => {
            print!("{USAGE}");
            return Ok(());
        }
    };
    if task == "fuzz" {
        return fuzz::fuzz(rest);
    }
    if task == "faults" {
        return faults(rest);
    }
    if task == "soak" {
        return soak(rest);
    }
    if task == "dist" {
        return dist::dist(rest);
    }
    if task == "container" {
        let flags = match rest.split_first() {
            Some((separator, flags)) if separator == "--" => flags,
            Some((other, _)) => bail!("unknown container option {other}\n\n{USAGE}"),
            None => &[],
        };
        return container::container(flags);
    }
    let (flags, passthrough) = match rest.iter().position(|arg| arg == "--") {
        Some(split) => (&rest[..split], &rest[split + 1..]),
        None => (rest, &[][..]),
    };
    let release = flags.iter().any(|flag| flag == "--release");
    let postgres = flags.iter().any(|flag| flag == "--postgres");
    if let Some(unknown) = flags
        .iter()
        .find(|flag| !matches!(flag.as_str(), "--release" | "--postgres"))
    {
        bail!("unknown option {unknown}\n\n{USAGE}");
    }
    let profile = if release {
        Profile::Release
    } else {
        Profile::Debug
    };

    match task {
        "run" => {
            site::build(profile)?;
            run_server(profile, passthrough)
        }
        "build" => site::build(profile),
        "test" => check::test_everything(),
        "lint" => check::lint(),
        "architecture" => architecture::write(),
        "budgets" => {
            site::build_bundle(Profile::Release, false)?;
            // The pages are measured as a debug server renders them: their HTML is the same in both builds.
            site::build_server(Profile::Debug)?;
            budgets::check_bytes(
                &workspace_root().join("target/debug/anteroom"),
                &workspace_root().join("target/site"),
            )
        }
        "bench" => bench(postgres, passthrough),
        "attack" => attack(postgres, passthrough),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown task {other}\n\n{USAGE}"),
    }
}

/// The cargo profile `cargo xtask` itself is built with (Cargo.toml says why), shared with its tests.
pub const XTASK_PROFILE: &str = "xtask";

/// Debug builds are quick to compile; release builds are what an operator deploys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Debug,
    Release,
}

impl Profile {
    /// The folder under `target/` that cargo writes native binaries of this profile to.
    pub fn native_dir(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Release => "release",
        }
    }
}

/// The workspace root (the folder holding the top-level Cargo.toml).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Runs a command to completion (in the workspace root unless it names a folder), failing if it fails.
pub fn run(command: &mut Command) -> Result<()> {
    let shown = in_workspace(command);
    let status = command
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed ({status})");
    }
    Ok(())
}

/// Runs `command` in the workspace root unless it names a folder; how it reads in an error.
fn in_workspace(command: &mut Command) -> String {
    if command.get_current_dir().is_none() {
        command.current_dir(workspace_root());
    }
    format!("{command:?}")
}

/// A `cargo` command using the same cargo that runs this task. In CI (`CI` set, as CI services do) it builds
/// without incremental compilation unless `CARGO_INCREMENTAL` says otherwise: a CI run compiles from a fresh
/// clone once, and the incremental caches it would write are pure cost (the workspace's crates, built alone on
/// two cores: 143 s with them, 122 s without). Off CI they stay on: the next one-line change reuses them, and
/// cargo rebuilds every workspace crate when the setting flips, so one target keeps one setting.
pub fn cargo() -> Command {
    let mut command = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    if env::var_os("CI").is_some() && env::var_os("CARGO_INCREMENTAL").is_none() {
        command.env("CARGO_INCREMENTAL", "0");
    }
    command
}

fn run_server(profile: Profile, args: &[String]) -> Result<()> {
    let root = workspace_root();
    let binary = root
        .join("target")
        .join(profile.native_dir())
        .join("anteroom");
    let mut command = Command::new(&binary);
    command
        .args(args)
        .env("ANTEROOM_SITE_ROOT", root.join("target").join("site"));
    println!("xtask: starting {}", binary.display());
    run(&mut command)
}

/// Builds the release site and binary, then runs the figures benchmark against them, passing `args` (such as
/// `--only polls`) through to it, then Lighthouse on two pages (`--only lighthouse` runs Lighthouse alone).
/// `--runs N` does it all N times and then prints each table once more with every run's figures in each row and
/// how many runs met its goal: what the README reports, never the best run.
fn bench(postgres: bool, args: &[String]) -> Result<()> {
    let (runs, args) = runs_of(args)?;
    // The browser bundle only: the benchmark builds the server it measures (figures_bench).
    site::build_bundle(Profile::Release, false)?;
    site::report_bundle_size()?;
    let root = workspace_root();
    let only = args
        .iter()
        .position(|arg| arg == "--only")
        .and_then(|at| args.get(at + 1))
        .cloned();
    let mut printouts = Vec::with_capacity(runs);
    let mut missed = Vec::new();
    for run_number in 1..=runs {
        let mut printout = String::new();
        let mut each = |what: &str, command: &mut Command| -> Result<()> {
            let (text, succeeded) = run_printing(command)?;
            if !succeeded {
                missed.push(format!("{what}, run {run_number}"));
            }
            printout.push_str(&text);
            Ok(())
        };
        if only.as_deref().is_none_or(|only| only != "lighthouse") {
            step(&format!("benchmarks (release), run {run_number} of {runs}"));
            each("the benchmarks", figures_bench(postgres).args(&args))?;
        }
        if only.as_deref().is_none_or(|only| only == "lighthouse") {
            step(&format!(
                "Lighthouse (release, Chromium, offline), run {run_number} of {runs}"
            ));
            tools::ensure_lighthouse(&|command| run(command))?;
            tools::ensure_chromium(&|command| run(command))?;
            each(
                "Lighthouse",
                Command::new("node")
                    .arg("lighthouse.mjs")
                    .arg("--binary")
                    .arg(root.join("target/release/anteroom"))
                    .arg("--site")
                    .arg(root.join("target/site"))
                    .current_dir(tools::lighthouse_dir()),
            )?;
        }
        printouts.push(printout);
    }
    if runs > 1 {
        step(&format!(
            "{runs} runs: each run's figures, and how many met each goal"
        ));
        print!("{}", runs::combine(&printouts));
    }
    if !missed.is_empty() {
        bail!("missed a goal or failed: {}", missed.join("; "));
    }
    Ok(())
}

/// `--runs N` taken out of the benchmark's arguments (1 when absent).
fn runs_of(args: &[String]) -> Result<(usize, Vec<String>)> {
    let Some(at) = args.iter().position(|arg| arg == "--runs") else {
        return Ok((1, args.to_vec()));
    };
    let runs = positive(args.get(at + 1), "--runs", "runs")?;
    let mut rest = args.to_vec();
    rest.drain(at..=at + 1);
    Ok((usize::try_from(runs)?, rest))
}

/// Runs a command, printing its standard output as it comes and keeping it; whether it succeeded. A
/// benchmark that misses a goal exits non-zero (Lighthouse does), and the other runs still have to happen.
fn run_printing(command: &mut Command) -> Result<(String, bool)> {
    use std::io::{BufRead, BufReader};
    let shown = in_workspace(command);
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {shown}"))?;
    let mut kept = String::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.with_context(|| format!("reading {shown}"))?;
            println!("{line}");
            kept.push_str(&line);
            kept.push('\n');
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for {shown}"))?;
    Ok((kept, status.success()))
}

/// Builds the release binary, then runs `scripts/faults.py` against it for the given minutes.
fn faults(args: &[String]) -> Result<()> {
    let (minutes, postgres, passthrough) = minutes_and_backend("faults", args, 1)?;
    release_binary()?;
    step(&format!("faults: {minutes} min"));
    let root = workspace_root();
    let mut command = Command::new("python3");
    command
        .arg(root.join("scripts/faults.py"))
        .arg("--binary")
        .arg(root.join("target/release/anteroom"))
        .arg("--seconds")
        .arg((minutes * 60).to_string())
        .args(&passthrough);
    if postgres {
        command.args(["--postgres", &postgres_url()]);
    }
    run(&mut command)
}

/// An option's value as a whole number above zero, or what is wrong with it.
pub fn positive(value: Option<&String>, option: &str, unit: &str) -> Result<u64> {
    value
        .and_then(|value| value.parse().ok())
        .filter(|value| *value > 0)
        .with_context(|| format!("{option} takes a whole number of {unit}"))
}

/// `--minutes N` from `args` (or `default`) and whether `--postgres` was given; `--` passes the rest on.
fn minutes_and_backend(
    task: &str,
    args: &[String],
    default: u64,
) -> Result<(u64, bool, Vec<String>)> {
    let mut postgres = false;
    let mut minutes = default;
    let mut passthrough = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--postgres" => postgres = true,
            "--minutes" => minutes = positive(rest.next(), "--minutes", "minutes")?,
            "--" => passthrough.extend(rest.by_ref().cloned()),
            other => bail!("unknown {task} option {other}\n\n{USAGE}"),
        }
    }
    Ok((minutes, postgres, passthrough))
}

/// The release binary without the browser bundle (the faults and the soak are all API and streams).
fn release_binary() -> Result<()> {
    step("release build of the server (no browser bundle)");
    run(&mut release_server())
}

/// `cargo build` of the release `anteroom` binary alone.
pub fn release_server() -> Command {
    let mut command = cargo();
    command.args([
        "build",
        "--release",
        "--package",
        "anteroom-server",
        "--bin",
        "anteroom",
    ]);
    command
}

/// Soaks the release binary for the given minutes (the bench's `--soak-minutes`, which builds it).
fn soak(args: &[String]) -> Result<()> {
    let (minutes, postgres, passthrough) = minutes_and_backend("soak", args, 10)?;
    step(&format!("soak: {minutes} min"));
    run(figures_bench(postgres)
        .args(["--soak-minutes", &minutes.to_string()])
        .args(&passthrough))
}

/// `cargo bench` of the figures against the release binary and site (on PostgreSQL with `postgres`), in the
/// release profile. The bench builds the `anteroom` binary it starts (cargo builds a package's binaries for its
/// benchmarks), with the features the bench's dev-dependencies unify: a `cargo build --release` before it made
/// a binary with other features, which this build then compiled again over it (about five minutes each).
fn figures_bench(postgres: bool) -> Command {
    let root = workspace_root();
    let mut command = cargo();
    command
        .args([
            "bench",
            "--profile",
            "release",
            "--package",
            "anteroom-server",
            "--bench",
            "figures",
            "--",
        ])
        .arg("--binary")
        .arg(root.join("target/release/anteroom"))
        .arg("--site")
        .arg(root.join("target/site"));
    if postgres {
        command.args(["--postgres", &postgres_url()]);
    }
    command
}

/// Builds the release binary, then replays the attacks of `scripts/attack.py` against it.
fn attack(postgres: bool, args: &[String]) -> Result<()> {
    site::build(Profile::Release)?;
    step("attack replay (release)");
    let root = workspace_root();
    let mut command = Command::new("python3");
    command
        .arg(root.join("scripts/attack.py"))
        .arg("--binary")
        .arg(root.join("target/release/anteroom"))
        .arg("--site")
        .arg(root.join("target/site"))
        .args(args);
    if postgres {
        command.args(["--postgres", &postgres_url()]);
    }
    run(&mut command)
}

/// `ANTEROOM_TEST_POSTGRES_URL`, or the local test database.
fn postgres_url() -> String {
    env::var("ANTEROOM_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.trim().is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Prints a visible heading for each stage so a long log reads as a sequence of steps, and notes when it began.
pub fn step(title: &str) {
    check::note_step(title);
    println!("\n==> {title}");
}
