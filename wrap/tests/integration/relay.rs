//! The relay between a harness and a real stdio server process, against a real Anteroom on SQLite and
//! PostgreSQL: the server's question reaches a person and their answer reaches the tool's result; the harness
//! never sees the question; an unanswered question is an honest error, never a fake decline.

use std::time::Duration as StdDuration;

use anteroom_domain::{ids::OwnerId, round::RoundStatus};
use anteroom_testkit::{Backend, TestServer, on_both_backends};
use anteroom_wrap::{
    anteroom::Anteroom,
    relay::{Wrapped, run},
};
use chrono::Duration;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// The harness's ends of the relay: what it writes, and the lines it reads.
struct Harness {
    to_relay: DuplexStream,
    from_relay: Lines<BufReader<DuplexStream>>,
    relay: tokio::task::JoinHandle<std::io::Result<Option<i32>>>,
}

impl Harness {
    async fn start(server: &TestServer) -> Self {
        let env = server.session("s1").await;
        Self::start_at(&env.request_url)
    }

    /// A relay whose Anteroom is at `request_url` (which may not answer).
    fn start_at(request_url: &str) -> Self {
        let anteroom = Anteroom::new(request_url, OwnerId::parse("wrap-test").expect("owner"))
            .expect("capability URL");
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/eliciting_server.py"
        );
        let wrapped = Wrapped {
            program: "python3".into(),
            args: vec![fixture.into()],
            server: Some("deployer".into()),
            progress_every: StdDuration::from_millis(100),
        };
        let (to_relay, relay_in) = tokio::io::duplex(64 * 1024);
        let (relay_out, from_relay) = tokio::io::duplex(64 * 1024);
        let relay = tokio::spawn(run(
            wrapped,
            anteroom,
            relay_in,
            relay_out,
            std::future::pending(),
        ));
        Self {
            to_relay,
            from_relay: BufReader::new(from_relay).lines(),
            relay,
        }
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.to_relay
            .write_all(line.as_bytes())
            .await
            .expect("write");
    }

    /// The next line the harness reads, within 30 s.
    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(StdDuration::from_secs(30), self.from_relay.next_line())
            .await
            .expect("a line within 30 s")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }

    async fn initialize(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "harness", "version": "1"}}}),
        )
        .await;
        assert_eq!(self.read().await["id"], 0);
    }

    async fn initialize_and_call(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "harness", "version": "1"}}}),
        )
        .await;
        let initialized = self.read().await;
        assert_eq!(initialized["id"], 0);
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "deploy", "arguments": {}}}))
            .await;
    }

    /// The next line that is not a progress note.
    async fn read_past_progress(&mut self) -> Value {
        loop {
            let line = self.read().await;
            if line["method"] != "notifications/progress" {
                return line;
            }
        }
    }

    async fn close(self) {
        drop(self.to_relay);
        let exited = tokio::time::timeout(StdDuration::from_secs(5), self.relay)
            .await
            .expect("the relay ends when the harness closes");
        assert!(exited.is_ok());
    }
}

/// The one question the wrapped server asked, once Anteroom has it.
async fn the_question(server: &TestServer) -> String {
    let round = server.rounds_once("s1", 1).await.remove(0);
    assert_eq!(round.server.as_deref(), Some("deployer"));
    round.round_id.to_string()
}

async fn a_persons_answer_reaches_the_tool_result(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness.initialize_and_call().await;
    let round_id = the_question(&server).await;
    let asked = server
        .store
        .get_round(anteroom_domain::ids::RoundId::parse(&round_id).expect("id"))
        .await
        .expect("round");
    assert_eq!(
        asked.operation_name, "deploy",
        "named by the tool being called"
    );
    let answered = server
        .respond(
            &server.responder_key,
            &round_id,
            json!({"action_type": "accept", "content": {"env": "prod"}}),
        )
        .await;
    assert_eq!(answered.status(), 200);

    let result = harness.read().await;
    assert_eq!(
        result["id"], 1,
        "the tool's result, not the server's question: {result}"
    );
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    let reply: Value = serde_json::from_str(text).expect("the server's view of the answer");
    assert_eq!(reply["id"], 100);
    assert_eq!(
        reply["result"],
        json!({"action": "accept", "content": {"env": "prod"}})
    );
    // The reply goes to the server first; delivered and resolved follow it.
    let id = anteroom_domain::ids::RoundId::parse(&round_id).expect("id");
    settles(&server, id, RoundStatus::Resolved).await;
    harness.close().await;
    server.stop().await;
}

