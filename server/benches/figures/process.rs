//! What the process and the browser cost: resident memory with many open questions, and the bundle's size, and the bytes a first visit downloads.

use super::*;

/// Resident memory of the real release binary, idle and after serving 100k pending questions.
pub(super) async fn resident_memory(args: &Args) -> Vec<Figure> {
    let Some(binary) = args.binary.as_ref().filter(|binary| binary.exists()) else {
        eprintln!("bench: no --binary given; resident memory skipped");
        return Vec::new();
    };
    eprintln!("bench: resident memory of {}", binary.display());
    let dir = tempfile::tempdir().expect("temporary directory");
    if args.postgres.is_some() {
        eprintln!("bench: resident memory is measured on SQLite only");
        return Vec::new();
    }
    let url = format!("sqlite://{}", dir.path().join("rss.sqlite3").display());
    let (mut server, base) = start_release_binary(binary, &args.site, &url).await;
    let client = reqwest::Client::new();
    let pid = server.id().expect("pid");
    let idle = rss_kib(pid);

    let store = SqliteStore::connect(&url, StoreOptions::default())
        .await
        .expect("SQLite");
    populate(&store, 10_000, 100_000, "m").await;
    let cookie = sign_in(&base, &store).await;
    render_queue(&base, &cookie, 5).await;
    for s in (0..10_000).step_by(500) {
        let _ = client
            .get(format!("{base}/sessions/m-{s}"))
            .header("cookie", &cookie)
            .send()
            .await;
    }
    render_queue(&base, &cookie, 5).await;
    let loaded = rss_kib(pid);
    let _ = server.kill().await;
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    vec![
        Figure::new(
            "resident memory, idle",
            mib(idle),
            "—".to_owned(),
            "—".to_owned(),
            "≤ 40 MB",
            Some(idle <= 40 * 1000 * 1000 / 1024),
        ),
        Figure::new(
            "resident memory, 100k pending questions",
            mib(loaded),
            "—".to_owned(),
            "—".to_owned(),
            "≤ 200 MB",
            Some(loaded <= 200 * 1000 * 1000 / 1024),
        ),
    ]
}

pub(super) fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}

/// Starts the release binary on a free port over `database_url`, serving `site`; waits until it answers.
async fn start_release_binary(
    binary: &std::path::Path,
    site: &std::path::Path,
    database_url: &str,
) -> (tokio::process::Child, String) {
    start_release_binary_with(binary, site, database_url, &[]).await
}

/// [`start_release_binary`] with more settings in its environment.
pub(super) async fn start_release_binary_with(
    binary: &std::path::Path,
    site: &std::path::Path,
    database_url: &str,
    settings: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("port")
        .port();
    let server = tokio::process::Command::new(binary)
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("ANTEROOM_ADDR", format!("127.0.0.1:{port}"))
        .env("ANTEROOM_SITE_ROOT", site)
        .env("ANTEROOM_DEVELOPMENT", "true")
        .env("RUST_LOG", "error")
        .envs(settings.iter().copied())
        .kill_on_drop(true)
        .spawn()
        .expect("start the release binary");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for _ in 0..100 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (server, base)
}

