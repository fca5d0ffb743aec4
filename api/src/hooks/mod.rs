//! The harnesses' hooks, served: Claude Code's HTTP hooks (`POST /hooks/claude/pre-tool-use`, `POST
//! /hooks/claude/elicitation`), Codex's command hook as `anteroom hook` relays it (`POST
//! /hooks/codex/pre-tool-use`), Codex's app server's requests as `anteroom run --codex` relays them (`POST
//! /hooks/codex/app-server`), an ACP agent's permission requests as `anteroom run --acp` relays them (`POST
//! /hooks/acp/permission`) and Copilot CLI's `permissionRequest` command hook as `anteroom hook` relays it (`POST
//! /hooks/copilot/permission-request`), and the other harnesses' permission hooks ([`harnesses`]), all as
//! docs/hooks.md says. The session's producer token authenticates the hook
//! (`Authorization: Bearer ars_…`); a tool call that needs a person, or an MCP server's elicitation, becomes an
//! ordinary round in that session, and the request is held open — as the round's worker — until a person
//! answers or Anteroom's own deadline, which ends before the hook's `timeout`, so nobody answers into a void.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use anteroom_domain::{
    hooks::{
        AcpPermission, AppServerRequest, CodexAsk, ElicitationHook, Harness, HookQuestion,
        PreToolUse, ToolPolicy, Verdict, check_tool_name, elicitation_question, elicitation_reply,
        tool_decision, tool_question,
    },
    ids::{RequestKey, SessionId},
    outward::{OutwardAnswer, outward_answer},
    round::{AskedThrough, NewRound, OperationKind, Round},
};
use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, State},
    http::{HeaderMap, Method, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};
use serde::Deserialize;
use serde_json::Value;

mod harnesses;

pub use harnesses::RecentAllows;

use crate::{
    AppState,
    asking::HeldQuestion,
    error::{ApiError, ApiResult, ErrorCode},
    extract::{ApiJson, ApiQuery},
};

/// A Claude Code hook's default `timeout`, in seconds.
const HOOK_TIMEOUT_DEFAULT: u64 = 600;
/// How long before the hook's own timeout Anteroom gives up, so its honest reply arrives in time.
const HOOK_MARGIN: u64 = 30;
/// How many hook requests one session may hold open at once; more are told to retry.
pub const HELD_PER_SESSION: usize = 8;

/// The hook routes, with the API's body limit and JSON errors for other methods.
pub fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/hooks/claude/pre-tool-use", post(claude_pre_tool_use))
        .route("/hooks/codex/pre-tool-use", post(codex_pre_tool_use))
        .route("/hooks/claude/elicitation", post(elicitation))
        .route("/hooks/codex/app-server", post(codex_app_server))
        .route("/hooks/acp/permission", post(acp_permission))
        .route(
            "/hooks/copilot/permission-request",
            post(harnesses::copilot_permission_request),
        )
        .route(
            "/hooks/copilot/pre-tool-use",
            post(harnesses::copilot_pre_tool_use),
        )
        .route(
            "/hooks/codex/permission-request",
            post(harnesses::codex_permission_request),
        )
        .route(
            "/hooks/qwen/pre-tool-use",
            post(harnesses::qwen_pre_tool_use),
        )
        .route(
            "/hooks/qwen/permission-request",
            post(harnesses::qwen_permission_request),
        )
        .route("/hooks/cursor", post(harnesses::cursor))
        .route(
            "/hooks/gemini/before-tool",
            post(harnesses::gemini_before_tool),
        )
        .method_not_allowed_fallback(|method: Method| async move {
            ApiError::new(
                ErrorCode::MethodNotAllowed,
                format!("{method} is not allowed here: hooks POST their event."),
            )
        })
        .layer(DefaultBodyLimit::max(state.config.body_limit))
}

/// The hook's settings, from its URL: its `timeout` (seconds, as in the settings file) and the tool policy.
#[derive(Debug, Default, Deserialize)]
pub struct HookOptions {
    timeout: Option<u64>,
    ask: Option<String>,
    allow: Option<String>,
}

impl HookOptions {
    /// How long Anteroom holds the request: the hook's timeout less a margin (half of it for short ones).
    pub(crate) fn wait(&self) -> Duration {
        let timeout = self
            .timeout
            .unwrap_or(HOOK_TIMEOUT_DEFAULT)
            .clamp(2, 86_400);
        Duration::from_secs(timeout.saturating_sub(HOOK_MARGIN).max(timeout / 2))
    }
}

