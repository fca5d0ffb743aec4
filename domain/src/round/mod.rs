//! Rounds: one pause of an agent for human input, and its lifecycle (docs/lifecycle.md) as pure functions.
//!
//! Every method checks the current state, then either changes the round or refuses with a typed error,
//! leaving it untouched. The store persists what these functions decide.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{
    ManagedInputError,
    expiry::{DeadlineTrust, Deadlines, wire_time},
    form::FormModel,
    ids::{IdempotencyKey, LeaseToken, OwnerId, RequestId, RequestKey, RoundId, SessionId},
    limits::Limits,
    session::{LostElicitation, LostReason, SessionEffect},
};

/// Where a round is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoundStatus {
    Pending,
    ResponseValidated,
    DeliveryStarted,
    Delivered,
    Resolved,
    Failed,
}

text_names!(RoundStatus { Pending => "pending", ResponseValidated => "response_validated", DeliveryStarted => "delivery_started", Delivered => "delivered", Resolved => "resolved", Failed => "failed" });

impl RoundStatus {
    /// `resolved` and `failed` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Resolved | Self::Failed)
    }
}

/// What kind of MCP operation is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
    Tool,
    Prompt,
    Resource,
}

text_names!(OperationKind { Tool => "tool", Prompt => "prompt", Resource => "resource" });

/// How the asker reached Anteroom: through its session's token (the environment block's URLs, and the
/// workers of managed rounds), with an API key, or anonymously on the bare routes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AskedThrough {
    #[default]
    SessionToken,
    ApiKey,
    Anonymous,
}

text_names!(AskedThrough { SessionToken => "session_token", ApiKey => "api_key", Anonymous => "anonymous" });

impl AskedThrough {
    /// Whether the asker's own deadline is taken as given (docs/deadlines.md).
    pub fn trust(self) -> DeadlineTrust {
        match self {
            Self::SessionToken | Self::ApiKey => DeadlineTrust::Trusted,
            Self::Anonymous => DeadlineTrust::Anonymous,
        }
    }
}

/// When the asker last polled for its answer, as this instance saw it (persisted at most every ~10 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AskerSeen {
    #[serde(with = "super::wire::time")]
    pub last_poll_at: DateTime<Utc>,
    /// The observed time between polls, once there were two.
    pub interval_ms: Option<i64>,
}

/// One question: a form rendered from a JSON Schema, or consent to open a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationRequest {
    Form {
        message: String,
        #[serde(rename = "requestedSchema")]
        requested_schema: Value,
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    Url {
        message: String,
        url: String,
        #[serde(rename = "elicitationId")]
        elicitation_id: String,
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
}

impl ElicitationRequest {
    pub fn message(&self) -> &str {
        match self {
            Self::Form { message, .. } | Self::Url { message, .. } => message,
        }
    }

    pub fn meta(&self) -> Option<&Map<String, Value>> {
        match self {
            Self::Form { meta, .. } | Self::Url { meta, .. } => meta.as_ref(),
        }
    }

    /// The producer's own deadline for this request (`_meta["com.pulsemcp/expires-at"]`), if it parses.
    pub fn producer_deadline(&self) -> Option<DateTime<Utc>> {
        let raw = self.meta()?.get("com.pulsemcp/expires-at")?.as_str()?;
        DateTime::parse_from_rfc3339(raw)
            .ok()
            .map(|at| at.with_timezone(&Utc))
    }
}

/// How a person answered one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseAction {
    Accept,
    Decline,
    /// Dismissed without answering.
    Cancel,
}

text_names!(ResponseAction { Accept => "accept", Decline => "decline", Cancel => "cancel" });

/// The answer to one request. Only a form `accept` carries content; a decline or a dismissal may say why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ElicitationResponse {
    pub action: ResponseAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// Why the person declined or dismissed, in their words (at most 1,000 characters). MCP has no place for
    /// it; a harness's hook hands it to the model ("Denied by rita: touches the prod database").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ElicitationResponse {
    /// An answer with no reason.
    pub fn new(action: ResponseAction, content: Option<Map<String, Value>>) -> Self {
        Self {
            action,
            content,
            reason: None,
        }
    }
}

/// The longest reason a decline or a dismissal keeps.
pub const REASON_CHARS: usize = 1000;

