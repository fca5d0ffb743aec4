//! The webhook outbox (two endpoints configured by the harness: one JSON, one Slack).

use anteroom_store::domain::webhook::AttemptOutcome;
use chrono::Duration;

use crate::fixtures::*;
use crate::support::Harness;

async fn question_events_are_queued_once_per_endpoint(h: &Harness) {
    let round = ask(h, "s1").await;
    let queued = h.store.list_webhook_deliveries(50).await.expect("log");
    assert_eq!(queued.len(), 2, "one question.created per endpoint");
    assert!(
        queued
            .iter()
            .all(|d| d.event == "question.created" && d.status == "pending")
    );
    let slack = queued
        .iter()
        .find(|d| d.endpoint.ends_with("/slack"))
        .expect("slack delivery");
    assert!(
        slack.payload["text"]
            .as_str()
            .expect("text")
            .contains("book_shipment: Where to?")
    );
    let json = queued
        .iter()
        .find(|d| d.endpoint.ends_with("/hook"))
        .expect("json delivery");
    assert_eq!(json.payload["data"]["round_id"], round.round_id.to_string());

    h.clock.advance(Duration::minutes(61));
    h.store.expire_due_rounds().await.expect("expire");
    h.store.expire_due_rounds().await.expect("expire again");
    let expired = h.store.list_webhook_deliveries(50).await.expect("log");
    assert_eq!(
        expired
            .iter()
            .filter(|d| d.event == "question.expired")
            .count(),
        2,
        "one per endpoint, never two"
    );
}

async fn deliveries_are_claimed_once_and_retried_with_backoff(h: &Harness) {
    ask(h, "s1").await;
    let claimed = h
        .store
        .claim_webhook_deliveries(10, Duration::seconds(60))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 2);
    assert!(claimed.iter().all(|d| d.attempts == 1));
    assert!(
        h.store
            .claim_webhook_deliveries(10, Duration::seconds(60))
            .await
            .expect("claim")
            .is_empty(),
        "claimed ones are hidden"
    );

    let (first, second) = (&claimed[0], &claimed[1]);
    h.store
        .finish_webhook_delivery(first, AttemptOutcome::Delivered { status: 200 })
        .await
        .expect("delivered");
    h.store
        .finish_webhook_delivery(
            second,
            AttemptOutcome::Failed {
                status: Some(500),
                error: "boom".into(),
            },
        )
        .await
        .expect("failed attempt");
    assert!(
        h.store
            .claim_webhook_deliveries(10, Duration::seconds(60))
            .await
            .expect("claim")
            .is_empty(),
        "not before the backoff"
    );
    h.clock.advance(Duration::seconds(10));
    let retried = h
        .store
        .claim_webhook_deliveries(10, Duration::seconds(60))
        .await
        .expect("claim");
    assert_eq!(
        retried
            .iter()
            .map(|d| (d.id.clone(), d.attempts))
            .collect::<Vec<_>>(),
        vec![(second.id.clone(), 2)]
    );
    let log = h.store.list_webhook_deliveries(10).await.expect("log");
    let done = log.iter().find(|d| d.id == first.id).expect("first");
    assert_eq!(
        (done.status.as_str(), done.last_status),
        ("delivered", Some(200))
    );
}

crate::on_both_backends!(
    question_events_are_queued_once_per_endpoint,
    deliveries_are_claimed_once_and_retried_with_backoff,
);
