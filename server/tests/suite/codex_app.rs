//! `anteroom run --codex`: the real Codex (`@openai/codex` from npm, installed with the MCP SDKs) run through its
//! app server against a loopback stand-in for the Responses API that plays a script — a shell command, a patch,
//! an MCP tool that elicits — and a person answering in the run's session: the command runs only after an
//! accept, a decline's reason reaches the model, the patch is shown as its diff, the MCP server gets the
//! person's form answer through Codex's own elicitation, a Stop interrupts the turn. And the schemas the
//! installed Codex generates name no server request the bridge does not know.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration as StdDuration,
};

use anteroom_testkit::{Backend, TestServer};
use axum::{Json, Router, extract::State, http::header, response::IntoResponse, routing::post};
use serde_json::{Value, json};

/// A loopback stand-in for the Responses API playing a script: the model's next call for each tool output so
/// far, then a closing message ("All done."); and every request it has seen since the script was given.
#[derive(Clone, Default)]
pub(crate) struct ScriptedModel {
    script: Arc<Mutex<Vec<Value>>>,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl ScriptedModel {
    /// Plays `script` from the next request on, forgetting what was seen.
    pub(crate) fn play(&self, script: Vec<Value>) {
        *self
            .script
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = script;
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    pub(crate) fn seen(&self) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The input items of the last request: everything the model was sent.
    pub(crate) fn inputs(&self) -> Vec<Value> {
        self.seen()
            .last()
            .and_then(|request| request["input"].as_array().cloned())
            .unwrap_or_default()
    }

    /// The output the model read for tool call `call`.
    pub(crate) fn output_of(&self, call: &str) -> String {
        self.inputs()
            .iter()
            .find(|item| {
                item["call_id"] == call
                    && item["type"]
                        .as_str()
                        .is_some_and(|kind| kind.ends_with("_output"))
            })
            .map(|item| item["output"].to_string())
            .unwrap_or_default()
    }
}

/// `POST /v1/responses`: the script's next item, by how many tool outputs the request carries.
async fn respond(
    State(model): State<ScriptedModel>,
    Json(request): Json<Value>,
) -> impl IntoResponse {
    let outputs = request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| {
            matches!(
                item["type"].as_str(),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .count();
    model
        .seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(request);
    let next = model
        .script
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(outputs)
        .cloned();
    let item = next.unwrap_or_else(|| {
        json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "All done.", "annotations": []}]})
    });
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {
            "input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
            "output_tokens_details": null, "total_tokens": 2}}}),
    ];
    let body: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or_default()
            )
        })
        .collect();
    ([(header::CONTENT_TYPE, "text/event-stream")], body)
}

/// The stand-in on a loopback port playing `script`, and its base URL.
pub(crate) async fn scripted_model(script: Vec<Value>) -> (String, ScriptedModel) {
    let model = ScriptedModel::default();
    model.play(script);
    let app = Router::new()
        .route("/v1/responses", post(respond))
        .with_state(model.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let base = format!("http://{}/v1", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, model)
}

/// The model's call of Codex's shell tool.
pub(crate) fn command_call(id: &str, command: &str) -> Value {
    json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": "exec_command",
        "arguments": json!({"cmd": command}).to_string(), "status": "completed"})
}

/// A folder with a Codex home (its model the stand-in, `model` one Codex knows or not, `extra` appended to
/// its `config.toml`) and a working folder.
struct CodexPlace {
    _dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
}

fn codex_place(api_base: &str, model: &str, extra: &str) -> CodexPlace {
    let dir = tempfile::tempdir().expect("temporary directory");
    let home = dir.path().join("codex-home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).expect("CODEX_HOME");
    std::fs::create_dir_all(&work).expect("work folder");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"{model}\"\nmodel_provider = \"stub\"\n\n[model_providers.stub]\nname = \"stub\"\n\
             base_url = \"{api_base}\"\nwire_api = \"responses\"\nenv_key = \"STUB_API_KEY\"\n{extra}"
        ),
    )
    .expect("config.toml");
    CodexPlace {
        _dir: dir,
        home,
        work,
    }
}

