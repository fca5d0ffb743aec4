//! Rounds and workers (docs/lifecycle.md#worker-leases) under `/api/v1/s/{token}/`: multi-request rounds, leases as compare-and-set.

use std::collections::BTreeMap;

use anteroom_domain::{
    ids::{LeaseToken, OwnerId, RequestKey, RoundId},
    round::{
        AskedThrough, ElicitationRequest, FailureCode, NewRound, OperationKind, RedactedResponses,
        Round,
    },
};
use axum::{Json, extract::State, http::StatusCode};
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;

use super::{
    error::{
        ApiError, ApiResult, Conflict, ErrorBody, Invalid, NotFound, RateLimited, Unauthorized,
    },
    extract::{ApiJson, ApiPath},
    producer::session_for_token,
    views::{LeaseExtended, LeaseGranted},
};
use crate::AppState;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_round))
        .routes(routes!(pending_round))
        .routes(routes!(read_round))
        .routes(routes!(redacted))
        .routes(routes!(claim))
        .routes(routes!(renew))
        .routes(routes!(start_delivery))
        .routes(routes!(delivered))
        .routes(routes!(resolve))
        .routes(routes!(fail))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateRound {
    logical_operation_id: String,
    server: Option<String>,
    operation_kind: OperationKind,
    operation_name: String,
    requests: BTreeMap<RequestKey, ElicitationRequest>,
    request_state: Option<String>,
    /// Zero-based, less than `round_limit`.
    #[serde(default, deserialize_with = "crate::extract::integral")]
    round_index: u32,
    #[serde(default = "one", deserialize_with = "crate::extract::integral")]
    #[schema(minimum = 1)]
    round_limit: u32,
    deadline: Option<DateTime<Utc>>,
}

fn one() -> u32 {
    1
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds",
    tag = "rounds",
    request_body = CreateRound,
    params(("token" = String, Path, description = "The session's producer token, from its environment block")),
    responses((status = 201, description = "A round with one or more requests", body = Round), RateLimited, Invalid, Unauthorized)
)]
async fn create_round(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<CreateRound>,
) -> ApiResult<(StatusCode, Json<Round>)> {
    let session = session_for_token(&state, &token).await?;
    // The same per-session limit as the producer's create routes: one session, one budget.
    state.limiter.creates.check(session.id.as_str())?;
    let round = state
        .store
        .create_round(NewRound {
            session_id: session.id,
            request_id: None,
            logical_operation_id: body.logical_operation_id,
            server: body.server,
            operation_kind: body.operation_kind,
            operation_name: body.operation_name,
            requests: body.requests,
            request_state: body.request_state,
            round_index: body.round_index,
            round_limit: body.round_limit,
            deadline: body.deadline,
            fingerprint: None,
            asked_through: AskedThrough::SessionToken,
        })
        .await?;
    crate::announce::round_created(&state, &round);
    Ok((StatusCode::CREATED, Json(round)))
}

/// A round of the token's own session; any other round is unknown here.
async fn own_round(state: &AppState, token: &str, round_id: &str) -> ApiResult<Round> {
    let session = session_for_token(state, token).await?;
    let unknown = || ApiError::not_found(format!("No round {round_id} exists in this session."));
    let id = RoundId::parse(round_id).map_err(|_| unknown())?;
    let round = state.store.get_round(id).await?;
    if round.session_id == session.id {
        Ok(round)
    } else {
        Err(unknown())
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/s/{token}/rounds/{round_id}",
    tag = "rounds",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "The round (without its lease token)", body = Round), Invalid, NotFound, Unauthorized)
)]
async fn read_round(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Round>> {
    Ok(Json(own_round(&state, &token, &round_id).await?))
}

#[utoipa::path(
    get,
    path = "/api/v1/s/{token}/pending",
    tag = "rounds",
    params(("token" = String, Path, description = "The session's producer token, from its environment block")),
    responses((status = 200, description = "The single pending round, or null", body = Option<Round>), (status = 409, description = "managed_input_state: more than one pending round", body = ErrorBody), Unauthorized)
)]
async fn pending_round(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
) -> ApiResult<Json<Option<Round>>> {
    let session = session_for_token(&state, &token).await?;
    let pending = state.store.pending_round(&session.id).await?;
    Ok(Json(pending))
}

