//! Codex's app server asking its client (`codex app-server`'s server requests, docs/hooks.md): what it asks —
//! a command to run, a file change, an MCP tool call or server's elicitation, more permissions, the model's own
//! questions — read leniently from the installed Codex's JSON, turned into the question a person answers, and
//! the answer turned back into the JSON-RPC result Codex reads. Codex tells the model only "rejected by user"
//! when a call is declined, so what a person wrote, and a question nobody answered, reach the model as a
//! message steered into the turn.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    ElicitationHook,
    question::{clean, text_of},
};
use crate::ManagedInputError;

mod answering;
mod asking;

/// The server requests Anteroom asks a person about, as Codex 0.171 names them.
pub const ASKED_METHODS: [&str; 5] = [
    COMMAND_APPROVAL,
    FILE_CHANGE_APPROVAL,
    ELICITATION,
    PERMISSIONS_APPROVAL,
    USER_INPUT,
];
/// The server requests Anteroom refuses with a JSON-RPC error: a dynamic tool of the client's own (none is
/// registered), ChatGPT sign-in and attestation (the run uses the user's own login), and the v1 protocol's
/// approvals (the run speaks v2).
pub const REFUSED_METHODS: [&str; 5] = [
    "item/tool/call",
    "account/chatgptAuthTokens/refresh",
    "attestation/generate",
    "applyPatchApproval",
    "execCommandApproval",
];

const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";
const ELICITATION: &str = "mcpServer/elicitation/request";
const PERMISSIONS_APPROVAL: &str = "item/permissions/requestApproval";
const USER_INPUT: &str = "item/tool/requestUserInput";

/// How much of a command, a diff or a permission set the question shows.
const SHOWN_CHARS: usize = 6_000;
/// How many files of a change the question lists.
const FILES_SHOWN: usize = 50;
/// Bounds on the model's own questions.
const QUESTIONS_MAX: usize = 10;
const OPTIONS_MAX: usize = 20;
/// A server request as the bridge relays it: Codex's method and params, and the item Codex announced before
/// asking (`item/started`) — a file change's changes are there, not in the request.
#[derive(Debug, Clone, Deserialize)]
pub struct AppServerRequest {
    pub method: String,
    #[serde(default)]
    pub params: Value,
    #[serde(default)]
    pub item: Option<Value>,
}

/// What Codex asks, read from a server request.
#[derive(Debug, Clone, PartialEq)]
pub enum CodexAsk {
    Command {
        thread: Thread,
        command: String,
        cwd: String,
        reason: String,
        /// Codex offers `acceptForSession` for this command.
        for_session: bool,
    },
    FileChange {
        thread: Thread,
        changes: Vec<FileChange>,
        reason: String,
    },
    /// Codex's own approval of an MCP tool call, which it asks as an elicitation of that server with an empty
    /// form (`_meta.codex_approval_kind: "mcp_tool_call"`).
    McpToolCall {
        thread: Thread,
        server: String,
        tool: String,
        arguments: Value,
    },
    Elicitation {
        thread: Thread,
        hook: ElicitationHook,
        meta: Option<Map<String, Value>>,
    },
    Permissions {
        thread: Thread,
        cwd: String,
        permissions: Value,
        reason: String,
    },
    UserInput {
        thread: Thread,
        questions: Vec<UserQuestion>,
    },
}

/// The thread and turn a request belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Thread {
    pub id: String,
    pub turn: Option<String>,
}

/// One file of a change, as Codex's `fileChange` item holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub kind: String,
    pub diff: String,
}

/// One of the model's own questions (`request_user_input`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserQuestion {
    pub id: String,
    pub header: String,
    pub question: String,
    pub options: Vec<String>,
    /// The person may write an answer of their own besides the options.
    pub other: bool,
}

/// What Codex gets back: the request's result, and what the model should read besides (steered into the turn).
#[derive(Debug, Clone, PartialEq)]
pub struct CodexReply {
    pub result: Value,
    pub steer: Option<String>,
}

