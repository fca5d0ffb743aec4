//! Claude Code's HTTP hooks against a real server on SQLite and PostgreSQL, posted as Claude Code posts them
//! (the documented `PreToolUse` and `Elicitation` input): the request is held while a person answers through
//! the API, and the reply parses into a strict mirror of the documented hook output.

use std::time::Duration as StdDuration;

use anteroom_testkit::{Backend, TestServer, on_both_backends};
use serde::Deserialize;
use serde_json::{Value, json};

/// Claude Code's `PreToolUse` hook output, as documented; anything else in a reply fails the test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PreToolUseReply {
    pub(crate) hook_specific_output: PreToolUseOutput,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PreToolUseOutput {
    hook_event_name: String,
    pub(crate) permission_decision: String,
    pub(crate) permission_decision_reason: String,
    #[serde(default)]
    updated_input: Option<Value>,
}

/// Claude Code's `Elicitation` hook output, as documented.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ElicitationReply {
    hook_specific_output: ElicitationOutput,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ElicitationOutput {
    hook_event_name: String,
    action: String,
    #[serde(default)]
    content: Option<Value>,
}

/// The `PreToolUse` input Claude Code posts for `tool` (fields from the hooks reference, and one it may add).
pub(crate) fn pre_tool_use(tool: &str, input: Value) -> Value {
    json!({
        "session_id": "4f2a9c1e-8d7b-4c1a-9e2f-0123456789ab",
        "transcript_path": "/home/rita/.claude/projects/shop/4f2a9c1e.jsonl",
        "cwd": "/home/rita/shop",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_01ABC",
        "a_field_added_later": {"ignored": true}
    })
}

/// Posts a hook's event with the session's token, as the settings' `headers` make Claude Code do.
pub(crate) fn post(
    server: &TestServer,
    token: &str,
    path: &str,
    body: &Value,
) -> reqwest::RequestBuilder {
    server
        .http
        .post(server.url(path))
        .bearer_auth(token)
        .timeout(StdDuration::from_secs(60))
        .json(body)
}

/// Waits until each of `rounds`, whose hook requests were dropped, has ended: their endings run on tasks of
/// their own, which must be done before the test's database goes.
async fn ended_by_the_callers_going(
    server: &TestServer,
    rounds: &[anteroom_store::domain::round::Round],
) {
    for round in rounds {
        server
            .round_once(round.round_id, |round| round.failure.is_some())
            .await;
    }
}

/// Sends a hook request that waits for a person, on a task of its own.
pub(crate) fn hold(request: reqwest::RequestBuilder) -> tokio::task::JoinHandle<reqwest::Response> {
    tokio::spawn(async move { request.send().await.expect("POST") })
}

pub(crate) async fn held_reply<T: for<'de> Deserialize<'de>>(
    held: tokio::task::JoinHandle<reqwest::Response>,
) -> T {
    let reply = held.await.expect("the hook request");
    assert_eq!(reply.status(), 200);
    let text = reply.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text}"))
}

async fn a_bash_call_waits_for_a_person_whose_allow_and_note_reach_the_harness(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;
    let body = pre_tool_use(
        "Bash",
        json!({"command": "terraform apply", "description": "apply"}),
    );
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &body,
    ));

    let round = server.rounds_once("hooked", 1).await.remove(0);
    assert_eq!(round.server.as_deref(), Some("claude-code"));
    assert_eq!(round.operation_name, "Bash");
    let message = round
        .requests
        .values()
        .next()
        .expect("request")
        .message()
        .to_owned();
    assert!(message.contains("$ terraform apply"), "{message}");
    assert!(
        message.contains("run 4f2a9c1e in /home/rita/shop"),
        "{message}"
    );
    let answered = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept", "content": {"reason": "staging only"}}),
        )
        .await;
    let status = answered.status();
    assert_eq!(status, 200, "{}", answered.text().await.unwrap_or_default());

    let reply: PreToolUseReply = held_reply(held).await;
    let output = reply.hook_specific_output;
    assert_eq!(output.hook_event_name, "PreToolUse");
    assert_eq!(output.permission_decision, "allow");
    assert_eq!(
        output.permission_decision_reason,
        "Allowed by api key responder in Anteroom: staging only"
    );
    assert!(output.updated_input.is_none());
    // The reply was the answer's delivery.
    let round = server
        .round_once(round.round_id, |round| round.delivered_at.is_some())
        .await;
    assert!(round.delivered_at.is_some());
    server.stop().await;
}

