//! MCP tools at `/mcp` (Streamable HTTP, the official `rmcp` SDK): an orchestrating agent lists and reads the
//! questions waiting for a person, answers them under the HTTP API's rules, and asks a person itself.
//!
//! Authenticated with an API key (`Authorization: Bearer`); roles apply as on the HTTP API. Answers are recorded
//! with the key's name as who answered and announced like any other.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use anteroom_domain::{
    access::Role,
    ids::{RequestId, RequestKey, RoundId, SessionId},
    outward::{PollAction, outward_answer},
    round::{
        AskedThrough, ElicitationRequest, ElicitationResponse, NewRound, OperationKind,
        ResponseAction, Round, RoundOutcome,
    },
};
use axum::{
    Router,
    extract::{Request, State},
    http::request::Parts,
    middleware::Next,
    response::{IntoResponse, Response},
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{tool::Extension, wrapper::Parameters},
    model::{
        CallToolResult, ContentBlock, Implementation, ProgressNotificationParam,
        ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool, tool_handler, tool_router,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{
    AppState,
    asking::HeldQuestion,
    error::{ApiError, ErrorCode},
    extract::Caller,
};

/// The longest `ask_person` waits for an answer when the caller names no timeout, and at most.
const ASK_TIMEOUT_DEFAULT: Duration = Duration::from_secs(600);
pub(crate) const ASK_TIMEOUT_MAX: Duration = Duration::from_secs(3600);
/// How often a waiting `ask_person` tells a caller that sent a progress token that it still waits.
const ASK_PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// The one request of an `ask_person` question.
const ASK_KEY: &str = "answer";
/// The most questions `list_pending_elicitations` returns.
const LIST_LIMIT: u32 = 200;

/// The `/mcp` routes: the MCP service behind the API-key check.
pub fn router(state: &AppState) -> Router<AppState> {
    let for_service = state.clone();
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if let Some(host) = url::Url::parse(&state.config.public_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
    {
        hosts.push(host);
    }
    // A session quiet for its keep-alive is closed, and with it any call still running: `ask_person` may wait
    // up to its longest timeout without the client saying a word.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(ASK_TIMEOUT_MAX + Duration::from_secs(60));
    let service = StreamableHttpService::new(
        move || Ok(AnteroomMcp::new(for_service.clone())),
        Arc::new(sessions),
        StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_max_request_body_bytes(state.config.body_limit),
    );
    let owners = Arc::new(SessionOwners::default());
    Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |request, next| {
            bind_session_to_key(Arc::clone(&owners), request, next)
        }))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_api_key,
        ))
}

/// The header that names an MCP session (Streamable HTTP).
const SESSION_HEADER: &str = "mcp-session-id";
/// MCP sessions open at once; a new one past this is refused until others end or go quiet.
const SESSIONS_MAX: usize = 10_000;

/// Which API key opened each MCP session, so that no other key can use it. In memory, like the sessions
/// themselves (`LocalSessionManager`): both end with the process.
#[derive(Default)]
struct SessionOwners {
    by_session: std::sync::Mutex<HashMap<String, (String, std::time::Instant)>>,
}

impl SessionOwners {
    /// Who opened `session`, noting that it is in use now.
    fn owner(&self, session: &str) -> Option<String> {
        let mut owners = self.by_session.lock().ok()?;
        let (owner, used) = owners.get_mut(session)?;
        *used = std::time::Instant::now();
        Some(owner.clone())
    }

    /// Records `session` as opened by `owner`; false when the table is full of sessions still in use.
    fn open(&self, session: String, owner: String) -> bool {
        let Ok(mut owners) = self.by_session.lock() else {
            return false;
        };
        if owners.len() >= SESSIONS_MAX {
            // Sessions quiet for longer than their keep-alive are closed by now.
            let quiet = ASK_TIMEOUT_MAX + Duration::from_secs(60);
            owners.retain(|_, (_, used)| used.elapsed() < quiet);
        }
        if owners.len() >= SESSIONS_MAX {
            return false;
        }
        owners.insert(session, (owner, std::time::Instant::now()));
        true
    }

