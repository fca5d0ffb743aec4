//! `anteroom wrap` as a harness runs it, a real process between a pipe and a real stdio server: what happens when
//! the wrapper is killed mid-delivery, and that it never leaves its server behind.

use std::{path::Path, process::Stdio, time::Duration as StdDuration};

use anteroom_domain::{ids::RoundId, round::RoundStatus};
use anteroom_server::jobs::recover;
use anteroom_testkit::{self as support, Backend, TestServer, on_both_backends};
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
    stdout: Lines<BufReader<ChildStdout>>,
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
            stdout,
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
async fn a_wrapper_killed_mid_delivery_leaves_the_round_to_recovery(db: Backend) {
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
    let round_id: RoundId = server.rounds_once("s1", 1).await[0].round_id;
    let answered = server
        .respond_each(
            &server.responder_key,
            &round_id.to_string(),
            json!({"env": {"action": "accept", "content": {"env": "prod"}}, "notify": {"action": "decline"}}),
        )
        .await;
    assert_eq!(answered.status(), 200);
    // The retry is on its way.
    server
        .round_once(round_id, |round| round.status == RoundStatus::Delivered)
        .await;
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

/// The wrapped server is third-party code: it never sees the session's capability URL or token.
#[tokio::test]
async fn the_wrapped_server_does_not_inherit_the_session_credentials() {
    let mut wrapper = Wrapper::start(
        "http://127.0.0.1:9/api/v1/s/ars_secret/elicitations",
        &[
            "sh",
            "-c",
            "printf '%s|%s|%s|%s\\n' \"${ELICITATION_REQUEST_URL:-unset}\" \"${ELICITATION_POLL_URL:-unset}\" \"${ANTEROOM_SESSION_TOKEN:-unset}\" \"${KEPT:-unset}\"",
        ],
        &[
            (
                "ELICITATION_POLL_URL",
                "http://127.0.0.1:9/api/v1/s/ars_secret/elicitations",
            ),
            ("ANTEROOM_SESSION_TOKEN", "ars_secret"),
            ("KEPT", "kept"),
        ],
    );
    let line = tokio::time::timeout(StdDuration::from_secs(10), wrapper.stdout.next_line())
        .await
        .expect("the server's line")
        .expect("read")
        .expect("a line");
    assert_eq!(line, "unset|unset|unset|kept");
}

/// A kernel figure of process `pid` from `/proc/{pid}/status`, in KiB (`VmRSS`, `VmHWM`).
fn memory_kib(pid: u32, field: &str) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a figure in KiB")
}

