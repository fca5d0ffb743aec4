//! The real Claude Code (`@anthropic-ai/claude-code` from npm, installed with the MCP SDKs) run headless as
//! `claude -p --settings FILE` against a loopback stand-in for the Messages API that asks to run one Bash
//! command: the settings `anteroom mcp-config hooks` wrote make Claude Code's own `PreToolUse` hook ask the
//! session: the person's deny, with its reason, is the tool result the model reads next, and the person's allow
//! is taken as it is (Claude Code's debug log says it parsed the reply and approved the call) and the command
//! runs.

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration as StdDuration,
};

use anteroom_testkit::{Backend, TestServer};
use axum::{Json, Router, extract::State, http::header, response::IntoResponse, routing::post};
use serde_json::{Value, json};

/// The Messages API as far as one tool call needs: a request whose tools include Bash and that carries no
/// tool result yet gets a streamed `tool_use` of `terraform apply`; any other gets a streamed text that repeats
/// the tool result it saw. Every request body is kept.
/// The stand-in's state: the requests it has seen, and the command it asks to run.
type StandIn = (Arc<Mutex<Vec<Value>>>, Arc<Mutex<String>>);

async fn messages(
    State((seen, command)): State<StandIn>,
    Json(request): Json<Value>,
) -> impl IntoResponse {
    let command = command
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let tool_result = request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|last| last["content"].as_array())
        .and_then(|blocks| blocks.iter().find(|block| block["type"] == "tool_result"))
        .cloned();
    // A command named `mcp__SERVER__TOOL` is a call of that MCP tool (with no arguments), when it is offered.
    let tool = if command.starts_with("mcp__") {
        command.as_str()
    } else {
        "Bash"
    };
    let asks_bash = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|offered| offered["name"] == tool));
    let model = request["model"].clone();
    seen.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(request);
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_stub", "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )];
    let (block, delta, stop) = match (&tool_result, asks_bash) {
        (None, true) => (
            json!({"type": "tool_use", "id": "toolu_stub", "name": tool, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": if tool == "Bash" {
                json!({"command": command, "description": "apply the plan"}).to_string()
            } else {
                "{}".to_owned()
            }}),
            "tool_use",
        ),
        _ => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": format!("tool result: {}", tool_result
                .map(|result| result["content"].to_string())
                .unwrap_or_default())}),
            "end_turn",
        ),
    };
    events.push((
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    ));
    events.push((
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
    ));
    events.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 5}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    let body: String = events
        .into_iter()
        .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
        .collect();
    ([(header::CONTENT_TYPE, "text/event-stream")], body)
}

