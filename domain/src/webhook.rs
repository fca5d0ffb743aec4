//! Outgoing webhooks: which events are sent, their payloads (generic JSON or Slack's `{"text"}`), and the
//! retry schedule — decided here, stored by the outbox, sent by the delivery job.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    expiry::wire_time,
    ids::RoundId,
    round::{FailureCode, Round},
    session::Session,
};

/// How an endpoint wants its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookFormat {
    Json,
    Slack,
    /// A Slack app's channel (docs/reach.md#slack): the question posted with `chat.postMessage` and
    /// updated with `chat.update` when it ends; the endpoint is the channel.
    SlackApp,
    /// E-mail to the people who asked for it (docs/reach.md#e-mail): a delivery to `people` is fanned out into
    /// one per person (`user:{id}`), each sent when that person's preference says.
    Email,
    /// Web Push to the browsers of the people who may answer (docs/reach.md#push): fanned out like e-mail,
    /// one delivery per browser (`subscription:{id}`); a question's end closes its notification.
    Push,
}

impl WebhookFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Slack => "slack",
            Self::SlackApp => "slack_app",
            Self::Email => "email",
            Self::Push => "push",
        }
    }

    /// Reads a stored format; `None` for one this version does not know.
    pub fn parse(raw: &str) -> Option<Self> {
        [
            Self::Json,
            Self::Slack,
            Self::SlackApp,
            Self::Email,
            Self::Push,
        ]
        .into_iter()
        .find(|format| format.as_str() == raw)
    }

    /// Whether an endpoint of this format is sent `event`. Webhooks keep the events they always had; a
    /// Slack app's message also learns that its question was answered, so it can say by whom, and has no use
    /// for events about sessions or the gate.
    pub fn announces(self, event: &str) -> bool {
        match self {
            Self::Json | Self::Slack => event != QUESTION_ANSWERED,
            Self::SlackApp | Self::Push => {
                event.starts_with("question.") && event != "question.stranded"
            }
            // A mail cannot be taken back: only new questions are mailed (their links die with them).
            Self::Email => event == "question.created" || event == QUESTION_ESCALATED,
        }
    }
}

/// The event of a question climbing its session's escalation ladder.
pub const QUESTION_ESCALATED: &str = "question.escalated";

/// The event of a question's first answer (sent only to the formats that [`WebhookFormat::announces`] it).
pub const QUESTION_ANSWERED: &str = "question.answered";

/// An operator-configured receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    pub url: String,
    pub format: WebhookFormat,
}

impl WebhookEndpoint {
    /// Parses `URL` or `slack:URL` (a Slack-compatible incoming webhook).
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        let (format, url) = match raw.strip_prefix("slack:") {
            Some(url) => (WebhookFormat::Slack, url),
            None => (WebhookFormat::Json, raw),
        };
        (url.starts_with("http://") || url.starts_with("https://")).then(|| Self {
            url: url.to_owned(),
            format,
        })
    }
}

/// One event to announce.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEvent {
    /// `question.created`, `question.expired`, `question.stranded`, `gate.incident_opened`, `gate.incident_closed`.
    pub event: &'static str,
    /// Identifies the event, so it is queued once however many instances see it.
    pub key: String,
    pub data: Value,
    pub text: String,
}

impl WebhookEvent {
    pub fn question_created(round: &Round) -> Self {
        Self::about_round(
            "question.created",
            round,
            format!("An agent is waiting for you: {}", round.summary),
        )
    }

    pub fn question_expired(round: &Round) -> Self {
        Self::about_round(
            "question.expired",
            round,
            format!(
                "Nobody answered in time; the agent went on without approval: {}",
                round.summary
            ),
        )
    }

    /// A person (or a standing answer) answered the question.
    pub fn question_answered(round: &Round) -> Self {
        let by = round.responded_by.as_deref().unwrap_or("someone");
        let mut event = Self::about_round(
            QUESTION_ANSWERED,
            round,
            format!("Answered by {by}: {}", round.summary),
        );
        event.data["answered_by"] = json!(round.responded_by);
        event.data["answered_at"] = json!(round.responded_at.map(wire_time));
        event
    }

