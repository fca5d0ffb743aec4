//! `anteroom wrap` as a harness runs it, a real process between a pipe and a real stdio server: what happens when
//! the wrapper is killed mid-delivery, and that it never leaves its server behind.

use std::{path::Path, process::Stdio, time::Duration as StdDuration};

use anteroom_domain::{
    ids::{RoundId, SessionId},
    round::RoundStatus,
};
use anteroom_server::jobs::recover;
use anteroom_testkit::{self as support, Db, TestServer, on_both_backends};
use chrono::Duration;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines},
    process::{Child, ChildStdin, ChildStdout, Command},
};

const BINARY: &str = env!("CARGO_BIN_EXE_anteroom");

/// The raw-wire fixture server of `anteroom-wrap`'s own tests.
fn fixture() -> String {
    format!(
        "{}/../wrap/tests/fixtures/eliciting_server.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A running `anteroom wrap` and the harness's ends of its pipes.
struct Wrapper {
    process: Child,
    stdin: Option<ChildStdin>,
    /// Held open, as a harness holds it: a closed pipe would be a different test.
    _stdout: Lines<BufReader<ChildStdout>>,
}

impl Wrapper {
    fn start(request_url: &str, server: &[&str], env: &[(&str, &str)]) -> Self {
        let mut process = Command::new(BINARY)
            .args(["wrap", "--server", "deployer", "--"])
            .args(server)
            .env("ELICITATION_REQUEST_URL", request_url)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run anteroom wrap");
        let stdin = process.stdin.take();
        let stdout = BufReader::new(process.stdout.take().expect("stdout")).lines();
        Self {
            process,
            stdin,
            _stdout: stdout,
        }
    }

    async fn send(&mut self, message: Value) {
        self.stdin
            .as_mut()
            .expect("stdin open")
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("write");
    }

    /// How long the wrapper took to exit after `cause`, or `None` if it had not after 5 s.
    async fn exits_after(&mut self, cause: impl FnOnce(&mut Self)) -> Option<StdDuration> {
        let started = std::time::Instant::now();
        cause(self);
        tokio::time::timeout(StdDuration::from_secs(5), self.process.wait())
            .await
            .ok()
            .map(|_| started.elapsed())
    }
}

/// Whether process `pid` still runs (a zombie counts as gone).
fn is_running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.split_whitespace()
            .nth(2)
            .is_some_and(|state| state != "Z")
    })
}

/// Starts the fixture through `sh`, which writes the server's pid to `pid_file` before it becomes the server.
fn server_writing_pid(pid_file: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "echo $$ > {}; exec python3 {}",
            pid_file.display(),
            fixture()
        ),
    ]
}