/// Hook requests each session holds open now, against [`HELD_PER_SESSION`].
#[derive(Clone, Default)]
pub struct HeldHooks(Arc<Mutex<HashMap<SessionId, usize>>>);

/// One held request's place; given back when dropped.
struct HeldSlot {
    hooks: HeldHooks,
    session: SessionId,
}

impl HeldHooks {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, usize>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn take(&self, session: &SessionId) -> ApiResult<HeldSlot> {
        let mut counts = self.counts();
        let held = counts.entry(session.clone()).or_default();
        if *held >= HELD_PER_SESSION {
            return Err(ApiError::rate_limited(
                5,
                format!(
                    "This session already holds {HELD_PER_SESSION} hook requests waiting for a person; try again \
                     once one is answered."
                ),
            ));
        }
        *held += 1;
        Ok(HeldSlot {
            hooks: self.clone(),
            session: session.clone(),
        })
    }
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        let mut counts = self.hooks.counts();
        if let Some(held) = counts.get_mut(&self.session) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                counts.remove(&self.session);
            }
        }
    }
}

/// The session whose producer token the hook sends as `Authorization: Bearer`.
async fn hook_session(
    state: &AppState,
    headers: &HeaderMap,
) -> ApiResult<anteroom_domain::session::Session> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(|| {
            ApiError::unauthorized(
                "Send the session's producer token as `Authorization: Bearer ars_…` (the hook's `headers`).",
            )
        })?;
    crate::producer::session_for_token(state, token).await
}

/// Claude Code's `PreToolUse`.
async fn claude_pre_tool_use(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(call): ApiJson<PreToolUse>,
) -> ApiResult<Response> {
    pre_tool_use(&state, &headers, &options, &call, Harness::ClaudeCode).await
}

/// Codex's `PreToolUse` (Claude Code's JSON and the turn), as `anteroom hook codex-pre-tool-use` relays it. An
/// allowed call is remembered for Codex's own approval of it ([`RecentAllows`]).
async fn codex_pre_tool_use(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(event): ApiJson<harnesses::CodexEvent>,
) -> ApiResult<Response> {
    let session = hook_session(&state, &headers).await?;
    let decided = decide(&state, &session.id, &options, &event.call, Harness::Codex).await?;
    let Some((answer, who, wait)) = decided else {
        return Ok(StatusCode::OK.into_response());
    };
    if Verdict::of(&event.call, &answer, &who, wait).allowed {
        state
            .recent_allows
            .remember(&state, &session.id, &event, &who);
    }
    Ok(Json(tool_decision(
        &event.call,
        Harness::Codex,
        &answer,
        &who,
        wait,
    ))
    .into_response())
}

/// `PreToolUse`: an empty 200 when the policy lets the call through, else the person's decision.
async fn pre_tool_use(
    state: &AppState,
    headers: &HeaderMap,
    options: &HookOptions,
    call: &PreToolUse,
    harness: Harness,
) -> ApiResult<Response> {
    let session = hook_session(state, headers).await?;
    match decide(state, &session.id, options, call, harness).await? {
        Some((answer, who, wait)) => {
            Ok(Json(tool_decision(call, harness, &answer, &who, wait)).into_response())
        }
        // No decision: the harness goes on as it would without the hook.
        None => Ok(StatusCode::OK.into_response()),
    }
}

/// A tool call the hook's policy (its `ask` and `allow` lists) sends to a person, asked in `session` and held
/// until answered: the answer, who gave it and how long Anteroom held the call; `None` when the policy lets the
/// call through without a decision.
async fn decide(
    state: &AppState,
    session: &SessionId,
    options: &HookOptions,
    call: &PreToolUse,
    harness: Harness,
) -> ApiResult<Option<(OutwardAnswer, String, Duration)>> {
    check_tool_name(&call.tool_name)?;
    let policy = ToolPolicy::from_lists(options.ask.as_deref(), options.allow.as_deref());
    if !policy.needs_person(&call.tool_name) {
        return Ok(None);
    }
    ask_tool(state, session, options, call, harness)
        .await
        .map(Some)
}

