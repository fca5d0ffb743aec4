//! The push routes a page calls: the public key to subscribe with, and a person's own browsers (turn push on,
//! list, remove). Writes are a signed-in person's, with the page's CSRF token, or an API key's never: push
//! goes to people.

use anteroom_domain::{
    access::PrincipalKind,
    reach::{PushSubscription, check_push_subscription},
};
use axum::{
    Json, Router,
    extract::{Path, State},
    http::StatusCode,
    routing::{delete, get},
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Vapid;
use anteroom_api::{
    AppState,
    error::{ApiError, ApiResult},
    extract::{ApiJson, Caller},
};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/push/key", get(public_key))
        .route("/api/v1/push/subscriptions", get(list).post(subscribe))
        .route("/api/v1/push/subscriptions/{id}", delete(remove))
}

/// The person behind a browser call; an API key has no browsers.
fn person(caller: &Caller) -> ApiResult<&str> {
    match caller.0.kind {
        PrincipalKind::Person => Ok(&caller.0.id),
        PrincipalKind::ApiKey => Err(ApiError::forbidden(
            "Push goes to people's browsers: sign in to turn it on.",
        )),
    }
}

async fn public_key(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let vapid = Vapid::load(&state).await.map_err(|error| {
        tracing::warn!(%error, "push: cannot read the VAPID key");
        ApiError::new(
            anteroom_api::error::ErrorCode::Unavailable,
            "The push key cannot be read right now.",
        )
    })?;
    Ok(Json(json!({"public_key": vapid.public_key()})))
}

#[derive(Debug, Deserialize)]
struct SubscriptionKeys {
    p256dh: String,
    auth: String,
}

/// What `PushSubscription.toJSON()` gives, and the device's name.
#[derive(Debug, Deserialize)]
struct NewSubscription {
    endpoint: String,
    keys: SubscriptionKeys,
    #[serde(default)]
    device: Option<String>,
}

async fn subscribe(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewSubscription>,
) -> ApiResult<(StatusCode, Json<PushSubscription>)> {
    let user_id = person(&caller)?;
    let device = body.device.unwrap_or_else(|| "a browser".to_owned());
    let device = device.trim();
    check_push_subscription(
        &body.endpoint,
        &body.keys.p256dh,
        &body.keys.auth,
        device,
        state.config.development,
    )?;
    let saved = state
        .store
        .save_push_subscription(&PushSubscription {
            id: uuid::Uuid::now_v7().to_string(),
            user_id: user_id.to_owned(),
            endpoint: body.endpoint,
            p256dh: body.keys.p256dh,
            auth: body.keys.auth,
            device: device.to_owned(),
            created_at: state.store.now(),
        })
        .await?;
    Ok((StatusCode::CREATED, Json(saved)))
}

async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Value>> {
    let user_id = person(&caller)?;
    let browsers = state.store.push_subscriptions(user_id).await?;
    let shown: Vec<Value> = browsers
        .iter()
        .map(|browser| json!({"id": browser.id, "device": browser.device, "created_at": browser.created_at}))
        .collect();
    Ok(Json(json!({"subscriptions": shown})))
}

async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let user_id = person(&caller)?;
    if state
        .store
        .remove_push_subscription(&id, Some(user_id))
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(
            "You have no browser with push on by that id.",
        ))
    }
}
