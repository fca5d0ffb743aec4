//! The producer API (docs/protocol.md): unmodified `@pulsemcp/mcp-elicitation` clients post a question and
//! poll for its answer, authenticated by the session token in the URL (or an API key on the bare routes).

use std::{collections::BTreeMap, net::SocketAddr, time::Duration as StdDuration};

use anteroom_domain::{
    access::Role,
    expiry::wire_time,
    ids::{RequestId, RequestKey, RoundId, SessionId},
    outward::{PollAction, outward_answer},
    producer::{BareQuestionDoc, QuestionDoc, parse_question},
    round::{AskedThrough, NewRound, OperationKind, Round, RoundStatus, check_server_name},
    session::{NewSession, Session},
};
use axum::{
    Json,
    extract::{ConnectInfo, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    error::{
        ApiError, ApiResult, ErrorBody, Forbidden, Invalid, NotFound, RateLimited, Unauthorized,
    },
    extract::{ApiJson, ApiPath, ApiQuery, OptionalCaller},
    views::producer_collection,
};
use crate::{
    AppState, credentials,
    events::{EventKind, RoundWake},
};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_by_token))
        .routes(routes!(poll_by_token))
        .routes(routes!(create_by_token_for_server))
        .routes(routes!(poll_by_token_for_server))
        .routes(routes!(create_bare))
        .routes(routes!(poll_bare))
}

/// The session a producer token in the URL belongs to.
pub async fn session_for_token(state: &AppState, token: &str) -> ApiResult<Session> {
    state
        .store
        .session_for_token(&token_hash(token)?)
        .await?
        .ok_or_else(unknown_token)
}

/// The id of the session a producer token in the URL belongs to, remembered while the token is unchanged: all
/// a create needs, since it reads its session again in its own transaction (a create then costs no read before
/// its insert).
async fn session_id_for_token(state: &AppState, token: &str) -> ApiResult<SessionId> {
    state
        .store
        .session_id_for_token(&token_hash(token)?)
        .await?
        .ok_or_else(unknown_token)
}

/// The stored hash of a producer token from a URL; text that cannot be a token is refused before any lookup.
fn token_hash(token: &str) -> ApiResult<String> {
    if credentials::is_session_token(token) {
        Ok(credentials::hash(token))
    } else {
        Err(unknown_token())
    }
}

fn unknown_token() -> ApiError {
    ApiError::unauthorized(
        "The session token in the URL is not valid (or was revoked); ask for a fresh environment block.",
    )
}

/// The `_meta` of a created question: where to poll it and until when.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedMeta {
    #[serde(rename = "com.pulsemcp/request-id")]
    request_id: RequestId,
    #[serde(rename = "com.pulsemcp/poll-url")]
    poll_url: String,
    #[serde(rename = "com.pulsemcp/expires-at")]
    #[schema(format = DateTime)]
    expires_at: String,
}

/// The 201 (or, for a retried identical body, 200) reply the pulsemcp client reads `requestId` from.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionCreated {
    #[serde(rename = "requestId")]
    request_id: RequestId,
    #[serde(rename = "roundId")]
    round_id: RoundId,
    /// Always `pending`.
    action: PollAction,
    #[serde(rename = "_meta")]
    meta: CreatedMeta,
}

impl QuestionCreated {
    fn of(round: &Round, poll_base: &str) -> Self {
        Self {
            request_id: round.request_id.clone(),
            round_id: round.round_id,
            action: PollAction::Pending,
            meta: CreatedMeta {
                request_id: round.request_id.clone(),
                poll_url: format!("{poll_base}/{}", round.request_id),
                expires_at: wire_time(round.deadline),
            },
        }
    }
}

/// The `_meta` of a poll reply.
#[derive(Debug, Serialize, ToSchema)]
pub struct PollMeta {
    #[serde(rename = "com.pulsemcp/request-id")]
    request_id: String,
    /// When the question ends (the earlier of the asker's deadline and Anteroom's).
    #[serde(rename = "com.pulsemcp/expires-at")]
    #[schema(format = DateTime)]
    expires_at: String,
    #[serde(
        rename = "com.pulsemcp/responded-at",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(format = DateTime)]
    responded_at: Option<String>,
    /// Why an `expired` question ended, when it was not its deadline: `undelivered`, `revoked`, `cancelled`…
    #[serde(rename = "anteroom/failure", skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
}