/// A harness that stops reading while the server writes without pause (1 MiB lines, forever): the wrapper's
/// writer queue stops at its bound and the server is slowed by its full pipe, so the wrapper's memory stays
/// flat instead of growing with what the server writes.
#[tokio::test]
async fn a_harness_that_stops_reading_holds_the_wrapper_to_its_bound() {
    let script = "line=$(head -c 1048575 /dev/zero | tr '\\0' x); while :; do printf '%s\\n' \"$line\"; done";
    let wrapper = Wrapper::start(
        "http://127.0.0.1:9/api/v1/s/ars_token/elicitations",
        &["sh", "-c", script],
        &[],
    );
    let pid = wrapper.process.id().expect("pid");
    let mut samples = Vec::new();
    for _ in 0..15 {
        tokio::time::sleep(StdDuration::from_millis(200)).await;
        samples.push(memory_kib(pid, "VmRSS"));
    }
    let peak = memory_kib(pid, "VmHWM");
    // The bound: 8 MiB queued and one line in hand, over the process's own size (about 20 MiB here).
    assert!(
        peak < 96 * 1024,
        "the wrapper grew to {peak} KiB while nobody read (samples {samples:?})"
    );
    let (first, last) = (samples[4], samples[14]);
    assert!(
        last < first + 4 * 1024,
        "still growing after the queue filled: {first} KiB then {last} KiB"
    );
    drop(wrapper);
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

/// Real MCP SDKs on both sides of the wrapper: servers from `@modelcontextprotocol/sdk` 1.32 (legacy
/// `elicitInput`), `@modelcontextprotocol/server` 2.4 (2026-07-28 `inputRequired`) and the Python `mcp` 2.3 (both
/// eras), and a harness on `@modelcontextprotocol/client` 2.4 that declares no elicitation, waits 3 s for a result
/// and resets that on progress. `cargo xtask test` installs them from their lockfiles (`wrap/tests/sdk/`).
mod sdks {
    use super::*;

    /// The SDK test packages' folder and the Python SDK's interpreter, as `cargo xtask test` installed them.
    fn installed() -> (String, String) {
        let folder = std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
            "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
        );
        let python = std::env::var("ANTEROOM_TEST_MCP_PYTHON").expect("ANTEROOM_TEST_MCP_PYTHON");
        (folder, python)
    }

    /// What the harness printed: the call's result or error, and how many progress notes it heard.
    struct Called {
        result: Value,
        progress: u64,
    }

    impl Called {
        /// The tool result's text, read as the JSON the fixture servers write there.
        fn reported(&self) -> Value {
            let text = self.result["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("a text result: {}", self.result));
            serde_json::from_str(text).expect("the server's report")
        }
    }

    /// Runs the harness against `server` under `anteroom wrap`; `answer` plays the person once the question is
    /// in Anteroom, `wait` after it arrived (longer than the harness's 3 s: only progress keeps the call alive).
    async fn call_through_wrapper(
        anteroom: &TestServer,
        era: &str,
        tool: &str,
        server: &[&str],
        wait: StdDuration,
        answer: Value,
    ) -> (Called, anteroom_domain::round::Round) {
        let (folder, _) = installed();
        let env = anteroom.session("s1").await;
        // 3 s where the test waits past it (only progress keeps the call alive); a call answered at once needs
        // no progress, and on a loaded machine the Python SDK server's first reply has taken over 3 s, before
        // there was any question to make progress on.
        let timeout_ms = if wait.is_zero() { "30000" } else { "3000" };
        let mut harness = Command::new("node")
            .arg(format!("{folder}/harness.mjs"))
            .args([
                "--era",
                era,
                "--tool",
                tool,
                "--timeout-ms",
                timeout_ms,
                "--reset-on-progress",
                "--",
            ])
            .args([
                BINARY,
                "wrap",
                "--server",
                "sdk",
                "--progress-seconds",
                "1",
                "--",
            ])
            .args(server)
            .current_dir(&folder)
            .env("ELICITATION_REQUEST_URL", &env.request_url)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run the harness");
        let round = anteroom.rounds_once("s1", 1).await.remove(0);
        assert_eq!(round.server.as_deref(), Some("sdk"));
        assert_eq!(round.operation_name, tool);
        tokio::time::sleep(wait).await;
        let answered = if round.requests.len() == 1 && answer.get("action_type").is_some() {
            anteroom
                .respond(&anteroom.responder_key, &round.round_id.to_string(), answer)
                .await
        } else {
            anteroom
                .respond_each(&anteroom.responder_key, &round.round_id.to_string(), answer)
                .await
        };
        assert_eq!(answered.status(), 200);
        let mut stdout = BufReader::new(harness.stdout.take().expect("stdout")).lines();
        let line = tokio::time::timeout(StdDuration::from_secs(30), stdout.next_line())
            .await
            .expect("the harness prints its call's outcome within 30 s")
            .expect("read")
            .expect("a line");
        let printed: Value = serde_json::from_str(&line).expect("JSON");
        let _ = tokio::time::timeout(StdDuration::from_secs(10), harness.wait()).await;
        let called = Called {
            progress: printed["progress"].as_u64().unwrap_or(0),
            result: printed,
        };
        (called, round)
    }

    async fn settled(anteroom: &TestServer, round: &anteroom_domain::round::Round) -> RoundStatus {
        anteroom
            .round_once(round.round_id, |round| {
                round.status == RoundStatus::Resolved
            })
            .await
            .status
    }

    async fn typescript_sdk_legacy_form_accepted_after_the_harness_timeout(db: Backend) {
        let Some(anteroom) = TestServer::start(db).await else {
            return;
        };
        let (called, round) = call_through_wrapper(
            &anteroom,
            "legacy",
            "deploy",
            &["node", "legacy_server.mjs"],
            StdDuration::from_secs(4),
            json!({"action_type": "accept", "content": {"env": "prod"}}),
        )
        .await;
        assert_eq!(
            called.reported(),
            json!({"action": "accept", "content": {"env": "prod"}}),
            "{}",
            called.result
        );
        assert!(
            called.progress >= 3,
            "progress kept the 3 s call alive: {}",
            called.progress
        );
        assert_eq!(settled(&anteroom, &round).await, RoundStatus::Resolved);
        anteroom.stop().await;
    }

    async fn typescript_sdk_legacy_url_consent(db: Backend) {
        let Some(anteroom) = TestServer::start(db).await else {
            return;
        };
        let (called, round) = call_through_wrapper(
            &anteroom,
            "legacy",
            "sign_in",
            &["node", "legacy_server.mjs"],
            StdDuration::ZERO,
            json!({"action_type": "accept"}),
        )
        .await;
        assert_eq!(
            called.reported(),
            json!({"action": "accept"}),
            "{}",
            called.result
        );
        assert_eq!(settled(&anteroom, &round).await, RoundStatus::Resolved);
        anteroom.stop().await;
    }

    async fn typescript_sdk_modern_round_answered_per_request(db: Backend) {
        let Some(anteroom) = TestServer::start(db).await else {
            return;
        };
        let (called, round) = call_through_wrapper(
            &anteroom,
            "modern",
            "plan",
            &["node", "mrtr_server.mjs"],
            StdDuration::from_secs(4),
            json!({"env": {"action": "accept", "content": {"env": "prod"}}, "notify": {"action": "decline"}}),
        )
        .await;
        assert_eq!(round.requests.len(), 2);
        assert_eq!(
            round.request_state.as_deref(),
            Some("plan-state-1+/=opaque")
        );
        assert_eq!(
            called.reported(),
            json!({"inputResponses": {"env": {"action": "accept", "content": {"env": "prod"}},
                                      "notify": {"action": "decline"}},
                   "requestState": "plan-state-1+/=opaque"}),
            "{}",
            called.result
        );
        assert!(
            called.progress >= 3,
            "progress kept the 3 s call alive: {}",
            called.progress
        );
        assert_eq!(settled(&anteroom, &round).await, RoundStatus::Resolved);
        anteroom.stop().await;
    }

    async fn typescript_sdk_modern_url_question(db: Backend) {
        let Some(anteroom) = TestServer::start(db).await else {
            return;
        };
        let (called, round) = call_through_wrapper(
            &anteroom,
            "modern",
            "sign_in",
            &["node", "mrtr_server.mjs"],
            StdDuration::ZERO,
            json!({"login": {"action": "accept"}}),
        )
        .await;
        assert_eq!(
            called.reported(),
            json!({"inputResponses": {"login": {"action": "accept"}}, "requestState": "sign-in-state-1"}),
            "{}",
            called.result
        );
        assert_eq!(settled(&anteroom, &round).await, RoundStatus::Resolved);
        anteroom.stop().await;
    }

    async fn python_sdk_legacy_question_dismissed(db: Backend) {
        let Some(anteroom) = TestServer::start(db).await else {
            return;
        };
        let (_, python) = installed();
        let (called, round) = call_through_wrapper(
            &anteroom,
            "legacy",
            "deploy",
            &[&python, "python_server.py"],
            StdDuration::ZERO,
            json!({"action_type": "cancel"}),
        )
        .await;
        assert_eq!(
            called.reported(),
            json!({"action": "cancel"}),
            "{}",
            called.result
        );
        assert_eq!(settled(&anteroom, &round).await, RoundStatus::Resolved);
        anteroom.stop().await;
    }

    async fn python_sdk_modern_round_answered(db: Backend) {
        let Some(anteroom) = TestServer::start(db).await else {
            return;
        };
        let (_, python) = installed();
        let (called, round) = call_through_wrapper(
            &anteroom,
            "modern",
            "plan",
            &[&python, "python_server.py"],
            StdDuration::ZERO,
            json!({"env": {"action": "accept", "content": {"env": "dev"}},
                   "notify": {"action": "accept", "content": {"channel": "#ops"}}}),
        )
        .await;
        let report = called.reported();
        assert_eq!(
            report["inputResponses"],
            json!({"env": {"action": "accept", "content": {"env": "dev"}},
                   "notify": {"action": "accept", "content": {"channel": "#ops"}}}),
            "{}",
            called.result
        );
        assert_eq!(settled(&anteroom, &round).await, RoundStatus::Resolved);
        anteroom.stop().await;
    }

    anteroom_testkit::with_real_harnesses!(
        typescript_sdk_legacy_form_accepted_after_the_harness_timeout,
        typescript_sdk_legacy_url_consent,
        typescript_sdk_modern_round_answered_per_request,
        typescript_sdk_modern_url_question,
        python_sdk_legacy_question_dismissed,
        python_sdk_modern_round_answered,
    );
}
