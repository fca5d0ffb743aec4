//! Digests (docs/reach.md#digests): when more questions reach one person in a minute than they take one by
//! one, the rest are held and go out together at the window's end as one mail or one notification. Holding
//! and the digest's outbox row are written together; the row's key names the window, so one digest goes out
//! per person, channel and window, however many instances hold for it.

use anteroom_domain::{
    ids::RoundId,
    reach::{DIGEST_EVENT, Digest, ReachChannel, digest_endpoint},
    webhook::{QueuedDelivery, WebhookFormat},
};
use chrono::{DateTime, Utc};

use crate::AppState;

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
pub async fn follow_up(state: &AppState, user_id: &str, channel: ReachChannel) {
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
