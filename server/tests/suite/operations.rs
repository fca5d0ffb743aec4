//! Operating Anteroom (docs/operations.md): the version a binary reports, backups taken while it serves and
//! put back, JSON logs and shutdown — all through the real `anteroom` binary (upgrades are in `upgrades.rs`).

use std::{
    process::Output,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration as StdDuration,
};

use anteroom_store::{Backend, StoreOptions, inspect_sqlite_file};
use anteroom_testkit::{TestServer, pulsemcp::PulsemcpClient, start_time};
use chrono::Duration;
use serde_json::{Value, json};
use tokio::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_anteroom");

pub(crate) async fn anteroom(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BINARY);
    command.args(args).env_remove("ANTEROOM_LOG_FORMAT");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().await.expect("run anteroom")
}

/// `anteroom backup --to FILE` of the database at `url`.
async fn run_backup(to: &std::path::Path, url: &str) -> Output {
    anteroom(
        &["backup", "--to", to.to_str().expect("path")],
        &[("DATABASE_URL", url)],
    )
    .await
}

/// `anteroom restore --from FILE` into the database at `url`.
async fn run_restore(from: &std::path::Path, url: &str) -> Output {
    anteroom(
        &["restore", "--from", from.to_str().expect("path")],
        &[("DATABASE_URL", url)],
    )
    .await
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("address")
        .port()
}