/// A worker's compare-and-set claim on a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Lease {
    pub owner_id: OwnerId,
    /// The worker's secret: returned by a claim, never serialised with the round.
    #[serde(skip_serializing)]
    #[schema(ignore)]
    pub lease_token: LeaseToken,
    #[serde(with = "super::wire::time")]
    pub expires_at: DateTime<Utc>,
}

impl Lease {
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        now < self.expires_at
    }
}

/// Why a round failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum FailureCode {
    /// The deadline passed with nobody answering.
    Expired,
    /// The session (execution) was cancelled.
    Cancelled,
    /// The worker vanished mid-delivery; the round cannot be resumed.
    RecoveryUnavailable,
    DeliveryFailed,
    /// Answered, but the asker stopped waiting before it picked the answer up.
    Undelivered,
    /// The session's token was revoked (or rotated) while the question waited.
    Revoked,
    /// Its escalation ladder ran out with nobody answering (docs/teams.md#escalation).
    NobodyAvailable,
    /// The agent's `anteroom run` ended (or went quiet) while the question waited (docs/runs.md).
    AgentEnded,
    /// A code the producer chose.
    Other(String),
}

impl FailureCode {
    pub fn as_str(&self) -> &str {
        match self {
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::RecoveryUnavailable => "recovery_unavailable",
            Self::DeliveryFailed => "delivery_failed",
            Self::Undelivered => "undelivered",
            Self::Revoked => "revoked",
            Self::NobodyAvailable => "nobody_available",
            Self::AgentEnded => "agent_ended",
            Self::Other(code) => code,
        }
    }
}

impl From<String> for FailureCode {
    fn from(code: String) -> Self {
        match code.as_str() {
            "expired" => Self::Expired,
            "cancelled" => Self::Cancelled,
            "recovery_unavailable" => Self::RecoveryUnavailable,
            "delivery_failed" => Self::DeliveryFailed,
            "undelivered" => Self::Undelivered,
            "revoked" => Self::Revoked,
            "nobody_available" => Self::NobodyAvailable,
            "agent_ended" => Self::AgentEnded,
            _ => Self::Other(code),
        }
    }
}

impl From<FailureCode> for String {
    fn from(code: FailureCode) -> String {
        code.as_str().to_owned()
    }
}

/// A failed round's reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Failure {
    /// `expired`, `cancelled`, `recovery_unavailable`, `delivery_failed`, `undelivered`, `revoked`, or the
    /// worker's own code.
    #[schema(value_type = String)]
    pub code: FailureCode,
    pub message: String,
    #[serde(with = "super::wire::time")]
    pub at: DateTime<Utc>,
}

/// What a producer asks for when it opens a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRound {
    pub session_id: SessionId,
    /// The id the producer will poll by; the round id when absent.
    pub request_id: Option<RequestId>,
    pub logical_operation_id: String,
    pub server: Option<String>,
    pub operation_kind: OperationKind,
    pub operation_name: String,
    pub requests: BTreeMap<RequestKey, ElicitationRequest>,
    pub request_state: Option<String>,
    pub round_index: u32,
    pub round_limit: u32,
    /// A deadline the producer names for the whole round (outranks per-request `expires-at`).
    #[serde(default, with = "super::wire::time::option")]
    pub deadline: Option<DateTime<Utc>>,
    /// A hash of the producer's request, so a retried create can be told from a different question.
    pub fingerprint: Option<String>,
    /// How the asker reached Anteroom: decides how far its deadline is trusted and what revoking the session's
    /// token ends.
    #[serde(default)]
    pub asked_through: AskedThrough,
}

/// The failure message of an expired round.
pub const EXPIRED_MESSAGE: &str = "Nobody answered before the deadline.";
/// The failure message of a round whose worker vanished mid-delivery.
pub const RECOVERY_MESSAGE: &str =
    "The worker delivering this answer vanished; the native action cannot be resumed.";

/// Longest summary kept in a lost-elicitation marker.
pub const SUMMARY_LIMIT: usize = 300;

