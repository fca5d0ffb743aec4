//! Anteroom's own MCP tools at `/mcp`, driven by the official MCP client (`@modelcontextprotocol/client` 2.4 over
//! Streamable HTTP, both protocol eras) against a real server on SQLite and PostgreSQL: the queue listed and read,
//! a question answered for a polling producer, refusals as tool errors, and `ask_person` answered in the browser.

use std::{process::Stdio, time::Duration as StdDuration};

use anteroom_domain::access::Role;
use anteroom_testkit::{
    Backend, TestServer,
    browser::{browser, page, person, sign_in},
    pulsemcp::Outcome,
    requests,
};
use reqwest::header;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader, Lines},
    process::{Child, ChildStdout, Command},
};

/// The official client, running `calls` against `/mcp` with `key`; its lines as they come.
struct Agent {
    process: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Agent {
    fn start(server: &TestServer, key: &str, era: &str, calls: Value) -> Self {
        let folder = std::env::var("ANTEROOM_TEST_MCP_SDKS").expect(
            "built for the SDK tests: run them with ANTEROOM_TEST_MCP_SDKS set (cargo xtask test)",
        );
        let mut process = Command::new("node")
            .arg(format!("{folder}/mcp_client.mjs"))
            .arg(server.url("/mcp"))
            .arg(key)
            .arg(era)
            .arg(calls.to_string())
            .current_dir(&folder)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run the MCP client");
        let lines = BufReader::new(process.stdout.take().expect("stdout")).lines();
        Self { process, lines }
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(StdDuration::from_secs(60), self.lines.next_line())
            .await
            .expect("the client prints within 60 s")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }
}

/// The structured content of a tool result, and whether it was a tool error.
fn outcome(line: &Value) -> (&Value, bool) {
    let result = &line["result"];
    assert!(
        result.is_object(),
        "a tool result, not a protocol error: {line}"
    );
    (
        &result["structuredContent"],
        result["isError"].as_bool().unwrap_or(false),
    )
}

async fn the_queue_is_worked_through_mcp(db: Backend, era: &str) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (producer, request_id) = requests::ask(&server, "s1", "mcp-q1").await;
    let mut agent = Agent::start(
        &server,
        &server.responder_key,
        era,
        json!([
            {"tool": "list_pending_elicitations", "arguments": {}},
            {"tool": "get_elicitation", "arguments": {"request_id": request_id}},
            {"tool": "respond_to_elicitation", "arguments": {"request_id": request_id, "action_type": "accept", "content": {"env": "staging"}}},
            {"tool": "respond_to_elicitation", "arguments": {"request_id": request_id, "action_type": "accept", "content": {"env": "prod"}}},
            {"tool": "respond_to_elicitation", "arguments": {"request_id": request_id, "action_type": "decline"}},
            {"tool": "ask_person", "arguments": {"session_id": "s1", "message": "May I?"}}
        ]),
    );
    let tools = agent.next().await;
    for tool in [
        "list_pending_elicitations",
        "get_elicitation",
        "respond_to_elicitation",
        "ask_person",
    ] {
        assert!(
            tools["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .any(|t| t == tool),
            "{tools}"
        );
    }

    let listed = agent.next().await;
    let (listed, failed) = outcome(&listed);
    assert!(!failed);
    let questions = listed["questions"].as_array().expect("questions");
    assert_eq!(questions.len(), 1, "{listed}");
    assert_eq!(questions[0]["request_id"], request_id.as_str());
    assert_eq!(questions[0]["session_id"], "s1");
    assert_eq!(questions[0]["tool"], "deploy");
    assert_eq!(questions[0]["requests"][0]["message"], "Which environment?");
    assert!(questions[0]["requests"][0]["requested_schema"].is_object());

    let read = agent.next().await;
    assert_eq!(outcome(&read).0["outcome"]["state"], "waiting");

    let bad = agent.next().await;
    let (bad, failed) = outcome(&bad);
    assert!(failed, "a value outside the enum is a tool error: {bad}");
    assert!(
        bad["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{bad}"
    );

    let good = agent.next().await;
    let (good, failed) = outcome(&good);
    assert!(!failed, "{good}");
    assert_eq!(good["action"], "accept");
    assert!(
        good["answered_by"]
            .as_str()
            .is_some_and(|by| by.contains("responder")),
        "the key's name is who answered: {good}"
    );
    assert_eq!(
        producer.poll(&request_id).await.expect("poll"),
        Outcome::Accept(Some(json!({"env": "prod"}))),
        "the polling producer gets the answer"
    );

    let late = agent.next().await;
    let (late, failed) = outcome(&late);
    assert!(failed, "first answer wins: {late}");

    let asked = agent.next().await;
    let (asked, failed) = outcome(&asked);
    assert!(failed, "a responder may not ask: {asked}");
    assert!(
        asked["error"].as_str().is_some_and(|e| e.contains("role")),
        "{asked}"
    );
    server.stop().await;
}

async fn a_viewer_may_read_but_not_answer(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (producer, request_id) = requests::ask(&server, "s1", "mcp-q2").await;
    let mut agent = Agent::start(
        &server,
        &server.viewer_key,
        "legacy",
        json!([
            {"tool": "get_elicitation", "arguments": {"request_id": request_id}},
            {"tool": "respond_to_elicitation", "arguments": {"request_id": request_id, "action_type": "decline"}}
        ]),
    );
    agent.next().await;
    let read = agent.next().await;
    assert!(!outcome(&read).1);
    let refused = agent.next().await;
    let (refused, failed) = outcome(&refused);
    assert!(failed);
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("viewer")),
        "{refused}"
    );
    assert_eq!(
        producer.poll(&request_id).await.expect("poll"),
        Outcome::Pending
    );
    server.stop().await;
}

