//! The outward answer (docs/protocol.md#the-outward-answer): what a polling producer sees for a round, decided in one place.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::round::{FailureCode, ResponseAction, Round, RoundOutcome};

/// The `action` of a poll reply, as the pulsemcp client understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PollAction {
    Pending,
    Accept,
    Decline,
    Cancel,
    Expired,
}

impl From<ResponseAction> for PollAction {
    fn from(action: ResponseAction) -> Self {
        match action {
            ResponseAction::Accept => Self::Accept,
            ResponseAction::Decline => Self::Decline,
            ResponseAction::Cancel => Self::Cancel,
        }
    }
}

/// What a producer's poll of one request gets.
#[derive(Debug, Clone, PartialEq)]
pub struct OutwardAnswer {
    pub action: PollAction,
    /// Present only for `accept` of a form request.
    pub content: Option<Map<String, Value>>,
    /// For a failure other than expiry, its code (`_meta["anteroom/failure"]`).
    pub failure_code: Option<String>,
    /// A decline's or a dismissal's reason, for an asker that has a place for it (a harness's hook).
    pub reason: Option<String>,
}

/// The answer for the request `key` of `round` (for a single-request round, its only key).
pub fn outward_answer(round: &Round, key: &str) -> OutwardAnswer {
    let quiet = |action| OutwardAnswer {
        action,
        content: None,
        failure_code: None,
        reason: None,
    };
    match round.outcome() {
        RoundOutcome::Waiting => quiet(PollAction::Pending),
        RoundOutcome::Expired => quiet(PollAction::Expired),
        // The asker had stopped waiting (or lost its token): to it, the question simply expired.
        RoundOutcome::Undelivered { .. } => OutwardAnswer {
            failure_code: Some(FailureCode::Undelivered.as_str().to_owned()),
            ..quiet(PollAction::Expired)
        },
        RoundOutcome::Revoked { .. } => OutwardAnswer {
            failure_code: Some(FailureCode::Revoked.as_str().to_owned()),
            ..quiet(PollAction::Expired)
        },
        // Honest, and what the asker can act on: nobody was there, so the question expired unanswered.
        RoundOutcome::NobodyAvailable { .. } => OutwardAnswer {
            failure_code: Some(FailureCode::NobodyAvailable.as_str().to_owned()),
            ..quiet(PollAction::Expired)
        },
        RoundOutcome::Failed { code, .. } => OutwardAnswer {
            failure_code: Some(code.to_owned()),
            ..quiet(PollAction::Cancel)
        },
        RoundOutcome::Answered(responses) => {
            let response = responses
                .and_then(|responses| responses.iter().find(|(k, _)| k.as_str() == key))
                .map(|(_, response)| response);
            match response {
                Some(response) => OutwardAnswer {
                    action: response.action.into(),
                    content: match response.action {
                        ResponseAction::Accept => response.content.clone(),
                        ResponseAction::Decline | ResponseAction::Cancel => None,
                    },
                    failure_code: None,
                    reason: response.reason.clone(),
                },
                // An answered round always holds every key; an unknown key reads as dismissed.
                None => quiet(PollAction::Cancel),
            }
        }
    }
}