async fn a_decline_is_a_deny_and_a_read_only_tool_passes_at_once(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;

    let read = post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &pre_tool_use("Read", json!({"file_path": "README.md"})),
    )
    .send()
    .await
    .expect("POST");
    assert_eq!(read.status(), 200);
    assert_eq!(
        read.text().await.expect("body"),
        "",
        "no decision: the call goes on"
    );
    // A policy in the hook's URL asks about Read too, and lets Bash through.
    let asked = post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use?allow=Bash&ask=Read",
        &pre_tool_use("Bash", json!({"command": "ls"})),
    )
    .send()
    .await
    .expect("POST");
    assert_eq!(asked.text().await.expect("body"), "");

    let held = hold(post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &pre_tool_use(
            "Edit",
            json!({"file_path": "prod.env", "old_string": "DB=staging", "new_string": "DB=prod"}),
        ),
    ));
    let round = server.rounds_once("hooked", 1).await.remove(0);
    let message = round
        .requests
        .values()
        .next()
        .expect("request")
        .message()
        .to_owned();
    assert!(
        message.ends_with("edit prod.env:\n```diff\n- DB=staging\n+ DB=prod\n```"),
        "{message}"
    );
    // A reason goes with a decline or a dismissal, and is bounded.
    for refused in [
        json!({"action_type": "accept", "reason": "why not"}),
        json!({"action_type": "decline", "reason": "x".repeat(1001)}),
    ] {
        let status = server
            .respond(&server.responder_key, round.request_id.as_str(), refused)
            .await
            .status();
        assert_eq!(status, 422);
    }
    let declined = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "decline", "reason": "  touches the prod database "}),
        )
        .await;
    assert_eq!(declined.status(), 200);
    let reply: PreToolUseReply = held_reply(held).await;
    assert_eq!(reply.hook_specific_output.permission_decision, "deny");
    assert_eq!(
        reply.hook_specific_output.permission_decision_reason,
        "Denied by api key responder in Anteroom: touches the prod database"
    );
    server.stop().await;
}

async fn nobody_answering_is_a_deny_that_says_so_before_the_hooks_timeout(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;
    // A 90 s hook: Anteroom holds it 60 s, so its reply arrives before Claude Code gives up.
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use?timeout=90",
        &pre_tool_use("mcp__github__merge_pull_request", json!({"number": 7})),
    ));
    let round = server.rounds_once("hooked", 1).await.remove(0);
    assert_eq!(round.server.as_deref(), Some("github"));
    assert_eq!(round.operation_name, "merge_pull_request");
    assert_eq!(
        round.deadline,
        round.created_at + chrono::Duration::seconds(60)
    );
    server.clock.advance(chrono::Duration::seconds(61));

    let reply: PreToolUseReply = held_reply(held).await;
    let output = reply.hook_specific_output;
    assert_eq!(
        output.permission_decision, "deny",
        "nobody answering is never an allow"
    );
    assert!(
        output
            .permission_decision_reason
            .contains("Nobody answered in Anteroom within 60 s"),
        "{}",
        output.permission_decision_reason
    );
    server.stop().await;
}

async fn a_dropped_hook_request_ends_its_question_at_once(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;
    let request = post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &pre_tool_use("Write", json!({"file_path": "a.txt", "content": "hello"})),
    );
    let held = tokio::spawn(async move { request.send().await });
    let round = server.rounds_once("hooked", 1).await.remove(0);
    held.abort();
    let round = server
        .round_once(round.round_id, |round| round.failure.is_some())
        .await;
    let failure = round.failure.expect("failure");
    assert_eq!(failure.code.as_str(), "cancelled");
    assert!(
        failure.message.contains("stopped waiting"),
        "{}",
        failure.message
    );
    server.stop().await;
}

async fn hooks_need_the_sessions_token_and_refuse_bad_input_as_json(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;
    let body = pre_tool_use("Bash", json!({"command": "ls"}));
    for token in ["", "ars_not_a_token", &server.admin_key] {
        let refused = server
            .http
            .post(server.url("/hooks/claude/pre-tool-use"))
            .header("Authorization", format!("Bearer {token}"))
            .json(&body)
            .send()
            .await
            .expect("POST");
        assert_eq!(refused.status(), 401, "token {token:?}");
        let error: Value = refused.json().await.expect("JSON error");
        assert_eq!(error["error"], "unauthorized");
    }
    let long_name = post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &pre_tool_use(&"T".repeat(10_000), json!({})),
    )
    .send()
    .await
    .expect("POST");
    assert_eq!(long_name.status(), 422);
    let huge = post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &pre_tool_use("Bash", json!({"command": "x".repeat(1024 * 1024)})),
    )
    // The server refuses before reading the whole body and closes the connection; the pool must not reuse it.
    .header("connection", "close")
    .send()
    .await
    .expect("POST");
    assert_eq!(huge.status(), 413);
    assert_eq!(
        huge.json::<Value>().await.expect("JSON")["error"],
        "payload_too_large"
    );
    let wrong_method = server
        .http
        .get(server.url("/hooks/claude/elicitation"))
        .send()
        .await
        .expect("GET");
    assert_eq!(wrong_method.status(), 405);
    assert_eq!(
        wrong_method.json::<Value>().await.expect("JSON")["error"],
        "method_not_allowed"
    );
    server.stop().await;
}