impl NewRound {
    /// Checks everything a round must satisfy before it is stored (docs/lifecycle.md#multi-request-rounds, docs/api.md#limits).
    pub fn validate(&self, limits: &Limits) -> Result<(), ManagedInputError> {
        if self.requests.is_empty() {
            return Err(ManagedInputError::validation(
                "A round needs at least one request in `requests`.",
            ));
        }
        if self.round_limit == 0 || self.round_index >= self.round_limit {
            return Err(ManagedInputError::validation(format!(
                "round_index ({}) must be zero-based and less than round_limit ({}).",
                self.round_index, self.round_limit
            )));
        }
        for (label, value) in [
            ("logical_operation_id", &self.logical_operation_id),
            ("operation_name", &self.operation_name),
        ] {
            if value.chars().count() > 512 {
                return Err(ManagedInputError::validation(format!(
                    "{label} is longer than 512 characters."
                )));
            }
        }
        if let Some(server) = &self.server {
            check_server_name(server)?;
        }
        for (key, request) in &self.requests {
            validate_request(key, request, limits)?;
        }
        Ok(())
    }

    /// The earliest deadline any request names for itself, or the round's own.
    pub fn producer_deadline(&self) -> Option<DateTime<Utc>> {
        self.deadline.or_else(|| {
            self.requests
                .values()
                .filter_map(ElicitationRequest::producer_deadline)
                .min()
        })
    }

    /// `"<tool_name>: <message>"` of the first request, cut to [`SUMMARY_LIMIT`] characters.
    pub fn summary(&self) -> String {
        let message = self
            .requests
            .values()
            .next()
            .map(ElicitationRequest::message)
            .unwrap_or_default();
        let full = format!("{}: {}", self.operation_name, message);
        full.chars().take(SUMMARY_LIMIT).collect()
    }
}

/// The one rule for an MCP server's name (in questions, in environment blocks and in the producer URL that
/// carries it): 1 to 128 characters, no `/` (it is a path segment) and no control characters.
pub fn check_server_name(name: &str) -> Result<(), ManagedInputError> {
    let fits = !name.is_empty() && name.chars().count() <= 128;
    if fits && !name.contains('/') && !name.chars().any(char::is_control) {
        Ok(())
    } else {
        Err(ManagedInputError::validation(
            "A server name is 1 to 128 characters, without `/` or control characters.",
        ))
    }
}

fn validate_request(
    key: &RequestKey,
    request: &ElicitationRequest,
    limits: &Limits,
) -> Result<(), ManagedInputError> {
    let message = request.message();
    if message.trim().is_empty() {
        return Err(ManagedInputError::validation(format!(
            "Request {key}: `message` is empty; say what you are asking."
        )));
    }
    if message.chars().count() > limits.message_chars {
        return Err(ManagedInputError::validation(format!(
            "Request {key}: `message` is longer than {} characters.",
            limits.message_chars
        )));
    }
    match request {
        ElicitationRequest::Form {
            requested_schema, ..
        } => FormModel::from_schema(requested_schema, limits)
            .map(drop)
            .map_err(|error| prefix_validation(key, error)),
        ElicitationRequest::Url {
            url,
            elicitation_id,
            ..
        } => {
            let has_scheme = url.starts_with("https://") || url.starts_with("http://");
            if !has_scheme || url.chars().count() > 2048 || url.chars().any(char::is_whitespace) {
                return Err(ManagedInputError::validation(format!(
                    "Request {key}: `url` must be an http(s) URL of at most 2048 characters without spaces."
                )));
            }
            if elicitation_id.is_empty() || elicitation_id.chars().count() > 128 {
                return Err(ManagedInputError::validation(format!(
                    "Request {key}: `elicitationId` must be 1 to 128 characters."
                )));
            }
            Ok(())
        }
    }
}

fn prefix_validation(key: &RequestKey, error: ManagedInputError) -> ManagedInputError {
    match error {
        ManagedInputError::ValidationError { message, details } => {
            ManagedInputError::ValidationError {
                message: format!("Request {key}: {message}"),
                details,
            }
        }
        other => other,
    }
}