#[utoipa::path(
    get,
    path = "/api/v1/s/{token}/rounds/{round_id}/redacted",
    tag = "rounds",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "Keys, actions and field names, never values", body = RedactedResponses), Invalid, NotFound, Unauthorized)
)]
async fn redacted(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<RedactedResponses>> {
    let round = own_round(&state, &token, &round_id).await?;
    Ok(Json(round.redacted()))
}

fn lease_length(seconds: Option<i64>) -> ApiResult<Duration> {
    Ok(anteroom_domain::round::lease_length(seconds)?)
}

#[derive(Debug, Deserialize, ToSchema)]
struct ClaimBody {
    owner_id: OwnerId,
    /// 1 to 86,400 (a day); default 60.
    #[serde(default, deserialize_with = "crate::extract::integral_option")]
    #[schema(minimum = 1, maximum = 86400)]
    lease_seconds: Option<i64>,
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/claim",
    tag = "workers",
    request_body = ClaimBody,
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "The lease, with the token that proves it", body = LeaseGranted), (status = 409, description = "managed_input_conflict or managed_input_recovery", body = ErrorBody), Invalid, NotFound, Unauthorized)
)]
async fn claim(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<ClaimBody>,
) -> ApiResult<Json<LeaseGranted>> {
    let round = own_round(&state, &token, &round_id).await?;
    let lease = state
        .store
        .claim_round(
            round.round_id,
            body.owner_id,
            lease_length(body.lease_seconds)?,
        )
        .await?;
    Ok(Json(LeaseGranted::from(&lease)))
}

#[derive(Debug, Deserialize, ToSchema)]
struct WorkerBody {
    owner_id: OwnerId,
    lease_token: String,
    /// 1 to 86,400 (a day); default 60.
    #[serde(default, deserialize_with = "crate::extract::integral_option")]
    #[schema(minimum = 1, maximum = 86400)]
    lease_seconds: Option<i64>,
    code: Option<String>,
    message: Option<String>,
}

impl WorkerBody {
    fn token(&self) -> LeaseToken {
        LeaseToken::from_secret(self.lease_token.clone())
    }
}

/// The three forward steps of a worker's delivery.
#[derive(Debug, Clone, Copy)]
enum Step {
    StartDelivery,
    Delivered,
    Resolve,
}

/// Moves the token's round one step forward on behalf of the lease holder.
async fn advance(
    state: &AppState,
    token: &str,
    round_id: &str,
    body: &WorkerBody,
    step: Step,
) -> ApiResult<Json<Round>> {
    let id = own_round(state, token, round_id).await?.round_id;
    let (owner, lease) = (&body.owner_id, &body.token());
    let round = match step {
        Step::StartDelivery => state.store.start_delivery(id, owner, lease).await?,
        Step::Delivered => state.store.mark_delivered(id, owner, lease).await?,
        Step::Resolve => state.store.resolve(id, owner, lease).await?,
    };
    Ok(Json(round))
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/renew",
    tag = "workers",
    request_body = WorkerBody,
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "The extended lease", body = LeaseExtended), (status = 409, description = "managed_input_conflict: expired lease, replaced owner", body = ErrorBody), Invalid, NotFound, Unauthorized)
)]
async fn renew(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<LeaseExtended>> {
    let round = own_round(&state, &token, &round_id).await?;
    let lease = state
        .store
        .renew(
            round.round_id,
            &body.owner_id,
            &body.token(),
            lease_length(body.lease_seconds)?,
        )
        .await?;
    Ok(Json(LeaseExtended::from(&lease)))
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/start-delivery",
    tag = "workers",
    request_body = WorkerBody,
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "response_validated -> delivery_started", body = Round), Conflict, Invalid, NotFound, Unauthorized)
)]
async fn start_delivery(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Round>> {
    advance(&state, &token, &round_id, &body, Step::StartDelivery).await
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/delivered",
    tag = "workers",
    request_body = WorkerBody,
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "delivery_started -> delivered", body = Round), Conflict, Invalid, NotFound, Unauthorized)
)]
async fn delivered(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Round>> {
    advance(&state, &token, &round_id, &body, Step::Delivered).await
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/resolve",
    tag = "workers",
    request_body = WorkerBody,
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "delivered -> resolved", body = Round), Conflict, Invalid, NotFound, Unauthorized)
)]
async fn resolve(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Round>> {
    advance(&state, &token, &round_id, &body, Step::Resolve).await
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/fail",
    tag = "workers",
    request_body = WorkerBody,
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "The round failed with the given code", body = Round), Conflict, Invalid, NotFound, Unauthorized)
)]
async fn fail(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Round>> {
    let round = own_round(&state, &token, &round_id).await?;
    let code = body
        .code
        .clone()
        .ok_or_else(|| ApiError::validation("`code` is missing: say why the round failed."))?;
    let round = state
        .store
        .fail(
            round.round_id,
            &body.owner_id,
            &body.token(),
            FailureCode::from(code),
            body.message.clone().unwrap_or_default(),
        )
        .await?;
    crate::announce::round_changed(&state, &round);
    Ok(Json(round))
}