fn sdks() -> String {
    std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
        "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
    )
}

/// `anteroom run --codex --session SESSION -- PROMPT` in `place`.
fn run_codex(server: &TestServer, place: &CodexPlace, session: &str) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args([
            "run",
            "--codex",
            "--session",
            session,
            "--hook-timeout",
            "60",
        ])
        // Writes in the working folder, under Codex's own sandbox (its default here is read-only).
        .args(["--sandbox", "workspace-write"])
        .args(["--", "Do", "the", "work."])
        .current_dir(&place.work)
        .env("ANTEROOM_URL", &server.base)
        .env("ANTEROOM_API_KEY", &server.admin_key)
        .env(
            "ANTEROOM_CODEX",
            format!("{}/node_modules/.bin/codex", sdks()),
        )
        .env("CODEX_HOME", &place.home)
        .env("HOME", &place.work)
        .env("STUB_API_KEY", "loopback")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("anteroom run --codex")
}

/// The run's exit code, stdout and stderr once it ends.
pub(crate) async fn ended(run: tokio::process::Child) -> (Option<i32>, String, String) {
    let output = tokio::time::timeout(StdDuration::from_secs(120), run.wait_with_output())
        .await
        .expect("the run ends")
        .expect("anteroom run");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

pub(crate) async fn answer(
    server: &TestServer,
    round: &anteroom_store::domain::round::Round,
    answer: Value,
) {
    let answered = server
        .respond(&server.responder_key, round.request_id.as_str(), answer)
        .await;
    assert_eq!(answered.status(), 200, "{:?}", answered.text().await);
}

pub(crate) fn asked(round: &anteroom_store::domain::round::Round) -> String {
    round
        .requests
        .values()
        .next()
        .map(|request| request.message().to_owned())
        .unwrap_or_default()
}

async fn codexs_commands_and_changes_wait_for_a_person_and_a_decline_says_why(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let patch = "*** Begin Patch\n*** Add File: notes.txt\n+hello from the patch\n*** End Patch\n";
    let (api_base, model) = scripted_model(vec![
        command_call("call_1", "touch made.txt"),
        json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_2", "name": "apply_patch",
            "input": patch, "status": "completed"}),
        command_call("call_3", "touch declined.txt"),
    ])
    .await;
    // A model Codex knows, so it offers `apply_patch`.
    let place = codex_place(&api_base, "gpt-5.5", "");
    let run = run_codex(&server, &place, "codex-app");

    let command = server.rounds_once("codex-app", 1).await.remove(0);
    assert_eq!(command.server.as_deref(), Some("codex"));
    assert_eq!(command.operation_name, "command");
    let text = asked(&command);
    assert!(text.contains("wants to run a command in `"), "{text}");
    assert!(text.contains("touch made.txt"), "{text}");
    assert!(
        !place.work.join("made.txt").exists(),
        "the command waits for the person"
    );
    answer(&server, &command, json!({"action_type": "accept"})).await;

    let change = server
        .new_round_once("codex-app", &[command.round_id])
        .await;
    assert_eq!(change.operation_name, "file change");
    let text = asked(&change);
    assert!(
        text.contains("wants to change a file:")
            && text.contains("```diff\n+hello from the patch\n```"),
        "{text}"
    );
    answer(&server, &change, json!({"action_type": "accept"})).await;

    let declined = server
        .new_round_once("codex-app", &[command.round_id, change.round_id])
        .await;
    assert!(asked(&declined).contains("touch declined.txt"));
    answer(
        &server,
        &declined,
        json!({"action_type": "decline", "reason": "not on a Friday."}),
    )
    .await;

    let (code, stdout, stderr) = ended(run).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout.trim(),
        "All done.",
        "the final message, as codex exec prints it"
    );
    assert!(place.work.join("made.txt").exists(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(place.work.join("notes.txt")).expect("the patch applied"),
        "hello from the patch\n"
    );
    assert!(!place.work.join("declined.txt").exists(), "{stderr}");
    // What the model read: the accepted command's exit, the decline, and the person's reason beside it.
    let inputs = model.inputs();
    assert!(
        model.output_of("call_1").contains("exited with code 0"),
        "{inputs:?}"
    );
    assert!(
        model.output_of("call_3").contains("rejected by user"),
        "{inputs:?}"
    );
    let steered = inputs.iter().any(|item| {
        item.to_string()
            .contains("Anteroom: api key responder declined the command: not on a Friday.")
    });
    assert!(steered, "the person's reason reached the model: {inputs:?}");

    let session = server
        .get_json("/api/v1/sessions/codex-app", &server.viewer_key)
        .await;
    assert_eq!(session["run"]["state"], "finished", "{session}");
    let kept = server
        .get_json("/api/v1/sessions/codex-app/output", &server.viewer_key)
        .await;
    let text = kept["output"].as_str().expect("output");
    assert!(
        text.contains("touch made.txt' (completed, exit 0)"),
        "{text}"
    );
    assert!(text.contains("codex: All done."), "{text}");
    server.stop().await;
}

