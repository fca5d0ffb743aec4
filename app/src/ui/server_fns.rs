//! The server functions the pages call: reading the queue and a session, answering, the admins' log.
//! Each needs a signed-in person; the host puts the [`Viewer`] on the request before it gets here.

use leptos::{
    prelude::*,
    server_fn::{
        Bytes, ContentType, Decodes, Encodes, Format, FormatType,
        codec::{Json, Post},
    },
};
use serde::{Serialize, de::DeserializeOwned};

use super::model::{AnswerNotice, AnswerPost, DeliveryRow, QueueView, SessionPage};
#[cfg(feature = "ssr")]
use super::{model::Viewer, page_data::PageData};

/// JSON replies read the way hydration reads its resources (`serde_json::from_str`). Server functions' own
/// JSON codec reads bytes (`from_slice`), a second copy of every view's deserializer in the browser bundle;
/// with this one, each page view's `Deserialize` is compiled once. The wire format is the same JSON.
pub struct TextJsonEncoding;

/// Replies as [`TextJsonEncoding`] (the method is the server function's own).
pub type TextJson = Post<TextJsonEncoding>;

impl ContentType for TextJsonEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for TextJsonEncoding {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for TextJsonEncoding {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(output).map(Bytes::from)
    }
}

impl<T: DeserializeOwned> Decodes<T> for TextJsonEncoding {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(serde::de::Error::custom)?;
        serde_json::from_str(text)
    }
}

/// An answer posted without JavaScript, handed by the host to the page rendered after the redirect.
#[cfg(feature = "ssr")]
#[derive(Debug, Clone)]
pub struct FlashNotice(pub AnswerNotice);

#[cfg(feature = "ssr")]
fn from_request<T: Clone + Send + Sync + 'static>() -> Option<T> {
    use_context::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<T>().cloned())
}

#[cfg(feature = "ssr")]
fn signed_in() -> Result<(PageData, Viewer), ServerFnError> {
    let services = use_context::<PageData>()
        .ok_or_else(|| ServerFnError::new("the web app is not wired to a store"))?;
    let viewer = from_request::<Viewer>().ok_or_else(|| ServerFnError::new("Sign in first."))?;
    Ok((services, viewer))
}

#[cfg(feature = "ssr")]
fn unavailable(error: crate::store::StoreError) -> ServerFnError {
    tracing::error!(%error, "a page could not read the store");
    ServerFnError::new("The data could not be read just now; try again in a moment.")
}

/// The attention queue.
#[server(prefix = "/fn", endpoint = "queue", output = TextJson)]
pub async fn load_queue() -> Result<QueueView, ServerFnError> {
    let (services, viewer) = signed_in()?;
    let mut queue = services.queue().await.map_err(unavailable)?;
    queue.viewer = Some(viewer);
    Ok(queue)
}

/// A session page (its history from after round `older` when given); `None` when there is no such session.
#[server(prefix = "/fn", endpoint = "session", output = TextJson)]
pub async fn load_session(
    id: String,
    older: Option<String>,
) -> Result<Option<SessionPage>, ServerFnError> {
    let (services, viewer) = signed_in()?;
    let notice = from_request::<FlashNotice>().map(|flash| flash.0);
    services
        .session(&id, viewer, notice, older.as_deref())
        .await
        .map_err(unavailable)
}

/// Records an answer; refusals come back as a notice with per-field messages, never as an error.
#[server(prefix = "/fn", endpoint = "answer", input = Json, output = TextJson)]
pub async fn post_answer(post: AnswerPost) -> Result<AnswerNotice, ServerFnError> {
    let (services, viewer) = signed_in()?;
    Ok(services.answer(&viewer, post).await)
}

/// Ends a standing answer listed on a session's page; returns its id.
#[server(prefix = "/fn", endpoint = "revoke-standing", output = TextJson)]
pub async fn revoke_standing(
    session_id: String,
    id: i64,
    csrf: String,
) -> Result<i64, ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .revoke_standing(&viewer, &session_id, id, &csrf)
        .await
        .map_err(ServerFnError::new)?;
    Ok(id)
}

/// Stops a session's agent run (its page's Stop); `anteroom run` interrupts the agent within a second.
#[server(prefix = "/fn", endpoint = "stop-run", output = TextJson)]
pub async fn stop_run(session_id: String, csrf: String) -> Result<(), ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .stop_run(&viewer, &session_id, &csrf)
        .await
        .map_err(ServerFnError::new)
}

/// Declines or dismisses several questions at once (the queue's batch triage).
#[server(prefix = "/fn", endpoint = "triage", input = Json, output = TextJson)]
pub async fn triage(
    round_ids: Vec<String>,
    action: String,
    attempt: String,
    csrf: String,
) -> Result<Vec<crate::ui::model::TriageOutcome>, ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .triage(&viewer, &round_ids, &action, &attempt, &csrf)
        .await
        .map_err(ServerFnError::new)
}

/// Hands a waiting question to someone (admins; its banner's "Hand to").
#[server(prefix = "/fn", endpoint = "assign", output = TextJson)]
pub async fn assign_round(
    session_id: String,
    round_id: String,
    assignee: String,
    csrf: String,
) -> Result<(), ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .assign(&viewer, &session_id, &round_id, &assignee, &csrf)
        .await
        .map_err(ServerFnError::new)
}

/// Gives a waiting question an hour more (its banner's "+1 hour"); returns the new deadline.
#[server(prefix = "/fn", endpoint = "extend-deadline", output = TextJson)]
pub async fn extend_deadline(
    session_id: String,
    round_id: String,
    csrf: String,
) -> Result<i64, ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .extend_deadline(&viewer, &session_id, &round_id, &csrf)
        .await
        .map_err(ServerFnError::new)
}