async fn an_unanswered_question_is_an_honest_error(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness.initialize_and_call().await;
    let round_id = the_question(&server).await;
    // Once the wrapper works the round (it holds the lease), nobody answers and its time runs out.
    let id = anteroom_domain::ids::RoundId::parse(&round_id).expect("id");
    server.round_once(id, |round| round.lease.is_some()).await;
    server.clock.advance(Duration::minutes(61));

    let result = harness.read().await;
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    let reply: Value = serde_json::from_str(text).expect("the server's view of the answer");
    assert!(reply.get("result").is_none(), "no fake decline: {reply}");
    let message = reply["error"]["message"]
        .as_str()
        .expect("an error message");
    assert!(message.contains("expired"), "{message}");
    harness.close().await;
    server.stop().await;
}

async fn a_withdrawn_question_ends_cancelled_and_the_call_goes_on(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness
        .send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "harness", "version": "1"}}}),
        )
        .await;
    harness.read().await;
    harness
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "withdraw", "arguments": {}}}))
        .await;
    let result = harness.read().await;
    assert_eq!(result["id"], 1, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "withdrawn");
    let round_id = the_question(&server).await;
    let id = anteroom_domain::ids::RoundId::parse(&round_id).expect("id");
    let ended = settles(&server, id, RoundStatus::Failed).await;
    let failure = ended.failure.expect("the withdrawn round ended");
    assert_eq!(failure.code.as_str(), "cancelled");
    assert!(failure.message.contains("withdrew"), "{}", failure.message);
    harness.close().await;
    server.stop().await;
}

async fn a_waiting_call_hears_progress_while_a_person_decides(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness.initialize().await;
    harness
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "deploy", "arguments": {}, "_meta": {"progressToken": "call-1"}}}))
        .await;
    let round_id = the_question(&server).await;
    let mut progress = Vec::new();
    while progress.len() < 3 {
        let note = harness.read().await;
        assert_eq!(note["method"], "notifications/progress", "{note}");
        assert_eq!(note["params"]["progressToken"], "call-1");
        progress.push(note["params"]["progress"].as_u64().expect("progress"));
    }
    assert!(
        progress.windows(2).all(|pair| pair[0] < pair[1]),
        "{progress:?}"
    );
    server
        .respond(
            &server.responder_key,
            &round_id,
            json!({"action_type": "accept", "content": {"env": "dev"}}),
        )
        .await;
    loop {
        let line = harness.read().await;
        if line["id"] == 1 {
            let text = line["result"]["content"][0]["text"].as_str().expect("text");
            let reply: Value = serde_json::from_str(text).expect("the server's view");
            assert_eq!(reply["result"]["content"]["env"], "dev");
            // The server's own question carried a progress token: it heard progress too, increasing.
            let heard: Vec<u64> = reply["progress_heard"]
                .as_array()
                .expect("progress the server heard")
                .iter()
                .filter_map(Value::as_u64)
                .collect();
            assert!(heard.len() >= 3, "{heard:?}");
            assert!(heard.windows(2).all(|pair| pair[0] < pair[1]), "{heard:?}");
            break;
        }
        assert_eq!(line["method"], "notifications/progress");
    }
    harness.close().await;
    server.stop().await;
}

/// A 2026-07-28 `tools/call`: the request carries the protocol version and capabilities in `_meta`.
fn modern_call(id: Value, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "progressToken": "p-1"}}})
}

/// The rounds of session `s1` once there are `count`, oldest first.
async fn rounds_asked(server: &TestServer, count: usize) -> Vec<anteroom_domain::round::Round> {
    server.rounds_once("s1", count).await
}

/// Waits for round `id` to reach `status`.
async fn settles(
    server: &TestServer,
    id: anteroom_domain::ids::RoundId,
    status: RoundStatus,
) -> anteroom_domain::round::Round {
    server.round_once(id, |round| round.status == status).await
}

/// The tool result's text, read as the JSON the fixture writes there.
fn reported(result: &Value) -> Value {
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {result}"));
    serde_json::from_str(text).expect("the server's report")
}

