//! `anteroom run --acp`: the real Gemini CLI, OpenCode and Copilot CLI (npm, installed with the MCP SDKs) run as
//! Agent Client Protocol agents with Anteroom as their host, offline against loopback stand-ins of their model
//! APIs that ask to run shell commands: a command waits in the run's session; Allow "for the rest of the run"
//! runs it and the same command again without asking; a decline's reason reaches the model; Stop cancels the
//! turn.

use std::{
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex},
};

use anteroom_testkit::{Backend, TestServer};
use axum::{
    Json, Router,
    extract::State,
    http::{Uri, header},
    response::IntoResponse,
    routing::post,
};
use serde_json::{Value, json};

use super::codex_app::{answer, asked, ended};

/// A model stand-in's script (the shell commands it asks for, one per tool result so far, then "Done.") and
/// every request it has seen.
#[derive(Clone, Default)]
pub(crate) struct Model {
    commands: Arc<Vec<String>>,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Model {
    fn saw(&self, request: Value) {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request);
    }

    /// Whether any text of any request the model was sent holds `text`.
    pub(crate) fn was_told(&self, text: &str) -> bool {
        fn holds(value: &Value, text: &str) -> bool {
            match value {
                Value::String(said) => said.contains(text),
                Value::Array(items) => items.iter().any(|item| holds(item, text)),
                Value::Object(fields) => fields.values().any(|field| holds(field, text)),
                _ => false,
            }
        }
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|request| holds(request, text))
    }
}

/// The Gemini API as Gemini CLI calls it: `streamGenerateContent` (SSE) for the turn, `generateContent` for
/// its helper calls.
async fn gemini_api(
    State(model): State<Model>,
    uri: Uri,
    Json(request): Json<Value>,
) -> impl IntoResponse {
    let path = uri.path().to_owned();
    let results = request["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|content| content["parts"].as_array().cloned().unwrap_or_default())
        .filter(|part| part.get("functionResponse").is_some())
        .count();
    model.saw(request);
    let candidate = |parts: Value| {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
    };
    if path.contains(":streamGenerateContent") {
        let parts = match model.commands.get(results) {
            // "mcp:TOOL" calls an MCP server's tool, as Gemini CLI names it (`mcp_SERVER_TOOL`).
            Some(command) if command.starts_with("mcp:") => json!([{"functionCall": {
                "name": command.trim_start_matches("mcp:"), "args": {}}}]),
            Some(command) => json!([{"functionCall": {"name": "run_shell_command",
                "args": {"command": command, "description": "a step"}}}]),
            None => json!([{"text": "Done."}]),
        };
        let body = format!("data: {}\r\n\r\n", candidate(parts));
        return ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    }
    if path.contains(":countTokens") {
        return Json(json!({"totalTokens": 10})).into_response();
    }
    // Its helper calls (the model router, the next-speaker check) read JSON text.
    let text = json!({"reasoning": "stub", "model_choice": "flash", "complexity_reasoning": "stub",
        "complexity_score": 10, "next_speaker": "user"})
    .to_string();
    Json(candidate(json!([{"text": text}]))).into_response()
}

/// OpenAI's chat completions as OpenCode and Copilot CLI call them (streamed).
async fn chat_api(State(model): State<Model>, Json(request): Json<Value>) -> impl IntoResponse {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let results = messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .count();
    let has_tools = request["tools"]
        .as_array()
        .is_some_and(|tools| !tools.is_empty());
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": "stub-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    };
    // Qwen Code's shell tool is Gemini CLI's; OpenCode's and Copilot CLI's are `bash`.
    let shell = if offers(&request, "run_shell_command") {
        "run_shell_command"
    } else {
        "bash"
    };
    model.saw(request);
    let chunks = match model.commands.get(results).filter(|_| has_tools) {
        Some(command) => vec![
            chunk(
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                    "id": format!("call_{results}"), "type": "function", "function": {"name": shell,
                    "arguments": json!({"command": command, "description": "a step",
                        "is_background": false}).to_string()}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ],
        // A title request (no tools), or the script done.
        None => vec![
            chunk(
                json!({"role": "assistant", "content": "Done."}),
                Value::Null,
            ),
            chunk(json!({}), json!("stop")),
        ],
    };
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream")], body)
}

/// Whether the request offers the model a tool named `name`.
fn offers(request: &Value, name: &str) -> bool {
    request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|tool| tool["function"]["name"] == name))
}

/// The harnesses, each with what it needs to run offline (`../shared/HARNESSES.md`).
#[derive(Clone, Copy)]
pub(crate) enum Harness {
    Gemini,
    OpenCode,
    Copilot,
    Qwen,
}

