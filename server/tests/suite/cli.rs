//! The `anteroom` command line, run as a real process: `apikey create`, `session create`, and `ask` with its
//! exit status per outcome.

use anteroom_testkit as support;

use std::time::Duration as StdDuration;

use serde_json::{Value, json};
use support::{Backend, TestServer};
use tokio::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_anteroom");

#[tokio::test]
async fn apikey_create_prints_only_the_key_and_session_create_prints_the_environment_block() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!("sqlite://{}", dir.path().join("cli.sqlite3").display());
    let key = Command::new(BINARY)
        .args(["apikey", "create", "--name", "ci", "--role", "admin"])
        .env("DATABASE_URL", &url)
        .output()
        .await
        .expect("run apikey create");
    assert!(
        key.status.success(),
        "{}",
        String::from_utf8_lossy(&key.stderr)
    );
    let stdout = String::from_utf8_lossy(&key.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("ark_"));

    let bad_role = Command::new(BINARY)
        .args(["apikey", "create", "--name", "ci", "--role", "root"])
        .env("DATABASE_URL", &url)
        .output()
        .await
        .expect("run apikey create");
    // A role that is not one is a usage error, refused by the argument parser with the list of roles.
    assert_eq!(bad_role.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad_role.stderr).contains("viewer, responder, admin"),
        "{}",
        String::from_utf8_lossy(&bad_role.stderr)
    );

    let session = Command::new(BINARY)
        .args([
            "session",
            "create",
            "--id",
            "cli-1",
            "--title",
            "From the CLI",
        ])
        .env("DATABASE_URL", &url)
        .env("ANTEROOM_PUBLIC_URL", "https://anteroom.example")
        .output()
        .await
        .expect("run session create");
    assert!(
        session.status.success(),
        "{}",
        String::from_utf8_lossy(&session.stderr)
    );
    let block = String::from_utf8_lossy(&session.stdout);
    let keys: Vec<&str> = block
        .lines()
        .filter_map(|line| line.split_once('=').map(|(k, _)| k))
        .collect();
    assert_eq!(
        keys,
        [
            "ELICITATION_REQUEST_URL",
            "ELICITATION_POLL_URL",
            "ELICITATION_PREFER_HTTP_FALLBACK",
            "ELICITATION_TTL_MS",
            "ELICITATION_SESSION_ID",
            "ANTEROOM_SESSION_TOKEN"
        ]
    );
    assert!(block.contains("ELICITATION_REQUEST_URL=https://anteroom.example/api/v1/s/ars_"));
}

