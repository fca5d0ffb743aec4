//! A harness's own questions, as Claude Code's hooks send them (and Codex's command hook, which speaks the same
//! JSON, and Codex's app server, which asks in its own): which tool calls need a person, the question each one becomes, and the reply the harness reads back
//! (docs/hooks.md). Every field is producer input: read leniently, bounded, and shown as text.

use serde::Deserialize;
use serde_json::Value;

mod acp;
mod codex_app;
mod harness_replies;
mod policy;
mod question;
mod reply;

pub use acp::{AcpOption, AcpPermission, AcpReply, update_line as acp_update_line};
pub use codex_app::{
    ASKED_METHODS, AppServerRequest, CodexAsk, CodexReply, REFUSED_METHODS, Thread,
};
pub use harness_replies::{
    Verdict, copilot_permission_reply, copilot_pre_tool_use_reply, cursor_reply,
    gemini_before_tool_reply, permission_request_reply,
};
pub use policy::{ToolPolicy, check_tool_name};
pub use question::{Asker, HookQuestion, clean, elicitation_question, tool_question};

pub use reply::{
    elicitation_reply, pre_tool_use_pass, pre_tool_use_reply, tool_decision, waited_words,
};

/// The harness whose hook asks: it names the run and, for its own tools, the asker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    ClaudeCode,
    Codex,
    CopilotCli,
    QwenCode,
    Cursor,
    GeminiCli,
}

impl Harness {
    /// The asker of the harness's own tools (banners say "claude-code asks…").
    pub fn server_name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::CopilotCli => "copilot",
            Self::QwenCode => "qwen-code",
            Self::Cursor => "cursor",
            Self::GeminiCli => "gemini",
        }
    }

    /// How a person calls it.
    pub fn title(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::CopilotCli => "Copilot CLI",
            Self::QwenCode => "Qwen Code",
            Self::Cursor => "Cursor",
            Self::GeminiCli => "Gemini CLI",
        }
    }

    /// A tool of the harness's own by the name Anteroom's policy and questions use, where its input has the
    /// same shape as Claude Code's tool of that name: a shell call is `Bash` (its `command` shown as a
    /// command), a new file `Write`, an edit `Edit`. Other names stay as the harness spells them.
    pub fn tool_name(self, name: &str) -> String {
        let same = match (self, name) {
            (Self::QwenCode | Self::GeminiCli, "run_shell_command")
            | (Self::CopilotCli, "bash")
            | (Self::Cursor, "Shell") => "Bash",
            (Self::QwenCode | Self::GeminiCli, "write_file") => "Write",
            (Self::QwenCode | Self::GeminiCli, "replace" | "edit") => "Edit",
            _ => name,
        };
        same.to_owned()
    }
}

/// Claude asking the person its own multiple-choice question: always a question for a person.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";
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
#[derive(Debug, Clone, PartialEq, Deserialize)]
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::outward::{OutwardAnswer, PollAction};
    use crate::{ManagedInputError, round::ElicitationRequest};

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
