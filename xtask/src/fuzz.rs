//! `cargo xtask fuzz [--seconds S] [-- TARGET…]`: every `cargo fuzz` target of `fuzz/` for `S` seconds
//! (nightly, libFuzzer, with a per-input timeout and a memory limit), then Schemathesis against a live server
//! from its own OpenAPI document. The corpus lives in `fuzz/corpus/`; a crash is left in `fuzz/artifacts/`
//! and fails the task. `cargo xtask test` runs the Schemathesis part alone, briefly ([`api_fuzz`]).

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::{run, step, tools, workspace_root};

/// The targets of `fuzz/Cargo.toml`, in the order they run.
pub const TARGETS: &[&str] = &[
    "schema_to_form",
    "posted_form",
    "answer_validation",
    "producer_request",
    "mcp_config",
    "wrap_lines",
];

/// The cargo-fuzz that is installed when missing (crates.io).
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// What one target's run found.
struct TargetRun {
    target: String,
    runs: Option<u64>,
    corpus: usize,
    passed: bool,
}

pub fn fuzz(args: &[String]) -> Result<()> {
    let mut seconds = 60_u64;
    let mut only = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--seconds" => seconds = crate::positive(rest.next(), "--seconds", "seconds")?,
            "--" => only.extend(rest.by_ref().cloned()),
            other => bail!("unknown fuzz option {other}: use --seconds S [-- TARGET…]"),
        }
    }
    let targets: Vec<&str> = if only.is_empty() {
        TARGETS.to_vec()
    } else {
        for target in &only {
            if !TARGETS.contains(&target.as_str()) && target != "api" {
                bail!(
                    "no fuzz target {target}; the targets: {}, api",
                    TARGETS.join(", ")
                );
            }
        }
        only.iter().map(String::as_str).collect()
    };
    let mut results = Vec::new();
    let native: Vec<&str> = targets
        .iter()
        .copied()
        .filter(|target| *target != "api")
        .collect();
    if !native.is_empty() {
        ensure_cargo_fuzz()?;
        step("fuzz targets: build (nightly, libFuzzer)");
        run(nightly_cargo_fuzz().arg("build"))?;
        for target in native {
            step(&format!("fuzz target {target}: {seconds} s"));
            results.push(run_target(target, seconds)?);
        }
    }
    let api = if only.is_empty() || targets.contains(&"api") {
        crate::site::build(crate::Profile::Debug)?;
        Some(api_fuzz(seconds)?)
    } else {
        None
    };
    println!("\n| target | inputs run | corpus | result |\n| --- | ---: | ---: | --- |");
    for result in &results {
        println!(
            "| {} | {} | {} | {} |",
            result.target,
            result
                .runs
                .map_or_else(|| "?".to_owned(), |runs| runs.to_string()),
            result.corpus,
            if result.passed {
                "no crash"
            } else {
                "CRASH (fuzz/artifacts)"
            }
        );
    }
    if let Some(api) = &api {
        println!(
            "| Schemathesis (API) | {} cases | — | {} |",
            api.cases, api.verdict
        );
    }
    if results.iter().any(|result| !result.passed) {
        bail!(
            "a fuzz target crashed: its input is in fuzz/artifacts/; make it a unit test, then fix it"
        );
    }
    Ok(())
}

fn fuzz_dir() -> PathBuf {
    workspace_root().join("fuzz")
}

/// `cargo fuzz` on the nightly toolchain, in `fuzz/`, without the stable build's compiler wrapper.
fn nightly_cargo_fuzz() -> Command {
    let mut command = Command::new("rustup");
    command
        .args(["run", "nightly", "cargo", "fuzz"])
        .current_dir(fuzz_dir())
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO")
        .env_remove("RUSTC");
    command
}

/// Whether `command` runs and exits successfully (its output is not shown).
fn succeeds(command: &mut Command) -> bool {
    command.output().is_ok_and(|output| output.status.success())
}