impl CodexAsk {
    /// Reads a server request; an unknown method, or params missing what the method needs, is refused.
    pub fn read(request: &AppServerRequest) -> Result<Self, ManagedInputError> {
        let params = &request.params;
        if !params.is_object() {
            return Err(ManagedInputError::validation(
                "`params` must be the server request's params object.",
            ));
        }
        let thread = Thread {
            id: text_of(params, "threadId"),
            turn: params
                .get("turnId")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        if thread.id.is_empty() {
            return Err(ManagedInputError::validation(
                "`params.threadId` is missing: every request Anteroom answers names its thread.",
            ));
        }
        match request.method.as_str() {
            COMMAND_APPROVAL => {
                let command = text_of(params, "command");
                if command.is_empty() {
                    return Err(ManagedInputError::validation(
                        "`params.command` is missing: Anteroom asks about a command it can show.",
                    ));
                }
                let for_session = params
                    .get("availableDecisions")
                    .and_then(Value::as_array)
                    .is_some_and(|decisions| {
                        decisions
                            .iter()
                            .any(|decision| decision == "acceptForSession")
                    });
                Ok(Self::Command {
                    thread,
                    command,
                    cwd: text_of(params, "cwd"),
                    reason: text_of(params, "reason"),
                    for_session,
                })
            }
            FILE_CHANGE_APPROVAL => {
                let changes = request
                    .item
                    .as_ref()
                    .filter(|item| item.get("id") == params.get("itemId"))
                    .and_then(|item| item.get("changes"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|change| FileChange {
                        path: text_of(change, "path"),
                        kind: change
                            .get("kind")
                            .and_then(|kind| kind.get("type"))
                            .and_then(Value::as_str)
                            .unwrap_or("update")
                            .to_owned(),
                        diff: text_of(change, "diff"),
                    })
                    .collect();
                Ok(Self::FileChange {
                    thread,
                    changes,
                    reason: text_of(params, "reason"),
                })
            }
            ELICITATION
                if params
                    .pointer("/_meta/codex_approval_kind")
                    .and_then(Value::as_str)
                    == Some("mcp_tool_call") =>
            {
                let server = text_of(params, "serverName");
                crate::round::check_server_name(&server)?;
                Ok(Self::McpToolCall {
                    thread,
                    server,
                    tool: params
                        .pointer("/_meta/tool_name")
                        .and_then(Value::as_str)
                        .unwrap_or("a tool")
                        .to_owned(),
                    arguments: params
                        .pointer("/_meta/tool_params")
                        .cloned()
                        .unwrap_or(Value::Null),
                })
            }
            ELICITATION => {
                let mode = match params.get("mode").and_then(Value::as_str) {
                    // Codex's own form modes carry an MCP form too.
                    Some("form" | "openai/form" | "openaiForm") | None => "form",
                    Some(other) => other,
                };
                let hook = ElicitationHook {
                    session_id: thread.id.clone(),
                    mcp_server_name: text_of(params, "serverName"),
                    message: text_of(params, "message"),
                    mode: Some(mode.to_owned()),
                    requested_schema: params.get("requestedSchema").cloned(),
                    url: params.get("url").and_then(Value::as_str).map(str::to_owned),
                    elicitation_id: params
                        .get("elicitationId")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                };
                let meta = params.get("_meta").and_then(Value::as_object).cloned();
                Ok(Self::Elicitation { thread, hook, meta })
            }
            PERMISSIONS_APPROVAL => {
                let permissions = params
                    .get("permissions")
                    .filter(|permissions| permissions.is_object())
                    .cloned()
                    .ok_or_else(|| {
                        ManagedInputError::validation(
                            "`params.permissions` is missing: Anteroom asks about permissions it can show.",
                        )
                    })?;
                Ok(Self::Permissions {
                    thread,
                    cwd: text_of(params, "cwd"),
                    permissions,
                    reason: text_of(params, "reason"),
                })
            }
            USER_INPUT => Ok(Self::UserInput {
                thread,
                questions: user_questions(params)?,
            }),
            other => Err(ManagedInputError::validation(format!(
                "Anteroom does not answer Codex's {:?} requests.",
                clean(&other.chars().take(80).collect::<String>())
            ))),
        }
    }

    pub fn thread(&self) -> &Thread {
        match self {
            Self::Command { thread, .. }
            | Self::FileChange { thread, .. }
            | Self::McpToolCall { thread, .. }
            | Self::Elicitation { thread, .. }
            | Self::Permissions { thread, .. }
            | Self::UserInput { thread, .. } => thread,
        }
    }

    /// What was asked about, as a sentence names it.
    fn what(&self) -> &'static str {
        match self {
            Self::Command { .. } => "the command",
            Self::FileChange { .. } => "the change",
            Self::McpToolCall { .. } => "the tool call",
            Self::Elicitation { .. } => "the MCP server's question",
            Self::Permissions { .. } => "the permissions",
            Self::UserInput { .. } => "an answer",
        }
    }
}

fn user_questions(params: &Value) -> Result<Vec<UserQuestion>, ManagedInputError> {
    let questions: Vec<UserQuestion> = params
        .get("questions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|question| UserQuestion {
            id: text_of(question, "id"),
            header: text_of(question, "header"),
            question: text_of(question, "question"),
            options: question
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|option| clean(&text_of(option, "label")))
                .collect(),
            other: question
                .get("isOther")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
        .collect();
    if questions.is_empty() || questions.len() > QUESTIONS_MAX {
        return Err(ManagedInputError::validation(format!(
            "`params.questions` needs 1 to {QUESTIONS_MAX} questions."
        )));
    }
    let valid_id = |id: &str| {
        !id.is_empty()
            && id.len() <= 64
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
    };
    if questions.iter().any(|question| {
        !valid_id(&question.id)
            || question.options.len() > OPTIONS_MAX
            || question.options.iter().any(String::is_empty)
    }) {
        return Err(ManagedInputError::validation(format!(
            "Each question needs an id of letters, digits, `_` or `-` (at most 64) and at most {OPTIONS_MAX} \
             labelled options."
        )));
    }
    Ok(questions)
}

#[cfg(test)]
mod tests;