/// The stand-in on a loopback port: its base URL, the requests it has seen, and the command it asks to run.
async fn messages_api() -> (String, Arc<Mutex<Vec<Value>>>, Arc<Mutex<String>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let command = Arc::new(Mutex::new("terraform apply -auto-approve".to_owned()));
    let app = Router::new()
        .route("/v1/messages", post(messages))
        .with_state((Arc::clone(&seen), Arc::clone(&command)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, seen, command)
}

async fn claude_codes_own_tool_call_waits_for_a_person_whose_deny_reaches_the_model_and_whose_allow_runs_it(
    db: Backend,
) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let folder = std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
        "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
    );
    let claude = format!("{folder}/node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    let env = server.session("claude-run").await;
    let dir = tempfile::tempdir().expect("temporary directory");
    let settings = dir.path().join(".claude/settings.json");
    let installed = std::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args([
            "mcp-config",
            "hooks",
            "--timeout",
            "120",
            "--public-url",
            &server.base,
        ])
        .arg(&settings)
        .output()
        .expect("anteroom mcp-config hooks");
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let (api, seen, command) = messages_api().await;

    // `--debug` logs what Claude Code made of each hook's reply.
    let start = || {
        tokio::process::Command::new(&claude)
            .args([
                "-p",
                "Apply the plan.",
                "--output-format",
                "json",
                "--debug",
                "--settings",
            ])
            .arg(&settings)
            .current_dir(dir.path())
            .env("HOME", dir.path().join("home"))
            .env("ANTHROPIC_BASE_URL", &api)
            .env("ANTHROPIC_API_KEY", "sk-ant-loopback")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("ANTEROOM_SESSION_TOKEN", &env.token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| panic!("{claude}: {error}"))
    };
    let run = start();

    let round = server.rounds_once("claude-run", 1).await.remove(0);
    assert_eq!(round.server.as_deref(), Some("claude-code"));
    assert_eq!(round.operation_name, "Bash");
    let message = round
        .requests
        .values()
        .next()
        .expect("request")
        .message()
        .to_owned();
    assert!(
        message.contains("$ terraform apply -auto-approve"),
        "{message}"
    );
    let declined = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "decline", "reason": "touches the prod database"}),
        )
        .await;
    assert_eq!(declined.status(), 200);

    let output = tokio::time::timeout(StdDuration::from_secs(90), run.wait_with_output())
        .await
        .expect("Claude Code ends")
        .expect("Claude Code ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"));
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash");
    // What the model read next: the tool's result is the person's deny, with the reason.
    let requests = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let tool_result = requests
        .iter()
        .filter_map(|request| request["messages"].as_array())
        .flatten()
        .filter_map(|message| message["content"].as_array())
        .flatten()
        .find(|block| block["type"] == "tool_result")
        .cloned()
        .expect("a tool result reached the model");
    assert!(
        tool_result["content"]
            .to_string()
            .contains("Denied by api key responder in Anteroom: touches the prod database"),
        "{tool_result}"
    );

    // Accepted: Claude Code takes the allow as it is (no hook error in its debug output) and runs the command.
    *command
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = "touch allowed.txt".to_owned();
    let run = start();
    let round = server.new_round_once("claude-run", &[round.round_id]).await;
    let accepted = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept"}),
        )
        .await;
    assert_eq!(accepted.status(), 200);
    let output = tokio::time::timeout(StdDuration::from_secs(90), run.wait_with_output())
        .await
        .expect("Claude Code ends")
        .expect("Claude Code ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let result: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"));
    assert_eq!(result["permission_denials"], json!([]), "{stdout}");
    assert!(
        dir.path().join("allowed.txt").exists(),
        "{stdout}\n{stderr}"
    );
    // Claude Code's own account of the reply (`--debug` writes it under ~/.claude/debug/, `latest` the newest).
    let debug = std::fs::read_to_string(dir.path().join("home/.claude/debug/latest"))
        .expect("Claude Code's debug log");
    assert!(
        debug.contains("Successfully parsed and validated hook JSON output")
            && debug.contains("Hook approved tool use for Bash"),
        "{debug}"
    );
    server.stop().await;
}

/// The first tool result the model was sent, among the stand-in's requests.
fn tool_result_sent(seen: &Mutex<Vec<Value>>) -> Value {
    seen.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter_map(|request| request["messages"].as_array())
        .flatten()
        .filter_map(|message| message["content"].as_array())
        .flatten()
        .find(|block| block["type"] == "tool_result")
        .cloned()
        .expect("a tool result reached the model")
}

/// `anteroom run RUN_ARGS -- claude CLAUDE_ARGS` in `dir`, against the stand-in at `api`, as the tests run it.
fn claude_under_run(
    server: &TestServer,
    dir: &std::path::Path,
    api: &str,
    run_args: &[&str],
    claude_args: &[&str],
) -> tokio::process::Command {
    let folder = std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
        "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
    );
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_anteroom"));
    command
        .arg("run")
        .args(run_args)
        .arg("--")
        .arg(format!(
            "{folder}/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
        ))
        .args(claude_args)
        .current_dir(dir)
        .env("ANTEROOM_URL", &server.base)
        .env("ANTEROOM_API_KEY", &server.admin_key)
        .env("HOME", dir.join("home"))
        .env("ANTHROPIC_BASE_URL", api)
        .env("ANTHROPIC_API_KEY", "sk-ant-loopback")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// `anteroom run -- claude -p …`: no file written by anyone, the run's own settings give Claude Code its hooks,