/// Asks a person whether `call` may run, whatever the policy: a harness's own approval already decided it needs one.
async fn ask_tool(
    state: &AppState,
    session: &SessionId,
    options: &HookOptions,
    call: &PreToolUse,
    harness: Harness,
) -> ApiResult<(OutwardAnswer, String, Duration)> {
    let question = tool_question(call, harness)?;
    let key = question.key;
    let wait = options.wait();
    let round = ask_and_wait(state, session, question, &call.session_id, wait).await?;
    let who = round
        .responded_by
        .clone()
        .unwrap_or_else(|| "a person".to_owned());
    Ok((outward_answer(&round, key), who, wait))
}

/// `Elicitation`: the MCP server's question, answered by a person.
async fn elicitation(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(hook): ApiJson<ElicitationHook>,
) -> ApiResult<Json<Value>> {
    let session = hook_session(&state, &headers).await?;
    let question = elicitation_question(&hook)?;
    let key = question.key;
    let round = ask_and_wait(
        &state,
        &session.id,
        question,
        &hook.session_id,
        options.wait(),
    )
    .await?;
    Ok(Json(elicitation_reply(&outward_answer(&round, key))))
}

/// Codex's app server asking its client, as `anteroom run --codex` relays the request: the person's answer as
/// the JSON-RPC result Codex reads, and what the model should read besides (`steer`).
async fn codex_app_server(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(request): ApiJson<AppServerRequest>,
) -> ApiResult<Json<Value>> {
    let session = hook_session(&state, &headers).await?;
    let ask = CodexAsk::read(&request)?;
    let question = ask.question()?;
    let key = question.key;
    let wait = options.wait();
    let round = ask_and_wait(&state, &session.id, question, &ask.thread().id, wait).await?;
    let who = round.responded_by.as_deref().unwrap_or("a person");
    let reply = ask.reply(&outward_answer(&round, key), who, wait);
    Ok(Json(
        serde_json::json!({"result": reply.result, "steer": reply.steer}),
    ))
}

/// An ACP agent's `session/request_permission`, as `anteroom run --acp` relays it: the option the agent offered
/// of the person's decision, and what the agent should be told besides (`note`).
#[derive(Debug, Deserialize)]
struct AcpPermissionRequest {
    agent: String,
    #[serde(default)]
    params: Value,
}

async fn acp_permission(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(request): ApiJson<AcpPermissionRequest>,
) -> ApiResult<Json<Value>> {
    let session = hook_session(&state, &headers).await?;
    let permission = AcpPermission::read(&request.agent, &request.params)?;
    let question = permission.question();
    let key = question.key;
    let wait = options.wait();
    let round = ask_and_wait(&state, &session.id, question, &permission.session, wait).await?;
    let who = round.responded_by.as_deref().unwrap_or("a person");
    let reply = permission.reply(&outward_answer(&round, key), who, wait);
    Ok(Json(
        serde_json::json!({"result": reply.result, "note": reply.note}),
    ))
}

/// Asks `question` in the session and holds the request until nobody can answer it any more.
async fn ask_and_wait(
    state: &AppState,
    session: &SessionId,
    question: HookQuestion,
    harness_run: &str,
    wait: Duration,
) -> ApiResult<Round> {
    let _slot = state.held_hooks.take(session)?;
    state.limiter.creates.check(session.as_str())?;
    let run: String = harness_run
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(64)
        .collect();
    let new = NewRound {
        session_id: session.clone(),
        request_id: None,
        logical_operation_id: format!("hook-{run}-{}", uuid::Uuid::new_v4()),
        server: Some(question.asker.server),
        operation_kind: OperationKind::Tool,
        operation_name: question.asker.tool,
        requests: [(RequestKey::parse(question.key)?, question.request)].into(),
        request_state: None,
        round_index: 0,
        round_limit: 1,
        deadline: chrono::Duration::from_std(wait)
            .ok()
            .map(|wait| state.store.now() + wait),
        fingerprint: None,
        asked_through: AskedThrough::SessionToken,
    };
    let (mut held, _) = HeldQuestion::ask(state, new, wait, "hook").await?;
    let mut looked = held.look().await?;
    let round = loop {
        if let Some(round) = looked {
            break round;
        }
        looked = held.next_look().await?;
    };
    held.finish(round).await
}
