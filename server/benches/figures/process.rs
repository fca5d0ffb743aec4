//! What the process and the browser cost: resident memory with many open questions, and the bundle's size.

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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("port")
        .port();
    let mut server = tokio::process::Command::new(binary)
        .arg("serve")
        .env("DATABASE_URL", &url)
        .env("ANTEROOM_ADDR", format!("127.0.0.1:{port}"))
        .env("ANTEROOM_SITE_ROOT", &args.site)
        .env("ANTEROOM_DEVELOPMENT", "true")
        .env("RUST_LOG", "error")
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
    tokio::time::sleep(Duration::from_secs(1)).await;
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
    match (gzip("anteroom_bg.wasm"), gzip("anteroom.js")) {
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