async fn a_key_not_named_by_the_session_may_not_answer(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (producer, request_id) = requests::ask(&server, "s-team", "mcp-team").await;
    let set = server
        .http
        .put(server.url("/api/v1/sessions/s-team/settings"))
        .bearer_auth(&server.admin_key)
        .json(&json!({"responders": ["user:rita"]}))
        .send()
        .await
        .expect("PUT settings");
    assert!(set.status().is_success());
    let mut agent = Agent::start(
        &server,
        &server.responder_key,
        "modern",
        json!([
            {"tool": "respond_to_elicitation", "arguments": {"request_id": request_id, "action_type": "decline"}}
        ]),
    );
    agent.next().await;
    let refused = agent.next().await;
    let (refused, failed) = outcome(&refused);
    assert!(failed);
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("This question is for rita")),
        "{refused}"
    );
    assert_eq!(
        producer.poll(&request_id).await.expect("poll"),
        Outcome::Pending
    );
    server.stop().await;
}

async fn ask_person_is_answered_in_the_browser(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    server.session("s1").await;
    person(&server, "rita", Role::Responder).await;
    let mut agent = Agent::start(
        &server,
        &server.admin_key,
        "modern",
        json!([{"tool": "ask_person", "arguments": {
            "session_id": "s1", "message": "Ship it?",
            "requested_schema": {"type": "object", "properties": {"when": {"type": "string"}}, "required": ["when"]}
        }}]),
    );
    agent.next().await;
    let round = server.rounds_once("s1", 1).await.remove(0);
    let rita = sign_in(&server, "rita").await;
    let (_, html) = page(&server, "/sessions/s1", &rita).await;
    assert!(html.contains("Ship it?"), "the banner shows the question");
    let csrf = {
        let marker = "name=\"csrf\" value=\"";
        let start = html.find(marker).expect("csrf") + marker.len();
        html[start..].split('"').next().expect("value").to_owned()
    };
    let round_id = round.round_id.to_string();
    let posted = browser()
        .post(server.url("/sessions/s1/answer"))
        .header(header::COOKIE, &rita)
        .form(&[
            ("round", round_id.as_str()),
            ("csrf", csrf.as_str()),
            ("attempt", "mcp-1"),
            ("action", "accept"),
            ("answer/when", "now"),
        ])
        .send()
        .await
        .expect("POST answer");
    assert!(posted.status().is_redirection(), "{}", posted.status());
    let answered = agent.next().await;
    let (answered, failed) = outcome(&answered);
    assert!(!failed, "{answered}");
    assert_eq!(answered["action"], "accept");
    assert_eq!(answered["content"], json!({"when": "now"}));
    assert_eq!(answered["answered_by"], "rita");
    server.stop().await;
}

