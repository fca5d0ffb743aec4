//! Recovery of a worker that vanished mid-delivery.

use anteroom_store::domain::{
    round::{FailureCode, RoundStatus},
    session::SessionStatus,
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

async fn vanished_worker_mid_delivery_is_recovery_unavailable(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    h.store
        .start_delivery(round.round_id, &owner("w1"), &lease.lease_token)
        .await
        .expect("start");
    assert!(
        h.store
            .recover_leases()
            .await
            .expect("too early")
            .is_empty(),
        "a live lease is left alone"
    );

    h.clock.advance(Duration::seconds(31));
    let claim_error = refusal(
        h.store
            .claim_round(round.round_id, owner("w2"), Duration::seconds(30))
            .await,
    );
    assert_eq!(
        claim_error.code(),
        "managed_input_recovery",
        "no replacement may claim it"
    );

    let recovered = h.store.recover_leases().await.expect("recover");
    assert_eq!(recovered.len(), 1);
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(read.status, RoundStatus::Failed);
    assert_eq!(
        read.failure.as_ref().map(|f| f.code.clone()),
        Some(FailureCode::RecoveryUnavailable)
    );
    assert_eq!(session(h, "s1").await.status, SessionStatus::Failed);

    let late = refusal(answer(h, &round, accept(json!({"city": "Goa"})), "k2").await);
    assert_eq!(late.code(), "managed_input_recovery");
    let reclaim = refusal(
        h.store
            .claim_round(round.round_id, owner("w3"), Duration::seconds(30))
            .await,
    );
    assert_eq!(reclaim.code(), "managed_input_recovery");
    assert!(h.store.recover_leases().await.expect("again").is_empty());
    assert!(
        h.store
            .pending_round(&sid("s1"))
            .await
            .expect("pending")
            .is_none(),
        "never pending again"
    );
}

async fn explicit_fail_recovery_needs_an_expired_lease_mid_delivery(h: &Harness) {
    let round = ask(h, "s1").await;
    assert_eq!(
        refusal(h.store.fail_recovery(round.round_id).await).code(),
        "managed_input_state"
    );
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    h.store
        .start_delivery(round.round_id, &owner("w1"), &lease.lease_token)
        .await
        .expect("start");
    assert_eq!(
        refusal(h.store.fail_recovery(round.round_id).await).code(),
        "managed_input_conflict"
    );
    h.clock.advance(Duration::seconds(30));
    let failed = h
        .store
        .fail_recovery(round.round_id)
        .await
        .expect("recover");
    assert_eq!(
        failed.failure.map(|f| f.code),
        Some(FailureCode::RecoveryUnavailable)
    );
    assert_eq!(session(h, "s1").await.status, SessionStatus::Failed);
}

crate::on_both_backends!(
    vanished_worker_mid_delivery_is_recovery_unavailable,
    explicit_fail_recovery_needs_an_expired_lease_mid_delivery,
);
