//! An Agent Client Protocol agent asking its host (`session/request_permission`, docs/hooks.md): the tool call
//! it wants to make, read leniently from the agent's JSON and shown as a person judges it — a command as code, an
//! edit as its diff — and the person's decision turned back into the option the agent offered of the matching
//! `kind` (never a hard-coded option id: ids differ per agent). Nobody answering in time is a rejection that says
//! so, never an allow.

use serde_json::{Map, Value, json};

use super::{
    question::{
        Asker, HookQuestion, bounded, clean, permission_question, reason_and_scope, text_of,
        unfenced,
    },
    reply::waited_words,
};
use crate::{
    ManagedInputError,
    outward::{OutwardAnswer, PollAction},
};

/// How much of a command, a diff or a tool's input the question shows.
const SHOWN_CHARS: usize = 6_000;
/// Bounds on what an agent offers: options, and content items shown.
const OPTIONS_MAX: usize = 16;
const CONTENT_SHOWN: usize = 20;
/// A permission request of an ACP agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpPermission {
    /// The agent, as the run names it (`gemini`, `opencode`…): the question's asker.
    pub agent: String,
    /// The agent's session (one run is one session).
    pub session: String,
    pub title: String,
    /// ACP's tool kind: `execute`, `edit`, `delete`, `move`, `read`, `search`, `fetch`, `think`, `other`…
    pub kind: String,
    /// The command, where the tool call is one and says it.
    pub command: Option<String>,
    /// What the agent shows of the call: text, and diffs as removed and added lines.
    pub shown: Vec<String>,
    pub raw_input: Option<Value>,
    pub options: Vec<AcpOption>,
}

/// One of the choices the agent offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpOption {
    pub id: String,
    pub kind: String,
}

/// What the agent gets back: the request's result, and what the agent should be told besides (sent as the
/// next prompt once its turn ends: ACP has no place for a reason).
#[derive(Debug, Clone, PartialEq)]
pub struct AcpReply {
    pub result: Value,
    pub note: Option<String>,
}

impl AcpPermission {
    /// Reads `session/request_permission`'s params from `agent`; what cannot be answered is refused.
    pub fn read(agent: &str, params: &Value) -> Result<Self, ManagedInputError> {
        crate::round::check_server_name(agent)?;
        let call = params
            .get("toolCall")
            .filter(|call| call.is_object())
            .ok_or_else(|| {
                ManagedInputError::validation(
                    "`toolCall` is missing: Anteroom asks about a tool call it can show.",
                )
            })?;
        let options: Vec<AcpOption> = params
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|option| AcpOption {
                id: text_of(option, "optionId"),
                kind: text_of(option, "kind"),
            })
            .collect();
        if options.is_empty()
            || options.len() > OPTIONS_MAX
            || options.iter().any(|option| option.id.is_empty())
        {
            return Err(ManagedInputError::validation(format!(
                "`options` needs 1 to {OPTIONS_MAX} options, each with an `optionId`."
            )));
        }
        let raw_input = call
            .get("rawInput")
            .filter(|input| !input.is_null())
            .cloned();
        let command = raw_input
            .as_ref()
            .and_then(|input| input.get("command"))
            .and_then(|command| match command {
                Value::String(command) => Some(command.clone()),
                Value::Array(words) => Some(
                    words
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            });
        let shown = call
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(CONTENT_SHOWN)
            .filter_map(shown_content)
            .collect();
        Ok(Self {
            agent: agent.to_owned(),
            session: text_of(params, "sessionId"),
            title: text_of(call, "title"),
            kind: call
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("other")
                .to_owned(),
            command,
            shown,
            raw_input,
            options,
        })
    }

    /// The question a person answers, asked by the agent about the tool's kind: the message names the run's
    /// session, so "the same again" (a standing answer) holds for this run only.
    pub fn question(&self) -> HookQuestion {
        let session: String = self.session.chars().take(8).collect();
        let mut message = format!(
            "{} session {} asks to {}",
            clean(&self.agent),
            clean(&session),
            match self.kind.as_str() {
                "execute" => "run a command",
                "edit" => "edit",
                "delete" => "delete",
                "move" => "move",
                "fetch" => "fetch",
                _ => "use a tool",
            }
        );
        let title = bounded(&clean(self.title.trim()), 300);
        match &self.command {
            Some(command) => message.push_str(&format!(
                ":\n\n```sh\n$ {}\n```",
                unfenced(&bounded(&clean(command), SHOWN_CHARS))
            )),
            None if !title.is_empty() => {
                message.push_str(&format!(": {}", title.replace('\n', " ")));
            }
            None => message.push(':'),
        }
        for shown in &self.shown {
            message.push_str(&format!("\n\n{shown}"));
        }
        if self.command.is_none()
            && self.shown.is_empty()
            && let Some(input) = &self.raw_input
        {
            let input = serde_json::to_string_pretty(input).unwrap_or_default();
            message.push_str(&format!(
                "\n\n```json\n{}\n```",
                unfenced(&bounded(&clean(&input), SHOWN_CHARS))
            ));
        }
        let for_session = self
            .offers("allow_always")
            .then_some("Allow calls like this for the rest of the run (the agent asks no more)");
        permission_question(
            Asker {
                server: self.agent.clone(),
                tool: self.kind.chars().take(60).collect(),
            },
            bounded(&message, SHOWN_CHARS * 2),
            for_session,
        )
    }

