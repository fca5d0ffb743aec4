//! The question a tool call or an MCP server's elicitation becomes: who asks (the harness for its own tools, the
//! MCP server for its tools), the run that asks, and the tool's input as a person reads it — a command as code,
//! an edit as removed and added lines, a write as its first lines, Claude's own questions as a form — cleaned of
//! control characters, fenced so it cannot close its block, and bounded.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    ASK_USER_QUESTION, ElicitationHook, HOOK_KEY, Harness, PERMISSION_KEY, PreToolUse,
    check_tool_name,
};
use crate::{ManagedInputError, round::ElicitationRequest};

/// How much of a tool's input the question shows; the rest is said to be cut.
const INPUT_SHOWN_CHARS: usize = 6_000;

/// How many lines of a written file's content the question shows.
const WRITE_LINES_SHOWN: usize = 20;

/// Bounds on an `AskUserQuestion`: questions, and choices per question.
const QUESTIONS_MAX: usize = 10;

const OPTIONS_MAX: usize = 20;

/// Who asks and about what: the round's server and tool names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asker {
    pub server: String,
    pub tool: String,
}

impl Asker {
    /// The harness's own tools are asked by it (`claude-code`, `codex`); `mcp__github__create_issue` by the
    /// `github` server.
    pub fn of_tool(tool_name: &str, harness: Harness) -> Self {
        match tool_name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
        {
            Some((server, tool)) if !server.is_empty() && !tool.is_empty() => Self {
                server: server.to_owned(),
                tool: tool.to_owned(),
            },
            _ => Self {
                server: harness.server_name().to_owned(),
                tool: tool_name.to_owned(),
            },
        }
    }
}

/// A hook's question: the request a person answers.
#[derive(Debug, Clone, PartialEq)]
pub struct HookQuestion {
    pub asker: Asker,
    /// The request's key in its round: [`PERMISSION_KEY`] or [`HOOK_KEY`].
    pub key: &'static str,
    pub request: ElicitationRequest,
}

/// The question a tool call becomes: may it run (with an optional reason), or, for `AskUserQuestion`, Claude's
/// own questions as a form.
pub fn tool_question(
    call: &PreToolUse,
    harness: Harness,
) -> Result<HookQuestion, ManagedInputError> {
    check_tool_name(&call.tool_name)?;
    let asker = Asker::of_tool(&call.tool_name, harness);
    let run = run_label(harness, &call.session_id, &call.cwd);
    if call.tool_name == ASK_USER_QUESTION {
        let (message, schema) = ask_user_question_form(&call.tool_input, &run)?;
        return Ok(HookQuestion {
            asker,
            key: HOOK_KEY,
            request: form(message, schema),
        });
    }
    let message = format!(
        "{run} wants to use {}:\n\n{}",
        call.tool_name,
        shown_input(&call.tool_name, &call.tool_input)
    );
    Ok(permission_question(asker, message, None))
}

/// The key of a permission form's "for the rest of the run" box.
pub(super) const FOR_SESSION: &str = "for_session";

/// A yes-or-no question with an optional reason for the agent and, where the harness can remember the answer
/// for the run, a box titled `for_session` to answer the same for the rest of it.
pub(super) fn permission_question(
    asker: Asker,
    message: String,
    for_session: Option<&str>,
) -> HookQuestion {
    let mut properties = json!({
        "reason": {
            "type": "string",
            "title": "Reason, shown to the agent (optional)",
            "maxLength": crate::round::REASON_CHARS
        }
    });
    if let Some(title) = for_session {
        properties[FOR_SESSION] = json!({"type": "boolean", "title": title, "default": false});
    }
    HookQuestion {
        asker,
        key: PERMISSION_KEY,
        request: form(message, json!({"type": "object", "properties": properties})),
    }
}