    /// A person answered, but the asker stopped waiting before it picked the answer up.
    pub fn question_undelivered(round: &Round) -> Self {
        let detail = round
            .failure
            .as_ref()
            .map(|failure| failure.message.as_str())
            .unwrap_or("The agent never received this answer.");
        let mut event = Self::about_round(
            "question.undelivered",
            round,
            format!(
                "An answer never reached its agent: {detail} ({})",
                round.summary
            ),
        );
        event.data["answered_by"] = json!(round.responded_by);
        event.data["answered_at"] = json!(round.responded_at.map(wire_time));
        event.data["detail"] = json!(detail);
        event
    }

    /// The session's token was revoked while the question waited.
    pub fn question_revoked(round: &Round) -> Self {
        Self::about_round(
            "question.revoked",
            round,
            format!(
                "A question ended because its session's token was revoked: {}",
                round.summary
            ),
        )
    }

    /// What a round's end announces: expired, undelivered or revoked (other ends announce nothing).
    pub fn round_ended(round: &Round) -> Option<Self> {
        match round.failure.as_ref().map(|failure| &failure.code) {
            Some(FailureCode::Expired) => Some(Self::question_expired(round)),
            Some(FailureCode::Undelivered) => Some(Self::question_undelivered(round)),
            Some(FailureCode::Revoked) => Some(Self::question_revoked(round)),
            Some(FailureCode::NobodyAvailable) => Some(Self::about_round(
                "question.nobody_available",
                round,
                format!(
                    "Nobody was available; the agent was told the question expired: {}",
                    round.summary
                ),
            )),
            _ => None,
        }
    }

    /// A question climbed a step of its session's ladder: `notified` are told (and may answer).
    pub fn question_escalated(round: &Round, step: usize, notified: &str) -> Self {
        let mut event = Self::about_round(
            QUESTION_ESCALATED,
            round,
            format!(
                "Nobody has answered yet; now asking {notified}: {}",
                round.summary
            ),
        );
        event.key = format!("{QUESTION_ESCALATED}:{}:{step}", round.round_id);
        event.data["escalation_step"] = json!(step + 1);
        event.data["notified"] = json!(notified);
        event
    }

    pub fn question_stranded(session: &Session) -> Option<Self> {
        let lost = session.lost_elicitation.as_ref()?;
        Some(Self {
            event: "question.stranded",
            key: format!("question.stranded:{}:{}", session.id, lost.request_id),
            data: json!({"session_id": session.id, "request_id": lost.request_id, "summary": lost.summary}),
            text: format!(
                "A question's round trip was lost in session {}: {}",
                session.id, lost.summary
            ),
        })
    }

    pub fn gate_incident(opened: bool, since: DateTime<Utc>, url: &str) -> Self {
        let event = if opened {
            "gate.incident_opened"
        } else {
            "gate.incident_closed"
        };
        Self {
            event,
            key: format!("{event}:{}", since.timestamp()),
            data: json!({"since": wire_time(since), "probe_url": url}),
            text: if opened {
                format!(
                    "The Anteroom gate is BROKEN since {}: producers cannot reach {url}.",
                    wire_time(since)
                )
            } else {
                format!(
                    "The Anteroom gate works again (since {}).",
                    wire_time(since)
                )
            },
        }
    }

    fn about_round(event: &'static str, round: &Round, text: String) -> Self {
        Self {
            event,
            key: format!("{event}:{}", round.round_id),
            data: json!({
                "session_id": round.session_id,
                "round_id": round.round_id,
                "request_id": round.request_id,
                "server": round.server,
                "operation_name": round.operation_name,
                "summary": round.summary,
                "deadline": wire_time(round.deadline),
                "asker_deadline": round.asker_deadline.map(wire_time),
            }),
            text,
        }
    }

    /// The body sent to an endpoint of `format`.
    pub fn payload(&self, format: WebhookFormat, at: DateTime<Utc>) -> Value {
        match format {
            WebhookFormat::Json
            | WebhookFormat::SlackApp
            | WebhookFormat::Email
            | WebhookFormat::Push => {
                json!({"event": self.event, "at": wire_time(at), "data": self.data})
            }
            WebhookFormat::Slack => json!({"text": slack_text(&self.text)}),
        }
    }
}

