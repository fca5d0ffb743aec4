//! Answers from people and orchestrators (docs/api.md#answers): the original orchestrator's `respond`, and full response
//! maps with an idempotency key. First answer wins; the server's validation is authoritative.

use std::collections::BTreeMap;

use anteroom_domain::{
    access::{Principal, PrincipalKind},
    ids::{IdempotencyKey, RequestId, RequestKey, RoundId},
    responders::describe,
    round::{ElicitationResponse, ResponseAction, Round, Submission},
};
use axum::{Json, extract::State};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    error::{ApiError, ApiResult, ErrorBody, Forbidden, Invalid, NotFound, Unauthorized},
    extract::{ApiJson, ApiPath, Caller},
    views::{AnswerRecorded, RoundAnswered},
};
use crate::{AppState, credentials};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(respond))
        .routes(routes!(read_round))
        .routes(routes!(submit))
        .routes(routes!(extend))
}

fn round_id(raw: &str) -> ApiResult<RoundId> {
    RoundId::parse(raw).map_err(|_| ApiError::not_found(format!("No round {raw} exists.")))
}

#[utoipa::path(
    get,
    path = "/api/v1/rounds/{round_id}",
    tag = "answers",
    params(("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "The round", body = Round), Invalid, NotFound, Unauthorized)
)]
async fn read_round(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Round>> {
    Ok(Json(state.store.get_round(round_id(&id)?).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RespondBody {
    action_type: ResponseAction,
    content: Option<Map<String, Value>>,
    /// With `decline` or `cancel`: why, in the person's words (a hook hands it to the model).
    reason: Option<String>,
}

#[utoipa::path(
    patch,
    path = "/api/v1/elicitations/{request_id}/respond",
    tag = "answers",
    request_body = RespondBody,
    params(("request_id" = String, Path, description = "The producer's request id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses((status = 200, description = "Answer recorded (or the same answer replayed)", body = AnswerRecorded), (status = 409, description = "Already answered (details name the winner), or expired", body = ErrorBody), (status = 403, description = "forbidden: viewers cannot answer", body = ErrorBody), Invalid, NotFound, Unauthorized)
)]
async fn respond(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(request_id): ApiPath<String>,
    ApiJson(body): ApiJson<RespondBody>,
) -> ApiResult<Json<AnswerRecorded>> {
    caller.require(|role| role.can_answer(), "answer questions")?;
    let id = RequestId::parse(&request_id).map_err(|_| {
        ApiError::not_found(format!("No question with request id {request_id} exists."))
    })?;
    let round = state.store.get_round_by_request_id(&id).await?;
    let response = ElicitationResponse {
        action: body.action_type,
        content: body.content,
        reason: body.reason,
    };
    let (round, submission) =
        answer_one(&state, &round, response, &caller.0, caller.label()).await?;
    Ok(Json(AnswerRecorded {
        request_id: round.request_id,
        round_id: round.round_id,
        action: body.action_type,
        status: round.status,
        answered_by: round.responded_by,
        answered_at: round.responded_at,
        replayed: submission == Submission::Replayed,
    }))
}

/// Refuses a person the identity provider vouches for whose last sign-in through it is older than
/// `ANTEROOM_OIDC_ANSWER_ELSEWHERE_HOURS`: their role and groups are what the provider said then, and it may have
/// removed them since. A page's session never gets here that old (it goes through the provider every recheck).
async fn provider_rights_current(state: &AppState, who: &Principal) -> ApiResult<()> {
    let Some(answers_for) = state.config.provider_answers_for else {
        return Ok(());
    };
    if who.kind != PrincipalKind::Person {
        return Ok(());
    }
    match state.store.provider_signed_in_at(&who.id).await? {
        Some(at) if state.store.now() > at + answers_for => Err(ApiError::forbidden(format!(
            "{} last signed in through the company's identity provider more than {} hours ago; sign in to \
             Anteroom again, then answer.",
            who.label(),
            answers_for.num_hours()
        ))),
        _ => Ok(()),
    }
}

/// Refuses `who` a question that is not theirs to answer: the one rule (docs/teams.md), asked of the store.
pub async fn check_may_answer(state: &AppState, who: &Principal, round: &Round) -> ApiResult<()> {
    provider_rights_current(state, who).await?;
    if state.store.may_answer(who, round).await? {
        return Ok(());
    }
    let scope = state.store.answer_scope(round).await?;
    Err(ApiError::forbidden(if who.role.can_answer() {
        format!(
            "This question is for {}; {} may not answer it.",
            describe(&scope),
            who.label()
        )
    } else {
        format!(
            "{} has the {} role, which may not answer questions.",
            who.label(),
            who.role.as_str()
        )
    }))
}

/// Round `raw_id`, when the caller may answer it (the rule of [`check_may_answer`]).
async fn answerable_round(state: &AppState, caller: &Caller, raw_id: &str) -> ApiResult<Round> {
    let round = state.store.get_round(round_id(raw_id)?).await?;
    check_may_answer(state, &caller.0, &round).await?;
    Ok(round)
}

/// Answers a single-request round the way `PATCH …/respond`, the MCP tool, Slack and answer links do: only if
/// `who` may answer it, its only request, an idempotency key derived from the answer (the same answer again is a
/// replay, whichever way it came), first answer wins, recorded under `answered_by` and announced.
pub async fn answer_one(
    state: &AppState,
    round: &Round,
    response: ElicitationResponse,
    who: &Principal,
    answered_by: String,
) -> ApiResult<(Round, Submission)> {
    check_may_answer(state, who, round).await?;
    let key: RequestKey = match round.requests.keys().collect::<Vec<_>>().as_slice() {
        [only] => (*only).clone(),
        _ => {
            return Err(ApiError::validation(format!(
                "Round {} asks {} questions at once; answer it with POST /api/v1/rounds/{}/responses.",
                round.round_id,
                round.requests.len(),
                round.round_id
            )));
        }
    };
    // The same answer as before reasons existed keeps the same key.
    let answer = match &response.reason {
        None => json!([response.action, response.content]),
        Some(reason) => json!([response.action, response.content, reason]),
    };
    let fingerprint = credentials::hash(&answer.to_string());
    // A hex digest is ASCII, so its first 40 characters are its first 40 bytes.
    let short = fingerprint.get(..40).unwrap_or(&fingerprint);
    let idempotency_key = IdempotencyKey::parse(format!("respond-{short}"))?;
    let responses = BTreeMap::from([(key, response)]);
    let (round, submission) = state
        .store
        .submit_responses_to(round, responses, idempotency_key, Some(answered_by))
        .await?;
    crate::announce::answer_recorded(state, &round, submission);
    Ok((round, submission))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SubmitBody {
    responses: BTreeMap<RequestKey, ElicitationResponse>,
    idempotency_key: IdempotencyKey,
}

#[utoipa::path(
    post,
    path = "/api/v1/rounds/{round_id}/responses",
    tag = "answers",
    request_body = SubmitBody,
    params(("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "Responses recorded for exactly the pending keys", body = RoundAnswered), (status = 409, description = "managed_input_conflict: idempotency key reused or already answered", body = ErrorBody), Forbidden, Invalid, NotFound, Unauthorized)
)]
async fn submit(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SubmitBody>,
) -> ApiResult<Json<RoundAnswered>> {
    caller.require(|role| role.can_answer(), "answer questions")?;
    let round = answerable_round(&state, &caller, &id).await?;
    let (round, submission) = state
        .store
        .submit_responses_to(
            &round,
            body.responses,
            body.idempotency_key,
            Some(caller.label()),
        )
        .await?;
    crate::announce::answer_recorded(&state, &round, submission);
    Ok(Json(RoundAnswered {
        round,
        replayed: submission == Submission::Replayed,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Extension {
    /// How much longer people have: 1 to 10,080 minutes (the deadline never passes seven days after the question
    /// was asked, nor the asker's own deadline).
    #[schema(minimum = 1, maximum = 10080)]
    extend_by_minutes: i64,
}

#[utoipa::path(
    post,
    path = "/api/v1/rounds/{round_id}/deadline",
    tag = "answers",
    request_body = Extension,
    params(("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "The round with its new deadline", body = Round), (status = 409, description = "managed_input_state: no longer waiting, or the asker's own deadline (fixed), or already at the 7-day ceiling", body = ErrorBody), Forbidden, Invalid, NotFound, Unauthorized)
)]
async fn extend(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Extension>,
) -> ApiResult<Json<Round>> {
    caller.require(|role| role.can_answer(), "extend deadlines")?;
    if !(1..=anteroom_domain::expiry::MAX_WINDOW.num_minutes()).contains(&body.extend_by_minutes) {
        return Err(ApiError::validation(
            "extend_by_minutes is from 1 to 10080 (7 days).",
        ));
    }
    let round = answerable_round(&state, &caller, &id).await?;
    let round = state
        .store
        .extend_deadline(
            round.round_id,
            chrono::Duration::minutes(body.extend_by_minutes),
            &caller.label(),
        )
        .await?;
    crate::announce::round_changed(&state, &round);
    Ok(Json(round))
}
