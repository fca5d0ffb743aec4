//! Digests (docs/reach.md#digests): when more questions reach one person in a minute than they take one by
//! one, the rest are held and go out together at the window's end as one mail or one notification. Holding
//! and the digest's outbox row are written together; the row's key names the window, so one digest goes out
//! per person, channel and window, however many instances hold for it.

use std::collections::HashMap;

use anteroom_domain::{
    access::Principal,
    ids::RoundId,
    reach::{DIGEST_EVENT, DIGEST_WINDOW_SECS, Digest, ReachChannel, digest_endpoint},
    round::{Round, RoundStatus},
    webhook::{QueuedDelivery, WebhookFormat},
};
use anteroom_store::StoreError;
use chrono::{DateTime, Duration, Utc};

use anteroom_api::AppState;

/// Questions one digest reads back at most (a mail lists some of them and counts the rest).
const DIGEST_READ_MAX: u32 = 500;

/// How many new questions each endpoint of `channel` was sent in the current digest window.
pub async fn sent_lately(
    state: &AppState,
    channel: ReachChannel,
) -> Result<HashMap<String, u32>, StoreError> {
    let since = state.store.now() - Duration::seconds(DIGEST_WINDOW_SECS);
    state.store.recent_deliveries(format(channel), since).await
}

/// The questions held for a person's digest on `channel`, and those of them still open, in the order held.
pub async fn held(
    state: &AppState,
    user_id: &str,
    channel: ReachChannel,
) -> Result<(Vec<RoundId>, Vec<Round>), StoreError> {
    let held = state
        .store
        .digest_held(user_id, channel, DIGEST_READ_MAX)
        .await?;
    let now = state.store.now();
    // A digest lists only what the person may still answer (docs/teams.md).
    let person = match state.store.get_user(user_id).await? {
        Some(user) => Principal::person(&user),
        None => return Ok((held, Vec::new())),
    };
    let mut open = Vec::new();
    for id in &held {
        match state.store.get_round(*id).await {
            Ok(round)
                if round.status == RoundStatus::Pending
                    && round.deadline > now
                    && state.store.may_answer(&person, &round).await? =>
            {
                open.push(round);
            }
            Ok(_) => {}
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(error),
        }
    }
    Ok((held, open))
}

/// Forgets the questions a digest covered (or found closed), then queues the next digest for any held since.
pub async fn release(state: &AppState, user_id: &str, channel: ReachChannel, held: &[RoundId]) {
    if let Err(error) = state.store.release_digest(user_id, channel, held).await {
        // Sent but still held: the next digest may list a question twice; nothing is lost.
        tracing::warn!(%error, "digest: cannot forget the questions a digest listed");
    }
    follow_up(state, user_id, channel).await;
}

/// Holds `round` for `user_id`'s digest on `channel`, sent at the window's end or at `not_before`,
/// whichever is later.
pub async fn hold(
    state: &AppState,
    user_id: &str,
    channel: ReachChannel,
    round: RoundId,
    not_before: DateTime<Utc>,
) -> Result<(), anteroom_store::StoreError> {
    let window_end = Digest::due(state.store.now());
    let digest = QueuedDelivery {
        endpoint: digest_endpoint(user_id),
        format: format(channel),
        event: DIGEST_EVENT.to_owned(),
        dedupe_key: Digest::dedupe_key(channel, user_id, window_end),
        payload: serde_json::json!({}),
        not_before: window_end.max(not_before),
    };
    state
        .store
        .hold_for_digest(user_id, channel, round, &digest)
        .await
}

/// After a digest went out: a question held while it was being sent is still held, so it gets the next
/// window's digest rather than waiting for a burst that may never come.
async fn follow_up(state: &AppState, user_id: &str, channel: ReachChannel) {
    let left = match state.store.digest_held(user_id, channel, 1).await {
        Ok(left) => left,
        Err(error) => {
            tracing::warn!(%error, "digest: cannot read what is still held");
            return;
        }
    };
    let Some(round) = left.first() else {
        return;
    };
    if let Err(error) = hold(state, user_id, channel, *round, state.store.now()).await {
        tracing::warn!(%error, "digest: cannot queue the next digest");
    }
}

fn format(channel: ReachChannel) -> WebhookFormat {
    match channel {
        ReachChannel::Email => WebhookFormat::Email,
        ReachChannel::Push => WebhookFormat::Push,
    }
}
