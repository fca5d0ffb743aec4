//! `anteroom hook codex-pre-tool-use`: Codex's command hook. The `PreToolUse` event arrives on stdin (Codex
//! sends Claude Code's JSON); Anteroom's hook route asks the session of the environment block's
//! `ELICITATION_REQUEST_URL`; the decision goes to stdout and the exit status is 0 whatever happened, since a
//! failed hook would let the call go on: when Anteroom cannot be reached or refuses, the printed decision is a
//! deny that says why.

#![allow(
    clippy::print_stdout,
    reason = "the decision printed on stdout is what the harness reads"
)]

use std::{io::Read, time::Duration};

use anteroom_domain::hooks::pre_tool_use_reply;
use anyhow::Context;

/// The most of stdin read: a hook event larger than the server would take is refused here.
const EVENT_LIMIT: u64 = 1024 * 1024;

pub async fn codex_pre_tool_use(timeout: u64) -> anyhow::Result<u8> {
    let decision = match ask(timeout).await {
        Ok(decision) => decision,
        Err(error) => pre_tool_use_reply(
            "deny",
            &format!("Anteroom could not ask a person, so the call is not allowed: {error:#}"),
            None,
        )
        .to_string(),
    };
    // No decision is no output: the harness goes on as it would without the hook.
    if !decision.trim().is_empty() {
        println!("{}", decision.trim());
    }
    Ok(0)
}

/// Posts the event on stdin to Anteroom's hook route and returns its reply (empty: no decision).
async fn ask(timeout: u64) -> anyhow::Result<String> {
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
        // Anteroom answers before the hook's own timeout; a few seconds more cover the reply's way back.
        .timeout(Duration::from_secs(timeout.saturating_add(5)))
        .build()?;
    let reply = client
        .post(format!("{base}/hooks/codex/pre-tool-use?timeout={timeout}"))
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
    Ok(body)
}