/// What every poll of a known question gets: `pending`, or the same terminal answer every time.
#[derive(Debug, Serialize, ToSchema)]
pub struct PollReply {
    action: PollAction,
    /// An accepted form's fields; null otherwise.
    #[schema(value_type = Option<Object>)]
    content: Option<Map<String, Value>>,
    #[serde(rename = "_meta")]
    meta: PollMeta,
}

/// The one shape of a `pending` poll reply (the fast path answers with it too).
fn pending_reply(request_id: &str, deadline: DateTime<Utc>) -> PollReply {
    PollReply {
        action: PollAction::Pending,
        content: None,
        meta: PollMeta {
            request_id: request_id.to_owned(),
            expires_at: wire_time(deadline),
            responded_at: None,
            failure: None,
        },
    }
}

/// What every poll of a known id gets: 200 JSON, the same terminal answer every time.
fn poll_reply(round: &Round) -> PollReply {
    let answer = outward_answer(round, round.request_id.as_str());
    if answer.action == PollAction::Pending {
        return pending_reply(round.request_id.as_str(), round.deadline);
    }
    PollReply {
        action: answer.action,
        content: answer.content,
        meta: PollMeta {
            request_id: round.request_id.to_string(),
            expires_at: wire_time(round.deadline),
            responded_at: round.responded_at.map(wire_time),
            failure: answer.failure_code,
        },
    }
}

async fn create_question(
    state: &AppState,
    session_id: &SessionId,
    asked_through: AskedThrough,
    path_server: Option<String>,
    body: &Value,
    poll_base: &str,
) -> ApiResult<Response> {
    let question = parse_question(body)?;
    let fingerprint = credentials::hash(&body.to_string());
    if let Some(hint) = &question.session_hint
        && hint != session_id.as_str()
    {
        return Err(ApiError::forbidden(format!(
            "`_meta[\"com.pulsemcp/session-id\"]` names session {hint:?}, but this URL belongs to another session."
        )));
    }
    let key = RequestKey::parse(question.request_id.as_str())?;
    let new = NewRound {
        session_id: session_id.clone(),
        request_id: Some(question.request_id.clone()),
        logical_operation_id: question.request_id.to_string(),
        server: path_server.or(question.server),
        operation_kind: OperationKind::Tool,
        operation_name: question
            .tool_name
            .map(|name| name.chars().take(200).collect())
            .unwrap_or_else(|| "unknown tool".to_owned()),
        requests: BTreeMap::from([(key, question.request)]),
        request_state: None,
        round_index: 0,
        round_limit: 1,
        deadline: None,
        fingerprint: Some(fingerprint.clone()),
        asked_through,
    };
    let refused = match state.store.create_round(new).await {
        Ok(round) => {
            crate::announce::round_created(state, &round);
            let round = crate::standing::answered_by_rule(state, round).await;
            return Ok((
                StatusCode::CREATED,
                Json(QuestionCreated::of(&round, poll_base)),
            )
                .into_response());
        }
        Err(refused) => refused,
    };
    // A retry, or a request id another question holds: the round that holds the id decides. It is looked up
    // only after a refusal (the id is unique in the table), so a new question costs no read before its insert.
    let existing = match state
        .store
        .get_round_by_request_id(&question.request_id)
        .await
    {
        Ok(existing) => existing,
        Err(lookup) if lookup.is_not_found() => return Err(refused.into()),
        Err(other) => return Err(other.into()),
    };
    if existing.session_id == *session_id
        && existing.fingerprint.as_deref() == Some(fingerprint.as_str())
    {
        Ok((
            StatusCode::OK,
            Json(QuestionCreated::of(&existing, poll_base)),
        )
            .into_response())
    } else {
        Err(ApiError::validation(format!(
            "The request id {} is already used by a different question; send a new request id.",
            question.request_id
        )))
    }
}

#[derive(Debug, Deserialize)]
pub struct PollOptions {
    /// Long-poll: wait up to this many seconds (at most 30) for an answer before replying `pending`.
    wait: Option<u64>,
}

