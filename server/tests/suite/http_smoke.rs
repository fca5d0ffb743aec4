//! The real server on a port of its own: probes answer, pages send a stranger to sign in, and shutdown is clean.

use std::net::SocketAddr;

use anteroom_server::instance::{Database, Instance, Settings};
use tokio::{sync::oneshot, task::JoinHandle};

struct RunningServer {
    base: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
    _data: tempfile::TempDir,
}

impl RunningServer {
    /// Asks the server to stop and checks that it stopped without an error.
    async fn stop_cleanly(self) {
        self.stop.send(()).expect("server still running");
        self.task
            .await
            .expect("server task joins")
            .expect("server stops without error");
    }
}

async fn start_server() -> RunningServer {
    start_server_with_site(|_| {}).await
}

/// Starts the server over a site folder that `build_site` fills first (it is also the data folder).
async fn start_server_with_site(build_site: impl FnOnce(&std::path::Path)) -> RunningServer {
    let data = tempfile::tempdir().expect("temporary directory");
    build_site(data.path());
    let url = format!(
        "sqlite://{}",
        data.path().join("anteroom.sqlite3").display()
    );
    let instance = Instance::build(Settings {
        database: Database::Url(url),
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        site_root: Some(data.path().to_path_buf()),
        schedules: None,
        ..Settings::default()
    })
    .await
    .expect("build the instance");
    let base = format!("http://{}", instance.local_addr);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(instance.run(async move {
        let _ = stopped.await;
    }));
    RunningServer {
        base,
        stop,
        task,
        _data: data,
    }
}

#[tokio::test]
async fn probes_answer_and_home_page_renders_then_server_stops_cleanly() {
    let server = start_server().await;
    let client = reqwest::Client::new();

    let health = client
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .expect("GET /healthz");
    assert_eq!(health.status(), 200);
    let body: serde_json::Value = health.json().await.expect("JSON body");
    assert_eq!(body["status"], "ok");

    let ready = client
        .get(format!("{}/readyz", server.base))
        .send()
        .await
        .expect("GET /readyz");
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.expect("JSON body");
    assert_eq!(body["database"], "sqlite");

    // Pages need a signed-in person: the home page sends a stranger to the sign-in page.
    let home = client
        .get(format!("{}/", server.base))
        .send()
        .await
        .expect("GET /");
    assert_eq!(home.status(), 200);
    assert_eq!(home.url().path(), "/login");
    let html = home.text().await.expect("HTML body");
    assert!(html.contains("Sign in"), "the sign-in page renders");
    assert!(
        html.contains("/pkg/anteroom.js"),
        "pages load the hydration bundle"
    );

    let missing = client
        .get(format!("{}/api/v1/no-such-route", server.base))
        .send()
        .await
        .expect("GET unknown route");
    assert_eq!(missing.status(), 404);

    server.stop_cleanly().await;
}

/// A site as `cargo xtask build` leaves it: fingerprinted names in `assets.json`, a `.br` and `.gz` beside each
/// file. The contents are stand-ins; what is checked is which bytes go out, under which headers.
fn write_fingerprinted_site(site: &std::path::Path) {
    let pkg = site.join("pkg");
    std::fs::create_dir_all(&pkg).expect("pkg");
    std::fs::write(
        site.join("assets.json"),
        r#"{"script": "anteroom-0123456789abcdef", "stylesheet": "anteroom-fedcba9876543210.css"}"#,
    )
    .expect("manifest");
    for name in [
        "anteroom-0123456789abcdef.js",
        "anteroom-0123456789abcdef_bg.wasm",
        "anteroom-fedcba9876543210.css",
    ] {
        std::fs::write(pkg.join(name), format!("raw {name}")).expect("file");
        std::fs::write(pkg.join(format!("{name}.br")), format!("brotli {name}")).expect("br");
        std::fs::write(pkg.join(format!("{name}.gz")), format!("gzip {name}")).expect("gz");
    }
}

#[tokio::test]
async fn pages_name_the_fingerprinted_bundle_which_is_sent_precompressed_and_cached_for_a_year() {
    let server = start_server_with_site(write_fingerprinted_site).await;
    let client = reqwest::Client::new();
    let header = |reply: &reqwest::Response, name: &str| {
        reply
            .headers()
            .get(name)
            .map(|value| value.to_str().expect("ASCII header").to_owned())
    };

    let page = client
        .get(format!("{}/login", server.base))
        .send()
        .await
        .expect("GET /login");
    assert_eq!(page.status(), 200);
    assert_eq!(
        header(&page, "cache-control").as_deref(),
        Some("no-cache"),
        "a page is revalidated, so a new build's bundle name is seen at once"
    );
    let html = page.text().await.expect("HTML");
    for linked in [
        r#"href="/pkg/anteroom-fedcba9876543210.css""#,
        r#"import("/pkg/anteroom-0123456789abcdef.js")"#,
        r#"module_or_path: "/pkg/anteroom-0123456789abcdef_bg.wasm""#,
        // The bundle is fetched once the page has been painted, so nothing in <head> preloads it.
        "requestAnimationFrame(() => setTimeout(start, 0));",
    ] {
        assert!(html.contains(linked), "the page names {linked}: {html}");
    }
    assert!(
        !html.contains("rel=\"modulepreload\"") && !html.contains("rel=\"preload\""),
        "the bundle does not compete with the page for its first paint: {html}"
    );

    let compressed_page = client
        .get(format!("{}/login", server.base))
        .header("accept-encoding", "br")
        .send()
        .await
        .expect("GET /login, brotli");
    assert_eq!(
        header(&compressed_page, "content-encoding").as_deref(),
        Some("br"),
        "HTML is compressed for a client that accepts it"
    );

    let wasm = format!("{}/pkg/anteroom-0123456789abcdef_bg.wasm", server.base);
    for (accept, expected_encoding, expected_body) in [
        (
            Some("br, gzip"),
            Some("br"),
            "brotli anteroom-0123456789abcdef_bg.wasm",
        ),
        (
            Some("gzip"),
            Some("gzip"),
            "gzip anteroom-0123456789abcdef_bg.wasm",
        ),
        (None, None, "raw anteroom-0123456789abcdef_bg.wasm"),
    ] {
        let mut request = client.get(&wasm);
        if let Some(accept) = accept {
            request = request.header("accept-encoding", accept);
        }
        let reply = request.send().await.expect("GET the wasm");
        assert_eq!(reply.status(), 200);
        assert_eq!(
            header(&reply, "content-encoding").as_deref(),
            expected_encoding,
            "accepting {accept:?}"
        );
        assert_eq!(
            header(&reply, "cache-control").as_deref(),
            Some("public, max-age=31536000, immutable")
        );
        assert_eq!(reply.text().await.expect("body"), expected_body);
    }

    let missing = client
        .get(format!("{}/pkg/anteroom-ffffffffffffffff.js", server.base))
        .send()
        .await
        .expect("GET a missing bundle");
    assert_eq!(missing.status(), 404);
    assert_ne!(
        header(&missing, "cache-control").as_deref(),
        Some("public, max-age=31536000, immutable"),
        "a missing file is not remembered for a year"
    );

    server.stop_cleanly().await;
}
