//! `cargo xtask test`: every check a change must pass, in the order that fails fastest and compiles least.
//!
//! The dependency graph is compiled once for clippy and the tests together: the test build runs with clippy's
//! driver as the workspace's compiler wrapper (`RUSTC_WORKSPACE_WRAPPER`, as `cargo clippy` itself does for
//! its `check`), so the workspace's crates are linted while they are compiled for the tests, and the
//! dependencies, which clippy does not lint, are built once instead of once for `check` and again for `test`.
//! The browser bundle is linted the same way while it is built for the Playwright tests. Installs that wait on
//! the network (Chromium, npm, PyPI) run in the background meanwhile, and so do every crate's tests but the
//! server's, beside the server's.

use std::{
    env,
    path::PathBuf,
    process::Command,
    sync::Mutex,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::{Profile, background::Install, cargo, run, site, step, tools, workspace_root};

/// Crates built from `vendor/` instead of crates.io (vendor/README.md): each must still be the one the build
/// uses, since cargo only warns when a `[patch]` stops applying.
const VENDORED: &[&str] = &["tachys"];

/// The crate whose tests run in the foreground of `cargo xtask test` (the others run beside them).
const SERVER_PACKAGE: &str = "anteroom-server";

/// Schemathesis's budget in `cargo xtask test`: a smoke run of every operation (`cargo xtask fuzz` runs longer).
const API_FUZZ_SECONDS: u64 = 20;

pub fn test_everything() -> Result<()> {
    let outcome = every_check();
    print_step_times();
    outcome
}

fn every_check() -> Result<()> {
    let chromium = Install::start("chromium", |log| tools::ensure_chromium(&|c| log.run(c)));
    let test_tools = Install::start("cargo-deny", |log| {
        tools::ensure_test_tools(&|c| log.run(c))
    });
    let mcp_sdks = Install::start("mcp sdks", |log| tools::ensure_mcp_sdks(&|c| log.run(c)));
    let schemathesis = Install::start("schemathesis", |log| {
        tools::ensure_schemathesis(&|c| log.run(c))
    });
    let end2end = Install::start("end2end npm", |log| {
        tools::ensure_npm_packages(&|c| log.run(c))
    });

    step("cargo fmt --check");
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;

    step("vendored crates are the ones the build uses");
    check_vendored_crates()?;

    step("conventions: file length, escapes from the disallowed methods");
    crate::conventions::check()?;
    crate::architecture::check()?;

    step("the task runner: clippy and its tests");
    run(&mut task_runner_tests())?;

    // The release bundle compiles from here on, beside the native compile and the tests, at the lowest priority
    // (nice 19), so it takes what the foreground leaves: the native compile's single-threaded tail (linking the
    // test executables), then the tests' waits on sockets, timers and child processes. Its compile (LTO, one
    // codegen unit) is mostly one core's work; at nice 10 a fresh-clone run saw a test wait over 20 s for a
    // harness process to start. Begun with the tests instead, it set the length of their phase (283 s of a 780 s
    // cold run). It builds in a target directory of its own (site::bundle_target_dir), so neither cargo waits on
    // the other's lock; a run that fails before the bundle is needed leaves it compiling, for the next run.
    let bundle_compile = Install::start("release bundle compile", |log| {
        tools::ensure_wasm_target(&|c| log.run(c))?;
        let compile = site::bundle_compile(Profile::Release, true);
        let mut niced = Command::new("nice");
        niced
            .args(["-n", "19"])
            .arg(compile.get_program())
            .args(compile.get_args())
            .envs(
                compile
                    .get_envs()
                    .filter_map(|(key, value)| Some((key, value?))),
            );
        log.run(&mut niced)
    });

    step("server build (ssr), every test target and the benchmark: clippy while compiling");
    match env::var("ANTEROOM_TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => {
            println!("xtask: PostgreSQL tests run against ANTEROOM_TEST_POSTGRES_URL");
        }
        _ => println!(
            "xtask: PostgreSQL tests SKIPPED: ANTEROOM_TEST_POSTGRES_URL is not set \
             (e.g. postgres://postgres@127.0.0.1:5432/test)"
        ),
    }
    compile_linted()?;

    // After the compile, so its install has long finished.
    step("cargo deny: licenses, bans, sources (deny.toml)");
    waited("cargo-deny", test_tools)?;
    run(Command::new(tools::cargo_deny()).args([
        "--log-level",
        "error",
        "check",
        "licenses",
        "bans",
        "sources",
    ]))?;

    step("unit and integration tests");
    waited("the MCP SDK test packages", mcp_sdks)?;
    // The server's suite is the longest, and it waits on sockets, timers and harness processes more than it
    // computes (alone: 160 s for 198 s of CPU); every other test executable (the store suite on both backends,
    // wrap's, the unit tests: 70 s after it when run in turn) runs beside it, its output shown when it ends.
    // The executables are the ones the workspace build made: `cargo test --package` alone would unify features
    // differently and compile the server's tests a second time.
    let (server_suites, other_suites): (Vec<_>, Vec<_>) = test_executables()?
        .into_iter()
        .partition(|test| test.package == SERVER_PACKAGE);
    let other_tests = Install::start("the other crates' tests", move |log| {
        for test in &other_suites {
            log.write(&format!("\n     Running {}\n", test.shown()))?;
            log.run(&mut test.command("2"))?;
        }
        Ok(())
    });
    let mut tests_outcome = Ok(());
    for test in &server_suites {
        println!("\n     Running {}", test.shown());
        tests_outcome = tests_outcome.and(run(&mut test.command("3")));
    }
    let others_outcome = other_tests.finish_showing_log();
    let compiled = waited("the release bundle's compile", bundle_compile);
    tests_outcome?;
    others_outcome?;
    compiled?;

    // Schemathesis needs only the server the test build made, and the steps up to Playwright (wasm-opt and the
    // compressors, mostly one core's work) leave it a core: it runs beside them.
    let api_fuzz = Install::start("api fuzz", |log| {
        schemathesis.finish()?;
        let (_, report) = crate::fuzz::api_fuzz_report(API_FUZZ_SECONDS)?;
        log.write(&report)
    });

    // The release-profile bundle (wasm-opt and esbuild come with the end2end packages): what a browser gets is
    // what the byte budgets count, and what the browser tests run.
    waited("the end2end npm packages", end2end)?;
    site::build_bundle(Profile::Release, true)?;
    site::report_bundle_size()?;
    // `cargo test` built the server binary the Playwright tests start, with the tests' features.
    let binary = workspace_root().join("target/debug/anteroom");
    if !binary.exists() {
        bail!("{} is missing after the test build", binary.display());
    }

    step("budgets: the bytes of a first visit (budgets.toml [bytes])");
    crate::budgets::check_bytes(&binary, &workspace_root().join("target/site"))?;

    step(
        "one file: the debug binary with the debug site appended (tests/onefile.spec.ts starts it)",
    );
    let onefile = crate::dist::test_binary();
    if let Some(folder) = onefile.parent() {
        std::fs::create_dir_all(folder)?;
    }
    crate::dist::pack(&binary, &workspace_root().join("target/site"), &onefile)?;

    step(&format!(
        "Schemathesis against a live server: {API_FUZZ_SECONDS} s (beside the bundle's steps)"
    ));
    api_fuzz.finish_showing_log()?;

    step("end-to-end tests (Playwright, Chromium)");
    waited("Debian's Chromium", chromium)?;
    let end2end = workspace_root().join("end2end");
    run(Command::new(end2end.join("node_modules/.bin/playwright"))
        .arg("test")
        .current_dir(&end2end)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .env("ANTEROOM_ONEFILE_BINARY", &onefile))
    .map_err(|error| error.context("end-to-end tests failed"))
}