/// the tool call waits in the run's session (shown `needs_input`), the person's allow runs it, and the run's
/// stream-json output reaches the session as readable lines; the agent's exit ends the run `finished`.
async fn claude_code_under_anteroom_run_asks_in_the_runs_session_and_its_output_reaches_it(
    db: Backend,
) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let (api, _seen, command) = messages_api().await;
    *command
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = "touch ran-under-run.txt".to_owned();
    let run = claude_under_run(
        &server,
        dir.path(),
        &api,
        &["--session", "claude-under-run", "--hook-timeout", "120"],
        &[
            "-p",
            "Apply the plan.",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    )
    .spawn()
    .expect("anteroom run");

    let round = server.rounds_once("claude-under-run", 1).await.remove(0);
    assert_eq!(round.operation_name, "Bash");
    let session = server
        .get_json("/api/v1/sessions/claude-under-run", &server.viewer_key)
        .await;
    assert_eq!(session["run"]["state"], "needs_input", "{session}");
    let accepted = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept"}),
        )
        .await;
    assert_eq!(accepted.status(), 200);
    let output = tokio::time::timeout(StdDuration::from_secs(90), run.wait_with_output())
        .await
        .expect("the run ends")
        .expect("anteroom run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(dir.path().join("ran-under-run.txt").exists(), "{stderr}");
    // No settings file of the user's was written: only Claude Code's own home folder exists.
    assert!(!dir.path().join(".claude").exists());

    let session = server
        .get_json("/api/v1/sessions/claude-under-run", &server.viewer_key)
        .await;
    assert_eq!(session["run"]["state"], "finished", "{session}");
    assert_eq!(session["run"]["exit_code"], 0);
    let kept = server
        .get_json(
            "/api/v1/sessions/claude-under-run/output",
            &server.viewer_key,
        )
        .await;
    let text = kept["output"].as_str().expect("output");
    assert!(text.contains("▸ Bash: touch ran-under-run.txt"), "{text}");
    assert!(text.contains("▸ done: "), "{text}");
    assert!(
        !text.contains("\"type\":\"assistant\""),
        "events read as sentences, not JSON: {text}"
    );
    server.stop().await;
}

/// `anteroom run -- claude -p …` in a project whose approved `.mcp.json` starts a stdio server that asks its
/// own question (`elicitation/create`, the real MCP SDK's server): the run gives Claude Code that server under `anteroom wrap` through a
/// config of its own (`--mcp-config` with `--strict-mcp-config`); calling its tool is first a permission
/// question (the hook), then the server's own question, both in the run's session; the person's answer reaches
/// the tool and its result reaches the model. The project's files are as they were.
async fn claude_codes_stdio_server_asks_through_the_runs_wrap(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let folder = std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
        "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
    );
    // The real MCP SDK's server whose `deploy` tool asks "Which environment?" with `elicitInput`.
    let fixture = format!("{folder}/legacy_server.mjs");
    let dir = tempfile::tempdir().expect("temporary directory");
    let mcp_json =
        json!({"mcpServers": {"deployer": {"command": "node", "args": [fixture]}}}).to_string();
    std::fs::write(dir.path().join(".mcp.json"), &mcp_json).expect(".mcp.json");
    std::fs::create_dir_all(dir.path().join(".claude")).expect(".claude");
    std::fs::write(
        dir.path().join(".claude/settings.local.json"),
        json!({"enabledMcpjsonServers": ["deployer"]}).to_string(),
    )
    .expect("settings");
    let (api, seen, command) = messages_api().await;
    *command
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = "mcp__deployer__deploy".to_owned();
    let run = claude_under_run(
        &server,
        dir.path(),
        &api,
        &["--session", "claude-mcp-run", "--hook-timeout", "120"],
        &["-p", "Deploy it."],
    )
    // MCP tools offered to the model as themselves, not behind Claude Code's tool search (the stand-in calls
    // the tool by name), and connected before the first request, so the tool is there to call.
    .env("ENABLE_TOOL_SEARCH", "false")
    .env("MCP_CONNECTION_NONBLOCKING", "false")
    .spawn()
    .expect("anteroom run");
    // First the permission to call the tool (Claude Code's hook)…
    let permission = server.rounds_once("claude-mcp-run", 1).await.remove(0);
    // An MCP tool's call is asked as its server's (docs/hooks.md).
    assert_eq!(
        (
            permission.server.as_deref(),
            permission.operation_name.as_str()
        ),
        (Some("deployer"), "deploy")
    );
    let allowed = server
        .respond(
            &server.responder_key,
            permission.request_id.as_str(),
            json!({"action_type": "accept"}),
        )
        .await;
    assert_eq!(allowed.status(), 200);
    // …then the server's own question, through the run's wrap, named by its server.
    let asked = server
        .new_round_once("claude-mcp-run", &[permission.round_id])
        .await;
    assert_eq!(asked.server.as_deref(), Some("deployer"));
    let message = asked
        .requests
        .values()
        .next()
        .expect("request")
        .message()
        .to_owned();
    assert_eq!(message, "Which environment?");
    let answered = server
        .respond(
            &server.responder_key,
            asked.request_id.as_str(),
            json!({"action_type": "accept", "content": {"env": "production"}}),
        )
        .await;
    assert_eq!(answered.status(), 200);
    let output = tokio::time::timeout(StdDuration::from_secs(90), run.wait_with_output())
        .await
        .expect("the run ends")
        .expect("anteroom run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let tool_result = tool_result_sent(&seen);
    assert!(
        tool_result.to_string().contains("production"),
        "{tool_result}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".mcp.json")).expect(".mcp.json"),
        mcp_json
    );
    server.stop().await;
}

