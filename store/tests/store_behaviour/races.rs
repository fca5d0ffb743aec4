//! Races: many writers at once, and exactly one of them wins.

use anteroom_store::{
    StoreError,
    domain::round::{RoundStatus, Submission},
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

async fn concurrent_answers_with_different_keys_have_exactly_one_winner(h: &Harness) {
    let round = ask(h, "s1").await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let store = h.store.clone();
        let id = round.round_id;
        tasks.push(tokio::spawn(async move {
            store
                .submit_responses(
                    id,
                    only("address", accept(json!({"city": format!("City {i}")}))),
                    idem(&format!("k{i}")),
                    Some(format!("p{i}")),
                )
                .await
        }));
    }
    let mut wins = 0;
    for task in tasks {
        match task.await.expect("task joins") {
            Ok((_, Submission::Recorded)) => wins += 1,
            Ok((_, Submission::Replayed)) => panic!("different keys never replay"),
            Err(StoreError::Refused(error)) => {
                assert!(
                    matches!(
                        error.code(),
                        "managed_input_conflict" | "managed_input_state"
                    ),
                    "{error:?}"
                );
            }
            Err(other) => panic!("unexpected failure: {other:?}"),
        }
    }
    assert_eq!(wins, 1);
    let stored = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(stored.status, RoundStatus::ResponseValidated);
}

async fn concurrent_claims_grant_exactly_one_lease(h: &Harness) {
    let round = ask(h, "s1").await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let store = h.store.clone();
        let id = round.round_id;
        tasks.push(tokio::spawn(async move {
            store
                .claim_round(id, owner(&format!("w{i}")), Duration::seconds(60))
                .await
        }));
    }
    let mut leases = Vec::new();
    for task in tasks {
        match task.await.expect("task joins") {
            Ok(lease) => leases.push(lease),
            Err(StoreError::Refused(error)) => {
                assert_eq!(error.code(), "managed_input_conflict", "{error:?}");
            }
            Err(other) => panic!("unexpected failure: {other:?}"),
        }
    }
    assert_eq!(leases.len(), 1);
    let stored = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(
        stored.lease.map(|l| l.owner_id),
        Some(leases[0].owner_id.clone())
    );
}

crate::on_both_backends!(
    concurrent_answers_with_different_keys_have_exactly_one_winner,
    concurrent_claims_grant_exactly_one_lease,
);