async fn read_pid(pid_file: &Path) -> String {
    for _ in 0..250 {
        if let Ok(pid) = std::fs::read_to_string(pid_file)
            && !pid.trim().is_empty()
        {
            return pid.trim().to_owned();
        }
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
    panic!("the wrapped server never started");
}

/// Killed between handing the answer over and the call's end, the wrapper leaves a lease that runs out; the
/// recovery job then ends the round `failed / recovery_unavailable`, the session page says so, and a late answer
/// cannot revive it.
async fn a_wrapper_killed_mid_delivery_leaves_the_round_to_recovery(db: Db) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("s1").await;
    let dir = tempfile::tempdir().expect("temporary directory");
    let pid_file = dir.path().join("server.pid");
    let command = server_writing_pid(&pid_file);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    // The retried call takes 20 s: the wrapper is killed while it runs.
    let mut wrapper = Wrapper::start(&env.request_url, &command, &[("SLOW_SECONDS", "20")]);
    wrapper
        .send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "slow_plan", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
        )
        .await;
    let session = SessionId::parse("s1").expect("id");
    let mut round_id = None;
    for _ in 0..500 {
        if let Some(round) = server
            .store
            .list_rounds(&session)
            .await
            .expect("rounds")
            .first()
        {
            round_id = Some(round.round_id);
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
    let round_id: RoundId = round_id.expect("the question reached Anteroom");
    let answered = server
        .respond_each(
            &server.responder_key,
            &round_id.to_string(),
            json!({"env": {"action": "accept", "content": {"env": "prod"}}, "notify": {"action": "decline"}}),
        )
        .await;
    assert_eq!(answered.status(), 200);
    let mut status = RoundStatus::Pending;
    for _ in 0..500 {
        status = server
            .store
            .get_round(round_id)
            .await
            .expect("round")
            .status;
        if status == RoundStatus::Delivered {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
    assert_eq!(status, RoundStatus::Delivered, "the retry is on its way");
    wrapper.process.kill().await.expect("kill the wrapper");
    // SIGKILL leaves no chance to stop the server; it would notice its closed pipe only after its 20 s.
    let _ = std::process::Command::new("kill")
        .arg(read_pid(&pid_file).await)
        .status();

    assert_eq!(
        recover::run(server.state.clone()).await,
        0,
        "the lease is still live"
    );
    server.clock.advance(Duration::seconds(61));
    assert_eq!(recover::run(server.state.clone()).await, 1);
    let round = server.store.get_round(round_id).await.expect("round");
    assert_eq!(round.status, RoundStatus::Failed);
    assert_eq!(
        round.failure.as_ref().map(|failure| failure.code.as_str()),
        Some("recovery_unavailable")
    );
    support::browser::person(&server, "ops", anteroom_domain::access::Role::Viewer).await;
    let cookie = support::browser::sign_in(&server, "ops").await;
    let (_, page) = support::browser::page(&server, "/sessions/s1", &cookie).await;
    assert!(
        page.contains("recovery_unavailable"),
        "the session page says so"
    );
    let late = server
        .respond_each(
            &server.responder_key,
            &round_id.to_string(),
            json!({"env": {"action": "accept", "content": {"env": "dev"}}, "notify": {"action": "decline"}}),
        )
        .await;
    assert_eq!(late.status(), 409, "a late answer cannot resume it");
    server.stop().await;
}

on_both_backends!(a_wrapper_killed_mid_delivery_leaves_the_round_to_recovery);

/// SIGTERM to the wrapper reaches its server, and both are gone within the grace.
#[tokio::test]
async fn sigterm_reaches_the_wrapped_server() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let pid_file = dir.path().join("server.pid");
    let command = server_writing_pid(&pid_file);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let mut wrapper = Wrapper::start(
        "http://127.0.0.1:9/api/v1/s/ars_token/elicitations",
        &command,
        &[],
    );
    let server_pid = read_pid(&pid_file).await;
    assert!(is_running(&server_pid));
    let wrapper_pid = wrapper.process.id().expect("pid").to_string();
    let took = wrapper
        .exits_after(|_| {
            let sent = std::process::Command::new("kill")
                .args(["-TERM", &wrapper_pid])
                .status()
                .expect("kill");
            assert!(sent.success());
        })
        .await
        .expect("the wrapper exits on SIGTERM");
    assert!(took < StdDuration::from_secs(3), "{took:?}");
    assert!(
        !is_running(&server_pid),
        "the server does not outlive the wrapper"
    );
}

/// A server that ignores the end of its input is killed after the grace: the wrapper exits within ~1.5 s of
/// the harness closing stdin (SDK clients send SIGTERM after 2 s).
#[tokio::test]
async fn a_server_deaf_to_eof_is_killed_after_the_grace() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let pid_file = dir.path().join("server.pid");
    let script = format!("echo $$ > {}; exec sleep 60", pid_file.display());
    let mut wrapper = Wrapper::start(
        "http://127.0.0.1:9/api/v1/s/ars_token/elicitations",
        &["sh", "-c", &script],
        &[],
    );
    let server_pid = read_pid(&pid_file).await;
    let took = wrapper
        .exits_after(|wrapper| drop(wrapper.stdin.take()))
        .await
        .expect("the wrapper exits when stdin closes");
    assert!(took < StdDuration::from_secs(3), "{took:?}");
    assert!(
        !is_running(&server_pid),
        "the server does not outlive the wrapper"
    );
}
