//! The permission hooks of the harnesses that do not speak Claude Code's `PreToolUse`, each read into the one
//! tool call Anteroom asks about and answered in its own shape (docs/hooks.md): Copilot CLI's `permissionRequest`
//! and `preToolUse`, Codex's `PermissionRequest`, Qwen Code's HTTP `PreToolUse` and `PermissionRequest`, Cursor's
//! `beforeShellExecution` / `beforeMCPExecution` / `preToolUse`, and Gemini CLI's `BeforeTool`.
//!
//! A `PermissionRequest`-like event comes only for a call the harness itself would ask a person about, so it is
//! always asked; a `PreToolUse`-like event comes for every call, so the hook's policy picks the ones to ask.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use anteroom_domain::{
    hooks::{
        Harness, PreToolUse, Verdict, copilot_permission_reply, copilot_pre_tool_use_reply,
        cursor_reply, gemini_before_tool_reply, permission_request_reply, tool_decision,
    },
    ids::SessionId,
};
use axum::{
    Json,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::{HookOptions, ask_tool, decide, hook_session};
use crate::{
    AppState,
    error::{ApiError, ApiResult, ErrorCode},
    extract::{ApiJson, ApiQuery},
};

/// How many allowed calls are remembered, and for how long.
const RECENT_ALLOWS: usize = 256;
const RECENT_ALLOW_MINUTES: i64 = 10;
/// A call whose key is longer is not remembered (its approval is asked again).
const RECENT_ALLOW_KEY_CHARS: usize = 8_192;

/// Codex's hook event: Claude Code's `PreToolUse` fields and the turn that makes the call.
#[derive(Debug, Deserialize)]
pub struct CodexEvent {
    #[serde(flatten)]
    pub call: PreToolUse,
    #[serde(default)]
    pub turn_id: String,
}

impl CodexEvent {
    /// The session, turn and call, as one text: a command by its text alone (Codex's approval adds its
    /// justification to the input), anything else by its whole input.
    fn key(&self, session: &SessionId) -> Option<String> {
        let input = self.call.tool_input.get("command").map_or_else(
            || self.call.tool_input.to_string(),
            |command| command.to_string(),
        );
        let key = format!(
            "{}\u{0}{}\u{0}{}\u{0}{}",
            session.as_str(),
            self.turn_id,
            self.call.tool_name,
            input
        );
        (!self.turn_id.is_empty() && key.len() <= RECENT_ALLOW_KEY_CHARS).then_some(key)
    }
}

/// Calls a person allowed through Codex's `PreToolUse` hook in the last minutes, on this instance: Codex's own
/// approval of the same call in the same turn (its `PermissionRequest` hook, in runs where Codex asks) is then
/// allowed at once instead of asking the person twice. Bounded in entries and age; another instance, or a call
/// not remembered, asks again.
#[derive(Clone, Default)]
pub struct RecentAllows(Arc<Mutex<VecDeque<RecentAllow>>>);

/// One remembered call: its key, who allowed it, and when.
type RecentAllow = (String, String, DateTime<Utc>);

impl RecentAllows {
    fn entries(&self) -> std::sync::MutexGuard<'_, VecDeque<RecentAllow>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn remember(
        &self,
        state: &AppState,
        session: &SessionId,
        event: &CodexEvent,
        who: &str,
    ) {
        let Some(key) = event.key(session) else {
            return;
        };
        let mut entries = self.entries();
        if entries.len() >= RECENT_ALLOWS {
            entries.pop_front();
        }
        entries.push_back((key, who.to_owned(), state.store.now()));
    }

    /// Who allowed this call, when it was allowed recently; the entry is used up.
    fn allowed_by(
        &self,
        state: &AppState,
        session: &SessionId,
        event: &CodexEvent,
    ) -> Option<String> {
        let key = event.key(session)?;
        let oldest = state.store.now() - chrono::Duration::minutes(RECENT_ALLOW_MINUTES);
        let mut entries = self.entries();
        entries.retain(|(_, _, at)| *at >= oldest);
        let at = entries.iter().position(|(known, _, _)| *known == key)?;
        entries.remove(at).map(|(_, who, _)| who)
    }
}