/// Response times over the last `days` days (admins only).
#[server(prefix = "/fn", endpoint = "response-times", output = TextJson)]
pub async fn load_response_times(
    days: u32,
) -> Result<crate::domain::stats::ResponseTimes, ServerFnError> {
    let (services, viewer) = signed_in()?;
    if !viewer.principal.role.can_manage() {
        return Err(ServerFnError::new("Only admins can read response times."));
    }
    if !crate::domain::stats::PERIODS.contains(&days) {
        return Err(ServerFnError::new("The period is 7, 30 or 90 days."));
    }
    services.response_times(days).await.map_err(unavailable)
}

/// Pauses or resumes a standing answer listed on a session's page; returns its id and whether it is paused.
#[server(prefix = "/fn", endpoint = "pause-standing", output = TextJson)]
pub async fn pause_standing(
    session_id: String,
    id: i64,
    paused: bool,
    csrf: String,
) -> Result<(i64, bool), ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .pause_standing(&viewer, &session_id, id, paused, &csrf)
        .await
        .map_err(ServerFnError::new)?;
    Ok((id, paused))
}

/// The most recent webhook deliveries (admins only).
#[server(prefix = "/fn", endpoint = "deliveries", output = TextJson)]
pub async fn load_deliveries() -> Result<Vec<DeliveryRow>, ServerFnError> {
    let (services, viewer) = signed_in()?;
    if !viewer.principal.role.can_manage() {
        return Err(ServerFnError::new(
            "Only admins can read the webhook delivery log.",
        ));
    }
    let deliveries = services
        .webhook_deliveries(crate::domain::webhook::DELIVERY_LOG_SHOWN)
        .await
        .map_err(unavailable)?;
    Ok(deliveries
        .into_iter()
        .map(|delivery| DeliveryRow {
            event: delivery.event,
            endpoint: delivery.endpoint,
            status: delivery.status,
            attempts: delivery.attempts,
            last_status: delivery.last_status,
            last_error: delivery.last_error,
            created_ms: delivery.created_at.timestamp_millis(),
            queued_at: crate::ui::model::zoned_time(
                delivery.created_at.timestamp_millis(),
                viewer.time_zone.as_deref(),
            ),
        })
        .collect())
}

/// The signed-in person's reach settings.
#[server(prefix = "/fn", endpoint = "profile", output = TextJson)]
pub async fn load_profile() -> Result<super::model::ProfileView, ServerFnError> {
    let (services, viewer) = signed_in()?;
    let this_browser = from_request::<super::model::ThisBrowser>();
    services
        .profile(&viewer, this_browser.as_ref().map(|this| this.0.as_str()))
        .await
        .map_err(unavailable)
}

/// Saves the person's e-mail and mail preference.
#[server(prefix = "/fn", endpoint = "save-email", output = TextJson)]
pub async fn save_email(
    email: String,
    questions: String,
    after_minutes: i64,
    csrf: String,
) -> Result<(), ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .save_email(&viewer, &email, &questions, after_minutes, &csrf)
        .await
        .map_err(ServerFnError::new)
}

/// Sets the person's quiet hours.
#[server(prefix = "/fn", endpoint = "save-quiet", output = TextJson)]
pub async fn save_quiet(
    quiet_from: String,
    quiet_until: String,
    time_zone: String,
    csrf: String,
) -> Result<(), ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .save_quiet(&viewer, &quiet_from, &quiet_until, &time_zone, &csrf)
        .await
        .map_err(ServerFnError::new)
}

/// Turns push off in one of the person's browsers; returns its id.
#[server(prefix = "/fn", endpoint = "remove-browser", output = TextJson)]
pub async fn remove_browser(id: String, csrf: String) -> Result<String, ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .remove_browser(&viewer, &id, &csrf)
        .await
        .map_err(ServerFnError::new)?;
    Ok(id)
}

/// Sets after how many questions a minute the person's pushes and mails come as one digest.
#[server(prefix = "/fn", endpoint = "save-digest", output = TextJson)]
pub async fn save_digest(digest_after: u32, csrf: String) -> Result<(), ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .save_digest(&viewer, digest_after, &csrf)
        .await
        .map_err(ServerFnError::new)
}

/// The Slack account a link offer (from an ephemeral Slack reply) names, while it is live.
#[server(prefix = "/fn", endpoint = "slack-link-offer", output = TextJson)]
pub async fn slack_link_offer(token: String) -> Result<Option<String>, ServerFnError> {
    let (services, _viewer) = signed_in()?;
    services.slack_link_offer(&token).await.map_err(unavailable)
}

/// Takes a link offer: that Slack account's clicks answer as the signed-in person. Returns the account.
#[server(prefix = "/fn", endpoint = "link-slack", output = TextJson)]
pub async fn link_slack(token: String, csrf: String) -> Result<String, ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .link_slack(&viewer, &token, &csrf)
        .await
        .map_err(ServerFnError::new)
}

/// Unlinks one of the person's Slack accounts; returns it.
#[server(prefix = "/fn", endpoint = "unlink-slack", output = TextJson)]
pub async fn unlink_slack(slack_user: String, csrf: String) -> Result<String, ServerFnError> {
    let (services, viewer) = signed_in()?;
    services
        .unlink_slack(&viewer, &slack_user, &csrf)
        .await
        .map_err(ServerFnError::new)?;
    Ok(slack_user)
}

/// Who is signed in (for the header).
#[server(prefix = "/fn", endpoint = "me", output = TextJson)]
pub async fn load_viewer() -> Result<Option<super::model::Viewer>, ServerFnError> {
    Ok(from_request::<super::model::Viewer>())
}