    fn offers(&self, kind: &str) -> bool {
        self.options.iter().any(|option| option.kind == kind)
    }

    /// The agent's option of the first of `kinds` it offers.
    fn selected(&self, kinds: &[&str]) -> Option<&AcpOption> {
        kinds
            .iter()
            .find_map(|kind| self.options.iter().find(|option| option.kind == *kind))
    }

    /// The result for `answer`, given by `who`; `waited` is how long Anteroom held the request.
    pub fn reply(
        &self,
        answer: &OutwardAnswer,
        who: &str,
        waited: std::time::Duration,
    ) -> AcpReply {
        let (reason, for_session) = reason_and_scope(answer.content.as_ref());
        let what = self.what();
        match (answer.action, &answer.failure_code) {
            (PollAction::Accept, None) => {
                let note = reason.map(|note| format!("Anteroom: {who} allowed {what}: {note}"));
                // "For the rest of the run" only when the person chose it; a once-only allow never widens.
                let kinds: &[&str] = if for_session {
                    &["allow_always", "allow_once"]
                } else {
                    &["allow_once"]
                };
                match self.selected(kinds) {
                    Some(option) => AcpReply {
                        result: selected(&option.id),
                        note,
                    },
                    None => self.refused(&format!(
                        "{who} allowed {what} once, and the agent offers no once-only allow, so it was not allowed."
                    )),
                }
            }
            (PollAction::Decline, None) => {
                let note = answer
                    .reason
                    .as_deref()
                    .map(str::trim)
                    .filter(|reason| !reason.is_empty())
                    .map(|reason| format!("Anteroom: {who} declined {what}: {reason}"));
                AcpReply {
                    result: self.rejection(),
                    note,
                }
            }
            // Dismissed: the turn is cancelled, as a person pressing Escape in the agent would.
            (PollAction::Cancel, None) => AcpReply {
                result: json!({"outcome": {"outcome": "cancelled"}}),
                note: None,
            },
            (PollAction::Expired, None) => self.refused(&format!(
                "nobody answered within {}, so {what} was not allowed.",
                waited_words(waited)
            )),
            (_, code) => self.refused(&format!(
                "the question ended without an answer ({}), so {what} was not allowed.",
                code.as_deref().unwrap_or("failed")
            )),
        }
    }

    /// The reply when no person decided (`why`): a rejection, and the agent is told why.
    pub fn refused(&self, why: &str) -> AcpReply {
        AcpReply {
            result: self.rejection(),
            note: Some(format!("Anteroom: {why}")),
        }
    }

    /// The agent's once-only rejection (its lasting one only when it offers no other; cancelled when it offers
    /// neither).
    fn rejection(&self) -> Value {
        match self.selected(&["reject_once", "reject_always"]) {
            Some(option) => selected(&option.id),
            None => json!({"outcome": {"outcome": "cancelled"}}),
        }
    }

    fn what(&self) -> String {
        match &self.command {
            Some(command) => format!("`{}`", bounded(&clean(command), 200).replace('`', "'")),
            None if !self.title.trim().is_empty() => {
                format!(
                    "\"{}\"",
                    bounded(&clean(self.title.trim()), 200).replace('\n', " ")
                )
            }
            None => "the tool call".to_owned(),
        }
    }
}

fn selected(option: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option}})
}

/// A content item of a tool call as the question shows it: text as text, a diff as removed and added lines.
fn shown_content(item: &Value) -> Option<String> {
    match item.get("type").and_then(Value::as_str)? {
        "content" => {
            let text = item.pointer("/content/text").and_then(Value::as_str)?;
            Some(bounded(&clean(text.trim()), 1_000))
        }
        "diff" => {
            let mut lines: Vec<String> = item
                .get("oldText")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .lines()
                .map(|line| format!("-{line}"))
                .collect();
            lines.extend(
                text_of(item, "newText")
                    .lines()
                    .map(|line| format!("+{line}")),
            );
            Some(format!(
                "`{}`:\n```diff\n{}\n```",
                bounded(&clean(&text_of(item, "path")), 300).replace('`', "'"),
                unfenced(&bounded(&clean(&lines.join("\n")), SHOWN_CHARS))
            ))
        }
        _ => None,
    }
}

