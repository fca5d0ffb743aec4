//! Rows as both backends return them, and their conversion to and from the domain types.
//!
//! Every column is a type both SQLite and PostgreSQL decode the same way (text, 64-bit integers, booleans),
//! so one row type serves both backends.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::StoreError;
use crate::dialect::Param;
use crate::domain::{
    ids::{IdempotencyKey, LeaseToken, OwnerId, RequestId, RequestKey, RoundId, SessionId},
    round::{
        AskedThrough, AskerSeen, ElicitationRequest, ElicitationResponse, Failure, FailureCode,
        Lease, OperationKind, ResponseAction, Round, RoundStatus,
    },
    session::{LostElicitation, LostReason, Session, SessionStatus},
    standing::{QuestionMatch, StandingAnswer},
};

/// Unix milliseconds, the stored form of every time.
pub fn to_ms(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

pub fn from_ms(ms: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms} is out of range")))
}

pub(crate) fn from_ms_opt(ms: Option<i64>) -> Result<Option<DateTime<Utc>>, StoreError> {
    ms.map(from_ms).transpose()
}

fn corrupt(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {error}"))
}

/// When a column is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// By the INSERT only: the record's identity and what never changes.
    Once,
    /// By the INSERT and by every UPDATE of the whole record.
    Always,
    /// By neither: a statement of its own keeps it.
    Never,
}

