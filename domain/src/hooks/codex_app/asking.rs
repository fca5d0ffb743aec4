//! The question a request of Codex's becomes: what it asks, shown so a person can judge it and nothing in it can
//! pass for Anteroom's own words.

use serde_json::{Map, Value, json};

use super::{CodexAsk, FILES_SHOWN, SHOWN_CHARS, Thread};
use crate::{
    ManagedInputError,
    hooks::{
        HOOK_KEY,
        question::{
            Asker, HookQuestion, bounded, clean, elicitation_question, form, permission_question,
            unfenced,
        },
    },
    round::ElicitationRequest,
};

impl CodexAsk {
    /// The question a person answers: a command as code with its folder and reason, a change as its diff,
    /// an elicitation as the form or link it asked, permissions as what they grant, the model's questions as a
    /// form. The message names the thread, so "the same again" (a standing answer) holds for this run only.
    pub fn question(&self) -> Result<HookQuestion, ManagedInputError> {
        let codex = |tool: &str| Asker {
            server: "codex".to_owned(),
            tool: tool.to_owned(),
        };
        let label = thread_label(self.thread());
        match self {
            Self::Command {
                command,
                cwd,
                reason,
                for_session,
                ..
            } => {
                let mut message = format!(
                    "{label} wants to run a command in {}:\n\n```sh\n$ {}\n```",
                    shown_path(cwd),
                    fenced(command)
                );
                push_reason(&mut message, reason);
                Ok(permission_question(
                    codex("command"),
                    message,
                    for_session.then_some(
                        "Allow commands like this for the rest of the run (Codex asks no more)",
                    ),
                ))
            }
            Self::FileChange {
                changes, reason, ..
            } => {
                let mut message = format!("{label} wants to change {}:", files_said(changes.len()));
                for change in changes.iter().take(FILES_SHOWN) {
                    let body = match change.kind.as_str() {
                        // An added file's diff is its content: shown as added lines.
                        "add" => change
                            .diff
                            .lines()
                            .map(|line| format!("+{line}"))
                            .collect::<Vec<_>>()
                            .join("\n"),
                        _ => change.diff.clone(),
                    };
                    message.push_str(&format!(
                        "\n\n{} {}:\n```diff\n{}\n```",
                        clean(&change.kind),
                        shown_path(&change.path),
                        fenced(body.trim_end_matches('\n'))
                    ));
                }
                if changes.len() > FILES_SHOWN {
                    message.push_str(&format!(
                        "\n\n… and {} more files",
                        changes.len() - FILES_SHOWN
                    ));
                }
                if changes.is_empty() {
                    message.push_str("\n\n(Codex did not say which files.)");
                }
                push_reason(&mut message, reason);
                Ok(permission_question(
                    codex("file change"),
                    bounded(&message, SHOWN_CHARS * 2),
                    Some("Allow further changes to these files for the rest of the run"),
                ))
            }
            Self::McpToolCall {
                server,
                tool,
                arguments,
                ..
            } => {
                let shown = serde_json::to_string_pretty(arguments).unwrap_or_default();
                let message = format!(
                    "{label} wants to call {}'s tool `{}`:\n\n```json\n{}\n```",
                    clean(server),
                    clean(&tool.chars().take(200).collect::<String>()).replace('`', "'"),
                    fenced(&shown)
                );
                let asker = Asker {
                    server: server.clone(),
                    tool: tool.chars().take(200).collect(),
                };
                Ok(permission_question(asker, message, None))
            }
            Self::Elicitation { hook, meta, .. } => {
                let mut question = elicitation_question(hook)?;
                match &mut question.request {
                    ElicitationRequest::Form { meta: kept, .. }
                    | ElicitationRequest::Url { meta: kept, .. } => kept.clone_from(meta),
                }
                Ok(question)
            }
            Self::Permissions {
                cwd,
                permissions,
                reason,
                ..
            } => {
                let shown = serde_json::to_string_pretty(permissions).unwrap_or_default();
                let mut message = format!(
                    "{label} asks for more permissions in {}:\n\n```json\n{}\n```",
                    shown_path(cwd),
                    fenced(&shown)
                );
                push_reason(&mut message, reason);
                Ok(permission_question(
                    codex("permissions"),
                    message,
                    Some("Grant them for the rest of the run, not only this turn"),
                ))
            }
            Self::UserInput { questions, .. } => {
                let mut properties = Map::new();
                let mut required = Vec::new();
                for question in questions {
                    let title = bounded(
                        &clean(&format!("{}: {}", question.header, question.question)),
                        300,
                    );
                    let field = if question.options.is_empty() || question.other {
                        let mut field =
                            json!({"type": "string", "title": title, "maxLength": 2000});
                        if !question.options.is_empty() {
                            field["examples"] = json!(question.options);
                        }
                        field
                    } else {
                        json!({"type": "string", "title": title, "enum": question.options})
                    };
                    properties.insert(question.id.clone(), field);
                    required.push(Value::String(question.id.clone()));
                }
                Ok(HookQuestion {
                    asker: codex("question"),
                    key: HOOK_KEY,
                    request: form(
                        format!("{label} asks you:"),
                        json!({"type": "object", "properties": properties, "required": required}),
                    ),
                })
            }
        }
    }
}

/// "Codex thread 01a249c3": which run asks (a run is one thread).
fn thread_label(thread: &Thread) -> String {
    let id: String = thread.id.chars().take(8).collect();
    format!("Codex thread {}", clean(&id))
}

fn shown_path(path: &str) -> String {
    if path.is_empty() {
        return "its working folder".to_owned();
    }
    format!(
        "`{}`",
        clean(&path.chars().take(300).collect::<String>()).replace('`', "'")
    )
}

/// Text for a fenced block: cleaned, bounded, and unable to close its fence.
fn fenced(text: &str) -> String {
    unfenced(&bounded(&clean(text), SHOWN_CHARS))
}

fn push_reason(message: &mut String, reason: &str) {
    let reason = reason.trim();
    if !reason.is_empty() {
        message.push_str(&format!(
            "\n\nCodex says why: {}",
            bounded(&clean(reason), 500)
        ));
    }
}

fn files_said(count: usize) -> String {
    match count {
        1 => "a file".to_owned(),
        count => format!("{count} files"),
    }
}