async fn a_session_holds_a_bounded_number_of_hook_requests(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;
    let body = pre_tool_use("Bash", json!({"command": "make deploy"}));
    let mut held = Vec::new();
    for _ in 0..anteroom_server::api::hooks::HELD_PER_SESSION {
        let request = post(&server, &env.token, "/hooks/claude/pre-tool-use", &body);
        held.push(tokio::spawn(async move { request.send().await }));
        // Below the session's create rate (5 a second).
        tokio::time::sleep(StdDuration::from_millis(250)).await;
    }
    server
        .rounds_once("hooked", anteroom_server::api::hooks::HELD_PER_SESSION)
        .await;
    let refused = post(&server, &env.token, "/hooks/claude/pre-tool-use", &body)
        .send()
        .await
        .expect("POST");
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().get("retry-after").is_some());
    for request in held {
        request.abort();
    }
    let rounds = server
        .rounds_once("hooked", anteroom_server::api::hooks::HELD_PER_SESSION)
        .await;
    ended_by_the_callers_going(&server, &rounds).await;
    server.stop().await;
}

async fn an_mcp_servers_elicitation_is_answered_in_its_own_terms(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;
    let body = json!({
        "session_id": "4f2a9c1e",
        "hook_event_name": "Elicitation",
        "mcp_server_name": "shop",
        "message": "Where should the order ship?",
        "mode": "form",
        "requested_schema": {
            "type": "object",
            "properties": {"city": {"type": "string", "title": "City"}},
            "required": ["city"]
        },
        "elicitation_id": "el-1"
    });
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/claude/elicitation",
        &body,
    ));
    let round = server.rounds_once("hooked", 1).await.remove(0);
    assert_eq!(round.server.as_deref(), Some("shop"));
    // The form's own rules hold: an answer without the required city is refused.
    let missing = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept", "content": {}}),
        )
        .await;
    assert_eq!(missing.status(), 422);
    server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept", "content": {"city": "Lyon"}}),
        )
        .await;
    let reply: ElicitationReply = held_reply(held).await;
    let output = reply.hook_specific_output;
    assert_eq!(output.hook_event_name, "Elicitation");
    assert_eq!(output.action, "accept");
    assert_eq!(output.content, Some(json!({"city": "Lyon"})));
    server.stop().await;
}

