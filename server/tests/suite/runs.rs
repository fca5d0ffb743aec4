//! `anteroom run` (docs/runs.md), the real binary against a real server: the agent's exit status is `run`'s,
//! the session records how it ended and what it printed (cleaned and masked), a Stop from the API reaches the
//! agent, a second run of a live session and an unreachable Anteroom start nothing, and a question still
//! waiting when the agent ends ends with it and says why.

use std::{process::Stdio, time::Duration as StdDuration};

use anteroom_testkit::{Backend, TestServer};
use serde_json::{Value, json};

fn run_command(server: &TestServer, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_anteroom"));
    command
        .arg("run")
        .args(args)
        .env("ANTEROOM_URL", &server.base)
        .env("ANTEROOM_API_KEY", &server.admin_key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// The session with its run, once `ready` holds of it (up to 30 s).
async fn session_once(server: &TestServer, id: &str, ready: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..300 {
        let session = server
            .get_json(&format!("/api/v1/sessions/{id}"), &server.viewer_key)
            .await;
        if ready(&session) {
            return session;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    panic!("session {id} never got there")
}

async fn the_agents_exit_is_runs_and_the_session_keeps_its_end_and_output(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let script = r"echo hello; printf '\033[1mbold\033[0m ark_0123456789abcdef\n' >&2; exit 3";
    let output = run_command(&server, &["--session", "exit-3", "--", "sh", "-c", script])
        .output()
        .await
        .expect("anteroom run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    // The agent's own output still reaches the terminal, as it printed it.
    assert_eq!(String::from_utf8_lossy(&output.stdout), "hello\n");
    assert!(stderr.contains("session exit-3"), "{stderr}");

    let session = server
        .get_json("/api/v1/sessions/exit-3", &server.viewer_key)
        .await;
    assert_eq!(session["status"], "failed", "{session}");
    let run = &session["run"];
    assert_eq!(run["state"], "failed", "{session}");
    assert_eq!(run["exit_code"], 3);
    assert!(run["signal"].is_null() && run["ended_at"].is_string());
    assert!(
        run["command"]
            .as_str()
            .is_some_and(|command| command.starts_with("sh -c 'echo hello;"))
    );
    let kept = server
        .get_json("/api/v1/sessions/exit-3/output", &server.viewer_key)
        .await;
    let text = kept["output"].as_str().expect("output");
    assert!(text.contains("hello\n"), "{text}");
    // Terminal sequences are gone and the credential is cut to its prefix.
    assert!(text.contains("bold ark_…\n"), "{text:?}");
    assert!(
        !text.contains('\u{1b}') && !text.contains("0123456789abcdef"),
        "{text:?}"
    );
    server.stop().await;
}

async fn a_stop_from_the_api_ends_the_agent_and_its_waiting_question(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let url_file = dir.path().join("request-url");
    let script = format!(
        "echo \"$ELICITATION_REQUEST_URL\" > '{}'; echo waiting; sleep 600; echo never",
        url_file.display()
    );
    let agent = run_command(
        &server,
        &["--session", "stop-me", "--", "sh", "-c", &script],
    )
    .spawn()
    .expect("anteroom run");
    session_once(&server, "stop-me", |session| {
        session["run"]["state"] == "running"
    })
    .await;
    for _ in 0..100 {
        if url_file.exists() {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    let request_url = std::fs::read_to_string(&url_file).expect("the agent's environment block");

    // The agent's question, asked through the block `run` gave it.
    let asked = server
        .http
        .post(request_url.trim())
        .json(&json!({"mode": "form", "message": "Apply the plan?",
            "requestedSchema": {"type": "object", "properties": {}},
            "_meta": {"com.pulsemcp/request-id": "req-stop", "com.pulsemcp/tool-name": "apply"}}))
        .send()
        .await
        .expect("a question");
    assert!(asked.status().is_success(), "{}", asked.status());
    let waiting = session_once(&server, "stop-me", |session| {
        session["run"]["state"] == "needs_input"
    })
    .await;
    assert_eq!(waiting["status"], "needs_input");

    // A second run of the live session is refused before anything starts.
    let marker = dir.path().join("second-ran");
    let second = run_command(
        &server,
        &[
            "--session",
            "stop-me",
            "--",
            "touch",
            marker.to_str().expect("path"),
        ],
    )
    .output()
    .await
    .expect("a second anteroom run");
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("already has a live run"));
    assert!(!marker.exists(), "the second agent never starts");

    // A viewer may not stop it; a responder may.
    let refused = server
        .http
        .post(server.url("/api/v1/sessions/stop-me/stop"))
        .bearer_auth(&server.viewer_key)
        .send()
        .await
        .expect("stop as a viewer");
    assert_eq!(refused.status(), 403);
    // Nor a responder the session's responders leave out: stopping is answering's right in that session.
    let settings = |responders: Value| {
        server
            .http
            .put(server.url("/api/v1/sessions/stop-me/settings"))
            .bearer_auth(&server.admin_key)
            .json(&json!({"responders": responders}))
            .send()
    };
    assert!(
        settings(json!(["user:rita"]))
            .await
            .expect("settings")
            .status()
            .is_success()
    );
    let left_out = server
        .http
        .post(server.url("/api/v1/sessions/stop-me/stop"))
        .bearer_auth(&server.responder_key)
        .send()
        .await
        .expect("stop as a responder left out");
    assert_eq!(left_out.status(), 403);
    let said: Value = left_out.json().await.expect("a JSON error");
    assert!(
        said["message"]
            .as_str()
            .is_some_and(|message| message.contains("not one of this session's responders")),
        "{said}"
    );
    assert!(
        settings(json!([]))
            .await
            .expect("settings")
            .status()
            .is_success()
    );
    let stopped = server
        .http
        .post(server.url("/api/v1/sessions/stop-me/stop"))
        .bearer_auth(&server.responder_key)
        .send()
        .await
        .expect("stop");
    assert_eq!(stopped.status(), 200);
    let output = tokio::time::timeout(StdDuration::from_secs(15), agent.wait_with_output())
        .await
        .expect("the agent is gone within 15 s")
        .expect("anteroom run");
    // SIGINT reached the agent's whole process group, `sleep` under the shell too (a shell defers SIGINT sent
    // to it alone while its child runs): the shell ended at once, by the signal, without going on.
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("never"));

    // The long-poll for the run's end answers at once now.
    let session = server
        .get_json("/api/v1/sessions/stop-me?wait=30", &server.viewer_key)
        .await;
    assert_eq!(session["run"]["state"], "stopped", "{session}");
    assert_eq!(session["run"]["stopped_by"], "api key responder");
    assert_eq!(session["status"], "cancelled");
    let rounds = server
        .get_json("/api/v1/sessions/stop-me/rounds", &server.viewer_key)
        .await;
    let round = &rounds["rounds"][0];
    assert_eq!(round["status"], "failed");
    assert_eq!(round["failure"]["code"], "agent_ended");
    assert_eq!(
        round["failure"]["message"],
        "api key responder stopped the agent before anyone answered."
    );
    // An answer now is refused with the reason.
    let late = server
        .respond(
            &server.responder_key,
            round["request_id"].as_str().expect("request id"),
            json!({"action_type": "accept", "content": {}}),
        )
        .await;
    assert_eq!(late.status(), 409);
    let said: Value = late.json().await.expect("JSON");
    assert!(
        said["message"]
            .as_str()
            .is_some_and(|message| message.contains("stopped the agent")),
        "{said}"
    );
    server.stop().await;
}

async fn nothing_starts_when_anteroom_cannot_take_the_run(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let marker = dir.path().join("ran");
    let touch = ["--", "touch", marker.to_str().expect("path")];
    // Nothing listens on port 9 here.
    let unreachable = run_command(&server, &touch)
        .env("ANTEROOM_URL", "http://127.0.0.1:9")
        .output()
        .await
        .expect("anteroom run");
    assert_eq!(unreachable.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unreachable.stderr).contains("the agent was not started"));
    // A key that may not register sessions is refused the same way.
    let viewer = run_command(&server, &touch)
        .env("ANTEROOM_API_KEY", &server.viewer_key)
        .output()
        .await
        .expect("anteroom run");
    assert_eq!(viewer.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&viewer.stderr).contains("403"),
        "{}",
        String::from_utf8_lossy(&viewer.stderr)
    );
    assert!(!marker.exists());
    // --offline-ok starts it anyway, with the reason its hooks refuse with, and its exit status is run's.
    let offline = run_command(
        &server,
        &[
            "--offline-ok",
            "--",
            "sh",
            "-c",
            "echo \"$ANTEROOM_OFFLINE_REASON\"; exit 4",
        ],
    )
    .env("ANTEROOM_URL", "http://127.0.0.1:9")
    .output()
    .await
    .expect("anteroom run --offline-ok");
    assert_eq!(offline.status.code(), Some(4));
    assert!(
        String::from_utf8_lossy(&offline.stdout)
            .contains("could not be reached when this run started"),
        "{}",
        String::from_utf8_lossy(&offline.stdout)
    );
    server.stop().await;
}

async fn a_runs_routes_refuse_what_is_not_theirs(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("routes").await;
    let base = format!("/api/v1/s/{}/run", env.token);
    let post = |path: String, body: Value| server.http.post(server.url(&path)).json(&body).send();
    let started = post(
        base.clone(),
        json!({"command": "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx claude ars_secret-token",
            "host": "h\u{1b}[2J"}),
    )
    .await
    .expect("start");
    assert_eq!(started.status(), 201);
    let run: Value = started.json().await.expect("JSON");
    assert_eq!(run["command"], "OPENAI_API_KEY=sk-proj-… claude ars_…");
    assert_eq!(run["host"], "h");
    let run_id = run["run_id"].as_str().expect("run id").to_owned();
    // Another service's key the agent prints is kept as what it was, not as the key.
    let printed = post(
        format!("{base}/{run_id}/report"),
        json!({"output": "using ghp_0123456789abcdefghijABCDEFGHIJ0123\n"}),
    )
    .await
    .expect("report");
    assert!(printed.status().is_success());
    let output = server
        .get_json("/api/v1/sessions/routes/output", &server.viewer_key)
        .await;
    assert!(
        output.to_string().contains("using ghp_…")
            && !output.to_string().contains("0123456789abcdefghij"),
        "{output}"
    );
    // A second start while it reports is a conflict.
    let again = post(base.clone(), json!({"command": "x", "host": "h"}))
        .await
        .expect("again");
    assert_eq!(again.status(), 409);
    // Reports for a run that is not this one, ends with neither code nor signal, output past the bound.
    let stranger = post(format!("{base}/other/report"), json!({"output": "x"}))
        .await
        .expect("report");
    assert_eq!(stranger.status(), 409);
    let neither = post(
        format!("{base}/{run_id}/end"),
        json!({"exit_code": null, "signal": null}),
    )
    .await
    .expect("end");
    assert_eq!(neither.status(), 422);
    let huge = post(
        format!("{base}/{run_id}/report"),
        json!({"output": "y".repeat(300 * 1024)}),
    )
    .await
    .expect("huge");
    assert!(
        matches!(huge.status().as_u16(), 413 | 422),
        "{}",
        huge.status()
    );
    // A token that is not the session's reaches nothing.
    let forged = post(
        "/api/v1/s/ars_forged/run".to_owned(),
        json!({"command": "x", "host": "h"}),
    )
    .await
    .expect("forged");
    assert_eq!(forged.status(), 401);
    // The control long-poll hears a stop at once.
    let control = server
        .http
        .get(server.url(&format!("{base}/{run_id}/control?wait=30")))
        .send();
    let stop = async {
        tokio::time::sleep(StdDuration::from_millis(300)).await;
        server
            .http
            .post(server.url("/api/v1/sessions/routes/stop"))
            .bearer_auth(&server.admin_key)
            .send()
            .await
            .expect("stop")
    };
    let started_at = std::time::Instant::now();
    let (control, stop) = tokio::join!(control, stop);
    assert_eq!(stop.status(), 200);
    let control: Value = control.expect("control").json().await.expect("JSON");
    assert_eq!(control["stop_requested_by"], "api key admin");
    assert!(
        started_at.elapsed() < StdDuration::from_secs(10),
        "woken by the stop, not the clock"
    );
    server.stop().await;
}

/// An agent that prints 20 MB as fast as it can: `run` passes every byte to its terminal and keeps the
/// session's copy to its last 64 KiB of whole lines, and nothing waits on the flood.
async fn a_flood_of_output_is_passed_through_and_kept_to_its_last_lines(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let script = "yes 'a line of output' | head -c 19999990; echo last line";
    let output = run_command(&server, &["--session", "flood", "--", "sh", "-c", script])
        .output()
        .await
        .expect("anteroom run");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.stdout.len(), 19_999_990 + "last line\n".len());
    let kept = server
        .get_json("/api/v1/sessions/flood/output", &server.viewer_key)
        .await;
    let text = kept["output"].as_str().expect("output");
    assert!(text.len() <= 64 * 1024, "{} bytes kept", text.len());
    assert!(
        text.ends_with("a line of output\nlast line\n"),
        "{}",
        &text[text.len().saturating_sub(80)..]
    );
    assert!(text.lines().all(|line| line == "a line of output"
        || line == "last line"
        || line.starts_with("[anteroom run: ")));
    server.stop().await;
}

/// Anteroom goes away mid-run: the agent goes on to its own end, `run` says it could not report, and the
/// exit status is still the agent's.
async fn the_agent_goes_on_when_anteroom_goes_away(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let agent = run_command(
        &server,
        &[
            "--session",
            "away",
            "--",
            "sh",
            "-c",
            "echo before; sleep 3; echo after; exit 5",
        ],
    )
    .spawn()
    .expect("anteroom run");
    session_once(&server, "away", |session| {
        session["run"]["state"] == "running"
    })
    .await;
    server.stop().await;
    let output = tokio::time::timeout(StdDuration::from_secs(60), agent.wait_with_output())
        .await
        .expect("run ends")
        .expect("anteroom run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "before\nafter\n");
    assert!(
        stderr.contains("could not tell Anteroom how the agent ended"),
        "{stderr}"
    );
    // What run says of the failures names no URL with the session's token in it.
    assert!(!stderr.contains("ars_"), "{stderr}");
}

anteroom_testkit::on_both_backends!(
    the_agent_goes_on_when_anteroom_goes_away,
    a_flood_of_output_is_passed_through_and_kept_to_its_last_lines,
    the_agents_exit_is_runs_and_the_session_keeps_its_end_and_output,
    a_stop_from_the_api_ends_the_agent_and_its_waiting_question,
    nothing_starts_when_anteroom_cannot_take_the_run,
    a_runs_routes_refuse_what_is_not_theirs,
);
