//! `POST /integrations/slack/actions`: a click on a question's button, as Slack sends it (form-encoded
//! `payload`, `block_actions`), signed with the app's signing secret. The clicker is the Anteroom person
//! who linked their Slack account, or else the one with the e-mail Slack has for them (a clicker nobody
//! matches is offered a link), and their answer takes the page's path: validated, first answer wins,
//! recorded as "rita via Slack". Whatever is refused records nothing, is logged, and the clicker is told why
//! in a message only they see.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use anteroom_domain::{
    access::{Principal, User},
    ids::RoundId,
    limits::Limits,
    reach::{SLACK_LINK_MINUTES, is_slack_user_id, quick_answers},
    round::Submission,
};
use axum::{
    Json, Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::post,
};
use serde_json::{Value, json};

use super::{
    SlackClient,
    blocks::{ending, question_message},
    signature::{WINDOW_SECS, verify_signature},
};
use anteroom_api::{AppState, answers::answer_one, credentials};

/// The route, with this instance's memory of the requests it has taken.
pub fn routes() -> Router<AppState> {
    let seen = Arc::new(Mutex::new(SeenRequests {
        seen: HashMap::new(),
    }));
    Router::new().route(
        "/integrations/slack/actions",
        post(move |state, headers, body| slack_actions(state, seen, headers, body)),
    )
}

/// Signatures seen within the window, so the same signed request is taken once. Bounded: when full of
/// live entries, the oldest half is forgotten (a replay that slips through then still records nothing new,
/// because the first answer wins).
struct SeenRequests {
    seen: HashMap<String, i64>,
}

const SEEN_CAP: usize = 10_000;

