//! The other harnesses' permission hooks against a real server on SQLite and PostgreSQL, posted with the events
//! each harness sends (Qwen Code 0.24.4, Copilot CLI 1.0.102 and Gemini CLI 0.61.0 as recorded from the real
//! harness; Codex 0.171's `PermissionRequest` as its shipped schema requires; Cursor's as its documentation
//! gives, since Cursor cannot run here): each call waits for a person, and the reply is the harness's own
//! shape, never an allow without one. Then the real Gemini CLI (`-p --yolo`, its `BeforeTool` guard) and the
//! real Qwen Code (`--approval-mode yolo -p`, its HTTP `PreToolUse` hook), offline against loopback stand-ins of
//! their model APIs, with the hooks `anteroom mcp-config hooks` wrote.

use anteroom_testkit::{Backend, TestServer, on_both_backends};
use serde_json::{Value, json};

use super::{
    acp::{Agent, Harness, ready_agent},
    codex_app::{asked, ended},
    hooks::{held_reply, hold, post},
};

/// Answers the session's next question (after `before`) with `answer` and returns the round.
async fn answer_next(
    server: &TestServer,
    session: &str,
    before: &[anteroom_store::domain::ids::RoundId],
    answer: Value,
) -> anteroom_store::domain::round::Round {
    let round = server.new_round_once(session, before).await;
    let answered = server
        .respond(&server.responder_key, round.request_id.as_str(), answer)
        .await;
    assert_eq!(answered.status(), 200);
    round
}

/// A reply with no decision: an empty 200, the harness goes on as it would without the hook.
async fn no_decision(request: reqwest::RequestBuilder) {
    let reply = request.send().await.expect("POST");
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.text().await.expect("body"), "");
}

/// Qwen Code's event, as its `http` hooks post it.
fn qwen(event: &str, mode: &str, command: &str) -> Value {
    json!({"session_id": "ecea51f0-7a1b-4c55-9e0d-5d1f0c2b9a11",
        "transcript_path": "/home/rita/.qwen/projects/shop/chats/ecea51f0.jsonl",
        "cwd": "/home/rita/shop", "hook_event_name": event, "timestamp": "2026-12-06T08:40:00.000Z",
        "permission_mode": mode, "prompt_id": "ecea51f0########0", "tool_name": "run_shell_command",
        "tool_input": {"command": command, "description": "a step", "is_background": false}})
}

async fn qwen_asks_in_yolo_mode_and_on_its_permission_requests(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("qwen").await;
    let pre = "/hooks/qwen/pre-tool-use";
    // Outside yolo, Qwen's own approval (and its PermissionRequest hook) already decided.
    no_decision(post(
        &server,
        &env.token,
        pre,
        &qwen("PreToolUse", "default", "ls"),
    ))
    .await;
    let held = hold(post(
        &server,
        &env.token,
        pre,
        &qwen("PreToolUse", "yolo", "touch allowed.txt"),
    ));
    let round = answer_next(&server, "qwen", &[], json!({"action_type": "accept"})).await;
    assert_eq!(round.server.as_deref(), Some("qwen-code"));
    assert_eq!(round.operation_name, "Bash");
    assert!(
        asked(&round).contains("$ touch allowed.txt"),
        "{}",
        asked(&round)
    );
    assert!(
        asked(&round).starts_with("Qwen Code run ecea51f0"),
        "{}",
        asked(&round)
    );
    assert_eq!(
        held_reply::<Value>(held).await,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
            "permissionDecisionReason": "Allowed by api key responder in Anteroom."}})
    );

    let mut request = qwen("PermissionRequest", "default", "rm -rf build");
    request
        .as_object_mut()
        .map(|event| event.remove("prompt_id"));
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/qwen/permission-request",
        &request,
    ));
    answer_next(
        &server,
        "qwen",
        &[round.round_id],
        json!({"action_type": "decline", "reason": "not on a Friday."}),
    )
    .await;
    assert_eq!(
        held_reply::<Value>(held).await,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
            "behavior": "deny", "message": "Denied by api key responder in Anteroom: not on a Friday."}}})
    );
    server.stop().await;
}

/// Codex's event: `PreToolUse` and `PermissionRequest` carry the turn; a `PermissionRequest` its approval's
/// justification as the command's `description`.
fn codex(event: &str, turn: &str, command: &str) -> Value {
    let mut input = json!({"command": command});
    if event == "PermissionRequest" {
        input["description"] = json!("needs to write outside the sandbox");
    }
    json!({"session_id": "01a2b3c4-0000-7000-8000-000000000001", "turn_id": turn,
        "transcript_path": null, "cwd": "/home/rita/shop", "hook_event_name": event, "model": "gpt-5.4",
        "permission_mode": "default", "tool_name": "Bash", "tool_input": input,
        "tool_use_id": "call_1"})
}

