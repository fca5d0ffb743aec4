//! Session management (docs/api.md#sessions): register, list in attention order, read, resume/finish, cancel, tokens.

use anteroom_domain::{
    ids::SessionId,
    round::check_server_name,
    session::{NewSession, Session, SessionSettings},
    webhook::DELIVERY_LOG_SHOWN,
};
use axum::{
    Json,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{
    error::{ApiError, ApiResult, ErrorBody, Forbidden, Invalid, NotFound, Unauthorized},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    views::{
        DeliveryList, IssuedToken, QueuedSession, RoundList, SessionExists, SessionList,
        SessionRegistered, TokenRevoked, environment_block, environment_json,
    },
};
use crate::{
    AppState, credentials,
    runs::{SessionWithRun, WaitQuery, session_with_run},
};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(register, list))
        .routes(routes!(read, update))
        .routes(routes!(rounds))
        .routes(routes!(cancel))
        .routes(routes!(rotate_token, revoke_token))
        .routes(routes!(read_settings, write_settings))
        .routes(routes!(webhook_deliveries))
}

fn session_id(raw: &str) -> ApiResult<SessionId> {
    Ok(SessionId::parse(raw)?)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RegisterBody {
    #[schema(pattern = "^[A-Za-z0-9._:-]{1,128}$")]
    id: String,
    #[schema(max_length = 200)]
    title: Option<String>,
    #[schema(max_length = 100)]
    agent: Option<String>,
    /// Name the MCP server whose configuration the environment block is for.
    #[schema(pattern = "^[^/\\u0000-\\u001F\\u007F-\\u009F]{1,128}$")]
    server: Option<String>,
}

/// Issues a new producer token for `session` and returns it with its environment block.
pub async fn issue_token(
    state: &AppState,
    session: &SessionId,
    server: Option<&str>,
    actor: &str,
) -> ApiResult<IssuedToken> {
    let token = credentials::generate(credentials::SESSION_TOKEN_PREFIX);
    // The old token stops working at once, and the questions asked through it end (docs/deadlines.md).
    let ended = state
        .store
        .set_producer_token(session, Some(&credentials::hash(&token)), actor)
        .await?;
    // Other instances forget the polls they answered with the old token.
    crate::announce::session_changed(state, session);
    let block = environment_block(&state.config, session.as_str(), &token, server);
    Ok(IssuedToken {
        producer_token: token,
        environment: environment_json(&block),
        ended_rounds: ended.iter().map(|round| round.round_id).collect(),
    })
}

fn check_server(server: Option<&str>) -> ApiResult<()> {
    server.map_or(Ok(()), |name| Ok(check_server_name(name)?))
}

#[utoipa::path(
    post,
    path = "/api/v1/sessions",
    tag = "sessions",
    request_body = RegisterBody,
    responses(
        (status = 201, description = "The session, its producer token (shown once) and its environment block", body = SessionRegistered),
        (status = 200, description = "The session already existed (no token)", body = SessionExists),
        Forbidden, Invalid, Unauthorized
    )
)]
async fn register(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<RegisterBody>,
) -> ApiResult<Response> {
    caller.require(|role| role.can_manage(), "register sessions")?;
    check_server(body.server.as_deref())?;
    let id = session_id(&body.id)?;
    let new = NewSession {
        id: id.clone(),
        title: body.title,
        agent: body.agent,
    };
    // Checked before the id is looked up: a body that could not register a session is refused even when
    // the session exists.
    new.validate()?;
    match state.store.get_session(&id).await {
        Ok(existing) => {
            let reply = SessionExists {
                session: existing,
                producer_token: None,
                message: "The session already exists; its token is shown only once. Rotate it with POST /api/v1/sessions/{id}/token.",
            };
            return Ok((StatusCode::OK, Json(reply)).into_response());
        }
        Err(error) if error.is_not_found() => {}
        Err(error) => return Err(error.into()),
    }
    let session = state.store.register_session(new).await?;
    let token = issue_token(&state, &id, body.server.as_deref(), &caller.label()).await?;
    crate::announce::session_changed(&state, &id);
    let reply = SessionRegistered { token, session };
    Ok((StatusCode::CREATED, Json(reply)).into_response())
}

#[utoipa::path(
    get,
    path = "/api/v1/sessions",
    tag = "sessions",
    responses((status = 200, description = "Sessions in attention-queue order", body = SessionList), Unauthorized)
)]
async fn list(State(state): State<AppState>, _caller: Caller) -> ApiResult<Json<SessionList>> {
    let queue = state.store.list_sessions(500).await?;
    let sessions = queue
        .into_iter()
        .map(|entry| QueuedSession {
            session: entry.session,
            open_rounds: entry.open_rounds,
            oldest_open_at: entry.oldest_open_at,
        })
        .collect();
    Ok(Json(SessionList { sessions }))
}

#[utoipa::path(
    get,
    path = "/api/v1/sessions/{id}",
    tag = "sessions",
    params(
        ("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$"),
        ("wait" = Option<u64>, Query, description = "Long-poll: while its run is live, seconds to wait for the run to end, at most 30 (docs/runs.md)")
    ),
    responses((status = 200, description = "The session, with its latest run under `anteroom run`", body = SessionWithRun), Invalid, NotFound, Unauthorized)
)]
async fn read(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<WaitQuery>,
) -> ApiResult<Json<SessionWithRun>> {
    Ok(Json(
        session_with_run(&state, &session_id(&id)?, query.wait).await?,
    ))
}