/// Starts `anteroom ask` against the server, answers it with `answer`, and returns (exit code, stdout).
async fn ask_and_answer(
    server: &TestServer,
    session: &str,
    answer: Option<Value>,
) -> (Option<i32>, String) {
    let env = server.session(session).await;
    let child = Command::new(BINARY)
        .args([
            "ask",
            "--message",
            "Deploy to prod?",
            "--tool-name",
            "deploy",
            "--timeout",
            "10m",
        ])
        .env("ELICITATION_REQUEST_URL", &env.request_url)
        .env("ELICITATION_POLL_URL", &env.poll_url)
        .env("ELICITATION_SESSION_ID", &env.session_id)
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn ask");
    // Wait for the question to arrive.
    let mut request_id = None;
    for _ in 0..100 {
        let rounds: Value = server
            .get_json(
                &format!("/api/v1/sessions/{session}/rounds"),
                &server.viewer_key,
            )
            .await;
        if let Some(id) = rounds["rounds"][0]["request_id"].as_str() {
            request_id = Some(id.to_owned());
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    let request_id = request_id.expect("ask posted its question");
    match answer {
        Some(answer) => {
            let reply = server
                .respond(&server.responder_key, &request_id, answer)
                .await;
            assert_eq!(reply.status(), 200);
        }
        // The server's clock starts in March while `ask` names a deadline from the real clock, clamped to 7 days.
        None => server.clock.advance(chrono::Duration::days(8)),
    }
    let output = tokio::time::timeout(StdDuration::from_secs(10), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("ask for {session} did not finish"))
        .expect("ask output");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_exits_with_a_status_per_outcome_and_prints_the_answer() {
    let Some(server) = TestServer::start(Backend::Sqlite).await else {
        return;
    };
    let (code, stdout) = ask_and_answer(
        &server,
        "ask-accept",
        Some(json!({"action_type": "accept", "content": {"answer": "yes"}})),
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}");
    let printed: Value = serde_json::from_str(&stdout).expect("ask prints JSON");
    assert_eq!(printed["action"], "accept");
    assert_eq!(printed["content"]["answer"], "yes");

    let (code, _) = ask_and_answer(
        &server,
        "ask-decline",
        Some(json!({"action_type": "decline"})),
    )
    .await;
    assert_eq!(code, Some(2));
    let (code, _) = ask_and_answer(
        &server,
        "ask-cancel",
        Some(json!({"action_type": "cancel"})),
    )
    .await;
    assert_eq!(code, Some(3));
    let (code, stdout) = ask_and_answer(&server, "ask-expire", None).await;
    assert_eq!(code, Some(4), "{stdout}");

    let unreachable = Command::new(BINARY)
        .args(["ask", "--message", "?"])
        .env(
            "ELICITATION_REQUEST_URL",
            "http://127.0.0.1:9/api/v1/elicitations",
        )
        .env(
            "ELICITATION_POLL_URL",
            "http://127.0.0.1:9/api/v1/elicitations",
        )
        .output()
        .await
        .expect("run ask");
    assert_eq!(unreachable.status.code(), Some(1));
    server.stop().await;
}

/// Reads the server's log until the first-run link appears (or the process ends).
async fn first_run_link(stderr: tokio::process::ChildStderr) -> Option<String> {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(at) = line.find("http://") {
            let link: String = line[at..].split_whitespace().next()?.to_owned();
            if link.contains("/setup?token=") {
                return Some(link);
            }
        }
    }
    None
}

#[tokio::test]
async fn first_start_prints_a_one_time_admin_link_and_user_add_adds_people() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!("sqlite://{}", dir.path().join("first.sqlite3").display());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("free port")
        .port();
    let mut server = Command::new(BINARY)
        .arg("serve")
        .env("DATABASE_URL", &url)
        .env("ANTEROOM_ADDR", format!("127.0.0.1:{port}"))
        .env("ANTEROOM_DEVELOPMENT", "true")
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start anteroom serve");
    let stderr = server.stderr.take().expect("stderr");
    let link = tokio::time::timeout(StdDuration::from_secs(30), first_run_link(stderr))
        .await
        .expect("the link is printed at start")
        .expect("a setup link");
    let token = link.split("token=").nth(1).expect("token").to_owned();

    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let set_up = |password: &'static str| {
        browser
            .post(format!("http://127.0.0.1:{port}/setup"))
            .form(&[
                ("token", token.as_str()),
                ("username", "ada"),
                ("password", password),
            ])
            .send()
    };
    // A password that is too short does not use up the link.
    let short = set_up("short").await.expect("POST /setup");
    assert!(
        short.headers()["location"]
            .to_str()
            .expect("location")
            .ends_with("error=password")
    );
    let created = set_up("a long enough password").await.expect("POST /setup");
    assert_eq!(created.status(), 303);
    assert_eq!(created.headers()["location"], "/");
    assert!(created.headers().contains_key("set-cookie"), "signed in");
    let again = set_up("a long enough password").await.expect("POST /setup");
    assert!(
        again.headers()["location"]
            .to_str()
            .expect("location")
            .ends_with("error=link"),
        "the link works once"
    );
    server.kill().await.expect("stop the server");

    let added = Command::new(BINARY)
        .args(["user", "add", "--username", "vic", "--role", "viewer"])
        .env("DATABASE_URL", &url)
        .env("ANTEROOM_PASSWORD", "another long password")
        .output()
        .await
        .expect("run user add");
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let taken = Command::new(BINARY)
        .args(["user", "add", "--username", "vic"])
        .env("DATABASE_URL", &url)
        .env("ANTEROOM_PASSWORD", "another long password")
        .output()
        .await
        .expect("run user add");
    assert_eq!(taken.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&taken.stderr).contains("taken"));

    // The first admin's browser, signed in by the link, is signed out everywhere by an admin's command.
    let sign_out = |username: &'static str| {
        Command::new(BINARY)
            .args(["user", "sign-out", "--username", username])
            .env("DATABASE_URL", &url)
            .output()
    };
    let signed_out = sign_out("ada").await.expect("run user sign-out");
    let said = String::from_utf8_lossy(&signed_out.stderr);
    assert!(signed_out.status.success(), "{said}");
    assert!(said.contains("ada is signed out in 1 browser(s)"), "{said}");
    let nobody = sign_out("nobody").await.expect("run user sign-out");
    assert_eq!(nobody.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("no person is called nobody"));

    // Groups: added with their members, listed, members removed, then the group.
    let group = |args: &[&str]| {
        Command::new(BINARY)
            .arg("group")
            .args(args)
            .env("DATABASE_URL", &url)
            .output()
    };
    let added = group(&["add", "platform-oncall", "ada", "vic"])
        .await
        .expect("run group add");
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let unknown = group(&["add", "platform-oncall", "nobody"])
        .await
        .expect("run group add");
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("nobody"));
    let listed = group(&["list"]).await.expect("run group list");
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "platform-oncall: ada vic\n"
    );
    let left = group(&["remove", "platform-oncall", "vic"])
        .await
        .expect("run group remove");
    assert!(left.status.success());
    let listed = group(&["list"]).await.expect("run group list");
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "platform-oncall: ada\n"
    );
    let removed = group(&["remove", "platform-oncall"])
        .await
        .expect("run group remove");
    assert!(removed.status.success());
    let again = group(&["remove", "platform-oncall"])
        .await
        .expect("run group remove");
    assert_eq!(again.status.code(), Some(1));

    // The record: every change above, exported and verified; then tampered with, and found out.
    let audit = |args: &[&str]| {
        Command::new(BINARY)
            .arg("audit")
            .args(args)
            .env("DATABASE_URL", &url)
            .output()
    };
    let lines = audit(&["export"]).await.expect("run audit export");
    let lines = String::from_utf8_lossy(&lines.stdout).into_owned();
    let actions: Vec<String> = lines
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).expect("JSON")["action"]
                .as_str()
                .expect("action")
                .to_owned()
        })
        .collect();
    assert_eq!(
        actions,
        [
            "group.created",
            "group.member_added",
            "group.member_added",
            "group.member_removed",
            "group.deleted"
        ],
        "{lines}"
    );
    let csv = audit(&["export", "--format", "csv", "--since", "2000-01-01"])
        .await
        .expect("csv");
    let csv = String::from_utf8_lossy(&csv.stdout).into_owned();
    assert!(
        csv.starts_with("seq,at,actor,action,subject,detail,prev_hash,hash\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 6, "{csv}");
    let future = audit(&["export", "--since", "2999-01-01"])
        .await
        .expect("since");
    assert!(future.stdout.is_empty());
    let bad = audit(&["export", "--since", "yesterday"])
        .await
        .expect("bad since");
    assert_eq!(bad.status.code(), Some(1));
    let verified = audit(&["verify"]).await.expect("run audit verify");
    let said = String::from_utf8_lossy(&verified.stdout).into_owned();
    assert!(
        verified.status.success() && said.contains("intact: 5 entries"),
        "{said}"
    );

    let pool = sqlx::SqlitePool::connect(&url)
        .await
        .expect("open the database");
    let refused = tamper(
        &pool,
        "UPDATE audit_log SET actor = 'mallory' WHERE seq = 2",
    )
    .await;
    assert!(refused.is_err(), "the log is append-only");
    for statement in [
        "DROP TRIGGER audit_log_no_update",
        "DROP TRIGGER audit_log_no_delete",
        "UPDATE audit_log SET actor = 'mallory' WHERE seq = 2",
    ] {
        tamper(&pool, statement).await.expect(statement);
    }
    let edited = audit(&["verify"]).await.expect("run audit verify");
    assert_eq!(edited.status.code(), Some(1));
    let said = String::from_utf8_lossy(&edited.stdout).into_owned();
    assert!(
        said.contains("BROKEN at entry 2") && said.contains("edited"),
        "{said}"
    );
    tamper(&pool, "UPDATE audit_log SET actor = 'cli' WHERE seq = 2")
        .await
        .expect("restore");
    tamper(&pool, "DELETE FROM audit_log WHERE seq = 3")
        .await
        .expect("delete");
    let deleted = audit(&["verify"]).await.expect("run audit verify");
    assert_eq!(deleted.status.code(), Some(1));
    let said = String::from_utf8_lossy(&deleted.stdout).into_owned();
    assert!(
        said.contains("BROKEN at entry 3") && said.contains("missing"),
        "{said}"
    );
    tamper(&pool, "DELETE FROM audit_log WHERE seq >= 3")
        .await
        .expect("cut the tail");
    let cut = audit(&["verify"]).await.expect("run audit verify");
    assert_eq!(cut.status.code(), Some(1));
    let said = String::from_utf8_lossy(&cut.stdout).into_owned();
    assert!(said.contains("BROKEN at entry 3"), "{said}");
    pool.close().await;
}

/// Runs `statement` on the database behind Anteroom's back, as someone with the database file could.
#[expect(
    clippy::disallowed_methods,
    reason = "the test tampers with the record the way an attacker with the database would, outside the store"
)]
async fn tamper(
    pool: &sqlx::SqlitePool,
    statement: &str,
) -> sqlx::Result<sqlx::sqlite::SqliteQueryResult> {
    sqlx::query(statement).execute(pool).await
}

