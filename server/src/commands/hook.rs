//! `anteroom hook …`: the harnesses' command hooks (Codex's `PreToolUse` and `PermissionRequest`, Copilot CLI's
//! `permissionRequest` and `preToolUse`, Cursor's permission events, Gemini CLI's `BeforeTool`). The event
//! arrives on stdin; Anteroom's hook route asks the session of the environment block's
//! `ELICITATION_REQUEST_URL` and its reply (a decision, or nothing) goes to stdout with exit status 0. When no
//! decision can be reached — Anteroom away or refusing, no environment block, a reply that is not JSON — the
//! hook refuses the call in its harness's own terms: Codex lets a call go on whenever a hook fails (exit 1, a
//! timeout, output it cannot read), so for Codex that is the one way it never ignores, the reason on stderr and
//! exit status 2. The hook also gives up before the harness's own timeout would, for the same reason.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the decision printed on stdout, or the reason on stderr, is what the harness reads"
)]

use std::{io::Read, time::Duration};

use anteroom_domain::hooks::{
    Verdict, copilot_permission_reply, copilot_pre_tool_use_reply, cursor_reply,
    gemini_before_tool_reply,
};
use anteroom_server::config::HookCommand;
use anyhow::Context;

/// The most of stdin read: a hook event larger than the server would take is refused here.
const EVENT_LIMIT: u64 = 1024 * 1024;
/// The exit status Codex reads as "blocked", with the reason on stderr.
const EXIT_BLOCK: u8 = 2;

/// Set by `anteroom run --offline-ok` when Anteroom could not be reached: the reason its hooks refuse with.
pub const OFFLINE_REASON: &str = "ANTEROOM_OFFLINE_REASON";

/// A harness's command hook that `anteroom hook` relays to its route, and how each refuses when no decision can
/// be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandHook {
    CodexPreToolUse,
    CodexPermissionRequest,
    CopilotPermissionRequest,
    CopilotPreToolUse,
    Cursor,
    GeminiBeforeTool,
}

impl CommandHook {
    /// The hook a command names, and its timeout in seconds; `None` for the offline hook, which is not relayed.
    pub fn of(command: &HookCommand) -> Option<(Self, u64)> {
        let (hook, timeout) = match command {
            HookCommand::CodexPreToolUse(t) => (Self::CodexPreToolUse, t),
            HookCommand::CodexPermissionRequest(t) => (Self::CodexPermissionRequest, t),
            HookCommand::CopilotPermissionRequest(t) => (Self::CopilotPermissionRequest, t),
            HookCommand::CopilotPreToolUse(t) => (Self::CopilotPreToolUse, t),
            HookCommand::Cursor(t) => (Self::Cursor, t),
            HookCommand::GeminiBeforeTool(t) => (Self::GeminiBeforeTool, t),
            HookCommand::Offline => return None,
        };
        Some((hook, timeout.timeout))
    }

    fn route(self) -> &'static str {
        match self {
            Self::CodexPreToolUse => "/hooks/codex/pre-tool-use",
            Self::CodexPermissionRequest => "/hooks/codex/permission-request",
            Self::CopilotPermissionRequest => "/hooks/copilot/permission-request",
            Self::CopilotPreToolUse => "/hooks/copilot/pre-tool-use",
            Self::Cursor => "/hooks/cursor",
            Self::GeminiBeforeTool => "/hooks/gemini/before-tool",
        }
    }

    /// The harness's own refusal, printed when no person could decide: Codex lets a call run whenever a hook
    /// fails, so it gets the one refusal it never ignores (the reason on stderr, exit 2; it appends ". Command:
    /// …"); the others a deny in their own JSON, whose reason their model reads.
    fn refuse(self, why: &str) -> u8 {
        let verdict = Verdict::refused(why);
        let reply = match self {
            Self::CodexPreToolUse | Self::CodexPermissionRequest => {
                eprintln!("{}", why.trim_end_matches('.'));
                return EXIT_BLOCK;
            }
            Self::CopilotPermissionRequest => copilot_permission_reply(&verdict),
            Self::CopilotPreToolUse => copilot_pre_tool_use_reply(&verdict),
            Self::Cursor => cursor_reply(&verdict),
            Self::GeminiBeforeTool => gemini_before_tool_reply(&verdict),
        };
        println!("{reply}");
        0
    }
}

