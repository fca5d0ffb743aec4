//! Races: many writers at once, and exactly one of them wins.

use anteroom_store::{
    StoreError,
    domain::{
        ids::RequestId,
        round::{RoundStatus, Submission},
        session::SessionStatus,
    },
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

/// Creates that arrive together are committed together; each still gets its own outcome: a request id used
/// twice is stored once, a cancelled or unknown session refuses, and every session counts its own questions.
async fn concurrent_creates_each_get_their_own_outcome(h: &Harness) {
    for id in ["c0", "c1", "c2", "c3", "gone"] {
        register(h, id).await;
    }
    h.store.cancel_session(&sid("gone")).await.expect("cancel");
    let mut asks: Vec<(String, String)> = (0..40)
        .map(|i| (format!("c{}", i % 4), format!("r{i}")))
        .collect();
    // The same request ids again, from the same sessions: one of each pair is stored.
    asks.extend((0..4).map(|i| (format!("c{i}"), format!("r{i}"))));
    asks.extend((0..4).map(|i| ("gone".to_owned(), format!("g{i}"))));
    asks.extend((0..2).map(|i| ("nobody".to_owned(), format!("n{i}"))));
    let mut tasks = Vec::new();
    for (session, request_id) in asks {
        let store = h.store.clone();
        tasks.push(tokio::spawn(async move {
            let mut new = new_round(&session, vec![("address", form("Where to?", None))]);
            new.request_id = Some(RequestId::parse(request_id.clone()).expect("id"));
            (request_id, store.create_round(new).await)
        }));
    }
    let mut stored = std::collections::BTreeMap::<String, usize>::new();
    for task in tasks {
        let (request_id, outcome) = task.await.expect("task joins");
        match outcome {
            Ok(round) => {
                assert_eq!(round.request_id.as_str(), request_id);
                *stored.entry(request_id).or_default() += 1;
            }
            Err(StoreError::Refused(error)) => {
                let expected = match request_id.chars().next() {
                    Some('g') => "managed_input_state",
                    Some('n') => "not_found",
                    _ => "managed_input_conflict",
                };
                assert_eq!(error.code(), expected, "{request_id}: {error:?}");
                if expected == "managed_input_conflict" {
                    assert!(error.to_string().contains(&request_id), "{error}");
                }
            }
            Err(other) => panic!("unexpected failure for {request_id}: {other:?}"),
        }
    }
    assert_eq!(stored.len(), 40, "{stored:?}");
    assert!(stored.values().all(|&n| n == 1), "{stored:?}");
    for id in ["c0", "c1", "c2", "c3"] {
        assert_eq!(
            h.store.list_rounds(&sid(id)).await.expect("rounds").len(),
            10
        );
        let session = session(h, id).await;
        assert_eq!(session.status, SessionStatus::NeedsInput);
        assert!(session.blocked_on_elicitation);
    }
    let entries = h.store.list_sessions(100).await.expect("sessions");
    for entry in entries {
        let expected = if entry.session.id.as_str() == "gone" {
            0
        } else {
            10
        };
        assert_eq!(entry.open_rounds, expected, "{}", entry.session.id);
    }
    assert_eq!(h.store.open_round_count().await.expect("count"), 40);
}

crate::on_both_backends!(
    concurrent_creates_each_get_their_own_outcome,
    concurrent_answers_with_different_keys_have_exactly_one_winner,
    concurrent_claims_grant_exactly_one_lease,
);
