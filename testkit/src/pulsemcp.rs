//! A clean-room client written from docs/protocol.md, behaving exactly like `@pulsemcp/mcp-elicitation`'s HTTP tier:
//! only `Content-Type` is sent, only a top-level `requestId` is read, any non-2xx or non-JSON reply fails the
//! tool call, and an action it does not know reads as a decline.

use serde_json::{Value, json};

/// Why the agent's tool call would fail.
#[derive(Debug)]
pub struct ToolCallFailed(pub String);

/// The answer as the client understands it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Pending,
    Accept(Option<Value>),
    Decline,
    Cancel,
    Expired,
}

pub struct PulsemcpClient {
    pub request_url: String,
    pub poll_url: String,
    pub session_id: Option<String>,
    http: reqwest::Client,
}

impl PulsemcpClient {
    pub fn new(request_url: &str, poll_url: &str, session_id: Option<&str>) -> Self {
        Self {
            request_url: request_url.to_owned(),
            poll_url: poll_url.to_owned(),
            session_id: session_id.map(str::to_owned),
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .expect("client"),
        }
    }

    /// The body the real client posts.
    pub fn body(
        &self,
        request_id: &str,
        message: &str,
        schema: Value,
        tool: &str,
        expires_at: &str,
    ) -> Value {
        let mut meta = json!({
            "com.pulsemcp/request-id": request_id,
            "com.pulsemcp/expires-at": expires_at,
            "com.pulsemcp/tool-name": tool,
        });
        if let Some(session) = &self.session_id {
            meta["com.pulsemcp/session-id"] = json!(session);
        }
        json!({"mode": "form", "message": message, "requestedSchema": schema, "_meta": meta})
    }

    /// Posts a question; returns the id to poll.
    pub async fn create(&self, request_id: &str, body: &Value) -> Result<String, ToolCallFailed> {
        let reply = self
            .http
            .post(&self.request_url)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| ToolCallFailed(format!("network: {e}")))?;
        let status = reply.status();
        let text = reply
            .text()
            .await
            .map_err(|e| ToolCallFailed(format!("read: {e}")))?;
        if !status.is_success() {
            return Err(ToolCallFailed(format!("create answered {status}: {text}")));
        }
        let json: Value = serde_json::from_str(&text)
            .map_err(|_| ToolCallFailed(format!("create reply is not JSON: {text}")))?;
        Ok(json
            .get("requestId")
            .and_then(Value::as_str)
            .unwrap_or(request_id)
            .to_owned())
    }

    /// One poll, with no retry.
    pub async fn poll(&self, id: &str) -> Result<Outcome, ToolCallFailed> {
        let reply = self
            .http
            .get(format!("{}/{id}", self.poll_url))
            .send()
            .await
            .map_err(|e| ToolCallFailed(format!("network: {e}")))?;
        let status = reply.status();
        let text = reply
            .text()
            .await
            .map_err(|e| ToolCallFailed(format!("read: {e}")))?;
        if !status.is_success() {
            return Err(ToolCallFailed(format!("poll answered {status}: {text}")));
        }
        let json: Value = serde_json::from_str(&text)
            .map_err(|_| ToolCallFailed(format!("poll reply is not JSON: {text}")))?;
        Ok(match json.get("action").and_then(Value::as_str) {
            Some("pending") => Outcome::Pending,
            Some("accept") => {
                Outcome::Accept(json.get("content").cloned().filter(|c| !c.is_null()))
            }
            Some("cancel") => Outcome::Cancel,
            Some("expired") => Outcome::Expired,
            _ => Outcome::Decline,
        })
    }
}

/// The library's wait for an answer, on the test's manual clock: it polls at once, then every `interval`, and
/// at its own deadline gives up with `expired` without polling again (as `@pulsemcp/mcp-elicitation` does).
pub struct Wait {
    id: String,
    next_poll: chrono::DateTime<chrono::Utc>,
    interval: chrono::Duration,
    deadline: chrono::DateTime<chrono::Utc>,
    /// When it polled, for the test's own assertions.
    pub polls: Vec<chrono::DateTime<chrono::Utc>>,
}

impl Wait {
    pub fn new(
        id: &str,
        start: chrono::DateTime<chrono::Utc>,
        interval: chrono::Duration,
        deadline: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        Self {
            id: id.to_owned(),
            next_poll: start,
            interval,
            deadline,
            polls: Vec::new(),
        }
    }

    /// Lets the client's loop run until `until` (moving `clock` to each poll). Returns its outcome once it has
    /// one: an answer from a poll, `Expired` from its own deadline, or the failure that ended the tool call.
    pub async fn run_until(
        &mut self,
        client: &PulsemcpClient,
        clock: &anteroom_store::domain::clock::ManualClock,
        until: chrono::DateTime<chrono::Utc>,
    ) -> Option<Result<Outcome, ToolCallFailed>> {
        use anteroom_store::domain::clock::Clock;
        while self.next_poll < self.deadline && self.next_poll <= until {
            clock.advance(self.next_poll - clock.now());
            self.polls.push(self.next_poll);
            match client.poll(&self.id).await {
                Ok(Outcome::Pending) => self.next_poll += self.interval,
                decided => return Some(decided),
            }
        }
        if until >= self.deadline {
            clock.advance(self.deadline - clock.now());
            return Some(Ok(Outcome::Expired));
        }
        clock.advance(until - clock.now());
        None
    }
}