/// `cargo xtask lint`: formatting and clippy alone, without running a test (they compile as the tests do, so
/// a later `cargo xtask test` reuses what this built).
pub fn lint() -> Result<()> {
    step("cargo fmt --check");
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    step("conventions: file length, escapes from the disallowed methods");
    crate::conventions::check()?;
    step("clippy: the task runner");
    run(task_runner_tests().arg("--no-run"))?;
    step("clippy: server build (ssr) and every test target");
    compile_linted()?;
    tools::ensure_wasm_target(&run)?;
    site::build_bundle(Profile::Debug, true)
}

/// A test executable of the workspace build and the package it tests.
struct TestExecutable {
    package: String,
    target: String,
    path: PathBuf,
    /// The package's folder, where `cargo test` would run it.
    folder: PathBuf,
}

impl TestExecutable {
    fn shown(&self) -> String {
        format!("{} {} ({})", self.package, self.target, self.path.display())
    }

    /// The executable as `cargo test` would run it, `threads` tests at a time unless `RUST_TEST_THREADS` says
    /// otherwise (most tests wait on sockets, timers and child processes more than on a core: three at a time
    /// on two cores took the server's suite from 95 s to 77 s; eight made timing-sensitive tests fail).
    fn command(&self, threads: &str) -> Command {
        let mut command = Command::new(&self.path);
        command
            .current_dir(&self.folder)
            .envs(tools::mcp_sdk_environment());
        if env::var_os("RUST_TEST_THREADS").is_none() {
            command.env("RUST_TEST_THREADS", threads);
        }
        command
    }
}