fn ensure_cargo_fuzz() -> Result<()> {
    if !succeeds(Command::new("rustup").args(["run", "nightly", "rustc", "--version"])) {
        step("installing the nightly toolchain (for cargo fuzz)");
        run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    if !succeeds(Command::new("cargo").args(["fuzz", "--version"])) {
        step("installing cargo-fuzz");
        run(Command::new("cargo").args([
            "install",
            "cargo-fuzz",
            "--locked",
            "--version",
            CARGO_FUZZ_VERSION,
        ]))?;
    }
    Ok(())
}

/// Runs one target for `seconds` on its corpus; inputs that take over 10 s or 2 GiB count as crashes.
fn run_target(target: &str, seconds: u64) -> Result<TargetRun> {
    let corpus = fuzz_dir().join("corpus").join(target);
    std::fs::create_dir_all(&corpus)?;
    let output = nightly_cargo_fuzz()
        .args(["run", target])
        .arg(&corpus)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .args([
            "-timeout=10",
            "-rss_limit_mb=2048",
            "-max_len=65536",
            "-print_final_stats=1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run fuzz target {target}"))?;
    let log = String::from_utf8_lossy(&output.stderr);
    let runs = log
        .lines()
        .find_map(|line| line.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|runs| runs.trim().parse().ok());
    if !output.status.success() {
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        eprintln!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    Ok(TargetRun {
        target: target.to_owned(),
        runs,
        corpus: std::fs::read_dir(&corpus).map_or(0, Iterator::count),
        passed: output.status.success(),
    })
}

/// What Schemathesis found.
pub struct ApiFuzz {
    pub cases: String,
    pub verdict: String,
}

/// Schemathesis (PyPI, pinned with hashes) against the debug server, from its own OpenAPI document, for
/// `seconds`: every operation, every check, stateful links where the document declares them. Fails on any
/// failure it reports.
pub fn api_fuzz(seconds: u64) -> Result<ApiFuzz> {
    step(&format!("Schemathesis against a live server: {seconds} s"));
    let (found, report) = api_fuzz_report(seconds)?;
    println!("{report}");
    Ok(found)
}

/// [`api_fuzz`] without printing, for running beside other work: what it found and the report to show (its
/// summary, or the whole log when it failed, which is also in the error).
pub fn api_fuzz_report(seconds: u64) -> Result<(ApiFuzz, String)> {
    let root = workspace_root();
    tools::ensure_schemathesis(&run)?;
    // The server `cargo test` (or `site::build`) built.
    let binary = root.join("target/debug/anteroom");
    if !binary.exists() {
        bail!("{} is missing: build it first", binary.display());
    }
    let data = root.join("target/api-fuzz");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data)?;
    let database = format!("sqlite://{}", data.join("anteroom.sqlite3").display());
    let port = free_port()?;
    let public_url = format!("http://127.0.0.1:{port}");
    let admin_key = command_output(
        Command::new(&binary)
            .args([
                "apikey",
                "create",
                "--name",
                "schemathesis",
                "--role",
                "admin",
            ])
            .env("DATABASE_URL", &database),
    )?;
    let block = command_output(
        Command::new(&binary)
            .args([
                "session",
                "create",
                "--id",
                "schemathesis",
                "--title",
                "Schemathesis",
            ])
            .env("DATABASE_URL", &database)
            .env("ANTEROOM_PUBLIC_URL", &public_url),
    )?;
    let token = block
        .lines()
        .find_map(|line| line.strip_prefix("ANTEROOM_SESSION_TOKEN="))
        .context("the session's block names no token")?
        .to_owned();
    // The committed settings, with this run's session token filled in.
    let settings = std::fs::read_to_string(root.join("fuzz/schemathesis/schemathesis.toml"))?;
    let config = data.join("schemathesis.toml");
    std::fs::write(&config, settings.replace("{token}", &token))?;
    let server = Server::start(&binary, &database, port, &data)?;
    let started = Instant::now();
    while !healthy(port) {
        if started.elapsed() > Duration::from_secs(30) {
            bail!(
                "the server did not answer /healthz within 30 s (log: {})",
                data.join("server.log").display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = Command::new(tools::schemathesis())
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("{public_url}/api/v1/openapi.json"))
        .arg("-H")
        .arg(format!("Authorization: Bearer {admin_key}"))
        // Two workers (threads), one `ast.parse` at a time: see fuzz/schemathesis/python/sitecustomize.py.
        .env("PYTHONPATH", root.join("fuzz/schemathesis/python"))
        .args(["--checks", "all", "--workers", "2", "--max-time"])
        .arg(seconds.to_string())
        .args(["--report", "junit", "--report-dir"])
        .arg(&data)
        .current_dir(&data)
        .output()
        .context("cannot run schemathesis")?;
    drop(server);
    let log = String::from_utf8_lossy(&output.stdout);
    let cases = log
        .lines()
        .find(|line| line.contains("generated"))
        .map_or_else(|| "?".to_owned(), |line| line.trim().to_owned());
    let verdict = log
        .lines()
        .rev()
        .find(|line| line.starts_with('='))
        .map_or_else(
            || "?".to_owned(),
            |line| line.trim_matches(|c| c == '=' || c == ' ').to_owned(),
        );
    if !output.status.success() {
        bail!(
            "Schemathesis found failures ({verdict}); fix the code or the document, never the check\n{log}"
        );
    }
    // The summary; the whole report is in the junit file beside the data.
    let summary = log
        .split_once("SUMMARY")
        .map_or(log.as_ref(), |(_, summary)| summary)
        .to_owned();
    Ok((ApiFuzz { cases, verdict }, summary))
}

/// A port free on loopback now.
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn healthy(port: u16) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200")
}

fn command_output(command: &mut Command) -> Result<String> {
    let shown = format!("{command:?}");
    let output = command
        .output()
        .with_context(|| format!("cannot start {shown}"))?;
    if !output.status.success() {
        bail!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The server under test, killed when dropped.
struct Server(Child);

impl Server {
    fn start(binary: &Path, database: &str, port: u16, data: &Path) -> Result<Self> {
        let log = std::fs::File::create(data.join("server.log"))?;
        let child = Command::new(binary)
            .arg("serve")
            .env("DATABASE_URL", database)
            .env("ANTEROOM_ADDR", format!("127.0.0.1:{port}"))
            .env("ANTEROOM_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
            .env("ANTEROOM_SITE_ROOT", workspace_root().join("target/site"))
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start the server")?;
        Ok(Self(child))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
