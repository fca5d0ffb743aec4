//! Workers and leases (docs/lifecycle.md#worker-leases): who may write to a round, and when.

use anteroom_store::domain::{
    ids::LeaseToken,
    outward::{PollAction, outward_answer},
    round::{FailureCode, RoundStatus},
    session::SessionStatus,
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::{self, Harness};

async fn claim_grants_one_lease_and_a_second_claim_conflicts(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    assert_eq!(lease.owner_id, owner("w1"));
    assert_eq!(
        lease.expires_at,
        support::start_time() + Duration::seconds(30)
    );
    let error = refusal(
        h.store
            .claim_round(round.round_id, owner("w2"), Duration::seconds(30))
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("w1"));
}

async fn renew_extends_a_live_lease_and_not_an_expired_one(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    h.clock.advance(Duration::seconds(20));
    let renewed = h
        .store
        .renew(
            round.round_id,
            &owner("w1"),
            &lease.lease_token,
            Duration::seconds(30),
        )
        .await
        .expect("renew");
    assert_eq!(
        renewed.expires_at,
        support::start_time() + Duration::seconds(50)
    );
    h.clock.advance(Duration::seconds(31));
    let error = refusal(
        h.store
            .renew(
                round.round_id,
                &owner("w1"),
                &lease.lease_token,
                Duration::seconds(30),
            )
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("expired"), "{}", error.message());
}

async fn replaced_worker_cannot_write(h: &Harness) {
    let round = ask(h, "s1").await;
    let old = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(10))
        .await
        .expect("claim");
    h.clock.advance(Duration::seconds(11));
    let new = h
        .store
        .claim_round(round.round_id, owner("w2"), Duration::seconds(60))
        .await
        .expect("replacement claims");
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");

    let error = refusal(
        h.store
            .start_delivery(round.round_id, &owner("w1"), &old.lease_token)
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("replaced"), "{}", error.message());
    h.store
        .start_delivery(round.round_id, &owner("w2"), &new.lease_token)
        .await
        .expect("replacement delivers");
}

async fn stale_lease_token_is_refused(h: &Harness) {
    let round = ask(h, "s1").await;
    h.store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    let forged = LeaseToken::from_secret("not-the-token");
    let error = refusal(
        h.store
            .renew(round.round_id, &owner("w1"), &forged, Duration::seconds(30))
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
}

async fn worker_lifecycle_runs_to_resolved_and_then_nothing_writes(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(300))
        .await
        .expect("claim");
    let (w, t) = (owner("w1"), lease.lease_token.clone());
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    let started = h
        .store
        .start_delivery(round.round_id, &w, &t)
        .await
        .expect("start");
    assert_eq!(
        (started.status, started.delivery_attempts),
        (RoundStatus::DeliveryStarted, 1)
    );
    assert_eq!(
        h.store
            .mark_delivered(round.round_id, &w, &t)
            .await
            .expect("delivered")
            .status,
        RoundStatus::Delivered
    );
    let resolved = h
        .store
        .resolve(round.round_id, &w, &t)
        .await
        .expect("resolve");
    assert_eq!(resolved.status, RoundStatus::Resolved);
    assert_eq!(
        outward_answer(&resolved, "address").action,
        PollAction::Accept
    );

    for error in [
        refusal(
            h.store
                .claim_round(round.round_id, owner("w2"), Duration::seconds(30))
                .await,
        ),
        refusal(answer(h, &round, accept(json!({"city": "Goa"})), "k2").await),
        refusal(h.store.fail_recovery(round.round_id).await),
    ] {
        assert!(error.code().starts_with("managed_input"), "{error:?}");
    }
    assert_eq!(
        h.store.get_round(round.round_id).await.expect("read"),
        resolved,
        "a terminal round never changes"
    );
}

async fn transitions_out_of_order_are_refused(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(300))
        .await
        .expect("claim");
    let (w, t) = (owner("w1"), lease.lease_token.clone());
    let error = refusal(h.store.start_delivery(round.round_id, &w, &t).await);
    assert_eq!(
        error.code(),
        "managed_input_state",
        "no delivery before an answer"
    );
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    assert_eq!(
        refusal(h.store.mark_delivered(round.round_id, &w, &t).await).code(),
        "managed_input_state"
    );
    assert_eq!(
        refusal(h.store.resolve(round.round_id, &w, &t).await).code(),
        "managed_input_state"
    );
    h.store
        .start_delivery(round.round_id, &w, &t)
        .await
        .expect("start");
    assert_eq!(
        refusal(h.store.start_delivery(round.round_id, &w, &t).await).code(),
        "managed_input_state"
    );
    assert_eq!(
        refusal(h.store.resolve(round.round_id, &w, &t).await).code(),
        "managed_input_state"
    );
}

async fn worker_without_lease_cannot_write(h: &Harness) {
    let round = ask(h, "s1").await;
    let error = refusal(
        h.store
            .start_delivery(round.round_id, &owner("w1"), &LeaseToken::from_secret("x"))
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("claim"), "{}", error.message());
}

async fn worker_fail_ends_the_round_and_settles_the_session(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(60))
        .await
        .expect("claim");
    let failed = h
        .store
        .fail(
            round.round_id,
            &owner("w1"),
            &lease.lease_token,
            FailureCode::DeliveryFailed,
            "native prompt closed".into(),
        )
        .await
        .expect("fail");
    assert_eq!(failed.status, RoundStatus::Failed);
    assert_eq!(session(h, "s1").await.status, SessionStatus::Running);
    let reserved = refusal(
        h.store
            .fail(
                round.round_id,
                &owner("w1"),
                &lease.lease_token,
                FailureCode::Expired,
                "x".into(),
            )
            .await,
    );
    assert_eq!(
        reserved.code(),
        "managed_input_state",
        "a terminal round refuses before the code is even looked at"
    );
}

async fn reserved_failure_codes_are_refused(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(60))
        .await
        .expect("claim");
    for code in [FailureCode::Expired, FailureCode::RecoveryUnavailable] {
        let error = refusal(
            h.store
                .fail(
                    round.round_id,
                    &owner("w1"),
                    &lease.lease_token,
                    code,
                    "x".into(),
                )
                .await,
        );
        assert_eq!(error.code(), "validation_error");
    }
}

crate::on_both_backends!(
    claim_grants_one_lease_and_a_second_claim_conflicts,
    renew_extends_a_live_lease_and_not_an_expired_one,
    replaced_worker_cannot_write,
    stale_lease_token_is_refused,
    worker_lifecycle_runs_to_resolved_and_then_nothing_writes,
    transitions_out_of_order_are_refused,
    worker_without_lease_cannot_write,
    worker_fail_ends_the_round_and_settles_the_session,
    reserved_failure_codes_are_refused,
);