/// `anteroom mcp-config hooks` writes hooks that work: the Claude Code entry, posted as Claude Code would post
/// it (its URL, its headers with the environment's token put in), asks the session; the Codex entry's command,
/// run by a shell as Codex runs it, does too; a second run changes nothing.
async fn installed_hooks_reach_the_session_as_written(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("installed").await;
    let dir = tempfile::tempdir().expect("temporary directory");
    let claude = dir.path().join(".claude/settings.json");
    let codex = dir.path().join(".codex/hooks.json");
    let install = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_anteroom"))
            .args([
                "mcp-config",
                "hooks",
                "--timeout",
                "120",
                "--public-url",
                &server.base,
            ])
            .arg("--codex-home")
            .arg(dir.path().join("codex-home"))
            .args([&claude, &codex])
            .output()
            .expect("anteroom mcp-config hooks")
    };
    let first = install();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&first.stderr)
            .matches("created")
            .count(),
        3,
        "both hook files and Codex's config.toml with the trust"
    );
    let again = install();
    assert_eq!(
        String::from_utf8_lossy(&again.stderr)
            .matches("unchanged")
            .count(),
        3
    );

    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&claude).expect("read")).expect("JSON");
    let hook = &settings["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!(hook["type"], "http");
    let variable = hook["allowedEnvVars"][0].as_str().expect("variable");
    assert_eq!(variable, "ANTEROOM_SESSION_TOKEN");
    let authorization = hook["headers"]["Authorization"]
        .as_str()
        .expect("header")
        .replace(&format!("${variable}"), &env.token);
    let held = hold(
        server
            .http
            .post(hook["url"].as_str().expect("url"))
            .header("Authorization", authorization)
            .timeout(StdDuration::from_secs(60))
            .json(&pre_tool_use("Bash", json!({"command": "make deploy"}))),
    );
    let round = server.rounds_once("installed", 1).await.remove(0);
    assert_eq!(round.server.as_deref(), Some("claude-code"));
    server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept"}),
        )
        .await;
    let reply: PreToolUseReply = held_reply(held).await;
    assert_eq!(reply.hook_specific_output.permission_decision, "allow");

    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(&codex).expect("read")).expect("JSON");
    let command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .expect("command")
        .to_owned();
    assert!(
        command.starts_with(&format!("{} hook", env!("CARGO_BIN_EXE_anteroom"))),
        "the binary's absolute path, not whatever `anteroom` Codex's PATH finds: {command}"
    );
    let config =
        std::fs::read_to_string(dir.path().join("codex-home/config.toml")).expect("config.toml");
    assert!(
        config.contains(&format!(
            "[hooks.state.\"{}:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:",
            std::fs::canonicalize(&codex).expect("hooks.json").display()
        )),
        "{config}"
    );
    let request_url = env.request_url.clone();
    let codex_run = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let mut hook = tokio::process::Command::new("sh")
            .args(["-c", &command])
            .env("ELICITATION_REQUEST_URL", request_url)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("sh");
        let mut stdin = hook.stdin.take().expect("stdin");
        let event = pre_tool_use("apply_patch", json!({"command": "*** Begin Patch"}));
        stdin
            .write_all(event.to_string().as_bytes())
            .await
            .expect("event");
        drop(stdin);
        hook.wait_with_output().await.expect("the hook ends")
    });
    let rounds = server.rounds_once("installed", 2).await;
    let patch = rounds.last().expect("round");
    assert_eq!(patch.server.as_deref(), Some("codex"));
    assert_eq!(patch.operation_name, "apply_patch");
    server
        .respond(
            &server.responder_key,
            patch.request_id.as_str(),
            json!({"action_type": "decline"}),
        )
        .await;
    let output = codex_run.await.expect("hook");
    assert_eq!(output.status.code(), Some(0));
    let reply: PreToolUseReply =
        serde_json::from_slice(&output.stdout).expect("the decision on stdout");
    assert_eq!(reply.hook_specific_output.permission_decision, "deny");
    server.stop().await;
}

/// rita's standing answer made from `round`: the same question in its session is accepted for an hour.
pub(crate) async fn rita_allows_it_again(
    server: &TestServer,
    round: &anteroom_store::domain::round::Round,
) -> anteroom_store::domain::standing::StandingAnswer {
    use anteroom_store::domain::standing::{NewStandingAnswer, QuestionMatch};
    server
        .store
        .create_standing_answer(NewStandingAnswer {
            created_by: "rita".to_owned(),
            session_id: Some(round.session_id.clone()),
            question: QuestionMatch::of(round).expect("a plain question"),
            action: anteroom_store::domain::round::ResponseAction::Accept,
            content: None,
            expires_at: server.store.now() + chrono::Duration::hours(1),
            use_limit: None,
            prefix: false,
        })
        .await
        .expect("rule")
}

/// "Allow this from now on": a standing answer made from an answered hook question answers the next identical
/// call of the same run at once, naming the rule and its maker, and nothing else; revoked, it answers nothing.
async fn a_standing_answer_allows_the_same_call_again_at_once(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    // A rule answers only what its maker may answer: rita is a responder.
    anteroom_testkit::browser::person(
        &server,
        "rita",
        anteroom_store::domain::access::Role::Responder,
    )
    .await;
    let env = server.session("standing").await;
    let npm_test = pre_tool_use("Bash", json!({"command": "npm test"}));
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &npm_test,
    ));
    let first = server.rounds_once("standing", 1).await.remove(0);
    server
        .respond(
            &server.responder_key,
            first.request_id.as_str(),
            json!({"action_type": "accept"}),
        )
        .await;
    let _: PreToolUseReply = held_reply(held).await;
    let rule = rita_allows_it_again(&server, &first).await;

    let again = post(&server, &env.token, "/hooks/claude/pre-tool-use", &npm_test)
        .send()
        .await
        .expect("POST");
    let reply: PreToolUseReply =
        serde_json::from_str(&again.text().await.expect("body")).expect("decision");
    assert_eq!(reply.hook_specific_output.permission_decision, "allow");
    assert_eq!(
        reply.hook_specific_output.permission_decision_reason,
        format!("Allowed by rule #{} (rita) in Anteroom.", rule.id)
    );
    let rounds = server.rounds_once("standing", 2).await;
    assert_eq!(
        rounds[1].responded_by.as_deref(),
        Some(format!("rule #{} (rita)", rule.id).as_str())
    );

    // Another command is another question: it waits for a person.
    let publish = hold(post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &pre_tool_use("Bash", json!({"command": "npm publish"})),
    ));
    let waiting = server.rounds_once("standing", 3).await.remove(2);
    assert_eq!(
        waiting.status,
        anteroom_store::domain::round::RoundStatus::Pending
    );
    publish.abort();
    ended_by_the_callers_going(&server, &[waiting]).await;

    server
        .store
        .revoke_standing_answer(rule.id, "test")
        .await
        .expect("revoke");
    let after = hold(post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use",
        &npm_test,
    ));
    let asked = server.rounds_once("standing", 4).await.remove(3);
    assert_eq!(
        asked.status,
        anteroom_store::domain::round::RoundStatus::Pending,
        "revoked: a person decides"
    );
    after.abort();
    ended_by_the_callers_going(&server, &[asked]).await;
    server.stop().await;
}

