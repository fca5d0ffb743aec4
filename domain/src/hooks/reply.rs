//! The reply a hook returns to its harness, in the words and the shape that harness's version accepts
//! (docs/hooks.md): a person's accept, decline or dismissal, or nobody answering, never read as something else.
//!
//! Claude Code takes `permissionDecision: "allow"` as it is. Codex 0.171 takes an allow only together with
//! `updatedInput`, and reports any other allow as a failed hook (which it then ignores, so the call runs by
//! accident): Codex's accept is therefore a pass that tells the model who allowed it (`additionalContext`), and
//! Codex's own policy decides the rest, as it would without the hook. Codex appends ". Command: …" to a deny's
//! reason, so its reasons do not end in a period.

use std::{collections::BTreeMap, time::Duration};

use serde_json::{Map, Value, json};

use super::{ASK_USER_QUESTION, Harness, PreToolUse, question::claude_questions};
use crate::outward::{OutwardAnswer, PollAction};

/// The `hookSpecificOutput` of a `PreToolUse` reply: allow or deny with the reason the model reads.
pub fn pre_tool_use_reply(decision: &str, reason: &str, updated_input: Option<Value>) -> Value {
    let mut output = json!({
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    });
    if let Some(input) = updated_input {
        output["updatedInput"] = input;
    }
    json!({ "hookSpecificOutput": output })
}

/// A `PreToolUse` reply that lets the call go on as it would without the hook and tells the model `context`:
/// Codex's pass.
pub fn pre_tool_use_pass(context: &str) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": context}})
}

/// How long Anteroom held a call, as a person says it: seconds under two minutes, else minutes (rounded up).
pub fn waited_words(waited: Duration) -> String {
    let seconds = waited.as_secs();
    if seconds < 120 {
        format!("{seconds} s")
    } else {
        format!("{} min", seconds.div_ceil(60))
    }
}

/// A deny's reason as `harness` shows it to the model: Codex adds ". Command: …" after it.
fn deny(harness: Harness, reason: &str) -> Value {
    let reason = match harness {
        Harness::Codex => reason.trim_end_matches('.'),
        _ => reason,
    };
    pre_tool_use_reply("deny", reason, None)
}