/// Relays the event on stdin to the hook's route and prints Anteroom's reply (nothing: no decision, the harness
/// goes on as it would without the hook). Every way of reaching no decision is the hook's refusal.
pub async fn relay(hook: CommandHook, timeout: u64) -> u8 {
    if std::env::var_os(OFFLINE_REASON).is_some() {
        return match hook {
            CommandHook::CodexPreToolUse => offline(),
            _ => hook.refuse(&std::env::var(OFFLINE_REASON).unwrap_or_default()),
        };
    }
    match ask(hook.route(), timeout).await {
        Ok(reply) => {
            if !reply.is_empty() {
                println!("{reply}");
            }
            0
        }
        Err(error) => hook.refuse(&format!(
            "Anteroom could not ask a person, so the call is not allowed: {error:#}"
        )),
    }
}

/// A run started without Anteroom (`anteroom run --offline-ok`): a call that would ask a person is refused with
/// the run's reason (stderr, exit status 2: a block for Claude Code and Codex alike); any other passes, as it
/// would with Anteroom there.
pub fn offline() -> u8 {
    let mut event = String::new();
    let _ = std::io::stdin()
        .take(EVENT_LIMIT)
        .read_to_string(&mut event);
    let tool = serde_json::from_str::<serde_json::Value>(&event)
        .ok()
        .and_then(|event| event["tool_name"].as_str().map(str::to_owned));
    let asks = tool
        .as_deref()
        .is_none_or(|tool| anteroom_domain::hooks::ToolPolicy::default().needs_person(tool));
    if !asks {
        return 0;
    }
    let reason = std::env::var(OFFLINE_REASON).unwrap_or_else(|_| {
        "Anteroom could not be reached when this run started, so nobody can be asked".to_owned()
    });
    eprintln!("{}", reason.trim_end_matches('.'));
    EXIT_BLOCK
}

/// How long the hook waits for Anteroom: less than Codex's own `timeout`, after which Codex would kill the
/// hook and let the call run. Anteroom itself answers well before this (docs/hooks.md).
fn reply_deadline(timeout: u64) -> Duration {
    let timeout = timeout.max(2);
    Duration::from_secs(timeout - (timeout / 10).clamp(1, 10))
}

/// Posts the event on stdin to Anteroom's hook route and returns its reply (empty: no decision), checked to be
/// JSON.
async fn ask(route: &str, timeout: u64) -> anyhow::Result<String> {
    let request_url = std::env::var("ELICITATION_REQUEST_URL").context(
        "ELICITATION_REQUEST_URL is not set: give the hook the session's environment block",
    )?;
    let (base, rest) = request_url
        .split_once("/api/v1/s/")
        .context("ELICITATION_REQUEST_URL is not a session's capability URL")?;
    let token = rest.split('/').next().unwrap_or_default();
    let mut event = String::new();
    std::io::stdin()
        .take(EVENT_LIMIT)
        .read_to_string(&mut event)
        .context("cannot read the hook's event on stdin")?;
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(reply_deadline(timeout))
        .build()?;
    let reply = client
        .post(format!("{base}{route}?timeout={timeout}"))
        .bearer_auth(token)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(event)
        .send()
        .await
        .context("Anteroom is not reachable")?;
    let status = reply.status();
    let body = reply.text().await.context("Anteroom's reply was cut")?;
    if !status.is_success() {
        let said: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        anyhow::bail!(
            "Anteroom refused the question ({status}): {}",
            said["message"].as_str().unwrap_or("no reason given")
        );
    }
    let reply = body.trim();
    if !reply.is_empty() {
        serde_json::from_str::<serde_json::Value>(reply).context("Anteroom's reply is not JSON")?;
    }
    Ok(reply.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_gives_up_before_codex_would_kill_it() {
        assert_eq!(reply_deadline(10), Duration::from_secs(9));
        assert_eq!(reply_deadline(600), Duration::from_secs(590));
        assert_eq!(reply_deadline(0), Duration::from_secs(1));
        for timeout in [1, 2, 10, 30, 600, 86_400] {
            assert!(reply_deadline(timeout) < Duration::from_secs(timeout.max(2)));
        }
    }
}
