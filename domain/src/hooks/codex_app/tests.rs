use std::time::Duration;

use serde_json::json;

use super::*;
use crate::hooks::question::FOR_SESSION;
use crate::{
    hooks::{HOOK_KEY, PERMISSION_KEY, question::Asker},
    outward::{OutwardAnswer, PollAction},
    round::ElicitationRequest,
};

/// Requests as the real Codex 0.171 app server sent them (`server/tests/suite/codex_app.rs`).
fn command_request() -> AppServerRequest {
    AppServerRequest {
        method: COMMAND_APPROVAL.to_owned(),
        params: json!({"kind": "command", "threadId": "01a249c3-d352-7893-b2e7-152cbc67856e",
            "turnId": "01a249c3-d3b5", "itemId": "call_1", "startedAtMs": 1, "environmentId": "local",
            "command": "/bin/bash -lc 'touch made.txt'", "cwd": "/tmp/work",
            "commandActions": [{"type": "unknown", "command": "touch made.txt"}],
            "proposedExecpolicyAmendment": ["touch", "made.txt"],
            "availableDecisions": ["accept", {"acceptWithExecpolicyAmendment":
                {"execpolicy_amendment": ["touch", "made.txt"]}}, "cancel"]}),
        item: None,
    }
}

fn file_change_request() -> AppServerRequest {
    AppServerRequest {
        method: FILE_CHANGE_APPROVAL.to_owned(),
        params: json!({"threadId": "01a249c4-6bc7", "turnId": "01a249c4-6c2e", "itemId": "call_p",
            "startedAtMs": 1, "reason": null, "grantRoot": null}),
        item: Some(json!({"type": "fileChange", "id": "call_p", "changes": [
            {"path": "/tmp/work/notes.txt", "kind": {"type": "add"}, "diff": "hello\n```\nsay yes\n"},
            {"path": "/tmp/work/prod.env", "kind": {"type": "update", "move_path": null},
             "diff": "@@ -1 +1 @@\n-DB=staging\n+DB=prod\n"}], "status": "inProgress"})),
    }
}

fn answer(action: PollAction, content: Value, failure: Option<&str>) -> OutwardAnswer {
    OutwardAnswer {
        action,
        content: content.as_object().cloned(),
        failure_code: failure.map(str::to_owned),
        reason: None,
    }
}

fn reply_to(request: &AppServerRequest, answer: &OutwardAnswer) -> CodexReply {
    CodexAsk::read(request)
        .expect("read")
        .reply(answer, "rita", Duration::from_secs(570))
}

#[test]
fn a_command_is_asked_as_code_in_its_folder_and_answered_as_codex_reads_it() {
    let ask = CodexAsk::read(&command_request()).expect("read");
    let question = ask.question().expect("question");
    assert_eq!(question.key, PERMISSION_KEY);
    assert_eq!(question.asker.server, "codex");
    let message = question.request.message();
    assert!(
        message.starts_with("Codex thread 01a249c3 wants to run a command in `/tmp/work`:"),
        "{message}"
    );
    assert!(
        message.contains("```sh\n$ /bin/bash -lc 'touch made.txt'\n```"),
        "{message}"
    );
    // Codex did not offer acceptForSession: the form does not offer it either.
    let ElicitationRequest::Form {
        requested_schema, ..
    } = &question.request
    else {
        panic!("a form");
    };
    assert!(requested_schema["properties"].get(FOR_SESSION).is_none());

    let accepted = reply_to(
        &command_request(),
        &answer(PollAction::Accept, json!({}), None),
    );
    assert_eq!(accepted.result, json!({"decision": "accept"}));
    assert_eq!(accepted.steer, None);
    let noted = reply_to(
        &command_request(),
        &answer(
            PollAction::Accept,
            json!({"reason": "once", FOR_SESSION: true}),
            None,
        ),
    );
    assert_eq!(
        noted.result,
        json!({"decision": "accept"}),
        "not offered, not given"
    );
    assert_eq!(
        noted.steer.as_deref(),
        Some("Anteroom: allowed by rita: once")
    );

    let mut declined = answer(PollAction::Decline, json!({}), None);
    declined.reason = Some("not on a Friday".to_owned());
    let declined = reply_to(&command_request(), &declined);
    assert_eq!(declined.result, json!({"decision": "decline"}));
    assert_eq!(
        declined.steer.as_deref(),
        Some("Anteroom: rita declined the command: not on a Friday")
    );
    let dismissed = reply_to(
        &command_request(),
        &answer(PollAction::Cancel, json!({}), None),
    );
    assert_eq!(dismissed.result, json!({"decision": "cancel"}));
}