async fn answer_poll(
    state: &AppState,
    round: Round,
    options: &PollOptions,
) -> ApiResult<Json<PollReply>> {
    // Noted when the poll arrives, so a long-poll's bookkeeping is done before it waits, never after the answer.
    note_poll(state, &round).await;
    let mut round = round;
    // Set when `round` came back from recording its delivery: nothing is left to record or to read.
    let mut recorded = false;
    let wait = StdDuration::from_secs(options.wait.unwrap_or(0).min(30));
    if outward_answer(&round, round.request_id.as_str()).action == PollAction::Pending
        && !wait.is_zero()
    {
        let mut watch = state.events.watch_round(round.round_id);
        let deadline = tokio::time::Instant::now() + wait;
        // Re-read after starting to watch, so an answer given in between is not missed.
        round = state.store.get_round(round.round_id).await?;
        while round.status == RoundStatus::Pending && tokio::time::Instant::now() < deadline {
            // Look again each second anyway: the deadline may pass with no event at all.
            let look_at = (tokio::time::Instant::now() + StdDuration::from_secs(1)).min(deadline);
            match watch.next(look_at).await {
                // The answer the poller waits for: record its delivery and read the round in one
                // transaction (the delivery is recorded before the reply leaves, as before, one read sooner).
                RoundWake::Event(EventKind::RoundAnswered) => {
                    round = state.store.record_poll_delivery(round.round_id).await?;
                    recorded = round.status != RoundStatus::Pending;
                }
                RoundWake::Event(_) | RoundWake::Look => {
                    round = state.store.get_round(round.round_id).await?;
                }
                // Shutting down: the question as it stands now; the poller's next poll finds an instance
                // that serves (docs/operations.md#start-up-and-shutdown).
                RoundWake::Closing => {
                    round = state.store.get_round(round.round_id).await?;
                    break;
                }
            }
        }
    }
    let answer = outward_answer(&round, round.request_id.as_str());
    if !recorded
        && matches!(
            answer.action,
            PollAction::Accept | PollAction::Decline | PollAction::Cancel
        )
        && answer.failure_code.is_none()
    {
        // A pulsemcp round has no worker: the poll that carries the answer is its delivery.
        round = state.store.record_poll_delivery(round.round_id).await?;
    }
    Ok(Json(poll_reply(&round)))
}

/// A poll through a session's token. A question still pending (and not yet due) is answered from one light
/// query; anything else takes the full path: expiry, the answer, delivery bookkeeping, long-polling.
async fn poll_through_token(
    state: &AppState,
    token: &str,
    request_id: &str,
    options: &PollOptions,
) -> ApiResult<Json<PollReply>> {
    if options.wait.unwrap_or(0) == 0
        && credentials::is_session_token(token)
        && let Some(probe) = state
            .store
            .poll_probe(&credentials::hash(token), request_id)
            .await?
    {
        if probe.status == RoundStatus::Pending && probe.deadline > state.store.now() {
            state
                .limiter
                .polls
                .check(&(probe.session_id.as_str(), request_id))?;
            note_poll_of(state, probe.round_id).await;
            return Ok(Json(pending_reply(request_id, probe.deadline)));
        }
        // An answer waiting for this poll (or picked up before): the probe found it in the token's session, so
        // the delivery is recorded at once and its round is the reply, with no second read of the session
        // or the round (a past deadline, a lease or a failure take the store's transactional path as before).
        if matches!(
            probe.status,
            RoundStatus::ResponseValidated | RoundStatus::Delivered
        ) {
            state
                .limiter
                .polls
                .check(&(probe.session_id.as_str(), request_id))?;
            if probe.status == RoundStatus::ResponseValidated {
                note_poll_of(state, probe.round_id).await;
            }
            let round = state.store.record_poll_delivery(probe.round_id).await?;
            return Ok(Json(poll_reply(&round)));
        }
    }
    let session = session_for_token(state, token).await?;
    state
        .limiter
        .polls
        .check(&(session.id.as_str(), request_id))?;
    let round = round_in_session(state, &session.id, request_id).await?;
    answer_poll(state, round, options).await
}