/// What a permission form's answer says besides its action: the person's reason for the agent (trimmed and
/// bounded, `None` when blank) and whether it holds for the rest of the run.
pub(super) fn reason_and_scope(
    content: Option<&serde_json::Map<String, Value>>,
) -> (Option<String>, bool) {
    let reason = content
        .and_then(|content| content.get("reason"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|reason| !reason.is_empty())
        .map(|reason| bounded(reason, crate::round::REASON_CHARS));
    let for_session = content
        .and_then(|content| content.get(FOR_SESSION))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    (reason, for_session)
}

/// `value[key]` as text, empty when it is not a string.
pub(super) fn text_of(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The question an MCP server's elicitation becomes: the same form or URL it asked, naming the server.
pub fn elicitation_question(hook: &ElicitationHook) -> Result<HookQuestion, ManagedInputError> {
    let server = if hook.mcp_server_name.is_empty() {
        "an MCP server".to_owned()
    } else {
        crate::round::check_server_name(&hook.mcp_server_name)?;
        hook.mcp_server_name.clone()
    };
    let asker = Asker {
        server,
        tool: "elicitation".to_owned(),
    };
    let message = clean(&hook.message);
    let request = match hook.mode.as_deref().unwrap_or("form") {
        "form" => form(
            message,
            hook.requested_schema
                .clone()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        ),
        "url" => ElicitationRequest::Url {
            message,
            url: hook.url.clone().ok_or_else(|| {
                ManagedInputError::validation("`url` is missing: a url elicitation needs one.")
            })?,
            elicitation_id: hook.elicitation_id.clone().unwrap_or_default(),
            meta: None,
        },
        other => {
            return Err(ManagedInputError::validation(format!(
                "`mode` {:?} is not one Anteroom knows; use \"form\" or \"url\".",
                clean(&other.chars().take(40).collect::<String>())
            )));
        }
    };
    Ok(HookQuestion {
        asker,
        key: HOOK_KEY,
        request,
    })
}

pub(super) fn form(message: String, requested_schema: Value) -> ElicitationRequest {
    ElicitationRequest::Form {
        message,
        requested_schema,
        meta: None,
    }
}

/// "Claude Code run 4f2a9c1e in /home/rita/shop": which run asks, so a person can tell runs of one session apart.
fn run_label(harness: Harness, session_id: &str, cwd: &str) -> String {
    let id: String = session_id.chars().take(8).collect();
    let mut label = harness.title().to_owned();
    if !id.is_empty() {
        label.push_str(&format!(" run {}", clean(&id)));
    }
    if !cwd.is_empty() {
        let cwd: String = cwd.chars().take(200).collect();
        label.push_str(&format!(" in {}", clean(&cwd)));
    }
    label
}

/// A tool's input as a person reads it: a command as a command, an edit as removed and added lines, a write as
/// its path and first lines, anything else as JSON — each in a fenced block the page shows as code, with
/// control characters shown as escapes and the block cut to a bound.
fn shown_input(tool: &str, input: &Value) -> String {
    let text = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or_default();
    let (heading, language, body, after) = match tool {
        "Bash" => {
            let description = text("description");
            let after = if description.is_empty() {
                String::new()
            } else {
                format!("({description})")
            };
            (String::new(), "sh", format!("$ {}", text("command")), after)
        }
        "Write" => {
            let content = text("content");
            let lines: Vec<&str> = content.lines().collect();
            let mut body = lines
                .iter()
                .take(WRITE_LINES_SHOWN)
                .copied()
                .collect::<Vec<_>>()
                .join("\n");
            if lines.len() > WRITE_LINES_SHOWN {
                body.push_str(&format!(
                    "\n… {} more lines",
                    lines.len() - WRITE_LINES_SHOWN
                ));
            }
            let heading = format!("write {} ({} lines):", text("file_path"), lines.len());
            (heading, "", body, String::new())
        }
        // Codex's patch is its own diff.
        "apply_patch" => (
            String::new(),
            "diff",
            text("command").to_owned(),
            String::new(),
        ),
        "Edit" => (
            format!("edit {}:", text("file_path")),
            "diff",
            edit_lines(text("old_string"), text("new_string")),
            String::new(),
        ),
        "MultiEdit" => {
            let edits: Vec<String> = input
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|edit| {
                    let part =
                        |key: &str| edit.get(key).and_then(Value::as_str).unwrap_or_default();
                    edit_lines(part("old_string"), part("new_string"))
                })
                .collect();
            let heading = format!("edit {}:", text("file_path"));
            (heading, "diff", edits.join("\n"), String::new())
        }
        _ => (
            String::new(),
            "json",
            serde_json::to_string_pretty(input).unwrap_or_default(),
            String::new(),
        ),
    };
    let mut shown = clean(&heading);
    if !shown.is_empty() {
        shown.push('\n');
    }
    shown.push_str(&format!(
        "```{language}\n{}\n```",
        unfenced(&bounded(&clean(&body), INPUT_SHOWN_CHARS))
    ));
    if !after.is_empty() {
        shown.push_str(&format!("\n\n{}", bounded(&clean(&after), 500)));
    }
    shown
}

/// `text` with no line that would end its fenced block: a line starting with ```` ``` ```` gets a space before.
pub(super) fn unfenced(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            if line.starts_with("```") {
                format!(" {line}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An edit as a diff reads: `- ` before each removed line, `+ ` before each added one.
fn edit_lines(old: &str, new: &str) -> String {
    let mut lines: Vec<String> = old.lines().map(|line| format!("- {line}")).collect();
    lines.extend(new.lines().map(|line| format!("+ {line}")));
    lines.join("\n")
}

/// `text` with every control character but newline and tab shown as an escape (`\u{1b}`), so an ANSI
/// sequence or a carriage return cannot disguise what a command does.
pub fn clean(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            cleaned.push_str(&c.escape_unicode().to_string());
        } else {
            cleaned.push(c);
        }
    }
    cleaned
}

/// At most `chars` characters of `text`, saying how much was cut.
pub(super) fn bounded(text: &str, chars: usize) -> String {
    let total = text.chars().count();
    if total <= chars {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(chars).collect();
    kept.push_str(&format!(
        "\n… ({} more characters not shown)",
        total - chars
    ));
    kept
}

/// One question of an `AskUserQuestion` call, as Claude sends it.
#[derive(Debug, Deserialize)]
pub(super) struct ClaudeQuestion {
    pub(super) question: String,
    #[serde(default)]
    options: Vec<ClaudeOption>,
    #[serde(default, rename = "multiSelect")]
    multi_select: bool,
}

#[derive(Debug, Deserialize)]
struct ClaudeOption {
    label: String,
}

pub(super) fn claude_questions(input: &Value) -> Result<Vec<ClaudeQuestion>, ManagedInputError> {
    let questions: Vec<ClaudeQuestion> = input
        .get("questions")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|error| {
            ManagedInputError::validation(format!("`tool_input.questions` cannot be read: {error}"))
        })?
        .unwrap_or_default();
    if questions.is_empty() || questions.len() > QUESTIONS_MAX {
        return Err(ManagedInputError::validation(format!(
            "`AskUserQuestion` needs 1 to {QUESTIONS_MAX} questions."
        )));
    }
    if questions
        .iter()
        .any(|question| question.options.is_empty() || question.options.len() > OPTIONS_MAX)
    {
        return Err(ManagedInputError::validation(format!(
            "Each question of `AskUserQuestion` needs 1 to {OPTIONS_MAX} options."
        )));
    }
    Ok(questions)
}

/// Claude's multiple-choice questions as one form: a field per question (`q1`, `q2`, …), one choice or several.
fn ask_user_question_form(input: &Value, run: &str) -> Result<(String, Value), ManagedInputError> {
    let questions = claude_questions(input)?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (index, question) in questions.iter().enumerate() {
        let labels: Vec<Value> = question
            .options
            .iter()
            .map(|option| Value::String(clean(&option.label)))
            .collect();
        let title = bounded(&clean(&question.question), 300);
        let field = if question.multi_select {
            json!({"type": "array", "title": title, "items": {"type": "string", "enum": labels}, "minItems": 1})
        } else {
            json!({"type": "string", "title": title, "enum": labels})
        };
        let name = format!("q{}", index + 1);
        properties.insert(name.clone(), field);
        required.push(Value::String(name));
    }
    let message = format!("{run} asks you:");
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Ok((message, schema))
}