/// `anteroom serve` on `database_url` and its base URL, killed when dropped; its stderr when it exited before
/// answering `/readyz`.
pub(crate) async fn serve(
    database_url: &str,
    extra: &[(&str, &str)],
) -> Result<(tokio::process::Child, String), String> {
    let address = format!("127.0.0.1:{}", free_port());
    let mut command = Command::new(BINARY);
    command
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("ANTEROOM_ADDR", &address)
        .env("ANTEROOM_DEVELOPMENT", "true")
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in extra {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("start anteroom serve");
    let http = reqwest::Client::new();
    for _ in 0..300 {
        if let Ok(reply) = http.get(format!("http://{address}/readyz")).send().await
            && reply.status() == 200
        {
            return Ok((child, format!("http://{address}")));
        }
        if child.try_wait().expect("wait").is_some() {
            let output = child.wait_with_output().await.expect("output");
            return Err(text(&output.stderr));
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    panic!("anteroom serve on {address} never became ready");
}

#[tokio::test]
async fn the_binary_names_its_version_build_and_backends_and_readyz_its_schema() {
    let output = anteroom(&["--version"], &[]).await;
    let version = text(&output.stdout);
    let lines: Vec<&str> = version.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&concat!("anteroom ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    assert!(
        lines.iter().any(|line| line.starts_with("commit:   ")),
        "{version}"
    );
    assert!(
        lines.iter().any(|line| line.starts_with("built:    20")),
        "{version}"
    );
    assert!(lines.contains(&"backends: sqlite, postgres"), "{version}");

    let server = TestServer::start(Backend::Sqlite).await.expect("server");
    let ready = server.get_json("/readyz", &server.viewer_key).await;
    let status = server.store.schema_status().await.expect("status");
    assert_eq!(ready["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(ready["migration"], json!(status.binary_version()));
    assert!(
        ready["commit"]
            .as_str()
            .is_some_and(|commit| !commit.is_empty())
    );
    server.stop().await;
}

/// Sessions the load rotates over: each may ask 5 questions a second, the load asks 4 a second on each.
const LOAD_SESSIONS: usize = 10;

/// Questions asked and answered as fast as one producer and one responder go (over [`LOAD_SESSIONS`]
/// sessions, within each one's rate limit), until `stop`; returns each answer acknowledged (`200`) as its
/// session, its request id, and whether it was acknowledged before `mark` was raised.
async fn answer_load(
    server: &TestServer,
    stop: Arc<AtomicBool>,
    mark: Arc<AtomicBool>,
) -> Vec<(String, String, bool)> {
    let mut clients = Vec::new();
    for index in 0..LOAD_SESSIONS {
        let env = server.session(&format!("load-{index}")).await;
        clients.push((
            env.session_id.clone(),
            PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id)),
        ));
    }
    let expires = (start_time() + Duration::hours(1)).to_rfc3339();
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let mut acknowledged = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let (session, client) = &clients[n % LOAD_SESSIONS];
        let request_id = format!("load-{n}");
        let body = client.body(
            &request_id,
            &format!("Question {n}?"),
            schema.clone(),
            "deploy",
            &expires,
        );
        let id = client.create(&request_id, &body).await.expect("asked");
        let reply = server
            .respond(
                &server.responder_key,
                &id,
                json!({"action_type": "accept", "content": {"n": n}}),
            )
            .await;
        // Read once the acknowledgement has arrived: an answer acknowledged before the mark (the backup's start)
        // must be in the backup; one acknowledged after it may or may not be.
        let before = !mark.load(Ordering::SeqCst);
        assert_eq!(reply.status(), 200, "answered");
        acknowledged.push((session.clone(), request_id, before));
        tokio::time::sleep(StdDuration::from_millis(25)).await;
    }
    acknowledged
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_answers_arrive_holds_every_answer_acknowledged_before_it_began() {
    let server = TestServer::start(Backend::Sqlite).await.expect("server");
    let url = server.database_url.clone().expect("a SQLite file");
    let folder = tempfile::tempdir().expect("dir");
    let backup = folder.path().join("backup.sqlite3");

    let (stop, mark) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let load = {
        let (stop, mark) = (stop.clone(), mark.clone());
        async { answer_load(&server, stop, mark).await }
    };
    let backup_while_loaded = async {
        tokio::time::sleep(StdDuration::from_millis(800)).await;
        mark.store(true, Ordering::SeqCst);
        let output = run_backup(&backup, &url).await;
        // The load goes on a moment after the copy is done.
        tokio::time::sleep(StdDuration::from_millis(300)).await;
        stop.store(true, Ordering::SeqCst);
        output
    };
    let (acknowledged, output) = tokio::join!(load, backup_while_loaded);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("integrity ok"),
        "{}",
        text(&output.stderr)
    );
    let before: Vec<(&String, &String)> = acknowledged
        .iter()
        .filter(|(_, _, before)| *before)
        .map(|(session, id, _)| (session, id))
        .collect();
    let after = acknowledged.len() - before.len();
    assert!(
        !before.is_empty(),
        "answers were acknowledged before the backup began"
    );
    assert!(
        after > 0,
        "writers went on while the backup ran and after it"
    );
    server.stop().await;

    // Restored into a new file by the CLI, then read back by a store of its own.
    let restored = folder.path().join("restored.sqlite3");
    let restored_url = format!("sqlite://{}", restored.display());
    let output = run_restore(&backup, &restored_url).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report = inspect_sqlite_file(&restored).await.expect("inspect");
    assert!(report.is_intact());
    // At the load's own time: a later clock would expire the answers nobody picked up.
    let store = anteroom_store::connect(
        &restored_url,
        StoreOptions {
            clock: Arc::new(anteroom_domain::clock::ManualClock::new(start_time())),
            ..StoreOptions::default()
        },
    )
    .await
    .expect("open the restored file");
    for (session, id) in &before {
        let session = anteroom_domain::ids::SessionId::parse(session.as_str()).expect("id");
        let rounds = store.list_rounds(&session).await.expect("rounds");
        let round = rounds
            .iter()
            .find(|round| round.request_id.as_str() == id.as_str())
            .unwrap_or_else(|| panic!("{id}, acknowledged before the backup, is missing"));
        assert!(
            round.responses.is_some() && round.responded_at.is_some(),
            "{id}'s answer is in the backup: {:?}",
            round.status
        );
    }
    eprintln!(
        "backup under load: {} answers acknowledged before it began (all restored), {after} after",
        before.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_refuses_a_served_database_and_a_file_that_is_not_a_sound_backup() {
    let folder = tempfile::tempdir().expect("dir");
    let live = folder.path().join("live.sqlite3");
    let live_url = format!("sqlite://{}", live.display());
    let (server, base) = serve(&live_url, &[]).await.expect("serves");
    let backup = folder.path().join("b.sqlite3");
    let output = run_backup(&backup, &live_url).await;
    assert!(output.status.success(), "{}", text(&output.stderr));

    // A second backup to the same name never overwrites it.
    let again = run_backup(&backup, &live_url).await;
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("already exists"),
        "{}",
        text(&again.stderr)
    );

    // The served database is not replaced.
    let refused = run_restore(&backup, &live_url).await;
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("in use by a running Anteroom"),
        "{}",
        text(&refused.stderr)
    );
    assert!(
        reqwest::get(format!("{base}/readyz"))
            .await
            .expect("still serving")
            .status()
            .is_success()
    );

    // A file that is no database, and one cut short, are refused before anything is touched.
    let garbage = folder.path().join("garbage.sqlite3");
    std::fs::write(&garbage, b"not a database at all").expect("write");
    let target_url = format!("sqlite://{}", folder.path().join("other.sqlite3").display());
    let refused = run_restore(&garbage, &target_url).await;
    assert!(!refused.status.success());
    let cut = folder.path().join("cut.sqlite3");
    let bytes = std::fs::read(&backup).expect("backup");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write");
    let refused = run_restore(&cut, &target_url).await;
    assert!(!refused.status.success(), "{}", text(&refused.stdout));
    assert!(
        !folder.path().join("other.sqlite3").exists(),
        "nothing was put in place"
    );

    // Stopped, the database is replaced, and the one it replaced is kept beside it.
    drop(server);
    tokio::time::sleep(StdDuration::from_millis(200)).await;
    let restored = run_restore(&backup, &live_url).await;
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    assert!(
        text(&restored.stderr).contains("is kept as"),
        "{}",
        text(&restored.stderr)
    );
    let kept = std::fs::read_dir(folder.path())
        .expect("dir")
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("live.sqlite3.before-restore-")
        })
        .count();
    assert!(kept >= 1, "the replaced database is kept");
    let (_server, _) = serve(&live_url, &[])
        .await
        .expect("serves the restored file");

    // PostgreSQL says what to use instead.
    let output = anteroom(
        &["backup", "--to", "x.dump"],
        &[("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")],
    )
    .await;
    assert!(!output.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_backups_are_written_checked_and_pruned_to_the_newest_few() {
    let folder = tempfile::tempdir().expect("dir");
    let url = format!(
        "sqlite://{}",
        folder.path().join("anteroom.sqlite3").display()
    );
    let backups = folder.path().join("copies");
    let (_server, _base) = serve(
        &url,
        &[
            ("ANTEROOM_BACKUP_CRON", "* * * * * *"),
            ("ANTEROOM_BACKUP_DIR", backups.to_str().expect("path")),
            ("ANTEROOM_BACKUP_KEEP", "2"),
        ],
    )
    .await
    .expect("serves");
    let names = |backups: &std::path::Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(backups)
            .map(|entries| {
                entries
                    .filter_map(|entry| entry.ok())
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".sqlite3"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    // Four ticks at least: two kept, the older ones removed.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..100 {
        seen.extend(names(&backups));
        if seen.len() >= 4 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    assert!(seen.len() >= 4, "backups were taken each second: {seen:?}");
    let kept = names(&backups);
    assert!(kept.len() <= 2, "{kept:?}");
    for name in kept {
        let report = inspect_sqlite_file(&backups.join(&name))
            .await
            .expect("inspect");
        assert!(report.is_intact(), "{name}");
        assert!(
            report.schema.pending().is_empty(),
            "{name} has the whole schema"
        );
    }

    // PostgreSQL has no scheduled backup of its own: starting with one asked for is refused, saying why.
    let output = anteroom(
        &["serve"],
        &[
            ("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
            ("ANTEROOM_BACKUP_CRON", "0 0 3 * * *"),
        ],
    )
    .await;
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("pg_dump"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_a_line_with_every_field_a_key() {
    let folder = tempfile::tempdir().expect("dir");
    let url = format!(
        "sqlite://{}",
        folder.path().join("anteroom.sqlite3").display()
    );
    let output = anteroom(
        &["migrate"],
        &[("DATABASE_URL", &url), ("ANTEROOM_LOG_FORMAT", "json")],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let lines: Vec<Value> = text(&output.stderr)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    let up_to_date = lines
        .iter()
        .find(|line| line["message"] == "database schema is up to date")
        .expect("the migration's line");
    assert_eq!(up_to_date["level"], "INFO");
    assert_eq!(
        up_to_date["database"], "sqlite",
        "a field is a key of its own"
    );
    assert!(up_to_date["timestamp"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_answers_long_polls_streams_and_held_hooks_at_once_with_when_to_come_back() {
    let server = TestServer::start(Backend::Sqlite).await.expect("server");
    let env = server.session("restarting").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some(&env.session_id));
    let expires = (start_time() + Duration::hours(1)).to_rfc3339();
    let body = client.body(
        "r1",
        "Proceed?",
        json!({"type": "object", "properties": {}}),
        "deploy",
        &expires,
    );
    let id = client.create("r1", &body).await.expect("asked");

    // Each would wait 30 s (the poll), for ever (the stream) or 10 minutes (the hook): longer than the
    // shutdown's 10-second grace.
    let http = server.http.clone();
    let poll = tokio::spawn(http.get(format!("{}/{id}?wait=30", env.poll_url)).send());
    let stream = tokio::spawn(
        http.get(server.url("/api/v1/events"))
            .bearer_auth(&server.viewer_key)
            .send(),
    );
    let hook = tokio::spawn(
        http.post(server.url("/hooks/claude/pre-tool-use"))
            .bearer_auth(&env.token)
            .json(&json!({
                "session_id": "run-1", "cwd": "/srv", "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": "make deploy"}
            }))
            .send(),
    );
    // All three are waiting once the hook's question exists and the stream has begun.
    server.rounds_once("restarting", 2).await;
    let stream = stream.await.expect("task").expect("the stream begins");
    assert_eq!(stream.status(), 200);

    let stopped = tokio::spawn(server.stop());

    let poll = poll
        .await
        .expect("task")
        .expect("the poll is answered, not cut");
    assert_eq!(poll.status(), 200);
    let poll: Value = poll.json().await.expect("JSON");
    assert_eq!(poll["action"], "pending", "{poll}");

    let hook = hook
        .await
        .expect("task")
        .expect("the hook is answered, not cut");
    assert_eq!(hook.status(), 503);
    assert_eq!(hook.headers()["retry-after"], "5");
    let hook: Value = hook.json().await.expect("JSON");
    assert_eq!(hook["error"], "unavailable", "{hook}");

    let events = stream.text().await.expect("the stream ends");
    assert!(events.contains("event: closing"), "{events}");
    assert!(events.contains("retry: 2000"), "{events}");
    stopped.await.expect("the server stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_brings_what_the_backups_own_wal_holds() {
    use anteroom_store::AgentSessionStore;
    let folder = tempfile::tempdir().expect("dir");
    let source = folder.path().join("source.sqlite3");
    let source_url = format!("sqlite://{}", source.display());
    let migrated = anteroom(&["migrate"], &[("DATABASE_URL", &source_url)]).await;
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));

    // A session written while a connection stays open: it is in the WAL, not yet in the main file.
    let store = anteroom_store::SqliteStore::connect(&source_url, StoreOptions::default())
        .await
        .expect("open");
    store
        .register_session(anteroom_domain::session::NewSession {
            id: anteroom_domain::ids::SessionId::parse("in-the-wal").expect("id"),
            title: Some("Only in the WAL".to_owned()),
            agent: None,
        })
        .await
        .expect("session");
    let wal = folder.path().join("source.sqlite3-wal");
    assert!(
        std::fs::metadata(&wal).expect("a WAL").len() > 0,
        "the write is in the WAL"
    );
    // A database copied with its WAL beside it, as a kept `…before-restore-…` file is.
    let copy = folder.path().join("copy.sqlite3");
    std::fs::copy(&source, &copy).expect("copy");
    std::fs::copy(&wal, folder.path().join("copy.sqlite3-wal")).expect("copy the WAL");
    drop(store);

    let target_url = format!(
        "sqlite://{}",
        folder.path().join("target.sqlite3").display()
    );
    let restored = run_restore(&copy, &target_url).await;
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let target = anteroom_store::connect(&target_url, StoreOptions::default())
        .await
        .expect("open the restored file");
    let session = target
        .get_session(&anteroom_domain::ids::SessionId::parse("in-the-wal").expect("id"))
        .await
        .expect("the session written to the backup's WAL was restored");
    assert_eq!(session.title, "Only in the WAL");
}