/// The agent's session updates as a person reads them in the run's output: its words, its tool calls and
/// their ends, its plan. `None` for what is not worth a line (chunks are gathered by the caller).
pub fn update_line(agent: &str, update: &Map<String, Value>) -> Option<String> {
    let text = |key: &str| {
        update
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match update.get("sessionUpdate").and_then(Value::as_str)? {
        "tool_call" => Some(format!(
            "{agent}: {} ({})",
            clean(&text("title")),
            clean(&text("status"))
        )),
        "tool_call_update" => {
            let status = text("status");
            if !matches!(status.as_str(), "completed" | "failed") {
                return None;
            }
            let said: Vec<String> = update
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .take(CONTENT_SHOWN)
                .filter_map(|item| item.pointer("/content/text").and_then(Value::as_str))
                .map(|text| bounded(&clean(text.trim()), 2_000))
                .collect();
            let mut line = format!("{agent}: {} ({status})", clean(&text("title")));
            for said in said {
                line.push('\n');
                line.push_str(&said);
            }
            Some(line)
        }
        "plan" => {
            let entries: Vec<String> = update
                .get("entries")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .take(CONTENT_SHOWN)
                .map(|entry| {
                    format!(
                        "  [{}] {}",
                        clean(&text_of(entry, "status")),
                        bounded(&clean(&text_of(entry, "content")), 300)
                    )
                })
                .collect();
            Some(format!("{agent}: plan\n{}", entries.join("\n")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{hooks::question::FOR_SESSION, round::ElicitationRequest};

    /// As the real Gemini CLI 0.61 sent it.
    fn gemini() -> Value {
        json!({"sessionId": "683cd64b-a877-4297-8c2c-4c477235941f", "options": [
            {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
            {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
            {"optionId": "cancel", "name": "Reject", "kind": "reject_once"}],
            "toolCall": {"toolCallId": "run_shell_command_1", "status": "pending", "title": "touch made.txt",
                "content": [{"type": "content", "content": {"type": "text",
                    "text": "[current working directory /tmp/work] (create made.txt)"}}],
                "locations": [], "kind": "execute"}})
    }

    /// As the real OpenCode 1.18 sent it.
    fn opencode() -> Value {
        json!({"sessionId": "ses_db625e13cffe2ZGjVR3TPfqtO4", "toolCall": {"toolCallId": "call_stub_1",
            "title": "touch made.txt", "kind": "execute", "status": "pending", "locations": [],
            "rawInput": {"command": "touch made.txt"}}, "options": [
            {"optionId": "once", "kind": "allow_once", "name": "Allow once"},
            {"optionId": "always", "kind": "allow_always", "name": "Always allow"},
            {"optionId": "reject", "kind": "reject_once", "name": "Reject"}]})
    }

    fn answer(action: PollAction, content: Value) -> OutwardAnswer {
        OutwardAnswer {
            action,
            content: content.as_object().cloned(),
            failure_code: None,
            reason: None,
        }
    }

    fn reply(params: &Value, answer: &OutwardAnswer) -> AcpReply {
        AcpPermission::read("gemini", params).expect("read").reply(
            answer,
            "rita",
            Duration::from_secs(570),
        )
    }

    #[test]
    fn a_command_is_asked_as_code_by_the_agent_and_answered_by_the_option_of_the_matching_kind() {
        let question = AcpPermission::read("opencode", &opencode())
            .expect("read")
            .question();
        assert_eq!(
            question.asker,
            Asker {
                server: "opencode".into(),
                tool: "execute".into()
            }
        );
        assert_eq!(
            question.request.message(),
            "opencode session ses_db62 asks to run a command:\n\n```sh\n$ touch made.txt\n```"
        );
        let gemini_question = AcpPermission::read("gemini", &gemini())
            .expect("read")
            .question();
        assert!(
            gemini_question.request.message().starts_with(
                "gemini session 683cd64b asks to run a command: touch made.txt\n\n[current working"
            ),
            "{}",
            gemini_question.request.message()
        );
        let ElicitationRequest::Form {
            requested_schema, ..
        } = &gemini_question.request
        else {
            panic!("a form");
        };
        assert!(requested_schema["properties"].get(FOR_SESSION).is_some());

        // Ids differ per agent: the kind decides.
        let once = answer(PollAction::Accept, json!({}));
        assert_eq!(reply(&gemini(), &once).result, selected("proceed_once"));
        assert_eq!(reply(&opencode(), &once).result, selected("once"));
        let always = answer(PollAction::Accept, json!({FOR_SESSION: true}));
        assert_eq!(reply(&gemini(), &always).result, selected("proceed_always"));
        let mut declined = answer(PollAction::Decline, json!({}));
        declined.reason = Some("not on a Friday.".to_owned());
        let declined = reply(&opencode(), &declined);
        assert_eq!(declined.result, selected("reject"));
        assert_eq!(
            declined.note.as_deref(),
            Some("Anteroom: rita declined `touch made.txt`: not on a Friday.")
        );
        assert_eq!(
            reply(&gemini(), &answer(PollAction::Cancel, json!({}))).result,
            json!({"outcome": {"outcome": "cancelled"}})
        );
    }

    #[test]
    fn nobody_answering_is_a_rejection_that_says_so_and_a_once_only_allow_never_widens() {
        let expired = reply(&gemini(), &answer(PollAction::Expired, json!({})));
        assert_eq!(expired.result, selected("cancel"));
        assert_eq!(
            expired.note.as_deref(),
            Some("Anteroom: nobody answered within 10 min, so \"touch made.txt\" was not allowed.")
        );
        let mut failed = answer(PollAction::Expired, json!({}));
        failed.failure_code = Some("nobody_available".to_owned());
        assert_eq!(reply(&gemini(), &failed).result, selected("cancel"));
        // Only a lasting allow on offer: a once-only accept is not turned into it.
        let mut lasting = opencode();
        lasting["options"] = json!([{"optionId": "always", "kind": "allow_always"}, {"optionId": "no", "kind": "reject_always"}]);
        let accepted = reply(&lasting, &answer(PollAction::Accept, json!({})));
        assert_eq!(accepted.result, selected("no"));
        assert!(accepted.note.is_some());
    }

    #[test]
    fn an_edit_is_shown_as_its_diff_and_hostile_input_is_bounded_and_cannot_close_its_block() {
        let params = json!({"sessionId": "s1", "options": [{"optionId": "y", "kind": "allow_once"}],
            "toolCall": {"toolCallId": "t", "title": "Edit prod.env", "kind": "edit", "content": [
                {"type": "diff", "path": "/srv/prod.env", "oldText": "DB=staging", "newText": "DB=prod\n```\nok"}]}});
        let question = AcpPermission::read("gemini", &params)
            .expect("read")
            .question();
        assert!(
            question
                .request
                .message()
                .ends_with("`/srv/prod.env`:\n```diff\n-DB=staging\n+DB=prod\n+```\n+ok\n```"),
            "{}",
            question.request.message()
        );
        let hostile = json!({"sessionId": "s1", "options": [{"optionId": "y", "kind": "allow_once"}],
            "toolCall": {"title": "x", "kind": "execute",
                "rawInput": {"command": format!("rm -rf /\u{1b}[2K\r{}", "a".repeat(50_000))}}});
        let message = AcpPermission::read("gemini", &hostile)
            .expect("read")
            .question();
        let message = message.request.message();
        assert!(!message.contains('\u{1b}') && !message.contains('\r'));
        assert!(message.chars().count() < SHOWN_CHARS * 2 + 200);
        for bad in [
            json!({"sessionId": "s", "options": []}),
            json!({"sessionId": "s", "toolCall": {}, "options": []}),
            json!({"sessionId": "s", "toolCall": {}, "options": [{"kind": "allow_once"}]}),
            json!([]),
        ] {
            assert!(AcpPermission::read("gemini", &bad).is_err(), "{bad}");
        }
        assert!(AcpPermission::read("no such\nagent", &gemini()).is_err());
    }

    #[test]
    fn updates_read_as_lines() {
        let update = |value: Value| value.as_object().cloned().expect("an object");
        assert_eq!(
            update_line(
                "gemini",
                &update(
                    json!({"sessionUpdate": "tool_call_update", "title": "touch made.txt",
                "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "(no output)"}}]})
                )
            ),
            Some("gemini: touch made.txt (completed)\n(no output)".to_owned())
        );
        assert_eq!(
            update_line(
                "gemini",
                &update(json!({"sessionUpdate": "tool_call_update", "status": "in_progress"}))
            ),
            None
        );
        assert!(
            update_line(
                "gemini",
                &update(json!({"sessionUpdate": "plan", "entries": [
                {"content": "write the test", "status": "pending", "priority": "high"}]}))
            )
            .is_some_and(|line| line.ends_with("[pending] write the test"))
        );
    }
}
