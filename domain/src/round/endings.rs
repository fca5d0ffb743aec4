//! How a round ends without a worker: its deadline passes (expired, or answered but never picked up), its
//! session's token is revoked, its session is cancelled, or a poll carries the answer; and what each ending
//! means for its session (docs/deadlines.md).

use super::*;

impl Round {
    /// The escalation ladder ran out with nobody answering: the question ends `nobody_available` (to its
    /// asker, `expired` with that failure), before its deadline. Returns whether it changed.
    pub fn end_nobody_available(&mut self, asked: &str, now: DateTime<Utc>) -> bool {
        if self.status != RoundStatus::Pending || now >= self.deadline {
            return false;
        }
        let message = format!(
            "Nobody was available: {asked} were asked, and nobody answered by {}. The agent was told the question expired unanswered.",
            clock_of_day(now)
        );
        self.fail_with(FailureCode::NobodyAvailable, message, now);
        true
    }

    /// Gives people more time to answer: the deadline moves `by` later, but never past seven days after the
    /// question was asked nor past the asker's own deadline, which is fixed (docs/deadlines.md#extending-a-deadline).
    /// Returns the new deadline.
    pub fn extend_deadline(
        &mut self,
        by: Duration,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, ManagedInputError> {
        if by <= Duration::zero() || by > crate::expiry::MAX_WINDOW {
            return Err(ManagedInputError::validation(
                "An extension is from 1 minute to 7 days.",
            ));
        }
        if self.status != RoundStatus::Pending || now >= self.deadline {
            return Err(ManagedInputError::state(format!(
                "Round {} is no longer waiting; only a waiting question's deadline can move.",
                self.round_id
            )));
        }
        let ceiling = self.created_at + crate::expiry::MAX_WINDOW;
        let ceiling = self
            .asker_deadline
            .map_or(ceiling, |asker| asker.min(ceiling));
        if self.deadline >= ceiling {
            return Err(ManagedInputError::state(if self.deadline_is_askers() {
                format!(
                    "The asking server stops waiting at {}: its own deadline is fixed, and an answer after it could not reach the agent.",
                    clock_of_day(self.deadline)
                )
            } else {
                "This question is already at the longest a question may wait (7 days from when it was asked)."
                    .to_owned()
            }));
        }
        self.deadline = crate::expiry::stored_precision((self.deadline + by).min(ceiling));
        self.touch(now);
        Ok(self.deadline)
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

    /// The agent's run ended (`reason` says how): a question still waiting ends `agent_ended` with it, since
    /// nobody is left to receive an answer. Answers already given are left to their delivery. Returns whether
    /// it changed.
    pub fn end_with_run(&mut self, reason: &str, now: DateTime<Utc>) -> bool {
        if self.status != RoundStatus::Pending {
            return false;
        }
        self.fail_with(FailureCode::AgentEnded, reason.to_owned(), now);
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
                Some(RoundStatus::Pending),
                RoundStatus::Failed,
                Some(FailureCode::NobodyAvailable),
            ) => Some(SessionEffect::Lost(
                self.lost_marker(LostReason::NobodyAvailable),
            )),
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
            LostReason::Revoked | LostReason::Undelivered | LostReason::NobodyAvailable => {
                failure.map(|f| f.message.clone())
            }
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

#[cfg(test)]
mod tests {
    use chrono::Duration as Span;

    use super::super::fixtures::{accept_all, asked, decline, key, round};
    use super::*;

    #[test]
    fn a_deadline_moves_up_to_seven_days_but_never_past_the_askers_own() {
        let mut ours = round(false);
        let first = ours.deadline;
        let now = asked() + Span::seconds(10);
        assert_eq!(
            ours.extend_deadline(Span::hours(1), now),
            Ok(first + Span::hours(1))
        );
        assert_eq!(ours.version, 1);
        // Past the ceiling: cut to seven days after the question was asked, then refused.
        assert_eq!(
            ours.extend_deadline(Span::days(7), now),
            Ok(asked() + crate::expiry::MAX_WINDOW)
        );
        assert!(ours.extend_deadline(Span::minutes(1), now).is_err());
        for bad in [Span::zero(), Span::minutes(-5), Span::days(8)] {
            assert!(round(false).extend_deadline(bad, now).is_err(), "{bad}");
        }
        // The asker's own deadline is fixed.
        let mut theirs = round(true);
        let refused = theirs
            .extend_deadline(Span::hours(1), now)
            .expect_err("fixed");
        assert!(
            refused.message().contains("its own deadline is fixed"),
            "{refused}"
        );
        // Only while it waits.
        let mut late = round(false);
        assert!(late.extend_deadline(Span::hours(1), late.deadline).is_err());
    }

    #[test]
    fn an_unanswered_round_expires_at_its_deadline_and_says_whose_it_was() {
        let mut round = round(true);
        assert!(!round.expire_if_due(round.deadline - Span::milliseconds(1)));
        assert!(round.expire_if_due(round.deadline));
        match round.session_effect(Some(RoundStatus::Pending)) {
            Some(SessionEffect::Lost(lost)) => assert_eq!(lost.reason, LostReason::AskerStopped),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_answer_nobody_picked_up_ends_undelivered_unless_a_worker_still_holds_it() {
        let mut answered = round(false);
        answered
            .submit(
                decline(),
                key("k1"),
                Some("rita".into()),
                asked() + Span::seconds(57),
                &accept_all,
            )
            .expect("answered");
        let mut leased = answered.clone();
        leased.lease = Some(Lease {
            owner_id: OwnerId::parse("w1").expect("owner"),
            lease_token: LeaseToken::from_secret("t"),
            expires_at: answered.deadline + Span::seconds(30),
        });
        assert!(
            !leased.fail_undelivered_if_due(answered.deadline),
            "its worker is still there"
        );
        assert!(!answered.fail_undelivered_if_due(answered.deadline - Span::seconds(1)));
        assert!(answered.fail_undelivered_if_due(answered.deadline));
        let failure = answered.failure.clone().expect("failure");
        assert_eq!(failure.code, FailureCode::Undelivered);
        assert!(
            failure.message.starts_with("rita answered at 08:00:57 UTC"),
            "{}",
            failure.message
        );
        match answered.session_effect(Some(RoundStatus::ResponseValidated)) {
            Some(SessionEffect::Lost(lost)) => {
                assert_eq!(lost.reason, LostReason::Undelivered);
                assert_eq!(lost.detail.as_deref(), Some(failure.message.as_str()));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_revoked_token_ends_only_what_was_asked_through_it() {
        let mut pending = round(false);
        assert!(pending.end_for_revoked_token(asked()));
        assert_eq!(pending.failure.map(|f| f.code), Some(FailureCode::Revoked));
        let mut by_key = round(false);
        by_key.asked_through = AskedThrough::ApiKey;
        assert!(!by_key.end_for_revoked_token(asked()));
        let mut answered = round(false);
        answered
            .submit(decline(), key("k1"), None, asked(), &accept_all)
            .expect("answered");
        assert!(answered.end_for_revoked_token(asked()));
        assert_eq!(
            answered.failure.map(|f| f.code),
            Some(FailureCode::Undelivered)
        );
    }

    #[test]
    fn a_poll_delivers_an_answer_once_and_never_a_pending_round() {
        let mut round = round(false);
        assert!(!round.record_poll_delivery(asked()));
        round
            .submit(decline(), key("k1"), None, asked(), &accept_all)
            .expect("answered");
        assert!(round.record_poll_delivery(asked()));
        assert_eq!(round.status, RoundStatus::Delivered);
    }
}
