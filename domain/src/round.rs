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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
    Tool,
    Prompt,
    Resource,
}

text_names!(OperationKind { Tool => "tool", Prompt => "prompt", Resource => "resource" });

/// How the asker reached Anteroom: through its session's token (the environment block's URLs, and the
/// workers of managed rounds), with an API key, or anonymously on the bare routes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskerSeen {
    #[serde(with = "super::wire::time")]
    pub last_poll_at: DateTime<Utc>,
    /// The observed time between polls, once there were two.
    pub interval_ms: Option<i64>,
}

/// One question: a form rendered from a JSON Schema, or consent to open a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseAction {
    Accept,
    Decline,
    /// Dismissed without answering.
    Cancel,
}

text_names!(ResponseAction { Accept => "accept", Decline => "decline", Cancel => "cancel" });

/// The answer to one request. Only a form `accept` carries content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationResponse {
    pub action: ResponseAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

/// A worker's compare-and-set claim on a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    pub owner_id: OwnerId,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
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
            if !has_scheme || url.len() > 2048 || url.chars().any(char::is_whitespace) {
                return Err(ManagedInputError::validation(format!(
                    "Request {key}: `url` must be an http(s) URL of at most 2048 characters without spaces."
                )));
            }
            if elicitation_id.is_empty() || elicitation_id.len() > 128 {
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

    /// An answer nobody picked up although the asker has stopped waiting: the deadline passed with the answer
    /// recorded but not delivered, and no worker holds a live lease to deliver it.
    pub fn is_undeliverable(&self, now: DateTime<Utc>) -> bool {
        self.status == RoundStatus::ResponseValidated
            && now >= self.deadline
            && !self.lease.as_ref().is_some_and(|lease| lease.is_live(now))
    }

    /// Ends an answered round its asker never picked up: `failed / undelivered`. Returns whether it changed.
    pub fn fail_undelivered_if_due(&mut self, now: DateTime<Utc>) -> bool {
        if !self.is_undeliverable(now) {
            return false;
        }
        let message = format!(
            "{}, but the asking server had stopped waiting at {} — the agent never received this answer.",
            self.answered_phrase(),
            clock_of_day(self.deadline)
        );
        self.fail_with(FailureCode::Undelivered, message, now);
        true
    }

    /// The session's token was revoked or rotated: a question asked through it ends, since its asker can no
    /// longer poll. Pending questions end `revoked`; an answer not yet picked up ends `undelivered`. A round
    /// already being delivered by a worker is left to its lease. Returns whether it changed.
    pub fn end_for_revoked_token(&mut self, now: DateTime<Utc>) -> bool {
        if self.asked_through != AskedThrough::SessionToken {
            return false;
        }
        match self.status {
            RoundStatus::Pending => {
                self.fail_with(
                    FailureCode::Revoked,
                    format!(
                        "The session's token was revoked at {} while this question waited; its asker can no longer poll, so it can no longer be answered.",
                        clock_of_day(now)
                    ),
                    now,
                );
                true
            }
            RoundStatus::ResponseValidated
                if !self.lease.as_ref().is_some_and(|lease| lease.is_live(now)) =>
            {
                let message = format!(
                    "{}, but the session's token was revoked at {} before the asking server picked the answer up — the agent never received this answer.",
                    self.answered_phrase(),
                    clock_of_day(now)
                );
                self.fail_with(FailureCode::Undelivered, message, now);
                true
            }
            _ => false,
        }
    }

    /// "rita answered at 12:03:57 UTC".
    fn answered_phrase(&self) -> String {
        format!(
            "{} answered at {}",
            self.responded_by.as_deref().unwrap_or("Someone"),
            self.responded_at.map(clock_of_day).unwrap_or_default()
        )
    }

    /// Fails a due round with `expired`. Returns whether it changed.
    pub fn expire_if_due(&mut self, now: DateTime<Utc>) -> bool {
        if !self.is_due(now) {
            return false;
        }
        self.fail_with(FailureCode::Expired, EXPIRED_MESSAGE.to_owned(), now);
        true
    }

    /// Records a person's answer: the map must hold exactly the pending keys, each valid for its request.
    /// A retry with the same idempotency key and the same answer returns [`Submission::Replayed`].
    pub fn submit(
        &mut self,
        responses: BTreeMap<RequestKey, ElicitationResponse>,
        idempotency_key: IdempotencyKey,
        answered_by: Option<String>,
        now: DateTime<Utc>,
        check_content: &ContentCheck<'_>,
    ) -> Result<Submission, ManagedInputError> {
        let responses = self.normalise_responses(responses, check_content)?;

        if self.idempotency_key.as_ref() == Some(&idempotency_key) {
            return if self.responses.as_ref() == Some(&responses) {
                Ok(Submission::Replayed)
            } else {
                Err(ManagedInputError::conflict(format!(
                    "The idempotency key {idempotency_key} was already used for a different answer to round {}; use a new key for a new answer.",
                    self.round_id
                )))
            };
        }
        self.refuse_unless_answerable(now)?;

        self.status = RoundStatus::ResponseValidated;
        self.responses = Some(responses);
        self.idempotency_key = Some(idempotency_key);
        self.responded_at = Some(now);
        self.responded_by = answered_by;
        self.touch(now);
        Ok(Submission::Recorded)
    }

    /// Checks keys and actions, validates accepted form content, and drops content that must not be stored.
    fn normalise_responses(
        &self,
        responses: BTreeMap<RequestKey, ElicitationResponse>,
        check_content: &ContentCheck<'_>,
    ) -> Result<BTreeMap<RequestKey, ElicitationResponse>, ManagedInputError> {
        let expected: Vec<&RequestKey> = self.requests.keys().collect();
        let given: Vec<&RequestKey> = responses.keys().collect();
        if expected != given {
            let missing: Vec<String> = self
                .requests
                .keys()
                .filter(|key| !responses.contains_key(*key))
                .map(ToString::to_string)
                .collect();
            let unknown: Vec<String> = responses
                .keys()
                .filter(|key| !self.requests.contains_key(*key))
                .map(ToString::to_string)
                .collect();
            return Err(ManagedInputError::validation_with(
                format!(
                    "The response map must hold exactly the round's request keys ({}).",
                    expected
                        .iter()
                        .map(|key| key.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                json!({ "missing": missing, "unknown": unknown }),
            ));
        }

        let mut normalised = BTreeMap::new();
        for (key, response) in responses {
            let Some(request) = self.requests.get(&key) else {
                continue;
            };
            let content = match (response.action, request) {
                (ResponseAction::Accept, ElicitationRequest::Form { .. }) => {
                    let content = response.content.unwrap_or_default();
                    check_content(&key, request, &content)?;
                    Some(content)
                }
                (ResponseAction::Accept, ElicitationRequest::Url { .. }) => {
                    if response.content.as_ref().is_some_and(|c| !c.is_empty()) {
                        return Err(ManagedInputError::validation(format!(
                            "Request {key} asks for consent to open a URL: an accept records consent only and carries no content."
                        )));
                    }
                    None
                }
                // Content sent with a decline or a dismissal is dropped: never stored, never replayed.
                (ResponseAction::Decline | ResponseAction::Cancel, _) => None,
            };
            normalised.insert(
                key,
                ElicitationResponse {
                    action: response.action,
                    content,
                },
            );
        }
        Ok(normalised)
    }

    fn refuse_unless_answerable(&self, now: DateTime<Utc>) -> Result<(), ManagedInputError> {
        match self.status {
            RoundStatus::Pending if now >= self.deadline => Err(self.expired_error()),
            RoundStatus::Pending => Ok(()),
            RoundStatus::Failed => Err(self.failed_error()),
            _ => Err(self.already_answered_error()),
        }
    }

    fn expired_error(&self) -> ManagedInputError {
        if self.deadline_is_askers() {
            return ManagedInputError::state(format!(
                "The asking server stopped waiting at {}; an answer now would never reach the agent, so this one was not recorded.",
                wire_time(self.deadline)
            ));
        }
        ManagedInputError::state(format!(
            "This question expired at {}; the agent has gone on without an answer, so this one was not recorded.",
            wire_time(self.deadline)
        ))
    }

    fn failed_error(&self) -> ManagedInputError {
        match self.failure.as_ref().map(|failure| &failure.code) {
            Some(FailureCode::Expired) => self.expired_error(),
            Some(FailureCode::Revoked) => ManagedInputError::state(
                "The session's token was revoked while this question waited; its asker can no longer poll, so an answer would never reach the agent.",
            ),
            Some(FailureCode::RecoveryUnavailable) => ManagedInputError::recovery(format!(
                "Round {} cannot be resumed: the worker that was delivering it vanished, so a late answer cannot reach the agent.",
                self.round_id
            )),
            Some(code) => ManagedInputError::state(format!(
                "Round {} has ended ({}); it can no longer be answered.",
                self.round_id,
                code.as_str()
            )),
            None => ManagedInputError::state(format!(
                "Round {} has ended; it can no longer be answered.",
                self.round_id
            )),
        }
    }

    /// The 409 for a second answer: names the winning answer, who gave it and when.
    pub fn already_answered_error(&self) -> ManagedInputError {
        let winner: BTreeMap<&str, &str> = self
            .responses
            .iter()
            .flatten()
            .map(|(key, response)| (key.as_str(), response.action.as_str()))
            .collect();
        let by = self.responded_by.as_deref().unwrap_or("someone");
        let when = self.responded_at.map(wire_time).unwrap_or_default();
        ManagedInputError::conflict_with(
            format!("This question was already answered by {by} at {when}."),
            json!({
                "responses": self.responses,
                "answered_by": self.responded_by,
                "answered_at": self.responded_at.map(wire_time),
                "actions": winner,
            }),
        )
    }

    /// Gives `owner` a lease of `lease` length, if nobody else holds a live one.
    pub fn claim(
        &mut self,
        owner: OwnerId,
        token: LeaseToken,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Lease, ManagedInputError> {
        check_lease_length(lease)?;
        match self.status {
            RoundStatus::Resolved | RoundStatus::Failed => return Err(self.terminal_error()),
            RoundStatus::DeliveryStarted | RoundStatus::Delivered
                if !self.lease.as_ref().is_some_and(|l| l.is_live(now)) =>
            {
                return Err(ManagedInputError::recovery(format!(
                    "Round {} was mid-delivery when its worker's lease ran out; it cannot be reclaimed safely.",
                    self.round_id
                )));
            }
            _ => {}
        }
        if let Some(current) = self.lease.as_ref().filter(|l| l.is_live(now)) {
            return Err(ManagedInputError::conflict(format!(
                "Round {} is leased to {} until {}; wait for the lease to end.",
                self.round_id,
                current.owner_id,
                wire_time(current.expires_at)
            )));
        }
        let granted = Lease {
            owner_id: owner,
            lease_token: token,
            expires_at: now + lease,
        };
        self.lease = Some(granted.clone());
        self.touch(now);
        Ok(granted)
    }

    /// Extends the caller's live lease.
    pub fn renew(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Lease, ManagedInputError> {
        check_lease_length(lease)?;
        self.check_worker(owner, token, now)?;
        let renewed = Lease {
            owner_id: owner.clone(),
            lease_token: token.clone(),
            expires_at: now + lease,
        };
        self.lease = Some(renewed.clone());
        self.touch(now);
        Ok(renewed)
    }

    /// `response_validated -> delivery_started`, by the lease holder.
    pub fn start_delivery(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        self.check_worker(owner, token, now)?;
        self.require_status(RoundStatus::ResponseValidated, "start delivery")?;
        self.status = RoundStatus::DeliveryStarted;
        self.delivery_attempts += 1;
        self.touch(now);
        Ok(())
    }

    /// `delivery_started -> delivered`, by the lease holder.
    pub fn mark_delivered(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        self.check_worker(owner, token, now)?;
        self.require_status(RoundStatus::DeliveryStarted, "mark it delivered")?;
        self.status = RoundStatus::Delivered;
        self.delivered_at = Some(now);
        self.touch(now);
        Ok(())
    }

    /// `delivered -> resolved`, by the lease holder.
    pub fn resolve(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        self.check_worker(owner, token, now)?;
        self.require_status(RoundStatus::Delivered, "resolve it")?;
        self.status = RoundStatus::Resolved;
        self.resolved_at = Some(now);
        self.lease = None;
        self.touch(now);
        Ok(())
    }

    /// Any non-terminal state `-> failed`, by the lease holder, with the worker's code.
    pub fn fail(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        code: FailureCode,
        message: String,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        self.check_worker(owner, token, now)?;
        if matches!(
            code,
            FailureCode::Expired
                | FailureCode::RecoveryUnavailable
                | FailureCode::Undelivered
                | FailureCode::Revoked
        ) {
            return Err(ManagedInputError::validation(format!(
                "The failure code {:?} is reserved for Anteroom itself.",
                code.as_str()
            )));
        }
        if code.as_str().is_empty() || code.as_str().len() > 64 {
            return Err(ManagedInputError::validation(
                "A failure code must be 1 to 64 characters.",
            ));
        }
        self.fail_with(code, message.chars().take(2000).collect(), now);
        Ok(())
    }

    /// A worker vanished mid-delivery: the round fails `recovery_unavailable` and never becomes pending again.
    pub fn fail_recovery(&mut self, now: DateTime<Utc>) -> Result<(), ManagedInputError> {
        if self.status.is_terminal() {
            return Err(self.terminal_error());
        }
        if !matches!(
            self.status,
            RoundStatus::DeliveryStarted | RoundStatus::Delivered
        ) {
            return Err(ManagedInputError::state(format!(
                "Round {} is {}: only a round whose delivery had started needs recovery.",
                self.round_id,
                self.status.as_str()
            )));
        }
        if let Some(lease) = self.lease.as_ref().filter(|l| l.is_live(now)) {
            return Err(ManagedInputError::conflict(format!(
                "Round {} is still leased to {} until {}; its worker is alive.",
                self.round_id,
                lease.owner_id,
                wire_time(lease.expires_at)
            )));
        }
        self.fail_with(
            FailureCode::RecoveryUnavailable,
            RECOVERY_MESSAGE.to_owned(),
            now,
        );
        Ok(())
    }

    /// The session was cancelled: an unfinished round fails `cancelled`.
    pub fn cancel(&mut self, now: DateTime<Utc>) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.fail_with(
            FailureCode::Cancelled,
            "The session was cancelled.".to_owned(),
            now,
        );
        true
    }

    /// A pulsemcp poll picked up the answer: records a delivery attempt and marks the round delivered.
    pub fn record_poll_delivery(&mut self, now: DateTime<Utc>) -> bool {
        match self.status {
            RoundStatus::ResponseValidated | RoundStatus::Delivered if self.lease.is_none() => {
                self.status = RoundStatus::Delivered;
                self.delivery_attempts += 1;
                self.delivered_at.get_or_insert(now);
                self.touch(now);
                true
            }
            _ => false,
        }
    }

    fn fail_with(&mut self, code: FailureCode, message: String, now: DateTime<Utc>) {
        self.status = RoundStatus::Failed;
        self.failure = Some(Failure {
            code,
            message,
            at: now,
        });
        self.lease = None;
        self.touch(now);
    }

    fn check_worker(
        &self,
        owner: &OwnerId,
        token: &LeaseToken,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        if self.status.is_terminal() {
            return Err(self.terminal_error());
        }
        let Some(lease) = &self.lease else {
            return Err(ManagedInputError::conflict(format!(
                "Round {} has no lease; claim it first.",
                self.round_id
            )));
        };
        if &lease.owner_id != owner {
            return Err(ManagedInputError::conflict(format!(
                "Round {} is leased to another worker ({}); this worker was replaced.",
                self.round_id, lease.owner_id
            )));
        }
        if &lease.lease_token != token {
            return Err(ManagedInputError::conflict(format!(
                "The lease token for round {} is stale; claim the round again.",
                self.round_id
            )));
        }
        if !lease.is_live(now) {
            return Err(ManagedInputError::conflict(format!(
                "The lease on round {} expired at {}; claim the round again.",
                self.round_id,
                wire_time(lease.expires_at)
            )));
        }
        Ok(())
    }

    fn require_status(&self, wanted: RoundStatus, doing: &str) -> Result<(), ManagedInputError> {
        if self.status == wanted {
            Ok(())
        } else {
            Err(ManagedInputError::state(format!(
                "Cannot {doing}: round {} is {}, not {}.",
                self.round_id,
                self.status.as_str(),
                wanted.as_str()
            )))
        }
    }

    fn terminal_error(&self) -> ManagedInputError {
        if self
            .failure
            .as_ref()
            .is_some_and(|f| f.code == FailureCode::RecoveryUnavailable)
        {
            return self.failed_error();
        }
        ManagedInputError::state(format!(
            "Round {} is {} and can no longer change.",
            self.round_id,
            self.status.as_str()
        ))
    }

    fn touch(&mut self, now: DateTime<Utc>) {
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

/// The one home of the lease bounds: a worker's lease lasts 1 s to 24 h, 60 s when it names none.
pub const LEASE_DEFAULT: Duration = Duration::seconds(60);
const LEASE_MIN: Duration = Duration::seconds(1);
const LEASE_MAX: Duration = Duration::hours(24);

/// A lease of `seconds` (the default when absent), or why not.
pub fn lease_length(seconds: Option<i64>) -> Result<Duration, ManagedInputError> {
    let lease = seconds.map_or(LEASE_DEFAULT, Duration::seconds);
    check_lease_length(lease)?;
    Ok(lease)
}

fn check_lease_length(lease: Duration) -> Result<(), ManagedInputError> {
    if lease < LEASE_MIN || lease > LEASE_MAX {
        return Err(ManagedInputError::validation(format!(
            "`lease_seconds` must be between {} and {}.",
            LEASE_MIN.num_seconds(),
            LEASE_MAX.num_seconds()
        )));
    }
    Ok(())
}

/// What `redacted_responses` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedactedResponses {
    pub round_id: RoundId,
    pub status: RoundStatus,
    pub responses: Vec<RedactedResponse>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedactedResponse {
    pub request_key: RequestKey,
    pub action: ResponseAction,
    pub fields: Vec<String>,
}

impl Round {
    /// What this round's move from `before` means for its session, if anything.
    pub fn session_effect(&self, before: Option<RoundStatus>) -> Option<SessionEffect> {
        let code = self.failure.as_ref().map(|failure| &failure.code);
        match (before, self.status, code) {
            (None, RoundStatus::Pending, _) => Some(SessionEffect::Opened),
            (Some(RoundStatus::Pending), RoundStatus::ResponseValidated, _) => {
                Some(SessionEffect::Settled)
            }
            (Some(RoundStatus::Pending), RoundStatus::Failed, Some(FailureCode::Expired)) => {
                let reason = if self.deadline_is_askers() {
                    LostReason::AskerStopped
                } else {
                    LostReason::Expired
                };
                Some(SessionEffect::Lost(self.lost_marker(reason)))
            }
            (Some(RoundStatus::Pending), RoundStatus::Failed, Some(FailureCode::Revoked)) => {
                Some(SessionEffect::Lost(self.lost_marker(LostReason::Revoked)))
            }
            (
                Some(RoundStatus::ResponseValidated),
                RoundStatus::Failed,
                Some(FailureCode::Undelivered),
            ) => Some(SessionEffect::Lost(
                self.lost_marker(LostReason::Undelivered),
            )),
            (Some(before), RoundStatus::Failed, Some(FailureCode::RecoveryUnavailable))
                if before != RoundStatus::Failed =>
            {
                Some(SessionEffect::RecoveryFailed)
            }
            (Some(RoundStatus::Pending), RoundStatus::Failed, _) => Some(SessionEffect::Settled),
            _ => None,
        }
    }

    /// The marker that tells the session page what this round's end lost, and why.
    fn lost_marker(&self, reason: LostReason) -> LostElicitation {
        let failure = self.failure.as_ref();
        let detail = match reason {
            LostReason::Expired | LostReason::Stranded => None,
            LostReason::AskerStopped => Some(format!(
                "The asking server stopped waiting at {}; nobody had answered by then.",
                clock_of_day(self.deadline)
            )),
            LostReason::Revoked | LostReason::Undelivered => failure.map(|f| f.message.clone()),
        };
        LostElicitation {
            reason,
            at: failure.map_or(self.updated_at, |f| f.at),
            request_id: self.request_id.clone(),
            summary: self.summary.clone(),
            detail,
        }
    }
}

/// "12:03:57 UTC": the time of day a person reads in a lost marker's sentence.
fn clock_of_day(at: DateTime<Utc>) -> String {
    use chrono::Timelike;
    format!("{:02}:{:02}:{:02} UTC", at.hour(), at.minute(), at.second())
}