impl SeenRequests {
    /// True the first time `signature` is seen at `now`.
    fn first_time(&mut self, signature: &str, now: i64) -> bool {
        if self.seen.contains_key(signature) {
            return false;
        }
        if self.seen.len() >= SEEN_CAP {
            self.seen.retain(|_, at| now - *at <= WINDOW_SECS);
        }
        if self.seen.len() >= SEEN_CAP {
            let mut times: Vec<i64> = self.seen.values().copied().collect();
            times.sort_unstable();
            let middle = times.get(times.len() / 2).copied().unwrap_or(now);
            self.seen.retain(|_, at| *at > middle);
        }
        self.seen.insert(signature.to_owned(), now);
        true
    }
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

fn refused(error: &str, message: &str) -> Response {
    reply(
        StatusCode::OK,
        json!({"ok": false, "error": error, "message": message}),
    )
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

async fn slack_actions(
    State(state): State<AppState>,
    seen: Arc<Mutex<SeenRequests>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(slack) = state.config.slack.clone() else {
        return reply(
            StatusCode::NOT_FOUND,
            json!({"error": "not_found", "message": "This Anteroom has no Slack app configured."}),
        );
    };
    let now = state.store.now().timestamp();
    let signature = header(&headers, "x-slack-signature");
    if let Err(error) = verify_signature(
        &slack.signing_secret,
        header(&headers, "x-slack-request-timestamp"),
        signature,
        &body,
        now,
    ) {
        tracing::warn!(%error, "slack: refused an action request");
        return reply(
            StatusCode::UNAUTHORIZED,
            json!({"error": "unauthorized", "message": error.to_string()}),
        );
    }
    let first = seen
        .lock()
        .map(|mut seen| seen.first_time(signature.unwrap_or_default(), now))
        .unwrap_or(false);
    if !first {
        tracing::warn!("slack: refused a replayed action request");
        return reply(
            StatusCode::UNAUTHORIZED,
            json!({"error": "unauthorized", "message": "This signed request was already received (a replay)."}),
        );
    }
    let Some(payload) = form_urlencoded::parse(&body)
        .find(|(name, _)| name == "payload")
        .and_then(|(_, payload)| serde_json::from_str::<Value>(&payload).ok())
    else {
        return reply(
            StatusCode::BAD_REQUEST,
            json!({"error": "validation_error", "message": "The body holds no JSON `payload` field."}),
        );
    };
    if payload["type"] != "block_actions" {
        return reply(
            StatusCode::OK,
            json!({"ok": true, "ignored": "not a block action"}),
        );
    }
    let click = Click::of(&payload);
    if click.action_id.starts_with("open:") {
        return reply(StatusCode::OK, json!({"ok": true}));
    }
    match SlackClient::new(&slack) {
        Ok(client) => click.answer(&state, &client).await,
        Err(error) => {
            tracing::warn!(%error, "slack: cannot build a client");
            refused("unavailable", "Anteroom cannot reach Slack.")
        }
    }
}

/// What a `block_actions` payload says: who clicked which button, where.
struct Click {
    user: String,
    channel: String,
    action_id: String,
}

/// A quick answer's button: `answer:{round id}:{index}`.
fn parse_answer_action(action_id: &str) -> Option<(RoundId, usize)> {
    let rest = action_id.strip_prefix("answer:")?;
    let (round, index) = rest.rsplit_once(':')?;
    Some((RoundId::parse(round).ok()?, index.parse().ok()?))
}

impl Click {
    fn of(payload: &Value) -> Self {
        let text = |value: &Value| {
            value
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect::<String>()
        };
        let channel = if payload["container"]["channel_id"].is_string() {
            &payload["container"]["channel_id"]
        } else {
            &payload["channel"]["id"]
        };
        Self {
            user: text(&payload["user"]["id"]),
            channel: text(channel),
            action_id: text(&payload["actions"][0]["action_id"]),
        }
    }

    /// The Anteroom person behind the clicker: the one they linked by hand, else the one with the e-mail
    /// Slack has for them. `Err` says why nobody could be looked up.
    async fn person(
        &self,
        state: &AppState,
        client: &SlackClient,
    ) -> Result<Option<User>, &'static str> {
        match state.store.slack_linked_user(&self.user).await {
            Ok(Some(person)) => return Ok(Some(person)),
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, "slack: cannot look the clicker's link up");
                return Err("Anteroom could not look you up; nothing was recorded.");
            }
        }
        let email = client.user_email(&self.user).await.map_err(|error| {
            tracing::warn!(%error, "slack: cannot read the clicker's profile");
            "Anteroom could not read your Slack profile; nothing was recorded. Try again, or answer on the page."
        })?;
        let Some(email) = email else {
            return Ok(None);
        };
        state.store.user_by_email(&email).await.map_err(|error| {
            tracing::warn!(%error, "slack: cannot look the clicker up");
            "Anteroom could not look you up; nothing was recorded."
        })
    }

    /// A single-use link that lets a signed-in person say this Slack account is theirs: the click that
    /// asked was signed by Slack, so the Slack side is proven; the person proves theirs by signing in.
    async fn offer_link(&self, state: &AppState) -> Option<String> {
        if !is_slack_user_id(&self.user) {
            return None;
        }
        let token = credentials::generate(credentials::SLACK_LINK_TOKEN_PREFIX);
        let expires = state.store.now() + chrono::Duration::minutes(SLACK_LINK_MINUTES);
        match state
            .store
            .offer_slack_link(&credentials::hash(&token), &self.user, expires)
            .await
        {
            Ok(()) => Some(format!(
                "{}/profile?slack_link={token}",
                state.config.public_url
            )),
            Err(error) => {
                tracing::warn!(%error, "slack: cannot offer a link");
                None
            }
        }
    }

    /// Tells the clicker alone why nothing was recorded, and answers Slack.
    async fn refuse(&self, client: &SlackClient, error: &str, message: &str) -> Response {
        tracing::warn!(slack_user = %self.user, action = %self.action_id, error, "slack: refused a click");
        if !self.channel.is_empty()
            && !self.user.is_empty()
            && let Err(failure) = client
                .post_ephemeral(&self.channel, &self.user, message)
                .await
        {
            tracing::warn!(error = %failure, "slack: cannot tell the clicker why");
        }
        refused(error, message)
    }

    async fn answer(&self, state: &AppState, client: &SlackClient) -> Response {
        let Some((round_id, index)) = parse_answer_action(&self.action_id) else {
            return self
                .refuse(
                    client,
                    "unknown_action",
                    "That button is not one Anteroom made; nothing was recorded.",
                )
                .await;
        };
        let person = match self.person(state, client).await {
            Ok(Some(person)) => person,
            Ok(None) => {
                let message = match self.offer_link(state).await {
                    Some(link) => format!(
                        "You have no Anteroom account that Anteroom can match to this Slack account (none has \
                         the e-mail address Slack has for you), so nothing was recorded. If you do have one, link \
                         this Slack account to it: open {link} and sign in (the link works once, for \
                         {SLACK_LINK_MINUTES} minutes). Otherwise ask an admin to add you."
                    ),
                    None => "You have no Anteroom account (none has the e-mail address Slack has for you), so \
                             nothing was recorded. Ask an admin to add you with that e-mail."
                        .to_owned(),
                };
                return self.refuse(client, "no_account", &message).await;
            }
            Err(message) => return self.refuse(client, "unavailable", message).await,
        };
        if !person.role.can_answer() {
            return self.refuse(client, "forbidden", &format!("As a {} in Anteroom you may read questions but not answer them; nothing was recorded.", person.role.as_str())).await;
        }
        let round = match state.store.get_round(round_id).await {
            Ok(round) => round,
            Err(error) if error.is_not_found() => {
                return self
                    .refuse(
                        client,
                        "not_found",
                        "This question no longer exists; nothing was recorded.",
                    )
                    .await;
            }
            Err(error) => {
                tracing::warn!(%error, "slack: cannot read the question");
                return self
                    .refuse(
                        client,
                        "unavailable",
                        "Anteroom could not read the question; nothing was recorded.",
                    )
                    .await;
            }
        };
        let limits = Limits::default();
        if let Some(ended) = ending(&round, &limits) {
            refresh(state, client, &round_id).await;
            return self
                .refuse(
                    client,
                    "closed",
                    &format!("This question is no longer open, so nothing was recorded. {ended}"),
                )
                .await;
        }
        let Some(quick) = quick_answers(&round, &limits)
            .and_then(|mut answers| (index < answers.len()).then(|| answers.swap_remove(index)))
        else {
            return self
                .refuse(
                    client,
                    "unknown_action",
                    "That button does not match this question; nothing was recorded.",
                )
                .await;
        };
        let by = format!("{} via Slack", person.username);
        match answer_one(
            state,
            &round,
            quick.response,
            &Principal::person(&person),
            by,
        )
        .await
        {
            Ok((_, Submission::Recorded)) => {
                tracing::info!(round = %round_id, by = %person.username, answer = %quick.label, "slack: answered from a click");
                refresh(state, client, &round_id).await;
                reply(
                    StatusCode::OK,
                    json!({"ok": true, "answered_by": person.username}),
                )
            }
            Ok((round, Submission::Replayed)) => {
                let ended = ending(&round, &limits).unwrap_or_default();
                self.refuse(
                    client,
                    "closed",
                    &format!("This answer was already recorded. {ended}"),
                )
                .await
            }
            Err(error) => {
                refresh(state, client, &round_id).await;
                let message = format!("Nothing was recorded: {}", error.message());
                self.refuse(client, error.code().as_str(), &message).await
            }
        }
    }
}

