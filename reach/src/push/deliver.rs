//! One `push` outbox delivery: the fan-out of a question's event into one delivery per browser, or the push
//! to one browser — the question's notification, or the message that closes it — or a person's digest.

use std::{
    collections::{HashMap, HashSet},
    time::Duration as StdDuration,
};

use anteroom_domain::{
    access::Principal,
    ids::RoundId,
    limits::Limits,
    reach::{AnswerToken, DIGEST_ENDPOINT_PREFIX, Digest, ReachChannel, first_line, quick_answers},
    round::{ResponseAction, Round, RoundStatus},
    webhook::{AttemptOutcome, QueuedDelivery, WebhookDelivery, WebhookFormat},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::vapid::{Vapid, vapid_authorization};
use anteroom_api::{AppState, credentials};

/// The endpoint of a question's one push fan-out; each browser's is `subscription:{id}`. Not mail's `people`:
/// the outbox keeps one row per event and endpoint.
pub const FAN_OUT_ENDPOINT: &str = "browsers";

/// Characters of the question's first line a notification shows.
const BODY_CHARS: usize = 120;
/// Characters of the title and of each button.
const TITLE_CHARS: usize = 60;
/// Buttons a notification carries at most (accepting answers; the page has the rest).
const ACTIONS_MAX: usize = 3;

fn done() -> AttemptOutcome {
    AttemptOutcome::Delivered { status: 201 }
}

fn failed(status: Option<u16>, error: impl std::fmt::Display) -> AttemptOutcome {
    AttemptOutcome::Failed {
        status,
        error: error.to_string(),
    }
}

/// Sends one `push` delivery, signed with `vapid` (read once per outbox tick).
pub async fn deliver(
    state: &AppState,
    client: &reqwest::Client,
    vapid: &Vapid,
    delivery: &WebhookDelivery,
) -> AttemptOutcome {
    if let Some(user_id) = delivery.endpoint.strip_prefix(DIGEST_ENDPOINT_PREFIX) {
        return push_digest(state, client, vapid, user_id).await;
    }
    let Some(round_id) = delivery.round_id() else {
        return done();
    };
    if delivery.endpoint == FAN_OUT_ENDPOINT {
        return fan_out(state, round_id, delivery).await;
    }
    match delivery.endpoint.strip_prefix("subscription:") {
        Some(id) => push_one(state, client, vapid, round_id, id, &delivery.event).await,
        None => done(),
    }
}

async fn fan_out(
    state: &AppState,
    round_id: RoundId,
    delivery: &WebhookDelivery,
) -> AttemptOutcome {
    let recipients = match state.store.push_recipients().await {
        Ok(recipients) => recipients,
        Err(error) => return failed(None, format!("cannot read who has push on: {error}")),
    };
    let now = state.store.now();
    // A new question waits out each person's quiet hours (closing a notification never needs to), and past
    // their digest count in a minute it waits for their digest instead.
    let mut held: HashMap<&str, DateTime<Utc>> = HashMap::new();
    let mut digested: HashSet<&str> = HashSet::new();
    if asks(&delivery.event) {
        let recent = match crate::digest::sent_lately(state, ReachChannel::Push).await {
            Ok(recent) => recent,
            Err(error) => return failed(None, format!("cannot count the recent pushes: {error}")),
        };
        // Each browser of a person gets each question: the busiest one says how many reached them.
        let mut sent: HashMap<&str, u32> = HashMap::new();
        for recipient in &recipients {
            let count = recent
                .get(&format!("subscription:{}", recipient.browser.id))
                .copied()
                .unwrap_or(0);
            let most = sent.entry(recipient.browser.user_id.as_str()).or_default();
            *most = (*most).max(count);
        }
        for recipient in &recipients {
            let user_id = recipient.browser.user_id.as_str();
            if held.contains_key(user_id) {
                continue;
            }
            let until = recipient
                .quiet
                .as_ref()
                .map_or(now, |quiet| crate::quiet::held_until(quiet, now));
            held.insert(user_id, until);
            let digest = Digest {
                after: recipient.digest_after,
            };
            if digest.holds(sent.get(user_id).copied().unwrap_or(0)) {
                if let Err(error) =
                    crate::digest::hold(state, user_id, ReachChannel::Push, round_id, until).await
                {
                    return failed(None, format!("cannot hold a push for the digest: {error}"));
                }
                digested.insert(user_id);
            }
        }
    }
    let queued: Vec<QueuedDelivery> = recipients
        .iter()
        .map(|recipient| &recipient.browser)
        .filter(|browser| !digested.contains(browser.user_id.as_str()))
        .map(|browser| QueuedDelivery {
            endpoint: format!("subscription:{}", browser.id),
            format: WebhookFormat::Push,
            event: delivery.event.clone(),
            dedupe_key: format!("push:{}:{round_id}:{}", delivery.event, browser.id),
            payload: delivery.payload.clone(),
            not_before: held.get(browser.user_id.as_str()).copied().unwrap_or(now),
        })
        .collect();
    match state.store.enqueue_deliveries(&queued).await {
        Ok(()) => done(),
        Err(error) => failed(None, format!("cannot queue the pushes: {error}")),
    }
}

/// What the service worker shows for `round`: its title, first line, page, and a button per accepting quick
/// answer (`tokens[i]` answers the `i`th), all cut to fit a push message.
pub fn notification(round: &Round, tokens: &[String]) -> Value {
    let asker = round.server.as_deref().unwrap_or("An agent");
    let message = round
        .requests
        .values()
        .next()
        .map(|request| request.message())
        .unwrap_or(&round.summary);
    let actions: Vec<Value> = quick_answers(round, &Limits::default())
        .unwrap_or_default()
        .iter()
        .filter(|answer| answer.response.action == ResponseAction::Accept)
        .zip(tokens)
        .take(ACTIONS_MAX)
        .enumerate()
        .map(|(index, (answer, token))| {
            json!({"action": format!("answer-{index}"), "title": first_line(&answer.label, TITLE_CHARS), "token": token})
        })
        .collect();
    json!({
        "kind": "question",
        "tag": round.round_id.to_string(),
        "title": first_line(&format!("{asker} asks ({})", round.operation_name), TITLE_CHARS),
        "body": first_line(message, BODY_CHARS),
        "session": first_line(round.session_id.as_str(), TITLE_CHARS),
        "url": format!("/sessions/{}", round.session_id),
        "actions": actions,
    })
}

async fn push_one(
    state: &AppState,
    client: &reqwest::Client,
    vapid: &Vapid,
    round_id: RoundId,
    subscription_id: &str,
    event: &str,
) -> AttemptOutcome {
    let browser = match state.store.push_subscription(subscription_id).await {
        Ok(Some(browser)) => browser,
        Ok(None) => return done(),
        Err(error) => return failed(None, format!("cannot read the subscription: {error}")),
    };
    let round = match state.store.get_round(round_id).await {
        Ok(round) => round,
        Err(error) if error.is_not_found() => return done(),
        Err(error) => return failed(None, format!("cannot read the question: {error}")),
    };
    let message = if asks(event) {
        if round.status != RoundStatus::Pending {
            return done();
        }
        // Only the people who may answer it are asked (docs/teams.md).
        let user = match state.store.get_user(&browser.user_id).await {
            Ok(Some(user)) => user,
            Ok(None) => return done(),
            Err(error) => return failed(None, format!("cannot read the person: {error}")),
        };
        match state
            .store
            .may_answer(&Principal::person(&user), &round)
            .await
        {
            Ok(true) => {}
            Ok(false) => return done(),
            Err(error) => return failed(None, format!("cannot read who answers it: {error}")),
        }
        let answers = quick_answers(&round, &Limits::default()).unwrap_or_default();
        let tokens: Vec<String> = answers
            .iter()
            .map(|_| credentials::generate(credentials::ANSWER_TOKEN_PREFIX))
            .collect();
        let stored: Vec<AnswerToken> = tokens
            .iter()
            .enumerate()
            .filter(|(choice, _)| answers[*choice].response.action == ResponseAction::Accept)
            .map(|(choice, token)| AnswerToken {
                token_hash: credentials::hash(token),
                user_id: browser.user_id.clone(),
                round_id,
                choice,
                channel: ReachChannel::Push,
                expires_at: round.deadline,
                used_at: None,
            })
            .collect();
        if let Err(error) = state.store.create_answer_tokens(&stored).await {
            return failed(None, format!("cannot store the answer tokens: {error}"));
        }
        notification(&round, &tokens)
    } else {
        json!({"kind": "close", "tag": round_id.to_string()})
    };
    let ttl = (round.deadline - state.store.now())
        .num_seconds()
        .clamp(60, 24 * 3600);
    let outcome = send(state, client, vapid, &browser, &message, ttl).await;
    match outcome {
        Sent::Accepted(status) => AttemptOutcome::Delivered { status },
        Sent::Gone(status) => {
            // The browser unsubscribed, or the service forgot it: it will never take another push.
            if let Err(error) = state
                .store
                .remove_push_subscription(&browser.id, None)
                .await
            {
                tracing::warn!(%error, "push: cannot forget a gone subscription");
            }
            AttemptOutcome::Delivered { status }
        }
        Sent::TooLarge => {
            // Smaller without the body and buttons; the page has them.
            let minimal = json!({"kind": message["kind"], "tag": message["tag"], "title": message["title"], "url": message["url"]});
            match send(state, client, vapid, &browser, &minimal, ttl).await {
                Sent::Accepted(status) => AttemptOutcome::Delivered { status },
                other => other.into_failure(),
            }
        }
        other => other.into_failure(),
    }
}

/// The notification of a digest: how many questions wait, the first lines of some, and the queue's page.
/// One tag for every digest, so a newer one replaces the last.
pub fn digest_notification(open: &[Round]) -> Value {
    let lines: Vec<String> = open
        .iter()
        .take(3)
        .map(|round| {
            let message = round
                .requests
                .values()
                .next()
                .map(|request| request.message())
                .unwrap_or(&round.summary);
            first_line(message, BODY_CHARS / 3)
        })
        .collect();
    json!({
        "kind": "question",
        "tag": "anteroom-digest",
        "title": crate::mail::digest_subject(open.len()),
        "body": lines.join(" · "),
        "url": "/",
        "actions": [],
    })
}

/// One notification in each of a person's browsers for the questions held for their digest that are still
/// open. A browser that failed makes the digest try again; the tag makes a repeat replace, not pile up.
async fn push_digest(
    state: &AppState,
    client: &reqwest::Client,
    vapid: &Vapid,
    user_id: &str,
) -> AttemptOutcome {
    let (held, open) = match crate::digest::held(state, user_id, ReachChannel::Push).await {
        Ok(found) => found,
        Err(error) => return failed(None, format!("cannot read the held questions: {error}")),
    };
    let may_answer = match state.store.get_user(user_id).await {
        Ok(user) => user.is_some_and(|user| user.role.can_answer()),
        Err(error) => return failed(None, format!("cannot read the person: {error}")),
    };
    if !open.is_empty() && may_answer {
        let browsers = match state.store.push_subscriptions(user_id).await {
            Ok(browsers) => browsers,
            Err(error) => {
                return failed(None, format!("cannot read the person's browsers: {error}"));
            }
        };
        let message = digest_notification(&open);
        let ttl = open
            .iter()
            .map(|round| (round.deadline - state.store.now()).num_seconds())
            .max()
            .unwrap_or(60)
            .clamp(60, 24 * 3600);
        for browser in &browsers {
            match send(state, client, vapid, browser, &message, ttl).await {
                Sent::Accepted(_) => {}
                Sent::Gone(_) => {
                    if let Err(error) = state
                        .store
                        .remove_push_subscription(&browser.id, None)
                        .await
                    {
                        tracing::warn!(%error, "push: cannot forget a gone subscription");
                    }
                }
                other => return other.into_failure(),
            }
        }
    }
    crate::digest::release(state, user_id, ReachChannel::Push, &held).await;
    done()
}

/// What the push service said.
enum Sent {
    Accepted(u16),
    Gone(u16),
    TooLarge,
    Refused(u16),
    Unreachable(String),
}

impl Sent {
    fn into_failure(self) -> AttemptOutcome {
        match self {
            Self::Accepted(status) | Self::Gone(status) => AttemptOutcome::Delivered { status },
            Self::TooLarge => failed(
                Some(413),
                "the push service refused the message as too large",
            ),
            Self::Refused(status) => {
                failed(Some(status), format!("the push service answered {status}"))
            }
            Self::Unreachable(error) => failed(None, error),
        }
    }
}

async fn send(
    state: &AppState,
    client: &reqwest::Client,
    vapid: &Vapid,
    browser: &anteroom_domain::reach::PushSubscription,
    message: &Value,
    ttl: i64,
) -> Sent {
    let Ok(endpoint) = url::Url::parse(&browser.endpoint) else {
        return Sent::Gone(400);
    };
    let keys = (
        URL_SAFE_NO_PAD.decode(browser.p256dh.trim_end_matches('=')),
        URL_SAFE_NO_PAD.decode(browser.auth.trim_end_matches('=')),
    );
    let (Ok(public), Ok(auth)) = keys else {
        return Sent::Gone(400);
    };
    let (Ok(public), true) = (p256::PublicKey::from_sec1_bytes(&public), auth.len() == 16) else {
        return Sent::Gone(400);
    };
    let Ok(uri) = browser.endpoint.parse::<http::Uri>() else {
        return Sent::Gone(400);
    };
    let builder = web_push_native::WebPushBuilder::new(
        uri,
        public,
        web_push_native::Auth::clone_from_slice(&auth),
    )
    .with_valid_duration(StdDuration::from_secs(u64::try_from(ttl).unwrap_or(60)));
    let request = match builder.build(message.to_string()) {
        Ok(request) => request,
        Err(error) => return Sent::Unreachable(format!("cannot encrypt the message: {error}")),
    };
    let contact = if state.config.public_url.starts_with("https://") {
        state.config.public_url.clone()
    } else {
        "mailto:anteroom@localhost".to_owned()
    };
    let mut outgoing = client
        .post(endpoint.as_str())
        .header(
            "Authorization",
            vapid_authorization(vapid.signing_key(), &endpoint, &contact, state.store.now()),
        )
        .header("Urgency", "high");
    for (name, value) in request.headers() {
        outgoing = outgoing.header(name.as_str(), value.as_bytes());
    }
    match outgoing.body(request.into_body()).send().await {
        Ok(response) => match response.status().as_u16() {
            status @ 200..=299 => Sent::Accepted(status),
            status @ (404 | 410) => Sent::Gone(status),
            413 => Sent::TooLarge,
            status => Sent::Refused(status),
        },
        Err(error) => Sent::Unreachable(format!(
            "could not reach the push service: {}",
            error.without_url()
        )),
    }
}

/// Whether `event` asks people to answer (a new question, or one that climbed to them), rather than closing
/// its notification.
fn asks(event: &str) -> bool {
    event == "question.created" || event == anteroom_domain::webhook::QUESTION_ESCALATED
}