/// A stored round: the pause, the answer once given, and the worker's bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Round {
    pub round_id: RoundId,
    pub session_id: SessionId,
    pub request_id: RequestId,
    pub logical_operation_id: String,
    pub server: Option<String>,
    pub operation_kind: OperationKind,
    pub operation_name: String,
    pub requests: BTreeMap<RequestKey, ElicitationRequest>,
    pub request_state: Option<String>,
    pub round_index: u32,
    pub round_limit: u32,
    pub status: RoundStatus,
    #[serde(with = "super::wire::time")]
    pub created_at: DateTime<Utc>,
    /// The moment the question ends for people: the earlier of the asker's own deadline and Anteroom's.
    #[serde(with = "super::wire::time")]
    pub deadline: DateTime<Utc>,
    /// The deadline the asker named for itself, as accepted (docs/deadlines.md).
    #[serde(with = "super::wire::time::option")]
    pub asker_deadline: Option<DateTime<Utc>>,
    pub asked_through: AskedThrough,
    /// When the asker last polled (pulsemcp rounds), from this instance's memory or the last persisted poll.
    pub asker_seen: Option<AskerSeen>,
    #[serde(with = "super::wire::time")]
    pub updated_at: DateTime<Utc>,
    pub lease: Option<Lease>,
    pub responses: Option<BTreeMap<RequestKey, ElicitationResponse>>,
    pub idempotency_key: Option<IdempotencyKey>,
    #[serde(with = "super::wire::time::option")]
    pub responded_at: Option<DateTime<Utc>>,
    pub responded_by: Option<String>,
    pub delivery_attempts: u32,
    #[serde(with = "super::wire::time::option")]
    pub delivered_at: Option<DateTime<Utc>>,
    #[serde(with = "super::wire::time::option")]
    pub resolved_at: Option<DateTime<Utc>>,
    pub failure: Option<Failure>,
    /// `"<tool>: <message>"`, cut to 300 characters: what a lost-elicitation banner says was lost.
    pub summary: String,
    /// Bumped by every write; the store's compare-and-set checks it.
    pub version: i64,
    pub fingerprint: Option<String>,
}

/// Validates the accepted content of one form request (the server passes its compiled-schema check).
pub type ContentCheck<'a> = dyn Fn(&RequestKey, &ElicitationRequest, &Map<String, Value>) -> Result<(), ManagedInputError>
    + 'a;

/// The result of a submission: a new answer, or the stored one returned again for a retried request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submission {
    Recorded,
    Replayed,
}

impl Round {
    /// Opens a round from a validated [`NewRound`] with already decided deadlines.
    pub fn open(
        new: NewRound,
        round_id: RoundId,
        now: DateTime<Utc>,
        deadlines: Deadlines,
    ) -> Self {
        let summary = new.summary();
        let request_id = new
            .request_id
            .clone()
            .unwrap_or_else(|| RequestId::from(round_id));
        Self {
            round_id,
            session_id: new.session_id,
            request_id,
            logical_operation_id: new.logical_operation_id,
            server: new.server,
            operation_kind: new.operation_kind,
            operation_name: new.operation_name,
            requests: new.requests,
            request_state: new.request_state,
            round_index: new.round_index,
            round_limit: new.round_limit,
            status: RoundStatus::Pending,
            created_at: now,
            deadline: deadlines.ends_at,
            asker_deadline: deadlines.asker,
            asked_through: new.asked_through,
            asker_seen: None,
            updated_at: now,
            lease: None,
            responses: None,
            idempotency_key: None,
            responded_at: None,
            responded_by: None,
            delivery_attempts: 0,
            delivered_at: None,
            resolved_at: None,
            failure: None,
            summary,
            version: 0,
            fingerprint: new.fingerprint,
        }
    }

    /// A pending round whose deadline has passed: nobody may answer it any more.
    pub fn is_due(&self, now: DateTime<Utc>) -> bool {
        self.status == RoundStatus::Pending && now >= self.deadline
    }

    /// Still waiting for a person ("active"): pending, and before its deadline.
    pub fn is_active(&self, now: DateTime<Utc>) -> bool {
        self.status == RoundStatus::Pending && now < self.deadline
    }

    /// Whether the moment this question ends is the asker's own deadline (it stops polling then).
    pub fn deadline_is_askers(&self) -> bool {
        self.asker_deadline
            .is_some_and(|asker| asker <= self.deadline)
    }

    pub(super) fn fail_with(&mut self, code: FailureCode, message: String, now: DateTime<Utc>) {
        self.status = RoundStatus::Failed;
        self.failure = Some(Failure {
            code,
            message,
            at: now,
        });
        self.lease = None;
        self.touch(now);
    }

    pub(super) fn touch(&mut self, now: DateTime<Utc>) {
        self.updated_at = now;
        self.version += 1;
    }

    /// The diagnostic projection: keys, actions and field names, never values.
    pub fn redacted(&self) -> RedactedResponses {
        RedactedResponses {
            round_id: self.round_id,
            status: self.status,
            responses: self
                .responses
                .iter()
                .flatten()
                .map(|(key, response)| RedactedResponse {
                    request_key: key.clone(),
                    action: response.action,
                    fields: response
                        .content
                        .iter()
                        .flat_map(|content| content.keys().cloned())
                        .collect(),
                })
                .collect(),
        }
    }
}