async fn an_mcp_servers_question_reaches_a_person_through_codex_and_a_stop_interrupts_the_turn(
    db: Backend,
) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let python = std::env::var("ANTEROOM_TEST_MCP_PYTHON").expect("the SDKs' Python");
    let fixture = Path::new(&sdks()).join("python_server.py");
    let (api_base, model) = scripted_model(vec![
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "namespace": "mcp__fixture",
            "name": "release", "arguments": "{}", "status": "completed"}),
        command_call("call_2", "sleep 30"),
    ])
    .await;
    let place = codex_place(
        &api_base,
        "stub-model",
        &format!(
            "\n[mcp_servers.fixture]\ncommand = \"{python}\"\nargs = [\"{}\"]\n",
            fixture.display()
        ),
    );
    let run = run_codex(&server, &place, "codex-mcp");

    // Codex's own approval of the tool call first, asked as the server's tool.
    let call = server.rounds_once("codex-mcp", 1).await.remove(0);
    assert_eq!(call.server.as_deref(), Some("fixture"));
    assert_eq!(call.operation_name, "release");
    answer(&server, &call, json!({"action_type": "accept"})).await;
    // Then the server's own question, its form as it asked it.
    let question = server.new_round_once("codex-mcp", &[call.round_id]).await;
    assert_eq!(question.server.as_deref(), Some("fixture"));
    assert_eq!(asked(&question), "Which version?");
    answer(
        &server,
        &question,
        json!({"action_type": "accept", "content": {"version": "2.0.1"}}),
    )
    .await;

    // The command after it waits; Stop interrupts the turn, and the command never runs.
    let waiting = server
        .new_round_once("codex-mcp", &[call.round_id, question.round_id])
        .await;
    assert!(asked(&waiting).contains("sleep 30"));
    let tool_output = model.output_of("call_1");
    assert!(
        tool_output.contains(r#"{\"action\":\"accept\",\"content\":{\"version\":\"2.0.1\"}}"#),
        "the server got the person's answer: {tool_output}"
    );
    let stopped = server
        .http
        .post(server.url("/api/v1/sessions/codex-mcp/stop"))
        .bearer_auth(&server.admin_key)
        .json(&json!({}))
        .send()
        .await
        .expect("POST stop");
    assert_eq!(stopped.status(), 200, "{:?}", stopped.text().await);
    let (code, _, stderr) = ended(run).await;
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("ending Codex's turn"), "{stderr}");
    let session = server
        .get_json("/api/v1/sessions/codex-mcp", &server.viewer_key)
        .await;
    assert_eq!(session["run"]["state"], "stopped", "{session}");
    server.stop().await;
}