/// What a browser downloads on a first visit to the home page, as the release binary sends it to a client that
/// accepts brotli: the HTML, then the stylesheet, script and wasm it names. Bytes are counted as they arrive
/// (the bench's HTTP client does not decompress), with each response's encoding and caching noted.
pub(super) async fn first_visit_bytes(args: &Args) -> Figure {
    // Issue 47: what a phone on 4G loads at once.
    const GOAL: &str = "≤ 250 KiB, brotli";
    let Some(binary) = args.binary.as_ref().filter(|binary| binary.exists()) else {
        eprintln!("bench: no --binary given; first-visit bytes skipped");
        return Figure::new(
            "first visit on the wire",
            "no --binary".to_owned(),
            "—".to_owned(),
            "—".to_owned(),
            GOAL,
            None,
        );
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!("sqlite://{}", dir.path().join("wire.sqlite3").display());
    let (mut server, base) = start_release_binary(binary, &args.site, &url).await;
    let store = SqliteStore::connect(&url, StoreOptions::default())
        .await
        .expect("SQLite");
    populate(&store, 10, 20, "w").await;
    let cookie = sign_in(&base, &store).await;
    let client = reqwest::Client::new();
    let fetch = |path: String| {
        let client = client.clone();
        let url = format!("{base}{path}");
        let cookie = cookie.clone();
        async move {
            let reply = client
                .get(&url)
                .header("cookie", cookie)
                .header("accept-encoding", "br, gzip")
                .send()
                .await
                .expect("GET");
            assert!(reply.status().is_success(), "{url}: {}", reply.status());
            let header = |name: &str| {
                reply
                    .headers()
                    .get(name)
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or("none")
                    .to_owned()
            };
            let note = format!(
                "{}: {}, cache {}",
                path,
                header("content-encoding"),
                header("cache-control")
            );
            let body = reply.bytes().await.expect("body");
            (body, note)
        }
    };
    let (html, page_note) = fetch("/".to_owned()).await;
    // The names the page links are fingerprinted: read them out of the page as a browser would, from a copy
    // asked for uncompressed (the bench cannot decode brotli; a browser would decode the one above).
    let html_text = client
        .get(format!("{base}/"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("GET / uncompressed")
        .text()
        .await
        .expect("HTML");
    let linked = |suffix: &str| -> Option<String> {
        html_text
            .split('"')
            .find(|part| part.starts_with("/pkg/") && part.ends_with(suffix))
            .map(str::to_owned)
    };
    let mut total = html.len();
    let mut notes = vec![format!("{} B {page_note}", html.len())];
    let mut missing = Vec::new();
    // The stylesheet link, and the hydration script's preload hints for the script and the wasm.
    let paths = [linked(".css"), linked(".js"), linked(".wasm")];
    for path in paths {
        match path {
            Some(path) => {
                let (body, note) = fetch(path).await;
                total += body.len();
                notes.push(format!("{} B {note}", body.len()));
            }
            None => missing.push("an asset the page should name"),
        }
    }
    let _ = server.kill().await;
    for note in &notes {
        eprintln!("bench: first visit: {note}");
    }
    if !missing.is_empty() {
        return Figure::new(
            "first visit on the wire",
            "the page names no bundle".to_owned(),
            "—".to_owned(),
            "—".to_owned(),
            GOAL,
            Some(false),
        );
    }
    Figure::new(
        "first visit on the wire (HTML + CSS + JS + wasm)",
        format!("{:.1} KiB", total as f64 / 1024.0),
        "—".to_owned(),
        "—".to_owned(),
        GOAL,
        Some(total <= 250 * 1024),
    )
}

pub(super) fn bundle_size(args: &Args) -> Figure {
    let pkg = args.site.join("pkg");
    let gzip = |name: &str| -> Option<usize> {
        let path = pkg.join(name);
        if !path.exists() {
            return None;
        }
        let out = std::process::Command::new("gzip")
            .arg("-9")
            .arg("-c")
            .arg(path)
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout.len())
    };
    let stem = anteroom_server::router::assets::SiteAssets::read(
        &anteroom_server::router::site_files::SiteFiles::Folder(args.site.clone()),
    )
    .script;
    match (
        gzip(&format!("{stem}_bg.wasm")),
        gzip(&format!("{stem}.js")),
    ) {
        (Some(wasm), Some(js)) => {
            let total = wasm + js;
            Figure::new(
                "hydrate bundle (wasm + js), gzip -9",
                format!("{:.1} KiB", total as f64 / 1024.0),
                "—".to_owned(),
                "—".to_owned(),
                "≤ 350 KB",
                Some(total <= 350 * 1000),
            )
        }
        _ => Figure::new(
            "hydrate bundle, gzip",
            format!("not built in {}", pkg.display()),
            "—".to_owned(),
            "—".to_owned(),
            "≤ 350 KB",
            None,
        ),
    }
}
