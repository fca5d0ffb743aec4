//! `cargo xtask dist`: the one file to deploy (the release binary with the release site appended), its
//! SHA-256, and a check that it serves its pages and bundle from an empty folder.

use std::{
    fs,
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use crate::{Profile, run, site, step, workspace_root};

/// The target a static build is made for, when `--musl` is given.
const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// Builds the release site and binary, packs them into `dist/anteroom-<version>-x86_64-linux`, writes its
/// SHA-256 beside it, and checks it from an empty folder.
pub fn dist(args: &[String]) -> Result<()> {
    let musl = match args {
        [] => false,
        [flag] if flag == "--musl" => true,
        other => bail!("unknown dist options {other:?} (only --musl)"),
    };
    site::build_bundle(Profile::Release, false)?;
    site::report_bundle_size()?;
    let root = workspace_root();
    let mut server = crate::release_server();
    let binary = if musl {
        step(&format!(
            "static server binary ({MUSL_TARGET}, musl-gcc for the C parts)"
        ));
        crate::tools::ensure_rust_target(MUSL_TARGET, &run)?;
        run(server
            .args(["--target", MUSL_TARGET])
            .env("CC_x86_64_unknown_linux_musl", "musl-gcc"))?;
        root.join("target")
            .join(MUSL_TARGET)
            .join("release/anteroom")
    } else {
        step("server binary (release)");
        run(&mut server)?;
        root.join("target/release/anteroom")
    };

    step("symbols stripped (a panic's backtrace then shows addresses, not names)");
    let stripped = root.join("target/dist-work/anteroom");
    fs::create_dir_all(root.join("target/dist-work"))?;
    fs::copy(&binary, &stripped)?;
    // binutils' strip comes with the C compiler the build needs anyway.
    run(Command::new("strip").arg(&stripped))?;
    let binary = stripped;

    step("one file: the binary with the site appended");
    let folder = root.join("dist");
    // The Containerfile copies this empty folder as the data volume's first owner-correct contents.
    fs::create_dir_all(folder.join("data"))?;
    let name = format!("anteroom-{}-x86_64-linux", env!("CARGO_PKG_VERSION"));
    let file = folder.join(&name);
    pack(&binary, &root.join("target/site"), &file)?;
    let digest = sha256_hex(&file)?;
    fs::write(
        folder.join(format!("{name}.sha256")),
        format!("{digest}  {name}\n"),
    )?;

    step("the file, alone in an empty folder");
    check_from_empty_folder(&file)?;
    let bytes = fs::metadata(&file)?.len();
    println!(
        "xtask: {} ({:.1} MB, {}): sha256 {digest}",
        file.display(),
        megabytes(bytes),
        if musl {
            "statically linked with musl"
        } else {
            "dynamically linked against glibc"
        }
    );
    Ok(())
}

/// Writes `binary` with the built `site` appended to `out` (the binary's own `site-bundle` does the writing,
/// so the format lives in one place: server/src/router/site_files.rs).
pub fn pack(binary: &Path, site: &Path, out: &Path) -> Result<()> {
    run(Command::new(binary)
        .arg("site-bundle")
        .arg("--site")
        .arg(site)
        .arg("--out")
        .arg(out))
}

fn sha256_hex(file: &Path) -> Result<String> {
    let bytes = fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

fn megabytes(bytes: u64) -> f64 {
    // Sizes of a few MB: f64 holds them exactly enough.
    #[expect(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let bytes = bytes as f64;
    bytes / 1_000_000.0
}

/// Copies `file` into a new empty folder and starts it there with only a database URL and an address (no
/// site folder, no other setting), then asks for readiness, a page and the bundle the page names.
fn check_from_empty_folder(file: &Path) -> Result<()> {
    let folder = std::env::temp_dir().join(format!("anteroom-dist-check-{}", std::process::id()));
    let _ = fs::remove_dir_all(&folder);
    fs::create_dir_all(&folder)?;
    let copy = folder.join("anteroom");
    fs::copy(file, &copy)?;
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let address = format!("127.0.0.1:{port}");

    let version = Command::new(&copy)
        .arg("--version")
        .output()
        .context("anteroom --version")?;
    print!("{}", String::from_utf8_lossy(&version.stdout));

    let server = Command::new(&copy)
        .arg("serve")
        .current_dir(&folder)
        .env_clear()
        .env("DATABASE_URL", "sqlite://anteroom.sqlite3")
        .env("ANTEROOM_ADDR", &address)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", copy.display()))?;
    let mut server = KillOnDrop(server);
    let outcome = (|| -> Result<()> {
        let ready = wait_for(
            &address,
            "/readyz",
            Duration::from_secs(30),
            Some(&mut server.0),
        )?;
        if !ready.contains("\"status\":\"ready\"") || !ready.contains("\"version\"") {
            bail!("/readyz answered {ready}");
        }
        let login = get(&address, "/login", "").context("GET /login")?;
        // The page links the stylesheet and loads `/pkg/<script>.js`: the script's name, up to its quote.
        let script = login
            .split("/pkg/")
            .skip(1)
            .filter_map(|rest| rest.split(['"', '\'']).next())
            .find_map(|name| name.strip_suffix(".js"))
            .filter(|_| login.starts_with("HTTP/1.1 200"))
            .with_context(|| format!("/login names no bundle:\n{login}"))?
            .to_owned();
        let wasm = get(&address, &format!("/pkg/{script}_bg.wasm"), "br")
            .with_context(|| format!("GET /pkg/{script}_bg.wasm"))?;
        let head = wasm
            .lines()
            .take(12)
            .collect::<Vec<_>>()
            .join("\n")
            .to_ascii_lowercase();
        if !head.starts_with("http/1.1 200") || !head.contains("content-encoding: br") {
            bail!("the bundle is not served from the binary:\n{head}");
        }
        println!(
            "xtask: from an empty folder: /readyz ready, /login names {script}, its wasm comes compressed"
        );
        Ok(())
    })();
    drop(server);
    let _ = fs::remove_dir_all(&folder);
    outcome
}

/// Stops the server however the check ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Asks `path` until it answers 200 or `limit` passes, or `server` (when this task started it) exits.
pub fn wait_for(
    address: &str,
    path: &str,
    limit: Duration,
    mut server: Option<&mut Child>,
) -> Result<String> {
    let started = Instant::now();
    loop {
        if let Ok(response) = get(address, path, "")
            && response.starts_with("HTTP/1.1 200")
        {
            return Ok(response);
        }
        if let Some(server) = server.as_deref_mut()
            && let Some(status) = server.try_wait()?
        {
            bail!("the binary exited ({status}) before it was ready");
        }
        if started.elapsed() > limit {
            bail!("{path} did not answer 200 within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One HTTP/1.1 GET, the whole response as text (bodies lossily decoded: only headers and HTML are read).
pub fn get(address: &str, path: &str, accept_encoding: &str) -> Result<String> {
    let mut stream =
        TcpStream::connect(address).with_context(|| format!("connect to {address}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let encoding = if accept_encoding.is_empty() {
        String::new()
    } else {
        format!("Accept-Encoding: {accept_encoding}\r\n")
    };
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\n{encoding}Connection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// Where `cargo xtask test` packs the debug build for the one-file browser test.
pub fn test_binary() -> PathBuf {
    workspace_root().join("target/onefile/anteroom")
}