/// Codex's own hooks under its app server, as `mcp-config hooks` installs them in its home (trusted, no bypass
/// flag): the `PreToolUse` hook asks the person before the command; Codex's approval of the same call then goes
/// to the `PermissionRequest` hook, which allows it at once (the person already did), so nobody is asked twice
/// and the bridge is asked nothing; a declined command is blocked with the person's reason.
async fn codexs_own_hooks_ask_once_under_its_app_server(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (api_base, model) = scripted_model(vec![
        command_call("call_1", "touch made.txt"),
        command_call("call_2", "touch declined.txt"),
    ])
    .await;
    let place = codex_place(&api_base, "gpt-5.5", "");
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
        .arg(&place.home)
        .arg(place.home.join("hooks.json"))
        .output()
        .expect("anteroom mcp-config hooks");
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let run = run_codex(&server, &place, "codex-hooks");

    let allowed = server.rounds_once("codex-hooks", 1).await.remove(0);
    assert_eq!(allowed.server.as_deref(), Some("codex"));
    assert_eq!(
        allowed.operation_name, "Bash",
        "asked by the PreToolUse hook"
    );
    assert!(
        asked(&allowed).contains("touch made.txt"),
        "{}",
        asked(&allowed)
    );
    answer(&server, &allowed, json!({"action_type": "accept"})).await;

    let declined = server
        .new_round_once("codex-hooks", &[allowed.round_id])
        .await;
    assert_eq!(declined.operation_name, "Bash");
    assert!(
        asked(&declined).contains("touch declined.txt"),
        "{}",
        asked(&declined)
    );
    answer(
        &server,
        &declined,
        json!({"action_type": "decline", "reason": "not on a Friday."}),
    )
    .await;

    let (code, _, stderr) = ended(run).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(place.work.join("made.txt").exists(), "{stderr}");
    assert!(!place.work.join("declined.txt").exists(), "{stderr}");
    assert_eq!(
        server.rounds_once("codex-hooks", 2).await.len(),
        2,
        "one question per call: {stderr}"
    );
    // Codex did ask its approval of the allowed call, through the hook, which answered without a question.
    let metrics = server
        .http
        .get(server.url("/metrics"))
        .bearer_auth(&server.admin_key)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.lines().any(
            |line| line.contains("route=\"/hooks/codex/permission-request\"")
                && line.contains("status=\"200\"")
                && !line.starts_with('#')
        ),
        "{metrics}"
    );
    assert!(
        model
            .output_of("call_2")
            .contains("Denied by api key responder in Anteroom: not on a Friday"),
        "{:?}",
        model.inputs()
    );
    server.stop().await;
}

anteroom_testkit::with_real_harnesses!(
    codexs_commands_and_changes_wait_for_a_person_and_a_decline_says_why,
    codexs_own_hooks_ask_once_under_its_app_server,
    an_mcp_servers_question_reaches_a_person_through_codex_and_a_stop_interrupts_the_turn,
);