/// Notes that the asker of a still-open round polled (its liveness on the page); a failure to persist it
/// costs only freshness, never the poll.
async fn note_poll(state: &AppState, round: &Round) {
    if matches!(
        round.status,
        RoundStatus::Pending | RoundStatus::ResponseValidated
    ) {
        note_poll_of(state, round.round_id).await;
    }
}

async fn note_poll_of(state: &AppState, round: RoundId) {
    if let Err(error) = state.store.record_asker_poll(round).await {
        tracing::warn!(%error, %round, "could not persist the asker's latest poll");
    }
}

/// Looks a polled id up within one session; another session's id is as unknown as a made-up one.
async fn round_in_session(
    state: &AppState,
    session: &SessionId,
    request_id: &str,
) -> ApiResult<Round> {
    let unknown = || {
        ApiError::not_found(format!(
            "No question with request id {request_id} exists in this session."
        ))
    };
    let request_id = RequestId::parse(request_id).map_err(|_| unknown())?;
    match state.store.get_round_by_request_id(&request_id).await {
        Ok(round) if &round.session_id == session => Ok(round),
        Ok(_) => Err(unknown()),
        Err(error) if error.is_not_found() => Err(unknown()),
        Err(other) => Err(other.into()),
    }
}

fn token_collection(state: &AppState, token: &str, server: Option<&str>) -> String {
    producer_collection(&state.config.public_url, token, server)
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/elicitations",
    tag = "producer",
    request_body = QuestionDoc,
    params(("token" = String, Path, description = "The session's producer token, from its environment block")),
    responses((status = 201, description = "Question stored; the reply carries `requestId` and the poll URL", body = QuestionCreated), (status = 200, description = "The identical body again (a retry): the existing question", body = QuestionCreated), (status = 403, description = "forbidden: `_meta` names another session", body = ErrorBody), RateLimited, Invalid, Unauthorized)
)]
async fn create_by_token(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let session_id = session_id_for_token(&state, &token).await?;
    state.limiter.creates.check(session_id.as_str())?;
    let base = token_collection(&state, &token, None);
    create_question(
        &state,
        &session_id,
        AskedThrough::SessionToken,
        None,
        &body,
        &base,
    )
    .await
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/servers/{server}/elicitations",
    tag = "producer",
    request_body = QuestionDoc,
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("server" = String, Path, description = "The asking MCP server's name", pattern = "^[^/\\u0000-\\u001F\\u007F-\\u009F]{1,128}$")),
    responses((status = 201, description = "Question stored, naming the asking server", body = QuestionCreated), (status = 200, description = "A retry of the identical body", body = QuestionCreated), RateLimited, Invalid, Forbidden, Unauthorized)
)]
async fn create_by_token_for_server(
    State(state): State<AppState>,
    ApiPath((token, server)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let session_id = session_id_for_token(&state, &token).await?;
    state.limiter.creates.check(session_id.as_str())?;
    check_server_name(&server)?;
    let base = token_collection(&state, &token, Some(&server));
    create_question(
        &state,
        &session_id,
        AskedThrough::SessionToken,
        Some(server),
        &body,
        &base,
    )
    .await
}

#[utoipa::path(
    get,
    path = "/api/v1/s/{token}/elicitations/{request_id}",
    tag = "producer",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("request_id" = String, Path, description = "The producer's request id", pattern = "^[A-Za-z0-9._:-]{1,128}$"), ("wait" = Option<u64>, Query, description = "Long-poll: seconds to wait for an answer, at most 30")),
    responses((status = 200, description = "pending, accept, decline, cancel or expired", body = PollReply), (status = 404, description = "not_found: no such question in this session", body = ErrorBody), Invalid, Unauthorized)
)]
async fn poll_by_token(
    State(state): State<AppState>,
    ApiPath((token, request_id)): ApiPath<(String, String)>,
    ApiQuery(options): ApiQuery<PollOptions>,
) -> ApiResult<Json<PollReply>> {
    poll_through_token(&state, &token, &request_id, &options).await
}