/// The test executables `cargo test --workspace --exclude xtask` runs, as the linted build made them (already
/// compiled by [`compile_linted`], so this only asks cargo for their names).
fn test_executables() -> Result<Vec<TestExecutable>> {
    let output = workspace_test_build()
        .args(["--no-run", "--message-format", "json"])
        .current_dir(workspace_root())
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot run cargo test --no-run")?;
    if !output.status.success() {
        bail!("cargo test --no-run failed ({})", output.status);
    }
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(path), Some(manifest)) = (
            message["executable"].as_str(),
            message["manifest_path"].as_str(),
        ) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
            continue;
        }
        let manifest = PathBuf::from(manifest);
        let package = message["package_id"]
            .as_str()
            .and_then(|id| package_name(id, &manifest))
            .unwrap_or_default();
        found.push(TestExecutable {
            package,
            target: message["target"]["name"].as_str().unwrap_or("?").to_owned(),
            path: PathBuf::from(path),
            folder: manifest.parent().map_or_else(workspace_root, PathBuf::from),
        });
    }
    if found.is_empty() {
        bail!("cargo test --no-run named no test executable");
    }
    Ok(found)
}

/// A package's name from its id (`path+file:///work/main/server#anteroom-server@0.1.0`, or
/// `…/server#0.1.0` when the name is the folder's).
fn package_name(id: &str, manifest: &std::path::Path) -> Option<String> {
    let fragment = id.rsplit_once('#')?.1;
    match fragment.split_once('@') {
        Some((name, _)) => Some(name.to_owned()),
        None => manifest
            .parent()?
            .file_name()
            .map(|name| name.to_string_lossy().into_owned()),
    }
}

/// The task runner's own tests, compiled through clippy in its profile.
fn task_runner_tests() -> Command {
    let mut tests = cargo();
    linted(&mut tests).args([
        "test",
        "--profile",
        crate::XTASK_PROFILE,
        "--package",
        "xtask",
    ]);
    tests
}

/// Compiles the server build, every test target and the benchmark through clippy, without running them. The
/// benchmark is compiled (and so linted) but never run: `cargo test` without `--benches` leaves it out, and
/// finds everything else already built. Not `--all-targets`: that also compiles each binary a second time as
/// a test of its own, which the binary (`test = false`: it only dispatches to its library) does not have
/// (8.8 s of a cold compile's CPU for `anteroom`); the binary itself is built once, for the suites that
/// start it, and linted then.
fn compile_linted() -> Result<()> {
    run(workspace_test_build().args(["--tests", "--benches", "--no-run"]))
}

/// `cargo test` of the workspace through clippy, with the environment the store's build script reads: every
/// command that builds or names the test executables must agree on it, or cargo rebuilds them (once, without
/// the MCP SDK variables, that rebuild ignored 65 of the server's tests).
fn workspace_test_build() -> Command {
    let mut command = cargo();
    linted(&mut command)
        .args(["test", "--workspace", "--exclude", "xtask"])
        .envs(tools::mcp_sdk_environment());
    command
}