async fn a_modern_call_is_one_round_answered_per_request(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness.send(modern_call(json!("h-7"), "plan")).await;
    let round = rounds_asked(&server, 1).await.remove(0);
    assert_eq!(
        round.requests.len(),
        2,
        "one round for both of the server's requests"
    );
    assert_eq!(round.request_state.as_deref(), Some("state-1+/=opaque"));
    assert_eq!((round.round_index, round.round_limit), (0, 10));
    assert_eq!(round.operation_name, "plan");
    let answered = server
        .respond_each(
            &server.responder_key,
            &round.round_id.to_string(),
            json!({"env": {"action": "accept", "content": {"env": "prod"}},
                   "notify": {"action": "decline"}}),
        )
        .await;
    assert_eq!(answered.status(), 200);

    let result = harness.read_past_progress().await;
    assert_eq!(result["id"], "h-7", "the harness's own id: {result}");
    let report = reported(&result);
    assert_eq!(
        report["inputResponses"],
        json!({"env": {"action": "accept", "content": {"env": "prod"}}, "notify": {"action": "decline"}})
    );
    assert_eq!(report["requestState"], "state-1+/=opaque", "echoed exactly");
    let retried = report["retried_id"].as_str().expect("a string id");
    assert!(
        retried.starts_with("anteroom-wrap-"),
        "the wrapper's own id: {retried}"
    );
    settles(&server, round.round_id, RoundStatus::Resolved).await;
    harness.close().await;
    server.stop().await;
}

async fn concurrent_calls_get_their_own_rounds_and_answers(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness.send(modern_call(json!(1), "plan")).await;
    harness.send(modern_call(json!(2), "plan")).await;
    let rounds = rounds_asked(&server, 2).await;
    assert_ne!(
        rounds[0].logical_operation_id,
        rounds[1].logical_operation_id
    );
    for (round, env) in rounds.iter().zip(["first", "second"]) {
        let answered = server
            .respond_each(
                &server.responder_key,
                &round.round_id.to_string(),
                json!({"env": {"action": "accept", "content": {"env": env}},
                       "notify": {"action": "cancel"}}),
            )
            .await;
        assert_eq!(answered.status(), 200);
    }
    let mut by_call = std::collections::BTreeMap::new();
    while by_call.len() < 2 {
        let result = harness.read_past_progress().await;
        let report = reported(&result);
        by_call.insert(
            result["id"].to_string(),
            report["inputResponses"]["env"]["content"]["env"].clone(),
        );
    }
    // Each call got its own round's answer, whichever round each call opened.
    let mut answers: Vec<String> = by_call.values().map(ToString::to_string).collect();
    answers.sort();
    assert_eq!(answers, ["\"first\"", "\"second\""]);
    harness.close().await;
    server.stop().await;
}

/// The fixture's `sign_in` called (call id 5): it needs a URL visited; the person answers `action`.
async fn sign_in_answered(
    server: &TestServer,
    action: &str,
) -> (Harness, anteroom_domain::round::Round) {
    let mut harness = Harness::start(server).await;
    harness.initialize().await;
    harness
        .send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "sign_in", "arguments": {}}}))
        .await;
    let round = rounds_asked(server, 1).await.remove(0);
    let answered = server
        .respond(
            &server.responder_key,
            &round.round_id.to_string(),
            json!({"action_type": action}),
        )
        .await;
    assert_eq!(answered.status(), 200);
    (harness, round)
}

async fn a_url_consent_lets_the_call_be_retried(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (mut harness, round) = sign_in_answered(&server, "accept").await;
    // The completion notice came before the result: had it been passed on, it would be read first.
    let result = harness.read().await;
    assert_eq!(result["id"], 5, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "signed in");
    settles(&server, round.round_id, RoundStatus::Resolved).await;
    harness.close().await;
    server.stop().await;
}

async fn a_declined_url_ends_the_call_with_an_honest_error(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let (mut harness, round) = sign_in_answered(&server, "decline").await;
    let result = harness.read().await;
    assert_eq!(result["id"], 5, "{result}");
    let message = result["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error: {result}"));
    assert!(message.contains("declined the URL"), "{message}");
    assert!(
        message.contains("Sign in first"),
        "the server's own words: {message}"
    );
    settles(&server, round.round_id, RoundStatus::Resolved).await;
    harness.close().await;
    server.stop().await;
}

async fn a_server_asking_too_much_at_once_is_told_to_wait(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    let limit = anteroom_wrap::relay::MAX_OPEN_QUESTIONS;
    for id in 0..=limit {
        harness.send(modern_call(json!(id), "plan")).await;
    }
    let refused = harness.read_past_progress().await;
    assert_eq!(refused["id"], limit, "the one over the limit: {refused}");
    let message = refused["error"]["message"].as_str().expect("an error");
    assert!(message.contains("questions waiting"), "{message}");
    assert_eq!(rounds_asked(&server, limit).await.len(), limit);
    harness.close().await;
    server.stop().await;
}

async fn a_cancelled_call_withdraws_its_question(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness.send(modern_call(json!(3), "plan")).await;
    let round = rounds_asked(&server, 1).await.remove(0);
    harness
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 3, "reason": "the user pressed Esc"}}),
        )
        .await;
    let ended = settles(&server, round.round_id, RoundStatus::Failed).await;
    let failure = ended.failure.expect("a failure");
    assert_eq!(failure.code.as_str(), "cancelled");
    assert!(
        failure.message.contains("harness cancelled"),
        "{}",
        failure.message
    );
    harness.close().await;
    server.stop().await;
}