/// Updates the question's message to the question as it stands now (the outbox does the same a moment
/// later; this makes the click's effect visible at once).
async fn refresh(state: &AppState, client: &SlackClient, round_id: &RoundId) {
    let (Ok(round), Ok(Some((channel, ts)))) = (
        state.store.get_round(*round_id).await,
        state.store.slack_message(round_id).await,
    ) else {
        return;
    };
    let message = question_message(&round, &state.config.public_url, &Limits::default());
    if let Err(error) = client
        .update(&channel, &ts, &message.text, message.blocks)
        .await
    {
        tracing::warn!(%error, "slack: cannot update a question's message");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_actions_name_a_round_and_an_index() {
        let id = "0190f0b8-7a6e-7c3e-9f10-3b2d1c0a9e88";
        assert_eq!(
            parse_answer_action(&format!("answer:{id}:2"))
                .map(|(round, index)| (round.to_string(), index)),
            Some((id.to_owned(), 2))
        );
        for bad in [
            "answer:nope:1",
            &format!("answer:{id}:x"),
            &format!("delete:{id}:0"),
            "answer:",
            "",
        ] {
            assert!(parse_answer_action(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_signed_request_is_taken_once() {
        let mut seen = SeenRequests {
            seen: HashMap::new(),
        };
        assert!(seen.first_time("v0=a", 100));
        assert!(!seen.first_time("v0=a", 101));
        assert!(seen.first_time("v0=b", 101));
        for n in 0..SEEN_CAP + 10 {
            seen.first_time(&format!("v0={n}"), 200 + i64::try_from(n).unwrap_or(0));
        }
        assert!(seen.seen.len() <= SEEN_CAP, "bounded: {}", seen.seen.len());
    }
}
