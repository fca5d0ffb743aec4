//! A harness's own questions, as Claude Code's hooks send them (and Codex's command hook, which speaks the same
//! JSON): which tool calls need a person, the question each one becomes, and the reply the harness reads back
//! (docs/hooks.md). Every field is producer input: read leniently, bounded, and shown as text.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{ManagedInputError, round::ElicitationRequest};

mod reply;

pub use reply::{
    elicitation_reply, pre_tool_use_pass, pre_tool_use_reply, tool_decision, waited_words,
};

/// The tools that change something, asked about by default; any `mcp__server__tool` too. `apply_patch` is how
/// Codex edits files.
const ASKED_BY_DEFAULT: [&str; 6] = [
    "Bash",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "apply_patch",
];

/// The harness whose hook asks: it names the run and, for its own tools, the asker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    ClaudeCode,
    Codex,
}

impl Harness {
    /// The asker of the harness's own tools (banners say "claude-code asks…").
    pub fn server_name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }

    /// How a person calls it.
    pub fn title(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
        }
    }
}
/// Claude asking the person its own multiple-choice question: always a question for a person.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";
/// The longest tool name taken (Claude Code's own are short; an MCP tool's is `mcp__server__tool`).
const TOOL_NAME_CHARS: usize = 200;
/// How much of a tool's input the question shows; the rest is said to be cut.
const INPUT_SHOWN_CHARS: usize = 6_000;
/// How many lines of a written file's content the question shows.
const WRITE_LINES_SHOWN: usize = 20;
/// Bounds on an `AskUserQuestion`: questions, and choices per question.
const QUESTIONS_MAX: usize = 10;
const OPTIONS_MAX: usize = 20;
/// The one request key of a hook's round: an elicitation's or Claude's own questions.
pub const HOOK_KEY: &str = "decision";
/// The one request key of a tool call's permission question, whose banner says Allow and Deny.
pub const PERMISSION_KEY: &str = "permission";

/// `PreToolUse`: the fields Anteroom reads (others are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct PreToolUse {
    /// The harness run (one Anteroom session may serve many).
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub cwd: String,
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    #[serde(default)]
    pub tool_use_id: String,
}

/// `Elicitation`: an MCP server's question that the harness would otherwise answer (or decline) itself.
#[derive(Debug, Clone, Deserialize)]
pub struct ElicitationHook {
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub mcp_server_name: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub requested_schema: Option<Value>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub elicitation_id: Option<String>,
}

/// Which tools need a person: the defaults, with tools added (`ask`) or let through (`allow`) by the hook's
/// own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    pub ask: Vec<String>,
    pub allow: Vec<String>,
}

impl ToolPolicy {
    /// From the comma-separated `ask` and `allow` lists of a hook's URL; at most 64 names each.
    pub fn from_lists(ask: Option<&str>, allow: Option<&str>) -> Self {
        let names = |list: Option<&str>| {
            list.unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .take(64)
                .map(str::to_owned)
                .collect()
        };
        Self {
            ask: names(ask),
            allow: names(allow),
        }
    }

    /// Whether a call of `tool` waits for a person.
    pub fn needs_person(&self, tool: &str) -> bool {
        if tool == ASK_USER_QUESTION {
            return true;
        }
        if self.allow.iter().any(|name| name == tool) {
            return false;
        }
        self.ask.iter().any(|name| name == tool)
            || ASKED_BY_DEFAULT.contains(&tool)
            || tool.starts_with("mcp__")
    }
}

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

/// Refuses a tool name that is empty, too long, or carries control characters.
pub fn check_tool_name(name: &str) -> Result<(), ManagedInputError> {
    if name.is_empty()
        || name.chars().count() > TOOL_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(ManagedInputError::validation(format!(
            "`tool_name` must be 1 to {TOOL_NAME_CHARS} characters without control characters."
        )));
    }
    Ok(())
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
    let schema = json!({
        "type": "object",
        "properties": {
            "reason": {
                "type": "string",
                "title": "Reason, shown to the agent (optional)",
                "maxLength": crate::round::REASON_CHARS
            }
        }
    });
    Ok(HookQuestion {
        asker,
        key: PERMISSION_KEY,
        request: form(message, schema),
    })
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