/// An agent ready to run: its command, its environment, the stand-in it calls, a working folder.
pub(crate) struct Agent {
    _dir: tempfile::TempDir,
    pub(crate) work: PathBuf,
    pub(crate) command: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) model: Model,
}

impl Agent {
    /// The agent's home folder.
    pub(crate) fn home(&self) -> PathBuf {
        self.env
            .iter()
            .find(|(key, _)| key == "HOME")
            .map(|(_, home)| PathBuf::from(home))
            .expect("HOME")
    }
}

pub(crate) async fn ready_agent(harness: Harness, commands: &[&str]) -> Agent {
    let model = Model {
        commands: Arc::new(
            commands
                .iter()
                .map(|command| (*command).to_owned())
                .collect(),
        ),
        seen: Arc::default(),
    };
    let app = match harness {
        Harness::Gemini => Router::new().fallback(post(gemini_api)),
        Harness::OpenCode | Harness::Copilot | Harness::Qwen => {
            Router::new().route("/v1/chat/completions", post(chat_api))
        }
    }
    .with_state(model.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().expect("temporary directory");
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work folder");
    std::fs::create_dir_all(&home).expect("home");
    let bin = |name: &str| format!("{}/node_modules/.bin/{name}", sdks());
    let home_text = home.display().to_string();
    let mut env: Vec<(String, String)> = [
        ("HOME", home_text.clone()),
        ("XDG_CONFIG_HOME", format!("{home_text}/.config")),
        ("XDG_DATA_HOME", format!("{home_text}/.local/share")),
        ("XDG_CACHE_HOME", format!("{home_text}/.cache")),
        ("XDG_STATE_HOME", format!("{home_text}/.local/state")),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    let mut set = |key: &str, value: String| env.push((key.to_owned(), value));
    let command = match harness {
        Harness::Gemini => {
            std::fs::create_dir_all(home.join(".gemini")).expect(".gemini");
            std::fs::write(
                home.join(".gemini/settings.json"),
                r#"{"general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                   "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}"#,
            )
            .expect("settings.json");
            set("GEMINI_CLI_HOME", home_text.clone());
            set("GOOGLE_GEMINI_BASE_URL", base);
            set("GEMINI_API_KEY", "loopback".to_owned());
            set("GEMINI_CLI_NO_RELAUNCH", "1".to_owned());
            set("GEMINI_TELEMETRY_ENABLED", "false".to_owned());
            set("GEMINI_CLI_TRUST_WORKSPACE", "true".to_owned());
            set("NO_BROWSER", "1".to_owned());
            vec![
                bin("gemini"),
                "--acp".to_owned(),
                "-m".to_owned(),
                "gemini-2.5-pro".to_owned(),
            ]
        }
        Harness::OpenCode => {
            let config = home.join("opencode.json");
            std::fs::write(
                &config,
                json!({"autoupdate": false, "share": "disabled", "model": "stub/stub-model",
                    "small_model": "stub/stub-model", "enabled_providers": ["stub"],
                    "permission": {"bash": "ask"},
                    "provider": {"stub": {"npm": "@ai-sdk/openai-compatible", "name": "Stub",
                        "options": {"baseURL": format!("{base}/v1"), "apiKey": "{env:STUB_API_KEY}"},
                        "models": {"stub-model": {"name": "Stub model", "tool_call": true,
                            "limit": {"context": 128_000, "output": 8192}}}}}})
                .to_string(),
            )
            .expect("opencode.json");
            set("OPENCODE_CONFIG", config.display().to_string());
            set("STUB_API_KEY", "loopback".to_owned());
            for off in [
                "OPENCODE_DISABLE_AUTOUPDATE",
                "OPENCODE_DISABLE_MODELS_FETCH",
                "OPENCODE_DISABLE_LSP_DOWNLOAD",
                "OPENCODE_DISABLE_DEFAULT_PLUGINS",
                "OPENCODE_DISABLE_SHARE",
                "OPENCODE_DISABLE_CLAUDE_CODE",
                "OPENCODE_DISABLE_EXTERNAL_SKILLS",
            ] {
                set(off, "1".to_owned());
            }
            // Its linux-x64 build, pinned alone (wrap/tests/sdk/package.json says why).
            vec![
                format!("{}/node_modules/opencode-linux-x64/bin/opencode", sdks()),
                "acp".to_owned(),
            ]
        }
        Harness::Copilot => {
            set("COPILOT_HOME", format!("{home_text}/.copilot"));
            set("COPILOT_OFFLINE", "true".to_owned());
            set("COPILOT_AUTO_UPDATE", "false".to_owned());
            set("COPILOT_DISABLE_KEYTAR", "1".to_owned());
            set("COPILOT_PROVIDER_BASE_URL", format!("{base}/v1"));
            set("COPILOT_PROVIDER_TYPE", "openai".to_owned());
            set("COPILOT_PROVIDER_API_KEY", "loopback".to_owned());
            set("COPILOT_MODEL", "gpt-4.1".to_owned());
            vec![bin("copilot"), "--acp".to_owned(), "--stdio".to_owned()]
        }
        Harness::Qwen => {
            std::fs::create_dir_all(home.join(".qwen")).expect(".qwen");
            std::fs::write(
                home.join(".qwen/settings.json"),
                r#"{"security": {"auth": {"selectedType": "openai"}}, "model": {"name": "stub-model"},
                   "general": {"disableAutoUpdate": true}, "privacy": {"usageStatisticsEnabled": false}}"#,
            )
            .expect("settings.json");
            set("OPENAI_BASE_URL", format!("{base}/v1"));
            set("OPENAI_API_KEY", "loopback".to_owned());
            set("OPENAI_MODEL", "stub-model".to_owned());
            // Its default mode under ACP asks the model to classify each call first; the stand-in cannot.
            vec![
                bin("qwen"),
                "--acp".to_owned(),
                "--approval-mode".to_owned(),
                "default".to_owned(),
            ]
        }
    };
    Agent {
        _dir: dir,
        work,
        command,
        env,
        model,
    }
}

pub(crate) fn sdks() -> String {
    std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
        "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
    )
}

