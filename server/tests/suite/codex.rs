//! Codex's command hook: `anteroom hook codex-pre-tool-use` run as Codex runs it (the event on stdin, the reply
//! on stdout, a block as exit status 2), and the real Codex (`@openai/codex` from npm, installed with the MCP
//! SDKs) run headless as `codex exec` against a loopback stand-in for the Responses API that asks to run one
//! shell command. `anteroom mcp-config hooks`
//! writes the `hooks.json` and records Codex's trust in it, so Codex runs the hook without
//! `--dangerously-bypass-hook-trust`: a person's accept lets the command run without Codex reporting the hook as
//! failed, and a decline blocks it with the person's reason, which is what the model reads next.

use std::{path::Path, process::Stdio, time::Duration as StdDuration};

use anteroom_testkit::{Backend, TestServer};
use serde_json::{Value, json};

use super::{
    codex_app::{ScriptedModel, command_call, scripted_model},
    hooks::{PreToolUseReply, pre_tool_use},
};

/// `codex exec` in `work`, with `home` as its `CODEX_HOME`, asked by the session of `request_url`.
fn codex_exec(codex: &str, home: &Path, work: &Path, request_url: &str) -> tokio::process::Child {
    tokio::process::Command::new(codex)
        .args([
            "exec",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            "Run the command.",
        ])
        .current_dir(work)
        .env("CODEX_HOME", home)
        .env("HOME", work)
        .env("STUB_API_KEY", "loopback")
        .env("ELICITATION_REQUEST_URL", request_url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("{codex}: {error}"))
}

/// Waits for `codex exec` to end and returns its output on stderr (where it logs the hook's runs).
async fn finished(run: tokio::process::Child) -> String {
    let output = tokio::time::timeout(StdDuration::from_secs(90), run.wait_with_output())
        .await
        .expect("Codex ends")
        .expect("Codex ran");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{}\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    stderr
}

/// The command's output as the model read it next.
fn what_the_model_read(model: &ScriptedModel) -> String {
    let read = model.output_of("call_1");
    assert!(!read.is_empty(), "the command's output reached the model");
    read
}

async fn codexs_own_command_runs_after_a_persons_accept_and_not_after_a_decline(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let folder = std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
        "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
    );
    let codex = format!("{folder}/node_modules/.bin/codex");
    let env = server.session("codex-run").await;
    let dir = tempfile::tempdir().expect("temporary directory");
    let home = dir.path().join("codex-home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work folder");
    let (api_base, api) = scripted_model(Vec::new()).await;
    std::fs::create_dir_all(&home).expect("CODEX_HOME");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"stub-model\"\nmodel_provider = \"stub\"\n\n[model_providers.stub]\nname = \"stub\"\n\
             base_url = \"{api_base}\"\nwire_api = \"responses\"\nenv_key = \"STUB_API_KEY\"\n"
        ),
    )
    .expect("config.toml");
    let installed = std::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args([
            "mcp-config",
            "hooks",
            "--timeout",
            "60",
            "--public-url",
            &server.base,
        ])
        .arg("--codex-home")
        .arg(&home)
        .arg(home.join("hooks.json"))
        .output()
        .expect("anteroom mcp-config hooks");
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );

    // Accepted: the command runs, and Codex reads the reply as a pass, not as a failed hook.
    api.play(vec![command_call("call_1", "touch allowed.txt")]);
    let run = codex_exec(&codex, &home, &work, &env.request_url);
    let round = server.rounds_once("codex-run", 1).await.remove(0);
    let first = round.round_id;
    assert_eq!(round.server.as_deref(), Some("codex"));
    assert_eq!(round.operation_name, "Bash");
    let accepted = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept"}),
        )
        .await;
    assert_eq!(accepted.status(), 200);
    let stderr = finished(run).await;
    assert!(
        stderr.contains("hook: PreToolUse Completed"),
        "Codex ran the trusted hook without the bypass flag:\n{stderr}"
    );
    assert!(!stderr.contains("PreToolUse Failed"), "{stderr}");
    assert!(work.join("allowed.txt").exists(), "{stderr}");
    let context = api.seen().iter().any(|request| {
        request
            .to_string()
            .contains("Allowed by api key responder in Anteroom.")
    });
    assert!(context, "the pass tells the model who allowed the call");

    // Declined: blocked, and the model reads the person's reason once, with one period before Codex's own.
    api.play(vec![command_call("call_1", "touch denied.txt")]);
    let run = codex_exec(&codex, &home, &work, &env.request_url);
    let round = server.new_round_once("codex-run", &[first]).await;
    let declined = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "decline", "reason": "not on a Friday."}),
        )
        .await;
    assert_eq!(declined.status(), 200);
    let stderr = finished(run).await;
    assert!(stderr.contains("hook: PreToolUse Blocked"), "{stderr}");
    assert!(!work.join("denied.txt").exists());
    let read = what_the_model_read(&api);
    assert!(
        read.contains(
            "Command blocked by PreToolUse hook: Denied by api key responder in Anteroom: not on a Friday. \
             Command: touch denied.txt"
        ),
        "{read}"
    );
    server.stop().await;
}