/// Declares a table's row type and its column list from one list, so the row mapping (`FromRow`, by name),
/// the INSERT and the UPDATE (built from the list in [`crate::sql`]) cannot drift apart.
macro_rules! columns {
    ($(#[$doc:meta])* $row:ident, $list:ident { $($column:ident : $ty:ty = $written:ident),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, sqlx::FromRow, serde::Deserialize)]
        pub struct $row {
            $(pub $column: $ty,)*
        }

        /// Every column of the row, in one order, with when it is written.
        pub const $list: &[(&str, Written)] = &[$((stringify!($column), Written::$written),)*];

        impl $row {
            /// The row's values in the order of its column list.
            pub fn params(self) -> Vec<Param> {
                vec![$(Param::from(self.$column),)*]
            }

            /// The values of the columns an INSERT (`insert`) or an UPDATE writes, in list order.
            pub fn params_written(self, insert: bool) -> Vec<Param> {
                self.params()
                    .into_iter()
                    .zip($list)
                    .filter(|(_, (_, written))| written.by(insert))
                    .map(|(param, _)| param)
                    .collect()
            }
        }
    };
}

impl Written {
    /// Whether an INSERT (`insert`) or an UPDATE writes the column.
    pub fn by(self, insert: bool) -> bool {
        match self {
            Self::Once => insert,
            Self::Always => true,
            Self::Never => false,
        }
    }
}

columns! {
    /// A row of `sessions`.
    SessionRow, SESSION_COLUMNS {
        id: String = Once,
        title: String = Always,
        agent: Option<String> = Always,
        status: String = Always,
        blocked_on_elicitation: bool = Always,
        lost_reason: Option<String> = Always,
        lost_at_ms: Option<i64> = Always,
        lost_request_id: Option<String> = Always,
        lost_summary: Option<String> = Always,
        lost_detail: Option<String> = Always,
        created_at_ms: i64 = Once,
        updated_at_ms: i64 = Always,
    }
}

impl SessionRow {
    pub fn into_session(self) -> Result<Session, StoreError> {
        let lost_elicitation = match (
            self.lost_reason,
            self.lost_at_ms,
            self.lost_request_id,
            self.lost_summary,
        ) {
            (Some(reason), Some(at), Some(request_id), Some(summary)) => Some(LostElicitation {
                reason: LostReason::parse(&reason)
                    .ok_or_else(|| corrupt("lost_reason", &reason))?,
                at: from_ms(at)?,
                request_id: RequestId::parse(request_id)
                    .map_err(|e| corrupt("lost_request_id", e))?,
                summary,
                detail: self.lost_detail,
            }),
            _ => None,
        };
        Ok(Session {
            id: SessionId::parse(self.id).map_err(|e| corrupt("session id", e))?,
            title: self.title,
            agent: self.agent,
            status: SessionStatus::parse(&self.status)
                .ok_or_else(|| corrupt("session status", &self.status))?,
            blocked_on_elicitation: self.blocked_on_elicitation,
            lost_elicitation,
            created_at: from_ms(self.created_at_ms)?,
            updated_at: from_ms(self.updated_at_ms)?,
        })
    }
}

columns! {
    /// A row of `rounds`. A round's identity and question are written once; its progress on every change;
    /// the asker's polls only by [`crate::sql::record_asker_polls`], which moves neither version nor `updated_at`.
    RoundRow, ROUND_COLUMNS {
        round_id: String = Once,
        session_id: String = Once,
        request_id: String = Once,
        logical_operation_id: String = Once,
        server: Option<String> = Once,
        operation_kind: String = Once,
        operation_name: String = Once,
        requests: String = Once,
        request_state: Option<String> = Once,
        round_index: i64 = Once,
        round_limit: i64 = Once,
        status: String = Always,
        created_at_ms: i64 = Once,
        deadline_ms: i64 = Always,
        updated_at_ms: i64 = Always,
        lease_owner: Option<String> = Always,
        lease_token: Option<String> = Always,
        lease_expires_at_ms: Option<i64> = Always,
        responses: Option<String> = Always,
        idempotency_key: Option<String> = Always,
        responded_at_ms: Option<i64> = Always,
        responded_by: Option<String> = Always,
        delivery_attempts: i64 = Always,
        delivered_at_ms: Option<i64> = Always,
        resolved_at_ms: Option<i64> = Always,
        failure_code: Option<String> = Always,
        failure_message: Option<String> = Always,
        failed_at_ms: Option<i64> = Always,
        summary: String = Once,
        version: i64 = Always,
        fingerprint: Option<String> = Once,
        asker_deadline_ms: Option<i64> = Once,
        asked_through: String = Once,
        asker_polled_at_ms: Option<i64> = Never,
        asker_poll_interval_ms: Option<i64> = Never,
    }
}

impl RoundRow {
    pub fn into_round(self) -> Result<Round, StoreError> {
        let requests: BTreeMap<RequestKey, ElicitationRequest> =
            serde_json::from_str(&self.requests).map_err(|e| corrupt("requests", e))?;
        let responses: Option<BTreeMap<RequestKey, ElicitationResponse>> = self
            .responses
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| corrupt("responses", e))?;
        let lease = match (self.lease_owner, self.lease_token, self.lease_expires_at_ms) {
            (Some(owner), Some(token), Some(expires)) => Some(Lease {
                owner_id: OwnerId::parse(owner).map_err(|e| corrupt("lease_owner", e))?,
                lease_token: LeaseToken::from_secret(token),
                expires_at: from_ms(expires)?,
            }),
            _ => None,
        };
        let failure = match (self.failure_code, self.failed_at_ms) {
            (Some(code), Some(at)) => Some(Failure {
                code: FailureCode::from(code),
                message: self.failure_message.unwrap_or_default(),
                at: from_ms(at)?,
            }),
            _ => None,
        };
        Ok(Round {
            round_id: RoundId::parse(&self.round_id).map_err(|e| corrupt("round_id", e))?,
            session_id: SessionId::parse(self.session_id).map_err(|e| corrupt("session_id", e))?,
            request_id: RequestId::parse(self.request_id).map_err(|e| corrupt("request_id", e))?,
            logical_operation_id: self.logical_operation_id,
            server: self.server,
            operation_kind: OperationKind::parse(&self.operation_kind)
                .ok_or_else(|| corrupt("operation_kind", &self.operation_kind))?,
            operation_name: self.operation_name,
            requests,
            request_state: self.request_state,
            round_index: u32::try_from(self.round_index).map_err(|e| corrupt("round_index", e))?,
            round_limit: u32::try_from(self.round_limit).map_err(|e| corrupt("round_limit", e))?,
            status: RoundStatus::parse(&self.status)
                .ok_or_else(|| corrupt("round status", &self.status))?,
            created_at: from_ms(self.created_at_ms)?,
            deadline: from_ms(self.deadline_ms)?,
            asker_deadline: from_ms_opt(self.asker_deadline_ms)?,
            asked_through: AskedThrough::parse(&self.asked_through)
                .ok_or_else(|| corrupt("asked_through", &self.asked_through))?,
            asker_seen: match self.asker_polled_at_ms {
                Some(at) => Some(AskerSeen {
                    last_poll_at: from_ms(at)?,
                    interval_ms: self.asker_poll_interval_ms,
                }),
                None => None,
            },
            updated_at: from_ms(self.updated_at_ms)?,
            lease,
            responses,
            idempotency_key: self
                .idempotency_key
                .map(IdempotencyKey::parse)
                .transpose()
                .map_err(|e| corrupt("idempotency_key", e))?,
            responded_at: from_ms_opt(self.responded_at_ms)?,
            responded_by: self.responded_by,
            delivery_attempts: u32::try_from(self.delivery_attempts)
                .map_err(|e| corrupt("delivery_attempts", e))?,
            delivered_at: from_ms_opt(self.delivered_at_ms)?,
            resolved_at: from_ms_opt(self.resolved_at_ms)?,
            failure,
            summary: self.summary,
            version: self.version,
            fingerprint: self.fingerprint,
        })
    }
}

