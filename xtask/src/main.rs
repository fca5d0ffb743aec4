//! Anteroom's task runner: builds the site without cargo-leptos, runs the server, and runs every test.
//!
//! `cargo xtask run` and `cargo xtask test` are the two commands a newcomer needs (see README.md). Everything
//! they depend on beyond the Rust toolchain is installed here on first use, from the package registries only:
//! the wasm target through rustup, Playwright and wasm-opt through npm. wasm-bindgen is linked into this
//! program as a library, so no separate `wasm-bindgen-cli` install is needed.

mod assets;
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
  test                        run every check: fmt, clippy, unit and integration tests (SQLite, and
                              PostgreSQL when ANTEROOM_TEST_POSTGRES_URL is set), Playwright in Chromium
  lint                        cargo fmt --check and clippy for the server and the browser builds
  bench [--postgres] [-- ARGS]
                              release build, then every benchmark figure against its ceiling, as a table
                              (SQLite; --postgres uses ANTEROOM_TEST_POSTGRES_URL or the local test database;
                              ARGS such as --only polls pass through)
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
        "test" => test_everything(),
        "lint" => lint(),
        "bench" => bench(postgres, passthrough),
        "attack" => attack(postgres, passthrough),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown task {other}\n\n{USAGE}"),
    }
}

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
    let shown = format!("{command:?}");
    if command.get_current_dir().is_none() {
        command.current_dir(workspace_root());
    }
    let status = command
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed ({status})");
    }
    Ok(())
}

/// A `cargo` command using the same cargo that runs this task.
pub fn cargo() -> Command {
    Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
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

fn lint() -> Result<()> {
    step("cargo fmt --check");
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    step("clippy: server build (ssr) and all test targets");
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    step("clippy: browser build (hydrate, wasm32)");
    tools::ensure_wasm_target()?;
    run(cargo().args([
        "clippy",
        "--package",
        "anteroom-app",
        "--lib",
        "--target",
        "wasm32-unknown-unknown",
        "--features",
        "hydrate",
        "--",
        "-D",
        "warnings",
    ]))
}

fn test_everything() -> Result<()> {
    lint()?;

    step("the task runner's own tests");
    // Release, as `cargo xtask` itself is built: its dependencies are already compiled.
    run(cargo().args(["test", "--release", "--package", "xtask"]))?;

    step("unit and integration tests");
    match env::var("ANTEROOM_TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => {
            println!("xtask: PostgreSQL tests run against ANTEROOM_TEST_POSTGRES_URL");
        }
        _ => println!(
            "xtask: PostgreSQL tests SKIPPED: ANTEROOM_TEST_POSTGRES_URL is not set \
             (e.g. postgres://postgres@127.0.0.1:5432/test)"
        ),
    }
    let sdks = tools::ensure_mcp_sdks()?;
    run(cargo()
        .args(["test", "--workspace", "--exclude", "xtask"])
        .envs(sdks.iter().cloned()))?;

    step("end-to-end tests (Playwright, Chromium)");
    site::build_bundle(Profile::Debug)?;
    step("server binary (anteroom), as the tests above built it");
    // The same selection and environment as the test build: with the tests' dev-dependencies in it, cargo
    // resolves the workspace's features as it just did and has nothing to compile (the SDK paths matter too,
    // the store's build script turns them into cfg flags, so other values recompile it). `cargo build -p
    // anteroom-server` alone would leave out the store's `testing` feature and compile five crates again
    // (47 s) for a binary that differs only by a module no code path of `serve` reaches.
    run(cargo()
        .args([
            "build",
            "--workspace",
            "--exclude",
            "xtask",
            "--bins",
            "--tests",
        ])
        .envs(sdks))?;
    site::report_bundle_size()?;
    tools::ensure_npm_packages()?;
    tools::ensure_chromium()?;
    let end2end = workspace_root().join("end2end");
    run(Command::new(end2end.join("node_modules/.bin/playwright"))
        .arg("test")
        .current_dir(&end2end)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"))
    .map_err(|error| error.context("end-to-end tests failed"))
}

/// Builds the release site and binary, then runs the figures benchmark against them, passing `args` (such as
/// `--only polls`) through to it.
fn bench(postgres: bool, args: &[String]) -> Result<()> {
    site::build(Profile::Release)?;
    step("benchmarks (release)");
    let root = workspace_root();
    let mut command = cargo();
    // The release profile, so the bench reuses what `site::build` just compiled.
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
    command.args(args);
    run(&mut command)
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

/// Prints a visible heading for each stage so a long log reads as a sequence of steps.
pub fn step(title: &str) {
    println!("\n==> {title}");
}
