//! Builds the site the way cargo-leptos would: the hydrate bundle through wasm-bindgen, the stylesheet and
//! public files into `target/site`, then the server binary.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result};

use crate::{Profile, assets, cargo, run, step, tools, workspace_root};

/// The name the server's hydration script loads: `/pkg/anteroom.js` and `/pkg/anteroom_bg.wasm`.
const OUTPUT_NAME: &str = "anteroom";

/// Builds everything `anteroom serve` needs to serve a hydrating web app.
pub fn build(profile: Profile) -> Result<()> {
    build_bundle(profile, false)?;
    build_server(profile)?;
    report_bundle_size()
}

/// Builds the `anteroom` binary into `target/debug` or `target/release`.
pub fn build_server(profile: Profile) -> Result<()> {
    step("server binary (anteroom)");
    let mut server = cargo();
    server.args(["build", "--package", "anteroom-server"]);
    if profile == Profile::Release {
        server.arg("--release");
    }
    run(&mut server)
}

/// The cargo profile the browser bundle is compiled with.
fn wasm_profile(profile: Profile) -> &'static str {
    match profile {
        Profile::Debug => "dev",
        Profile::Release => "wasm-release",
    }
}

/// Where the browser bundle compiles: a target directory of its own, because cargo locks a target directory
/// while it builds, and `cargo xtask test` compiles the bundle while the tests (built in `target/`) run. It
/// shares nothing with the server's build anyway: a wasm32 target and its own profile for the proc-macros.
pub fn bundle_target_dir() -> PathBuf {
    workspace_root().join("target/bundle")
}

/// The cargo command that compiles the hydrate bundle to wasm (`linted`: through clippy, warnings denied).
pub fn bundle_compile(profile: Profile, linted: bool) -> Command {
    let mut bundle = cargo();
    if linted {
        crate::check::linted(&mut bundle);
    }
    bundle
        .args([
            "rustc",
            "--package",
            "anteroom-app",
            "--lib",
            "--crate-type",
            "cdylib",
            "--target",
            tools::WASM_TARGET,
            "--features",
            "hydrate",
            "--profile",
            wasm_profile(profile),
        ])
        .arg("--target-dir")
        .arg(bundle_target_dir());
    bundle
}

/// Builds the browser's half into `target/site`: the hydrate bundle, the stylesheet and the public files, with
/// fingerprinted names and compressed copies; `linted` compiles the bundle's crates through clippy.
pub fn build_bundle(profile: Profile, linted: bool) -> Result<()> {
    let root = workspace_root();
    let site = site_dir();
    let pkg = site.join("pkg");
    // Fingerprinted names change with every build: start empty, so old bundles do not pile up.
    if pkg.exists() {
        fs::remove_dir_all(&pkg).with_context(|| format!("cannot clear {}", pkg.display()))?;
    }
    fs::create_dir_all(&pkg).with_context(|| format!("cannot create {}", pkg.display()))?;

    tools::ensure_wasm_target(&run)?;
    step(if linted {
        "browser bundle (anteroom-app, hydrate, wasm32): clippy while compiling"
    } else {
        "browser bundle (anteroom-app, hydrate, wasm32)"
    });
    let wasm_profile = wasm_profile(profile);
    run(&mut bundle_compile(profile, linted))?;
    let wasm = bundle_target_dir()
        .join(tools::WASM_TARGET)
        .join(if wasm_profile == "dev" {
            "debug"
        } else {
            wasm_profile
        })
        .join("anteroom_app.wasm");

    bind(&wasm, wasm_profile, &pkg)?;

    let bundle = pkg.join(format!("{OUTPUT_NAME}_bg.wasm"));
    if profile == Profile::Release {
        step("wasm-opt -Oz");
        let optimised = pkg.join(format!("{OUTPUT_NAME}_bg.opt.wasm"));
        run(Command::new(tools::wasm_opt()?)
            .arg("-Oz")
            // The features rustc enables by default for wasm32 since 1.87.
            .args([
                "--enable-bulk-memory",
                "--enable-nontrapping-float-to-int",
                "--enable-sign-ext",
                "--enable-mutable-globals",
                "--enable-reference-types",
                "--enable-multivalue",
            ])
            .arg(&bundle)
            .arg("-o")
            .arg(&optimised))?;
        fs::rename(&optimised, &bundle)?;

        step("esbuild --minify (the JavaScript glue)");
        // wasm-bindgen writes readable glue; minified it is 61 KB -> 28 KB raw, 10.1 KB -> 8.0 KB gzip.
        let glue = pkg.join(format!("{OUTPUT_NAME}.js"));
        let minified = pkg.join(format!("{OUTPUT_NAME}.min.js"));
        run(Command::new(tools::esbuild()?)
            .arg(&glue)
            .args(["--minify", "--format=esm", "--log-level=warning"])
            .arg(format!("--outfile={}", minified.display())))?;
        fs::rename(&minified, &glue)?;
    }

    step("stylesheet and public files");
    write_stylesheet(&root.join("style"), &pkg.join(format!("{OUTPUT_NAME}.css")))?;
    copy_dir(&root.join("public"), &site)?;

    step("fingerprinted names, .br and .gz beside every file");
    assets::fingerprint_and_compress(&site, OUTPUT_NAME, profile)
}

