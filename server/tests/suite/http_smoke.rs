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

async fn start_server() -> RunningServer {
    let data = tempfile::tempdir().expect("temporary directory");
    let url = format!(
        "sqlite://{}",
        data.path().join("anteroom.sqlite3").display()
    );
    let instance = Instance::build(Settings {
        database: Database::Url(url),
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        site_root: data.path().to_path_buf(),
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

    server.stop.send(()).expect("server still running");
    server
        .task
        .await
        .expect("server task joins")
        .expect("server stops without error");
}