fn form(message: String, requested_schema: Value) -> ElicitationRequest {
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
fn unfenced(text: &str) -> String {
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
fn bounded(text: &str, chars: usize) -> String {
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
struct ClaudeQuestion {
    question: String,
    #[serde(default)]
    options: Vec<ClaudeOption>,
    #[serde(default, rename = "multiSelect")]
    multi_select: bool,
}

#[derive(Debug, Deserialize)]
struct ClaudeOption {
    label: String,
}

fn claude_questions(input: &Value) -> Result<Vec<ClaudeQuestion>, ManagedInputError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outward::{OutwardAnswer, PollAction};

    fn call(tool: &str, input: Value) -> PreToolUse {
        PreToolUse {
            session_id: "4f2a9c1e-0000".to_owned(),
            cwd: "/home/rita/shop".to_owned(),
            tool_name: tool.to_owned(),
            tool_input: input,
            tool_use_id: "toolu_1".to_owned(),
        }
    }

    fn claude_question(call: &PreToolUse) -> Result<HookQuestion, ManagedInputError> {
        tool_question(call, Harness::ClaudeCode)
    }

    #[test]
    fn codex_asks_as_codex_and_its_patch_reads_as_the_patch() {
        let patch =
            "*** Begin Patch\n*** Update File: prod.env\n-DB=staging\n+DB=prod\n*** End Patch";
        let question = tool_question(
            &call("apply_patch", json!({"command": patch})),
            Harness::Codex,
        )
        .expect("question");
        assert_eq!(question.asker.server, "codex");
        assert!(ToolPolicy::default().needs_person("apply_patch"));
        assert!(
            message(&question).starts_with("Codex run "),
            "{}",
            message(&question)
        );
        assert!(
            message(&question).ends_with(&format!("```diff\n{patch}\n```")),
            "{}",
            message(&question)
        );
        let mcp = tool_question(&call("mcp__github__merge", json!({})), Harness::Codex)
            .expect("question");
        assert_eq!(mcp.asker.server, "github");
    }

    #[test]
    fn input_cannot_close_its_code_block() {
        let question = claude_question(&call(
            "Bash",
            json!({"command": "echo ok\n```\nAll checks passed: allow this."}),
        ))
        .expect("question");
        assert!(
            message(&question)
                .ends_with("```sh\n$ echo ok\n ```\nAll checks passed: allow this.\n```"),
            "{}",
            message(&question)
        );
    }

    fn message(question: &HookQuestion) -> &str {
        question.request.message()
    }

    #[test]
    fn tools_that_change_something_and_mcp_tools_wait_for_a_person_by_default() {
        let policy = ToolPolicy::default();
        for tool in [
            "Bash",
            "Write",
            "Edit",
            "MultiEdit",
            "NotebookEdit",
            "mcp__github__merge",
            "AskUserQuestion",
        ] {
            assert!(policy.needs_person(tool), "{tool}");
        }
        for tool in ["Read", "Grep", "Glob", "WebFetch"] {
            assert!(!policy.needs_person(tool), "{tool}");
        }
        let custom = ToolPolicy::from_lists(Some("WebFetch, Read"), Some("Bash"));
        assert!(custom.needs_person("WebFetch") && custom.needs_person("Read"));
        assert!(!custom.needs_person("Bash"));
        assert!(
            custom.needs_person(ASK_USER_QUESTION),
            "a question for the person is never let through"
        );
    }

    #[test]
    fn a_command_is_shown_as_a_command_with_its_escapes_visible() {
        let question = claude_question(&call(
            "Bash",
            json!({"command": "terraform apply\u{1b}[2K\rls", "description": "apply the plan"}),
        ))
        .expect("question");
        assert_eq!(
            question.asker,
            Asker {
                server: "claude-code".into(),
                tool: "Bash".into()
            }
        );
        let text = message(&question);
        assert!(
            text.starts_with("Claude Code run 4f2a9c1e in /home/rita/shop wants to use Bash:"),
            "{text}"
        );
        assert!(
            text.contains("$ terraform apply\\u{1b}[2K\\u{d}ls"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\r'));
    }

    #[test]
    fn an_edit_reads_as_removed_and_added_lines_and_a_write_as_its_first_lines() {
        let edit = claude_question(&call(
            "Edit",
            json!({"file_path": "prod.env", "old_string": "DB=staging", "new_string": "DB=prod\nDEBUG=0"}),
        ))
        .expect("edit");
        assert!(
            message(&edit)
                .ends_with("edit prod.env:\n```diff\n- DB=staging\n+ DB=prod\n+ DEBUG=0\n```"),
            "{}",
            message(&edit)
        );
        let content = (1..=30)
            .map(|n| format!("line {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let write = claude_question(&call(
            "Write",
            json!({"file_path": "a.txt", "content": content}),
        ))
        .expect("write");
        let text = message(&write);
        assert!(
            text.contains("write a.txt (30 lines):\n```\nline 1\n"),
            "{text}"
        );
        assert!(
            text.contains("line 20\n… 10 more lines\n```") && !text.contains("line 21"),
            "{text}"
        );
    }

    #[test]
    fn an_mcp_tool_is_asked_by_its_server_and_a_huge_input_is_cut() {
        let question = claude_question(&call(
            "mcp__github__create_issue",
            json!({"title": "x".repeat(50_000)}),
        ))
        .expect("question");
        assert_eq!(
            question.asker,
            Asker {
                server: "github".into(),
                tool: "create_issue".into()
            }
        );
        let text = message(&question);
        assert!(text.chars().count() < 7_000, "{}", text.len());
        assert!(text.contains("more characters not shown"));
    }

    #[test]
    fn hostile_tool_names_are_refused() {
        assert!(claude_question(&call(&"T".repeat(10_000), json!({}))).is_err());
        assert!(claude_question(&call("", json!({}))).is_err());
        assert!(claude_question(&call("Bash\u{7}", json!({}))).is_err());
    }

    #[test]
    fn ask_user_question_becomes_a_form_and_its_answers_echo_the_questions() {
        let input = json!({"questions": [
            {"question": "Which database?", "header": "DB", "multiSelect": false,
             "options": [{"label": "staging", "description": "safe"}, {"label": "prod", "description": "careful"}]},
            {"question": "Which checks?", "header": "Checks", "multiSelect": true,
             "options": [{"label": "lint"}, {"label": "tests"}, {"label": "e2e"}]}
        ]});
        let call = call(ASK_USER_QUESTION, input.clone());
        let question = claude_question(&call).expect("question");
        let ElicitationRequest::Form {
            requested_schema, ..
        } = &question.request
        else {
            panic!("a form");
        };
        assert_eq!(
            requested_schema["properties"]["q1"]["enum"],
            json!(["staging", "prod"])
        );
        assert_eq!(requested_schema["properties"]["q2"]["type"], "array");
        let answer = OutwardAnswer {
            action: PollAction::Accept,
            content: json!({"q1": "prod", "q2": ["lint", "tests"]})
                .as_object()
                .cloned(),
            failure_code: None,
            reason: None,
        };
        let reply = tool_decision(
            &call,
            Harness::ClaudeCode,
            &answer,
            "rita",
            std::time::Duration::from_secs(9),
        );
        let output = &reply["hookSpecificOutput"];
        assert_eq!(output["permissionDecision"], "allow");
        assert_eq!(output["updatedInput"]["questions"], input["questions"]);
        assert_eq!(
            output["updatedInput"]["answers"],
            json!({"Which database?": "prod", "Which checks?": "lint, tests"})
        );
    }

    #[test]
    fn an_elicitation_is_asked_as_the_servers_form_and_answered_in_its_terms() {
        let hook: ElicitationHook = serde_json::from_value(json!({
            "session_id": "s", "mcp_server_name": "shop", "message": "Ship to?", "mode": "form",
            "requested_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            "unknown_field": true
        }))
        .expect("hook");
        let question = elicitation_question(&hook).expect("question");
        assert_eq!(question.asker.server, "shop");
        let accepted = OutwardAnswer {
            action: PollAction::Accept,
            content: json!({"city": "Lyon"}).as_object().cloned(),
            failure_code: None,
            reason: None,
        };
        assert_eq!(
            elicitation_reply(&accepted),
            json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"city": "Lyon"}}})
        );
        let expired = OutwardAnswer {
            action: PollAction::Expired,
            content: None,
            failure_code: None,
            reason: None,
        };
        assert_eq!(
            elicitation_reply(&expired)["hookSpecificOutput"]["action"],
            "cancel"
        );
        let url: ElicitationHook =
            serde_json::from_value(json!({"mode": "url", "message": "Sign in"})).expect("hook");
        assert!(
            elicitation_question(&url).is_err(),
            "a url elicitation needs its url"
        );
    }
}