async fn codex_asks_once_for_a_call_its_pre_tool_use_hook_allowed(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("codex-twice").await;
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/codex/pre-tool-use",
        &codex("PreToolUse", "turn-1", "touch made.txt"),
    ));
    let first = answer_next(
        &server,
        "codex-twice",
        &[],
        json!({"action_type": "accept"}),
    )
    .await;
    held_reply::<Value>(held).await;
    let allow = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow"}}});
    let again = post(
        &server,
        &env.token,
        "/hooks/codex/permission-request",
        &codex("PermissionRequest", "turn-1", "touch made.txt"),
    )
    .send()
    .await
    .expect("POST");
    assert_eq!(again.json::<Value>().await.expect("JSON"), allow);
    assert_eq!(
        server.rounds_once("codex-twice", 1).await.len(),
        1,
        "the person was not asked twice"
    );

    // Another turn's approval of the same command, and another command, are asked.
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/codex/permission-request",
        &codex("PermissionRequest", "turn-2", "touch made.txt"),
    ));
    let second = answer_next(
        &server,
        "codex-twice",
        &[first.round_id],
        json!({"action_type": "decline", "reason": "not on a Friday."}),
    )
    .await;
    assert_eq!(second.server.as_deref(), Some("codex"));
    assert_eq!(
        held_reply::<Value>(held).await,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
            "behavior": "deny", "message": "Denied by api key responder in Anteroom: not on a Friday."}}})
    );
    server.stop().await;
}

async fn copilot_pre_tool_use_asks_the_policys_calls_and_passes_the_rest(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("copilot-pre").await;
    let event = |tool: &str, args: Value| {
        json!({"sessionId": "b3b9c0de-0000", "timestamp": 1_796_546_000_486_u64,
            "cwd": "/home/rita/shop", "toolName": tool, "toolArgs": args})
    };
    let route = "/hooks/copilot/pre-tool-use";
    no_decision(post(
        &server,
        &env.token,
        route,
        &event("view", json!({"path": "README.md"})),
    ))
    .await;
    let held = hold(post(
        &server,
        &env.token,
        route,
        &event(
            "bash",
            json!({"command": "touch x.txt", "description": "create x.txt"}),
        ),
    ));
    let round = answer_next(
        &server,
        "copilot-pre",
        &[],
        json!({"action_type": "accept"}),
    )
    .await;
    assert_eq!(round.server.as_deref(), Some("copilot"));
    assert_eq!(round.operation_name, "Bash");
    assert_eq!(
        held_reply::<Value>(held).await,
        json!({"permissionDecision": "allow",
            "permissionDecisionReason": "Allowed by api key responder in Anteroom."})
    );
    server.stop().await;
}

async fn cursor_events_each_read_as_the_call_they_make(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("cursor").await;
    let common = |event: &str| {
        json!({"hook_event_name": event, "conversation_id": "conv-123", "generation_id": "gen-456",
            "workspace_roots": ["/home/rita/shop"], "cursor_version": "2.0.77"})
    };
    let mut shell = common("beforeShellExecution");
    shell["command"] = json!("npm install express");
    shell["cwd"] = json!("/home/rita/shop/web");
    let held = hold(post(&server, &env.token, "/hooks/cursor", &shell));
    let first = answer_next(&server, "cursor", &[], json!({"action_type": "accept"})).await;
    assert_eq!(first.server.as_deref(), Some("cursor"));
    assert_eq!(first.operation_name, "Bash");
    assert!(
        asked(&first).contains("$ npm install express"),
        "{}",
        asked(&first)
    );
    assert!(
        asked(&first).contains("in /home/rita/shop/web"),
        "{}",
        asked(&first)
    );
    assert_eq!(held_reply::<Value>(held).await["permission"], "allow");

    // An MCP tool, its input as the JSON text some versions send: always asked.
    let mut mcp = common("beforeMCPExecution");
    mcp["tool_name"] = json!("database_query");
    mcp["tool_input"] = json!("{\"query\": \"DELETE FROM users\"}");
    mcp["command"] = json!("npx mcp-server");
    let held = hold(post(&server, &env.token, "/hooks/cursor", &mcp));
    let second = answer_next(
        &server,
        "cursor",
        &[first.round_id],
        json!({"action_type": "decline", "reason": "not the prod database."}),
    )
    .await;
    assert_eq!(second.operation_name, "database_query");
    assert!(
        asked(&second).contains("DELETE FROM users"),
        "{}",
        asked(&second)
    );
    let reason = "Denied by api key responder in Anteroom: not the prod database.";
    assert_eq!(
        held_reply::<Value>(held).await,
        json!({"permission": "deny", "user_message": reason, "agent_message": reason})
    );

    let refused = post(
        &server,
        &env.token,
        "/hooks/cursor",
        &common("afterFileEdit"),
    )
    .send()
    .await
    .expect("POST");
    assert_eq!(refused.status(), 422);
    let said: Value = refused.json().await.expect("a JSON error");
    assert!(
        said["message"]
            .as_str()
            .is_some_and(|message| message.contains("not a permission event")),
        "{said}"
    );
    server.stop().await;
}