/// `text` as Slack message text: `&`, `<` and `>` escaped as Slack requires, so a producer's `<!channel>` or
/// `<https://evil.example|Approve>` in a title or message is shown as typed, never as a mention or a link.
pub fn slack_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A delivery queued for one receiver of a fanned-out event (one person's e-mail), sent no earlier than
/// `not_before`.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedDelivery {
    pub endpoint: String,
    pub format: WebhookFormat,
    pub event: String,
    /// At most one row per key, however often the fan-out runs.
    pub dedupe_key: String,
    pub payload: Value,
    pub not_before: DateTime<Utc>,
}

/// Attempts before a delivery is given up as `failed`.
pub const MAX_ATTEMPTS: i64 = 10;

/// How many deliveries the delivery log shows (the admin page and `GET /api/v1/webhooks/deliveries`), newest first.
pub const DELIVERY_LOG_SHOWN: u32 = 200;

/// When to try again after `attempts` failed tries: 10 s, 20 s, 40 s … at most an hour.
pub fn retry_delay(attempts: i64) -> Duration {
    let exponent = u32::try_from(attempts.clamp(1, 12) - 1).unwrap_or(0);
    Duration::seconds(10 * 2_i64.pow(exponent)).min(Duration::hours(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_with_an_optional_slack_prefix() {
        assert_eq!(
            WebhookEndpoint::parse("https://hooks.example/a"),
            Some(WebhookEndpoint {
                url: "https://hooks.example/a".into(),
                format: WebhookFormat::Json
            })
        );
        assert_eq!(
            WebhookEndpoint::parse("slack:https://hooks.slack.example/x").map(|e| e.format),
            Some(WebhookFormat::Slack)
        );
        assert_eq!(WebhookEndpoint::parse("ftp://nope"), None);
    }

    #[test]
    fn each_format_hears_its_events() {
        for format in [
            WebhookFormat::Json,
            WebhookFormat::Slack,
            WebhookFormat::SlackApp,
            WebhookFormat::Email,
            WebhookFormat::Push,
        ] {
            assert_eq!(WebhookFormat::parse(format.as_str()), Some(format));
            assert!(format.announces("question.created"));
        }
        assert!(!WebhookFormat::Email.announces("question.expired"));
        assert!(!WebhookFormat::Json.announces(QUESTION_ANSWERED));
        assert!(WebhookFormat::SlackApp.announces(QUESTION_ANSWERED));
        assert!(!WebhookFormat::SlackApp.announces("gate.incident_opened"));
        assert!(WebhookFormat::Slack.announces("gate.incident_opened"));
        assert_eq!(WebhookFormat::parse("carrier-pigeon"), None);
    }

    #[test]
    fn slack_mentions_and_links_from_producers_stay_text() {
        assert_eq!(
            slack_text("<!channel> approve <https://evil.example|here> & now"),
            "&lt;!channel&gt; approve &lt;https://evil.example|here&gt; &amp; now"
        );
        let event = WebhookEvent {
            event: "round.created",
            key: "k".into(),
            data: json!({}),
            text: "<!here>".into(),
        };
        assert_eq!(
            event.payload(WebhookFormat::Slack, DateTime::<Utc>::UNIX_EPOCH)["text"],
            "&lt;!here&gt;"
        );
    }

    #[test]
    fn retries_back_off_exponentially_up_to_an_hour() {
        assert_eq!(retry_delay(1), Duration::seconds(10));
        assert_eq!(retry_delay(2), Duration::seconds(20));
        assert_eq!(retry_delay(4), Duration::seconds(80));
        assert_eq!(retry_delay(12), Duration::hours(1));
    }
}

/// One queued (or finished) delivery, as the delivery job and the admin log see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WebhookDelivery {
    pub id: String,
    pub endpoint: String,
    pub format: WebhookFormat,
    pub event: String,
    pub payload: Value,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub attempts: i64,
    #[serde(with = "super::wire::time")]
    pub next_attempt_at: DateTime<Utc>,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    #[serde(with = "super::wire::time")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "super::wire::time::option")]
    pub delivered_at: Option<DateTime<Utc>>,
}

impl WebhookDelivery {
    /// The question an event is about, when it is about one (`data.round_id`).
    pub fn round_id(&self) -> Option<RoundId> {
        self.payload["data"]["round_id"]
            .as_str()
            .and_then(|raw| RoundId::parse(raw).ok())
    }
}

/// How one attempt went.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptOutcome {
    Delivered { status: u16 },
    Failed { status: Option<u16>, error: String },
}