/// `anteroom run --offline-ok -- claude -p …` with Anteroom unreachable: Claude Code runs, and the call that
/// would have asked a person is refused by the run's offline hook, whose reason is what the model reads.
async fn claude_code_under_an_offline_run_is_refused_with_the_reason(db: Backend) {
    // The server only provides the test's database; Anteroom is unreachable at the run's URL.
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let (api, seen, command) = messages_api().await;
    *command
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = "touch offline.txt".to_owned();
    let output = claude_under_run(
        &server,
        dir.path(),
        &api,
        &["--offline-ok"],
        &["-p", "Apply the plan."],
    )
    .env("ANTEROOM_URL", "http://127.0.0.1:9")
    .output()
    .await
    .expect("anteroom run --offline-ok");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("--offline-ok: the agent starts"),
        "{stderr}"
    );
    assert!(!dir.path().join("offline.txt").exists());
    let tool_result = tool_result_sent(&seen);
    assert!(
        tool_result
            .to_string()
            .contains("could not be reached when this run started"),
        "{tool_result}"
    );
    server.stop().await;
}

/// Anteroom goes away while a Claude Code agent runs under `anteroom run` with Bash allowed by its own rules: the
/// run's hook is marked to block on failure, so the call whose hook cannot reach Anteroom does not run (Claude
/// Code would otherwise let a failed HTTP hook through to its own rules, which allow it).
async fn claude_codes_call_is_blocked_when_anteroom_goes_away_mid_run(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let command = Arc::new(Mutex::new("touch unreached.txt".to_owned()));
    // The stand-in answers only once the test has taken Anteroom away.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = Arc::clone(&gate);
    let app = Router::new()
        .route(
            "/v1/messages",
            post(move |state: State<StandIn>, request: Json<Value>| {
                let held = Arc::clone(&held);
                async move {
                    if let Ok(permit) = held.acquire().await {
                        permit.forget();
                    }
                    messages(state, request).await.into_response()
                }
            }),
        )
        .with_state((Arc::clone(&seen), Arc::clone(&command)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let api = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let run = claude_under_run(
        &server,
        dir.path(),
        &api,
        &["--session", "gone-mid-run", "--hook-timeout", "30"],
        &["-p", "Apply the plan.", "--allowedTools", "Bash"],
    )
    .spawn()
    .expect("anteroom run");
    for _ in 0..600 {
        let session = server
            .get_json("/api/v1/sessions/gone-mid-run", &server.viewer_key)
            .await;
        if session["run"]["state"] == "running" {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    server.stop().await;
    gate.add_permits(1_000);
    let output = tokio::time::timeout(StdDuration::from_secs(120), run.wait_with_output())
        .await
        .expect("the run ends")
        .expect("anteroom run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        !dir.path().join("unreached.txt").exists(),
        "the call ran with Anteroom gone:\n{stdout}\n{stderr}"
    );
    let tool_result = tool_result_sent(&seen);
    assert_eq!(tool_result["is_error"], true, "{tool_result}");
}

anteroom_testkit::with_real_harnesses!(
    claude_codes_call_is_blocked_when_anteroom_goes_away_mid_run,
    claude_code_under_an_offline_run_is_refused_with_the_reason,
    claude_codes_stdio_server_asks_through_the_runs_wrap,
    claude_codes_own_tool_call_waits_for_a_person_whose_deny_reaches_the_model_and_whose_allow_runs_it,
    claude_code_under_anteroom_run_asks_in_the_runs_session_and_its_output_reaches_it,
);
