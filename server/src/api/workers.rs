//! Rounds and workers (SPEC §5.3) under `/api/v1/s/{token}/`: multi-request rounds, leases as compare-and-set.

use std::collections::BTreeMap;

use anteroom_app::domain::{
    ids::{LeaseToken, OwnerId, RequestKey, RoundId},
    round::{ElicitationRequest, FailureCode, NewRound, OperationKind, Round},
};
use axum::{
    Json, Router,
    extract::State,
    http::StatusCode,
    routing::{get, post},
};
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

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/s/{token}/rounds", post(create_round))
        .route("/api/v1/s/{token}/pending", get(pending_round))
        .route("/api/v1/s/{token}/rounds/{round_id}", get(read_round))
        .route(
            "/api/v1/s/{token}/rounds/{round_id}/redacted",
            get(redacted),
        )
        .route("/api/v1/s/{token}/rounds/{round_id}/claim", post(claim))
        .route("/api/v1/s/{token}/rounds/{round_id}/renew", post(renew))
        .route(
            "/api/v1/s/{token}/rounds/{round_id}/start-delivery",
            post(start_delivery),
        )
        .route(
            "/api/v1/s/{token}/rounds/{round_id}/delivered",
            post(delivered),
        )
        .route("/api/v1/s/{token}/rounds/{round_id}/resolve", post(resolve))
        .route("/api/v1/s/{token}/rounds/{round_id}/fail", post(fail))
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

async fn create_round(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<CreateRound>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let session = session_for_token(&state, &token).await?;
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
        })
        .await?;
    state.events.publish(
        "round.created",
        round.session_id.as_str(),
        Some(round.round_id.to_string()),
        Some(round.request_id.to_string()),
    );
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

async fn read_round(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Value>> {
    Ok(Json(round_json(
        &own_round(&state, &token, &round_id).await?,
    )))
}

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

async fn redacted(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Value>> {
    let round = own_round(&state, &token, &round_id).await?;
    Ok(Json(json!(round.redacted())))
}

fn lease_length(seconds: Option<i64>) -> ApiResult<Duration> {
    let seconds = seconds.unwrap_or(60);
    if !(1..=86_400).contains(&seconds) {
        return Err(ApiError::validation(
            "`lease_seconds` must be between 1 and 86400.",
        ));
    }
    Ok(Duration::seconds(seconds))
}

#[derive(Debug, Deserialize)]
struct ClaimBody {
    owner_id: OwnerId,
    lease_seconds: Option<i64>,
}

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
        "expires_at": lease.expires_at,
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
        json!({ "owner_id": lease.owner_id, "expires_at": lease.expires_at }),
    ))
}

async fn start_delivery(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Value>> {
    let round = own_round(&state, &token, &round_id).await?;
    let round = state
        .store
        .start_delivery(round.round_id, &body.owner_id, &body.token())
        .await?;
    Ok(Json(round_json(&round)))
}

async fn delivered(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Value>> {
    let round = own_round(&state, &token, &round_id).await?;
    let round = state
        .store
        .mark_delivered(round.round_id, &body.owner_id, &body.token())
        .await?;
    Ok(Json(round_json(&round)))
}

async fn resolve(
    State(state): State<AppState>,
    ApiPath((token, round_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<WorkerBody>,
) -> ApiResult<Json<Value>> {
    let round = own_round(&state, &token, &round_id).await?;
    let round = state
        .store
        .resolve(round.round_id, &body.owner_id, &body.token())
        .await?;
    Ok(Json(round_json(&round)))
}

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
    state.events.publish(
        "session.changed",
        round.session_id.as_str(),
        Some(round.round_id.to_string()),
        None,
    );
    Ok(Json(round_json(&round)))
}
