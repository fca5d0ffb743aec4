//! The outbox's delivery loop: each due delivery is claimed by one instance, handed to its channel (a webhook
//! POSTed with an HMAC signature, Slack, e-mail or push), and marked delivered, or retried later with
//! exponential backoff (given up after ten attempts).

use std::time::Duration as StdDuration;

use anteroom_domain::webhook::{AttemptOutcome, WebhookDelivery, WebhookFormat};
use chrono::Duration;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use anteroom_api::AppState;

/// Deliveries one tick attempts at most.
const BATCH: u32 = 50;
/// Each receiver call gives up after this long (connecting included).
const HTTP_TIMEOUT: StdDuration = StdDuration::from_secs(10);
/// How long a claimed delivery stays hidden from other ticks and instances. Each delivery is claimed just
/// before its own attempt, so one claim only has to outlast one request, however slow the receiver is
/// and however many deliveries wait behind it.
const CLAIM: Duration = Duration::seconds(60);

/// `sha256=<hex>` of the body under `secret`: what a receiver recomputes to trust the call.
pub fn signature(secret: &str, body: &[u8]) -> String {
    // HMAC takes keys of any length; the `else` is never reached.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(body);
    let digest: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256={digest}")
}

async fn attempt(
    client: &reqwest::Client,
    secret: Option<&str>,
    delivery: &WebhookDelivery,
) -> AttemptOutcome {
    let body = delivery.payload.to_string();
    let mut request = client
        .post(&delivery.endpoint)
        .header("Content-Type", "application/json")
        .header("X-Anteroom-Event", &delivery.event)
        .header("X-Anteroom-Delivery", &delivery.id);
    if let Some(secret) = secret {
        request = request.header("X-Anteroom-Signature", signature(secret, body.as_bytes()));
    }
    match request.body(body).send().await {
        Ok(response) if response.status().is_success() => AttemptOutcome::Delivered {
            status: response.status().as_u16(),
        },
        Ok(response) => AttemptOutcome::Failed {
            status: Some(response.status().as_u16()),
            error: format!("the receiver answered {}", response.status()),
        },
        Err(error) => AttemptOutcome::Failed {
            status: None,
            // Without the URL: a Slack webhook's URL is its secret.
            error: format!("could not reach the receiver: {}", error.without_url()),
        },
    }
}

/// The receiver's host for the log: the rest of a webhook URL (Slack's path above all) is a credential.
fn receiver_host(endpoint: &str) -> String {
    url::Url::parse(endpoint)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| "(unparsable URL)".to_owned())
}

/// One tick; returns how many deliveries succeeded. Deliveries are claimed one at a time, right before each
/// attempt, so a tick that outlives a claim never re-sends what another tick already holds.
pub async fn run(state: AppState) -> usize {
    let client = match reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .connect_timeout(HTTP_TIMEOUT)
        .build()
    {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!(%error, "webhooks: cannot build an HTTP client");
            return 0;
        }
    };
    let secret = state.config.webhook_secret.as_deref();
    let slack = state
        .config
        .slack
        .as_ref()
        .and_then(|config| crate::slack::SlackClient::new(config).ok());
    let mailer = state.config.mail.as_ref().and_then(|config| {
        crate::mail::Mailer::new(config)
            .inspect_err(|error| tracing::warn!(%error, "mail: cannot send"))
            .ok()
    });
    // Read at the first push of the tick, then kept for the rest of it.
    let mut vapid: Option<crate::push::Vapid> = None;
    let (mut attempted, mut delivered) = (0, 0);
    while attempted < BATCH {
        let delivery = match state.store.claim_webhook_deliveries(1, CLAIM).await {
            Ok(mut claimed) => match claimed.pop() {
                Some(delivery) => delivery,
                None => break,
            },
            Err(error) => {
                tracing::warn!(%error, "webhooks: cannot read the outbox; the next tick retries");
                break;
            }
        };
        attempted += 1;
        let outcome = match (delivery.format, &slack) {
            (WebhookFormat::SlackApp, Some(slack)) => {
                crate::slack::deliver(&state, slack, &delivery).await
            }
            (WebhookFormat::SlackApp, None) => AttemptOutcome::Failed {
                status: None,
                error: "no Slack app is configured on this instance".to_owned(),
            },
            (WebhookFormat::Push, _) => {
                if vapid.is_none() {
                    vapid = crate::push::Vapid::load(&state)
                        .await
                        .inspect_err(
                            |error| tracing::warn!(%error, "push: cannot read the VAPID key"),
                        )
                        .ok();
                }
                match &vapid {
                    Some(vapid) => crate::push::deliver(&state, &client, vapid, &delivery).await,
                    None => AttemptOutcome::Failed {
                        status: None,
                        error: "the VAPID key cannot be read".to_owned(),
                    },
                }
            }
            (WebhookFormat::Email, _) => match &mailer {
                Some(mailer) => crate::mail::deliver(&state, mailer, &delivery).await,
                None => AttemptOutcome::Failed {
                    status: None,
                    error: "no SMTP server is configured on this instance".to_owned(),
                },
            },
            _ => attempt(&client, secret, &delivery).await,
        };
        match &outcome {
            AttemptOutcome::Delivered { .. } => delivered += 1,
            AttemptOutcome::Failed { error, .. } => tracing::warn!(
                receiver = %match delivery.format {
                    WebhookFormat::SlackApp => "Slack".to_owned(),
                    WebhookFormat::Email => "SMTP".to_owned(),
                    WebhookFormat::Push => "a push service".to_owned(),
                    _ => receiver_host(&delivery.endpoint),
                },
                event = %delivery.event,
                attempt = delivery.attempts,
                %error,
                "webhooks: delivery failed; it will be retried"
            ),
        }
        if let Err(error) = state
            .store
            .finish_webhook_delivery(&delivery, outcome)
            .await
        {
            tracing::warn!(%error, "webhooks: cannot record a delivery attempt");
        }
    }
    if attempted > 0 {
        tracing::info!(attempted, delivered, "webhooks: outbox tick");
    }
    delivered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_urls_are_logged_by_host_only() {
        assert_eq!(
            receiver_host("https://hooks.slack.example/services/T0/B0/secret"),
            "hooks.slack.example"
        );
    }

    #[test]
    fn signature_is_hex_hmac_sha256() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