impl RoundRow {
    /// The row that stores `round`.
    pub fn of(round: &Round) -> Result<Self, StoreError> {
        let lease = round.lease.as_ref();
        let failure = round.failure.as_ref();
        Ok(Self {
            round_id: round.round_id.to_string(),
            session_id: round.session_id.to_string(),
            request_id: round.request_id.to_string(),
            logical_operation_id: round.logical_operation_id.clone(),
            server: round.server.clone(),
            operation_kind: round.operation_kind.as_str().to_owned(),
            operation_name: round.operation_name.clone(),
            requests: serde_json::to_string(&round.requests).map_err(|e| corrupt("requests", e))?,
            request_state: round.request_state.clone(),
            round_index: i64::from(round.round_index),
            round_limit: i64::from(round.round_limit),
            status: round.status.as_str().to_owned(),
            created_at_ms: to_ms(round.created_at),
            deadline_ms: to_ms(round.deadline),
            updated_at_ms: to_ms(round.updated_at),
            lease_owner: lease.map(|l| l.owner_id.to_string()),
            lease_token: lease.map(|l| l.lease_token.expose().to_owned()),
            lease_expires_at_ms: lease.map(|l| to_ms(l.expires_at)),
            responses: round
                .responses
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(|e| corrupt("responses", e))?,
            idempotency_key: round.idempotency_key.as_ref().map(ToString::to_string),
            responded_at_ms: round.responded_at.map(to_ms),
            responded_by: round.responded_by.clone(),
            delivery_attempts: i64::from(round.delivery_attempts),
            delivered_at_ms: round.delivered_at.map(to_ms),
            resolved_at_ms: round.resolved_at.map(to_ms),
            failure_code: failure.map(|f| f.code.as_str().to_owned()),
            failure_message: failure.map(|f| f.message.clone()),
            failed_at_ms: failure.map(|f| to_ms(f.at)),
            summary: round.summary.clone(),
            version: round.version,
            fingerprint: round.fingerprint.clone(),
            asker_deadline_ms: round.asker_deadline.map(to_ms),
            asked_through: round.asked_through.as_str().to_owned(),
            asker_polled_at_ms: round
                .asker_seen
                .as_ref()
                .map(|seen| to_ms(seen.last_poll_at)),
            asker_poll_interval_ms: round.asker_seen.as_ref().and_then(|seen| seen.interval_ms),
        })
    }
}

impl SessionRow {
    /// The row that stores `session`.
    pub fn of(session: &Session) -> Self {
        let lost = session.lost_elicitation.as_ref();
        Self {
            id: session.id.to_string(),
            title: session.title.clone(),
            agent: session.agent.clone(),
            status: session.status.as_str().to_owned(),
            blocked_on_elicitation: session.blocked_on_elicitation,
            lost_reason: lost.map(|l| l.reason.as_str().to_owned()),
            lost_at_ms: lost.map(|l| to_ms(l.at)),
            lost_request_id: lost.map(|l| l.request_id.to_string()),
            lost_summary: lost.map(|l| l.summary.clone()),
            lost_detail: lost.and_then(|l| l.detail.clone()),
            created_at_ms: to_ms(session.created_at),
            updated_at_ms: to_ms(session.updated_at),
        }
    }
}