/// Codex's `PermissionRequest` command hook, as `anteroom hook codex-permission-request` relays it: Codex would
/// ask its user (`codex app-server` or the TUI, never `codex exec`). A call the person allowed through the
/// `PreToolUse` hook of the same turn is allowed at once.
pub(super) async fn codex_permission_request(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(event): ApiJson<CodexEvent>,
) -> ApiResult<Json<Value>> {
    let session = hook_session(&state, &headers).await?;
    if state
        .recent_allows
        .allowed_by(&state, &session.id, &event)
        .is_some()
    {
        return Ok(Json(permission_request_reply(
            Harness::Codex,
            &Verdict {
                allowed: true,
                dismissed: false,
                reason: String::new(),
            },
        )));
    }
    let (answer, who, wait) =
        ask_tool(&state, &session.id, &options, &event.call, Harness::Codex).await?;
    let verdict = Verdict::of(&event.call, &answer, &who, wait);
    Ok(Json(permission_request_reply(Harness::Codex, &verdict)))
}

/// Qwen Code's `PreToolUse` HTTP hook. Qwen sends it after its own approval: in `yolo` mode nothing asked before
/// it, so the policy's calls are asked here; in the other modes Qwen's approval (and the `PermissionRequest`
/// hook in it) has already decided, and the call goes on without a second question.
pub(super) async fn qwen_pre_tool_use(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(event): ApiJson<QwenEvent>,
) -> ApiResult<Response> {
    let session = hook_session(&state, &headers).await?;
    if event.permission_mode != "yolo" {
        return Ok(StatusCode::OK.into_response());
    }
    let call = event.call(Harness::QwenCode);
    let Some((answer, who, wait)) =
        decide(&state, &session.id, &options, &call, Harness::QwenCode).await?
    else {
        return Ok(StatusCode::OK.into_response());
    };
    Ok(Json(tool_decision(&call, Harness::QwenCode, &answer, &who, wait)).into_response())
}

/// Qwen Code's `PermissionRequest` HTTP hook: Qwen would ask its user (interactive, `--acp`, or stream-json
/// input; plain `-p` refuses such calls before any hook).
pub(super) async fn qwen_permission_request(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(event): ApiJson<QwenEvent>,
) -> ApiResult<Json<Value>> {
    let session = hook_session(&state, &headers).await?;
    let call = event.call(Harness::QwenCode);
    let (answer, who, wait) =
        ask_tool(&state, &session.id, &options, &call, Harness::QwenCode).await?;
    let verdict = Verdict::of(&call, &answer, &who, wait);
    Ok(Json(permission_request_reply(Harness::QwenCode, &verdict)))
}

/// Qwen Code's hook event (Claude Code's fields) and the approval mode it runs in.
#[derive(Debug, Deserialize)]
pub(super) struct QwenEvent {
    #[serde(flatten)]
    call: PreToolUse,
    #[serde(default)]
    permission_mode: String,
}

impl QwenEvent {
    fn call(&self, harness: Harness) -> PreToolUse {
        PreToolUse {
            tool_name: harness.tool_name(&self.call.tool_name),
            ..self.call.clone()
        }
    }
}

/// Copilot CLI's hook event (camelCase): `permissionRequest` carries `toolInput`, `preToolUse` `toolArgs`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CopilotEvent {
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    cwd: String,
    tool_name: String,
    #[serde(default, alias = "toolArgs")]
    tool_input: Value,
}

impl CopilotEvent {
    fn call(self) -> PreToolUse {
        PreToolUse {
            session_id: self.session_id,
            cwd: self.cwd,
            tool_name: Harness::CopilotCli.tool_name(&self.tool_name),
            tool_input: self.tool_input,
            tool_use_id: String::new(),
        }
    }
}

/// Copilot CLI's `permissionRequest`, as `anteroom hook copilot-permission-request` relays it (sent only for a
/// call Copilot would ask about): `{"behavior": "allow" | "deny", "message"}`.
pub(super) async fn copilot_permission_request(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(event): ApiJson<CopilotEvent>,
) -> ApiResult<Json<Value>> {
    let session = hook_session(&state, &headers).await?;
    let call = event.call();
    let (answer, who, wait) =
        ask_tool(&state, &session.id, &options, &call, Harness::CopilotCli).await?;
    Ok(Json(copilot_permission_reply(&Verdict::of(
        &call, &answer, &who, wait,
    ))))
}

