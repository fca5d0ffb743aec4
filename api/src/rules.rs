//! Standing answers over the API and `/mcp` (docs/standing-answers.md): listed, paused, resumed and revoked.
//! They are made from a banner by a person; here they are looked after.

use anteroom_domain::{expiry::wire_time, standing::StandingAnswer};
use axum::{Json, extract::State};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, ApiResult, Forbidden, Invalid, NotFound, Unauthorized},
    extract::{ApiJson, ApiPath, Caller},
};
use crate::AppState;

/// The most rules one list shows.
pub const RULES_LISTED: u32 = 500;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(pause, revoke))
}

/// A rule's number from its path; anything else names no rule.
fn rule_id(raw: &str) -> ApiResult<i64> {
    raw.parse().map_err(|_| {
        ApiError::not_found(format!(
            "No standing answer #{} exists.",
            raw.chars().take(40).collect::<String>()
        ))
    })
}

/// A rule as the API, `/mcp` and the pages read it: what it answers, how, by whom, until when, and its hits.
pub fn rule_view(rule: &StandingAnswer) -> Value {
    json!({
        "id": rule.id,
        "answers_as": rule.answerer(),
        "created_by": rule.created_by,
        "created_at": wire_time(rule.created_at),
        "session_id": rule.session_id,
        "server": rule.question.server,
        "tool": rule.question.tool,
        "message": rule.question.message,
        "message_is_prefix": rule.prefix,
        "action": rule.action.as_str(),
        "expires_at": wire_time(rule.expires_at),
        "use_limit": rule.use_limit,
        "hits": rule.uses,
        "paused": rule.paused_at.is_some(),
    })
}

#[derive(Debug, Serialize, ToSchema)]
struct RuleList {
    /// `{id, answers_as, created_by, created_at, session_id, server, tool, message, message_is_prefix, action,
    /// expires_at, use_limit, hits, paused}`, newest first.
    #[schema(value_type = Vec<Object>)]
    rules: Vec<Value>,
}

#[utoipa::path(
    get,
    path = "/api/v1/rules",
    tag = "answers",
    responses((status = 200, description = "Standing answers not yet ended (in force or paused), newest first", body = RuleList), Unauthorized)
)]
async fn list(State(state): State<AppState>, _caller: Caller) -> ApiResult<Json<RuleList>> {
    let rules = state.store.live_standing_answers(RULES_LISTED).await?;
    Ok(Json(RuleList {
        rules: rules.iter().map(rule_view).collect(),
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Pause {
    paused: bool,
}

#[utoipa::path(
    patch,
    path = "/api/v1/rules/{rule_id}",
    tag = "answers",
    request_body = Pause,
    params(("rule_id" = String, Path, description = "The rule's number", pattern = "^[0-9]{1,18}$")),
    responses((status = 200, description = "The rule, paused or resumed", body = Object), Invalid, Forbidden, NotFound, Unauthorized)
)]
async fn pause(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Pause>,
) -> ApiResult<Json<Value>> {
    caller.require(|role| role.can_answer(), "pause standing answers")?;
    let id = rule_id(&id)?;
    let rule = state
        .store
        .pause_standing_answer(id, body.paused, &caller.label())
        .await?;
    Ok(Json(rule_view(&rule)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/rules/{rule_id}",
    tag = "answers",
    params(("rule_id" = String, Path, description = "The rule's number", pattern = "^[0-9]{1,18}$")),
    responses((status = 200, description = "The rule, revoked: it answers nothing more", body = Object), Invalid, Forbidden, NotFound, Unauthorized)
)]
async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    caller.require(|role| role.can_answer(), "revoke standing answers")?;
    let id = rule_id(&id)?;
    let rule = state
        .store
        .revoke_standing_answer(id, &caller.label())
        .await?;
    Ok(Json(rule_view(&rule)))
}