#[utoipa::path(
    get,
    path = "/api/v1/s/{token}/servers/{server}/elicitations/{request_id}",
    tag = "producer",
    params(("token" = String, Path, description = "The session's producer token, from its environment block"), ("server" = String, Path, description = "The asking MCP server's name", pattern = "^[^/\\u0000-\\u001F\\u007F-\\u009F]{1,128}$"), ("request_id" = String, Path, description = "The producer's request id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses((status = 200, description = "pending, accept, decline, cancel or expired", body = PollReply), RateLimited, NotFound, Invalid, Unauthorized)
)]
async fn poll_by_token_for_server(
    State(state): State<AppState>,
    ApiPath((token, _server, request_id)): ApiPath<(String, String, String)>,
    ApiQuery(options): ApiQuery<PollOptions>,
) -> ApiResult<Json<PollReply>> {
    poll_through_token(&state, &token, &request_id, &options).await
}

/// The bucket of a bare-route call: per API key, or per address when anonymous.
fn bare_key(caller: &OptionalCaller, peer: &SocketAddr) -> String {
    match &caller.0 {
        Some(caller) => caller.0.limit_key(),
        None => format!("ip:{}", peer.ip()),
    }
}

/// The bare routes admit a producer API key, or anybody when the operator opted in.
fn admit_bare(state: &AppState, caller: &OptionalCaller) -> ApiResult<()> {
    match &caller.0 {
        Some(caller) => caller.require(|role| role.can_answer(), "post or poll questions"),
        None if state.config.allow_unauthenticated_producers => Ok(()),
        None => Err(ApiError::unauthorized(
            "These routes need a producer API key (`Authorization: Bearer …`); or use the session's own URL \
             from its environment block.",
        )),
    }
}

#[utoipa::path(
    post,
    path = "/api/v1/elicitations",
    tag = "producer",
    request_body = BareQuestionDoc,
    responses((status = 201, description = "Question stored; session from `_meta`", body = QuestionCreated), (status = 200, description = "A retry of the identical body: the existing question", body = QuestionCreated), (status = 403, description = "forbidden: only admin keys register sessions or post into any session", body = ErrorBody), RateLimited, (status = 404, description = "not_found: anonymous call for an unknown session", body = ErrorBody), Invalid, Unauthorized)
)]
async fn create_bare(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    caller: OptionalCaller,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    admit_bare(&state, &caller)?;
    state.limiter.creates.check(&bare_key(&caller, &peer))?;
    let hint = body
        .get("_meta")
        .and_then(|meta| meta.get("com.pulsemcp/session-id"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ApiError::validation("`_meta[\"com.pulsemcp/session-id\"]` is missing: the bare route needs the session id.")
        })?;
    let session_id = SessionId::parse(hint)?;
    let session = if let Some(caller) = &caller.0 {
        // Registering a session, or posting into any session, is the operator's: admins only.
        caller.require(
            Role::can_manage,
            "register sessions or post into any session",
        )?;
        state
            .store
            .register_session(NewSession {
                id: session_id,
                title: None,
                agent: None,
            })
            .await?
    } else {
        state.store.get_session(&session_id).await?
    };
    let base = format!("{}/api/v1/elicitations", state.config.public_url);
    let asked_through = if caller.0.is_some() {
        AskedThrough::ApiKey
    } else {
        AskedThrough::Anonymous
    };
    create_question(&state, &session.id, asked_through, None, &body, &base).await
}

#[utoipa::path(
    get,
    path = "/api/v1/elicitations/{request_id}",
    tag = "producer",
    params(("request_id" = String, Path, description = "The producer's request id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses((status = 200, description = "pending, accept, decline, cancel or expired", body = PollReply), RateLimited, NotFound, Invalid, Unauthorized)
)]
async fn poll_bare(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    caller: OptionalCaller,
    ApiPath(request_id): ApiPath<String>,
    ApiQuery(options): ApiQuery<PollOptions>,
) -> ApiResult<Json<PollReply>> {
    admit_bare(&state, &caller)?;
    state
        .limiter
        .polls
        .check(&(bare_key(&caller, &peer), request_id.as_str()))?;
    let id = RequestId::parse(&request_id).map_err(|_| {
        ApiError::not_found(format!("No question with request id {request_id} exists."))
    })?;
    let round = state.store.get_round_by_request_id(&id).await?;
    answer_poll(&state, round, &options).await
}
