//! Answering a round: the response map is checked against the requests, first answer wins, a retried answer
//! under the same idempotency key is the same answer, and a round that has ended says why it cannot be answered.

use super::*;

impl Round {
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
            let reason = checked_reason(&key, response.action, response.reason)?;
            normalised.insert(
                key,
                ElicitationResponse {
                    action: response.action,
                    content,
                    reason,
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

    pub(super) fn failed_error(&self) -> ManagedInputError {
        match self.failure.as_ref().map(|failure| &failure.code) {
            Some(FailureCode::Expired) => self.expired_error(),
            Some(FailureCode::Revoked) => ManagedInputError::state(
                "The session's token was revoked while this question waited; its asker can no longer poll, so an answer would never reach the agent.",
            ),
            Some(FailureCode::AgentEnded) => ManagedInputError::state(format!(
                "{} An answer now would never reach it, so this one was not recorded.",
                self.failure
                    .as_ref()
                    .map_or("The agent ended.", |failure| failure.message.as_str())
            )),
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
}

/// A decline's or a dismissal's reason, trimmed (blank is none); an accept says what it says through its
/// content, and a reason longer than [`REASON_CHARS`] is refused rather than cut.
fn checked_reason(
    key: &RequestKey,
    action: ResponseAction,
    reason: Option<String>,
) -> Result<Option<String>, ManagedInputError> {
    let Some(reason) = reason
        .map(|reason| reason.trim().to_owned())
        .filter(|reason| !reason.is_empty())
    else {
        return Ok(None);
    };
    if action == ResponseAction::Accept {
        return Err(ManagedInputError::validation(format!(
            "Request {key}: a reason goes with a decline or a dismissal; an accept answers through its content."
        )));
    }
    if reason.chars().count() > REASON_CHARS {
        return Err(ManagedInputError::validation(format!(
            "Request {key}: a reason is at most {REASON_CHARS} characters."
        )));
    }
    Ok(Some(reason))
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::super::fixtures::{accept_all, asked, decline, key, round};
    use super::*;

    #[test]
    fn the_first_answer_wins_and_a_retry_with_its_key_is_the_same_answer() {
        let mut round = round(false);
        let now = asked() + Duration::seconds(5);
        let first = round.submit(decline(), key("k1"), Some("rita".into()), now, &accept_all);
        assert_eq!(first, Ok(Submission::Recorded));
        assert_eq!(round.status, RoundStatus::ResponseValidated);
        let again = round.submit(decline(), key("k1"), Some("rita".into()), now, &accept_all);
        assert_eq!(again, Ok(Submission::Replayed));
        let second = round.submit(decline(), key("k2"), Some("bob".into()), now, &accept_all);
        assert_eq!(second.map_err(|e| e.code()), Err("managed_input_conflict"));
    }

    #[test]
    fn an_answer_after_the_askers_deadline_says_the_asker_stopped_waiting() {
        let mut round = round(true);
        let late = round.deadline;
        let refused = round
            .submit(decline(), key("k1"), None, late, &accept_all)
            .expect_err("too late");
        assert_eq!(refused.code(), "managed_input_state");
        assert!(refused.message().contains("stopped waiting"), "{refused}");
    }

    #[test]
    fn the_response_map_must_hold_exactly_the_requests_keys() {
        let mut round = round(false);
        let refused = round
            .submit(BTreeMap::new(), key("k1"), None, asked(), &accept_all)
            .expect_err("no keys");
        assert_eq!(refused.code(), "validation_error");
    }
}
