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

/// Whether the person who made a rule (recorded by username) may answer `round` today; a maker who is no
/// longer a person here may not.
async fn maker_may_answer(state: &AppState, maker: &str, round: &Round) -> ApiResult<bool> {
    match state.store.user_with_password(maker).await? {
        Some((user, _)) => Ok(state
            .store
            .may_answer(&anteroom_domain::access::Principal::person(&user), round)
            .await?),
        None => Ok(false),
    }
}

/// `round`, answered by the newest standing answer for a question like it when there is one; else as it was.
/// Never fails the question's asking: the question exists already, so a rule's answer that cannot be given
/// (the database is away, the question ended meanwhile) leaves it to a person.
pub async fn answered_by_rule(state: &AppState, round: Round) -> Round {
    match rule_answer(state, &round).await {
        Ok(Some(answered)) => answered,
        Ok(None) => round,
        Err(error) => {
            tracing::warn!(round = %round.round_id, error = error.message(), "no standing answer could be given");
            round
        }
    }
}

async fn rule_answer(state: &AppState, round: &Round) -> ApiResult<Option<Round>> {
    // Asked first: while no rule is in force anywhere, a question costs neither this read nor building its match.
    if !state.store.standing_answers_in_force().await? {
        return Ok(None);
    }
    let Ok(question) = QuestionMatch::of(round) else {
        return Ok(None);
    };
    let Some(rule) = state
        .store
        .use_standing_answer(&round.session_id, &question)
        .await?
    else {
        return Ok(None);
    };
    // A rule answers only what its maker may answer now: it never widens their rights (docs/teams.md).
    if !maker_may_answer(state, &rule.created_by, round).await? {
        tracing::info!(round = %round.round_id, rule = rule.id, "a standing answer's maker may not answer this question; left to a person");
        return Ok(None);
    }
    let Some(key) = round.requests.keys().next().cloned() else {
        return Ok(None);
    };
    let response = ElicitationResponse {
        action: rule.action,
        content: rule.content.clone(),
        reason: None,
    };
    let idempotency_key = IdempotencyKey::parse(format!("rule-{}-{}", rule.id, round.round_id))?;
    let (answered, submission) = state
        .store
        .submit_responses_to(
            round,
            BTreeMap::from([(key, response)]),
            idempotency_key,
            Some(rule.answerer()),
        )
        .await?;
    crate::announce::answer_recorded(state, &answered, submission);
    Ok(Some(answered))
}