/// An agent that stops waiting (its connection gone) leaves no question anyone could answer for nothing.
async fn ask_person_abandoned_ends_its_question(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    server.session("s1").await;
    let mut agent = Agent::start(
        &server,
        &server.admin_key,
        "modern",
        json!([{"tool": "ask_person", "arguments": {"session_id": "s1", "message": "Still there?"}}]),
    );
    agent.next().await;
    let asked = server.rounds_once("s1", 1).await.remove(0);
    // The question is being waited for: its lease is held.
    let asked = server
        .round_once(asked.round_id, |round| round.lease.is_some())
        .await;
    agent.process.kill().await.expect("kill the agent");
    let ended = server
        .round_once(asked.round_id, |round| {
            round.status == anteroom_domain::round::RoundStatus::Failed
        })
        .await;
    let failure = ended.failure.expect("the abandoned question ended");
    assert_eq!(failure.code.as_str(), "cancelled");
    assert!(
        failure.message.contains("stopped waiting"),
        "{}",
        failure.message
    );
    server.stop().await;
}

async fn the_queue_is_worked_through_mcp_legacy(db: Backend) {
    the_queue_is_worked_through_mcp(db, "legacy").await;
}

async fn the_queue_is_worked_through_mcp_modern(db: Backend) {
    the_queue_is_worked_through_mcp(db, "modern").await;
}

/// `/mcp` without an API key is refused before any tool runs.
#[tokio::test]
async fn mcp_needs_an_api_key() {
    let Some(server) = TestServer::start(Backend::Sqlite).await else {
        return;
    };
    let reply = server
        .http
        .post(server.url("/mcp"))
        .header(header::ACCEPT, "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("POST /mcp");
    assert_eq!(reply.status(), 401);
    assert_eq!(reply.headers()["www-authenticate"], "Bearer");
    let wrong = server
        .http
        .post(server.url("/mcp"))
        .bearer_auth("ark_not_a_key")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("POST /mcp");
    assert_eq!(wrong.status(), 401);
    assert_eq!(
        wrong.headers()["www-authenticate"],
        "Bearer",
        "every refused key says how to authenticate"
    );
    server.stop().await;
}

/// An MCP session answers only the API key that opened it: another key using its id is told there is no such
/// session, and may not end it either.
#[tokio::test]
async fn an_mcp_session_belongs_to_the_key_that_opened_it() {
    let Some(server) = TestServer::start(Backend::Sqlite).await else {
        return;
    };
    let post = |key: &str, session: Option<&str>, body: Value| {
        let mut request = server
            .http
            .post(server.url("/mcp"))
            .bearer_auth(key)
            .header(header::ACCEPT, "application/json, text/event-stream")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let opened = post(
        &server.admin_key,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "binding-test", "version": "1"}}}),
    )
    .await
    .expect("initialize");
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("a session id")
        .to_owned();
    let initialized = post(
        &server.admin_key,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .expect("initialized");
    assert!(
        initialized.status().is_success(),
        "{}",
        initialized.status()
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let other = post(&server.responder_key, Some(&session), list.clone())
        .await
        .expect("another key");
    assert_eq!(other.status(), 404);
    assert_eq!(
        other.json::<Value>().await.expect("JSON")["error"],
        "not_found"
    );
    let own = post(&server.admin_key, Some(&session), list.clone())
        .await
        .expect("its own key");
    assert_eq!(own.status(), 200);
    assert!(own.text().await.expect("body").contains("ask_person"));
    let delete = |key: &str| {
        server
            .http
            .delete(server.url("/mcp"))
            .bearer_auth(key)
            .header("mcp-session-id", &session)
            .send()
    };
    assert_eq!(
        delete(&server.responder_key)
            .await
            .expect("DELETE")
            .status(),
        404,
        "another key cannot end it"
    );
    assert!(
        delete(&server.admin_key)
            .await
            .expect("DELETE")
            .status()
            .is_success()
    );
    let after = post(&server.admin_key, Some(&session), list)
        .await
        .expect("after the end");
    assert_eq!(after.status(), 404);
    server.stop().await;
}

anteroom_testkit::on_both_backends_with_mcp_sdks!(
    the_queue_is_worked_through_mcp_legacy,
    the_queue_is_worked_through_mcp_modern,
    a_viewer_may_read_but_not_answer,
    a_key_not_named_by_the_session_may_not_answer,
    ask_person_is_answered_in_the_browser,
    ask_person_abandoned_ends_its_question,
);