#[test]
fn nobody_answering_is_a_decline_that_says_so_never_an_accept() {
    for request in [command_request(), file_change_request()] {
        let expired = reply_to(&request, &answer(PollAction::Expired, json!({}), None));
        assert_eq!(expired.result, json!({"decision": "decline"}));
        assert!(
            expired.steer.as_deref().is_some_and(|steer| steer
                == "Anteroom: nobody answered within 10 min, so the command was not allowed."
                || steer
                    == "Anteroom: nobody answered within 10 min, so the change was not allowed."),
            "{expired:?}"
        );
        let failed = reply_to(
            &request,
            &answer(PollAction::Expired, json!({}), Some("nobody_available")),
        );
        assert_eq!(failed.result, json!({"decision": "decline"}));
        assert!(
            failed
                .steer
                .is_some_and(|steer| steer.contains("(nobody_available)"))
        );
    }
    let elicitation = AppServerRequest {
        method: ELICITATION.to_owned(),
        params: json!({"threadId": "t1", "serverName": "deployer", "mode": "form",
            "message": "Which environment?", "requestedSchema": {"type": "object", "properties": {}}}),
        item: None,
    };
    let expired = reply_to(&elicitation, &answer(PollAction::Expired, json!({}), None));
    assert_eq!(expired.result["action"], "cancel");
}

#[test]
fn a_change_is_shown_as_its_diff_and_cannot_close_its_block() {
    let ask = CodexAsk::read(&file_change_request()).expect("read");
    let question = ask.question().expect("question");
    let message = question.request.message();
    assert!(
        message.starts_with("Codex thread 01a249c4 wants to change 2 files:"),
        "{message}"
    );
    assert!(
        message.contains("add `/tmp/work/notes.txt`:\n```diff\n+hello\n+```\n+say yes\n```"),
        "{message}"
    );
    assert!(message.contains(
        "update `/tmp/work/prod.env`:\n```diff\n@@ -1 +1 @@\n-DB=staging\n+DB=prod\n```"
    ));
    let accepted = reply_to(
        &file_change_request(),
        &answer(PollAction::Accept, json!({FOR_SESSION: true}), None),
    );
    assert_eq!(accepted.result, json!({"decision": "acceptForSession"}));
    // An item of another call is not shown as this one's change.
    let mut other = file_change_request();
    other.item =
        Some(json!({"id": "call_other", "changes": [{"path": "/etc/passwd", "diff": "x"}]}));
    let message = CodexAsk::read(&other)
        .expect("read")
        .question()
        .expect("question");
    assert!(
        message
            .request
            .message()
            .contains("Codex did not say which files")
    );
}

#[test]
fn an_elicitation_keeps_its_form_its_server_and_its_meta() {
    let request = AppServerRequest {
        method: ELICITATION.to_owned(),
        params: json!({"threadId": "t1", "turnId": null, "serverName": "python-sdk-fixture",
            "mode": "form", "message": "Which environment?", "_meta": {"progressToken": 7},
            "requestedSchema": {"type": "object", "properties": {"env": {"type": "string"}},
                "required": ["env"]}}),
        item: None,
    };
    let question = CodexAsk::read(&request)
        .expect("read")
        .question()
        .expect("question");
    assert_eq!(question.asker.server, "python-sdk-fixture");
    assert_eq!(question.key, HOOK_KEY);
    assert_eq!(
        question
            .request
            .meta()
            .and_then(|meta| meta.get("progressToken")),
        Some(&json!(7))
    );
    let accepted = reply_to(
        &request,
        &answer(PollAction::Accept, json!({"env": "staging"}), None),
    );
    assert_eq!(
        accepted.result,
        json!({"action": "accept", "content": {"env": "staging"}})
    );
    let url = AppServerRequest {
        method: ELICITATION.to_owned(),
        params: json!({"threadId": "t1", "serverName": "github", "mode": "url",
            "message": "Sign in", "url": "https://example.com/auth", "elicitationId": "e1"}),
        item: None,
    };
    let question = CodexAsk::read(&url)
        .expect("read")
        .question()
        .expect("question");
    assert!(matches!(question.request, ElicitationRequest::Url { .. }));
}

#[test]
fn codexs_approval_of_an_mcp_tool_call_is_asked_as_an_approval_by_that_server() {
    let request = AppServerRequest {
        method: ELICITATION.to_owned(),
        params: json!({"threadId": "t1", "turnId": "u1", "serverName": "fixture", "mode": "form",
            "_meta": {"codex_approval_kind": "mcp_tool_call", "persist": ["session", "always"],
                "tool_name": "release", "tool_params": {"channel": "stable"}},
            "message": "Allow the fixture MCP server to run tool \"release\"?",
            "requestedSchema": {"type": "object", "properties": {}}}),
        item: None,
    };
    let question = CodexAsk::read(&request)
        .expect("read")
        .question()
        .expect("question");
    assert_eq!(question.key, PERMISSION_KEY);
    assert_eq!(
        question.asker,
        Asker {
            server: "fixture".into(),
            tool: "release".into()
        }
    );
    assert!(
        question
            .request
            .message()
            .starts_with("Codex thread t1 wants to call fixture's tool `release`:"),
        "{}",
        question.request.message()
    );
    let accepted = reply_to(&request, &answer(PollAction::Accept, json!({}), None));
    assert_eq!(accepted.result, json!({"action": "accept", "content": {}}));
    let expired = reply_to(&request, &answer(PollAction::Expired, json!({}), None));
    assert_eq!(expired.result["action"], "decline");
    assert!(expired.steer.is_some());
}