/// `anteroom run --acp --session SESSION -- AGENT… PROMPT`.
fn run_acp(server: &TestServer, agent: &Agent, session: &str) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args([
            "run",
            "--acp",
            "--session",
            session,
            "--hook-timeout",
            "60",
            "--",
        ])
        .args(&agent.command)
        .arg("Do the work.")
        .current_dir(&agent.work)
        .envs(agent.env.iter().map(|(key, value)| (key, value)))
        .env("ANTEROOM_URL", &server.base)
        .env("ANTEROOM_API_KEY", &server.admin_key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("anteroom run --acp")
}

async fn run_state(server: &TestServer, session: &str) -> Value {
    server
        .get_json(&format!("/api/v1/sessions/{session}"), &server.viewer_key)
        .await["run"]["state"]
        .clone()
}

/// Allow for the rest of the run, a command run again without asking, a decline whose reason reaches the
/// model, and then a Stop that cancels a turn waiting for a person.
async fn the_agent_asks_before_its_commands_run(db: Backend, harness: Harness, name: &str) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let session = format!("acp-{name}");
    let agent = ready_agent(
        harness,
        &["touch made.txt", "touch made.txt", "mkdir declined"],
    )
    .await;
    let run = run_acp(&server, &agent, &session);
    let allowed = server.rounds_once(&session, 1).await.remove(0);
    assert_eq!(allowed.server.as_deref(), Some(name));
    assert_eq!(allowed.operation_name, "execute");
    let text = asked(&allowed);
    assert!(text.starts_with(&format!("{name} session ")), "{text}");
    assert!(text.contains("touch made.txt"), "{text}");
    assert!(
        !agent.work.join("made.txt").exists(),
        "the command waits for the person"
    );
    answer(
        &server,
        &allowed,
        json!({"action_type": "accept", "content": {"for_session": true}}),
    )
    .await;
    // The same command again is the agent's to allow: nobody is asked.
    let declined = server.new_round_once(&session, &[allowed.round_id]).await;
    assert!(
        asked(&declined).contains("mkdir declined"),
        "{}",
        asked(&declined)
    );
    answer(
        &server,
        &declined,
        json!({"action_type": "decline", "reason": "not on a Friday."}),
    )
    .await;
    let (code, stdout, stderr) = ended(run).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "Done.", "{stderr}");
    assert!(agent.work.join("made.txt").exists(), "{stderr}");
    assert!(!agent.work.join("declined").exists(), "{stderr}");
    assert_eq!(server.rounds_once(&session, 2).await.len(), 2, "{stderr}");
    // Gemini CLI sends no input with its request: the call is named by its title there, in quotes.
    let told = ["`mkdir declined`", "\"mkdir declined\""]
        .iter()
        .any(|call| {
            agent.model.was_told(&format!(
                "Anteroom: api key responder declined {call}: not on a Friday."
            ))
        });
    assert!(told, "the person's reason reached the model: {stderr}");
    assert_eq!(run_state(&server, &session).await, "finished");

    // Stop while the agent waits for a person: the turn is cancelled, the command never runs.
    let waiting_agent = ready_agent(harness, &["touch later.txt"]).await;
    let stopped_session = format!("acp-{name}-stop");
    let run = run_acp(&server, &waiting_agent, &stopped_session);
    let waiting = server.rounds_once(&stopped_session, 1).await.remove(0);
    assert!(asked(&waiting).contains("touch later.txt"));
    let stopped = server
        .http
        .post(server.url(&format!("/api/v1/sessions/{stopped_session}/stop")))
        .bearer_auth(&server.admin_key)
        .json(&json!({}))
        .send()
        .await
        .expect("POST stop");
    assert_eq!(stopped.status(), 200);
    let (code, _, stderr) = ended(run).await;
    assert_eq!(code, Some(130), "{stderr}");
    assert!(!waiting_agent.work.join("later.txt").exists(), "{stderr}");
    assert_eq!(run_state(&server, &stopped_session).await, "stopped");
    server.stop().await;
}