/// `anteroom wrap` as the harness runs it: the wrapped server's question is answered in Anteroom, the tool's
/// result carries the answer, and the wrapper exits when the harness closes stdin.
#[tokio::test]
async fn wrap_relays_a_server_and_brings_its_question_to_a_person() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let Some(server) = TestServer::start(Backend::Sqlite).await else {
        return;
    };
    let env = server.session("s1").await;
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../wrap/tests/fixtures/eliciting_server.py"
    );
    let mut wrap = Command::new(BINARY)
        .args(["wrap", "--server", "deployer", "--", "python3", fixture])
        .env("ELICITATION_REQUEST_URL", &env.request_url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run anteroom wrap");
    let mut stdin = wrap.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(wrap.stdout.take().expect("stdout")).lines();
    for message in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "deploy"}}),
    ] {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("write");
    }
    let round_id = server.rounds_once("s1", 1).await[0].round_id.to_string();
    let answered = server
        .respond(
            &server.responder_key,
            &round_id,
            json!({"action_type": "decline"}),
        )
        .await;
    assert_eq!(answered.status(), 200);
    let mut lines = Vec::new();
    while lines.len() < 2 {
        let line = tokio::time::timeout(StdDuration::from_secs(30), stdout.next_line())
            .await
            .expect("a line within 30 s")
            .expect("read")
            .expect("a line");
        lines.push(serde_json::from_str::<Value>(&line).expect("JSON"));
    }
    assert_eq!(lines[0]["id"], 0);
    assert_eq!(lines[1]["id"], 1);
    let text = lines[1]["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains("\"decline\""), "{text}");
    drop(stdin);
    let status = tokio::time::timeout(StdDuration::from_secs(5), wrap.wait())
        .await
        .expect("the wrapper exits when the harness closes stdin")
        .expect("status");
    assert!(status.success(), "{status}");
    server.stop().await;
}