#[utoipa::path(
    get,
    path = "/api/v1/sessions/{id}/rounds",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses((status = 200, description = "The session's rounds, newest first", body = RoundList), Invalid, NotFound, Unauthorized)
)]
async fn rounds(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<RoundList>> {
    let rounds = state.store.list_rounds(&session_id(&id)?).await?;
    Ok(Json(RoundList { rounds }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct UpdateBody {
    /// `resume` or `finish`.
    #[schema(pattern = "^(resume|finish)$")]
    action: String,
}

#[utoipa::path(
    patch,
    path = "/api/v1/sessions/{id}",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    request_body = UpdateBody,
    responses((status = 200, description = "Resumed or finished", body = Session), (status = 409, description = "managed_input_state: the session still has open questions", body = ErrorBody), Invalid, NotFound, Unauthorized)
)]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<UpdateBody>,
) -> ApiResult<Json<Session>> {
    caller.require(|role| role.can_answer(), "change a session")?;
    let id = session_id(&id)?;
    let session = match body.action.as_str() {
        "resume" => state.store.resume_session(&id).await?,
        "finish" => state.store.finish_session(&id).await?,
        other => {
            return Err(ApiError::validation(format!(
                "`action` {other:?} is not one of \"resume\", \"finish\"; to cancel, POST …/cancel."
            )));
        }
    };
    crate::announce::session_changed(&state, &id);
    Ok(Json(session))
}

#[utoipa::path(
    post,
    path = "/api/v1/sessions/{id}/cancel",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses((status = 200, description = "Cancelled; open rounds failed `cancelled`", body = Session), Invalid, Forbidden, NotFound, Unauthorized)
)]
async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Session>> {
    caller.require(|role| role.can_manage(), "cancel sessions")?;
    let id = session_id(&id)?;
    let session = state.store.cancel_session(&id).await?;
    crate::announce::session_changed(&state, &id);
    Ok(Json(session))
}

#[utoipa::path(
    get,
    path = "/api/v1/sessions/{id}/settings",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses((status = 200, description = "What an admin set for the session (the defaults when nothing)", body = SessionSettings), Invalid, NotFound, Unauthorized)
)]
async fn read_settings(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<SessionSettings>> {
    let id = session_id(&id)?;
    Ok(Json(state.store.session_settings(&id).await?))
}

#[utoipa::path(
    put,
    path = "/api/v1/sessions/{id}/settings",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    request_body = SessionSettings,
    responses((status = 200, description = "The session's settings, replaced", body = SessionSettings), Invalid, Forbidden, NotFound, Unauthorized)
)]
async fn write_settings(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SessionSettings>,
) -> ApiResult<Json<SessionSettings>> {
    caller.require(|role| role.can_manage(), "change session settings")?;
    let id = session_id(&id)?;
    let settings = state
        .store
        .set_session_settings(&id, &body, &caller.label())
        .await?;
    // Who answers may have changed: the pages show it.
    crate::announce::session_changed(&state, &id);
    Ok(Json(settings))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RotateQuery {
    /// Write the block for this MCP server's own route.
    server: Option<String>,
}

#[utoipa::path(
    post,
    path = "/api/v1/sessions/{id}/token",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$"), ("server" = Option<String>, Query, description = "Write the block for this MCP server's route", pattern = "^[^/\\u0000-\\u001F\\u007F-\\u009F]{1,128}$")),
    responses((status = 200, description = "A new producer token and environment block; the old token stops working", body = IssuedToken), Invalid, Forbidden, NotFound, Unauthorized)
)]
async fn rotate_token(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<RotateQuery>,
) -> ApiResult<Json<IssuedToken>> {
    caller.require(|role| role.can_manage(), "issue session tokens")?;
    let id = session_id(&id)?;
    let server = query.server;
    check_server(server.as_deref())?;
    state.store.get_session(&id).await?;
    Ok(Json(
        issue_token(&state, &id, server.as_deref(), &caller.label()).await?,
    ))
}

#[utoipa::path(
    delete,
    path = "/api/v1/sessions/{id}/token",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses((status = 200, description = "The producer token no longer works", body = TokenRevoked), Invalid, Forbidden, NotFound, Unauthorized)
)]
async fn revoke_token(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TokenRevoked>> {
    caller.require(|role| role.can_manage(), "revoke session tokens")?;
    let id = session_id(&id)?;
    let ended = state
        .store
        .set_producer_token(&id, None, &caller.label())
        .await?;
    crate::announce::session_changed(&state, &id);
    Ok(Json(TokenRevoked {
        session_id: id,
        producer_token: None,
        revoked: true,
        ended_rounds: ended.iter().map(|round| round.round_id).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/webhooks/deliveries",
    tag = "sessions",
    responses((status = 200, description = "The most recent webhook deliveries (at most 200), newest first", body = DeliveryList), Forbidden, Unauthorized)
)]
/// The webhook delivery log, for admins.
async fn webhook_deliveries(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<DeliveryList>> {
    caller.require(|role| role.can_manage(), "read the webhook delivery log")?;
    let deliveries = state
        .store
        .list_webhook_deliveries(DELIVERY_LOG_SHOWN)
        .await?;
    Ok(Json(DeliveryList { deliveries }))
}