    fn close(&self, session: &str) {
        if let Ok(mut owners) = self.by_session.lock() {
            owners.remove(session);
        }
    }
}

/// Middleware: an MCP session answers only the API key that opened it. Another key's request on its id is
/// refused as if there were no such session (its existence is not another key's business).
async fn bind_session_to_key(owners: Arc<SessionOwners>, request: Request, next: Next) -> Response {
    let Some(caller) = request
        .extensions()
        .get::<Caller>()
        .map(|caller| caller.0.id.clone())
    else {
        return ApiError::unauthorized("/mcp needs an API key: Authorization: Bearer ark_…")
            .into_response();
    };
    let named = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let ending = request.method() == axum::http::Method::DELETE;
    if let Some(session) = &named
        && owners.owner(session).as_deref() != Some(caller.as_str())
    {
        return ApiError::not_found(
            "No such MCP session for this API key: start one with `initialize`.",
        )
        .into_response();
    }
    let response = next.run(request).await;
    match (&named, ending) {
        (Some(session), true) if response.status().is_success() => owners.close(session),
        (None, _) => {
            let opened = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            if let Some(session) = opened
                && !owners.open(session.clone(), caller)
            {
                tracing::warn!("mcp: too many sessions open; refused a new one");
                return ApiError::new(
                    ErrorCode::Unavailable,
                    "Too many MCP sessions are open; end one (DELETE /mcp) or retry later.",
                )
                .into_response();
            }
        }
        _ => {}
    }
    response
}