/// The installed Codex's own schemas (generated offline, never vendored): every server request it can send is
/// one the bridge asks a person about or refuses in words, and the params fields the bridge reads are still
/// there.
#[tokio::test]
#[cfg_attr(
    not(anteroom_mcp_sdk_tests),
    ignore = "run through `cargo xtask test`, which installs the MCP SDKs"
)]
async fn the_bridge_knows_every_request_the_installed_codex_can_send() {
    use anteroom_store::domain::hooks::{ASKED_METHODS, REFUSED_METHODS};
    let out = tempfile::tempdir().expect("temporary directory");
    let generated = tokio::process::Command::new(format!("{}/node_modules/.bin/codex", sdks()))
        .args(["app-server", "generate-json-schema", "--out"])
        .arg(out.path())
        .output()
        .await
        .expect("codex app-server generate-json-schema");
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let read = |name: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(out.path().join(name)).expect("a generated schema"),
        )
        .expect("JSON")
    };
    let requests = read("ServerRequest.json");
    let mut methods: Vec<String> = requests["oneOf"]
        .as_array()
        .expect("oneOf")
        .iter()
        .filter_map(|variant| {
            variant
                .pointer("/properties/method/enum/0")?
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    methods.sort();
    let mut known: Vec<String> = ASKED_METHODS
        .iter()
        .chain(REFUSED_METHODS.iter())
        .map(|method| (*method).to_owned())
        .collect();
    known.sort();
    assert_eq!(methods, known, "a server request the bridge does not know");

    // The params fields the bridge reads, by the generated params schema of each request.
    let reads: [(&str, &[&str]); 5] = [
        (
            "CommandExecutionRequestApprovalParams.json",
            &["threadId", "turnId", "command", "cwd", "reason"],
        ),
        (
            "FileChangeRequestApprovalParams.json",
            &["threadId", "turnId", "itemId", "reason"],
        ),
        (
            "McpServerElicitationRequestParams.json",
            &["threadId", "turnId", "serverName"],
        ),
        (
            "PermissionsRequestApprovalParams.json",
            &["threadId", "turnId", "cwd", "permissions", "reason"],
        ),
        (
            "ToolRequestUserInputParams.json",
            &["threadId", "turnId", "questions"],
        ),
    ];
    for (file, fields) in reads {
        let schema = read(file);
        for field in fields {
            assert!(
                schema["properties"].get(*field).is_some(),
                "{file} no longer has `{field}`"
            );
        }
    }
    // The elicitation's modes carry `message`, `requestedSchema` (form) and `url`/`elicitationId` (url).
    let modes = read("McpServerElicitationRequestParams.json")["oneOf"].to_string();
    for field in [
        "\"message\"",
        "\"requestedSchema\"",
        "\"url\"",
        "\"elicitationId\"",
        "\"_meta\"",
    ] {
        assert!(modes.contains(field), "{field}");
    }
    // The results the bridge sends are ones Codex reads.
    let decisions = read("CommandExecutionRequestApprovalResponse.json").to_string();
    for decision in [
        "\"accept\"",
        "\"acceptForSession\"",
        "\"decline\"",
        "\"cancel\"",
    ] {
        assert!(decisions.contains(decision), "{decision}");
    }
}

/// Without the real Codex: its route spoken to as the bridge speaks, and a stand-in app server for faults.
mod without_codex {
    use super::*;

    /// The bridge's route, spoken to as the bridge does: a command asked again is answered at once by a person's
    /// standing answer ("allow `npm test` for this run"), naming the rule; what cannot be read is refused in JSON.
    async fn the_app_server_route_answers_a_repeated_command_by_a_standing_answer(db: Backend) {
        use crate::hooks::{held_reply, hold, post, rita_allows_it_again};
        let Some(server) = TestServer::start(db).await else {
            return;
        };
        anteroom_testkit::browser::person(
            &server,
            "rita",
            anteroom_store::domain::access::Role::Responder,
        )
        .await;
        let env = server.session("app-route").await;
        let path = "/hooks/codex/app-server?timeout=60";
        let npm_test = json!({"method": "item/commandExecution/requestApproval", "params": {
            "threadId": "01a249c3-d352", "turnId": "t1", "itemId": "call_1", "startedAtMs": 1,
            "command": "/bin/bash -lc 'npm test'", "cwd": "/srv/shop"}});
        let held = hold(post(&server, &env.token, path, &npm_test));
        let first = server.rounds_once("app-route", 1).await.remove(0);
        answer(&server, &first, json!({"action_type": "accept"})).await;
        let reply: Value = held_reply(held).await;
        assert_eq!(
            reply,
            json!({"result": {"decision": "accept"}, "steer": null})
        );
        let rule = rita_allows_it_again(&server, &first).await;
        let again = post(&server, &env.token, path, &npm_test)
            .send()
            .await
            .expect("POST");
        assert_eq!(again.status(), 200);
        let reply: Value = again.json().await.expect("JSON");
        assert_eq!(reply["result"], json!({"decision": "accept"}));
        let rounds = server.rounds_once("app-route", 2).await;
        assert_eq!(
            rounds[1].responded_by.as_deref(),
            Some(format!("rule #{} (rita)", rule.id).as_str())
        );

        // What cannot be read is a JSON refusal, never a question.
        for (token, body, status) in [
            ("", npm_test.clone(), 401),
            (
                env.token.as_str(),
                json!({"method": "item/tool/call", "params": {"threadId": "t"}}),
                422,
            ),
            (
                env.token.as_str(),
                json!({"method": "item/commandExecution/requestApproval", "params": "x"}),
                422,
            ),
            (
                env.token.as_str(),
                json!({"method": "item/commandExecution/requestApproval", "params": {"threadId": "t"}}),
                422,
            ),
            (env.token.as_str(), json!({"params": {}}), 422),
        ] {
            let refused = post(&server, token, path, &body)
                .send()
                .await
                .expect("POST");
            assert_eq!(refused.status(), status, "{body}");
            let refusal: Value = refused.json().await.expect("a JSON refusal");
            assert!(refusal["message"].is_string(), "{refusal}");
        }
        assert_eq!(server.rounds_once("app-route", 2).await.len(), 2);
        server.stop().await;
    }

    /// A Codex whose `initialize` reply the bridge does not understand is refused in words before any turn; an app
    /// server that dies mid-turn ends the run `failed` with its last words, after the bridge answered a request of
    /// a kind it does not answer and one it cannot read with JSON-RPC errors. (A stand-in app server: the real one
    /// cannot be made to do these on cue.)
    async fn a_codex_not_understood_or_dying_mid_turn_ends_the_run_saying_why(db: Backend) {
        let Some(server) = TestServer::start(db).await else {
            return;
        };
        let fake =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_codex_app_server.py");
        let dir = tempfile::tempdir().expect("temporary directory");
        let log = dir.path().join("responses.json");
        let run = |session: &str, scenario: &str| {
            tokio::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
                .args(["run", "--codex", "--session", session, "--", "Do it."])
                .current_dir(dir.path())
                .env("ANTEROOM_URL", &server.base)
                .env("ANTEROOM_API_KEY", &server.admin_key)
                .env("ANTEROOM_CODEX", &fake)
                .env("FAKE_SCENARIO", scenario)
                .env("FAKE_LOG", &log)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("anteroom run --codex")
        };

        let (code, _, stderr) = ended(run("codex-bad-init", "bad-init")).await;
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr
                .contains("answered `initialize` with something this Anteroom does not understand"),
            "{stderr}"
        );
        let session = server
            .get_json("/api/v1/sessions/codex-bad-init", &server.viewer_key)
            .await;
        assert_eq!(session["run"]["state"], "failed", "{session}");

        let (code, _, stderr) = ended(run("codex-dies", "dies")).await;
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.contains("Codex's app server ended mid-turn"),
            "{stderr}"
        );
        assert!(stderr.contains("boom: the model crashed"), "{stderr}");
        assert!(stderr.contains("a line that is not JSON"), "{stderr}");
        let responses: Value =
            serde_json::from_str(&std::fs::read_to_string(&log).expect("the stand-in's log"))
                .expect("JSON");
        let code_for = |id: i64| {
            responses
                .as_array()
                .into_iter()
                .flatten()
                .find(|response| response["id"] == id)
                .map(|response| response["error"]["code"].clone())
        };
        assert_eq!(code_for(7), Some(json!(-32601)), "{responses}");
        assert_eq!(code_for(8), Some(json!(-32602)), "{responses}");
        let session = server
            .get_json("/api/v1/sessions/codex-dies", &server.viewer_key)
            .await;
        assert_eq!(session["run"]["state"], "failed", "{session}");
        let kept = server
            .get_json("/api/v1/sessions/codex-dies/output", &server.viewer_key)
            .await;
        assert!(
            kept["output"]
                .as_str()
                .is_some_and(|text| text.contains("boom: the model crashed")),
            "{kept}"
        );
        server.stop().await;
    }

    anteroom_testkit::on_both_backends!(
        the_app_server_route_answers_a_repeated_command_by_a_standing_answer,
        a_codex_not_understood_or_dying_mid_turn_ends_the_run_saying_why,
    );
}
