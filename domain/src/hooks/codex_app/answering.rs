//! The answer Codex reads back: the JSON-RPC result of its request, and what the model should read besides.

use serde_json::{Map, Value, json};

use super::{CodexAsk, CodexReply};
use crate::{
    hooks::{question::reason_and_scope, reply::waited_words},
    outward::{OutwardAnswer, PollAction},
};

impl CodexAsk {
    /// The result Codex reads for `answer`, given by `who`; `waited` is how long Anteroom held the request.
    /// Nobody answering, or a question that ended otherwise, is a decline that says so — never an accept.
    pub fn reply(
        &self,
        answer: &OutwardAnswer,
        who: &str,
        waited: std::time::Duration,
    ) -> CodexReply {
        let content = answer.content.as_ref();
        let (note, for_session) = reason_and_scope(content);
        let what = self.what();
        let unanswered = match (answer.action, &answer.failure_code) {
            (PollAction::Expired, None) => Some(format!(
                "nobody answered within {}, so {what} was not allowed.",
                waited_words(waited)
            )),
            (PollAction::Accept | PollAction::Decline | PollAction::Cancel, None) => None,
            (_, code) => Some(format!(
                "the question ended without an answer ({}), so {what} was not allowed.",
                code.as_deref().unwrap_or("failed")
            )),
        };
        if let Some(why) = unanswered {
            return self.refused(&why);
        }
        match self {
            // acceptForSession only where Codex offers it: every file change does, a command says so.
            Self::Command {
                for_session: offered,
                ..
            } => self.decided(answer, who, note, for_session && *offered),
            Self::FileChange { .. } => self.decided(answer, who, note, for_session),
            Self::Permissions { permissions, .. } => match answer.action {
                PollAction::Accept => CodexReply {
                    result: json!({
                        "permissions": permissions,
                        "scope": if for_session { "session" } else { "turn" },
                    }),
                    steer: note.map(|note| format!("Allowed by {who} in Anteroom: {note}")),
                },
                _ => CodexReply {
                    result: json!({"permissions": {}, "scope": "turn"}),
                    steer: Some(declined_words(answer, who, what)),
                },
            },
            Self::McpToolCall { .. } => match answer.action {
                PollAction::Accept => CodexReply {
                    result: json!({"action": "accept", "content": {}}),
                    steer: note.map(|note| format!("Anteroom: allowed by {who}: {note}")),
                },
                PollAction::Cancel => CodexReply {
                    result: json!({"action": "cancel", "content": null}),
                    steer: None,
                },
                _ => CodexReply {
                    result: json!({"action": "decline", "content": null}),
                    steer: Some(declined_words(answer, who, what)),
                },
            },
            Self::Elicitation { .. } => {
                let action = match answer.action {
                    PollAction::Accept => "accept",
                    PollAction::Decline => "decline",
                    _ => "cancel",
                };
                let mut result = json!({"action": action, "content": null});
                if action == "accept"
                    && let Some(content) = content
                {
                    result["content"] = Value::Object(content.clone());
                }
                CodexReply {
                    result,
                    steer: None,
                }
            }
            Self::UserInput { questions, .. } => match answer.action {
                PollAction::Accept => {
                    let answers: Map<String, Value> = questions
                        .iter()
                        .filter_map(|question| {
                            let given = content?.get(&question.id)?.as_str()?;
                            Some((question.id.clone(), json!({"answers": [given]})))
                        })
                        .collect();
                    CodexReply {
                        result: json!({ "answers": answers }),
                        steer: None,
                    }
                }
                _ => CodexReply {
                    result: json!({"answers": {}}),
                    steer: Some(declined_words(answer, who, what)),
                },
            },
        }
    }

    /// The reply when no person could be asked (`why`): a decline, a cancelled elicitation, no permissions, no
    /// answers — and the model reads why.
    pub fn refused(&self, why: &str) -> CodexReply {
        let result = match self {
            Self::Command { .. } | Self::FileChange { .. } => json!({"decision": "decline"}),
            Self::McpToolCall { .. } => json!({"action": "decline", "content": null}),
            Self::Elicitation { .. } => json!({"action": "cancel", "content": null}),
            Self::Permissions { .. } => json!({"permissions": {}, "scope": "turn"}),
            Self::UserInput { .. } => json!({"answers": {}}),
        };
        CodexReply {
            result,
            steer: Some(format!("Anteroom: {why}")),
        }
    }

    /// An approval's decision: accept (for the session where the person chose it and Codex offers it),
    /// decline, or — when the person dismissed the question — cancel, which also interrupts the turn.
    fn decided(
        &self,
        answer: &OutwardAnswer,
        who: &str,
        note: Option<String>,
        for_session: bool,
    ) -> CodexReply {
        match answer.action {
            PollAction::Accept => CodexReply {
                result: json!({"decision": if for_session { "acceptForSession" } else { "accept" }}),
                steer: note.map(|note| format!("Anteroom: allowed by {who}: {note}")),
            },
            PollAction::Cancel => CodexReply {
                result: json!({"decision": "cancel"}),
                steer: None,
            },
            _ => CodexReply {
                result: json!({"decision": "decline"}),
                steer: Some(declined_words(answer, who, self.what())),
            },
        }
    }
}

/// "Anteroom: rita declined the command: not on a Friday." — the reason Codex would not give the model.
fn declined_words(answer: &OutwardAnswer, who: &str, what: &str) -> String {
    match answer
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|reason| !reason.is_empty())
    {
        Some(reason) => format!("Anteroom: {who} declined {what}: {reason}"),
        None => format!("Anteroom: {who} declined {what}."),
    }
}