/// Copilot CLI's `preToolUse`, as `anteroom hook copilot-pre-tool-use` relays it (sent for every call): the
/// policy's calls get `{"permissionDecision", "permissionDecisionReason"}`, the others no decision (Copilot's own
/// approval, and its `permissionRequest` hook, decide them).
pub(super) async fn copilot_pre_tool_use(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(event): ApiJson<CopilotEvent>,
) -> ApiResult<Response> {
    let session = hook_session(&state, &headers).await?;
    let call = event.call();
    let Some((answer, who, wait)) =
        decide(&state, &session.id, &options, &call, Harness::CopilotCli).await?
    else {
        return Ok(StatusCode::OK.into_response());
    };
    let verdict = Verdict::of(&call, &answer, &who, wait);
    Ok(Json(copilot_pre_tool_use_reply(&verdict)).into_response())
}

/// Cursor's hook event: its permission events share one shape, each with its own fields.
#[derive(Debug, Deserialize)]
pub(super) struct CursorEvent {
    hook_event_name: String,
    #[serde(default)]
    conversation_id: String,
    #[serde(default)]
    workspace_roots: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    tool_name: Option<String>,
    /// An object, or (in some versions) its JSON as a string.
    #[serde(default)]
    tool_input: Value,
}

/// Cursor's `beforeShellExecution`, `beforeMCPExecution` and `preToolUse` command hooks, as `anteroom hook
/// cursor` relays them: `{"permission": "allow" | "deny", "user_message", "agent_message"}`, or no decision for
/// a call the policy lets through. An MCP tool is always asked (unless the hook's `allow` list names it).
pub(super) async fn cursor(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(mut options): ApiQuery<HookOptions>,
    ApiJson(event): ApiJson<CursorEvent>,
) -> ApiResult<Response> {
    let session = hook_session(&state, &headers).await?;
    let tool_input = match event.tool_input {
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        other => other,
    };
    let tool_name = event.tool_name.unwrap_or_default();
    let (tool_name, tool_input) = match event.hook_event_name.as_str() {
        "beforeShellExecution" => (
            "Bash".to_owned(),
            serde_json::json!({"command": event.command.unwrap_or_default()}),
        ),
        "beforeMCPExecution" => {
            let asked = std::iter::once(tool_name.clone())
                .chain(options.ask.take())
                .collect::<Vec<_>>()
                .join(",");
            options.ask = Some(asked);
            (tool_name, tool_input)
        }
        "preToolUse" => (Harness::Cursor.tool_name(&tool_name), tool_input),
        other => {
            return Err(ApiError::new(
                ErrorCode::Validation,
                format!(
                    "`hook_event_name` {:?} is not a permission event: Anteroom answers beforeShellExecution, \
                     beforeMCPExecution and preToolUse.",
                    other.chars().take(40).collect::<String>()
                ),
            ));
        }
    };
    let call = PreToolUse {
        session_id: event.conversation_id,
        cwd: event
            .cwd
            .or_else(|| event.workspace_roots.into_iter().next())
            .unwrap_or_default(),
        tool_name,
        tool_input,
        tool_use_id: String::new(),
    };
    let Some((answer, who, wait)) =
        decide(&state, &session.id, &options, &call, Harness::Cursor).await?
    else {
        return Ok(StatusCode::OK.into_response());
    };
    Ok(Json(cursor_reply(&Verdict::of(&call, &answer, &who, wait))).into_response())
}

/// Gemini CLI's `BeforeTool` command hook, as `anteroom hook gemini-before-tool` relays it: a guard that can
/// only refuse — a person's deny blocks the call; an allow is no decision, and Gemini's own approval follows.
pub(super) async fn gemini_before_tool(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(options): ApiQuery<HookOptions>,
    ApiJson(call): ApiJson<PreToolUse>,
) -> ApiResult<Response> {
    let session = hook_session(&state, &headers).await?;
    let call = PreToolUse {
        tool_name: Harness::GeminiCli.tool_name(&call.tool_name),
        ..call
    };
    let Some((answer, who, wait)) =
        decide(&state, &session.id, &options, &call, Harness::GeminiCli).await?
    else {
        return Ok(StatusCode::OK.into_response());
    };
    Ok(Json(gemini_before_tool_reply(&Verdict::of(
        &call, &answer, &who, wait,
    )))
    .into_response())
}
