//! Agent runs under `anteroom run` (docs/runs.md): the run's own routes, authenticated by its session's token
//! (start, report output and heartbeat, hear a stop, end), and the management routes that read a session with
//! its run, read its output, and stop it.

use std::time::Duration as StdDuration;

use anteroom_domain::{
    ids::SessionId,
    run::{REPORT_BYTES, Run, RunEnd, RunStart, clean_output},
    session::Session,
};
use axum::{Json, extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, ApiResult, Conflict, Forbidden, Invalid, NotFound, Unauthorized},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    producer::session_for_token,
};
use crate::{AppState, credentials::mask_secrets, events::RoundWake};

/// The longest a long-poll here waits.
const WAIT_LIMIT: u64 = 30;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start))
        .routes(routes!(report))
        .routes(routes!(control))
        .routes(routes!(end))
        .routes(routes!(output))
        .routes(routes!(stop))
}

/// A session as the management API reads it: the session, and its latest run under `anteroom run`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionWithRun {
    #[serde(flatten)]
    pub session: Session,
    /// Its latest run; absent for a session no `anteroom run` ever ran.
    pub run: Option<Run>,
}

/// What a run hears back from each report: whether someone asked it to stop.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RunControl {
    pub run: Run,
    /// Who asked the agent to stop: `anteroom run` interrupts it, then terminates, then kills it.
    pub stop_requested_by: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ReportBody {
    /// Output the agent printed since the last report (at most 256 KiB); cleaned and masked here.
    #[serde(default)]
    #[schema(max_length = 262144)]
    output: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct EndBody {
    /// The agent's exit code; `null` when a signal ended it.
    exit_code: Option<i32>,
    /// The signal that ended the agent; `null` when it exited.
    #[schema(minimum = 1, maximum = 64)]
    signal: Option<i32>,
    /// The run ended because Anteroom asked it to stop.
    #[serde(default)]
    stopped: bool,
    /// The output printed since the last report.
    #[serde(default)]
    #[schema(max_length = 262144)]
    output: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitQuery {
    /// Long-poll: seconds to wait, at most 30.
    pub wait: Option<u64>,
}

/// `output` as kept: bounded, without terminal sequences, secrets (Anteroom's and others') cut to their prefix.
fn kept_output(output: &str) -> ApiResult<String> {
    if output.len() > REPORT_BYTES {
        return Err(ApiError::validation(format!(
            "One report carries at most {} KiB of output; send it in parts.",
            REPORT_BYTES / 1024
        )));
    }
    Ok(mask_secrets(&clean_output(output)))
}

fn session_id(raw: &str) -> ApiResult<SessionId> {
    Ok(SessionId::parse(raw)?)
}

async fn run_of(state: &AppState, session: &Session) -> ApiResult<Run> {
    state
        .store
        .run(&session.id)
        .await?
        .map(|run| run.seen_with(session.status))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Session {} has no run; start one with `anteroom run`.",
                session.id
            ))
        })
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/run",
    tag = "sessions",
    params(("token" = String, Path, description = "The session's producer token, from its environment block")),
    request_body = RunStart,
    responses(
        (status = 201, description = "The run, started: report to it with its run_id", body = Run),
        Conflict, Invalid, Unauthorized
    )
)]
async fn start(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<RunStart>,
) -> ApiResult<(StatusCode, Json<Run>)> {
    let session = session_for_token(&state, &token).await?;
    let start = RunStart {
        command: mask_secrets(&body.command),
        host: body.host,
    };
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let run = state.store.start_run(&session.id, &run_id, start).await?;
    crate::announce::session_changed(&state, &session.id);
    Ok((StatusCode::CREATED, Json(run)))
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/run/{run_id}/report",
    tag = "sessions",
    params(
        ("token" = String, Path, description = "The session's producer token"),
        ("run_id" = String, Path, description = "The run's id, from its start", pattern = "^[A-Za-z0-9._:-]{1,128}$")
    ),
    request_body = ReportBody,
    responses(
        (status = 200, description = "Kept; whether someone asked the run to stop", body = RunControl),
        Conflict, Invalid, NotFound, Unauthorized
    )
)]
async fn report(
    State(state): State<AppState>,
    ApiPath((token, run_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<ReportBody>,
) -> ApiResult<Json<RunControl>> {
    let session = session_for_token(&state, &token).await?;
    let output = kept_output(&body.output)?;
    let run = state
        .store
        .report_run(&session.id, &run_id, &output)
        .await?;
    if !output.is_empty() {
        crate::announce::run_output(&state, &session.id);
    }
    Ok(Json(RunControl {
        stop_requested_by: run.stop_requested_by.clone(),
        run: run.seen_with(session.status),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/s/{token}/run/{run_id}/control",
    tag = "sessions",
    params(
        ("token" = String, Path, description = "The session's producer token"),
        ("run_id" = String, Path, description = "The run's id", pattern = "^[A-Za-z0-9._:-]{1,128}$"),
        ("wait" = Option<u64>, Query, description = "Long-poll: seconds to wait for a stop, at most 30")
    ),
    responses(
        (status = 200, description = "The run, and who asked it to stop if anyone has", body = RunControl),
        Invalid, NotFound, Unauthorized
    )
)]
/// What `anteroom run` holds open between reports, so a Stop pressed anywhere reaches the agent at once.
async fn control(
    State(state): State<AppState>,
    ApiPath((token, run_id)): ApiPath<(String, String)>,
    ApiQuery(query): ApiQuery<WaitQuery>,
) -> ApiResult<Json<RunControl>> {
    let session = session_for_token(&state, &token).await?;
    let wait = StdDuration::from_secs(query.wait.unwrap_or(0).min(WAIT_LIMIT));
    let mut watch = state.events.watch_session(session.id.as_str());
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let run = run_of(&state, &session).await?;
        let settled = run.run_id != run_id
            || run.state.is_ended()
            || run.stop_requested_by.is_some()
            || tokio::time::Instant::now() >= deadline;
        if settled {
            return Ok(Json(RunControl {
                stop_requested_by: run.stop_requested_by.clone(),
                run,
            }));
        }
        // A stop asked on another instance arrives as the session's change; look again every 10 s anyway.
        let look_at = (tokio::time::Instant::now() + StdDuration::from_secs(10)).min(deadline);
        if watch.next(look_at).await == RoundWake::Closing {
            let run = run_of(&state, &session).await?;
            return Ok(Json(RunControl {
                stop_requested_by: run.stop_requested_by.clone(),
                run,
            }));
        }
    }
}

#[utoipa::path(
    post,
    path = "/api/v1/s/{token}/run/{run_id}/end",
    tag = "sessions",
    params(
        ("token" = String, Path, description = "The session's producer token"),
        ("run_id" = String, Path, description = "The run's id", pattern = "^[A-Za-z0-9._:-]{1,128}$")
    ),
    request_body = EndBody,
    responses(
        (status = 200, description = "The run as it ended; its waiting questions ended with it", body = Run),
        Conflict, Invalid, NotFound, Unauthorized
    )
)]
async fn end(
    State(state): State<AppState>,
    ApiPath((token, run_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<EndBody>,
) -> ApiResult<Json<Run>> {
    let session = session_for_token(&state, &token).await?;
    let output = kept_output(&body.output)?;
    let end = RunEnd {
        exit_code: body.exit_code,
        signal: body.signal,
        stopped: body.stopped,
    };
    let (run, _ended) = state
        .store
        .end_run(&session.id, &run_id, &end, &output)
        .await?;
    crate::announce::session_changed(&state, &session.id);
    Ok(Json(run))
}

/// The session with its run; while the run is live, waits up to `wait` seconds (at most 30) for it to end.
pub async fn session_with_run(
    state: &AppState,
    id: &SessionId,
    wait: Option<u64>,
) -> ApiResult<SessionWithRun> {
    let wait = StdDuration::from_secs(wait.unwrap_or(0).min(WAIT_LIMIT));
    let mut watch = state.events.watch_session(id.as_str());
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let session = state.store.get_session(id).await?;
        let run = state
            .store
            .run(id)
            .await?
            .map(|run| run.seen_with(session.status));
        let live = run.as_ref().is_some_and(|run| !run.state.is_ended());
        if !live || tokio::time::Instant::now() >= deadline {
            return Ok(SessionWithRun { session, run });
        }
        let look_at = (tokio::time::Instant::now() + StdDuration::from_secs(10)).min(deadline);
        if watch.next(look_at).await == RoundWake::Closing {
            return Ok(SessionWithRun { session, run });
        }
    }
}

/// A run's kept output.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunOutput {
    pub run_id: String,
    /// The last 64 KiB the agent printed, in whole lines: terminal sequences removed, credentials masked.
    /// Text, never markup.
    pub output: String,
}

#[utoipa::path(
    get,
    path = "/api/v1/sessions/{id}/output",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses((status = 200, description = "The tail of its run's output", body = RunOutput), Invalid, NotFound, Unauthorized)
)]
async fn output(
    State(state): State<AppState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<RunOutput>> {
    let session = state.store.get_session(&session_id(&id)?).await?;
    let run = run_of(&state, &session).await?;
    let output = state
        .store
        .run_output(&session.id)
        .await?
        .unwrap_or_default();
    Ok(Json(RunOutput {
        run_id: run.run_id,
        output,
    }))
}

#[utoipa::path(
    post,
    path = "/api/v1/sessions/{id}/stop",
    tag = "sessions",
    params(("id" = String, Path, description = "The session id", pattern = "^[A-Za-z0-9._:-]{1,128}$")),
    responses(
        (status = 200, description = "Asked: `anteroom run` interrupts the agent within a second, then terminates and kills it if it lingers", body = Run),
        Conflict, Forbidden, Invalid, NotFound, Unauthorized
    )
)]
async fn stop(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Run>> {
    caller.require(|role| role.can_answer(), "stop an agent")?;
    let id = session_id(&id)?;
    if !state.store.may_stop_run(&caller.0, &id).await? {
        return Err(ApiError::forbidden(format!(
            "{} is not one of this session's responders, so may not stop its agent.",
            caller.label()
        )));
    }
    let run = stop_run(&state, &id, &caller.label()).await?;
    Ok(Json(run))
}

/// `by` stops the session's run (the API's route and the page's button).
pub async fn stop_run(state: &AppState, session: &SessionId, by: &str) -> ApiResult<Run> {
    let run = state.store.request_stop(session, by).await?;
    crate::announce::session_changed(state, session);
    Ok(run)
}