async fn gemini_before_tool_can_only_refuse(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("gemini-guard").await;
    let event = |tool: &str, input: Value| {
        json!({"session_id": "456b1c2d-0000", "transcript_path": "/home/rita/.gemini/tmp/chats/s.jsonl",
            "cwd": "/home/rita/shop", "hook_event_name": "BeforeTool",
            "timestamp": "2026-12-06T08:28:27.967Z", "tool_name": tool, "tool_input": input})
    };
    let route = "/hooks/gemini/before-tool";
    no_decision(post(
        &server,
        &env.token,
        route,
        &event("read_file", json!({"file_path": "a"})),
    ))
    .await;
    let held = hold(post(
        &server,
        &env.token,
        route,
        &event("run_shell_command", json!({"command": "touch x.txt"})),
    ));
    let first = answer_next(
        &server,
        "gemini-guard",
        &[],
        json!({"action_type": "accept"}),
    )
    .await;
    assert_eq!(first.server.as_deref(), Some("gemini"));
    assert_eq!(
        held_reply::<Value>(held).await,
        json!({}),
        "an allow is no decision"
    );
    let held = hold(post(
        &server,
        &env.token,
        route,
        &event(
            "replace",
            json!({"file_path": "prod.env", "old_string": "a", "new_string": "b"}),
        ),
    ));
    let second = answer_next(
        &server,
        "gemini-guard",
        &[first.round_id],
        json!({"action_type": "decline"}),
    )
    .await;
    assert_eq!(second.operation_name, "Edit");
    assert_eq!(
        held_reply::<Value>(held).await,
        json!({"decision": "deny", "reason": "Denied by api key responder in Anteroom."})
    );
    server.stop().await;
}

/// Each command hook with Anteroom away refuses the call in its harness's own terms, with exit status 0 (Codex's:
/// the reason on stderr and exit 2).
#[tokio::test]
async fn every_command_hook_refuses_when_anteroom_cannot_be_reached() {
    let event = json!({"hook_event_name": "beforeShellExecution", "command": "ls", "tool_name": "bash",
        "toolName": "bash", "tool_input": {}, "cwd": "/tmp"});
    for (hook, denied) in [
        ("cursor", "permission"),
        ("copilot-pre-tool-use", "permissionDecision"),
        ("copilot-permission-request", "behavior"),
        ("gemini-before-tool", "decision"),
        ("codex-permission-request", ""),
    ] {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
            .args(["hook", hook, "--timeout", "10"])
            .env(
                "ELICITATION_REQUEST_URL",
                "http://127.0.0.1:9/api/v1/s/ars_secret/elicitations",
            )
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("anteroom hook");
        if let Some(mut stdin) = child.stdin.take() {
            tokio::io::AsyncWriteExt::write_all(&mut stdin, event.to_string().as_bytes())
                .await
                .expect("event");
        }
        let output = child.wait_with_output().await.expect("the hook ends");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stdout.contains("ars_secret") && !stderr.contains("ars_secret"),
            "{hook}"
        );
        if denied.is_empty() {
            assert_eq!(output.status.code(), Some(2), "{hook}: {stderr}");
            assert!(
                stderr.contains("Anteroom could not ask a person"),
                "{stderr}"
            );
            continue;
        }
        assert_eq!(output.status.code(), Some(0), "{hook}: {stderr}");
        let reply: Value = serde_json::from_str(stdout.trim()).expect("JSON on stdout");
        assert_eq!(reply[denied], "deny", "{hook}: {reply}");
        assert!(
            reply
                .to_string()
                .contains("Anteroom could not ask a person"),
            "{reply}"
        );
    }
}

