//! Standing answers at work: a new question like one a person chose to answer "the same way from now on" is
//! answered at once by that rule, recorded as the rule's answer ("rule #12 (rita)") and announced like any
//! other.

use std::collections::BTreeMap;

use anteroom_domain::{
    ids::IdempotencyKey,
    round::{ElicitationResponse, Round},
    standing::QuestionMatch,
};

use crate::{AppState, error::ApiResult};

/// `round`, answered by the newest standing answer for a question like it when there is one; else as it was.
/// A rule's answer the question no longer takes (it ended meanwhile) leaves it as it is.
pub async fn answered_by_rule(state: &AppState, round: Round) -> ApiResult<Round> {
    let Ok(question) = QuestionMatch::of(&round) else {
        return Ok(round);
    };
    let Some(rule) = state
        .store
        .use_standing_answer(&round.session_id, &question)
        .await?
    else {
        return Ok(round);
    };
    let Some(key) = round.requests.keys().next().cloned() else {
        return Ok(round);
    };
    let response = ElicitationResponse {
        action: rule.action,
        content: rule.content.clone(),
        reason: None,
    };
    let idempotency_key = IdempotencyKey::parse(format!("rule-{}-{}", rule.id, round.round_id))?;
    match state
        .store
        .submit_responses_to(
            &round,
            BTreeMap::from([(key, response)]),
            idempotency_key,
            Some(rule.answerer()),
        )
        .await
    {
        Ok((answered, submission)) => {
            crate::announce::answer_recorded(state, &answered, submission);
            Ok(answered)
        }
        Err(error) => {
            tracing::info!(rule = rule.id, round = %round.round_id, %error, "a standing answer did not fit");
            Ok(round)
        }
    }
}