/// `anteroom run -- codex exec --json …`: the run gives Codex its hook in a `CODEX_HOME` of the run's own,
/// layered over the user's and trusting the entry by its hash (no bypass flag, the user's files untouched); the
/// command waits in the run's session, the person's accept runs it, and Codex's JSON events reach the session
/// as lines; the run ends `finished`.
async fn codex_under_anteroom_run_asks_in_the_runs_session_and_leaves_codex_home_as_it_was(
    db: Backend,
) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let folder = std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
        "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
    );
    let codex = format!("{folder}/node_modules/.bin/codex");
    let dir = tempfile::tempdir().expect("temporary directory");
    let home = dir.path().join("codex-home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work folder");
    std::fs::create_dir_all(&home).expect("CODEX_HOME");
    let (api_base, api) = scripted_model(Vec::new()).await;
    let config = format!(
        "model = \"stub-model\"\nmodel_provider = \"stub\"\n\n[model_providers.stub]\nname = \"stub\"\n\
         base_url = \"{api_base}\"\nwire_api = \"responses\"\nenv_key = \"STUB_API_KEY\"\n"
    );
    std::fs::write(home.join("config.toml"), &config).expect("config.toml");
    api.play(vec![command_call("call_1", "touch run-allowed.txt")]);
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args([
            "run",
            "--session",
            "codex-under-run",
            "--hook-timeout",
            "60",
            "--",
        ])
        .arg(&codex)
        .args([
            "exec",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            "--json",
            "Run the command.",
        ])
        .current_dir(&work)
        .env("ANTEROOM_URL", &server.base)
        .env("ANTEROOM_API_KEY", &server.admin_key)
        .env("CODEX_HOME", &home)
        .env("HOME", &work)
        .env("STUB_API_KEY", "loopback")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("anteroom run");
    let round = server.rounds_once("codex-under-run", 1).await.remove(0);
    assert_eq!(round.operation_name, "Bash");
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
    assert!(work.join("run-allowed.txt").exists(), "{stderr}");
    // The user's Codex home is as it was: no hooks.json, the same config.toml.
    assert!(!home.join("hooks.json").exists());
    assert_eq!(
        std::fs::read_to_string(home.join("config.toml")).expect("config"),
        config
    );
    let session = server
        .get_json("/api/v1/sessions/codex-under-run", &server.viewer_key)
        .await;
    assert_eq!(session["run"]["state"], "finished", "{session}");
    let kept = server
        .get_json(
            "/api/v1/sessions/codex-under-run/output",
            &server.viewer_key,
        )
        .await;
    let text = kept["output"].as_str().expect("output");
    assert!(text.contains("run-allowed.txt"), "{text}");
    assert!(
        !text.contains("\"thread.started\""),
        "events read as lines, not JSON: {text}"
    );
    server.stop().await;
}

/// `anteroom hook codex-pre-tool-use`, as Codex runs a command hook: the event on stdin, the decision on stdout.
async fn codex_hook(request_url: &str, event: &Value) -> (Option<i32>, String, String) {
    use tokio::io::AsyncWriteExt;
    let mut hook = tokio::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args(["hook", "codex-pre-tool-use", "--timeout", "120"])
        .env("ELICITATION_REQUEST_URL", request_url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("anteroom hook");
    let mut stdin = hook.stdin.take().expect("stdin");
    stdin
        .write_all(event.to_string().as_bytes())
        .await
        .expect("write the event");
    drop(stdin);
    let output = hook.wait_with_output().await.expect("the hook ends");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn codexs_command_hook_prints_the_persons_decision_and_blocks_when_anteroom_is_away(
    db: Backend,
) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("codex").await;
    let event = pre_tool_use("Bash", json!({"command": "cargo publish"}));
    let request_url = env.request_url.clone();
    let hook = tokio::spawn(async move { codex_hook(&request_url, &event).await });
    let round = server.rounds_once("codex", 1).await.remove(0);
    // The hook's 120 s: Anteroom holds the call 90 s.
    assert_eq!(
        round.deadline,
        round.created_at + chrono::Duration::seconds(90)
    );
    server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "cancel"}),
        )
        .await;
    let (code, stdout, _) = hook.await.expect("hook");
    assert_eq!(code, Some(0));
    let reply: PreToolUseReply =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"));
    assert_eq!(reply.hook_specific_output.permission_decision, "deny");
    assert!(
        reply
            .hook_specific_output
            .permission_decision_reason
            .contains("Dismissed by api key responder"),
        "{}",
        reply.hook_specific_output.permission_decision_reason
    );

    // Nothing listens there: no decision can be reached, so the hook blocks the call the way Codex never
    // ignores (exit 2, the reason on stderr, nothing on stdout), and the reason does not end in a period (Codex
    // appends ". Command: …").
    let away = env.request_url.replace(&server.base, "http://127.0.0.1:9");
    let (code, stdout, stderr) =
        codex_hook(&away, &pre_tool_use("Bash", json!({"command": "ls"}))).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("not reachable"), "{stderr}");
    assert!(!stderr.trim_end().ends_with('.'), "{stderr}");
    // No environment block: the same.
    let (code, _, stderr) = codex_hook("", &pre_tool_use("Bash", json!({"command": "ls"}))).await;
    assert_eq!(code, Some(2), "{stderr}");
    server.stop().await;
}

anteroom_testkit::with_real_harnesses!(
    codexs_command_hook_prints_the_persons_decision_and_blocks_when_anteroom_is_away,
    codexs_own_command_runs_after_a_persons_accept_and_not_after_a_decline,
    codex_under_anteroom_run_asks_in_the_runs_session_and_leaves_codex_home_as_it_was,
);