async fn a_wrapper_that_stops_ends_its_open_question(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness.send(modern_call(json!(1), "plan")).await;
    let round = rounds_asked(&server, 1).await.remove(0);
    // The question is being worked (its lease is held) when the harness goes away.
    server
        .round_once(round.round_id, |round| round.lease.is_some())
        .await;
    harness.close().await;
    let ended = server.store.get_round(round.round_id).await.expect("round");
    assert_eq!(
        ended.status,
        RoundStatus::Failed,
        "not left open until its deadline"
    );
    let failure = ended.failure.expect("a failure");
    assert_eq!(failure.code.as_str(), "wrapper_stopped");
    assert!(failure.message.contains("stopped"), "{}", failure.message);
    server.stop().await;
}

/// A raw wire driver: what the wrapper does not handle passes byte for byte in both directions — odd spacing,
/// key order, escapes, lines that are not JSON, notifications, responses to the server's own requests.
async fn everything_else_passes_byte_for_byte(db: Backend) {
    let Some(server) = TestServer::start(db).await else {
        return;
    };
    let mut harness = Harness::start(&server).await;
    harness.initialize().await;
    let sent = [
        r#"{"method" : "tools/list",   "id":9 ,"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#,
        r#"{"jsonrpc":"2.0","id":"server-7","result":{"roots":[{"uri":"file:///wérk"}]}}"#,
        "not JSON at all {",
        r#"[{"jsonrpc":"2.0","method":"a batch"}]"#,
        r#"{"jsonrpc":"2.0","id":10,"method":"prompts/list","params":{"cursor":null,"_meta":{"x":1}}}"#,
    ];
    for line in sent {
        harness
            .to_relay
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
    }
    let mut answered = Vec::new();
    while answered.len() < 2 {
        answered.push(harness.read().await);
    }
    assert_eq!(answered[0]["id"], 9);
    assert_eq!(answered[1]["id"], 10);
    harness
        .send(json!({"jsonrpc": "2.0", "id": 11, "method": "debug/received"}))
        .await;
    let received = harness.read().await;
    let lines: Vec<&str> = received["result"]["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // The first line is the initialize, with elicitation declared; every other line is exactly as sent.
    assert!(lines[0].contains("\"elicitation\""), "{}", lines[0]);
    assert_eq!(&lines[1..], &sent[..]);

    harness
        .send(json!({"jsonrpc": "2.0", "id": 12, "method": "debug/notify"}))
        .await;
    let raw = tokio::time::timeout(StdDuration::from_secs(30), harness.from_relay.next_line())
        .await
        .expect("a line")
        .expect("read")
        .expect("a line");
    assert_eq!(
        raw,
        r#"{"params":{"data":"d\u00e9j\u00e0 vu  ✓","level":"info"} ,"method":"notifications/message","jsonrpc":"2.0"}"#
    );
    assert_eq!(harness.read().await["id"], 12);
    harness.close().await;
    server.stop().await;
}

/// Anteroom is down: the harness hears an honest error at once, never a decline, and nothing hangs.
#[tokio::test]
async fn an_unreachable_anteroom_is_an_honest_error() {
    // Port 9 (discard) has no listener here: the connection is refused at once.
    let mut harness = Harness::start_at("http://127.0.0.1:9/api/v1/s/ars_token/elicitations");
    harness.send(modern_call(json!(1), "plan")).await;
    let result = harness.read_past_progress().await;
    assert_eq!(result["id"], 1);
    let message = result["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error: {result}"));
    assert!(message.contains("could not be reached"), "{message}");
    assert!(!message.contains("ars_token"), "{message}");
    harness.close().await;
}

on_both_backends!(
    a_declined_url_ends_the_call_with_an_honest_error,
    a_server_asking_too_much_at_once_is_told_to_wait,
    everything_else_passes_byte_for_byte,
    a_wrapper_that_stops_ends_its_open_question,
    a_modern_call_is_one_round_answered_per_request,
    concurrent_calls_get_their_own_rounds_and_answers,
    a_url_consent_lets_the_call_be_retried,
    a_cancelled_call_withdraws_its_question,
    a_persons_answer_reaches_the_tool_result,
    an_unanswered_question_is_an_honest_error,
    a_withdrawn_question_ends_cancelled_and_the_call_goes_on,
    a_waiting_call_hears_progress_while_a_person_decides,
);
