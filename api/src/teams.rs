//! Teams over the API (docs/teams.md): groups and their members, and a question handed to someone. Admins
//! only; who may answer is decided by the store's one rule (`TeamStore::may_answer`).

use anteroom_domain::{
    ids::RoundId,
    responders::{Group, Responder},
};
use axum::{Json, extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, ApiResult, Forbidden, Invalid, NotFound, Unauthorized},
    extract::{ApiJson, ApiPath, Caller},
};
use crate::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_groups, create_group))
        .routes(routes!(delete_group))
        .routes(routes!(add_member, remove_member))
        .routes(routes!(assign))
}

#[derive(Debug, Serialize, ToSchema)]
struct GroupList {
    groups: Vec<Group>,
}

#[utoipa::path(
    get,
    path = "/api/v1/groups",
    tag = "teams",
    responses((status = 200, description = "Every group and its members", body = GroupList), Unauthorized)
)]
async fn list_groups(State(state): State<AppState>, _caller: Caller) -> ApiResult<Json<GroupList>> {
    Ok(Json(GroupList {
        groups: state.store.list_groups().await?,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct NewGroup {
    /// 1 to 64 letters, digits, `.`, `_`, `-`, `@`.
    name: String,
    /// Usernames to add at once.
    #[serde(default)]
    members: Vec<String>,
}

#[utoipa::path(
    post,
    path = "/api/v1/groups",
    tag = "teams",
    request_body = NewGroup,
    responses((status = 201, description = "The group, with its members", body = Group), (status = 409, description = "managed_input_conflict: the name is taken", body = super::error::ErrorBody), Invalid, Forbidden, NotFound, Unauthorized)
)]
async fn create_group(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewGroup>,
) -> ApiResult<(StatusCode, Json<Group>)> {
    caller.require(|role| role.can_manage(), "manage groups")?;
    if body.members.len() > anteroom_domain::responders::GROUP_MEMBERS_MAX {
        return Err(ApiError::validation("Too many members for one group."));
    }
    let mut group = state
        .store
        .create_group(&body.name, &caller.label())
        .await?;
    for member in &body.members {
        group = state
            .store
            .add_group_member(&body.name, member, &caller.label())
            .await?;
    }
    Ok((StatusCode::CREATED, Json(group)))
}

#[utoipa::path(
    delete,
    path = "/api/v1/groups/{name}",
    tag = "teams",
    params(("name" = String, Path, description = "The group's name")),
    responses((status = 200, description = "Removed (its members stay people)", body = GroupRemoved), Forbidden, NotFound, Unauthorized)
)]
async fn delete_group(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<GroupRemoved>> {
    caller.require(|role| role.can_manage(), "manage groups")?;
    if !state.store.delete_group(&name, &caller.label()).await? {
        return Err(ApiError::not_found(format!("No group is called {name}.")));
    }
    Ok(Json(GroupRemoved { removed: name }))
}

#[derive(Debug, Serialize, ToSchema)]
struct GroupRemoved {
    /// The group's name.
    removed: String,
}

#[utoipa::path(
    put,
    path = "/api/v1/groups/{name}/members/{username}",
    tag = "teams",
    params(("name" = String, Path, description = "The group's name"), ("username" = String, Path, description = "The person's username")),
    responses((status = 200, description = "The group, with the person in it", body = Group), Forbidden, NotFound, Unauthorized)
)]
async fn add_member(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((name, username)): ApiPath<(String, String)>,
) -> ApiResult<Json<Group>> {
    caller.require(|role| role.can_manage(), "manage groups")?;
    let group = state
        .store
        .add_group_member(&name, &username, &caller.label())
        .await?;
    Ok(Json(group))
}

#[utoipa::path(
    delete,
    path = "/api/v1/groups/{name}/members/{username}",
    tag = "teams",
    params(("name" = String, Path, description = "The group's name"), ("username" = String, Path, description = "The person's username")),
    responses((status = 200, description = "The group, without the person", body = Group), Forbidden, NotFound, Unauthorized)
)]
async fn remove_member(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((name, username)): ApiPath<(String, String)>,
) -> ApiResult<Json<Group>> {
    caller.require(|role| role.can_manage(), "manage groups")?;
    if !state
        .store
        .remove_group_member(&name, &username, &caller.label())
        .await?
    {
        return Err(ApiError::not_found(format!("{username} is not in {name}.")));
    }
    let group = state
        .store
        .list_groups()
        .await?
        .into_iter()
        .find(|group| group.name == name)
        .unwrap_or(Group {
            name,
            members: Vec::new(),
        });
    Ok(Json(group))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Assignment {
    /// `user:NAME`, `group:NAME` or `key:NAME`; `null` hands the question back to its session's responders.
    #[schema(value_type = Option<String>, example = "group:platform-oncall")]
    assignee: Option<Responder>,
}

#[derive(Debug, Serialize, ToSchema)]
struct Assigned {
    round_id: RoundId,
    #[schema(value_type = Option<String>)]
    assignee: Option<Responder>,
    /// Who answers the question now (empty: every responder).
    #[schema(value_type = Vec<String>)]
    responders: Vec<Responder>,
}

#[utoipa::path(
    put,
    path = "/api/v1/rounds/{round_id}/assignee",
    tag = "teams",
    request_body = Assignment,
    params(("round_id" = String, Path, description = "The round's UUID", format = Uuid)),
    responses((status = 200, description = "The question is handed on", body = Assigned), (status = 409, description = "The question is no longer waiting", body = super::error::ErrorBody), Invalid, Forbidden, NotFound, Unauthorized)
)]
async fn assign(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Assignment>,
) -> ApiResult<Json<Assigned>> {
    caller.require(|role| role.can_manage(), "hand questions to someone")?;
    let id =
        RoundId::parse(&id).map_err(|_| ApiError::not_found(format!("No round {id} exists.")))?;
    state
        .store
        .assign_round(id, body.assignee.as_ref(), &caller.label())
        .await?;
    let round = state.store.get_round(id).await?;
    crate::announce::round_changed(&state, &round);
    Ok(Json(Assigned {
        round_id: id,
        responders: state.store.answer_scope(&round).await?,
        assignee: body.assignee,
    }))
}
