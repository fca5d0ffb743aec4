//! Rounds and workers (docs/lifecycle.md#worker-leases) under `/api/v1/s/{token}/`: multi-request rounds, leases as compare-and-set.

use std::collections::BTreeMap;

use anteroom_domain::{
    expiry::wire_time,
    ids::{LeaseToken, OwnerId, RequestKey, RoundId},
    round::{AskedThrough, ElicitationRequest, FailureCode, NewRound, OperationKind, Round},
};
use axum::{Json, extract::State, http::StatusCode};
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    error::{ApiError, ApiResult},
    extract::{ApiJson, ApiPath},
    producer::session_for_token,
    views::round_json,
};
use crate::AppState;
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRound {
    logical_operation_id: String,
    server: Option<String>,
    operation_kind: OperationKind,
    operation_name: String,
    requests: BTreeMap<RequestKey, ElicitationRequest>,
    request_state: Option<String>,
    #[serde(default)]
    round_index: u32,
    #[serde(default = "one")]
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
    params(("token" = String, Path, description = "The session's producer token, from its environment block")),
    responses((status = 201, description = "A round with one or more requests"), (status = 429, description = "rate_limited"), (status = 422, description = "validation_error: malformed input, with per-field details"), (status = 401, description = "unauthorized"))
)]
async fn create_round(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<CreateRound>,
) -> ApiResult<(StatusCode, Json<Value>)> {
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
    Ok((StatusCode::CREATED, Json(round_json(&round))))
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
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID")),
    responses((status = 200, description = "The round (without its lease token)"), (status = 404, description = "not_found"))
)]
async fn read_round(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Value>> {
    Ok(Json(round_json(
        &own_round(&state, &token, &round_id).await?,
    )))
}

#[utoipa::path(
    get,
    path = "/api/v1/s/{token}/pending",
    tag = "rounds",
    params(("token" = String, Path, description = "The session's producer token, from its environment block")),
    responses((status = 200, description = "The single pending round, or null"), (status = 409, description = "managed_input_state: more than one pending round"), (status = 401, description = "unauthorized"))
)]
async fn pending_round(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let session = session_for_token(&state, &token).await?;
    let pending = state.store.pending_round(&session.id).await?;
    Ok(Json(
        pending.as_ref().map(round_json).unwrap_or(Value::Null),
    ))
}

#[utoipa::path(
    get,
    path = "/api/v1/s/{token}/rounds/{round_id}/redacted",
    tag = "rounds",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID")),
    responses((status = 200, description = "Keys, actions and field names, never values"), (status = 404, description = "not_found"))
)]
async fn redacted(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Value>> {
    let round = own_round(&state, &token, &round_id).await?;
    Ok(Json(json!(round.redacted())))
}

fn lease_length(seconds: Option<i64>) -> ApiResult<Duration> {
    Ok(anteroom_domain::round::lease_length(seconds)?)
}

#[derive(Debug, Deserialize)]
struct ClaimBody {
    owner_id: OwnerId,
    lease_seconds: Option<i64>,
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/claim",
    tag = "workers",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID")),
    responses((status = 200, description = "`{owner_id, lease_token, expires_at}`"), (status = 409, description = "managed_input_conflict or managed_input_recovery"), (status = 422, description = "validation_error: malformed input, with per-field details"), (status = 401, description = "unauthorized"))
)]
async fn claim(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<ClaimBody>,
) -> ApiResult<Json<Value>> {
    let round = own_round(&state, &token, &round_id).await?;
    let lease = state
        .store
        .claim_round(
            round.round_id,
            body.owner_id,
            lease_length(body.lease_seconds)?,
        )
        .await?;
    Ok(Json(json!({
        "owner_id": lease.owner_id,
        "lease_token": lease.lease_token.expose(),
        "expires_at": wire_time(lease.expires_at),
    })))
}

#[derive(Debug, Deserialize)]
struct WorkerBody {
    owner_id: OwnerId,
    lease_token: String,
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
) -> ApiResult<Json<Value>> {
    let id = own_round(state, token, round_id).await?.round_id;
    let (owner, lease) = (&body.owner_id, &body.token());
    let round = match step {
        Step::StartDelivery => state.store.start_delivery(id, owner, lease).await?,
        Step::Delivered => state.store.mark_delivered(id, owner, lease).await?,
        Step::Resolve => state.store.resolve(id, owner, lease).await?,
    };
    Ok(Json(round_json(&round)))
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/renew",
    tag = "workers",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID")),
    responses((status = 200, description = "The extended lease"), (status = 409, description = "managed_input_conflict: expired lease, replaced owner"), (status = 422, description = "validation_error: malformed input, with per-field details"), (status = 401, description = "unauthorized"))
)]
async fn renew(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Value>> {
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
    Ok(Json(
        json!({ "owner_id": lease.owner_id, "expires_at": wire_time(lease.expires_at) }),
    ))
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/start-delivery",
    tag = "workers",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID")),
    responses((status = 200, description = "response_validated -> delivery_started"), (status = 409, description = "managed_input_state or managed_input_conflict"), (status = 422, description = "validation_error: malformed input, with per-field details"), (status = 401, description = "unauthorized"))
)]
async fn start_delivery(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Value>> {
    advance(&state, &token, &round_id, &body, Step::StartDelivery).await
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/delivered",
    tag = "workers",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID")),
    responses((status = 200, description = "delivery_started -> delivered"), (status = 409, description = "managed_input_state or managed_input_conflict"), (status = 422, description = "validation_error: malformed input, with per-field details"), (status = 401, description = "unauthorized"))
)]
async fn delivered(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Value>> {
    advance(&state, &token, &round_id, &body, Step::Delivered).await
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/resolve",
    tag = "workers",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID")),
    responses((status = 200, description = "delivered -> resolved"), (status = 409, description = "managed_input_state or managed_input_conflict"), (status = 422, description = "validation_error: malformed input, with per-field details"), (status = 401, description = "unauthorized"))
)]
async fn resolve(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Value>> {
    advance(&state, &token, &round_id, &body, Step::Resolve).await
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/rounds/{round_id}/fail",
    tag = "workers",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("round_id" = String, Path, description = "The round's UUID")),
    responses((status = 200, description = "The round failed with the given code"), (status = 409, description = "managed_input_state or managed_input_conflict"), (status = 422, description = "validation_error: malformed input, with per-field details"), (status = 401, description = "unauthorized"))
)]
async fn fail(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Value>> {
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
    Ok(Json(round_json(&round)))
}