/// What a tool call's question came to, as `harness` reads it. `who` answered; `waited` is how long Anteroom
/// held the call when nobody did.
pub fn tool_decision(
    call: &PreToolUse,
    harness: Harness,
    answer: &OutwardAnswer,
    who: &str,
    waited: Duration,
) -> Value {
    let note = answer
        .content
        .as_ref()
        .and_then(|content| content.get("reason"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|note| !note.is_empty());
    match (answer.action, &answer.failure_code) {
        (PollAction::Accept, None)
            if call.tool_name == ASK_USER_QUESTION && harness == Harness::ClaudeCode =>
        {
            let answers = user_answers(&call.tool_input, answer.content.as_ref());
            let mut updated = call.tool_input.clone();
            if let Some(updated) = updated.as_object_mut() {
                updated.insert("answers".to_owned(), answers);
            }
            pre_tool_use_reply(
                "allow",
                &format!("Answered by {who} in Anteroom."),
                Some(updated),
            )
        }
        (PollAction::Accept, None) => {
            let reason = match note {
                Some(note) => format!("Allowed by {who} in Anteroom: {note}"),
                None => format!("Allowed by {who} in Anteroom."),
            };
            match harness {
                Harness::Codex => pre_tool_use_pass(&reason),
                _ => pre_tool_use_reply("allow", &reason, None),
            }
        }
        (PollAction::Decline, None) => {
            let reason = match answer.reason.as_deref() {
                Some(reason) => format!("Denied by {who} in Anteroom: {reason}"),
                None => format!("Denied by {who} in Anteroom."),
            };
            deny(harness, &reason)
        }
        (PollAction::Cancel, None) => {
            let reason = match answer.reason.as_deref() {
                Some(reason) => format!("Dismissed by {who} in Anteroom: {reason}"),
                None => format!("Dismissed by {who} in Anteroom: the call is not allowed."),
            };
            deny(harness, &reason)
        }
        (PollAction::Expired, None) => deny(
            harness,
            &format!(
                "Nobody answered in Anteroom within {}, so the call is not allowed. Ask again later or change \
                 the hook's policy.",
                waited_words(waited)
            ),
        ),
        (_, code) => deny(
            harness,
            &format!(
                "The question in Anteroom ended without an answer ({}), so the call is not allowed.",
                code.as_deref().unwrap_or("failed")
            ),
        ),
    }
}

/// `{"<question>": "<label>[, <label>]"}`, as `AskUserQuestion`'s `answers` reads.
fn user_answers(input: &Value, content: Option<&Map<String, Value>>) -> Value {
    let questions = claude_questions(input).unwrap_or_default();
    let mut answers = BTreeMap::new();
    for (index, question) in questions.iter().enumerate() {
        let chosen = content.and_then(|content| content.get(&format!("q{}", index + 1)));
        let text = match chosen {
            Some(Value::String(label)) => label.clone(),
            Some(Value::Array(labels)) => labels
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            _ => continue,
        };
        answers.insert(question.question.clone(), Value::String(text));
    }
    json!(answers)
}

/// The reply to an `Elicitation` hook: the person's action and, for accept, the form's content. A question
/// nobody answered, or that ended otherwise, is `cancel` (the person did not answer), never a made-up decline.
pub fn elicitation_reply(answer: &OutwardAnswer) -> Value {
    let action = match (answer.action, &answer.failure_code) {
        (PollAction::Accept, None) => "accept",
        (PollAction::Decline, None) => "decline",
        _ => "cancel",
    };
    let mut output = json!({"hookEventName": "Elicitation", "action": action});
    if action == "accept"
        && let Some(content) = &answer.content
    {
        output["content"] = Value::Object(content.clone());
    }
    json!({ "hookSpecificOutput": output })
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
            tool_use_id: "toolu_1".to_owned(),
        }
    }

    fn answer(action: PollAction, content: Option<Value>, failure: Option<&str>) -> OutwardAnswer {
        OutwardAnswer {
            action,
            content: content.and_then(|content| content.as_object().cloned()),
            failure_code: failure.map(str::to_owned),
            reason: None,
        }
    }

    /// The decision and its reason, as Claude Code reads them.
    fn claude(answer: &OutwardAnswer) -> (String, String) {
        let reply = tool_decision(
            &bash(),
            Harness::ClaudeCode,
            answer,
            "rita",
            Duration::from_secs(540),
        );
        let output = &reply["hookSpecificOutput"];
        let text = |key: &str| output[key].as_str().unwrap_or_default().to_owned();
        (text("permissionDecision"), text("permissionDecisionReason"))
    }

    #[test]
    fn each_outcome_is_an_honest_decision() {
        assert_eq!(
            claude(&answer(
                PollAction::Accept,
                Some(json!({"reason": "fine for staging"})),
                None
            )),
            (
                "allow".to_owned(),
                "Allowed by rita in Anteroom: fine for staging".to_owned()
            )
        );
        assert_eq!(
            claude(&answer(PollAction::Decline, None, None)),
            ("deny".to_owned(), "Denied by rita in Anteroom.".to_owned())
        );
        let with_reason = OutwardAnswer {
            reason: Some("touches the prod database".to_owned()),
            ..answer(PollAction::Decline, None, None)
        };
        assert_eq!(
            claude(&with_reason).1,
            "Denied by rita in Anteroom: touches the prod database"
        );
        assert!(
            claude(&answer(PollAction::Cancel, None, None))
                .1
                .contains("Dismissed by rita")
        );
        let expired = claude(&answer(PollAction::Expired, None, None));
        assert_eq!(expired.0, "deny", "nobody answering is never an allow");
        assert!(
            expired
                .1
                .contains("Nobody answered in Anteroom within 9 min")
        );
        assert_eq!(
            claude(&answer(PollAction::Expired, None, Some("revoked"))).0,
            "deny"
        );
    }

    #[test]
    fn codex_reads_an_accept_as_a_pass_that_names_who_allowed_it_and_reasons_without_a_final_period()
     {
        let codex = |answer: &OutwardAnswer, waited: u64| {
            tool_decision(
                &bash(),
                Harness::Codex,
                answer,
                "rita",
                Duration::from_secs(waited),
            )
        };
        assert_eq!(
            codex(&answer(PollAction::Accept, None, None), 5),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "additionalContext": "Allowed by rita in Anteroom."}}),
            "no permissionDecision: Codex 0.171 fails an allow without updatedInput"
        );
        let declined = codex(&answer(PollAction::Decline, None, None), 5);
        assert_eq!(declined["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(
            declined["hookSpecificOutput"]["permissionDecisionReason"],
            "Denied by rita in Anteroom"
        );
        let expired = codex(&answer(PollAction::Expired, None, None), 5);
        assert_eq!(
            expired["hookSpecificOutput"]["permissionDecisionReason"],
            "Nobody answered in Anteroom within 5 s, so the call is not allowed. Ask again later or change the \
             hook's policy"
        );
    }

    #[test]
    fn a_wait_is_said_in_seconds_then_in_whole_minutes() {
        assert_eq!(waited_words(Duration::from_secs(5)), "5 s");
        assert_eq!(waited_words(Duration::from_secs(119)), "119 s");
        assert_eq!(waited_words(Duration::from_secs(120)), "2 min");
        assert_eq!(waited_words(Duration::from_secs(570)), "10 min");
    }
}