/// Claude's own multiple-choice question (`AskUserQuestion`) is a form of its questions; the person's choices
/// come back as `updatedInput` with `answers`, as Claude Code reads them.
async fn claudes_own_question_is_a_form_and_its_answers_come_back_as_updated_input(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;
    let questions = json!([
        {"question": "Which database?", "header": "DB", "multiSelect": false,
         "options": [{"label": "staging", "description": "the copy"}, {"label": "prod", "description": "live"}]},
        {"question": "Which checks?", "header": "Checks", "multiSelect": true,
         "options": [{"label": "lint", "description": ""}, {"label": "tests", "description": ""}]}
    ]);
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/claude/pre-tool-use?allow=AskUserQuestion",
        &pre_tool_use("AskUserQuestion", json!({"questions": questions})),
    ));
    let round = server.rounds_once("hooked", 1).await.remove(0);
    let refused = server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept", "content": {"q1": "neither", "q2": ["lint"]}}),
        )
        .await;
    assert_eq!(refused.status(), 422, "only the offered labels");
    server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept", "content": {"q1": "prod", "q2": ["lint", "tests"]}}),
        )
        .await;
    let reply: PreToolUseReply = held_reply(held).await;
    let output = reply.hook_specific_output;
    assert_eq!(output.permission_decision, "allow");
    let updated = output.updated_input.expect("updatedInput");
    assert_eq!(updated["questions"], questions);
    assert_eq!(
        updated["answers"],
        json!({"Which database?": "prod", "Which checks?": "lint, tests"})
    );
    server.stop().await;
}

/// An MCP server's URL elicitation through the hook: the person's consent is `accept` with no content.
async fn a_url_elicitation_is_consent_without_content(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let env = server.session("hooked").await;
    let body = json!({
        "session_id": "4f2a9c1e",
        "hook_event_name": "Elicitation",
        "mcp_server_name": "github",
        "message": "Sign in to GitHub to continue.",
        "mode": "url",
        "url": "https://github.com/login/device",
        "elicitation_id": "el-2"
    });
    let held = hold(post(
        &server,
        &env.token,
        "/hooks/claude/elicitation",
        &body,
    ));
    let round = server.rounds_once("hooked", 1).await.remove(0);
    assert_eq!(round.server.as_deref(), Some("github"));
    server
        .respond(
            &server.responder_key,
            round.request_id.as_str(),
            json!({"action_type": "accept"}),
        )
        .await;
    let reply: ElicitationReply = held_reply(held).await;
    assert_eq!(reply.hook_specific_output.action, "accept");
    assert_eq!(reply.hook_specific_output.content, None);
    server.stop().await;
}

on_both_backends!(
    a_bash_call_waits_for_a_person_whose_allow_and_note_reach_the_harness,
    a_decline_is_a_deny_and_a_read_only_tool_passes_at_once,
    nobody_answering_is_a_deny_that_says_so_before_the_hooks_timeout,
    a_dropped_hook_request_ends_its_question_at_once,
    hooks_need_the_sessions_token_and_refuse_bad_input_as_json,
    a_session_holds_a_bounded_number_of_hook_requests,
    an_mcp_servers_elicitation_is_answered_in_its_own_terms,
    installed_hooks_reach_the_session_as_written,
    a_standing_answer_allows_the_same_call_again_at_once,
    claudes_own_question_is_a_form_and_its_answers_come_back_as_updated_input,
    a_url_elicitation_is_consent_without_content,
);