async fn gemini_cli_asks_through_anteroom(db: Backend) {
    the_agent_asks_before_its_commands_run(db, Harness::Gemini, "gemini").await;
}

async fn opencode_asks_through_anteroom(db: Backend) {
    the_agent_asks_before_its_commands_run(db, Harness::OpenCode, "opencode").await;
}

async fn copilot_cli_asks_through_anteroom(db: Backend) {
    the_agent_asks_before_its_commands_run(db, Harness::Copilot, "copilot").await;
}

async fn qwen_code_asks_through_anteroom(db: Backend) {
    the_agent_asks_before_its_commands_run(db, Harness::Qwen, "qwen").await;
}

/// Copilot CLI in `-p`, without ACP: its `preToolUse` and `permissionRequest` command hooks, installed by
/// `anteroom mcp-config hooks` in `$COPILOT_HOME/hooks/`, ask the session of the environment block once per call
/// (`preToolUse` asks; its allow skips Copilot's own approval, so `permissionRequest` never asks again); Allow
/// runs the command (`-p` alone would refuse it), a decline's reason is what the model reads.
async fn copilot_cli_in_p_mode_asks_through_its_hooks(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("copilot-hook").await;
    let p_mode = |agent: &Agent| {
        let copilot_home = agent
            .env
            .iter()
            .find(|(key, _)| key == "COPILOT_HOME")
            .map(|(_, home)| home.clone())
            .expect("COPILOT_HOME");
        super::harness_hooks::install_hooks(
            &server,
            std::path::Path::new(&format!("{copilot_home}/hooks/anteroom.json")),
        );
        tokio::process::Command::new(&agent.command[0])
            .args(["-p", "Do the work."])
            .current_dir(&agent.work)
            .envs(agent.env.iter().map(|(key, value)| (key, value)))
            .env("ELICITATION_REQUEST_URL", &env.request_url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("copilot -p")
    };

    let allowed = ready_agent(Harness::Copilot, &["touch made.txt"]).await;
    let run = p_mode(&allowed);
    let round = server.rounds_once("copilot-hook", 1).await.remove(0);
    assert_eq!(round.server.as_deref(), Some("copilot"));
    assert_eq!(round.operation_name, "Bash");
    assert!(
        asked(&round).contains("$ touch made.txt"),
        "{}",
        asked(&round)
    );
    answer(&server, &round, json!({"action_type": "accept"})).await;
    let (code, _, stderr) = ended(run).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(allowed.work.join("made.txt").exists(), "{stderr}");
    assert_eq!(
        server.rounds_once("copilot-hook", 1).await.len(),
        1,
        "asked once, not again by permissionRequest"
    );

    let declined = ready_agent(Harness::Copilot, &["touch denied.txt"]).await;
    let run = p_mode(&declined);
    let round = server
        .new_round_once("copilot-hook", &[round.round_id])
        .await;
    answer(
        &server,
        &round,
        json!({"action_type": "decline", "reason": "not on a Friday."}),
    )
    .await;
    let (_, _, stderr) = ended(run).await;
    assert!(!declined.work.join("denied.txt").exists(), "{stderr}");
    assert!(
        declined.model.was_told(
            "Denied by preToolUse hook: Denied by api key responder in Anteroom: not on a Friday."
        ),
        "{stderr}"
    );
    server.stop().await;
}

/// Gemini CLI's own MCP server, put under `anteroom wrap` in its `settings.json` by `mcp-config inject` and
/// `wrap`: the Python SDK's server asks "Which version?" through the wrapper, a person answers in the session, and
/// the answer is what the model reads (`gemini -p`; the server is trusted, so Gemini itself asks nobody).
async fn gemini_clis_wrapped_mcp_server_asks_a_person(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("gemini-mcp").await;
    let agent = ready_agent(Harness::Gemini, &["mcp:mcp_fixture_release"]).await;
    let home = agent
        .env
        .iter()
        .find(|(key, _)| key == "HOME")
        .map(|(_, home)| PathBuf::from(home))
        .expect("HOME");
    let settings = home.join(".gemini/settings.json");
    let mut document: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("settings")).expect("JSON");
    let python = std::env::var("ANTEROOM_TEST_MCP_PYTHON").expect("the SDKs' Python");
    // `-p` needs an auth method named (ACP mode takes the base URL as a gateway).
    document["security"] = json!({"auth": {"selectedType": "gemini-api-key"}});
    document["mcpServers"] = json!({"fixture": {"command": python,
        "args": [format!("{}/python_server.py", sdks())], "trust": true}});
    std::fs::write(&settings, document.to_string()).expect("settings");
    let block = home.join("anteroom.env");
    std::fs::write(
        &block,
        format!(
            "ELICITATION_REQUEST_URL={}\nELICITATION_POLL_URL={}\nELICITATION_SESSION_ID={}\n",
            env.request_url, env.poll_url, env.session_id
        ),
    )
    .expect("block");
    for change in [
        vec![
            "inject".to_owned(),
            "--env-file".to_owned(),
            block.display().to_string(),
        ],
        vec![
            "wrap".to_owned(),
            "--program".to_owned(),
            env!("CARGO_BIN_EXE_anteroom").to_owned(),
        ],
    ] {
        let changed = std::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
            .arg("mcp-config")
            .args(&change)
            .arg(&settings)
            .output()
            .expect("anteroom mcp-config");
        assert!(
            changed.status.success(),
            "{}",
            String::from_utf8_lossy(&changed.stderr)
        );
    }
    let run = tokio::process::Command::new(&agent.command[0])
        .args(["-p", "Do the work.", "-m", "gemini-2.5-pro"])
        .current_dir(&agent.work)
        .envs(agent.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("gemini -p");
    let mut run = run;
    // Gemini ending before anything was asked fails at once, with what it said.
    let round = tokio::select! {
        mut rounds = server.rounds_once("gemini-mcp", 1) => rounds.remove(0),
        _ = run.wait() => {
            let mut said = String::new();
            if let Some(mut stderr) = run.stderr.take() {
                use tokio::io::AsyncReadExt;
                let _ = stderr.read_to_string(&mut said).await;
            }
            panic!("Gemini CLI ended before its MCP server asked anything: {said}");
        }
    };
    assert_eq!(round.server.as_deref(), Some("fixture"));
    assert_eq!(asked(&round), "Which version?");
    answer(
        &server,
        &round,
        json!({"action_type": "accept", "content": {"version": "2.0.1"}}),
    )
    .await;
    let (code, _, stderr) = ended(run).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        agent
            .model
            .was_told(r#"{"action":"accept","content":{"version":"2.0.1"}}"#),
        "the server's answer reached the model: {stderr}"
    );
    server.stop().await;
}

anteroom_testkit::with_real_harnesses!(
    gemini_cli_asks_through_anteroom,
    opencode_asks_through_anteroom,
    copilot_cli_asks_through_anteroom,
    qwen_code_asks_through_anteroom,
    copilot_cli_in_p_mode_asks_through_its_hooks,
    gemini_clis_wrapped_mcp_server_asks_a_person,
);

/// Without an agent: the host's route spoken to as the host speaks.
mod without_an_agent {
    use super::*;

    /// The host's route, spoken to as the host does: what cannot be read is a JSON refusal, never a question.
    async fn the_permission_route_refuses_what_it_cannot_read(db: Backend) {
        use crate::hooks::post;
        let Some(server) = TestServer::start(db).await else {
            return;
        };
        let env = server.session("acp-route").await;
        let path = "/hooks/acp/permission?timeout=60";
        for (token, body, status) in [
            ("", json!({"agent": "gemini", "params": {}}), 401),
            (
                env.token.as_str(),
                json!({"agent": "gemini", "params": {"options": []}}),
                422,
            ),
            (
                env.token.as_str(),
                json!({"agent": "bad\nname", "params": {}}),
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
        let rounds = server
            .store
            .list_rounds(&anteroom_store::domain::ids::SessionId::parse("acp-route").expect("id"))
            .await
            .expect("rounds");
        assert!(rounds.is_empty());
        server.stop().await;
    }

    anteroom_testkit::on_both_backends!(the_permission_route_refuses_what_it_cannot_read);
}
