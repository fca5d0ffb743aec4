//! What the store's connections keep prepared: a fixed statement once per connection, never one per batch size.

use anteroom_store::domain::{
    clock::Clock,
    webhook::{QueuedDelivery, WebhookFormat},
};
use serde_json::json;

use crate::support::Harness;

/// A batch's text changes with its number of rows, so keeping each size prepared fills every connection's cache
/// with texts seldom used again (a PostgreSQL soak grew each instance by 25 MB of them in ten minutes).
async fn batches_of_every_size_leave_nothing_prepared_behind(h: &Harness) {
    let delivery = |batch: usize, row: usize| QueuedDelivery {
        endpoint: "user:u-1".to_owned(),
        format: WebhookFormat::Email,
        event: "question.created".to_owned(),
        dedupe_key: format!("question.created:r{batch}-{row}|email:u-1"),
        payload: json!({}),
        not_before: h.clock.now(),
    };
    let queue = |batch: usize, rows: usize| {
        let deliveries: Vec<_> = (0..rows).map(|row| delivery(batch, row)).collect();
        async move {
            h.store
                .enqueue_deliveries(&deliveries)
                .await
                .expect("queue");
        }
    };
    // A batch of one row is a statement like any other, kept for its next use; the first batch of many rows
    // also prepares the fixed statements around it.
    queue(0, 1).await;
    queue(7, 7).await;
    let before = h.store.kept_prepared_statements().await.expect("count");
    assert!(before >= 1, "the one-row batch is kept: {before}");

    // Batches of 8 to 40 rows: 80 to 400 values each, 33 texts.
    for rows in 8..=40 {
        queue(rows, rows).await;
    }
    // Work the store does in the background (the audit chain's sealing) may prepare its few fixed statements
    // meanwhile, on a connection of its choosing; kept batches would add one per size, 33.
    let after = h.store.kept_prepared_statements().await.expect("count");
    assert!(
        after < before + 33 / 2,
        "batches of 33 sizes kept prepared: {before} before, {after} after"
    );
}

crate::on_both_backends!(batches_of_every_size_leave_nothing_prepared_behind);