/// Runs wasm-bindgen on `wasm` into `pkg`, or copies its output from the last run when `wasm` has not changed
/// since (a test run after a change to the server alone rebuilds no wasm; binding it again took 7.5 s).
fn bind(wasm: &Path, wasm_profile: &str, pkg: &Path) -> Result<()> {
    let cache = workspace_root()
        .join("target/xtask-bindgen")
        .join(wasm_profile);
    let stamp_file = cache.join("input.stamp");
    let meta = fs::metadata(wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
    let stamp = format!("{:?} {}", meta.modified().ok(), meta.len());
    if fs::read_to_string(&stamp_file).ok().as_deref() == Some(stamp.as_str()) {
        step("wasm-bindgen (the wasm is unchanged: its last output)");
    } else {
        step("wasm-bindgen");
        if cache.exists() {
            fs::remove_dir_all(&cache)
                .with_context(|| format!("cannot clear {}", cache.display()))?;
        }
        fs::create_dir_all(&cache)?;
        wasm_bindgen_cli_support::Bindgen::new()
            .input_path(wasm)
            .web(true)
            .map_err(|error| anyhow::anyhow!("wasm-bindgen: {error}"))?
            .typescript(false)
            .out_name(OUTPUT_NAME)
            .generate(&cache)
            .map_err(|error| anyhow::anyhow!("wasm-bindgen on {}: {error}", wasm.display()))?;
        fs::write(&stamp_file, &stamp)?;
    }
    for entry in fs::read_dir(&cache)? {
        let entry = entry?;
        if entry.path() == stamp_file {
            continue;
        }
        let target = pkg.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Concatenates `style/*.css` in name order into the one stylesheet the shell links.
fn write_stylesheet(style_dir: &Path, out: &Path) -> Result<()> {
    let mut files: Vec<_> = fs::read_dir(style_dir)
        .with_context(|| format!("cannot read {}", style_dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "css"))
        .collect();
    files.sort();
    let mut css = String::new();
    for file in files {
        css.push_str(&fs::read_to_string(&file)?);
        css.push('\n');
    }
    fs::write(out, css).with_context(|| format!("cannot write {}", out.display()))
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// `target/site`, the folder `anteroom serve` reads the bundle and public files from.
fn site_dir() -> std::path::PathBuf {
    workspace_root().join("target").join("site")
}

/// Prints the bundle's raw and compressed sizes: the figure that decides how fast a phone opens the page.
pub fn report_bundle_size() -> Result<()> {
    let site = site_dir();
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(site.join(assets::MANIFEST))?)?;
    let script = manifest["script"].as_str().unwrap_or(OUTPUT_NAME);
    for name in [format!("{script}_bg.wasm"), format!("{script}.js")] {
        let path = site.join("pkg").join(&name);
        let size = |suffix: &str| {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            fs::metadata(file).map_or(0, |meta| meta.len())
        };
        println!(
            "xtask: {name}: {} bytes raw, {} bytes brotli, {} bytes gzip",
            size(""),
            size(".br"),
            size(".gz")
        );
    }
    Ok(())
}
