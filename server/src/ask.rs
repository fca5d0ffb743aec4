//! `anteroom ask`: a command-line producer that behaves like the `@pulsemcp/mcp-elicitation` HTTP tier —
//! posts one question, polls until a person answers or the deadline passes, prints the answer as JSON.

#![allow(
    clippy::print_stdout,
    reason = "`anteroom ask` prints the answer it got on stdout"
)]

use std::time::Duration as StdDuration;

use anteroom_domain::clock::{Clock, SystemClock};
use anyhow::{Context, bail};
use chrono::Duration;
use serde_json::{Value, json};

use crate::config::AskArgs;

/// Exit statuses, one per outcome, so scripts can branch on them.
pub const EXIT_ACCEPT: u8 = 0;
pub const EXIT_ERROR: u8 = 1;
pub const EXIT_DECLINE: u8 = 2;
pub const EXIT_CANCEL: u8 = 3;
pub const EXIT_EXPIRED: u8 = 4;

fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// Parses `90s`, `10m`, `2h` or a bare number of seconds.
pub fn parse_timeout(raw: &str) -> anyhow::Result<Duration> {
    let raw = raw.trim();
    let (number, unit) = raw.split_at(raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len()));
    let value: i64 = number
        .parse()
        .with_context(|| format!("timeout {raw:?} is not like 90s, 10m or 2h"))?;
    let seconds = match unit {
        "" | "s" => value,
        "m" => value * 60,
        "h" => value * 3600,
        other => bail!("timeout unit {other:?} is not one of s, m, h"),
    };
    if seconds <= 0 {
        bail!("timeout must be positive");
    }
    Ok(Duration::seconds(seconds))
}

fn schema(raw: Option<&str>) -> anyhow::Result<Value> {
    let text = match raw {
        None => {
            return Ok(json!({
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Answer"}},
                "required": ["answer"]
            }));
        }
        Some(path) if let Some(file) = path.strip_prefix('@') => std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the schema file {file}"))?,
        Some(inline) => inline.to_owned(),
    };
    serde_json::from_str(&text).context("--schema is not valid JSON")
}

/// Runs the question to its end and returns the exit status.
pub async fn run(args: AskArgs) -> anyhow::Result<u8> {
    let request_url =
        env("ELICITATION_REQUEST_URL").context("ELICITATION_REQUEST_URL is not set")?;
    let poll_url = env("ELICITATION_POLL_URL").context("ELICITATION_POLL_URL is not set")?;
    let session_id = env("ELICITATION_SESSION_ID");
    // A window given here is the asker's own deadline, fixed; without one the question follows Anteroom's
    // deadline, which a person may extend, and this command waits for as long as Anteroom says it is open.
    let window = match (&args.timeout, env("ELICITATION_TTL_MS")) {
        (Some(timeout), _) => Some(parse_timeout(timeout)?),
        (None, Some(ttl)) => Some(Duration::milliseconds(
            ttl.parse().context("ELICITATION_TTL_MS is not a number")?,
        )),
        (None, None) => None,
    };
    let request_id = uuid::Uuid::new_v4().to_string();
    let own_deadline = window.map(|window| SystemClock.now() + window);
    let mut meta = json!({
        "com.pulsemcp/request-id": request_id,
        "com.pulsemcp/tool-name": args.tool_name,
    });
    if let Some(deadline) = own_deadline {
        meta["com.pulsemcp/expires-at"] = json!(anteroom_domain::expiry::wire_time(deadline));
    }
    // However long Anteroom keeps it open, a question ends within seven days.
    let deadline =
        own_deadline.unwrap_or_else(|| SystemClock.now() + anteroom_domain::expiry::MAX_WINDOW);
    if let Some(session_id) = &session_id {
        meta["com.pulsemcp/session-id"] = json!(session_id);
    }
    let body = json!({
        "mode": "form",
        "message": args.message,
        "requestedSchema": schema(args.schema.as_deref())?,
        "_meta": meta,
    });

    let client = reqwest::Client::builder()
        .timeout(StdDuration::from_secs(40))
        .build()?;
    let created = client
        .post(&request_url)
        .json(&body)
        .send()
        .await
        .context("cannot reach Anteroom")?;
    let status = created.status();
    let reply: Value = created
        .json()
        .await
        .context("Anteroom's reply is not JSON")?;
    if !status.is_success() {
        bail!("Anteroom refused the question ({status}): {reply}");
    }
    let id = reply["requestId"]
        .as_str()
        .unwrap_or(&request_id)
        .to_owned();
    match own_deadline {
        Some(deadline) => eprintln!(
            "Asked; waiting for a person (until {}).",
            anteroom_domain::expiry::wire_time(deadline)
        ),
        None => eprintln!(
            "Asked; waiting for a person (until Anteroom's deadline, which may be extended)."
        ),
    }

    loop {
        // `wait` makes Anteroom hold the poll until an answer arrives; a server without it answers at once.
        let url = format!("{}/{id}?wait=25", poll_url.trim_end_matches('/'));
        let response = client
            .get(&url)
            .send()
            .await
            .context("cannot reach Anteroom")?;
        let status = response.status();
        let answer: Value = response
            .json()
            .await
            .context("Anteroom's poll reply is not JSON")?;
        if !status.is_success() {
            bail!("polling failed ({status}): {answer}");
        }
        let code = match answer["action"].as_str() {
            Some("pending") => {
                if SystemClock.now() > deadline + Duration::seconds(60) {
                    bail!("no answer and no expiry 60 s after the deadline");
                }
                tokio::time::sleep(StdDuration::from_secs(1)).await;
                continue;
            }
            Some("accept") => EXIT_ACCEPT,
            Some("cancel") => EXIT_CANCEL,
            Some("expired") => EXIT_EXPIRED,
            // The real client reads anything else as a decline.
            _ => EXIT_DECLINE,
        };
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_like_a_person_writes_them() {
        assert_eq!(parse_timeout("90s").ok(), Some(Duration::seconds(90)));
        assert_eq!(parse_timeout("10m").ok(), Some(Duration::minutes(10)));
        assert_eq!(parse_timeout("2h").ok(), Some(Duration::hours(2)));
        assert_eq!(parse_timeout("45").ok(), Some(Duration::seconds(45)));
        assert!(parse_timeout("soon").is_err());
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("5d").is_err());
    }
}