/// Makes `command` compile the workspace's crates through clippy's driver with warnings denied, as `cargo
/// clippy -- -D warnings` does, while cargo builds whatever the command asks for.
pub fn linted(command: &mut Command) -> &mut Command {
    command.env("RUSTC_WORKSPACE_WRAPPER", clippy_driver()).env(
        "CLIPPY_ARGS",
        "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
    )
}

/// The toolchain's own clippy-driver (beside its rustc), or the rustup proxy when the sysroot says nothing.
fn clippy_driver() -> PathBuf {
    let sysroot = Command::new(env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned()))
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|sysroot| !sysroot.is_empty());
    sysroot
        .map(|sysroot| PathBuf::from(sysroot).join("bin/clippy-driver"))
        .filter(|driver| driver.exists())
        .unwrap_or_else(|| PathBuf::from("clippy-driver"))
}

/// Fails unless every crate of [`VENDORED`] resolves to its copy under `vendor/` and to nothing else.
fn check_vendored_crates() -> Result<()> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(workspace_root())
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata --locked failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("cargo metadata's JSON")?;
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    for name in VENDORED {
        let vendored = workspace_root().join("vendor").join(name);
        let resolved: Vec<&Value> = packages
            .iter()
            .filter(|package| package["name"] == *name)
            .collect();
        let strays: Vec<String> = resolved
            .iter()
            .filter(|package| {
                !package["source"].is_null()
                    || !package["manifest_path"]
                        .as_str()
                        .is_some_and(|path| PathBuf::from(path).starts_with(&vendored))
            })
            .map(|package| {
                format!(
                    "{} {} from {}",
                    package["name"], package["version"], package["source"]
                )
            })
            .collect();
        if resolved.is_empty() || !strays.is_empty() {
            bail!(
                "{name} must resolve to vendor/{name} (its [patch.crates-io] entry in Cargo.toml), but the build uses \
                 {}: a `cargo update` probably moved past the vendored version, leaving the patch unused. Update \
                 the vendored copy (vendor/README.md) or pin the version back.",
                if strays.is_empty() {
                    "no copy of it".to_owned()
                } else {
                    strays.join(", ")
                }
            );
        }
        println!("xtask: {name} resolves to vendor/{name} only");
    }
    Ok(())
}

/// Waits for a background install, noting how long the foreground waited for it.
fn waited(what: &str, install: Install) -> Result<()> {
    let waiting = Instant::now();
    let ran = install.finish()?;
    let waited = waiting.elapsed();
    println!(
        "xtask: {what}: ready in {:.1} s (waited {:.1} s for it)",
        ran.as_secs_f64(),
        waited.as_secs_f64()
    );
    Ok(())
}

/// When each step began, for the table printed at the end.
static STEPS: Mutex<Vec<(String, Instant)>> = Mutex::new(Vec::new());

/// Notes that a step begins (see [`crate::step`]).
pub fn note_step(title: &str) {
    STEPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((title.to_owned(), Instant::now()));
}

/// How long each step took, as a table: where a test run's time goes.
fn print_step_times() {
    let steps = STEPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let Some((_, first)) = steps.first() else {
        return;
    };
    println!("\nxtask: where the time went");
    let ends = steps
        .iter()
        .skip(1)
        .map(|(_, at)| *at)
        .chain(std::iter::once(Instant::now()));
    for ((title, began), ended) in steps.iter().zip(ends) {
        println!("{:>8.1} s  {title}", seconds(ended - *began));
    }
    println!("{:>8.1} s  in all", seconds(first.elapsed()));
}

fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::package_name;

    #[test]
    fn a_package_is_named_from_its_id_or_its_folder() {
        let manifest = Path::new("/work/main/server/Cargo.toml");
        assert_eq!(
            package_name(
                "path+file:///work/main/server#anteroom-server@0.1.0",
                manifest
            )
            .as_deref(),
            Some("anteroom-server")
        );
        assert_eq!(
            package_name(
                "path+file:///work/main/testkit#0.1.0",
                Path::new("/work/main/testkit/Cargo.toml")
            )
            .as_deref(),
            Some("testkit")
        );
        assert_eq!(package_name("no fragment", manifest), None);
    }
}
