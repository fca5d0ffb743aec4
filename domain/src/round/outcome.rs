//! How a round stands for whoever reads it — the asker's poll, the session's history, a person answering too
//! late: the one place a round's status and failure are read together.

use super::*;

/// A round's outcome so far.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundOutcome<'a> {
    /// Nobody has answered yet.
    Waiting,
    /// Answered (picked up or not yet); the answers by request.
    Answered(Option<&'a BTreeMap<RequestKey, ElicitationResponse>>),
    /// The deadline passed with nobody answering.
    Expired,
    /// Answered, but the asker had stopped waiting before it picked the answer up.
    Undelivered {
        responses: Option<&'a BTreeMap<RequestKey, ElicitationResponse>>,
        message: &'a str,
    },
    /// The asker's token was revoked or rotated while the question waited.
    Revoked { message: &'a str },
    /// The escalation ladder ran out with nobody answering.
    NobodyAvailable { message: &'a str },
    /// Ended any other way: cancelled, a worker that vanished mid-delivery, or a worker's own code.
    Failed { code: &'a str, message: &'a str },
}

impl RoundOutcome<'_> {
    /// The actions of the answers given, in request order (empty when none were).
    pub fn actions(&self) -> Vec<ResponseAction> {
        match self {
            Self::Answered(responses) | Self::Undelivered { responses, .. } => responses
                .iter()
                .flat_map(|responses| responses.values())
                .map(|response| response.action)
                .collect(),
            _ => Vec::new(),
        }
    }
}

impl Round {
    pub fn outcome(&self) -> RoundOutcome<'_> {
        match (self.status, &self.failure) {
            (RoundStatus::Pending, _) => RoundOutcome::Waiting,
            (RoundStatus::Failed, Some(failure)) => match &failure.code {
                FailureCode::Expired => RoundOutcome::Expired,
                FailureCode::Undelivered => RoundOutcome::Undelivered {
                    responses: self.responses.as_ref(),
                    message: &failure.message,
                },
                FailureCode::Revoked => RoundOutcome::Revoked {
                    message: &failure.message,
                },
                FailureCode::NobodyAvailable => RoundOutcome::NobodyAvailable {
                    message: &failure.message,
                },
                code => RoundOutcome::Failed {
                    code: code.as_str(),
                    message: &failure.message,
                },
            },
            (RoundStatus::Failed, None) => RoundOutcome::Failed {
                code: "failed",
                message: "",
            },
            (
                RoundStatus::ResponseValidated
                | RoundStatus::DeliveryStarted
                | RoundStatus::Delivered
                | RoundStatus::Resolved,
                _,
            ) => RoundOutcome::Answered(self.responses.as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::round::fixtures::*;

    #[test]
    fn each_ending_reads_as_one_outcome() {
        let mut round = round(false);
        assert_eq!(round.outcome(), RoundOutcome::Waiting);
        round.status = RoundStatus::Failed;
        for (code, expected) in [
            (FailureCode::Expired, "expired"),
            (FailureCode::Undelivered, "undelivered"),
            (FailureCode::Revoked, "revoked"),
            (FailureCode::NobodyAvailable, "nobody_available"),
            (FailureCode::Cancelled, "cancelled"),
            (FailureCode::Other("tool_crashed".into()), "tool_crashed"),
        ] {
            round.failure = Some(Failure {
                code,
                message: "why".into(),
                at: round.created_at,
            });
            let outcome = round.outcome();
            let name = match outcome {
                RoundOutcome::Expired => "expired",
                RoundOutcome::Undelivered { message, .. } => {
                    assert_eq!(message, "why");
                    "undelivered"
                }
                RoundOutcome::Revoked { .. } => "revoked",
                RoundOutcome::NobodyAvailable { .. } => "nobody_available",
                RoundOutcome::Failed { code, .. } => code,
                other => panic!("unexpected {other:?}"),
            };
            assert_eq!(name, expected);
        }
    }
}
