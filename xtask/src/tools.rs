//! Installs what the build and the tests need, only when it is missing, from the package registries only.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, bail};

use crate::{run, step, workspace_root};

pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Debian's Chromium, which Playwright drives (Playwright's own browser download is not reachable here).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Adds the wasm target to the active Rust toolchain unless it is there already.
pub fn ensure_wasm_target() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(workspace_root())
        .output();
    match installed {
        Ok(output) if String::from_utf8_lossy(&output.stdout).contains(WASM_TARGET) => Ok(()),
        Ok(_) => {
            step("installing the wasm32-unknown-unknown target (once)");
            run(Command::new("rustup").args(["target", "add", WASM_TARGET]))
        }
        // Without rustup, assume the toolchain was set up by other means; cargo will say if the target is missing.
        Err(_) => Ok(()),
    }
}

fn end2end_dir() -> PathBuf {
    workspace_root().join("end2end")
}

/// Installs end2end/'s npm packages (Playwright, binaryen's wasm-opt, esbuild) from its lockfile when missing.
pub fn ensure_npm_packages() -> Result<()> {
    let dir = end2end_dir();
    let marker = dir.join("node_modules/.package-lock.json");
    if is_newer_or_equal(&marker, &dir.join("package-lock.json")) {
        return Ok(());
    }
    step("installing end2end npm packages (Playwright, wasm-opt, esbuild)");
    run(Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .current_dir(&dir))
}

/// The MCP SDKs `anteroom wrap`'s tests run real servers and harnesses with: npm packages in `wrap/tests/sdk/`
/// and a Python virtual environment in `target/mcp-sdk-venv/`, both from lockfiles, installed when missing.
/// Returns the environment variables that tell the tests where they are.
pub fn ensure_mcp_sdks() -> Result<Vec<(&'static str, String)>> {
    let sdk = workspace_root().join("wrap/tests/sdk");
    let marker = sdk.join("node_modules/.package-lock.json");
    if !is_newer_or_equal(&marker, &sdk.join("package-lock.json")) {
        step("installing the MCP SDK test packages from npm (wrap/tests/sdk)");
        run(Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&sdk))?;
    }
    let venv = workspace_root().join("target/mcp-sdk-venv");
    let python = venv.join("bin/python");
    let installed = venv.join("installed-requirements.txt");
    let requirements = sdk.join("requirements.txt");
    if !is_newer_or_equal(&installed, &requirements) {
        step("installing the Python MCP SDK from PyPI (wrap/tests/sdk/requirements.txt)");
        if !python.exists() {
            run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        }
        // Every package is pinned in the file, so nothing unpinned is pulled in.
        run(Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--no-deps", "-r"])
            .arg(&requirements))?;
        std::fs::copy(&requirements, &installed)?;
    }
    Ok(vec![
        ("ANTEROOM_TEST_MCP_SDKS", sdk.display().to_string()),
        ("ANTEROOM_TEST_MCP_PYTHON", python.display().to_string()),
    ])
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
    ensure_npm_packages()?;
    let path = end2end_dir().join("node_modules/.bin").join(name);
    if !path.exists() {
        bail!("{name} is missing from end2end/node_modules; run `npm ci` in end2end/");
    }
    Ok(path)
}

/// Makes sure Debian's Chromium is installed, installing it with apt-get when running as root.
pub fn ensure_chromium() -> Result<()> {
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
    step("installing Debian's Chromium for the browser tests (once)");
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
