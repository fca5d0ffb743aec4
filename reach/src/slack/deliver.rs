//! One `slack_app` outbox delivery: a new question is posted (once: its message is remembered), and any
//! later event updates that message to the question as it stands now. Both read the question when they run,
//! so a post that was delayed shows the question's end, and an update never shows an older state. A question
//! goes to its session's own channel when an admin set one, to `ANTEROOM_SLACK_CHANNEL` otherwise.

use anteroom_domain::{
    limits::Limits,
    webhook::{AttemptOutcome, WebhookDelivery},
};

use super::{SlackClient, blocks::question_message};
use anteroom_api::AppState;

fn failed(error: impl std::fmt::Display, status: Option<u16>) -> AttemptOutcome {
    AttemptOutcome::Failed {
        status,
        error: error.to_string(),
    }
}

/// Sends one delivery to Slack.
pub async fn deliver(
    state: &AppState,
    client: &SlackClient,
    delivery: &WebhookDelivery,
) -> AttemptOutcome {
    let done = AttemptOutcome::Delivered { status: 200 };
    let Some(round_id) = delivery.round_id() else {
        // Not about a question: nothing a Slack message shows.
        return done;
    };
    let round = match state.store.get_round(round_id).await {
        Ok(round) => round,
        // Purged after its retention: nothing left to show.
        Err(error) if error.is_not_found() => return done,
        Err(error) => return failed(format!("cannot read the question: {error}"), None),
    };
    let posted = match state.store.slack_message(&round_id).await {
        Ok(posted) => posted,
        Err(error) => return failed(format!("cannot read the question's message: {error}"), None),
    };
    let message = question_message(&round, &state.config.public_url, &Limits::default());
    let sent = match (delivery.event.as_str(), posted) {
        (_, Some((channel, ts))) => {
            client
                .update(&channel, &ts, &message.text, message.blocks)
                .await
        }
        ("question.created", None) => {
            // The session's own channel, if an admin set one; the app's default otherwise.
            let channel = match state.store.session_settings(&round.session_id).await {
                Ok(settings) => settings.slack_channel,
                Err(error) if error.is_not_found() => None,
                Err(error) => {
                    return failed(format!("cannot read the session's channel: {error}"), None);
                }
            };
            let channel = channel.unwrap_or_else(|| delivery.endpoint.clone());
            match client
                .post_message(&channel, &message.text, message.blocks)
                .await
            {
                Ok((channel, ts)) => {
                    return match state
                        .store
                        .remember_slack_message(&round_id, &channel, &ts)
                        .await
                    {
                        Ok(()) => done,
                        // Posted but not remembered: the message stays, without its updates.
                        Err(error) => {
                            tracing::warn!(%error, "slack: cannot remember a posted message; it will not be updated");
                            done
                        }
                    };
                }
                Err(error) => Err(error),
            }
        }
        // The question was never posted (its post failed for good): nothing to update.
        (_, None) => Ok(()),
    };
    match sent {
        Ok(()) => done,
        Err(error) => failed(&error, error.status()),
    }
}
