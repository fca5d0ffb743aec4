//! Expiry (docs/deadlines.md): where a round's deadline comes from, and what passing it does.

use anteroom_store::domain::{
    ManagedInputError,
    clock::Clock,
    expiry::ExpiryPolicy,
    outward::{PollAction, outward_answer},
    round::{AskedThrough, FailureCode, RoundStatus},
    session::{LostReason, SessionStatus},
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::{self, Harness};

async fn default_deadline_is_sixty_minutes(h: &Harness) {
    let round = ask(h, "s1").await;
    assert_eq!(
        round.deadline,
        support::start_time() + Duration::minutes(60)
    );
}

async fn producer_expires_at_outranks_the_default(h: &Harness) {
    register(h, "s1").await;
    let at = support::start_time() + Duration::minutes(10);
    let meta = json!({"com.pulsemcp/expires-at": at.to_rfc3339()});
    let round = h
        .store
        .create_round(new_round("s1", vec![("a", form("?", Some(meta)))]))
        .await
        .expect("create");
    assert_eq!(round.deadline, at);
}

async fn deadlines_follow_how_far_the_asker_is_trusted(h: &Harness) {
    register(h, "s1").await;
    let now = support::start_time();
    let past = json!({"com.pulsemcp/expires-at": (now - Duration::hours(1)).to_rfc3339()});
    let refused = h
        .store
        .create_round(new_round("s1", vec![("a", form("?", Some(past.clone())))]))
        .await
        .expect_err("a trusted asker's past deadline is refused");
    assert_eq!(
        refused.refusal().map(ManagedInputError::code),
        Some("validation_error")
    );

    let mut anonymous = new_round("s1", vec![("a", form("?", Some(past)))]);
    anonymous.asked_through = AskedThrough::Anonymous;
    let round = h.store.create_round(anonymous).await.expect("create");
    assert_eq!(
        round.deadline,
        now + Duration::minutes(1),
        "an anonymous asker never mints a born-expired question"
    );
    assert_eq!(round.status, RoundStatus::Pending);

    let soon = json!({"com.pulsemcp/expires-at": (now + Duration::seconds(20)).to_rfc3339()});
    let round = h
        .store
        .create_round(new_round("s1", vec![("c", form("?", Some(soon)))]))
        .await
        .expect("create");
    assert_eq!(
        round.deadline,
        now + Duration::seconds(20),
        "the asker's own deadline ends it"
    );
    assert_eq!(round.asker_deadline, Some(round.deadline));
    assert!(round.deadline_is_askers());

    let mut far = new_round("s1", vec![("b", form("?", None))]);
    far.deadline = Some(now + Duration::days(400));
    let round = h.store.create_round(far).await.expect("create");
    assert_eq!(
        round.deadline,
        now + Duration::days(7),
        "never pinned for years"
    );
}

async fn operator_minutes_set_the_default_window(same_backend: &Harness) {
    // The operator's setting is part of the store's options, so this rule builds its own store.
    let h = same_backend
        .like_with(ExpiryPolicy {
            operator_minutes: Some(15),
        })
        .await;
    let round = ask(&h, "s1").await;
    assert_eq!(
        round.deadline,
        support::start_time() + Duration::minutes(15)
    );
    h.finish().await;
}

async fn reading_an_overdue_round_expires_it(h: &Harness) {
    let round = ask(h, "s1").await;
    h.clock.advance(Duration::minutes(61));
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(read.status, RoundStatus::Failed);
    assert_eq!(
        read.failure.as_ref().map(|f| f.code.clone()),
        Some(FailureCode::Expired)
    );
    assert_eq!(outward_answer(&read, "address").action, PollAction::Expired);

    let s = session(h, "s1").await;
    assert_eq!(
        s.status,
        SessionStatus::Running,
        "the agent went on without approval"
    );
    assert!(!s.blocked_on_elicitation);
    let lost = s.lost_elicitation.expect("lost-elicitation marker");
    assert_eq!(lost.reason, LostReason::Expired);
    assert_eq!(lost.request_id, read.request_id);
    assert_eq!(lost.summary, "book_shipment: Where to?");
}

async fn answer_after_the_deadline_is_refused_even_before_any_sweep(h: &Harness) {
    let round = ask(h, "s1").await;
    h.clock.advance(Duration::minutes(60));
    let error = refusal(answer(h, &round, accept(json!({"city": "Pune"})), "k1").await);
    assert_eq!(error.code(), "managed_input_state");
    assert!(error.message().contains("expired"), "{}", error.message());
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(
        read.status,
        RoundStatus::Failed,
        "the refusal still recorded the expiry"
    );
    assert!(read.responses.is_none());
}

async fn expiry_sweep_expires_only_due_rounds(h: &Harness) {
    let early = ask(h, "s1").await;
    register(h, "s2").await;
    let mut later = new_round("s2", vec![("a", form("?", None))]);
    later.deadline = Some(support::start_time() + Duration::minutes(90));
    let later = h.store.create_round(later).await.expect("create");

    h.clock.advance(Duration::minutes(61));
    let expired = h.store.expire_due_rounds().await.expect("sweep");
    assert_eq!(
        expired.iter().map(|r| r.round_id).collect::<Vec<_>>(),
        vec![early.round_id]
    );
    assert_eq!(
        h.store
            .get_round(later.round_id)
            .await
            .expect("read")
            .status,
        RoundStatus::Pending
    );
    assert!(
        h.store
            .expire_due_rounds()
            .await
            .expect("sweep again")
            .is_empty(),
        "one effect per round"
    );
}

async fn expiry_with_another_active_round_keeps_needs_input(h: &Harness) {
    register(h, "s1").await;
    let now = support::start_time();
    let mut short = new_round("s1", vec![("a", form("?", None))]);
    short.deadline = Some(now + Duration::minutes(5));
    h.store.create_round(short).await.expect("short");
    h.store
        .create_round(new_round("s1", vec![("b", form("?", None))]))
        .await
        .expect("long");
    h.clock.advance(Duration::minutes(6));
    h.store.expire_due_rounds().await.expect("sweep");
    let s = session(h, "s1").await;
    assert_eq!(s.status, SessionStatus::NeedsInput);
    assert!(s.blocked_on_elicitation);
    assert!(s.lost_elicitation.is_none());
}

async fn expiry_keeps_a_failed_session_failed(h: &Harness) {
    let waiting = ask(h, "s1").await;
    let delivering = h
        .store
        .create_round(new_round("s1", vec![("address", form("And?", None))]))
        .await
        .expect("second");
    let lease = h
        .store
        .claim_round(delivering.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    answer(h, &delivering, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    h.store
        .start_delivery(delivering.round_id, &owner("w1"), &lease.lease_token)
        .await
        .expect("start");
    h.clock.advance(Duration::seconds(31));
    h.store.recover_leases().await.expect("recover");
    assert_eq!(session(h, "s1").await.status, SessionStatus::Failed);

    h.clock.advance(Duration::minutes(60));
    assert_eq!(
        h.store
            .get_round(waiting.round_id)
            .await
            .expect("read")
            .status,
        RoundStatus::Failed
    );
    let s = session(h, "s1").await;
    assert_eq!(
        s.status,
        SessionStatus::Failed,
        "an ended session keeps its status"
    );
    assert_eq!(
        s.lost_elicitation.map(|l| l.reason),
        Some(LostReason::Expired)
    );
}

async fn an_extended_deadline_holds_until_its_new_end(h: &Harness) {
    let round = ask(h, "s1").await;
    let extended = h
        .store
        .extend_deadline(round.round_id, Duration::minutes(30), "test")
        .await
        .expect("extend");
    assert_eq!(extended.deadline, round.deadline + Duration::minutes(30));
    assert_eq!(
        h.store
            .get_round(round.round_id)
            .await
            .expect("read")
            .deadline,
        extended.deadline
    );
    h.clock.advance(Duration::minutes(61));
    assert!(
        h.store.expire_due_rounds().await.expect("sweep").is_empty(),
        "not yet"
    );
    assert_eq!(
        h.store
            .get_round(round.round_id)
            .await
            .expect("read")
            .status,
        RoundStatus::Pending
    );
    h.clock.advance(Duration::minutes(30));
    assert_eq!(h.store.expire_due_rounds().await.expect("sweep").len(), 1);
    let refused = refusal(
        h.store
            .extend_deadline(round.round_id, Duration::minutes(5), "test")
            .await,
    );
    assert!(
        matches!(refused, ManagedInputError::ManagedInputState { .. }),
        "{refused:?}"
    );

    // The asker's own deadline does not move.
    register(h, "s2").await;
    let at = h.clock.now() + Duration::minutes(10);
    let meta = json!({"com.pulsemcp/expires-at": at.to_rfc3339()});
    let theirs = h
        .store
        .create_round(new_round("s2", vec![("a", form("?", Some(meta)))]))
        .await
        .expect("create");
    let refused = refusal(
        h.store
            .extend_deadline(theirs.round_id, Duration::minutes(5), "test")
            .await,
    );
    assert!(refused.message().contains("fixed"), "{refused:?}");
}

crate::on_both_backends!(
    an_extended_deadline_holds_until_its_new_end,
    default_deadline_is_sixty_minutes,
    producer_expires_at_outranks_the_default,
    deadlines_follow_how_far_the_asker_is_trusted,
    operator_minutes_set_the_default_window,
    reading_an_overdue_round_expires_it,
    answer_after_the_deadline_is_refused_even_before_any_sweep,
    expiry_sweep_expires_only_due_rounds,
    expiry_with_another_active_round_keeps_needs_input,
    expiry_keeps_a_failed_session_failed,
);
