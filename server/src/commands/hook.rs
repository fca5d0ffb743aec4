//! `anteroom hook codex-pre-tool-use`: Codex's command hook. The `PreToolUse` event arrives on stdin (Codex
//! sends Claude Code's JSON); Anteroom's hook route asks the session of the environment block's
//! `ELICITATION_REQUEST_URL` and its reply (a deny, a pass, or nothing) goes to stdout with exit status 0.
//! Codex lets a call go on whenever a hook fails (exit 1, a timeout, output it cannot read), so when no
//! decision can be reached — Anteroom away or refusing, no environment block, a reply that is not JSON — the
//! hook blocks the call the one way Codex never ignores: the reason on stderr and exit status 2. It also gives
//! up before Codex's own timeout would, for the same reason.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the decision printed on stdout, or the reason on stderr, is what the harness reads"
)]

use std::{io::Read, time::Duration};

use anyhow::Context;

/// The most of stdin read: a hook event larger than the server would take is refused here.
const EVENT_LIMIT: u64 = 1024 * 1024;
/// The exit status Codex reads as "blocked", with the reason on stderr.
const EXIT_BLOCK: u8 = 2;

/// Set by `anteroom run --offline-ok` when Anteroom could not be reached: the reason its hooks refuse with.
pub const OFFLINE_REASON: &str = "ANTEROOM_OFFLINE_REASON";

pub async fn codex_pre_tool_use(timeout: u64) -> anyhow::Result<u8> {
    if std::env::var_os(OFFLINE_REASON).is_some() {
        return Ok(offline());
    }
    match ask("/hooks/codex/pre-tool-use", timeout).await {
        Ok(reply) => {
            // No decision is no output: the harness goes on as it would without the hook.
            if !reply.is_empty() {
                println!("{reply}");
            }
            Ok(0)
        }
        Err(error) => {
            // Codex appends ". Command: …" to the reason.
            eprintln!(
                "Anteroom could not ask a person, so the call is not allowed: {}",
                format!("{error:#}").trim_end_matches('.')
            );
            Ok(EXIT_BLOCK)
        }
    }
}

/// Copilot CLI's `permissionRequest` command hook: the event on stdin, `{"behavior": "allow" | "deny", "message"}`
/// on stdout. When no decision can be reached the call is denied in Copilot's own terms, with the reason the
/// model reads (Copilot also denies on a failed hook, but says only "Permission request hook failed").
pub async fn copilot_permission_request(timeout: u64) -> anyhow::Result<u8> {
    let denied = |why: String| serde_json::json!({"behavior": "deny", "message": why.trim_end_matches('.').to_owned() + "."});
    let reply = if std::env::var_os(OFFLINE_REASON).is_some() {
        denied(std::env::var(OFFLINE_REASON).unwrap_or_default())
    } else {
        match ask("/hooks/copilot/permission-request", timeout).await {
            Ok(reply) if !reply.is_empty() => {
                println!("{reply}");
                return Ok(0);
            }
            Ok(_) => denied("Anteroom gave no decision, so the call is not allowed".to_owned()),
            Err(error) => denied(format!(
                "Anteroom could not ask a person, so the call is not allowed: {error:#}"
            )),
        }
    };
    println!("{reply}");
    Ok(0)
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