/// The attention queue's row as the pages read it: [`QueueRow`] with its oldest open question as JSON
/// ([`crate::sql::SELECT_ATTENTION_QUEUE_SQLITE`]) and whether anything is due.
#[derive(Debug, sqlx::FromRow)]
pub struct AttentionRow {
    #[sqlx(flatten)]
    pub queued: QueueRow,
    pub oldest_round: Option<String>,
    /// The session's `session_settings` row as a JSON array, when it has one.
    pub team_settings: Option<String>,
    /// The session's run under `anteroom run`, by its stored state.
    pub run_state: Option<String>,
    pub any_due: bool,
}

/// The attention-queue row: a session and what is open in it.
#[derive(Debug, sqlx::FromRow)]
pub struct QueueRow {
    #[sqlx(flatten)]
    pub session: SessionRow,
    pub open_rounds: i64,
    pub oldest_open_ms: Option<i64>,
}

#[derive(Debug, sqlx::FromRow)]
pub struct OutboxRow {
    pub id: String,
    pub endpoint: String,
    pub format: String,
    pub event: String,
    pub payload: String,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at_ms: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_at_ms: i64,
    pub delivered_at_ms: Option<i64>,
}

impl OutboxRow {
    pub fn into_delivery(self) -> Result<crate::domain::webhook::WebhookDelivery, StoreError> {
        use crate::domain::webhook::{WebhookDelivery, WebhookFormat};
        Ok(WebhookDelivery {
            id: self.id,
            endpoint: self.endpoint,
            format: WebhookFormat::parse(&self.format)
                .ok_or_else(|| StoreError::Corrupt(format!("webhook format {}", self.format)))?,
            event: self.event,
            payload: serde_json::from_str(&self.payload)
                .map_err(|e| corrupt("webhook payload", e))?,
            status: self.status,
            attempts: self.attempts,
            next_attempt_at: from_ms(self.next_attempt_at_ms)?,
            last_status: self.last_status,
            last_error: self.last_error,
            created_at: from_ms(self.created_at_ms)?,
            delivered_at: from_ms_opt(self.delivered_at_ms)?,
        })
    }
}

/// A row of `standing_answers` (written by its own statements in `crate::sql`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StandingAnswerRow {
    pub id: i64,
    pub created_by: String,
    pub created_at_ms: i64,
    pub session_id: Option<String>,
    pub server: String,
    pub tool: String,
    pub message: String,
    pub requested_schema: String,
    pub action: String,
    pub content: Option<String>,
    pub expires_at_ms: i64,
    pub use_limit: Option<i64>,
    pub uses: i64,
    pub revoked_at_ms: Option<i64>,
    pub paused_at_ms: Option<i64>,
    pub match_prefix: i64,
}

impl StandingAnswerRow {
    pub fn into_standing_answer(self) -> Result<StandingAnswer, StoreError> {
        Ok(StandingAnswer {
            id: self.id,
            created_by: self.created_by,
            created_at: from_ms(self.created_at_ms)?,
            session_id: self
                .session_id
                .map(|id| {
                    SessionId::parse(&id).map_err(|error| corrupt("standing answer session", error))
                })
                .transpose()?,
            question: QuestionMatch {
                server: self.server,
                tool: self.tool,
                message: self.message,
                schema: self.requested_schema,
            },
            action: ResponseAction::parse(&self.action)
                .ok_or_else(|| corrupt("standing answer action", &self.action))?,
            content: self
                .content
                .map(|content| {
                    serde_json::from_str(&content)
                        .map_err(|error| corrupt("standing answer content", error))
                })
                .transpose()?,
            expires_at: from_ms(self.expires_at_ms)?,
            use_limit: self.use_limit,
            uses: self.uses,
            revoked_at: from_ms_opt(self.revoked_at_ms)?,
            paused_at: from_ms_opt(self.paused_at_ms)?,
            prefix: self.match_prefix != 0,
        })
    }
}
