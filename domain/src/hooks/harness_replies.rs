//! The replies of the permission hooks that do not speak Claude Code's `PreToolUse`: Copilot CLI's
//! `permissionRequest` and `preToolUse`, the `PermissionRequest` of Qwen Code and Codex, Cursor's
//! `beforeShellExecution` / `beforeMCPExecution` / `preToolUse` and Gemini CLI's `BeforeTool` — each in the shape
//! its harness reads (docs/hooks.md, checked with the real harness where it runs here). All start from the one
//! [`Verdict`] of [`tool_decision`], so every harness's model reads the same words for the same answer.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Harness, PreToolUse, reply::tool_decision};
use crate::outward::{OutwardAnswer, PollAction};

/// What a tool call's question came to: allowed or not, whether the person dismissed it (a harness that can
/// stop its turn does), and the reason the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    pub dismissed: bool,
    pub reason: String,
}

impl Verdict {
    /// The verdict of `answer`, in the words Claude Code's reply carries: nobody answering, or a question that
    /// ended otherwise, is never an allow.
    pub fn of(call: &PreToolUse, answer: &OutwardAnswer, who: &str, waited: Duration) -> Self {
        let decided = tool_decision(call, Harness::ClaudeCode, answer, who, waited);
        let output = &decided["hookSpecificOutput"];
        Self {
            allowed: output["permissionDecision"] == "allow",
            dismissed: answer.action == PollAction::Cancel && answer.failure_code.is_none(),
            reason: output["permissionDecisionReason"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// A deny that says why no person could decide (Anteroom away, refusing, the hook's event unreadable).
    pub fn refused(why: &str) -> Self {
        Self {
            allowed: false,
            dismissed: false,
            reason: format!("{}.", why.trim_end_matches('.')),
        }
    }
}

/// Copilot CLI's `permissionRequest` reply (checked with Copilot CLI 1.0.102 in `-p`): `{"behavior": "allow"}`,
/// or `{"behavior": "deny", "message"}` whose message the model reads after "Permission denied by a
/// PermissionRequest hook: "; a dismissal also ends the turn (`interrupt`), as Codex's cancel does.
pub fn copilot_permission_reply(verdict: &Verdict) -> Value {
    match verdict {
        Verdict { allowed: true, .. } => json!({"behavior": "allow"}),
        Verdict {
            dismissed: true,
            reason,
            ..
        } => json!({"behavior": "deny", "message": reason, "interrupt": true}),
        Verdict { reason, .. } => json!({"behavior": "deny", "message": reason}),
    }
}

/// Copilot CLI's `preToolUse` reply (checked with Copilot CLI 1.0.102 in `-p`): an allow runs the call without
/// Copilot's own prompt; the model reads a deny as "Denied by preToolUse hook: REASON". Never `ask`: in `-p`
/// that is a deny saying nobody could be asked.
pub fn copilot_pre_tool_use_reply(verdict: &Verdict) -> Value {
    json!({
        "permissionDecision": if verdict.allowed { "allow" } else { "deny" },
        "permissionDecisionReason": verdict.reason,
    })
}

/// The `PermissionRequest` reply of Qwen Code (checked with Qwen Code 0.24.4) and Codex (checked against the
/// schema Codex 0.171 ships): `decision.behavior` allow or deny, a deny's `message` read by the model. A
/// dismissal stops Qwen's turn (`interrupt`); Codex fails a hook that sets `interrupt`, so it gets the deny alone.
pub fn permission_request_reply(harness: Harness, verdict: &Verdict) -> Value {
    let decision = if verdict.allowed {
        json!({"behavior": "allow"})
    } else if verdict.dismissed && harness == Harness::QwenCode {
        json!({"behavior": "deny", "message": verdict.reason, "interrupt": true})
    } else {
        json!({"behavior": "deny", "message": verdict.reason})
    };
    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
}

/// Cursor's reply to `beforeShellExecution`, `beforeMCPExecution` and `preToolUse` (its documented schema; Cursor
/// cannot run here): `permission` allow or deny, the reason shown to the person (`user_message`) and the model
/// (`agent_message`). Never `ask`: a headless agent has nobody to ask.
pub fn cursor_reply(verdict: &Verdict) -> Value {
    json!({
        "permission": if verdict.allowed { "allow" } else { "deny" },
        "user_message": verdict.reason,
        "agent_message": verdict.reason,
    })
}

/// Gemini CLI's `BeforeTool` reply (checked with Gemini CLI 0.61.0 in `-p`), a guard that can only refuse: a
/// deny blocks the call and the model reads "Tool execution blocked: REASON"; an allow is no decision (`{}`),
/// because Gemini runs its own approval after the hook whatever it says. Never `ask`: `-p` then waits for ever.
pub fn gemini_before_tool_reply(verdict: &Verdict) -> Value {
    if verdict.allowed {
        json!({})
    } else {
        json!({"decision": "deny", "reason": verdict.reason})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash() -> PreToolUse {
        PreToolUse {
            session_id: "4f2a9c1e-0000".to_owned(),
            cwd: "/home/rita/shop".to_owned(),
            tool_name: "Bash".to_owned(),
            tool_input: json!({"command": "ls"}),
            tool_use_id: String::new(),
        }
    }

    fn answer(action: PollAction, reason: Option<&str>, failure: Option<&str>) -> OutwardAnswer {
        OutwardAnswer {
            action,
            content: None,
            failure_code: failure.map(str::to_owned),
            reason: reason.map(str::to_owned),
        }
    }

    fn verdict(action: PollAction, reason: Option<&str>, failure: Option<&str>) -> Verdict {
        Verdict::of(
            &bash(),
            &answer(action, reason, failure),
            "rita",
            Duration::from_secs(20),
        )
    }

    #[test]
    fn nobody_answering_and_a_question_that_failed_are_never_an_allow() {
        assert!(verdict(PollAction::Accept, None, None).allowed);
        for (action, failure) in [
            (PollAction::Expired, None),
            (PollAction::Expired, Some("revoked")),
            (PollAction::Accept, Some("failed")),
            (PollAction::Decline, None),
            (PollAction::Cancel, None),
        ] {
            let verdict = verdict(action, None, failure);
            assert!(!verdict.allowed, "{action:?} {failure:?}");
            assert!(!verdict.reason.is_empty());
        }
        assert!(verdict(PollAction::Cancel, None, None).dismissed);
        assert!(!verdict(PollAction::Expired, None, None).dismissed);
        assert!(
            verdict(PollAction::Expired, None, None)
                .reason
                .starts_with("Nobody answered in Anteroom within 20 s")
        );
        assert_eq!(
            Verdict::refused("Anteroom is not reachable.").reason,
            "Anteroom is not reachable."
        );
    }

    #[test]
    fn copilot_reads_allow_and_a_deny_with_its_reason_and_a_dismissal_ends_the_turn() {
        assert_eq!(
            copilot_permission_reply(&verdict(PollAction::Accept, None, None)),
            json!({"behavior": "allow"})
        );
        assert_eq!(
            copilot_permission_reply(&verdict(
                PollAction::Decline,
                Some("not on a Friday."),
                None
            )),
            json!({"behavior": "deny", "message": "Denied by rita in Anteroom: not on a Friday."})
        );
        assert_eq!(
            copilot_permission_reply(&verdict(PollAction::Cancel, None, None))["interrupt"],
            true
        );
        assert_eq!(
            copilot_pre_tool_use_reply(&verdict(PollAction::Decline, Some("no."), None)),
            json!({"permissionDecision": "deny",
                "permissionDecisionReason": "Denied by rita in Anteroom: no."})
        );
        assert_eq!(
            copilot_pre_tool_use_reply(&verdict(PollAction::Accept, None, None))["permissionDecision"],
            "allow"
        );
    }

    #[test]
    fn permission_requests_carry_the_decision_and_only_qwen_is_interrupted() {
        let allowed = verdict(PollAction::Accept, None, None);
        for harness in [Harness::QwenCode, Harness::Codex] {
            assert_eq!(
                permission_request_reply(harness, &allowed),
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                    "decision": {"behavior": "allow"}}})
            );
        }
        let dismissed = verdict(PollAction::Cancel, Some("wrong repo"), None);
        let qwen = permission_request_reply(Harness::QwenCode, &dismissed);
        assert_eq!(qwen["hookSpecificOutput"]["decision"]["interrupt"], true);
        let codex = permission_request_reply(Harness::Codex, &dismissed);
        assert_eq!(
            codex["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "Dismissed by rita in Anteroom: wrong repo"}),
            "Codex fails a hook that sets interrupt"
        );
    }

    /// The schemas Codex 0.171 ships for its `PermissionRequest` command hook (`codex-rs/hooks/schema`).
    #[test]
    fn codex_takes_every_permission_request_reply_by_its_own_schema() {
        let schema: Value = serde_json::from_str(include_str!(
            "fixtures/permission-request.command.output.schema.json"
        ))
        .expect("schema");
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        for action in [
            PollAction::Accept,
            PollAction::Decline,
            PollAction::Cancel,
            PollAction::Expired,
        ] {
            let reply = permission_request_reply(Harness::Codex, &verdict(action, None, None));
            assert!(validator.is_valid(&reply), "{action:?}: {reply}");
            assert!(
                reply["hookSpecificOutput"]["decision"]
                    .get("interrupt")
                    .is_none(),
                "Codex fails closed on interrupt"
            );
        }
        let input: Value = serde_json::from_str(include_str!(
            "fixtures/permission-request.command.input.schema.json"
        ))
        .expect("schema");
        for field in ["tool_name", "tool_input", "cwd", "session_id", "turn_id"] {
            assert!(
                input["required"]
                    .as_array()
                    .is_some_and(|required| required.iter().any(|name| name == field)),
                "Codex always sends {field}"
            );
        }
    }

    #[test]
    fn cursor_and_gemini_never_ask_and_gemini_allows_by_saying_nothing() {
        let declined = verdict(PollAction::Decline, None, None);
        assert_eq!(
            cursor_reply(&declined),
            json!({"permission": "deny", "user_message": "Denied by rita in Anteroom.",
                "agent_message": "Denied by rita in Anteroom."})
        );
        assert_eq!(
            cursor_reply(&verdict(PollAction::Accept, None, None))["permission"],
            "allow"
        );
        assert_eq!(
            gemini_before_tool_reply(&declined),
            json!({"decision": "deny", "reason": "Denied by rita in Anteroom."})
        );
        assert_eq!(
            gemini_before_tool_reply(&verdict(PollAction::Accept, None, None)),
            json!({})
        );
    }

    #[test]
    fn each_harness_shell_tool_reads_as_a_command() {
        for (harness, name) in [
            (Harness::QwenCode, "run_shell_command"),
            (Harness::GeminiCli, "run_shell_command"),
            (Harness::CopilotCli, "bash"),
            (Harness::Cursor, "Shell"),
        ] {
            assert_eq!(harness.tool_name(name), "Bash", "{harness:?}");
        }
        assert_eq!(Harness::GeminiCli.tool_name("replace"), "Edit");
        assert_eq!(Harness::QwenCode.tool_name("write_file"), "Write");
        assert_eq!(Harness::Cursor.tool_name("Read"), "Read");
        assert_eq!(Harness::ClaudeCode.tool_name("bash"), "bash");
    }
}