/// `anteroom mcp-config hooks` on `file`, as a person installs the hooks.
pub(crate) fn install_hooks(server: &TestServer, file: &std::path::Path) {
    let installed = std::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args([
            "mcp-config",
            "hooks",
            "--timeout",
            "60",
            "--public-url",
            &server.base,
        ])
        .arg(file)
        .output()
        .expect("anteroom mcp-config hooks");
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
}

/// The agent run headless with `args` and the session's environment block and token.
fn headless(
    agent: &Agent,
    args: &[&str],
    env: &anteroom_testkit::Environment,
) -> tokio::process::Child {
    tokio::process::Command::new(&agent.command[0])
        .args(args)
        .current_dir(&agent.work)
        .envs(agent.env.iter().map(|(key, value)| (key, value)))
        .env("ELICITATION_REQUEST_URL", &env.request_url)
        .env("ANTEROOM_SESSION_TOKEN", &env.token)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the agent")
}

/// A harness asks before its shell command runs: Allow runs it, a decline's reason reaches the model as
/// `told`, and each call is asked once.
async fn a_real_harness_asks_through_its_hook(
    db: Backend,
    harness: Harness,
    settings: &str,
    args: &[&str],
    told: &str,
) {
    let Some(owned) = TestServer::start(db).await else {
        return;
    };
    let server = &owned;
    let env = server.session("hooked-harness").await;
    let ready = |command: &'static str| async move {
        let agent = ready_agent(harness, &[command]).await;
        let settings = agent.home().join(settings);
        if matches!(harness, Harness::Gemini) {
            // `-p` needs an auth method named (ACP mode takes the base URL as a gateway).
            let mut document: Value =
                serde_json::from_str(&std::fs::read_to_string(&settings).expect("settings"))
                    .expect("JSON");
            document["security"] = json!({"auth": {"selectedType": "gemini-api-key"}});
            std::fs::write(&settings, document.to_string()).expect("settings");
        }
        install_hooks(server, &settings);
        agent
    };
    let allowed = ready("touch made.txt").await;
    let run = headless(&allowed, args, &env);
    let round = server.rounds_once("hooked-harness", 1).await.remove(0);
    assert_eq!(round.operation_name, "Bash");
    assert!(
        asked(&round).contains("$ touch made.txt"),
        "{}",
        asked(&round)
    );
    server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept"}),
        )
        .await;
    let (code, _, stderr) = ended(run).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(allowed.work.join("made.txt").exists(), "{stderr}");
    assert_eq!(
        server.rounds_once("hooked-harness", 1).await.len(),
        1,
        "asked once"
    );

    let declined = ready("touch denied.txt").await;
    let run = headless(&declined, args, &env);
    answer_next(
        server,
        "hooked-harness",
        &[round.round_id],
        json!({"action_type": "decline", "reason": "not on a Friday."}),
    )
    .await;
    let (_, _, stderr) = ended(run).await;
    assert!(!declined.work.join("denied.txt").exists(), "{stderr}");
    assert!(declined.model.was_told(told), "{stderr}");
    owned.stop().await;
}

async fn gemini_clis_before_tool_guard_refuses_what_a_person_declines(db: Backend) {
    a_real_harness_asks_through_its_hook(
        db,
        Harness::Gemini,
        ".gemini/settings.json",
        &["-p", "Do the work.", "-m", "gemini-2.5-pro", "--yolo"],
        "Tool execution blocked: Denied by api key responder in Anteroom: not on a Friday.",
    )
    .await;
}

async fn qwen_codes_http_hook_asks_in_yolo_mode(db: Backend) {
    a_real_harness_asks_through_its_hook(
        db,
        Harness::Qwen,
        ".qwen/settings.json",
        &["--approval-mode", "yolo", "-p", "Do the work."],
        "Denied by api key responder in Anteroom: not on a Friday.",
    )
    .await;
}

/// The tests that run a real harness, which needs the SDK folder `cargo xtask test` installs.
mod with_the_real_harness {
    use super::*;

    anteroom_testkit::with_real_harnesses!(
        gemini_clis_before_tool_guard_refuses_what_a_person_declines,
        qwen_codes_http_hook_asks_in_yolo_mode,
    );
}

on_both_backends!(
    qwen_asks_in_yolo_mode_and_on_its_permission_requests,
    codex_asks_once_for_a_call_its_pre_tool_use_hook_allowed,
    copilot_pre_tool_use_asks_the_policys_calls_and_passes_the_rest,
    cursor_events_each_read_as_the_call_they_make,
    gemini_before_tool_can_only_refuse,
);