/// Lets only requests with a valid API key reach the tools, and hands the tools who is calling. A browser's
/// sign-in cookie does not count here: only a bearer key.
async fn require_api_key(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    if crate::extract::bearer(&parts.headers).is_none() {
        return ApiError::unauthorized("/mcp needs an API key: Authorization: Bearer ark_…")
            .into_response();
    }
    match <Caller as axum::extract::FromRequestParts<AppState>>::from_request_parts(
        &mut parts, &state,
    )
    .await
    {
        Ok(caller) => {
            parts.extensions.insert(caller);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(error) => error.into_response(),
    }
}

/// The MCP server one request (or session) is served by.
#[derive(Clone)]
pub struct AnteroomMcp {
    state: AppState,
}

impl AnteroomMcp {
    fn new(state: AppState) -> Self {
        Self { state }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only this session's questions.
    session_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeArgs {
    /// The standing answer's id ("rule #12" is 12).
    id: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The question's request id (or its round id).
    request_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RespondArgs {
    /// The question's request id (or its round id).
    request_id: String,
    /// `accept`, `decline` or `cancel` (dismiss).
    action_type: String,
    /// For `accept` of a form: the answer, checked against the question's schema.
    content: Option<Map<String, Value>>,
    /// For `decline` or `cancel`: why (a harness's hook hands it to the model).
    reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// The session to ask in (it must exist).
    session_id: String,
    /// What the person is asked.
    message: String,
    /// A flat JSON Schema object of the answer's fields; none asks for a plain yes or no.
    requested_schema: Option<Value>,
    /// Seconds to wait for an answer (default 600, at most 3600); the question ends then too.
    timeout: Option<u64>,
}

/// Who called: put there by [`require_api_key`].
fn caller(parts: &Parts) -> Result<Caller, ApiError> {
    parts
        .extensions
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| ApiError::unauthorized("/mcp needs an API key"))
}

/// A tool's outcome for the agent: a refusal is a tool error (not a protocol error) in the HTTP API's own
/// words — `{"error": message, "details"?}`.
fn reply(outcome: Result<CallToolResult, ApiError>) -> Result<CallToolResult, ErrorData> {
    Ok(outcome.unwrap_or_else(|error| {
        let mut body = json!({"error": error.message()});
        if let Some(details) = error.details() {
            body["details"] = details.clone();
        }
        CallToolResult::structured_error(body)
    }))
}

/// A question as the tools show it.
fn question_view(round: &Round) -> Value {
    let requests: Vec<Value> = round
        .requests
        .iter()
        .map(|(key, request)| match request {
            ElicitationRequest::Form {
                message,
                requested_schema,
                ..
            } => json!({"key": key, "mode": "form", "message": message, "requested_schema": requested_schema}),
            ElicitationRequest::Url { message, url, .. } => {
                json!({"key": key, "mode": "url", "message": message, "url": url})
            }
        })
        .collect();
    json!({
        "request_id": round.request_id,
        "round_id": round.round_id,
        "session_id": round.session_id,
        "server": round.server,
        "tool": round.operation_name,
        "status": round.status,
        "deadline": round.deadline,
        "requests": requests,
        "outcome": outcome_view(round),
    })
}

fn outcome_view(round: &Round) -> Value {
    match round.outcome() {
        RoundOutcome::Waiting => json!({"state": "waiting"}),
        RoundOutcome::Answered(responses) => json!({
            "state": "answered", "answered_by": round.responded_by, "responses": responses,
        }),
        RoundOutcome::Undelivered { responses, message } => json!({
            "state": "undelivered", "answered_by": round.responded_by, "responses": responses, "message": message,
        }),
        RoundOutcome::Expired => json!({"state": "expired"}),
        RoundOutcome::Revoked { message } => json!({"state": "revoked", "message": message}),
        RoundOutcome::NobodyAvailable { message } => {
            json!({"state": "nobody_available", "message": message})
        }
        RoundOutcome::Failed { code, message } => {
            json!({"state": "failed", "code": code, "message": message})
        }
    }
}

/// One short line per question, for a reader.
fn question_line(round: &Round) -> String {
    let message = round
        .requests
        .values()
        .map(ElicitationRequest::message)
        .collect::<Vec<_>>()
        .join(" / ");
    format!(
        "{} · {} · {} asks: {message} (until {})",
        round.request_id,
        round.session_id,
        round.server.as_deref().unwrap_or("a server"),
        round.deadline.to_rfc3339()
    )
}

fn with_text(mut result: CallToolResult, text: String) -> CallToolResult {
    result.content = vec![ContentBlock::text(text)];
    result
}

impl AnteroomMcp {
    /// A question by its request id, or by its round id.
    async fn find(&self, id: &str) -> Result<Round, ApiError> {
        let store = &self.state.store;
        let unknown = || ApiError::not_found(format!("No question {id} exists."));
        if let Ok(request_id) = RequestId::parse(id) {
            match store.get_round_by_request_id(&request_id).await {
                Err(error) if error.is_not_found() => {}
                found => return Ok(found?),
            }
        }
        let round_id = RoundId::parse(id).map_err(|_| unknown())?;
        store.get_round(round_id).await.map_err(|error| {
            if error.is_not_found() {
                unknown()
            } else {
                error.into()
            }
        })
    }

    async fn list(&self, args: ListArgs, parts: &Parts) -> Result<CallToolResult, ApiError> {
        caller(parts)?;
        let store = &self.state.store;
        let open = match args.session_id {
            Some(id) => {
                let id = SessionId::parse(&id)?;
                // Read first: it ends the session's overdue questions, and an unknown session is said so.
                store.get_session(&id).await?;
                store.open_rounds(&id, LIST_LIMIT).await?
            }
            None => store.open_rounds_everywhere(LIST_LIMIT).await?,
        };
        let text = if open.is_empty() {
            "No question is waiting for a person.".to_owned()
        } else {
            open.iter()
                .map(question_line)
                .collect::<Vec<_>>()
                .join("\n")
        };
        let questions: Vec<Value> = open.iter().map(question_view).collect();
        Ok(with_text(
            CallToolResult::structured(json!({"questions": questions})),
            text,
        ))
    }

    async fn respond(&self, args: RespondArgs, parts: &Parts) -> Result<CallToolResult, ApiError> {
        let caller = caller(parts)?;
        caller.require(Role::can_answer, "answer questions")?;
        let action = ResponseAction::parse(&args.action_type).ok_or_else(|| {
            ApiError::validation("action_type must be accept, decline or cancel.")
        })?;
        let round = self.find(&args.request_id).await?;
        let response = ElicitationResponse {
            action,
            content: args.content,
            reason: args.reason,
        };
        let (round, submission) =
            crate::answers::answer_one(&self.state, &round, response, &caller.0, caller.label())
                .await?;
        let text = format!(
            "Recorded {} for {} (by {}).",
            action.as_str(),
            round.request_id,
            caller.label()
        );
        Ok(with_text(
            CallToolResult::structured(json!({
                "request_id": round.request_id,
                "round_id": round.round_id,
                "action": action,
                "status": round.status,
                "answered_by": round.responded_by,
                "replayed": submission == anteroom_domain::round::Submission::Replayed,
            })),
            text,
        ))
    }

    /// `ask_person`: opens the question, works it under a lease while it waits, and hands back the answer.
    async fn ask(
        &self,
        args: AskArgs,
        parts: &Parts,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ApiError> {
        let caller = caller(parts)?;
        caller.require(Role::can_manage, "ask questions")?;
        let session_id = SessionId::parse(&args.session_id)?;
        self.state.store.get_session(&session_id).await?;
        let wait = args
            .timeout
            .map_or(ASK_TIMEOUT_DEFAULT, Duration::from_secs)
            .clamp(Duration::from_secs(1), ASK_TIMEOUT_MAX);
        self.state.limiter.creates.check(&caller.0.limit_key())?;
        let new = ask_round(session_id, args, wait, self.state.store.now())?;
        let (mut held, _) = HeldQuestion::ask(&self.state, new, wait, "mcp").await?;
        let progress_token = context.meta.get_progress_token();
        let mut told = tokio::time::Instant::now();
        let mut progress = 0.0;
        let mut looked = held.look().await?;
        let round = loop {
            if let Some(round) = looked {
                break round;
            }
            if let Some(token) = &progress_token
                && told.elapsed() >= ASK_PROGRESS_EVERY
            {
                progress += 1.0;
                told = tokio::time::Instant::now();
                let _ = context
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), progress)
                            .with_message("Waiting for a person to answer in Anteroom"),
                    )
                    .await;
            }
            // An event about this question, or the next look (a missed event, the deadline passing).
            tokio::select! {
                next = held.next_look() => looked = next?,
                () = context.ct.cancelled() => {
                    return Err(ApiError::new(ErrorCode::Conflict, "The call was cancelled."));
                }
            }
        };
        let round = held.finish(round).await?;
        Ok(ask_reply(&round))
    }
}

/// The round `ask_person` opens: one form request, on behalf of the calling key, ending after `wait`.
fn ask_round(
    session_id: SessionId,
    args: AskArgs,
    wait: Duration,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<NewRound, ApiError> {
    let requested_schema = args
        .requested_schema
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    Ok(NewRound {
        session_id,
        request_id: None,
        logical_operation_id: format!("mcp-ask-{}", uuid::Uuid::new_v4()),
        server: Some("anteroom-mcp".to_owned()),
        operation_kind: OperationKind::Tool,
        operation_name: "ask_person".to_owned(),
        requests: BTreeMap::from([(
            RequestKey::parse(ASK_KEY)?,
            ElicitationRequest::Form {
                message: args.message,
                requested_schema,
                meta: None,
            },
        )]),
        request_state: None,
        round_index: 0,
        round_limit: 1,
        deadline: chrono::Duration::from_std(wait).ok().map(|wait| now + wait),
        fingerprint: None,
        asked_through: AskedThrough::ApiKey,
    })
}

/// What `ask_person` returns: the same outward answer a polling producer gets, with a failure's own words.
fn ask_reply(round: &Round) -> CallToolResult {
    let answer = outward_answer(round, ASK_KEY);
    let (reply, text) = match (answer.action, answer.failure_code) {
        (PollAction::Accept | PollAction::Decline | PollAction::Cancel, None) => {
            let text = match answer.action {
                PollAction::Accept => format!(
                    "The person accepted: {}",
                    Value::from(answer.content.clone())
                ),
                PollAction::Decline => "The person declined.".to_owned(),
                _ => "The person dismissed the question.".to_owned(),
            };
            let reply = json!({
                "action": answer.action,
                "content": answer.content,
                "answered_by": round.responded_by,
                "request_id": round.request_id,
            });
            (reply, text)
        }
        (PollAction::Expired, None) => (
            json!({
                "action": "expired",
                "reason": "Nobody answered before the deadline.",
                "request_id": round.request_id,
            }),
            "No answer reached you: Nobody answered before the deadline.".to_owned(),
        ),
        (_, code) => {
            let reason = round
                .failure
                .as_ref()
                .map_or("the question ended without an answer", |failure| {
                    failure.message.as_str()
                });
            (
                json!({
                    "action": "failed",
                    "code": code,
                    "reason": reason,
                    "request_id": round.request_id,
                }),
                format!("No answer reached you: {reason}"),
            )
        }
    };
    with_text(CallToolResult::structured(reply), text)
}

#[tool_router]
impl AnteroomMcp {
    /// Open questions waiting for a person, oldest first (optionally one session's).
    #[tool(
        description = "List the questions waiting for a person, oldest first: request id, session, server, tool, message, schema and deadline. Optionally only one session's."
    )]
    async fn list_pending_elicitations(
        &self,
        Parameters(args): Parameters<ListArgs>,
        Extension(parts): Extension<Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        reply(self.list(args, &parts).await)
    }

    /// One question and its outcome.
    #[tool(description = "Read one question (by request id) and its outcome so far.")]
    async fn get_elicitation(
        &self,
        Parameters(args): Parameters<GetArgs>,
        Extension(parts): Extension<Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let read = async {
            caller(&parts)?;
            let round = self.find(&args.request_id).await?;
            Ok(with_text(
                CallToolResult::structured(question_view(&round)),
                question_line(&round),
            ))
        };
        reply(read.await)
    }

    /// Answers a question with the HTTP API's rules: validated, idempotent, first answer wins.
    #[tool(
        description = "Answer a question: action_type accept (with content for a form), decline or cancel. Validated against the question's schema; the first answer wins; the same answer again is not an error."
    )]
    async fn respond_to_elicitation(
        &self,
        Parameters(args): Parameters<RespondArgs>,
        Extension(parts): Extension<Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        reply(self.respond(args, &parts).await)
    }

    /// The standing answers not yet ended.
    #[tool(
        description = "List the standing answers not yet ended (rules that answer a question like one a person answered), newest first: id, what they match, how they answer, until when, their hits, whether paused."
    )]
    async fn list_standing_answers(
        &self,
        Extension(parts): Extension<Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let list = async {
            caller(&parts)?;
            let rules = self
                .state
                .store
                .live_standing_answers(crate::rules::RULES_LISTED)
                .await?;
            let text = format!("{} standing answers in force or paused.", rules.len());
            let rules: Vec<Value> = rules.iter().map(crate::rules::rule_view).collect();
            Ok(with_text(
                CallToolResult::structured(json!({"rules": rules})),
                text,
            ))
        };
        reply(list.await)
    }

    /// Revokes a standing answer.
    #[tool(description = "Revoke a standing answer by its id: it answers nothing more.")]
    async fn revoke_standing_answer(
        &self,
        Parameters(args): Parameters<RevokeArgs>,
        Extension(parts): Extension<Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let revoke = async {
            let caller = caller(&parts)?;
            caller.require(Role::can_answer, "revoke standing answers")?;
            let rule = self
                .state
                .store
                .revoke_standing_answer(args.id, &caller.label())
                .await?;
            Ok(with_text(
                CallToolResult::structured(crate::rules::rule_view(&rule)),
                format!("Revoked standing answer #{}.", rule.id),
            ))
        };
        reply(revoke.await)
    }

    /// Asks a person directly and waits for the answer.
    #[tool(
        description = "Ask a person a question in a session and wait for the answer (progress notifications while waiting when you send a progressToken). Returns accept with content, decline, cancel, or expired."
    )]
    async fn ask_person(
        &self,
        Parameters(args): Parameters<AskArgs>,
        Extension(parts): Extension<Parts>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        reply(self.ask(args, &parts, context).await)
    }
}

#[tool_handler]
impl ServerHandler for AnteroomMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("anteroom", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Anteroom holds questions MCP servers ask people. List and read the waiting ones, answer them \
                 (roles apply), or ask a person yourself with ask_person.",
            )
    }
}