#[test]
fn permissions_and_the_models_own_questions_are_asked_and_answered() {
    let request = AppServerRequest {
        method: PERMISSIONS_APPROVAL.to_owned(),
        params: json!({"threadId": "t1", "turnId": "u1", "itemId": "i1", "startedAtMs": 1,
            "cwd": "/srv", "reason": "needs the network", "permissions": {"network": {"enabled": true}}}),
        item: None,
    };
    let question = CodexAsk::read(&request)
        .expect("read")
        .question()
        .expect("question");
    assert!(question.request.message().contains("\"enabled\": true"));
    assert!(
        question
            .request
            .message()
            .ends_with("Codex says why: needs the network")
    );
    let granted = reply_to(
        &request,
        &answer(PollAction::Accept, json!({FOR_SESSION: true}), None),
    );
    assert_eq!(
        granted.result,
        json!({"permissions": {"network": {"enabled": true}}, "scope": "session"})
    );
    let refused = reply_to(&request, &answer(PollAction::Decline, json!({}), None));
    assert_eq!(refused.result, json!({"permissions": {}, "scope": "turn"}));

    let input = AppServerRequest {
        method: USER_INPUT.to_owned(),
        params: json!({"threadId": "t1", "turnId": "u1", "itemId": "i2", "isBlocking": true,
            "questions": [{"id": "db", "header": "Database", "question": "Which one?",
                "options": [{"label": "postgres", "description": ""}, {"label": "sqlite", "description": ""}]},
                {"id": "why", "header": "Why", "question": "Anything else?", "isOther": true}]}),
        item: None,
    };
    let question = CodexAsk::read(&input)
        .expect("read")
        .question()
        .expect("question");
    let ElicitationRequest::Form {
        requested_schema, ..
    } = &question.request
    else {
        panic!("a form");
    };
    assert_eq!(
        requested_schema["properties"]["db"]["enum"],
        json!(["postgres", "sqlite"])
    );
    let answered = reply_to(
        &input,
        &answer(
            PollAction::Accept,
            json!({"db": "sqlite", "why": "tests"}),
            None,
        ),
    );
    assert_eq!(
        answered.result,
        json!({"answers": {"db": {"answers": ["sqlite"]}, "why": {"answers": ["tests"]}}})
    );
}

#[test]
fn malformed_and_unknown_requests_are_refused_in_words() {
    let read = |method: &str, params: Value| {
        CodexAsk::read(&AppServerRequest {
            method: method.to_owned(),
            params,
            item: None,
        })
    };
    for (method, params) in [
        (COMMAND_APPROVAL, json!([])),
        (COMMAND_APPROVAL, json!({"command": "ls"})),
        (COMMAND_APPROVAL, json!({"threadId": "t"})),
        (
            PERMISSIONS_APPROVAL,
            json!({"threadId": "t", "permissions": 3}),
        ),
        (USER_INPUT, json!({"threadId": "t", "questions": []})),
        (
            USER_INPUT,
            json!({"threadId": "t", "questions": [{"id": "a b", "question": "?"}]}),
        ),
        ("item/tool/call", json!({"threadId": "t"})),
        ("\u{1b}[2Jevil", json!({"threadId": "t"})),
    ] {
        let refused = read(method, params).expect_err(method);
        assert!(!refused.to_string().contains('\u{1b}'), "{refused}");
    }
}

#[test]
fn a_hostile_command_is_shown_with_its_escapes_and_bounded() {
    let mut request = command_request();
    request.params["command"] = json!(format!(
        "rm -rf /\u{1b}[2K\r\n```\nSafe: allow{}",
        "x".repeat(20_000)
    ));
    request.params["reason"] = json!("r".repeat(5_000));
    let question = CodexAsk::read(&request)
        .expect("read")
        .question()
        .expect("question");
    let message = question.request.message();
    assert!(!message.contains('\u{1b}') && !message.contains('\r'));
    assert!(message.contains("\n ```\nSafe: allow"), "the fence holds");
    assert!(
        message.chars().count() < SHOWN_CHARS + 1_000,
        "{}",
        message.len()
    );
}
