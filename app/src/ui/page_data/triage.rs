//! The queue's actions on many or one question: batch decline and dismiss, handing a question on, more time.

use super::*;

impl PageData {
    /// Declines or dismisses (`action`) each of `round_ids` for `viewer` (batch triage): each one only if it
    /// still waits and the person may answer it, each recorded on its own under the batch's `attempt` (a
    /// retried batch answers none twice). Says how each fared.
    pub async fn triage(
        &self,
        viewer: &Viewer,
        round_ids: &[String],
        action: &str,
        attempt: &str,
        csrf: &str,
    ) -> Result<Vec<TriageOutcome>, String> {
        same_sign_in(viewer, csrf)?;
        let Some(action @ (ResponseAction::Decline | ResponseAction::Cancel)) =
            ResponseAction::parse(action)
        else {
            return Err(
                "A batch declines or dismisses; accept each question on its page.".to_owned(),
            );
        };
        if round_ids.len() > TRIAGE_MAX {
            return Err(format!("At most {TRIAGE_MAX} questions at once."));
        }
        if attempt.is_empty()
            || attempt.len() > 64
            || !attempt.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err("This page is out of date. Reload it and try again.".to_owned());
        }
        let mut outcomes = Vec::with_capacity(round_ids.len());
        for raw in round_ids {
            let outcome = self.triage_one(viewer, raw, action, attempt).await;
            outcomes.push(TriageOutcome {
                round_id: raw.chars().take(64).collect(),
                outcome: outcome.to_owned(),
            });
        }
        Ok(outcomes)
    }

    async fn triage_one(
        &self,
        viewer: &Viewer,
        raw: &str,
        action: ResponseAction,
        attempt: &str,
    ) -> &'static str {
        let Ok(round_id) = RoundId::parse(raw) else {
            return "gone";
        };
        let Ok(round) = self.store.get_round(round_id).await else {
            return "gone";
        };
        match self.store.may_answer(&viewer.principal, &round).await {
            Ok(true) => {}
            Ok(false) => return "not_yours",
            Err(_) => return "gone",
        }
        let Ok(idempotency_key) =
            IdempotencyKey::parse(format!("triage-{attempt}-{}", round_id.0.simple()))
        else {
            return "gone";
        };
        let responses = round
            .requests
            .keys()
            .map(|key| {
                (
                    key.clone(),
                    crate::domain::round::ElicitationResponse {
                        action,
                        content: None,
                        reason: None,
                    },
                )
            })
            .collect();
        match self
            .record(&round, responses, idempotency_key, viewer)
            .await
        {
            Ok(_) => "recorded",
            Err(_) => "answered_elsewhere",
        }
    }

    /// Hands round `round_id` of session `session` to `assignee` (`user:NAME`, `group:NAME`, `key:NAME`; empty:
    /// back to the session's responders), for an admin.
    pub async fn assign(
        &self,
        viewer: &Viewer,
        session: &str,
        round_id: &str,
        assignee: &str,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        if !viewer.principal.role.can_manage() {
            return Err("Only admins hand questions to someone.".to_owned());
        }
        let assignee = match assignee.trim() {
            "" => None,
            raw => Some(Responder::parse(raw).map_err(|error| error.message().to_owned())?),
        };
        let gone = || "This question does not exist.".to_owned();
        let round_id = RoundId::parse(round_id).map_err(|_| gone())?;
        let round = self.store.get_round(round_id).await.map_err(said)?;
        if round.session_id.as_str() != session {
            return Err(gone());
        }
        self.store
            .assign_round(round_id, assignee.as_ref(), &viewer.principal.label())
            .await
            .map_err(said)?;
        (self.on_round_change)(&round);
        Ok(())
    }

    /// Gives people an hour more to answer round `round_id` of session `session`, for a person who may
    /// answer it; returns the new deadline (epoch milliseconds).
    pub async fn extend_deadline(
        &self,
        viewer: &Viewer,
        session: &str,
        round_id: &str,
        csrf: &str,
    ) -> Result<i64, String> {
        same_sign_in(viewer, csrf)?;
        let gone = || "This question does not exist.".to_owned();
        let round_id = RoundId::parse(round_id).map_err(|_| gone())?;
        let round = self.store.get_round(round_id).await.map_err(said)?;
        if round.session_id.as_str() != session {
            return Err(gone());
        }
        if !self
            .store
            .may_answer(&viewer.principal, &round)
            .await
            .map_err(said)?
        {
            return Err(
                "Only someone who may answer this question can give it more time.".to_owned(),
            );
        }
        let round = self
            .store
            .extend_deadline(round_id, EXTENSION, &viewer.principal.label())
            .await
            .map_err(said)?;
        (self.on_round_change)(&round);
        Ok(ms(round.deadline))
    }
}

/// How much longer one press of a banner's "+1 hour" gives people.
const EXTENSION: chrono::Duration = chrono::Duration::hours(1);