/// What `redacted_responses` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RedactedResponses {
    pub round_id: RoundId,
    pub status: RoundStatus,
    pub responses: Vec<RedactedResponse>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RedactedResponse {
    pub request_key: RequestKey,
    pub action: ResponseAction,
    pub fields: Vec<String>,
}

mod answering;
mod endings;
mod leases;
mod outcome;

pub use leases::{LEASE_DEFAULT, lease_length};
pub use outcome::RoundOutcome;

#[cfg(test)]
pub(crate) mod fixtures {
    //! A round to test the lifecycle on: one form request, asked at [`asked`], ending 60 s later.

    use chrono::{DateTime, Duration, Utc};
    use serde_json::json;

    use super::*;
    use crate::expiry::Deadlines;

    pub fn asked() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).expect("valid time")
    }

    pub fn new_round() -> NewRound {
        NewRound {
            session_id: SessionId::parse("s1").expect("id"),
            request_id: None,
            logical_operation_id: "op".to_owned(),
            server: Some("shop".to_owned()),
            operation_kind: OperationKind::Tool,
            operation_name: "deploy".to_owned(),
            requests: BTreeMap::from([(
                RequestKey::parse("q").expect("key"),
                ElicitationRequest::Form {
                    message: "Which environment?".to_owned(),
                    requested_schema: json!({"type": "object", "properties": {"env": {"type": "string"}}}),
                    meta: None,
                },
            )]),
            request_state: None,
            round_index: 0,
            round_limit: 1,
            deadline: None,
            fingerprint: None,
            asked_through: AskedThrough::SessionToken,
        }
    }

    /// A pending round whose deadline, 60 s after it was asked, is the asker's own when `askers`.
    pub fn round(askers: bool) -> Round {
        let ends_at = asked() + Duration::seconds(60);
        Round::open(
            new_round(),
            RoundId(uuid::Uuid::nil()),
            asked(),
            Deadlines {
                ends_at,
                asker: askers.then_some(ends_at),
            },
        )
    }

    pub fn decline() -> BTreeMap<RequestKey, ElicitationResponse> {
        BTreeMap::from([(
            RequestKey::parse("q").expect("key"),
            ElicitationResponse {
                action: ResponseAction::Decline,
                content: None,
                reason: None,
            },
        )])
    }

    pub fn key(name: &str) -> IdempotencyKey {
        IdempotencyKey::parse(name).expect("key")
    }

    pub fn accept_all(
        _: &RequestKey,
        _: &ElicitationRequest,
        _: &Map<String, Value>,
    ) -> Result<(), ManagedInputError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{new_round, round};
    use super::*;

    #[test]
    fn a_round_needs_requests_and_a_round_index_below_its_limit() {
        let limits = Limits::default();
        assert!(new_round().validate(&limits).is_ok());
        let mut empty = new_round();
        empty.requests.clear();
        assert_eq!(
            empty.validate(&limits).map_err(|e| e.code()),
            Err("validation_error")
        );
        let mut past_limit = new_round();
        past_limit.round_index = 1;
        assert!(past_limit.validate(&limits).is_err());
    }

    #[test]
    fn server_names_follow_one_rule() {
        assert!(check_server_name("github-mcp").is_ok());
        for bad in ["", "a/b", "tab\there", &"x".repeat(129)] {
            assert!(check_server_name(bad).is_err(), "{bad:?}");
        }
        let mut slashed = new_round();
        slashed.server = Some("a/b".to_owned());
        assert!(slashed.validate(&Limits::default()).is_err());
    }

    #[test]
    fn the_summary_is_tool_and_message_cut_to_its_limit() {
        assert_eq!(round(false).summary, "deploy: Which environment?");
        let mut long = new_round();
        long.operation_name = "t".repeat(400);
        assert_eq!(long.summary().chars().count(), SUMMARY_LIMIT);
    }

    #[test]
    fn a_round_is_active_until_its_deadline() {
        let round = round(true);
        assert!(round.is_active(round.deadline - chrono::Duration::milliseconds(1)));
        assert!(!round.is_active(round.deadline));
        assert!(round.is_due(round.deadline));
        assert!(round.deadline_is_askers());
    }
}
