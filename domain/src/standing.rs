//! Standing answers: a person's "answer questions like this the same way" — a rule that answers the next
//! identical question at once, for a while and a number of times, recorded as answered by the rule and the
//! person who made it. One mechanism for every asker: a hook's "allow `npm test` for this run" is the case of a
//! question whose message names the run and the command.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    ManagedInputError,
    ids::SessionId,
    round::{ElicitationRequest, ResponseAction, Round},
};

/// How long a standing answer lasts when its maker does not say.
pub const STANDING_DEFAULT_MINUTES: i64 = 60;
/// The longest a standing answer may last.
pub const STANDING_MAX_MINUTES: i64 = 7 * 24 * 60;

/// What makes two questions the same: who asks (server and tool), the message and the form, exactly. A
/// hook's message holds the run and the tool's input, so the same message is the same call of the same run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionMatch {
    /// Empty when the question names no server.
    pub server: String,
    pub tool: String,
    pub message: String,
    /// The form's JSON Schema, as text.
    pub schema: String,
}

impl QuestionMatch {
    /// The match of `round`, or why it cannot have a standing answer: only a round of one form question
    /// whose fields hold nothing secret (a URL's consent and a password are given each time).
    pub fn of(round: &Round) -> Result<Self, ManagedInputError> {
        let refuse = |why: &str| {
            Err(ManagedInputError::validation(format!(
                "Questions like this cannot be answered by a standing answer: {why}."
            )))
        };
        let mut requests = round.requests.values();
        let (Some(request), None) = (requests.next(), requests.next()) else {
            return refuse("it asks several questions at once");
        };
        let ElicitationRequest::Form {
            message,
            requested_schema,
            ..
        } = request
        else {
            return refuse("it asks for consent to open a URL");
        };
        if holds_secret(requested_schema) {
            return refuse("one of its fields is a secret");
        }
        Ok(Self {
            server: round.server.clone().unwrap_or_default(),
            tool: round.operation_name.clone(),
            message: message.clone(),
            schema: requested_schema.to_string(),
        })
    }
}

impl QuestionMatch {
    /// A short name for "this same question" (server, tool, message and form), which the queue merges
    /// identical open questions by.
    pub fn key(&self) -> String {
        let text =
            serde_json::json!([self.server, self.tool, self.message, self.schema]).to_string();
        let mut key = crate::access::hash_secret(&text);
        key.truncate(16);
        key
    }
}

/// Whether a form asks for something secret: a field that is `writeOnly`, of `format: password`, or named like
/// a credential.
fn holds_secret(schema: &Value) -> bool {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return false;
    };
    properties.iter().any(|(name, field)| {
        let name = name.to_ascii_lowercase();
        field.get("writeOnly").and_then(Value::as_bool) == Some(true)
            || field.get("format").and_then(Value::as_str) == Some("password")
            || ["password", "secret", "token", "api_key", "apikey", "otp"]
                .iter()
                .any(|word| name.contains(word))
    })
}

/// A standing answer to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewStandingAnswer {
    /// The person (or key) who made it, named in every answer it gives.
    pub created_by: String,
    /// The session it holds in; `None`: every session its maker may answer.
    pub session_id: Option<SessionId>,
    pub question: QuestionMatch,
    pub action: ResponseAction,
    pub content: Option<Map<String, Value>>,
    pub expires_at: DateTime<Utc>,
    /// How many questions it may answer; `None`: any number until it expires.
    pub use_limit: Option<i64>,
    /// Its message is a beginning: a question whose message starts with it matches (never a regex).
    pub prefix: bool,
}

/// A standing answer as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StandingAnswer {
    pub id: i64,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub session_id: Option<SessionId>,
    pub question: QuestionMatch,
    pub action: ResponseAction,
    pub content: Option<Map<String, Value>>,
    pub expires_at: DateTime<Utc>,
    pub use_limit: Option<i64>,
    /// How many questions it has answered.
    pub uses: i64,
    pub revoked_at: Option<DateTime<Utc>>,
    /// Paused: it answers nothing until resumed.
    #[serde(default)]
    pub paused_at: Option<DateTime<Utc>>,
    /// Its message matches the beginning of a question's message.
    #[serde(default)]
    pub prefix: bool,
}

impl StandingAnswer {
    /// How an answer it gives is recorded: "rule #12 (rita)".
    pub fn answerer(&self) -> String {
        format!("rule #{} ({})", self.id, self.created_by)
    }
}

/// When a standing answer made at `now` for `minutes` (default [`STANDING_DEFAULT_MINUTES`]) ends; refused
/// beyond [`STANDING_MAX_MINUTES`] or below one minute.
pub fn standing_expiry(
    now: DateTime<Utc>,
    minutes: Option<i64>,
) -> Result<DateTime<Utc>, ManagedInputError> {
    let minutes = minutes.unwrap_or(STANDING_DEFAULT_MINUTES);
    if !(1..=STANDING_MAX_MINUTES).contains(&minutes) {
        return Err(ManagedInputError::validation(format!(
            "A standing answer lasts 1 to {STANDING_MAX_MINUTES} minutes (7 days)."
        )));
    }
    Ok(now + Duration::minutes(minutes))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn round(requests: Value, server: Option<&str>) -> Round {
        let mut round = crate::round::fixtures::round(false);
        round.requests = serde_json::from_value(requests).expect("requests");
        round.server = server.map(str::to_owned);
        round.operation_name = "Bash".to_owned();
        round
    }

    #[test]
    fn one_plain_form_question_can_stand_and_secrets_urls_and_several_cannot() {
        let plain = round(
            json!({"decision": {"mode": "form", "message": "$ npm test", "requestedSchema":
                {"type": "object", "properties": {"reason": {"type": "string"}}}}}),
            Some("claude-code"),
        );
        let matched = QuestionMatch::of(&plain).expect("plain");
        assert_eq!(matched.server, "claude-code");
        assert_eq!(matched.tool, "Bash");
        assert_eq!(matched.message, "$ npm test");
        for secret in [
            json!({"pin": {"type": "string", "writeOnly": true}}),
            json!({"code": {"type": "string", "format": "password"}}),
            json!({"github_token": {"type": "string"}}),
        ] {
            let asked = round(
                json!({"a": {"mode": "form", "message": "m", "requestedSchema":
                    {"type": "object", "properties": secret}}}),
                None,
            );
            assert!(QuestionMatch::of(&asked).is_err(), "{secret}");
        }
        let url = round(
            json!({"a": {"mode": "url", "message": "Sign in", "url": "https://example.com",
                "elicitationId": "e1"}}),
            None,
        );
        assert!(QuestionMatch::of(&url).is_err());
        let form = json!({"mode": "form", "message": "m", "requestedSchema": {"type": "object"}});
        assert!(QuestionMatch::of(&round(json!({"a": form, "b": form}), None)).is_err());
    }

    #[test]
    fn a_standing_answer_lasts_an_hour_unless_told_and_never_past_a_week() {
        let now: DateTime<Utc> = "2026-12-04T10:00:00Z".parse().expect("time");
        assert_eq!(
            standing_expiry(now, None).ok(),
            Some(now + Duration::hours(1))
        );
        assert!(standing_expiry(now, Some(STANDING_MAX_MINUTES + 1)).is_err());
        assert!(standing_expiry(now, Some(0)).is_err());
    }
}
